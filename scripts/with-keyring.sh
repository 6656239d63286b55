#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked gnome-keyring,
# which provides the Secret Service credential store on headless Linux.
# Installs the Debian packages it needs when they are missing.
set -euo pipefail

if [ "$(uname -s)" != "Linux" ]; then exec "$@"; fi

need=()
command -v dbus-run-session >/dev/null 2>&1 || need+=(dbus)
command -v gnome-keyring-daemon >/dev/null 2>&1 || need+=(gnome-keyring)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "with-keyring: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "with-keyring: please install: ${need[*]} (e.g. sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
fi

if [ "${SVC_KEYRING_SESSION:-}" = "1" ]; then
  # Inside the private session: start and unlock the keyring with an empty password.
  export XDG_DATA_HOME="${XDG_DATA_HOME:-$(mktemp -d)}"
  mkdir -p "$XDG_DATA_HOME/keyrings"
  eval "$(printf '' | gnome-keyring-daemon --unlock --components=secrets)" >/dev/null
  export GNOME_KEYRING_CONTROL
  printf '' | gnome-keyring-daemon --start --components=secrets >/dev/null
  exec "$@"
fi

export SVC_KEYRING_SESSION=1
exec dbus-run-session -- "$0" "$@"
