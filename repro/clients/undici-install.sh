#!/bin/bash
# undici-install.sh [PREFIX] - the npm clients, cached in PREFIX (default
# build/npm): undici, pinned.  6.x is the last line whose engines take
# Debian 12's Node (18.20; undici 7 needs 20.18, 8 newer still), so the
# same version runs on a stock Debian 12 and on a newer Node.
# Returns at once when PREFIX holds that version; otherwise installs it
# with npm into a temp folder beside PREFIX and moves it in place (a run
# that dies half way leaves no half install), under a lock (make test and
# make repro may ask at once).  npm's --engine-strict refuses a Node the
# package does not support.
# Exit: 0 installed (or cached), 4 cannot install here (no node or npm, npm
# unreachable, Node too old: the reason on stderr), 1 usage.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
UNDICI_VERSION=6.29.1
TOP=$(cd "${0%/*}/../.." && pwd)
PREFIX=${1:-$TOP/build/npm}
installed() {
    /usr/bin/python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["version"] != sys.argv[2])' \
        "$PREFIX/node_modules/undici/package.json" "$UNDICI_VERSION" 2>/dev/null
}
installed && exit 0
require_command node nodejs
require_command npm npm
require_command /usr/bin/python3 python3
trap kit_cleanup EXIT
mkdir -p "$(dirname "$PREFIX")"
exec 9>"$PREFIX.lock"
flock 9
installed && exit 0   # another run installed it while we waited
kit_mktemp STAGE
# Bounded: a registry that does not answer costs at most ~2 minutes.
if ! LOG=$(timeout 150 npm install --prefix "$STAGE" --no-save --no-package-lock --no-audit \
        --no-fund --engine-strict --fetch-timeout=30000 --fetch-retries=1 \
        "undici@$UNDICI_VERSION" 2>&1); then
    note "cannot install undici@$UNDICI_VERSION with npm $(npm --version 2>/dev/null) on Node $(node --version): $(printf '%s\n' "$LOG" | grep -E '^npm (error|ERR!)' | grep -v -E 'complete log|^npm (error|ERR!) *$' | head -n 3 | tr '\n' ' ')"
    exit 4
fi
rm -rf "$PREFIX"
mv "$STAGE" "$PREFIX"
installed || die "undici@$UNDICI_VERSION not found in $PREFIX after npm install"
note "installed undici@$UNDICI_VERSION in $PREFIX (Node $(node --version))"
