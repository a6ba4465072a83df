#!/usr/bin/env bash
# scripts/check-fpc-bootstrap.sh [CYCLED] - the kit's trunk toolchain,
# bootstrapped in one stage (scripts/fpc-trunk.sh), compiles the same bytes
# as a toolchain built by FPC's full `make cycle` from the same source.
#
# CYCLED is a cycled toolchain folder: bin/ppcx64 and its Linux RTL in
# src/rtl/units/x86_64-linux (default: the one the Horse CI job builds and
# caches, build/horse-ci/cache/*/, which tests/run.sh's horse-ci step makes
# first).  It is only read.  TEST lines:
#   fpc-bootstrap rtl            every RTL unit (.o, .ppu) of the two is the
#                                same file, byte for byte, and neither has
#                                one the other lacks
#   fpc-bootstrap fpserver SET   repro/fpc/fpserver.lpr compiled with each
#                                compiler against its own RTL (the kit's
#                                unit paths for the packages, SET's overlay
#                                for a patch set) gives the same program
#                                (stock and all)
# Why it holds: the cycle's stages 2 and 3 compile the compiler with
# itself to prove it reproduces itself; the code a compiler generates is
# decided by its source, not by which compiler compiled it nor how (the
# kit's stage 1 is compiled with OPT=-O2, the cycle's without).  This check is
# what makes that a measured fact for this tree rather than an argument.
# Exit: 0 the same, 1 a difference (the files named), 4 skipped (no kit
# toolchain, or no cycled one), with the reason.
set -uo pipefail
kit_name=fpc-bootstrap
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

kit=$top/build/fpc-trunk
rtl=src/rtl/units/x86_64-linux
cycled=${1:-}
if [[ -z $cycled ]]; then
    for d in "$top"/build/horse-ci/cache/*/; do
        [[ -x $d/bin/ppcx64 && -d $d/$rtl ]] && cycled=${d%/}
    done
fi
[[ -x $kit/bin/ppcx64 && -d $kit/$rtl ]] || { test_skip "$kit_name" "no kit toolchain in build/fpc-trunk (make fpc-trunk)"; exit $KSFT_SKIP; }
[[ -n $cycled && -x $cycled/bin/ppcx64 && -d $cycled/$rtl ]] \
    || { test_skip "$kit_name" "no cycled toolchain (run repro/horse/ci-job.sh, or pass a folder with bin/ppcx64 and $rtl)"; exit $KSFT_SKIP; }
echo "$kit_name: kit: $kit ($(cat "$kit/stamp" 2>/dev/null)); cycled: $cycled"
rc=0

# ---- the RTL, file by file ----
differ=() only=()
while read -r f; do
    if [[ ! -f $kit/$rtl/$f || ! -f $cycled/$rtl/$f ]]; then only+=("$f")
    elif ! cmp -s "$kit/$rtl/$f" "$cycled/$rtl/$f"; then differ+=("$f"); fi
done < <( { (cd "$kit/$rtl" && ls); (cd "$cycled/$rtl" && ls); } | grep -E '\.(o|ppu)$' | sort -u)
n=$(cd "$kit/$rtl" && ls | grep -cE '\.(o|ppu)$')
if ((${#differ[@]} + ${#only[@]})); then
    test_fail "$kit_name rtl" "of $n files, ${#differ[@]} differ (${differ[*]:0:8}), ${#only[@]} in one only (${only[*]:0:8})"
    rc=1
else
    test_ok "$kit_name rtl" "$n files (.o, .ppu), each the same bytes"
fi

# ---- the server, compiled by each ----
# The same command line for both: the compiler with -n and the kit's
# package paths, the RTL line pointing at the compiler's own RTL.
kit_mktemp tmp
wrapper() {   # wrapper NAME TOOLCHAIN: $tmp/NAME/fpc
    mkdir -p "$tmp/$1"
    sed "s|^-Fu$kit/$rtl\$|-Fu$2/$rtl|" "$kit/linux.cfg" > "$tmp/$1/linux.cfg"
    printf '#!/bin/sh\nexec "%s" -n @"%s" "$@"\n' "$2/bin/ppcx64" "$tmp/$1/linux.cfg" > "$tmp/$1/fpc"
    chmod +x "$tmp/$1/fpc"
}
wrapper kit "$kit"
wrapper cycled "$cycled"
grep -qx -- "-Fu$cycled/$rtl" "$tmp/cycled/linux.cfg" || die "no RTL line in $kit/linux.cfg to point at $cycled"
# Each compiler writes its own build date (ppcx64 -iD) into every program:
# two toolchains built either side of midnight differ in those bytes only.
dk=$("$kit/bin/ppcx64" -iD) dc=$("$cycled/bin/ppcx64" -iD)
same_but_date() {   # same_but_date A B: A and B equal once B's date is A's
    python3 - "$1" "$2" "$dk" "$dc" <<'PY'
import sys
a, b = (open(f, "rb").read() for f in sys.argv[1:3])
dk, dc = (d.encode() for d in sys.argv[3:5])
sys.exit(0 if dc in b and a == b.replace(dc, dk) else 1)
PY
}
for set in stock all; do
    flags=()
    if [[ $set != stock ]]; then
        ov=$("$top/repro/fpc/build.sh" --fpc "$kit/bin/fpc" --set "$set" --out "$tmp/overlay-$set" --overlay-only 2> /dev/null | tail -1) \
            || die "no overlay for set $set"
        while read -r d; do flags+=("-Fu$d" "-Fi$d"); done < <(find "$ov" -type f -printf '%h\n' | sort -u)
    fi
    for w in kit cycled; do
        o=$tmp/$w/$set; mkdir -p "$o"
        "$tmp/$w/fpc" -O2 -l- "${flags[@]}" -FE"$o" -FU"$o" "$top/repro/fpc/fpserver.lpr" > "$o.log" 2>&1 \
            || { cat "$o.log" >&2; die "fpserver ($set) does not compile with the $w compiler"; }
    done
    if cmp -s "$tmp/kit/$set/fpserver" "$tmp/cycled/$set/fpserver"; then
        test_ok "$kit_name fpserver $set" "$(stat -c %s "$tmp/kit/$set/fpserver") bytes, the same"
    elif [[ $dk != "$dc" ]] && same_but_date "$tmp/kit/$set/fpserver" "$tmp/cycled/$set/fpserver"; then
        test_ok "$kit_name fpserver $set" "$(stat -c %s "$tmp/kit/$set/fpserver") bytes, the same but the compilers' build dates ($dk, $dc: built either side of midnight), which FPC writes into every program"
    else
        test_fail "$kit_name fpserver $set" "the programs differ: $(cmp "$tmp/kit/$set/fpserver" "$tmp/cycled/$set/fpserver" | head -1)"
        rc=1
    fi
done
exit $rc
