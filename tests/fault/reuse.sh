#!/usr/bin/env bash
# tests/fault/reuse.sh - a reused run is the same run, and only a passed one
# with the same inputs is reused (repro/harness/reuse.py).
#
#   - the matrix (--rows stock) measured, then asked again with --reuse:
#     REUSED, the same table and figures, and its evidence copied;
#   - KIT_REMEASURE=1 measures again;
#   - a run that did not pass is never reused;
#   - one byte more in a program the run starts, one KIT_ variable, one
#     file of the kit: each is named as the change that makes it measure.
set -u
kit_name=reuse
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT
# What each run below reuses is the check's own to set: `make test-repeat`
# exports KIT_REMEASURE=1 (so that every run of the suite measures), under
# which every one of them measured and nine checks failed.
unset KIT_REMEASURE
tmp="" && kit_mktemp tmp
fail=0
check() {   # check NAME COND-EXIT WHY
    if [[ $2 == 0 ]]; then test_ok "reuse: $1"; else fail=1; test_fail "reuse: $1" "$3"; fi
}
m() { python3 repro/harness/matrix.py --rows stock --no-capture "$@"; }

m --out "$tmp/a" --reuse "$tmp/a" > "$tmp/a.out" 2>&1
rc=$?
grep -q '^matrix: measuring (no earlier run)' "$tmp/a.out" && ((rc == 0))
check "first run measures, and passes" $? "exit status $rc: $(tail -3 "$tmp/a.out")"
m --out "$tmp/b" --reuse "$tmp/a" > "$tmp/b.out" 2>&1
rc=$?
grep -q 'REUSED, not measured again' "$tmp/b.out"
check "same inputs: reused (exit $rc)" $? "$(tail -2 "$tmp/b.out")"
table() { sed -n '/^row /,/^1 rows as expected/p' "$1" | sed '$d'; }
[[ -n $(table "$tmp/a.out") ]] && diff <(table "$tmp/a.out") <(table "$tmp/b.out") > /dev/null
check "reused: the same table and figures" $? "$(diff <(table "$tmp/a.out") <(table "$tmp/b.out") | head -4)"
cmp -s "$tmp/a/matrix.json" "$tmp/b/matrix.json" && [[ -d $tmp/b/stock ]]
check "reused: matrix.json and the row's evidence copied" $? "$(ls "$tmp/b")"
KIT_REMEASURE=1 m --out "$tmp/c" --reuse "$tmp/a" > "$tmp/c.out" 2>&1
grep -q '^matrix: measuring (KIT_REMEASURE is set)' "$tmp/c.out"
check "KIT_REMEASURE=1 measures again" $? "$(grep -m1 'matrix:' "$tmp/c.out")"

# The refusals, on copies of the first run's record (nothing measured).
python3 - "$tmp" <<'PY' || fail=1
import json, os, shutil, sys
from pathlib import Path
sys.path.insert(0, "repro/harness")
import reuse
tmp = Path(sys.argv[1])
doc = json.loads((tmp / "a" / "matrix.json").read_text())
want = doc["inputs"]
bad = []
def line(name, ok, why):
    bad.extend([] if ok else [name])
    print(f"TEST: reuse: {name} [{' OK ' if ok else 'FAIL'}]" + ("" if ok else f" {why}"))
def refused(d, name, changed):
    got, _, why = reuse.passed_run([d], "matrix.json", want)
    line(name, got is None and changed in why, f"reused, or not for that reason: {why!r}")
(tmp / "failed").mkdir()
(tmp / "failed" / "matrix.json").write_text(json.dumps(dict(doc, passed=False)))
refused(tmp / "failed", "a run that did not pass is not reused", "did not pass")
# One change at a time against a record of the same inputs: the reason
# names that part, and only it.
exe = tmp / "server-min"
shutil.copy(doc["rows"][0]["binary"], exe)
def record(name):
    d = tmp / name
    d.mkdir()
    (d / "matrix.json").write_text(json.dumps(dict(doc, passed=True,
                                                   inputs=reuse.inputs([exe], {"rows": 1}))))
    return d
def only(d, name, part):
    got, _, why = reuse.passed_run([d], "matrix.json", reuse.inputs([exe], {"rows": 1}))
    line(name, got is None and why.endswith(f"changed: {part}"), f"reused, or not for that only: {why!r}")
d = record("same")
got, _, why = reuse.passed_run([d], "matrix.json", reuse.inputs([exe], {"rows": 1}))
line("the same inputs twice: reused", got is not None, why)
d = record("programs")
with open(exe, "ab") as f:
    f.write(b"\0")
only(d, "one byte more in a program: 'programs'", "programs")
d = record("settings")
os.environ["KIT_REUSE_PROBE"] = "1"
only(d, "a KIT_ variable: 'settings'", "settings")
del os.environ["KIT_REUSE_PROBE"]
d = record("kit")
new = Path("repro/harness/.reuse-probe.txt")   # new and not ignored: part of the kit
try:
    new.write_text("x")
    only(d, "a new file of the kit: 'kit'", "kit")
finally:
    new.unlink()
sys.exit(1 if bad else 0)
PY
exit $fail
