#!/usr/bin/env bash
# tests/hostile/run.sh [--asan | --tsan | --valgrind] [VARIANT...]
#
# Builds build/hostile and the server variants it needs (via make), then runs
# the hostile-input corpus against every variant (default: all 8).
#   (plain)     build/<variant>/server-min
#   --asan      build-asan/<variant>/server-min (ASan+UBSan; any report fails)
#   --tsan      build-tsan/<variant>/server-min (any race report fails)
#   --valgrind  build/<variant>/server-min under valgrind --error-exitcode=99
#               --leak-check=full, for a subset of cases (default variants:
#               stock and all)
# Server logs go to results/hostile/<mode>/<variant>/<case>.log.
# Exit status: 0 when every case of every variant passed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2

mode=plain
case ${1:-} in
--asan) mode=asan; shift ;;
--tsan) mode=tsan; shift ;;
--valgrind) mode=valgrind; shift ;;
-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

all_variants=(stock forward-allow-connect buffer-aware-pending coalesce-writes
              announce-close keep-surplus-bytes pool-idle-fallback all)
if (($#)); then
    variants=("$@")
elif [[ $mode == valgrind ]]; then
    variants=(stock all)
else
    variants=("${all_variants[@]}")
fi

# The hostile driver: through make when the Makefile has its rule.
if grep -q '^build/hostile:' Makefile; then
    make -s build/hostile || exit 2
else
    mkdir -p build
    if [[ ! build/hostile -nt tests/hostile/hostile.c ]]; then
        ${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g -pthread \
            -o build/hostile tests/hostile/hostile.c || exit 2
    fi
fi

case $mode in
asan) dir=build-asan ;;
tsan) dir=build-tsan ;;
*) dir=build ;;
esac
targets=()
for v in "${variants[@]}"; do targets+=("$dir/$v/server-min"); done
make -s -j"$(nproc)" "${targets[@]}" || exit 2

args=()
case $mode in
asan)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    args=(--slow 3 --conns 3000) ;;
tsan)
    # A race report makes the server exit 66 at shutdown (exitcode), which
    # the driver reports as a failure of that case.
    export TSAN_OPTIONS=${TSAN_OPTIONS:-exitcode=66:halt_on_error=0}
    args=(--slow 5 --conns 1000) ;;
valgrind)
    command -v valgrind >/dev/null || {
        echo "run.sh: valgrind is not installed (Debian package: valgrind)" >&2
        exit 2
    }
    args=(--slow 20 --conns 300
          --cases start-garbage,start-ftp,start-non-ascii,start-empty-line,start-no-http-word,bare-lf,cr-at-buffer-edge,header-32769,headers-257,cl-negative,cl-int64-max,body-short-eof,body-short-close,body-short-stall,pipeline-3,pipeline-1000-echo,rst-mid-response,half-close,max-live-4,sigterm-keepalive,leak-thread,leak-pool
          --launcher valgrind --launcher --quiet --launcher --error-exitcode=99
          --launcher --leak-check=full --launcher --errors-for-leak-kinds=definite) ;;
esac

failed=0 t0=$SECONDS
summary=()
for v in "${variants[@]}"; do
    logdir=results/hostile/$mode/$v
    rm -rf "$logdir"
    mkdir -p "$logdir"
    echo "== hostile: $v ($mode)"
    build/hostile --server "$dir/$v/server-min" --variant "$v" \
        --log-dir "$logdir" "${args[@]}" | tee "$logdir/hostile.out"
    rc=${PIPESTATUS[0]}
    summary+=("$(printf '%-22s %s' "$v" "$(tail -n 1 "$logdir/hostile.out")")")
    ((rc == 0)) || failed=$((failed + 1))
done
echo "== hostile summary ($mode, $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
if ((failed)); then
    echo "hostile: $failed variant(s) with failures"
    exit 1
fi
echo "hostile: every variant passed"
