#!/usr/bin/env bash
# Runs a command with a working Secret Service credential store on headless Linux:
# a private D-Bus session with gnome-keyring-daemon unlocked. Installs the Debian
# packages it needs (dbus, gnome-keyring) when they are missing.
#
#   scripts/with-keyring.sh CMD...          throwaway keyring (tests, CI)
#   SVC_KEYRING_DIR=DIR scripts/with-keyring.sh CMD...
#                                           keyring kept in DIR, so a home created here
#                                           unlocks again next time (npm start uses this)
#
# When a desktop session already provides the Secret Service, CMD runs directly.
set -euo pipefail

if [ "$(uname -s)" != "Linux" ]; then exec "$@"; fi

if [ "${SVC_KEYRING_INSIDE:-}" = "1" ]; then
  # Inside the private session: gnome-keyring keeps its files under $XDG_DATA_HOME/keyrings
  # and creates the login keyring unlocked with the password read from stdin.
  unset SVC_KEYRING_INSIDE
  keyring_dir="${SVC_KEYRING_DIR:-$(mktemp -d)}"
  mkdir -p "$keyring_dir" && chmod 700 "$keyring_dir"
  password_file="$keyring_dir/.unlock"
  if [ ! -s "$password_file" ]; then
    (umask 077; head -c 24 /dev/urandom | base64 > "$password_file")
  fi
  user_data="${XDG_DATA_HOME:-}"
  export XDG_DATA_HOME="$keyring_dir/data"
  mkdir -p "$XDG_DATA_HOME"
  eval "$(gnome-keyring-daemon --unlock --components=secrets --daemonize < "$password_file")" >/dev/null
  export GNOME_KEYRING_CONTROL
  # Give the caller back its own data directory (svc's default home lives there).
  if [ -n "$user_data" ]; then export XDG_DATA_HOME="$user_data"; else unset XDG_DATA_HOME; fi
  "$@"
  status=$?
  [ -z "${SVC_KEYRING_DIR:-}" ] && rm -rf "$keyring_dir"
  exit $status
fi

need=()
command -v dbus-run-session >/dev/null 2>&1 || need+=(dbus)
command -v gnome-keyring-daemon >/dev/null 2>&1 || need+=(gnome-keyring)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "with-keyring: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "with-keyring: please install: ${need[*]} (sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
fi

export SVC_KEYRING_INSIDE=1
# dbus-daemon warns that it cannot raise its fd limit in containers; that is harmless.
exec dbus-run-session -- "$0" "$@" 2> >(grep -v -e 'Failed to set fd limit' -e 'org.freedesktop.systemd1' >&2)
