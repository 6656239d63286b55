#!/usr/bin/env bash
# Makes sure Debian's authoritative DNS servers are installed, for the tests of the DNS providers
# (test/helpers/dns-servers.ts runs a private instance of each on a loopback port):
#   knot                                 RFC 2136 dynamic updates with TSIG (knotd, knotc, kdig)
#   pdns-server pdns-backend-sqlite3     the PowerDNS Authoritative HTTP API
# Installs them with apt-get when missing and we are root; otherwise says what to install.
# Safe to run repeatedly. Exit 0 = /usr/sbin/knotd and /usr/sbin/pdns_server are there, 1 = not.
#
# No system DNS service is left running: the tests never use /etc/knot or /etc/powerdns, they
# start their own instances with a config in a temp dir. apt is asked (policy-rc.d) not to start
# the daemons; if one started anyway (a host with a different policy), it is stopped and disabled,
# so nothing listens on port 53 because of this script.
#
#   scripts/ensure-dns-servers.sh            install if missing
#   SVC_SKIP_DNS_SERVERS=1 ...               do nothing, report missing (the tests then skip)
set -euo pipefail

[ "$(uname -s)" != "Linux" ] && exit 1
have() { [ -x /usr/sbin/knotd ] && [ -x /usr/sbin/pdns_server ] && [ -n "$(ls /usr/lib/*/pdns/libgsqlite3backend.so 2>/dev/null)" ]; }
have && exit 0
[ "${SVC_SKIP_DNS_SERVERS:-}" = "1" ] && exit 1

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-dns-servers: installing knot, pdns-server, pdns-backend-sqlite3 (system services not started)" >&2
  export DEBIAN_FRONTEND=noninteractive
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
  fi
  trap '[ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -o Acquire::http::Timeout=30 install -y -qq --no-install-recommends knot knot-dnsutils pdns-server pdns-backend-sqlite3 >/dev/null
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    for unit in knot pdns; do systemctl disable --now "$unit" >/dev/null 2>&1 || true; done
  fi
  have || { echo "ensure-dns-servers: the DNS servers did not install" >&2; exit 1; }
else
  echo "ensure-dns-servers: please install the DNS servers the tests run privately: sudo apt-get install knot knot-dnsutils pdns-server pdns-backend-sqlite3 (then stop their system services)" >&2
  exit 1
fi
