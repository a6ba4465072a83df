#!/usr/bin/env bash
# repro/fpc/fpcunit/run.sh [--each] [linux] [win64] - the fpcunit tests of
# TFPHttpServer's connection path (tcfphttpserver.pp, fpcunithttpserver.lpr),
# built with the trunk toolchain for the stock snapshot and for the whole
# Pascal series (all), run on Linux and as a win64 .exe under Wine (default:
# both platforms).
#
#   stock  every test must fail, with a message naming what went wrong
#          (tests.json "stock_says"): 'TEST: fpcunit linux stock declared
#          <Test> [ OK ]' means it failed as expected
#   all    every test must pass
#   A test that cannot apply on a platform (B8 on Windows) is ignored by the
#   program with its reason: a SKIP line, never a pass.
#   --each  every single fix and every pair instead (default platform:
#          linux): exactly the tests of the defects it fixes pass
#          (repro/harness/patchset.py fixed, which counts Also-Fixes: B6's fix also
#          fixes B7), and the hazard tests once it fixes the defect they
#          need (tests.json "needs": B6); the others fail as on stock
#          (~5 min; not in make test)
#   --set SET  this set only (repeatable; default platform: linux), with
#          neither the source checks nor the fixtures (make check: scripts
#          and repro/harness/checkfix.py); SET is stock, all, a fix or
#          fixes joined by '+'
#   --tests 'Bn ...'  only the tests of these defects, and the hazard tests
#          that need one of them, judged alone
#   --judge 'SET=Bn ...'  judge SET as fixing these defects (none after
#          the '=': as stock; default: patchset.py fixed SET): a set of
#          another series (KIT_FPC_PATCHES, as for build.sh), or a tree that
#          carries a fix itself, built as its stock (repeatable)
# Every set runs in three orders, each judged on its own: declared (the
# whole program), reverse (--suite with the tests in reverse order) and alone
# (one process per test): a test's result must not depend on the others.
# Fixtures (tests.json "fixture", Linux): the hazard test must fail with the
# fixture patch (tests/hazards/) in place of the fix it replaces, alone and
# in all: the proof that it can see the hazard.
# Also: the upstream patch is what mkpatch.sh makes and git am takes it, and
# TESTS.md is what tests.py makes.
#
# Builds are cached in build/fpcunit/<platform>/<set>/ (a fixture's in
# build/fpcunit/<platform>/<fixture>/<set>/; KIT_FPCUNIT_OUT: another
# folder than build/fpcunit), keyed on the toolchain's stamp,
# the Pascal series, the fixtures, these sources and build.sh; the orders
# of every set run side by side, each in processes (and a Wine prefix) of
# its own.  Needs build/fpc-trunk (make fpc-trunk; win64: make
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
out=${KIT_FPCUNIT_OUT:-$top/build/fpcunit}   # make check: a folder of its own
sets=(stock all)
platforms=(linux win64)
one=() only=""
declare -A judge_as=()
if [[ ${1:-} == --each ]]; then
    shift
    read -ra sets <<< "$(python3 "$top/repro/harness/patchset.py" variants) $(python3 "$top/repro/harness/patchset.py" pairs)"
    platforms=(linux)
fi
while (($#)) && [[ $1 == --* ]]; do
    case $1 in
    --set) one+=("$2") ;;
    --tests) only=$2 ;;
    --judge) [[ $2 == *=* ]] || die "--judge $2: not SET=DEFECTS"; judge_as[${2%%=*}]=${2#*=} ;;
    *) die "unknown option $1 (see the header of $0)" ;;
    esac
    shift 2 || die "$1 needs a value"
