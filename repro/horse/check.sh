#!/usr/bin/env bash
# repro/horse/check.sh - the keep-alive check for Horse's CI
# (contrib/horse-ci/horse-keepalive.yml), and the same check on the kit's
# own Horse builds (make test, step horse).
#
# usage: repro/horse/check.sh SERVER...            each must pass
#        repro/horse/check.sh --expect-stall SERVER  must be judged stalled
#        repro/horse/check.sh --kit                the kit's proof (below)
#   SERVER  Horse's samples/lazarus/console as built (it listens on 9000):
#           a native program, or on Linux a win64 .exe, run under Wine
#           (repro/fpc/wine-server.sh, a copy of the kit's Wine prefix).
#
# The check (repro/horse/kaclient.py): 20 GET /ping on one kept-alive
# socket, reuse proven by the client; passes when no response body waits
# for the client's delayed ACK of its headers (median, over requests 2..20,
# of time-from-first-byte-to-last over time-to-first-byte: clean <= 1,
# stalled >= 4; never a millisecond bound).  It needs only python3 and the
# program, so it runs the same on Horse's ubuntu and windows runners and
# here (Linux natively, Windows through Wine).
#
# Where: on Linux as root every server runs in a network namespace of its
# own (ip netns add, lo up; removed by the trap), since the sample
# hard-codes port 9000; elsewhere (a CI runner) port 9000 must be free.
#
# --kit: Horse's sample built by repro/horse/build.sh from the Horse tree
# (HORSESRC or the snapshot) with each Horse set, Linux and win64:
#   stock (Horse ff41415)             stalled on both: the check sees #562
#   pr563-simulation (Horse 3.3.4)    clean on Linux, STALLED on win64: the
#                                     check catches the Windows regression
#   + pr566-simulation                clean on both
# The two are the kit's simulations of Horse PRs #563 and #566
# (repro/horse/sim/: merged upstream, re-expressed on the ff41415 snapshot),
# not patches for Horse.
# Exit: 0 as expected, 1 not, 4 skipped; one 'TEST: ...' line per server.
set -uo pipefail
kit_name=horse-check
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
PORT=9000

case $(uname -s) in MINGW*|MSYS*|CYGWIN*) windows=1 ;; *) windows=0 ;; esac
py=$(command -v python3 || command -v python) || { test_skip horse-check "no python3"; exit $KSFT_SKIP; }
ns="" prefix=""
# shellcheck disable=SC2317  # runs from the trap
on_exit() {
    kit_cleanup
    [[ -n $ns ]] && ip netns del "$ns" 2> /dev/null
}
trap on_exit EXIT
kit_mktemp tmp

in_ns() { if [[ -n $ns ]]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
# Only as 'exec_in_ns CMD &': $! is then CMD's PID.
exec_in_ns() { if [[ -n $ns ]]; then exec ip netns exec "$ns" "$@"; else exec "$@"; fi; }

setup_ns() {
    ((windows)) && return 0
    if [[ $(id -u) == 0 ]] && command -v ip > /dev/null; then
        ns=kithorse-check-$(rand_hex 4)
        { ip netns add "$ns" && ip -n "$ns" link set lo up; } || die "cannot create a network namespace"
    elif "$py" "$top/repro/horse/kaclient.py" --wait 127.0.0.1 $PORT 0.2; then
        test_skip horse-check "port $PORT is taken and this is not root (no namespace of its own)"
        exit $KSFT_SKIP
    fi
}

# wine_prefix: a copy of the kit's template (repro/wineprefix.py), once.
wine_prefix() {
    [[ -n $prefix ]] && return 0
    prefix=$tmp/wineprefix
    (cd "$top/repro" && "$py" -c 'import sys, wineprefix; from pathlib import Path
wineprefix.copy(Path(sys.argv[1]))' "$prefix") > "$tmp/prefix.log" 2>&1
}

# check NAME SERVER: runs the check; sets MSG; returns 0 clean, 1 not, 2 could not run.
check() {
    local name=$1 exe=$2 cmd pid rc d=$tmp/${1//[^A-Za-z0-9]/_}
    mkdir -p "$d"
    cmd=("$exe")
    if [[ $exe == *.exe && $windows == 0 ]]; then
        command -v wine > /dev/null || { MSG="no wine (Debian package wine64)"; return 3; }
        wine_prefix || { MSG="no Wine prefix: $(tail -1 "$tmp/prefix.log")"; return 2; }
        cmd=(env WINEPREFIX="$prefix" "$top/repro/fpc/wine-server.sh" "$exe")
    fi
    exec_in_ns "${cmd[@]}" > "$d/server.log" 2>&1 &
    pid=$!
    KIT_PIDS+=("$pid")
    if ! in_ns "$py" "$top/repro/horse/kaclient.py" --wait 127.0.0.1 $PORT 120; then
        MSG="the server did not listen on $PORT (log: $(tail -1 "$d/server.log"))"
        stop_pid "$pid"; return 2
    fi
    MSG=$(in_ns "$py" "$top/repro/horse/kaclient.py" 127.0.0.1 $PORT --json "$d/check.json")
    rc=$?
    if [[ $MSG == inconclusive:* ]]; then
        # Between the bounds (a loaded machine, Wine): once more, on a new
        # connection; the second run decides, and the figure says so.
        local first=$MSG
        MSG=$(in_ns "$py" "$top/repro/horse/kaclient.py" 127.0.0.1 $PORT --json "$d/check-again.json")
        rc=$?
        MSG+=" (second run; the first: $first)"
    fi
    stop_pid "$pid"
    return $rc
}

# expect NAME SERVER clean|stalled: one TEST line.
failed=0
expect() {
    local name=$1 exe=$2 want=$3 rc
    [[ -f $exe ]] || { test_fail "horse-check $name" "no program $exe"; failed=1; return; }
    check "$name" "$exe"; rc=$?
    case $rc:$want in
    0:clean)   test_ok "horse-check $name" "$MSG" ;;
    1:stalled) if [[ $MSG == stalled:* ]]; then test_ok "horse-check $name" "fails, as it must: $MSG"
               else test_fail "horse-check $name" "expected stalled: $MSG"; failed=1; fi ;;
    3:*)       test_skip "horse-check $name" "$MSG" ;;
    *)         test_fail "horse-check $name" "expected $want: $MSG"; failed=1 ;;
    esac
}

