#!/usr/bin/env bash
# Makes sure Debian's Postfix binaries are installed, for the ingest benchmark's peer
# (bench/peer-postfix.ts runs a private instance of it on a loopback port). Installs the `postfix`
# package with apt-get when it is missing and we are root; otherwise says what to install.
# Safe to run repeatedly. Exit 0 = /usr/sbin/postfix is there, 1 = not available.
#
# The package is preseeded with "No configuration": apt writes no /etc/postfix/main.cf and starts
# no system mail service, so nothing listens on port 25 and the host's mail setup is untouched.
# The benchmark never uses /etc/postfix: it starts its own instance with `postfix -c <dir>`.
#
#   scripts/ensure-postfix.sh            install if missing
#   SVC_SKIP_POSTFIX=1 ...               do nothing, report missing (the bench then skips the peer)
set -euo pipefail

[ "$(uname -s)" != "Linux" ] && exit 1
[ -x /usr/sbin/postfix ] && exit 0
[ "${SVC_SKIP_POSTFIX:-}" = "1" ] && exit 1

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postfix: installing postfix (no system configuration, not started)" >&2
  export DEBIAN_FRONTEND=noninteractive
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 install -y -qq --no-install-recommends postfix >/dev/null
  [ -x /usr/sbin/postfix ] || { echo "ensure-postfix: postfix did not install" >&2; exit 1; }
else
  echo "ensure-postfix: please install Postfix without configuring it: sudo apt-get install postfix (choose 'No configuration')" >&2
  exit 1
fi
