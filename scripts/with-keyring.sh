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
#                                           Its unlock passphrase is never stored beside it; it
#                                           comes from, in this order: SVC_KEYRING_PASSPHRASE;
#                                           the file SVC_KEYRING_PASSPHRASE_FILE names (yours,
#                                           mode 600, outside DIR); the systemd credential
#                                           $CREDENTIALS_DIRECTORY/svc-keyring-passphrase
#                                           (LoadCredential= / LoadCredentialEncrypted=); the
#                                           terminal (asked twice when the keyring is new).
#                                           With none of them (no terminal: CI, a service) it
#                                           refuses with exit 6 and says how to give one, and
#                                           so it does while an older version's DIR/.unlock is
#                                           still there (docs/service.md).
#
# When a desktop session already provides the Secret Service, CMD runs directly.
set -euo pipefail

if [ "$(uname -s)" != "Linux" ]; then exec "$@"; fi

# Attempts at typing a passphrase before giving up (a typo should not need a restart, a script should not loop).
PASSPHRASE_TRIES=3
# Shorter passphrases are refused on the terminal: the keyring file can be attacked offline.
MIN_PASSPHRASE_CHARS=8
# Exit status when no passphrase can be had without storing one beside the keyring (svc's
# `action_required`: something only the person running svc can do).
EXIT_NEEDS_PASSPHRASE=6
# The systemd credential (LoadCredential=/LoadCredentialEncrypted=) the passphrase is read from.
CREDENTIAL_NAME=svc-keyring-passphrase

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

# Says why the keyring cannot be unlocked and how to fix it, then exits without running CMD.
refuse() {
  printf 'with-keyring: %s\n' "$1" >&2
  [ -n "${2:-}" ] && printf 'fix: %s\n' "$2" >&2
  exit "$EXIT_NEEDS_PASSPHRASE"
}

# What to tell someone starting svc unattended: every way to give the passphrase without storing it in DIR.
passphrase_fix() {
  printf '%s' "give the passphrase in one of these ways: SVC_KEYRING_PASSPHRASE_FILE=<a file of yours, mode 600, outside $1>; a systemd credential named $CREDENTIAL_NAME (LoadCredentialEncrypted=$CREDENTIAL_NAME:<file made by systemd-creds encrypt>); SVC_KEYRING_PASSPHRASE; or start svc on a terminal and type it. See docs/service.md \"The credential store on a headless machine\"."
}