# workflow: the scripts contrib/horse-ci/horse-keepalive.yml runs are the
# kit's, with the options used here (its builds are --kit's stock ones).
check_workflow() {
    local wf=$top/contrib/horse-ci/horse-keepalive.yml f bad=()
    [[ -f $wf ]] || { test_fail "horse-check workflow" "no $wf"; failed=1; return; }
    for f in $(grep -o 'kit/[A-Za-z0-9_./-]*\.sh' "$wf" | sort -u); do
        [[ -x $top/${f#kit/} ]] || bad+=("$f is not in the kit")
    done
    grep -q 'repro/horse/build.sh --tc trunk --program console' "$wf" || bad+=("no Linux build of the sample")
    grep -q 'repro/horse/build.sh --tc win64 --program console' "$wf" || bad+=("no win64 build of the sample")
    grep -q 'runs-on: windows-latest' "$wf" || bad+=("no Windows job")
    # Well-formed, with the two jobs (where PyYAML is there to read it).
    if "$py" -c 'import yaml' 2> /dev/null; then
        "$py" -c 'import sys, yaml; j = yaml.safe_load(open(sys.argv[1]))["jobs"]
sys.exit(0 if {"linux", "windows"} <= set(j) and j["windows"].get("needs") == "linux" else 1)' "$wf" \
            || bad+=("not YAML with jobs linux and windows (windows needs linux)")
    fi
    if ((${#bad[@]})); then test_fail "horse-check workflow" "${bad[*]}"; failed=1
    else test_ok "horse-check workflow" "$(grep -c 'kit/' "$wf") kit references, Linux and Windows jobs"; fi
}

kit_proof() {
    local b=$top/build/horse hs
    check_workflow
    hs=$(cd "$top/repro/horse" && "$py" -c 'import rows; print(" ".join(h for h, _, _, p in rows.horse_variants() if p.mitigates == "B3"))')
    local sets
    read -ra sets <<< "$hs"
    ((${#sets[@]} == 2)) || die "expected two TCP_NODELAY Horse sets (unix-only, every platform), got: $hs"
    local unix=${sets[0]} every=${sets[1]}
    expect "linux stock (Horse ff41415)" "$b/trunk/stock/stock/console/Console" stalled
    expect "linux horse:${unix##*+}" "$b/trunk/stock/$unix/console/Console" clean
    expect "linux horse:${every##*+}" "$b/trunk/stock/$every/console/Console" clean
    expect "win64 stock (Horse ff41415)" "$b/win64/stock/stock/console/Console.exe" stalled
    expect "win64 horse:${unix##*+} (Horse 3.3.4's Unix-only guard)" "$b/win64/stock/$unix/console/Console.exe" stalled
    expect "win64 horse:${every##*+}" "$b/win64/stock/$every/console/Console.exe" clean
}

(($#)) || die "usage: check.sh SERVER... | --expect-stall SERVER | --kit"
setup_ns
case $1 in
--kit) kit_proof ;;
--expect-stall) expect "$(basename "$2") (must stall)" "$2" stalled ;;
*) for s in "$@"; do expect "$(basename "$s")" "$s" clean; done ;;
esac
exit $((failed ? KSFT_FAIL : KSFT_PASS))
