#!/usr/bin/env bash
# tests/fuzz/run.sh [--runs N] SECONDS [VARIANT] [TARGET...]
#
# Builds libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for SECONDS seconds (0 = no time limit) or N inputs
# (--runs), whichever ends first, from its seed corpus.
#
# Targets:
#   request  server-min's request reader and connection code
#            (tests/fuzz/fuzz_request.c), built against VARIANT: stock from
#            server-min/, a variant from build/<variant>/src/server-min after
#            `make build/<variant>/server-min`; seeds tests/fuzz/corpus/
#   pcap     the pcap analyser's input path (tests/fuzz/fuzz_pcap.c): libpcap
#            reading the input, decoding, stream reassembly, the common
#            response reader, classification, all three renderings; seeds:
#            the reference captures captures/reference/*/wire.pcap
#   response the common response reader (tests/fuzz/fuzz_response.c): whole,
#            split and byte-by-byte reads must agree; seeds tests/fuzz/corpus-response/
#   strace   the strace analyser's input path (tests/fuzz/fuzz_strace.c):
#            the line parser and its helpers, then the analyser's line
#            handling and output; seeds: captures/reference/*/server.strace
#            and captures/tests/fixtures/*.strace; dictionary strace.dict
# Inputs that once failed stay as seeds in tests/fuzz/regress/<target>/.
# Default targets: all four for stock; only request for another variant
# (the analysers do not depend on the server variant).
#
# New inputs go to results/fuzz/<variant>/corpus (request) or
# results/fuzz/<target>/corpus, crash inputs next to them (never into the
# repository).  One line per target:
#   TEST: fuzz <target> [ OK ] N inputs in S s  |  [FAIL] why  |  [SKIP] why
# Exit status: 0 no crash, leak, hang (> 10 s per input) or sanitizer report
# (skipped targets included), 1 a finding or a build failure, 2 usage,
# 4 skipped (clang or its libFuzzer runtime missing).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
kit_name=fuzz
# shellcheck source=../../scripts/lib.sh
. scripts/lib.sh

runs=0
if [[ ${1:-} == --runs ]]; then
    runs=${2:-}
    shift 2 || true
fi
secs=${1:-}
variant=${2:-stock}
shift 2 2>/dev/null || shift $#
if ! [[ $secs =~ ^[0-9]+$ && $runs =~ ^[0-9]+$ ]] || ((secs == 0 && runs == 0)); then
    echo "usage: tests/fuzz/run.sh [--runs N] SECONDS [VARIANT] [request|response|pcap|strace...]" >&2
    exit 2
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
    if [[ $variant == stock ]]; then targets=(request response pcap strace); else targets=(request); fi
fi

CLANG=${CLANG:-clang}
require_command "$CLANG" "clang, libclang-rt-14-dev" "fuzz"
FLAGS=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -pthread)
probe_src=$(mktemp --suffix=.c) && KIT_TMPS+=("$(dirname "$probe_src")") || exit 1
rm -f "$probe_src"
trap 'rm -f "${probe_src%.c}".[co]' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe_src"
if ! "$CLANG" "${FLAGS[@]}" -o "${probe_src%.c}.o" "$probe_src" >/dev/null 2>&1; then
    test_skip fuzz "$CLANG cannot link -fsanitize=fuzzer (Debian package: libclang-rt-14-dev)"
    exit 4
fi

