#!/usr/bin/env bash
# Runs a command under Node 24 LTS (issue 21 §4; README "Node versions"), e.g.
#   scripts/with-node24.sh npm test
# Node 24 comes from the npm registry, the one registry CI can reach: the platform package
# `node-<os>-<arch>` ships the binary and its C headers. The one native module
# (better-sqlite3-multiple-ciphers) is compiled against those headers (npm_config_nodedir: nothing
# is downloaded), and its Node 20 build is put back when the command ends, so the checkout keeps
# working under the system's Node 20.
set -euo pipefail
VERSION="${SVC_NODE24_VERSION:-24.9.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  *) echo "with-node24: no node package for $(uname -s) $(uname -m)" >&2; exit 9 ;;
esac
cache="$root/node_modules/.cache/node-$VERSION-$platform"
if [ ! -x "$cache/package/bin/node" ]; then
  rm -rf "$cache" && mkdir -p "$cache"
  (cd "$cache" && npm pack --silent "node-$platform@$VERSION" >/dev/null && tar xzf "node-$platform-$VERSION.tgz" && rm "node-$platform-$VERSION.tgz")
fi
export PATH="$cache/package/bin:$PATH" npm_config_nodedir="$cache/package"
echo "with-node24: $(node --version) from node-$platform@$VERSION" >&2

addon="$root/node_modules/better-sqlite3-multiple-ciphers/build/Release/better_sqlite3.node"
saved="$cache/better_sqlite3.node20"
cp "$addon" "$saved"
restore() { cp "$saved" "$addon"; }
trap restore EXIT
(cd "$root" && npm rebuild better-sqlite3-multiple-ciphers --build-from-source --foreground-scripts > "$cache/rebuild.log" 2>&1) || { tail -30 "$cache/rebuild.log" >&2; exit 1; }
"$@"