# A passphrase file holds the passphrase byte for byte (a trailing newline is part of it, as for
# gnome-keyring-daemon --unlock). It must be the user's own and unreadable by anyone else, and it
# must not lie in the keyring directory, where a copy of that directory would carry it along.
check_passphrase_file() {
  local file="$1" what="$2" keyring_dir="$3" mode
  { [ -f "$file" ] && [ -r "$file" ]; } || refuse "$what ($file) is not a readable file." "$(passphrase_fix "$keyring_dir")"
  [ -s "$file" ] || refuse "$what ($file) is empty." "write the passphrase into it (printf '%s' 'passphrase' > $file)."
  case "$(realpath "$file")/" in
    "$(realpath "$keyring_dir")"/*) refuse "$what ($file) is inside the keyring directory $keyring_dir: a copy of that directory would open the keyring." "move it somewhere else, outside $keyring_dir and its backups." ;;
  esac
  # systemd gives a credential to the service alone; a file the user names is checked here.
  if [ "$what" = "SVC_KEYRING_PASSPHRASE_FILE" ]; then
    [ "$(stat -c %u "$file")" = "$(id -u)" ] || refuse "$what ($file) does not belong to $(id -un)." "chown $(id -un) $file"
    mode="$(stat -c %a "$file")"
    (( (8#$mode & 8#077) == 0 )) || refuse "$what ($file) can be read by other users (mode $mode)." "chmod 600 $file"
  fi
}

if [ "${SVC_KEYRING_INSIDE:-}" = "1" ]; then
  # Inside the private session: gnome-keyring keeps its files under $XDG_DATA_HOME/keyrings
  # and creates (or unlocks) the login keyring with the password read from stdin.
  unset SVC_KEYRING_INSIDE
  keyring_dir="${SVC_KEYRING_DIR:-$(mktemp -d)}"
  mkdir -p "$keyring_dir" && chmod 700 "$keyring_dir"
  user_data="${XDG_DATA_HOME:-}"
  export XDG_DATA_HOME="$keyring_dir/data"
  mkdir -p "$XDG_DATA_HOME"
  keyring_state="new"
  [ -e "$XDG_DATA_HOME/keyrings/login.keyring" ] && keyring_state="existing"

  if [ -z "${SVC_KEYRING_DIR:-}" ]; then
    # Throwaway keyring: a random password that goes with it when CMD ends.
    password_file="$keyring_dir/.unlock"
    (umask 077; head -c 24 /dev/urandom | base64 > "$password_file")
    eval "$(gnome-keyring-daemon --unlock --components=secrets --daemonize < "$password_file")" >/dev/null
  else
    # Versions before this one kept a random password in DIR/.unlock when nobody could type one.
    # It opens the keyring for anyone with a copy of DIR, so it is no longer used: it is moved
    # to a proper passphrase source once, by the person running svc.
    legacy="$keyring_dir/.unlock"
    if [ -e "$legacy" ]; then
      refuse "$legacy holds the keyring's password beside the keyring, so a copy of $keyring_dir opens svc's database; svc no longer starts with it there." \
        "move it out of $keyring_dir, keeping its exact bytes, then name it: mkdir -p ~/.config/svc && mv $legacy ~/.config/svc/keyring-passphrase && chmod 600 ~/.config/svc/keyring-passphrase, and start with SVC_KEYRING_PASSPHRASE_FILE=~/.config/svc/keyring-passphrase; or, under systemd, systemd-creds encrypt --name=$CREDENTIAL_NAME $legacy /etc/credstore.encrypted/$CREDENTIAL_NAME, then rm $legacy and add LoadCredentialEncrypted=$CREDENTIAL_NAME to the unit (docs/service.md)."
    fi
    passphrase=""
    passphrase_file=""
    if [ -n "${SVC_KEYRING_PASSPHRASE:-}" ]; then
      passphrase="$SVC_KEYRING_PASSPHRASE"
    elif [ -n "${SVC_KEYRING_PASSPHRASE_FILE:-}" ]; then
      check_passphrase_file "$SVC_KEYRING_PASSPHRASE_FILE" SVC_KEYRING_PASSPHRASE_FILE "$keyring_dir"
      passphrase_file="$SVC_KEYRING_PASSPHRASE_FILE"
    elif [ -n "${CREDENTIALS_DIRECTORY:-}" ] && [ -e "$CREDENTIALS_DIRECTORY/$CREDENTIAL_NAME" ]; then
      check_passphrase_file "$CREDENTIALS_DIRECTORY/$CREDENTIAL_NAME" "the systemd credential $CREDENTIAL_NAME" "$keyring_dir"
      passphrase_file="$CREDENTIALS_DIRECTORY/$CREDENTIAL_NAME"
    elif has_terminal; then
      if ! passphrase="$(ask_passphrase "$keyring_state")"; then
        echo "with-keyring: no passphrase given; the keyring in $keyring_dir stays locked." >&2
        exit 1
      fi
    else
      refuse "no passphrase for the keyring in $keyring_dir, and no terminal to ask on. It is never stored beside the keyring: a copy of that directory would open svc's database." "$(passphrase_fix "$keyring_dir")"
    fi
    unset SVC_KEYRING_PASSPHRASE SVC_KEYRING_PASSPHRASE_FILE
    if [ -n "$passphrase_file" ]; then
      eval "$(gnome-keyring-daemon --unlock --components=secrets --daemonize < "$passphrase_file")" >/dev/null
    else
      eval "$(printf '%s' "$passphrase" | gnome-keyring-daemon --unlock --components=secrets --daemonize)" >/dev/null
      passphrase=""
    fi
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
# Line by line, so the script's own warnings reach a log file at once rather than when a buffer fills.
line_buffered=()
if printf '\n' | grep --line-buffered -q '' 2>/dev/null; then line_buffered=(--line-buffered); fi
exec dbus-run-session -- "$0" "$@" 2> >(grep ${line_buffered[@]+"${line_buffered[@]}"} -v -e 'Failed to set fd limit' -e 'org.freedesktop.systemd1' >&2)
