#!/usr/bin/env bash
# scripts/repro.sh - the main job's runs (after the builds of `make repro`):
# the matrix on stdout, and the real clients side by side with it (their
# table printed when the matrix is done).  Each is a phase of the table
# (scripts/phase.sh): the matrix with its progress, the clients' time
# recorded when they end.  Exit 1 if either saw a verdict it did not expect.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
mkdir -p results/latest
t0=$(date +%s)
clients=""
cleanup() { [[ -n $clients ]] && wait "$clients"; }
trap cleanup EXIT
scripts/phase.sh run --no-beat "clients (beside the matrix)" -- \
    python3 repro/harness/clients.py --out results/latest/clients --reuse results/latest/clients > results/latest/clients.log 2>&1 &
clients=$!
scripts/phase.sh run matrix -- python3 repro/harness/matrix.py --out results/latest --reuse results/latest
m=$?
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
