#!/usr/bin/env bash
# tests/run.sh [STEP...] - `make test`: the whole regression suite.
#
# Steps, each printing kselftest-style 'TEST: name [ OK ]' / '[FAIL]' /
# '[SKIP]' lines (a step exits 0 pass, 1 fail, 4 skip):
#   patches       C series: each patch applies alone and in order, DEP-3 form
#   fpc-patches   Pascal series (patches/fpc): git am form, a contributor's
#                 message (subject <= 72, no DEP-3 field), git am of the
#                 stacked series, each single-fix set as build.sh applies it
#                 equals git cherry-pick, compiles without new warnings, and
#                 is what scripts/fpc-series.sh makes; the filing (make
#                 upstream): each report git am alone on pristine and
#                 compiles, all in order, every commit by the filer, texts
#                 within their lengths, a placeholder identity refused
#   fpcunit       the fpcunit tests (repro/fpc/fpcunit): every defect's test
#                 fails on stock and passes on all, Linux and win64 under Wine
#   unit          CUnit suites of every server-min module, built against every
#                 variant (plain), and stock/all under ASan+UBSan and TSan;
#                 the shared objects they are built from (tests/unit/cc-objects.sh);
#                 recipes start python3 itself, not a shim (tests/unit/make-python.sh)
#   analysers     capture analysers on the committed reference captures;
#                 common/ and the probe's command line and JSON (CUnit)
#   integration   scenarios the matrix does not cover (connection IDs,
#                 controls, hook refusal, 503 order, syscall fidelity, SIGPIPE)
#   asan, tsan    stock and all under ASan+UBSan / TSan: unit and
#                 integration scenarios, one pass per sanitizer
#   asan-hostile, tsan-hostile  the hostile corpus on the same builds
#   valgrind      stock under valgrind (integration subset, hostile subset)
#   matrix        `make repro`'s matrix: clone rows, real-trunk rows (clone
#                 vs real must agree), FPC 3.2.2, win64 under Wine; make
#                 repro's own run when it passed with the same inputs
#                 (repro/harness/reuse.py; KIT_REMEASURE=1 measures again)
#   clients       curl, Node http.Agent, urllib3 and wrk against the variants
#                 (make repro's run reused as the matrix's is)
#   hostile       bad input, scale, framing and faults against every variant
#   conformance   RFC 9110 / 9112 connection management and framing, one case
#                 per requirement (tests/hostile/conformance.c): model and real
#                 trunk, stock and all, outcome as measured, model = real, a
#                 case all claims conforms; a wrong expectation must fail
#   fuzz          a brief libFuzzer run over the request reader and analysers
#   dispatch      the dispatch models' shapes (dispatch/test.sh)
#   win64         the TCP_NODELAY platform check (repro/fpc/win64-check.sh)
#   horse         patches/horse (scripts/check-horse-patches.sh: each patch
#                 alone on ff41415 and on Horse's master as reconstructed,
#                 with its test and CI steps) and the keep-alive check
#                 (repro/horse/check.sh --kit): Horse's own sample, Linux and
#                 win64 under Wine, stalls on the snapshot and on the kit's
#                 simulation of PR #563 on Windows, is clean with #566's; a
#                 change to Horse and to an fcl-web patch each reaches the
#                 program, FPC's units not compiled again
#                 (repro/horse/rebuild-check.sh)
#   horse-ci      the CI steps patches/horse adds to Horse's tests.yml
#                 (repro/horse/ci-job.sh): run on the Horse snapshot with the
#                 #563/#566 simulations and the patches, they pass; on its own
#                 src/, they fail (in the test steps)
#   report        REPORT.md's generated claims against this run's matrix
#   texts         every block the texts print (REPORT.md, report/, report/
#                 evidence/): Pascal = the reproducer the min step runs,
#                 commands = its header lines, none cut short; lengths
#   fresh         `make repro` in a fresh clone with the test-only packages
#                 hidden (then the optional ones too): passes, and the rows
#                 that need a hidden package skip with the reason (tests/fresh)
#   fault         a broken server as a matrix row: its measures fail, twice,
#                 and fail the row and the run; no error shows as a figure;
#                 set-tcp-nodelay made a no-op fails its matrix row, the
#                 report check and the sweep (the checks keep their power);
#                 a passed run with the same inputs is reused, with the same
#                 table, and any change of input measures
#                 (tests/fault/reuse.sh); scripts/veth-pair.sh never hands
#                 out a subnet another interface holds (tests/fault/veth-pair.sh)
#   sweep         B3 across body sizes (Content, ContentStream) on loopback
#                 and two veth MTUs, B2 across pipeline depths, B5 across
#                 POST sizes: every fix holds at every point, clone = real
#   hazards       what a fix may break (repro/harness/hazards.py): fairness of K
#                 keep-alive clients over fewer pool workers, threads and
#                 descriptors back after the clients leave, no connection on
#                 two threads, answers in order and each its own request's,
#                 the application's own headers kept; the mix users send
#                 (a fast client beside slow routes, back to back and paced,
#                 and with every worker busy) for every upstream report's
#                 fixes alone in tmThread, tmThreadPool and tmPolled; model
#                 and real trunk, stock, the fixes concerned and all, and
#                 fixtures that must fail
#   check         `make check FIX=buffer-aware-pending` passes (B2 REPRO on
#                 stock, fixed with the fix), an unknown name is refused
#                 before any build, a fix that changes nothing fails
#                 (tests/check/run.sh)
#   bisect        repro/bisect/results.json well formed, an entry per symptom
#                 of B8 (first, next) and the check fails on a bent one; B1's
#                 bisect re-run end to end over the history bundle, same
#                 answer as the file
#   min           the minimal Pascal reproducers (repro/fpc/min/bN.lpr): each
#                 shows its defect on stock with its header's command, not
#                 with its fix; FPC 3.2.2 where the kit's 3.2.2 row decides;
#                 a command that runs nc or curl with every variant found
#                 (MIN_CURLS adds curls); the text prints the command whole
#   findings      repro/fpc/FINDINGS-3.2.2.md's command (build.sh &&
#                 investigate.sh) as printed, and the table's answers on its
#                 output: no keep-alive, POST+GET never answered, ...
# Steps that wait rather than compute run concurrently (KIT_STEPS at once,
# default 4, and KIT_WAIT_STEPS more, default 2, of the steps that mostly
# wait; beside the matrix only those that measure no time); each
# step's output is printed whole when it ends, with a progress line every
# 20 s.  Ends with 'N passed, N failed, N skipped'.
# Exit status: 0 only if nothing failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT
logdir=$top/results/test-logs
mkdir -p "$logdir" && rm -f "$logdir/failed.txt"
passed=0 failed=0 skipped=0
failures=() crashed=()
t0=$(date +%s)

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

