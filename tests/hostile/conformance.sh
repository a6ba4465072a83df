#!/usr/bin/env bash
# tests/hostile/conformance.sh [--self-test-only] - `make conformance`, the
# suite's conformance step: the RFC 9110 / RFC 9112 table of
# tests/hostile/conformance.c (build/hostile --conformance) against the
# model and the real trunk, stock and all, four runs at once.
#
# Each case's outcome must be the one measured for the run's defect state
# (the driver's TEST line), model and real trunk must give the same outcome
# (a difference is a fidelity bug of the model), and a case that `all`
# claims (its fixed_by defects are among those repro/harness/patchset.py says `all`
# fixes) must conform on `all`.  Then tests/hostile/conformance.py writes
# results/conformance/conformance.json and conformance.md (the table
# REPORT.md's block "conformance" prints).
# Self-test (always run, last): a deliberately wrong expectation
# (build/hostile --wrong CASE) must fail its case and the driver's run, and
# the merge must fail a doctored run where the model differs from the real
# trunk or a claimed case violates on `all`.
# Lines: 'TEST: conformance <mode>/<variant>/<case> [ OK ]|[FAIL]|[SKIP]'.
# Exit status: 0 all passed, 1 a failure, 4 nothing could run.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck disable=SC2034 # read by scripts/lib.sh
kit_name=conformance
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT

self_only=0
[[ ${1:-} == --self-test-only ]] && self_only=1
out=results/conformance
make -s build/hostile build/stock/server-min build/all/server-min || exit 1
kit_mktemp snap
# Private copies: another build in the tree may replace a binary meanwhile.
cp build/hostile "$snap/" || exit 1
mkdir -p "$snap/plain/stock" "$snap/plain/all" && cp build/stock/server-min "$snap/plain/stock/" &&
    cp build/all/server-min "$snap/plain/all/" || exit 1
for v in stock all; do
    f=build/real-trunk/$v/fpserver
    [[ -x $f ]] && mkdir -p "$snap/real-trunk/$v" && cp "$f" "$snap/real-trunk/$v/"
done

# --fixed / --applied of a variant from repro/harness/patchset.py (stock: none;
# all: every patch of the series, C for the model, Pascal for the real trunk).
fixed_of() { python3 repro/harness/patchset.py fixed "$1" "$2"; }

rc=0
if ((!self_only)); then
    rm -rf "$out" && mkdir -p "$out" || exit 1
    t0=$SECONDS
    runs=()
    for mode in plain real-trunk; do
        kind=c bin=server-min args=(--clone)
        [[ $mode == real-trunk ]] && kind=fpc bin=fpserver args=()
        for v in stock all; do
            dir=$out/$mode/$v
            mkdir -p "$dir"
            if [[ ! -x $snap/$mode/$v/$bin ]]; then
                echo "TEST: conformance $mode/$v [SKIP] build/real-trunk/$v/fpserver not built (make real-trunk)" \
                    > "$dir/conformance.out"
                continue
            fi
            fixed=$(fixed_of "$v" "$kind")
            "$snap/hostile" --conformance --server "$snap/$mode/$v/$bin" --variant "$v" --mode "$mode" \
                --fixed "$fixed" --applied "$fixed" --log-dir "$dir" "${args[@]}" \
                > "$dir/conformance.out" 2>&1 &
            KIT_PIDS+=($!)
            runs+=($!)
        done
    done
    for p in "${runs[@]}"; do wait "$p" || rc=1; done
    cat "$out"/*/*/conformance.out | grep -E '^(TEST:|    )'
    "$snap/hostile" --conformance --describe > "$out/table.json" || rc=1
    python3 tests/hostile/conformance.py merge "$out" || rc=1
    echo "conformance: 4 runs in $((SECONDS - t0)) s"
fi

# Self-test: the checks keep their power.
kit_mktemp st
"$snap/hostile" --conformance --clone --server "$snap/plain/stock/server-min" --variant stock \
    --cases 9112-9.3-persist-1.1-default --wrong 9112-9.3-persist-1.1-default --log-dir "$st" \
    > "$st/wrong.out" 2>&1
wrc=$?
if ((wrc == 1)) && grep -q '^TEST: conformance plain/stock/9112-9.3-persist-1.1-default \[FAIL\] outcome 200/4B;open, expected (deliberately wrong)' "$st/wrong.out"; then
    test_ok "conformance self-test: a wrong expectation fails its case and the run"
else
    test_fail "conformance self-test: a wrong expectation fails its case and the run" "exit $wrc: $(grep '^TEST:' "$st/wrong.out" | head -1)"
    rc=1
fi
python3 tests/hostile/conformance.py self-test || rc=1
exit $rc
