#!/usr/bin/env bash
# Makes sure Debian's `pebble` (Let's Encrypt's ACME test server) is installed, for the edge's ACME
# tests (test/e2e/edge-acme.test.ts). Installs the package with apt-get when it is missing and we
# are root (CI); otherwise says what to install. The package has no service: nothing starts on
# install; each test runs its own pebble on loopback ports. Safe to run repeatedly.
set -euo pipefail

[ "$(uname -s)" != "Linux" ] && exit 0
command -v pebble >/dev/null 2>&1 && exit 0

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-pebble: installing pebble" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Serialise concurrent installs (parallel test runners) on apt's own lock.
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 install -y -qq --no-install-recommends pebble >/dev/null
  command -v pebble >/dev/null 2>&1 || { echo "ensure-pebble: pebble did not install" >&2; exit 1; }
else
  echo "ensure-pebble: please install pebble: sudo apt-get install pebble" >&2
  exit 1
fi