# The C series: each patch alone on a pristine tree, the series in order,
# and the header form repro/harness/patchset.py and upstream expect.
step_patches() {
    local tmp p f ok
    kit_mktemp tmp
    for p in $(python3 repro/harness/patchset.py names); do
        rm -rf "$tmp/alone" && mkdir -p "$tmp/alone" && cp -r server-min "$tmp/alone/"
        if patch -d "$tmp/alone" -p1 -s --dry-run < "patches/$p.patch" > /dev/null 2>&1; then
            test_ok "patch $p applies alone"
        else
            test_fail "patch $p applies alone"
        fi
        ok=1
        for f in Description Author Defect Upstream-Routine Forwarded Last-Update; do
            grep -q "^$f: ." "patches/$p.patch" || { ok=0; test_fail "patch $p header $f" "missing"; }
        done
        grep -q '^Author: .*<[^@ ]*@[^> ]*>' "patches/$p.patch" || { ok=0; test_fail "patch $p Author" "no e-mail address"; }
        grep -q '^Forwarded: \(no\|https\?://\)' "patches/$p.patch" || { ok=0; test_fail "patch $p Forwarded" "neither 'no' nor a URL"; }
        if grep -q '^Bug: ' "patches/$p.patch" && ! grep -q '^Bug: https\?://[^ ]*$' "patches/$p.patch"; then
            ok=0; test_fail "patch $p Bug" "not a URL"
        fi
        ((ok)) && test_ok "patch $p DEP-3 header"
    done
    rm -rf "$tmp/series" && mkdir -p "$tmp/series" && cp -r server-min "$tmp/series/"
    ok=1
    for p in $(python3 repro/harness/patchset.py names); do
        patch -d "$tmp/series" -p1 -s --no-backup-if-mismatch < "patches/$p.patch" > /dev/null 2>&1 || ok=0
    done
    if ((ok)); then test_ok "patch series applies in order"; else test_fail "patch series applies in order"; fi
    rm -rf -- "$tmp"
}

