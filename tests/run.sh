#!/usr/bin/env bash
# tests/run.sh - `make test`: the whole regression suite.
#
# Steps, each printing selftests-style 'TEST: name [ OK ]' / '[FAIL]' lines:
#   patches       each patch applies alone, the series in order, DEP-3 headers
#   unit          CUnit suites of every server-min module, built against every
#                 variant (plain), and stock/all under ASan+UBSan and TSan
#   analysers     capture analysers on the committed reference captures
#   integration   server-min variants driven by the probe (plain, ASan, TSan,
#                 valgrind)
#   matrix        `make repro`'s matrix: every row as expected, including the
#                 real fphttpserver built with Debian's FPC 3.2.2
#   hostile       bad input, load and faults against every variant
#   fuzz          a brief libFuzzer run over the request reader
#   clients       curl, Node http.Agent, urllib3 and wrk against the variants
#   report        REPORT.md's generated claims against this run
# Ends with 'N passed, N failed'.  Exit status: 0 only if nothing failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
logdir=$top/results/test-logs
mkdir -p "$logdir"
passed=0 failed=0 skipped=0
failures=()

# run_step NAME CMD...: run it, echo its output, count its TEST lines.  A step
# that fails without printing a FAIL line counts as one failure itself.
run_step() {
    local name=$1 log=$logdir/$1.log rc ok bad sk
    shift
    echo "== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    ok=$(grep -c '^TEST: .*\[ OK \]' "$log")
    bad=$(grep -c '^TEST: .*\[FAIL\]' "$log")
    sk=$(grep -c '^TEST: .*\[SKIP\]' "$log")
    passed=$((passed + ok)) failed=$((failed + bad)) skipped=$((skipped + sk))
    if ((bad > 0)); then
        failures+=("$name: $bad failed (see $log)")
    elif ((rc != 0)); then
        failed=$((failed + 1))
        failures+=("$name: exited $rc without a FAIL line (see $log)")
        echo "TEST: $name [FAIL] exited $rc"
    elif ((ok == 0 && sk == 0)); then
        failed=$((failed + 1))
        failures+=("$name: ran no test")
        echo "TEST: $name [FAIL] ran no test"
    fi
}

# A CUnit binary (verbose basic mode): its output, then one TEST line per
# CUnit test, and a FAIL line if the binary itself did not finish cleanly.
cunit() {
    local name=$1 bin=$2 out rc
    out=$(timeout 600 "$bin" 2>&1)
    rc=$?
    echo "$out"
    awk -v n="$name" '
        /^Suite: / { suite = $2 }
        /^  Test: / {
            t = $2
            if ($0 ~ /\.\.\.passed/) print "TEST: " n " " suite "/" t " [ OK ]"
            else print "TEST: " n " " suite "/" t " [FAIL]"
        }' <<< "$out"
    if ((rc != 0)) || ! grep -q '^ *tests ' <<< "$out"; then
        echo "TEST: $name [FAIL] exit $rc (no CUnit summary, or failures)"
    fi
}

# Each patch applies alone to a pristine tree and the series applies in
# order (what `make` relies on), and each carries its DEP-3 header.
step_patches() {
    local tmp p f ok
    tmp=$(mktemp -d)
    while read -r p; do
        [[ -z $p || $p == \#* ]] && continue
        rm -rf "$tmp/alone" && mkdir -p "$tmp/alone" && cp -r server-min "$tmp/alone/"
        if patch -d "$tmp/alone" -p1 -s --dry-run < "patches/$p" > /dev/null 2>&1; then
            echo "TEST: patch $p applies alone [ OK ]"
        else
            echo "TEST: patch $p applies alone [FAIL]"
        fi
        ok=1
        for f in Description Upstream-Routine Bug Forwarded Last-Update; do
            grep -q "^$f: " "patches/$p" || { ok=0; echo "TEST: patch $p header $f [FAIL] missing"; }
        done
        ((ok)) && echo "TEST: patch $p DEP-3 header [ OK ]"
    done < patches/series
    rm -rf "$tmp/series" && mkdir -p "$tmp/series" && cp -r server-min "$tmp/series/"
    ok=1
    while read -r p; do
        [[ -z $p || $p == \#* ]] && continue
        patch -d "$tmp/series" -p1 -s --no-backup-if-mismatch < "patches/$p" > /dev/null 2>&1 || ok=0
    done < patches/series
    if ((ok)); then echo "TEST: patch series applies in order [ OK ]"; else echo "TEST: patch series applies in order [FAIL]"; fi
    rm -rf "$tmp"
}

step_unit() {
    local v
    for v in stock forward-allow-connect buffer-aware-pending coalesce-writes \
             announce-close keep-surplus-bytes pool-idle-fallback all; do
        cunit "unit/$v" "build/tests/$v/unit"
    done
    for v in stock all; do
        cunit "unit-asan/$v" "build/tests-asan/$v/unit"
        cunit "unit-tsan/$v" "build/tests-tsan/$v/unit"
    done
}

step_analysers() {
    cunit "capture-parsers" build/test-capture-parsers
    captures/tests/test_analysers.sh
}

step_integration() {
    python3 tests/integration/test_server.py
    KIT_SERVER_BUILD=build-asan python3 tests/integration/test_server.py --quick
    KIT_SERVER_BUILD=build-tsan python3 tests/integration/test_server.py --quick
    KIT_SERVER_WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" \
        python3 tests/integration/test_server.py seq_one refusing 503 sigpipe
}

step_matrix() {
    local out=results/test-matrix rc
    python3 repro/matrix.py --out "$out"
    rc=$?
    python3 - "$out/matrix.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["rows"]:
    ok = r["as_expected"] and r["criteria_met"]
    bad = [f"{k}={v['state']}" for k, v in r["verdicts"].items()
           if v["state"] != r["expected"].get(k)]
    print(f"TEST: matrix {r['row']} [{' OK ' if ok else 'FAIL'}]"
          + ("" if ok else f" {r['criteria']} {bad}"))
PY
    return $rc
}

step_hostile() {
    local rc=0
    tests/hostile/run.sh || rc=1
    tests/hostile/run.sh --asan stock all || rc=1
    tests/hostile/run.sh --tsan stock all || rc=1
    tests/hostile/run.sh --valgrind stock || rc=1
    return $rc
}
step_fuzz() {
    local v
    for v in stock all; do
        if tests/fuzz/run.sh "${FUZZ_SECONDS:-20}" "$v"; then
            echo "TEST: fuzz $v [ OK ]"
        else
            echo "TEST: fuzz $v [FAIL] see results/fuzz/$v/"
        fi
    done
}
step_clients() { python3 repro/clients.py --out results/test-matrix/clients; }
step_report() { python3 repro/report.py --check results/test-matrix/matrix.json; }

steps=(patches unit analysers integration matrix clients hostile fuzz report)
((${#@})) && steps=("$@")
for s in "${steps[@]}"; do
    run_step "$s" "step_$s"
done

echo
echo "== summary"
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