done
((${#one[@]})) && sets=("${one[@]}") platforms=(linux)
(($#)) && platforms=("$@")
suite=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["suite"])' "$here/tests.json")
if [[ -n $only ]]; then
    # shellcheck disable=SC2086 # a list of defects
    mapfile -t names < <(python3 "$here/tests.py" names-for $only)
    ((${#names[@]})) || die "no test for '$only'"
else
    mapfile -t names < <(python3 "$here/tests.py" names)
fi
# FIXTURE PATCH REPLACES TEST SET... per line (none for --set)
fixtures=()
((${#one[@]})) || mapfile -t fixtures < <(python3 "$here/tests.py" fixtures)
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

# build PLATFORM RUN COMPILER: build (or find cached) build/fpcunit/PLATFORM/RUN,
# RUN a set or FIXTURE/SET (the set with the fixture's patch in place of the
# one it replaces, from a copy of the series in $tmp/fixture-FIXTURE).
build() {
    local plat=$1 run=$2 fpc=$3 dir=$out/$1/$2 set=${2#*/} tag=$1-${2//\//-} key exe t0 pdir=${KIT_FPC_PATCHES:-$top/patches/fpc}
    [[ $run == */* ]] && pdir=$tmp/fixture-${run%%/*}
    key=$({ cat "$tc/stamp"; [ "$plat" = win64 ] && cat "$tc/win64.stamp"; cat "$fpc";
            cat "$pdir/series" "$pdir"/*.patch "$top/repro/fpc/build.sh" \
                "$here/tcfphttpserver.pp" "$here/fpcunithttpserver.lpr"; } 2>/dev/null | sha256sum | cut -c1-16)
    exe=$dir/fpcunithttpserver; [ "$plat" = win64 ] && exe+=.exe
    if [ -f "$exe" ] && [ "$(cat "$dir/.key" 2>/dev/null)" = "$key" ]; then
        echo "cached" > "$tmp/build-$tag"
        return 0
    fi
    t0=$(date +%s.%N)
    rm -f "$dir/.key"
    mkdir -p "$dir"
    if KIT_FPC_PATCHES=$pdir nice -n 5 "$top/repro/fpc/build.sh" --fpc "$fpc" --set "$set" --out "$dir" \
           --program "$here/fpcunithttpserver.lpr" > /dev/null 2> "$out/$tag.log" && [ -f "$exe" ]; then
        echo "$key" > "$dir/.key"
        echo "built in $(elapsed "$t0") s" > "$tmp/build-$tag"
    else
        echo "FAILED (build/fpcunit/$tag.log: $(grep -m1 -E 'Error|Fatal|die|:' "$out/$tag.log"))" > "$tmp/build-$tag"
    fi
}

# program PLATFORM RUN ORDER ARG...: the test program of RUN, its XML on
# stdout (win64: in the Wine prefix of RUN's ORDER).
program() {
    local plat=$1 run=$2 order=$3; shift 3
    if [ "$plat" = win64 ]; then
        WINEPREFIX=$prefix-win64-${run//\//-}-$order timeout -k 5 "$RUN_LIMIT_S" "$top/repro/fpc/wine-server.sh" \
            "$out/win64/$run/fpcunithttpserver.exe" --format=xml "$@"
    else
        timeout -k 5 "$RUN_LIMIT_S" "$out/linux/$run/fpcunithttpserver" --format=xml "$@"
    fi
}

# order PLATFORM RUN ORDER: one order of RUN into $tmp/TAG-ORDER.xml (alone:
# a folder, one process per test) and $tmp/TAG-ORDER.rc ("EXIT SECONDS");
# ORDER fixture: a fixture's hazard test alone.
order() {
    local plat=$1 run=$2 order=$3 tag=$1-${2//\//-} t0 rc=0 n reversed="" i
    t0=$(date +%s.%N)
    case $order in
    fixture)
        program "$plat" "$run" "$order" "--suite=$suite.${fixture_test[${run%%/*}]}" \
            > "$tmp/$tag-fixture.xml" 2> "$tmp/$tag-fixture.err"
        rc=$? ;;
    declared)
        program "$plat" "$run" "$order" ${only:+"--suite=$(printf "$suite.%s," "${names[@]}" | sed 's/,$//')"} \
            > "$tmp/$tag-declared.xml" 2> "$tmp/$tag-declared.err"
        rc=$? ;;
    reverse)
        for ((i = ${#names[@]} - 1; i >= 0; i--)); do reversed+=${reversed:+,}$suite.${names[i]}; done
        program "$plat" "$run" "$order" "--suite=$reversed" > "$tmp/$tag-reverse.xml" 2> "$tmp/$tag-reverse.err"
        rc=$? ;;
    alone)
        mkdir -p "$tmp/$tag-alone.xml"
        for n in "${names[@]}"; do
            program "$plat" "$run" "$order" "--suite=$suite.$n" > "$tmp/$tag-alone.xml/$n.xml" \
                2> "$tmp/$tag-alone.xml/$n.err"
            i=$?; echo "$i" > "$tmp/$tag-alone.xml/$n.rc"; ((i > rc)) && rc=$i
        done ;;
    esac
    echo "$rc $(elapsed "$t0")" > "$tmp/$tag-$order.rc"
}
# said RC ERR: how a run that gave no XML ended, for its line.
said() {
    echo "exit $1; its last line: $(grep -v '^[[:space:]]*$' "$2" 2>/dev/null | tail -1 || true)"
}
# orders RUN: RUN's orders (fixture, or the three).
orders() {
    if [[ $1 == */*/* ]]; then echo fixture; else echo alone declared reverse; fi
}

# The checks of the sources themselves (not for --set: the suite's).
if ((${#one[@]} == 0)); then
    "$here/mkpatch.sh" --check || failed=1
    if python3 "$here/tests.py" doc | cmp -s - "$here/TESTS.md"; then
        test_ok "fpcunit TESTS.md current"
    else
        test_fail "fpcunit TESTS.md current" "differs from tests.json (python3 repro/fpc/fpcunit/tests.py doc > repro/fpc/fpcunit/TESTS.md)"
        failed=1
    fi
    python3 "$here/tests.py" selftest || failed=1
fi

# A fixture's series: the Pascal series with its patch in place of the one it replaces.
declare -A fixture_test fixture_sets
for f in "${fixtures[@]}"; do
    read -r fx fpatch freplaces ftest fsets <<< "$f"
    fixture_test[$fx]=$ftest fixture_sets[$fx]=$fsets
    mkdir -p "$tmp/fixture-$fx"
    cp "$top/patches/fpc/series" "$top"/patches/fpc/*.patch "$tmp/fixture-$fx/"
    cp "$top/$fpatch" "$tmp/fixture-$fx/$freplaces.patch"
done

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
    todo=("${sets[@]}")
    if [ "$plat" = linux ]; then
        for fx in "${!fixture_sets[@]}"; do for set in ${fixture_sets[$fx]}; do todo+=("$fx/$set"); done; done
    fi
    for set in "${todo[@]}"; do
        while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
        build "$plat" "$set" "$fpc" &
        runs+=("$plat/$set")
    done
done
wait
t_built=$(date +%s.%N)
((${#runs[@]})) || exit $((failed ? KSFT_FAIL : KSFT_SKIP))

# The jobs: each run's orders (a fixture's one), the longest first (stock
# waits out its defects' deadlines; a win64 test alone starts a Windows
# program per test), eight side by side: they mostly wait (c37: the three
# orders one after the other took 200 s, 83 s of CPU).
queue=()
for r in "${runs[@]}"; do
    plat=${r%%/*} run=${r#*/}
    grep -q '^FAILED' "$tmp/build-$plat-${run//\//-}" && continue
    for o in $(orders "$r"); do queue+=("$r $o"); done
done
mapfile -t queue < <(((${#queue[@]})) && printf '%s\n' "${queue[@]}" | awk '{ w = ($1 ~ /^win64\/stock$/) ? 0 : ($1 ~ /\/stock$/) ? 1 : 2
                                                        print w ($2 == "alone" ? 0 : 1), $0 }' | sort -s -k1,1 | cut -d' ' -f2-)

# A Wine prefix per Windows job (and so a Wine server of its own), copied
# from the kit's template: a Wine server is one process serving every
# program of its prefix, and with one for two runs a clean-clone CI run saw
# TestRequestHeadHasADeadline's client wait 1.4 s between two pieces of its
# drip, in three drips in a row; with one each, the drip's 66 bytes take
# 2.1 s on win64 stock, where they took 2.6 s.
prefix=$tmp/prefix
for j in "${queue[@]}"; do
    read -r r o <<< "$j"
    [[ $r == win64/* ]] || continue
    if ! why=$(cd "$top/repro/harness" && python3 -c 'import sys, wineprefix; from pathlib import Path; wineprefix.copy(Path(sys.argv[1]))' "$prefix-${r//\//-}-$o" 2>&1); then
        test_fail "fpcunit win64" "no Wine prefix: $(tail -1 <<< "$why")"
        failed=1
        prefix=""
        break
    fi
done

declare -A started
for j in "${queue[@]}"; do
    read -r r o <<< "$j"
    while (($(jobs -rp | wc -l) >= 8)); do wait -n; done
    plat=${r%%/*} run=${r#*/}
    [ "$plat" = win64 ] && [ -z "$prefix" ] && continue
    order "$plat" "$run" "$o" &
    started[$r]=1
done
wait

# A test whose own check says that it measured nothing (its drip's client
# starved between two pieces in each of its three tries: c46, a win64 run
# alone beside seven orders and the suite's other steps) is made once more,
# by itself, now that the orders have ended.  That run is the one judged
# (tests.py reads ORDER.xml.again/), the first one's message beside it; a
# second "measured nothing" fails as the first would have.  So is a run
# that gave no XML result at all: a Windows program that ends without
# writing anything leaves no result to judge (e3: one test of win64 all
# alone, exit 1, an empty file; c79: "wine client error:0: recvmsg:
# Connection reset by peer").  A test alone is made again by itself, a run
# of the whole program in its order's place; the line says how the first
# ended.
# again PLAT RUN ORDER NAME: NAME once more by itself, into ORDER.xml.again/.
again() {
    local tag=$1-${2//\//-}
    mkdir -p "$tmp/$tag-$3.xml.again"
    program "$1" "$2" "$3" "--suite=$suite.$4" > "$tmp/$tag-$3.xml.again/$4.xml" 2>> "$tmp/$tag-$3.err"
}
for j in "${queue[@]}"; do
    read -r r o <<< "$j"
    plat=${r%%/*} run=${r#*/} tag=${r//\//-}
    [[ -e $tmp/$tag-$o.xml ]] || continue
    mapfile -t bad < <(python3 "$here/tests.py" noresult "$tmp/$tag-$o.xml")
    for n in "${bad[@]}"; do
        if [[ $n == "*" ]]; then
            read -r rc _ < "$tmp/$tag-$o.rc"
            echo "# fpcunit $plat $run $o: no XML result ($(said "$rc" "$tmp/$tag-$o.err")); made again"
            mv "$tmp/$tag-$o.xml" "$tmp/$tag-$o.xml.first"
            mv "$tmp/$tag-$o.err" "$tmp/$tag-$o.err.first"
            order "$plat" "$run" "$o"
        else
            echo "# fpcunit $plat $run $o: $n gave no XML result ($(said "$(cat "$tmp/$tag-$o.xml/$n.rc")" \
                "$tmp/$tag-$o.xml/$n.err")); made again by itself"
            mv "$tmp/$tag-$o.xml/$n.xml" "$tmp/$tag-$o.xml/$n.xml.first"
            again "$plat" "$run" "$o" "$n"
        fi
    done
    [[ $o != fixture ]] || continue
    for n in $(python3 "$here/tests.py" unmeasured "$tmp/$tag-$o.xml"); do
        echo "# fpcunit $plat $run $o: $n measured nothing; made again by itself"
        again "$plat" "$run" "$o" "$n"
    done
done

for r in "${runs[@]}"; do
    plat=${r%%/*} run=${r#*/} tag=${r//\//-}
    b=$(cat "$tmp/build-$tag")
    if [[ $b == FAILED* ]]; then
        test_fail "fpcunit $plat $run build" "${b#FAILED }"; failed=1; continue
    fi
    test_ok "fpcunit $plat $run build" "$b"
    [ -n "${started[$r]:-}" ] || continue
    if [[ $run == */* ]]; then
        read -r rc secs < "$tmp/$tag-fixture.rc"
        echo "# fpcunit $plat $run: ${fixture_test[${run%%/*}]} ran in $secs s (exit $rc)"
        python3 "$here/tests.py" fixture "$tmp/$tag-fixture.xml" "$plat" "${run%%/*}" "${run#*/}" "$rc" || failed=1
        continue
    fi
    if [[ -v judge_as[$run] ]]; then fixed=${judge_as[$run]}; else fixed=$(python3 "$top/repro/harness/patchset.py" fixed "$run"); fi
    for order in declared reverse alone; do
        read -r rc secs < "$tmp/$tag-$order.rc"
        echo "# fpcunit $plat $run $order: ran in $secs s (exit $rc)"
        ((rc == 124 || rc == 137)) && { test_fail "fpcunit $plat $run $order" "did not end within $RUN_LIMIT_S s"; failed=1; }
        python3 "$here/tests.py" judge "$tmp/$tag-$order.xml" "$plat" "$run" "$order" "$rc" "$fixed" \
            ${only:+"${names[*]}"} || failed=1
    done
done
echo "# fpcunit: builds $(awk -v a="$t_start" -v b="$t_built" 'BEGIN { printf "%.1f", b - a }') s, total $(elapsed "$t_start") s"
exit $((failed ? KSFT_FAIL : KSFT_PASS))