step_fpc_patches() {
    if [[ ! -x scripts/check-fpc-patches.sh ]]; then
        test_skip "fpc-patches" "no scripts/check-fpc-patches.sh"; return 4
    fi
    nice -n 10 scripts/check-fpc-patches.sh   # compiles, beside the matrix
}

step_fpcunit() { repro/fpc/fpcunit/run.sh; }

# Each variant's binary mostly waits (time-outs of the pool and server
# tests: 2.2 s wall for 0.1 s of CPU), so eight at a time; their outputs
# in the variants' order.
step_unit() {
    local v tmp n=0 variants
    kit_mktemp tmp
    read -ra variants <<< "$(python3 repro/harness/patchset.py variants | tr '\n' ' ')"
    for v in "${variants[@]}"; do
        ((n++ >= 8)) && wait -n
        cunit "unit/$v" "build/tests/$v/unit" > "$tmp/$v.out" &
    done
    wait
    for v in "${variants[@]}"; do cat "$tmp/$v.out"; done
    rm -rf -- "$tmp"
    tests/unit/cc-objects.sh   # the objects these binaries share
    tests/unit/make-python.sh  # recipes start python3 without a shim
}

step_analysers() {
    cunit "common" build/test-common
    cunit "probe" build/test-probe
    cunit "capture-parsers" build/test-capture-parsers
    captures/tests/test_analysers.sh
}

step_integration() {
    python3 tests/integration/test_server.py --not-matrix
}

# One pass per sanitizer over the same scenarios: unit and integration for
# stock and all (the hook tests also use forward-allow-connect).  Niced, as
# they run beside the matrix: its timing verdicts get the CPU first.  The
# hostile corpus is a step of its own (asan-hostile, tsan-hostile) that
# starts once the matrix has ended, as every step that measures time.  (Its drip case was
# cut in three clean-clone CI runs, beside the matrix and after it: the
# client's pace was scaled by --slow and the server's read time-out was
# not, a gap of half the time-out under TSan; tests/hostile/server.c now
# scales both.)
sanitizer_pass() {
    local s=$1 v rc=0
    for v in stock all; do cunit "unit-$s/$v" "build/tests-$s/$v/unit"; done
    # Each scenario in a process of its own: they wait on their servers
    # (TSan: 68 s one after the other, 38 s side by side).
    KIT_SERVER_BUILD=build-$s nice -n 10 python3 tests/integration/test_server.py --quick --jobs 6 || rc=1
    return $rc
}
step_asan() { sanitizer_pass asan; }
step_tsan() { sanitizer_pass tsan; }
step_asan_hostile() { nice -n 10 tests/hostile/run.sh --asan stock all; }
step_tsan_hostile() { nice -n 10 tests/hostile/run.sh --tsan stock all; }
step_valgrind() {
    local rc=0
    KIT_SERVER_WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" \
        nice -n 10 python3 tests/integration/test_server.py seq_one refusing 503 sigpipe || rc=1
    nice -n 10 tests/hostile/run.sh --valgrind stock
    case $? in 0|4) ;; *) rc=1 ;; esac
    return $rc
}

step_matrix() {
    local out=results/test-matrix rc
    # `make repro`'s run when it passed with the same inputs (reuse.py).
    python3 repro/harness/matrix.py --out "$out" --reuse results/latest --reuse "$out"
    rc=$?
    python3 - "$out/matrix.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["rows"]:
    ok = r["as_expected"] and r["criteria_met"]
    bad = [f"{k}={r['verdicts'][k]['state']}" for k in r["mismatches"]]
    print(f"TEST: matrix {r['row']} [{' OK ' if ok else 'FAIL'}]"
          + ("" if ok else f" {r['criteria']} {bad}"))
    if r.get("counterpart"):
        d = r["differs_from_clone"]
        print(f"TEST: matrix clone-vs-real {r['counterpart']} [{'FAIL' if d else ' OK '}]"
              + (f" differs on {', '.join(d)}" if d else ""))
PY
    return $rc
}

