#!/usr/bin/env bash
# tests/repeat.sh N [STEP...] - `make test-repeat N`: tests/run.sh N times on
# the current tree (or only the STEPs given), then one table: every check
# that failed in any run (its 'TEST: name [FAIL]' lines), and in how many.
# A check that fails in some runs and passes in others is a flake to find
# (issue 29), not a failure to retry: nothing here re-runs a failed check.
# Each run's whole output is kept in results/test-repeat/run-K.log.
# Exit status: 0 only if every run passed.
set -u
kit_name=repeat
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT
n=${1:-}
[[ $n =~ ^[1-9][0-9]*$ ]] || die "usage: tests/repeat.sh N [STEP...] (N runs, N >= 1)"
shift
# Every run measures: a passed run's matrix and clients are not reused.
export KIT_REMEASURE=1
logdir=$top/results/test-repeat
rm -rf "$logdir" && mkdir -p "$logdir"
bad_runs=0
for ((k = 1; k <= n; k++)); do
    t=$SECONDS
    tests/run.sh "$@" > "$logdir/run-$k.log" 2>&1
    rc=$?
    ((rc == 0)) || bad_runs=$((bad_runs + 1))
    echo "run $k of $n: exit $rc, $((SECONDS - t)) s, $(tail -1 "$logdir/run-$k.log")"
done
echo
echo "== checks that failed (of $n runs; logs in ${logdir#"$top"/}/)"
# A check's name is what precedes ' [FAIL]'; a check counts once per run.
for ((k = 1; k <= n; k++)); do
    sed -n 's/^TEST: \(.*\) \[FAIL\].*/\1/p' "$logdir/run-$k.log" | sort -u
done | sort | uniq -c | sort -k1,1nr -k2 |
    awk -v n="$n" 'BEGIN { printf "%-7s %s\n", "failed", "check" }
                   { c = $1; sub(/^ *[0-9]+ /, ""); printf "%3d/%-3d %s\n", c, n, $0; any = 1 }
                   END { if (!any) print "(none)" }'
echo "$bad_runs of $n runs failed"
((bad_runs == 0))
