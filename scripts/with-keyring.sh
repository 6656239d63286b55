#!/usr/bin/env bash
# Runs a command with a working Secret Service credential store on headless Linux:
# a private D-Bus session with gnome-keyring-daemon unlocked. Installs the Debian
# packages it needs (dbus, gnome-keyring) when they are missing.
#
#   scripts/with-keyring.sh CMD...          throwaway keyring (tests, CI): a random password,
#                                           deleted with the keyring when CMD ends
#   SVC_KEYRING_DIR=DIR scripts/with-keyring.sh CMD...
#                                           keyring kept in DIR, so a home created here
#                                           unlocks again next time (npm start uses this).
#                                           Its unlock passphrase comes from
#                                           SVC_KEYRING_PASSPHRASE, else is asked on the terminal
#                                           (twice when the keyring is new), and is never stored.
#                                           Without either (no terminal: CI, a service), a random
#                                           password is kept in DIR/.unlock with a warning: then
#                                           a copy of DIR opens the keyring (docs/service.md).
#
# When a desktop session already provides the Secret Service, CMD runs directly.
set -euo pipefail

if [ "$(uname -s)" != "Linux" ]; then exec "$@"; fi

# Attempts at typing a passphrase before giving up (a typo should not need a restart, a script should not loop).
PASSPHRASE_TRIES=3
# Shorter passphrases are refused on the terminal: the keyring file can be attacked offline.
MIN_PASSPHRASE_CHARS=8

# Reads a passphrase from the terminal without echo; asks twice when `confirm` is "new".
ask_passphrase() {
  local confirm="$1" first second
  for _ in $(seq "$PASSPHRASE_TRIES"); do
    printf 'svc keyring passphrase: ' >/dev/tty
    IFS= read -rs first </dev/tty || return 1
    printf '\n' >/dev/tty
    if [ "${#first}" -lt "$MIN_PASSPHRASE_CHARS" ]; then
      printf 'At least %s characters, please.\n' "$MIN_PASSPHRASE_CHARS" >/dev/tty
      continue
    fi
    if [ "$confirm" = "new" ]; then
      printf 'Again, to confirm: ' >/dev/tty
      IFS= read -rs second </dev/tty || return 1
      printf '\n' >/dev/tty
      if [ "$first" != "$second" ]; then
        printf 'The two did not match.\n' >/dev/tty
        continue
      fi
    fi
    printf '%s' "$first"
    return 0
  done
  return 1
}

has_terminal() { { : </dev/tty; } 2>/dev/null; }

if [ "${SVC_KEYRING_INSIDE:-}" = "1" ]; then
  # Inside the private session: gnome-keyring keeps its files under $XDG_DATA_HOME/keyrings
  # and creates (or unlocks) the login keyring with the password read from stdin.
  unset SVC_KEYRING_INSIDE
  keyring_dir="${SVC_KEYRING_DIR:-$(mktemp -d)}"
  mkdir -p "$keyring_dir" && chmod 700 "$keyring_dir"
  password_file="$keyring_dir/.unlock"
  user_data="${XDG_DATA_HOME:-}"
  export XDG_DATA_HOME="$keyring_dir/data"
  mkdir -p "$XDG_DATA_HOME"
  keyring_state="new"
  [ -e "$XDG_DATA_HOME/keyrings/login.keyring" ] && keyring_state="existing"

  passphrase=""
  if [ -n "${SVC_KEYRING_DIR:-}" ] && [ -n "${SVC_KEYRING_PASSPHRASE:-}" ]; then
    passphrase="$SVC_KEYRING_PASSPHRASE"
  elif [ -n "${SVC_KEYRING_DIR:-}" ] && [ ! -s "$password_file" ] && has_terminal; then
    if ! passphrase="$(ask_passphrase "$keyring_state")"; then
      echo "with-keyring: no passphrase given; the keyring in $keyring_dir stays locked." >&2
      exit 1
    fi
  fi
  unset SVC_KEYRING_PASSPHRASE

  if [ -n "$passphrase" ]; then
    eval "$(printf '%s' "$passphrase" | gnome-keyring-daemon --unlock --components=secrets --daemonize)" >/dev/null
    passphrase=""
  else
    if [ ! -s "$password_file" ]; then
      (umask 077; head -c 24 /dev/urandom | base64 > "$password_file")
    fi
    if [ -n "${SVC_KEYRING_DIR:-}" ]; then
      echo "with-keyring: warning: the keyring in $keyring_dir is unlocked by the password stored in $password_file; anyone with a copy of these files can open svc's database. Set SVC_KEYRING_PASSPHRASE or start on a terminal with a new SVC_KEYRING_DIR to use a passphrase (docs/service.md)." >&2
    fi
    eval "$(gnome-keyring-daemon --unlock --components=secrets --daemonize < "$password_file")" >/dev/null
  fi
  export GNOME_KEYRING_CONTROL
  # A wrong passphrase leaves the existing keyring locked; say so instead of letting svc fail later.
  if [ "$keyring_state" = "existing" ] && dbus-send --session --print-reply --dest=org.freedesktop.secrets \
      /org/freedesktop/secrets/collection/login org.freedesktop.DBus.Properties.Get \
      string:org.freedesktop.Secret.Collection string:Locked 2>/dev/null | grep -q 'boolean true'; then
    echo "with-keyring: the passphrase does not unlock the keyring in $keyring_dir." >&2
    exit 1
  fi
  # Give the caller back its own data directory (svc's default home lives there).
  if [ -n "$user_data" ]; then export XDG_DATA_HOME="$user_data"; else unset XDG_DATA_HOME; fi
  status=0
  "$@" || status=$?
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