# Clone and real trunk side by side.  A variant's cases mostly wait (about
# 30 s each, 2 s of CPU): ten variants at a time, where the run's default
# is six (alone, c30's build: 231 s with 6, 126 s with 12, the same
# outcomes).
step_hostile() { tests/hostile/run.sh --both --jobs 10; }
step_conformance() { tests/hostile/conformance.sh; }

# Brief: the reader targets on stock (request, response, pcap, strace) and
# the request reader on all; `make fuzz-long` runs 10 million inputs each.
step_fuzz() {
    local rc=0
    tests/fuzz/run.sh "${FUZZ_SECONDS:-8}" stock || rc=$?
    tests/fuzz/run.sh "${FUZZ_SECONDS:-8}" all || { [[ $? == 4 ]] || rc=1; }
    [[ $rc == 4 ]] && rc=0
    return $rc
}
step_clients() {
    python3 repro/harness/clients.py --out results/test-matrix/clients \
        --reuse results/latest/clients --reuse results/test-matrix/clients
}
step_dispatch() {
    [[ -x dispatch/test.sh ]] || { test_skip dispatch "no dispatch/test.sh"; return 4; }
    dispatch/test.sh
}
step_horse() {
    [[ -x repro/horse/check.sh ]] || { test_skip horse "no repro/horse/check.sh"; return 4; }
    local rc=0
    scripts/check-horse-patches.sh || rc=$?
    repro/horse/check.sh --kit || { [[ $? == 4 ]] || rc=1; }
    repro/horse/rebuild-check.sh || { [[ $? == 4 ]] || rc=1; }
    [[ $rc == 4 ]] && rc=0
    return $rc
}
step_horse_ci() {
    [[ -x repro/horse/ci-job.sh ]] || { test_skip horse-ci "no repro/horse/ci-job.sh"; return 4; }
    # Mostly a compiler cycle (the job's own trunk build, cold in a fresh
    # clone): below the steps that measure.
    local rc=0
    nice -n 5 repro/horse/ci-job.sh || rc=$?
    # The job's toolchain is a full `make cycle`: the kit's one-stage
    # toolchain must compile the same bytes (its cache is there now).
    nice -n 5 scripts/check-fpc-bootstrap.sh || { [[ $? == 4 && $rc != 0 ]] || rc=1; }
    return $rc
}
step_win64() {
    [[ -x repro/fpc/win64-check.sh ]] || { test_skip win64 "no repro/fpc/win64-check.sh"; return 4; }
    repro/fpc/win64-check.sh
}
step_report() { python3 repro/report/report.py --check results/test-matrix/matrix.json; }
step_texts() {   # every printed command is one the min step runs; no file shadows a module
    local rc=0
    python3 tests/texts/check.py || rc=1
    python3 tests/texts/module_names.py || rc=1
    return $rc
}
step_min() { repro/fpc/min/check.sh; }   # the tracker's Pascal reproducers
step_findings() { python3 tests/findings/check.py; }   # what FPC 3.2.2 does
step_fresh() { tests/fresh/run.sh; }      # the main job needs only what it installs
step_fault() {   # a failed measure fails its row; only a passed run is reused
    local rc=0
    tests/fault/run.sh || rc=1
    tests/fault/reuse.sh || rc=1
    tests/fault/veth-pair.sh || { [[ $? == 4 ]] || rc=1; }
    return $rc
}
# B3 across body sizes and links, B2 across depths, B5 across body sizes
# (the boundary points; `make sweep` runs them all).
step_sweep() { python3 repro/harness/sweep.py --short --out results/test-sweep; }
step_hazards() { python3 repro/harness/hazards.py --short; }
step_check() { tests/check/run.sh; }   # make check, the maintainer's loop
# B1: its verdict is a hook count on one short probe run (no deadline to
# wait out at a bad commit), so its whole bisect is the fastest; builds are
# cached per tree in build/bisect/builds/.
step_bisect() {
    local rc=0
    python3 repro/bisect/introduced.py --check repro/bisect/results.json || rc=1
    # The check's power: a B8 without its 'next' entry, and one whose 'next'
    # names no parent verdict, must each fail it.
    python3 - <<'PY' || rc=1
import json, subprocess, sys, tempfile
d = json.load(open("repro/bisect/results.json"))
tmp = tempfile.TemporaryDirectory()
cases = {"no-next": lambda e: e["symptoms"].pop("next"),
         "next-without-parent-verdicts": lambda e: e["symptoms"]["next"]["verification"].update(parents=[])}
for name, bend in cases.items():
    x = json.loads(json.dumps(d))
    bend(x["B8"])
    f = f"{tmp.name}/{name}.json"
    json.dump(x, open(f, "w"))
    r = subprocess.run([sys.executable, "repro/bisect/introduced.py", "--check", f], capture_output=True, text=True)
    ok = r.returncode == 1 and "[FAIL]" in r.stdout
    print(f"TEST: bisect check fails on a B8 {name} " + ("[ OK ]" if ok else f"[FAIL] exit {r.returncode}"))
    if not ok:
        sys.exit(1)
PY
    # Compiles and counts, beside the matrix: niced.
    nice -n 10 python3 repro/bisect/introduced.py B1 --expect repro/bisect/results.json
    case $? in 0) ;; 4) ((rc)) || rc=4 ;; *) rc=1 ;; esac
    return $rc
}