# build OUT SOURCES... -- LIBS...: rebuild when any input is newer.
# INCLUDES and EXTRA_DEPS (headers, included .c files) are set by the caller.
INCLUDES=() EXTRA_DEPS=()
build() {
    local out=$1 f stale=0 srcs=() libs=()
    shift
    while (($#)) && [[ $1 != -- ]]; do srcs+=("$1"); shift; done
    (($#)) && shift
    libs=("$@")
    [[ -x $out ]] || stale=1
    for f in "${srcs[@]}" "${EXTRA_DEPS[@]}" "$0"; do
        [[ $f -nt $out ]] && stale=1
    done
    ((stale)) || return 0
    mkdir -p "$(dirname "$out")"
    echo "fuzz: building $out"
    "$CLANG" "${FLAGS[@]}" "${INCLUDES[@]}" -o "$out" "${srcs[@]}" "${libs[@]}"
}

# run NAME BINARY WORKDIR SEEDDIR [libFuzzer options...]  (later options win)
run() {
    local name=$1 bin=$2 work=$3 seeds=$4 log rc execs t0 t1 secs_used units
    shift 4
    mkdir -p "$work/corpus"
    log=$work/fuzz.log
    t0=$(date +%s.%N)
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$bin" -max_total_time="$secs" -runs="$((runs > 0 ? runs : -1))" -max_len=65536 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$work/" "$@" \
        "$work/corpus" "$seeds" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    secs_used=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    units=$(find "$work/corpus" -type f | wc -l)
    if ((rc != 0)); then
        test_fail "fuzz $name" "exit $rc after ${execs:-?} inputs; see $log"
        grep -E -A40 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|SUMMARY|Test unit written' \
            "$log" | head -n 80 >&2
        return 1
    fi
    test_ok "fuzz $name" "${execs:-?} inputs in $secs_used s, corpus $units files (log $log)"
}

# Seeds that live elsewhere in the repository are copied, not duplicated in
# it; with LINES > 0 each file is cut into pieces of LINES lines (short
# inputs run faster, and the analyser's state needs only a few lines).
# seed_dir NAME LINES FILE...
seed_dir() {
    local d=results/fuzz/$1/seeds lines=$2 f i=0
    rm -rf "$d" && mkdir -p "$d"
    shift 2
    for f in "$@"; do
        [[ -f $f ]] || continue
        if ((lines > 0)); then
            split -l "$lines" -d -a 4 "$f" "$d/seed-$((i++))-"
        else
            cp "$f" "$d/seed-$((i++))"
        fi
    done
    echo "$d"
}

fuzz_request() {
    local src out sources=() f
    if [[ $variant == stock ]]; then
        src=server-min
        out=build/fuzz_request
    else
        make -s "build/$variant/server-min" || { test_fail "fuzz request/$variant" "cannot build the variant"; return 1; }
        src=build/$variant/src/server-min
        out=build/$variant/fuzz_request
    fi
    for f in "$src"/*.c; do
        case ${f##*/} in main.c|app.c|log.c) ;; *) sources+=("$f") ;; esac
    done
    INCLUDES=(-I"$src")
    EXTRA_DEPS=("$src"/*.h)
    build "$out" tests/fuzz/fuzz_request.c "${sources[@]}" || { test_fail "fuzz request/$variant" "build failed"; return 1; }
    run "request/$variant" "$out" "results/fuzz/$variant" tests/fuzz/corpus
}

fuzz_pcap() {
    if ! [[ -f /usr/include/pcap/pcap.h ]]; then
        test_skip "fuzz pcap" "libpcap headers missing (Debian package: libpcap-dev)"
        return 0
    fi
    INCLUDES=()
    EXTRA_DEPS=(captures/pcap_analyse.c captures/pcap_analyse.h common/*.h)
    build build/fuzz_pcap tests/fuzz/fuzz_pcap.c tests/fuzz/stdout_null.c common/*.c -- -ljansson -lpcap -lm || { test_fail "fuzz pcap" "build failed"; return 1; }
    run pcap build/fuzz_pcap results/fuzz/pcap \
        "$(seed_dir pcap 0 captures/reference/*/wire.pcap tests/fuzz/regress/pcap/*)" -max_len=16384
}

fuzz_response() {
    INCLUDES=()
    EXTRA_DEPS=(common/http_response.h common/tests/feed.h)
    build build/fuzz_response tests/fuzz/fuzz_response.c common/http_response.c common/tests/feed.c \
        || { test_fail "fuzz response" "build failed"; return 1; }
    run response build/fuzz_response results/fuzz/response tests/fuzz/corpus-response -max_len=4096
}

fuzz_strace() {
    INCLUDES=()
    EXTRA_DEPS=(captures/strace_analyse.c captures/strace_analyse.h captures/strace_fds.h common/*.h)
    build build/fuzz_strace tests/fuzz/fuzz_strace.c tests/fuzz/stdout_null.c captures/strace_parse.c captures/strace_fds.c common/*.c -- -ljansson -lm \
        || { test_fail "fuzz strace" "build failed"; return 1; }
    run strace build/fuzz_strace results/fuzz/strace \
        "$(seed_dir strace 12 captures/reference/*/server.strace captures/tests/fixtures/*.strace tests/fuzz/regress/strace/*)" \
        -dict=tests/fuzz/strace.dict -max_len=4096
}

rc=0
for t in "${targets[@]}"; do
    case $t in
        request|response|pcap|strace) "fuzz_$t" || rc=1 ;;
        *) echo "fuzz: unknown target '$t' (request, response, pcap, strace)" >&2; exit 2 ;;
    esac
done
exit $rc
