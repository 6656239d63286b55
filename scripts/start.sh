#!/usr/bin/env bash
# `npm start`: runs svc serve --init with a credential store that survives restarts.
# On a desktop the session's own Secret Service is used; on a headless machine a private
# gnome-keyring kept in ~/.local/share/svc-keyring is started (see scripts/with-keyring.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
svc=("$here/../bin/svc" serve --init --local-edge "$@")
# glibc allocator settings the installed service runs with (src/service/service-spec.ts SERVE_ENVIRONMENT).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"

if [ "$(uname -s)" != "Linux" ]; then exec node "${svc[@]}"; fi
if [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-send >/dev/null 2>&1 \
  && dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; then
  exec node "${svc[@]}"
fi
export SVC_KEYRING_DIR="${SVC_KEYRING_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/svc-keyring}"
exec "$here/with-keyring.sh" node "${svc[@]}"