# count NAME RC: add a finished step's TEST lines to the totals.
count() {
    local name=$1 rc=$2 log=$logdir/$1.log ok bad sk
    ok=$(grep -c '^TEST: .*\[ OK \]' "$log")
    bad=$(grep -c '^TEST: .*\[FAIL\]' "$log")
    sk=$(grep -c '^TEST: .*\[SKIP\]' "$log")
    passed=$((passed + ok)) failed=$((failed + bad)) skipped=$((skipped + sk))
    if ((bad > 0)); then
        failures+=("$name: $bad failed (see $log)")
    elif ((rc != 0 && rc != 4)); then
        failed=$((failed + 1))
        failures+=("$name: exited $rc without a FAIL line (see $log)")
        crashed+=("$name")
        echo "TEST: $name [FAIL] exited $rc"
    elif ((ok == 0 && sk == 0)); then
        failed=$((failed + 1))
        failures+=("$name: ran no test")
        echo "TEST: $name [FAIL] ran no test"
    fi
}

# Steps in the order they start, each as soon as a slot is free and, if it
# measures time, the matrix has ended.  The matrix first of all, and beside it only
# steps that measure no time (compiles, niced sanitizer passes, CUnit,
# file checks) and horse-ci, niced: every other step waits for the matrix
# to end (ready, below), so that the matrix's timing verdicts meet the load they
# always met.  Then longest first (c30, a clean clone's CI-like run:
# horse-ci ~300 s, hostile ~250 s, fpcunit ~190 s, hazards ~155 s), so
# that no long step starts last and runs alone at the end.
steps=(matrix horse-ci tsan asan bisect fpc-patches unit analysers patches texts
       hostile fpcunit hazards fresh valgrind min tsan-hostile fuzz win64 fault sweep horse clients
       asan-hostile dispatch conformance integration findings report check)
beside_matrix=" horse-ci tsan asan bisect fpc-patches unit analysers patches texts "
# Steps whose CPU is a fifth of their time or less (c57f, a fresh machine's
# make test: tsan-hostile 75 s, CPU 8 s; asan 42, 5; asan-hostile 34, 5;
# win64 36, 3; valgrind 56, 14; tsan 63, 14; bisect 134, 30, niced) have
# KIT_WAIT_STEPS slots of their own beside the KIT_STEPS: with 4 slots for
# every step the suite was bound by its slots, not its CPU (378 s, of which
# horse-ci 248, while its steps used 510 CPU-s of the 756 two cores had).
waiting=" tsan-hostile asan asan-hostile win64 valgrind tsan bisect "
for s in "$@"; do   # a step's name mistyped: say so, run nothing
    [[ " ${steps[*]} " == *" $s "* ]] || die "no step '$s' (the steps: ${steps[*]})"
