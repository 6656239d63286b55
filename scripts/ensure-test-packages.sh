#!/usr/bin/env bash
# Installs, before a run of the suite, every Debian package the tests install on first use:
# Chromium (test/browser), Knot and PowerDNS (the DNS provider tests), pebble (ACME). Each test
# still runs its own ensure script and skips or fails as before; this only moves apt-get out of the
# tests' time limits, where one test's install held the dpkg lock while the test beside it waited.
# The keyring packages (dbus, gnome-keyring) are installed by scripts/with-keyring.sh, which runs
# the suite. Safe to run repeatedly; exits non-zero when a package cannot be installed.
#
#   scripts/ensure-test-packages.sh        (.ci/run calls it before `npm test`)
set -euo pipefail
cd "$(dirname "$0")"
status=0
for script in ensure-chromium.sh ensure-dns-servers.sh ensure-pebble.sh; do
  ./"$script" || { echo "ensure-test-packages: $script failed" >&2; status=1; }
done
exit $status
