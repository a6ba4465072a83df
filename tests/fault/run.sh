#!/usr/bin/env bash
# tests/fault/run.sh - a measure that fails is never hidden (issue 20).
#
# The matrix with one row more: tests/fault/no-listening-line.sh, a server
# that starts and never prints its "listening ADDR:PORT" line, beside the
# stock row (repro/harness/matrix.py --rows stock --fault-row ...).  Must hold:
#   - the run exits 1;
#   - every column of the fault row is "failed" after two attempts (two
#     errors recorded), and the row is not as expected;
#   - the stock row is as expected (the fault stays in its row);
#   - under Wine, where the wire decides B3, a failed B3 stays failed;
#   - after the table, every line that carries an error is a FAILED line:
#     no figure line holds a KitError, a traceback or a tool's exit status.
# Captures are made (as root) with a short wait for the line
# (CAP_READY_TRIES=20, 1 s) so that the step stays cheap.
# The checks keep their power: the same run has a set-tcp-nodelay row whose
# fix is reverted to a no-op (its TCP_NODELAY call made a constant, built
# into a build folder of its own, KIT_SERVER_BUILD); its row must fail
# with B3 and both wires reproduced, REPORT.md's claims for it must fail,
# and the sweep's B3 points on loopback must fail it too.
set -u
kit_name=fault
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT
tmp="" && kit_mktemp tmp

# The broken fix: the patched tree, its one TCP_NODELAY call made a no-op,
# compiled with the flags make uses for the real one.
broken=set-tcp-nodelay sb=$tmp/build fail=0
mkdir -p "$sb" && ln -s "$top/build/stock" "$sb/stock"
scripts/build-variant.sh "$broken" "$sb/$broken" &&
    sed -i 's/os_set_tcp_nodelay(err, c->socket->fd) != 0/0/' "$sb/$broken"/src/server-min/connection.c &&
    ! grep -q os_set_tcp_nodelay "$sb/$broken"/src/server-min/connection.c &&
    eval "$(make -s -n -W server-min/connection.c "build/$broken/server-min" | grep -F -- "-o build/$broken/server-min " |
            sed "s|build/$broken/|$sb/$broken/|g")"
if [[ -x $sb/$broken/server-min ]]; then
    test_ok "fault: $broken built with its fix a no-op"
else
    test_fail "fault: $broken built with its fix a no-op" "no binary: the checks below would test the real fix"
    exit 1
fi

KIT_SERVER_BUILD=$sb CAP_READY_TRIES=20 python3 repro/harness/matrix.py --rows "stock,$broken" --out "$tmp/m" \
    --fault-row tests/fault/no-listening-line.sh > "$tmp/out" 2>&1
rc=$?
sed -n '/^row /,$p' "$tmp/out"
if ((rc == 1)); then test_ok "fault: matrix exit status 1"; else fail=1; test_fail "fault: matrix exit status 1" "got $rc"; fi
[[ -f $tmp/m/matrix.json ]] || { test_fail "fault: matrix.json" "not written"; exit 1; }
python3 - "$tmp/m/matrix.json" <<'PY' || fail=1
import json, sys
rows = {r["row"]: r for r in json.load(open(sys.argv[1]))["rows"]}
fault = next(r for n, r in rows.items() if n.startswith("fault "))
failed = []
def line(name, ok, why=""):
    failed.extend([] if ok else [name])
    print(f"TEST: fault: {name} [{' OK ' if ok else 'FAIL'}]" + ("" if ok else f" {why}"))
bad = {k: v["state"] for k, v in fault["verdicts"].items()
       if v["state"] != "failed" or len(v["data"].get("errors", [])) != 2}
line("every measure of the broken row failed twice", not bad, f"not so: {bad}")
line("broken row not as expected", not fault["as_expected"], "counted as expected")
line("stock row as expected beside it", rows["stock"]["as_expected"] and rows["stock"]["criteria_met"],
     f"mismatches {rows['stock']['mismatches']}")
nop = rows["set-tcp-nodelay"]
got = {k: nop["verdicts"][k]["state"] for k in ("B3", "wire-lo", "wire-veth") if k in nop["verdicts"]}
line("set-tcp-nodelay as a no-op fails its row: B3 and the wires reproduced",
     not nop["criteria_met"] and not nop["as_expected"]
     and set(got.values()) == {"reproduced"} and len(got) == (3 if "wire-lo" in got else 1),
     f"criteria met {nop['criteria_met']}, as expected {nop['as_expected']}, {got}")
sys.exit(1 if failed else 0)
PY
# Issue 20's own case: under Wine the wire decides B3, and a B3 measure that
# failed must stay failed beside a wire verdict (matrix.wine_b3_from_wire).
python3 - <<'PY' || fail=1
import sys
sys.path.insert(0, "repro/harness")
import kit, matrix
got = {"B3": kit.Verdict(kit.MEASURE_FAILED, "the measure failed twice", {"errors": ["KitError: x"]}),
       "wire-lo": kit.Verdict("reproduced", "lo: 7 of 8 held-until-ACK")}
matrix.wine_b3_from_wire(got)
ok = got["B3"].state == kit.MEASURE_FAILED
print(f"TEST: fault: a failed B3 stays failed beside a wire verdict (win64) [{' OK ' if ok else 'FAIL'}]"
      + ("" if ok else f" became {got['B3'].state}: {got['B3'].figure}"))
sys.exit(0 if ok else 1)
PY
# REPORT.md's claims for the broken row, and the sweep's B3 points of it
# (loopback; the veth links and the real server add nothing to the proof).
report=$(python3 repro/report/report.py --check "$tmp/m/matrix.json" | grep "^TEST: report $broken \[")
if [[ $report == *"[FAIL]"*"B3: report says 'fixed'"* ]]; then
    test_ok "fault: report check fails $broken as a no-op"
else
    fail=1; test_fail "fault: report check fails $broken as a no-op" "got: ${report:-no line}"
fi
KIT_SERVER_BUILD=$sb python3 repro/harness/sweep.py --short --no-real --links lo --defects B3 \
    --out "$tmp/sweep" > "$tmp/sweep.out" 2>&1
sweep=$(grep "^TEST: sweep B3 model $broken lo " "$tmp/sweep.out")
if [[ $sweep == *"[FAIL]"* && $sweep != *"[ OK ]"* ]]; then
    test_ok "fault: sweep fails $broken as a no-op"
else
    fail=1; test_fail "fault: sweep fails $broken as a no-op" "got: ${sweep:-no line} (see below)"
    tail -20 "$tmp/sweep.out"
fi

# Figure lines (after the table) that carry an error without saying FAILED.
hidden=$(sed -n '/^Figures behind/,$p' "$tmp/out" \
         | grep -E 'Error|Traceback|exited [0-9]|no .listening' | grep -v '^  [^ ]* *FAILED ')
if [[ -z $hidden ]]; then
    test_ok "fault: no error printed as a figure"
else
    fail=1
    test_fail "fault: no error printed as a figure" "$(head -3 <<< "$hidden")"
fi
exit $fail
