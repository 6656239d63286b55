#!/usr/bin/env bash
# Makes sure Debian's headless-capable Chromium is at /usr/bin/chromium, for the browser tests
# (test/browser, driven by playwright-core). Installs the `chromium` package with apt-get when it is
# missing and we are root (CI); otherwise says what to install. Safe to run repeatedly.
#
#   scripts/ensure-chromium.sh            install if missing
#   SVC_SKIP_CHROMIUM=1 ...               do nothing (machines that never run browser tests)
set -euo pipefail

[ "${SVC_SKIP_CHROMIUM:-}" = "1" ] && exit 0
[ "$(uname -s)" != "Linux" ] && exit 0
[ -x /usr/bin/chromium ] && exit 0

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: installing chromium" >&2
  # Serialise concurrent installs (parallel test runners) on apt's own lock.
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  [ -x /usr/bin/chromium ] || { echo "ensure-chromium: chromium did not install" >&2; exit 1; }
else
  echo "ensure-chromium: please install Chromium: sudo apt-get install chromium" >&2
  exit 1
fi
