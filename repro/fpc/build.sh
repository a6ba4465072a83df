#!/bin/sh
# Build repro/fpc/fpserver.lpr with a given Free Pascal compiler.
# usage: repro/fpc/build.sh [FPC]        (default: fpc on PATH)
# Output: build/fpc-<version>/fpserver  (relative to the repository root);
# prints the compiler version and the binary path on stdout.
set -eu
FPC_BIN=${1:-${FPC:-fpc}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v "$FPC_BIN" >/dev/null 2>&1; then
    echo "build.sh: Free Pascal compiler '$FPC_BIN' not found (Debian: apt-get install fpc)" >&2
    exit 4
fi
VERSION=$("$FPC_BIN" -iV)
OUT="$ROOT/build/fpc-$VERSION"
mkdir -p "$OUT/units"
echo "fpc $VERSION ($("$FPC_BIN" -iTP)-$("$FPC_BIN" -iTO))"
"$FPC_BIN" -O2 -vew -l- -FE"$OUT" -FU"$OUT/units" "$ROOT/repro/fpc/fpserver.lpr" >&2
echo "$OUT/fpserver"
