#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [VARIANT]
#
# Builds the libFuzzer target tests/fuzz/fuzz_request.c with clang
# (-fsanitize=fuzzer,address,undefined) against server-min's sources minus
# main.c, app.c and log.c -- stock from server-min/, a variant from
# build/<variant>/src/server-min after `make build/<variant>/server-min` --
# and runs it for SECONDS seconds from the seed corpus tests/fuzz/corpus/.
# New inputs go to results/fuzz/<variant>/corpus, crash inputs to
# results/fuzz/<variant>/ (never into the repository).
# Exit status: 0 when no crash, leak, hang (>10 s per input) or sanitizer
# report was found.  Prints the number of executed inputs.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2

secs=${1:-}
variant=${2:-stock}
if ! [[ $secs =~ ^[0-9]+$ ]]; then
    echo "usage: tests/fuzz/run.sh SECONDS [VARIANT]" >&2
    exit 2
fi
CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null; then
    echo "fuzz: $CLANG not found (Debian packages: clang, libclang-rt-14-dev)" >&2
    exit 2
fi

if [[ $variant == stock ]]; then
    src=server-min
    out=build/fuzz_request
else
    make -s "build/$variant/server-min" || exit 2
    src=build/$variant/src/server-min
    out=build/$variant/fuzz_request
fi
mkdir -p "$(dirname "$out")"
sources=()
for f in "$src"/*.c; do
    case ${f##*/} in main.c|app.c|log.c) ;; *) sources+=("$f") ;; esac
done
# Rebuild when any input is newer than the binary.
stale=0
[[ -x $out ]] || stale=1
for f in "${sources[@]}" "$src"/*.h tests/fuzz/fuzz_request.c "$0"; do
    [[ $f -nt $out ]] && stale=1
done
if ((stale)); then
    echo "fuzz: building $out ($variant)"
    "$CLANG" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 \
        -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -pthread -I"$src" \
        -o "$out" tests/fuzz/fuzz_request.c "${sources[@]}" || exit 2
fi

work=results/fuzz/$variant
mkdir -p "$work/corpus"
log=$work/fuzz.log
echo "fuzz: $variant for $secs s (log $log)"
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$out" -max_total_time="$secs" -max_len=65536 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/" \
    "$work/corpus" tests/fuzz/corpus >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
units=$(find "$work/corpus" -type f | wc -l)
echo "fuzz: $variant: ${execs:-?} inputs executed in $secs s, corpus $units files, exit $rc"
if ((rc != 0)); then
    echo "fuzz: FAILED -- crash report:" >&2
    grep -E -A40 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|SUMMARY|Test unit written' "$log" | head -n 80 >&2
    exit 1
fi
