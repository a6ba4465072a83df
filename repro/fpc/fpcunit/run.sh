#!/usr/bin/env bash
# repro/fpc/fpcunit/run.sh [--each] [linux] [win64] - the fpcunit tests of
# TFPHttpServer's connection path (tcfphttpserver.pp, fpcunithttpserver.lpr),
# built with the trunk toolchain for the stock snapshot and for the whole
# Pascal series (all), run on Linux and as a win64 .exe under Wine (default:
# both platforms).
#
#   stock  every defect's test must fail, with a message naming what went
#          wrong (tests.json "stock_says"): 'TEST: fpcunit linux stock
#          <Test> [ OK ]' means it failed as expected
#   all    every test must pass
#   A test that cannot apply on a platform (B8 on Windows) is ignored by the
#   program with its reason: a SKIP line, never a pass.
#   --each  also every single fix and every pair (default platform: linux):
#          exactly the tests of the defects it fixes (repro/patchset.py
#          fixed) pass, the others fail as on stock (~2 min; not in make test)
# Also: the upstream patch is what mkpatch.sh makes and git am takes it, and
# TESTS.md is what tests.py makes.
#
# Builds are cached in build/fpcunit/<platform>/<set>/, keyed on the
# toolchain's stamp, the Pascal series, these sources and build.sh; the four
# runs go side by side.  Needs build/fpc-trunk (make fpc-trunk; win64: make
# fpc-trunk-win64) and, for win64, Wine; what is missing is a SKIP.
# Exit: 0 passed, 1 a check failed, 4 skipped (no toolchain).
set -uo pipefail
kit_name=fpcunit
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

tc=$top/build/fpc-trunk
out=$top/build/fpcunit
sets=(stock all)
platforms=(linux win64)
if [[ ${1:-} == --each ]]; then
    shift
    read -ra sets <<< "$(python3 "$top/repro/patchset.py" variants) $(python3 "$top/repro/patchset.py" pairs)"
    platforms=(linux)
