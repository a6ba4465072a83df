#!/usr/bin/env bash
# scripts/repro.sh - `make repro`: the builds (scripts/builds.sh), then the
# matrix on stdout and the real clients side by side with it (their table
# printed when the matrix is done).  Each is a phase of the table
# (scripts/phase.sh): the matrix with its progress, the clients' time
# recorded when they end.
#
# When no passed matrix run is on record (a first run, or one after a red
# one), nothing can be reused and the matrix measures: the Horse builds,
# the longest of the builds, then run beside it, and each Horse row starts
# as its program is built (matrix.py --beside-builds), the Wine ones first.
# Otherwise every build goes first, as the digest of a reusable run needs
# every program (repro/harness/reuse.py).
# --no-builds: the caller built what its rows need (tests/fresh/run.sh runs
# the recipe step by step, for a few rows).
# Exit 1 if a build stopped the run or a verdict was not the one expected.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
mkdir -p results/latest
builds=(scripts/builds.sh)   # MAKE and NPROC from the environment (the Makefile)
clients="" horse="" beside=""
cleanup() {
    [[ -n $clients ]] && wait "$clients"
    [[ -n $horse ]] && wait "$horse"
    [[ -n $beside ]] && rm -rf "$beside"
}
trap cleanup EXIT

matrix_args=(--reuse results/latest)
if [[ ${1:-} == --no-builds ]]; then
    :
elif python3 repro/harness/reuse.py passed results/latest/matrix.json; then
    "${builds[@]}" all || exit 1
else
    "${builds[@]}" --no-horse all || exit 1
    beside=$(mktemp -d "${TMPDIR:-/tmp}/kit-beside.XXXXXX")
    # The done marker is written whatever the builds' end: a row whose
    # program never came then fails, as a missing program does.
    (
        KIT_BUILT_LIST=$beside/built scripts/phase.sh run "Horse builds (beside the matrix)" -- \
            "${MAKE:-make}" --no-print-directory horse
        echo $? > "$beside/done"
    ) &
    horse=$!
    matrix_args=(--beside-builds "$beside")
fi
t0=$(date +%s)
scripts/phase.sh run --no-beat "clients (beside the matrix)" -- \
    python3 repro/harness/clients.py --out results/latest/clients --reuse results/latest/clients > results/latest/clients.log 2>&1 &
clients=$!
scripts/phase.sh run matrix -- python3 repro/harness/matrix.py --out results/latest "${matrix_args[@]}"
m=$?
if [[ -n $horse ]]; then
    wait "$horse"
    horse=""
    [[ $(cat "$beside/done") == 0 ]] || echo "make repro: the Horse builds failed (their rows show it)"
fi
echo "== waiting for the clients (started with the matrix)"
wait "$clients"
c=$?
clients=""
echo
cat results/latest/clients.log
echo
echo "make repro: $(( $(date +%s) - t0 )) s for the matrix and the clients"
if [ $m -ne 0 ] || { [ $c -ne 0 ] && [ $c -ne 4 ]; }; then
    echo "make repro: some verdicts were not as expected"
    exit 1
fi
