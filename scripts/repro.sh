#!/usr/bin/env bash
# scripts/repro.sh - the main job's runs (after the builds of `make repro`):
# the matrix on stdout, and beside it the real clients (their table printed
# when the matrix is done) and the Horse builds (niced: the measures get
# the CPU first), whose rows the matrix measures once they are built (it
# waits for KIT_HORSE_GATE, the builds' exit status, before a Horse row's
# measure; they are the last it starts).  Each is a phase of the table
# (scripts/phase.sh): the matrix with its progress, the clients' time
# recorded when they end.  Exit 1 if either saw a verdict it did not expect.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
mkdir -p results/latest
t0=$(date +%s)
clients="" horse=""
cleanup() { [[ -n $clients ]] && wait "$clients"; [[ -n $horse ]] && wait "$horse"; }
trap cleanup EXIT
gate=$top/results/latest/horse-builds.status
rm -f "$gate"
(
    scripts/phase.sh run "Horse builds (beside the matrix)" -- "${MAKE:-make}" --no-print-directory horse
    echo $? > "$gate.tmp" && mv "$gate.tmp" "$gate"
) &
horse=$!
export KIT_HORSE_GATE=$gate
scripts/phase.sh run --no-beat "clients (beside the matrix)" -- \
    python3 repro/harness/clients.py --out results/latest/clients > results/latest/clients.log 2>&1 &
clients=$!
scripts/phase.sh run matrix -- python3 repro/harness/matrix.py --out results/latest
m=$?
wait "$horse"
horse=""
h=$(cat "$gate" 2>/dev/null || echo "none")
[[ $h == 0 ]] || echo "make repro: the Horse builds ended with exit $h (their rows fail for what was not built)"
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