done
((${#@})) && steps=("$@")
declare -A pid_of=() start_of=() took=() cpu=()
jobs_max=${KIT_STEPS:-4}
wait_max=${KIT_WAIT_STEPS:-2}

finish() {   # finish NAME: print its log, count it
    local name=$1 rc
    wait "${pid_of[$name]}"; rc=$?
    unset "pid_of[$name]"
    took[$name]=$(( $(date +%s) - start_of[$name] ))
    cpu[$name]=$(awk '$1 == "step-cpu" { printf "%d", $2 + $3 }' "$logdir/$name.log")
    echo "== $name (exit $rc, ${took[$name]} s, $(( $(date +%s) - t0 )) s into the suite)"
    grep -v '^step-cpu ' "$logdir/$name.log"
    count "$name" "$rc"
}

collect() {  # collect: finish every step that has ended
    local n
    for n in "${!pid_of[@]}"; do
        kill -0 "${pid_of[$n]}" 2>/dev/null || finish "$n"
    done
}

has_slot() { # has_slot NAME: a slot is free for NAME (waiting steps
             # beyond their own slots hold general ones; none of their
             # own while the matrix runs: it meets the load it always met)
    local n ng=0 nw=0 wait_max=$wait_max
    [[ -n ${pid_of[matrix]:-} ]] && wait_max=0
    for n in "${!pid_of[@]}"; do
        if [[ $waiting == *" $n "* ]]; then nw=$((nw + 1)); else ng=$((ng + 1)); fi
    done
    if [[ $waiting == *" $1 "* ]]; then
        ((ng + nw < jobs_max + wait_max))
    else
        ((ng + (nw > wait_max ? nw - wait_max : 0) < jobs_max))
    fi
}

last_line=$SECONDS
pause() {    # pause: a moment, and a progress line every 20 s
    if ((SECONDS - last_line >= 20)); then
        echo "   ... $(( $(date +%s) - t0 )) s: running ${!pid_of[*]}"
        last_line=$SECONDS
    fi
    sleep 0.2
}

# ready NAME: NAME may start: it is a step the matrix may run beside, or the
# matrix is not in this run, or it has ended.
ready() {
    [[ $beside_matrix == *" $1 "* || $1 == matrix || " ${steps[*]} " != *" matrix "* ||
       -n ${took[matrix]:-} ]]
}

launch() {
    local s=$1
    echo "-- start $s ($(( $(date +%s) - t0 )) s into the suite)"
    start_of[$s]=$(date +%s)
    # bash's time: the step's CPU seconds (its children's included), the
    # log's last line, for the table at the end.
    ( TIMEFORMAT='step-cpu %U %S'; time "step_${s//-/_}" ) > "$logdir/$s.log" 2>&1 &
    pid_of[$s]=$!
}

queue=("${steps[@]}")
while ((${#queue[@]})); do
    collect
    next=-1
    for i in "${!queue[@]}"; do
        if ready "${queue[$i]}" && has_slot "${queue[$i]}"; then next=$i; break; fi
    done
    # None may start (no slot, or each waits for the matrix): until a
    # running step ends.
    if ((next < 0)); then pause; continue; fi
    launch "${queue[$next]}"
    unset "queue[$next]"
    queue=("${queue[@]}")
done
while ((${#pid_of[@]})); do collect; ((${#pid_of[@]})) && pause; done

echo
echo "== summary ($(( $(date +%s) - t0 )) s)"
# failed_checks: what failed, each check whole; also kept in
# $logdir/failed.txt, which `make test` prints again after its phase table:
# CI keeps only an excerpt of the output, the first FAIL line and the tail.
failed_checks() {
    for f in "${failures[@]}"; do echo "FAILED: $f"; done
    # The failed checks themselves, each whole.
    for name in "${steps[@]}"; do
        grep -h '^TEST: .*\[FAIL\]' "$logdir/$name.log" 2>/dev/null | cut -c1-600 | sed "s/^/  $name: /"
    done
    # A step that stopped without saying which check: the end of its log
    # (a traceback, a die line).
    for name in "${crashed[@]}"; do
        echo "  $name: the end of its log:"
        grep -v '^step-cpu ' "$logdir/$name.log" | tail -n 12 | cut -c1-300 | sed "s/^/  $name| /"
    done
}
failed_checks > "$logdir/failed.txt"
cat "$logdir/failed.txt"
# Where the suite's time went: each step's own seconds (KIT_STEPS ran at
# once, so they add up to more than the wall time).
echo "steps, longest first ($jobs_max at once at most, and $wait_max more of those that mostly wait; CPU: user + system, children included):"
for name in "${!took[@]}"; do echo "${took[$name]} ${cpu[$name]:-0} $name"; done | sort -rn |
    awk '{ printf "  %-14s %5d s  CPU %5d s\n", $3, $1, $2 }'
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
