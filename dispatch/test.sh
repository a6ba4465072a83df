#!/bin/bash
# dispatch/test.sh - the short dispatch check for `make test` (well under a
# minute on 2 cores): the epoll provider model's three --dispatch modes
# measured side by side with shorter runs (dispatch/bench.py --quick), the
# expected shapes judged by count and same-run ratio (dispatch/shapes.py),
# the pools' CUnit tests (ASan+UBSan and TSan builds), and the TSan and
# ASan+UBSan builds of the model driven through short runs, logs checked.
# Exit 0 pass, 1 fail, 4 skip.
kit_name=dispatch
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
source scripts/lib.sh
trap kit_cleanup EXIT

require_command wrk wrk "dispatch"
require_command /usr/bin/python3 python3 "dispatch"

# Up to date in a second when `make` has run; builds what is missing.
if ! make -s --no-print-directory dispatch build/probe >/dev/null; then
    test_fail "dispatch build" "make dispatch failed"
    exit $KSFT_FAIL
fi

kit_mktemp tmp
fails=0 oks=0 skips=0
count() {   # tally TEST lines read on stdin, echoing them
    local line
    while IFS= read -r line; do
        echo "$line"
        case $line in
            *"[ OK ]"*) echo ok >>"$tmp/tally" ;;
            *"[FAIL]"*) echo fail >>"$tmp/tally" ;;
            *"[SKIP]"*) echo skip >>"$tmp/tally" ;;
        esac
    done
}
: >"$tmp/tally"

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:exitcode=66

# 1. CUnit: queue full, drain, global-pool growth (ASan+UBSan, then TSan).
for u in unit unit-tsan; do
    build/dispatch/$u $u > "$tmp/$u.out" 2>&1; rc=$?
    count < <(grep '^TEST:' "$tmp/$u.out")
    if [ $rc -ne 0 ] && ! grep -q '\[FAIL\]' "$tmp/$u.out"; then
        test_fail "dispatch $u" "exit $rc: $(tail -n 3 "$tmp/$u.out" | tr '\n' ' ')" | count
    fi
done

# 2. The shapes, from a short side-by-side run of the -O2 model.
if /usr/bin/python3 dispatch/bench.py --quick --out "$tmp/bench" > "$tmp/bench.out" 2>&1; then
    /usr/bin/python3 dispatch/shapes.py --short "$tmp/bench/bench.json" | count
else
    test_fail "dispatch bench" "bench.py failed: $(tail -n 3 "$tmp/bench.out" | tr '\n' ' ')" | count
fi

# 3. The sanitizer builds of the model, TSan and
#    ASan + UBSan, each through a smoke run (no head-of-line phase).  No report,
#    clean exits, and the structural checks (pipelining, queue full, drain)
#    still hold.
sanitized() {   # NAME BINARY MODE PATTERN
    local name=$1 bin=$2 mode=$3 pat=$4 reports exits
    if ! /usr/bin/python3 dispatch/bench.py "$mode" --binary "$bin" \
            --out "$tmp/$name" > "$tmp/$name.out" 2>&1; then
        test_fail "dispatch $name-model" "bench.py failed: $(tail -n 3 "$tmp/$name.out" | tr '\n' ' ')" | count
        return
    fi
    reports=$(cat "$tmp/$name"/logs/*.log | grep -cE "$pat")
    exits=$(/usr/bin/python3 - "$tmp/$name/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
codes = [x.get("exit_code") for x in r["rows"]]
codes += [r["bounded_queue_full"]["exit_code"], r["bounded_drain"]["exit_code"]]
print(" ".join(str(c) for c in codes))
PY
)
    if [ "$reports" -eq 0 ] && [ -z "$(echo "$exits" | tr -d ' 0')" ]; then
        test_ok "dispatch $name-model" "0 sanitizer reports, exit codes: $exits" | count
    else
        mkdir -p "$TOP/results" && rm -rf "$TOP/results/dispatch-$name-logs" &&
            cp -r "$tmp/$name/logs" "$TOP/results/dispatch-$name-logs"
        test_fail "dispatch $name-model" "$reports sanitizer report(s), exit codes: $exits (logs: results/dispatch-$name-logs)" | count
    fi
    /usr/bin/python3 dispatch/shapes.py "$tmp/$name/bench.json" |
        grep -E 'dispatch (pipelining|queue-full|drain) ' |
        sed "s/^TEST: dispatch /TEST: dispatch $name-/" | count
}
sanitized tsan build/dispatch/tsan/dispatch --smoke 'WARNING: ThreadSanitizer'
sanitized asan build/dispatch/asan/dispatch --smoke 'ERROR: (Address|Leak)Sanitizer|runtime error'

fails=$(grep -c fail "$tmp/tally"); oks=$(grep -c ok "$tmp/tally"); skips=$(grep -c skip "$tmp/tally")
[ "$fails" -gt 0 ] && exit $KSFT_FAIL
[ "$oks" -eq 0 ] && [ "$skips" -gt 0 ] && exit $KSFT_SKIP
exit $KSFT_PASS
