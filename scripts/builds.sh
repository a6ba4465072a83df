#!/usr/bin/env bash
# scripts/builds.sh [--test] [--real-only] [TARGET...] - the builds of
# `make repro` and `make test` (and make real-servers), each a phase with
# its elapsed time (scripts/phase.sh; the caller prints the table):
#   packages                  what the builds read (require-packages.sh
#                             --first): installed when root and missing
#   packages (beside builds)  everything else, installed while the builds
#                             run; then, still beside them,
#   Wine prefix               the template the Windows rows copy (make wine-prefix)
#   trunk toolchain           make fpc-trunk (cached: at once), beside
#                             the next two (its cycle is mostly one process)
#   C builds                  make -jN TARGET... (default: all)
#   FPC 3.2.2 program         make fpc
#   win64 RTL                 make fpc-trunk-win64, beside the next
#   real-trunk builds         make -jN real-trunk, 'built ... (k of n)'
#   win64 builds              make -jN real-trunk-win64
#   Horse builds              make horse, 'horse: ... (k of n)'
# --test: the package lists and Horse builds of `make test`
# (require-packages.sh --test, make horse HORSE_FOR=--test).
# --real-only: neither packages nor C builds (make real-servers).
# Packages or C builds failing stop the run (exit 1); a real-server phase
# failing is shown and the others go on, the matrix then failing the rows
# it could not build (as make real-servers always did).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
make=${MAKE:-make}
nproc=${NPROC:-$(nproc 2>/dev/null || echo 2)}
phase=$top/scripts/phase.sh
test="" real_only=0 targets=()
while (($#)); do
    case $1 in
    --test) test=--test ;;
    --real-only) real_only=1 ;;
    -*) echo "usage: scripts/builds.sh [--test] [--real-only] [TARGET...]" >&2; exit 2 ;;
    *) targets+=("$1") ;;
    esac
    shift
done
((${#targets[@]})) || targets=(all)

beside=()
# Never leave the background phases behind (an apt-get cut short would
# leave dpkg half done): wait for them, whatever ends this script.
cleanup() { ((${#beside[@]} == 0)) || wait "${beside[@]}"; }
trap cleanup EXIT

m=("$make" --no-print-directory)

if ((!real_only)); then
    "$phase" run packages -- scripts/require-packages.sh $test --first || exit 1
fi
(
    ((real_only)) || "$phase" run "packages (beside builds)" -- scripts/require-packages.sh $test --rest
    "$phase" run "Wine prefix (beside builds)" -- "${m[@]}" wine-prefix
) &
beside+=($!)
"$phase" run "trunk toolchain" -- "${m[@]}" fpc-trunk &
toolchain=$!
beside+=("$toolchain")
if ((!real_only)); then
    "$phase" run "C builds" -- "${m[@]}" -j"$nproc" "${targets[@]}" || exit 1
fi
"$phase" run "FPC 3.2.2 program" -- "${m[@]}" fpc
wait "$toolchain"
# The Windows RTL is one make, mostly one process (~4 s): beside the
# Linux builds, not before the win64 ones while a core idles.
"$phase" run "win64 RTL (beside builds)" -- "${m[@]}" fpc-trunk-win64 &
win64rtl=$!
beside+=("$win64rtl")
"$phase" run "real-trunk builds" -- "${m[@]}" -j"$nproc" real-trunk
wait "$win64rtl"
"$phase" run "win64 builds" -- "${m[@]}" -j"$nproc" real-trunk-win64
"$phase" run "Horse builds" -- "${m[@]}" horse ${test:+HORSE_FOR=--test}
wait "${beside[@]}"
beside=()
exit 0