fi
(($#)) && platforms=("$@")
RUN_LIMIT_S=300   # the program always ends (its watchdogs); this guards the runner only

require_command python3 python3 fpcunit
[ -x "$tc/bin/fpc" ] || { test_skip fpcunit "no trunk toolchain in build/fpc-trunk (make fpc-trunk)"; exit $KSFT_SKIP; }
tmp="" && kit_mktemp tmp
failed=0
t_start=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# compiler PLATFORM: prints the compiler for the platform, or nothing.  The
# toolchain's unit paths cover fcl-fpcunit and fcl-xml once
# scripts/fpc-trunk.sh lists them in PKGS; until then a wrapper of ours adds
# their source folders (its src/ is the toolchain's, for build.sh's overlay).
compiler() {
    local name=fpc cfg=$tc/linux.cfg w p
    [ "$1" = win64 ] && name=fpc-win64 cfg=$tc/win64.cfg
    [ -x "$tc/bin/$name" ] || return 0
    if grep -q '/packages/fcl-fpcunit/src$' "$cfg"; then echo "$tc/bin/$name"; return 0; fi
    for p in fcl-fpcunit fcl-xml; do [ -d "$tc/src/packages/$p/src" ] || return 0; done
    w=$out/toolchain/bin/$name
    mkdir -p "$(dirname "$w")"
    ln -sfn "$tc/src" "$out/toolchain/src"
    {
        echo '#!/bin/sh'
        echo "# $name with fcl-fpcunit and fcl-xml (repro/fpc/fpcunit/run.sh)"
        printf 'exec "%s"' "$tc/bin/$name"
        for p in fcl-fpcunit fcl-xml; do printf ' -Fu%s -Fi%s' "$tc/src/packages/$p/src" "$tc/src/packages/$p/src"; done
        echo ' "$@"'
    } > "$w.new" && chmod +x "$w.new" && mv "$w.new" "$w"
    echo "$w"
}

# build PLATFORM SET COMPILER: build (or find cached) build/fpcunit/PLATFORM/SET.
build() {
    local plat=$1 set=$2 fpc=$3 dir=$out/$1/$2 key exe t0
    key=$({ cat "$tc/stamp"; [ "$plat" = win64 ] && cat "$tc/win64.stamp"; cat "$fpc";
            cat "$top/patches/fpc/series" "$top"/patches/fpc/*.patch "$top/repro/fpc/build.sh" \
                "$here/tcfphttpserver.pp" "$here/fpcunithttpserver.lpr"; } 2>/dev/null | sha256sum | cut -c1-16)
    exe=$dir/fpcunithttpserver; [ "$plat" = win64 ] && exe+=.exe
    if [ -f "$exe" ] && [ "$(cat "$dir/.key" 2>/dev/null)" = "$key" ]; then
        echo "cached" > "$tmp/build-$plat-$set"
        return 0
    fi
    t0=$(date +%s.%N)
    rm -f "$dir/.key"
    mkdir -p "$dir"
    if nice -n 5 "$top/repro/fpc/build.sh" --fpc "$fpc" --set "$set" --out "$dir" \
           --program "$here/fpcunithttpserver.lpr" > /dev/null 2> "$out/$plat-$set.log" && [ -f "$exe" ]; then
        echo "$key" > "$dir/.key"
        echo "built in $(elapsed "$t0") s" > "$tmp/build-$plat-$set"
    else
        echo "FAILED (build/fpcunit/$plat-$set.log: $(grep -m1 -E 'Error|Fatal|die|:' "$out/$plat-$set.log"))" > "$tmp/build-$plat-$set"
    fi
}

# The checks of the sources themselves.
"$here/mkpatch.sh" --check || failed=1
if python3 "$here/tests.py" doc | cmp -s - "$here/TESTS.md"; then
    test_ok "fpcunit TESTS.md current"
else
    test_fail "fpcunit TESTS.md current" "differs from tests.json (python3 repro/fpc/fpcunit/tests.py doc > repro/fpc/fpcunit/TESTS.md)"
    failed=1
fi

# Which platforms can run, then the builds (two at a time: 2 cores).
runs=()
for plat in "${platforms[@]}"; do
    fpc=$(compiler "$plat")
    if [ -z "$fpc" ]; then
        test_skip "fpcunit $plat" "no $plat compiler with fcl-fpcunit and fcl-xml in build/fpc-trunk (make fpc-trunk; for win64: make fpc-trunk-win64)"
        continue
    fi
    if [ "$plat" = win64 ] && ! command -v wine > /dev/null; then
        test_skip "fpcunit win64" "missing command 'wine' (Debian package: wine64)"
        continue
    fi
    for set in "${sets[@]}"; do
        while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
        build "$plat" "$set" "$fpc" &
        runs+=("$plat/$set")
    done
done
wait
t_built=$(date +%s.%N)
((${#runs[@]})) || exit $((failed ? KSFT_FAIL : KSFT_SKIP))

# One Wine prefix for both Windows runs, copied from the kit's template.
prefix=""
if [[ " ${runs[*]} " == *" win64/"* ]]; then
    prefix=$tmp/prefix
    if ! why=$(cd "$top/repro" && python3 -c 'import sys, wineprefix; from pathlib import Path; wineprefix.copy(Path(sys.argv[1]))' "$prefix" 2>&1); then
        test_fail "fpcunit win64" "no Wine prefix: $(tail -1 <<< "$why")"
        failed=1
        prefix=""
    fi
fi

# The runs, side by side (four at a time); each writes its XML result and exit status.
declare -A started
for r in "${runs[@]}"; do
    while (($(jobs -rp | wc -l) >= 4)); do wait -n; done
    plat=${r%/*} set=${r#*/}
    grep -q '^FAILED' "$tmp/build-$plat-$set" && continue
    [ "$plat" = win64 ] && [ -z "$prefix" ] && continue
    (
        t0=$(date +%s.%N)
        if [ "$plat" = win64 ]; then
            WINEPREFIX=$prefix timeout -k 5 "$RUN_LIMIT_S" "$top/repro/fpc/wine-server.sh" \
                "$out/win64/$set/fpcunithttpserver.exe" --format=xml
        else
            timeout -k 5 "$RUN_LIMIT_S" "$out/linux/$set/fpcunithttpserver" --format=xml
        fi > "$tmp/$plat-$set.xml" 2> "$tmp/$plat-$set.err"
        echo "$? $(elapsed "$t0")" > "$tmp/$plat-$set.rc"
    ) &
    started[$r]=$!
done
wait

for r in "${runs[@]}"; do
    plat=${r%/*} set=${r#*/}
    b=$(cat "$tmp/build-$plat-$set")
    if [[ $b == FAILED* ]]; then
        test_fail "fpcunit $plat $set build" "${b#FAILED }"; failed=1; continue
    fi
    test_ok "fpcunit $plat $set build" "$b"
    [ -n "${started[$r]:-}" ] || continue
    read -r rc secs < "$tmp/$plat-$set.rc"
    echo "# fpcunit $plat $set: ran in $secs s (exit $rc)"
    ((rc == 124 || rc == 137)) && { test_fail "fpcunit $plat $set" "did not end within $RUN_LIMIT_S s"; failed=1; }
    python3 "$here/tests.py" judge "$tmp/$plat-$set.xml" "$plat" "$set" "$rc" \
        "$(python3 "$top/repro/patchset.py" fixed "$set")" || failed=1
done
echo "# fpcunit: builds $(awk -v a="$t_start" -v b="$t_built" 'BEGIN { printf "%.1f", b - a }') s, total $(elapsed "$t_start") s"
exit $((failed ? KSFT_FAIL : KSFT_PASS))
