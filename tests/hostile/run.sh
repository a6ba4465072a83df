#!/usr/bin/env bash
# tests/hostile/run.sh [--asan | --tsan | --valgrind | --real-trunk | --both]
#                      [--jobs N] [--light] [--cases a,b] [VARIANT...]
#
# Runs the hostile corpus (build/hostile, tests/hostile/README.md) against
# server variants, several variants at once (--jobs, default 6); in the
# sanitizer and valgrind modes each variant's cases are dealt round
# HOSTILE_SHARDS runs (default 4) that go beside each other, as their cases
# mostly wait.
#   (plain)       build/<variant>/server-min, every variant and pair of the C
#                 series (repro/harness/patchset.py)
#   --asan        build-asan/<variant>/server-min (any report fails)
#   --tsan        build-tsan/<variant>/server-min (any race report fails)
#   --valgrind    build/<variant>/server-min under valgrind (stock, all; a subset
#                 of the cases)
#   --real-trunk  build/real-trunk/<set>/fpserver, every set of the Pascal
#                 series (patches/fpc) that is built (make real-trunk);
#                 a set that is not built is a SKIP line
#   --both        plain and --real-trunk, then the outcomes side by side
# The defects each variant fixes come from repro/harness/patchset.py.  The heavy
# cases (1,100 connections, 130 drip-fed connections, 16 x 16 MiB announced
# bodies) run on stock, all and the variants that fix B8 or B12, clone and
# real trunk; other variants and the sanitizer modes run with --light.
# One 'TEST: hostile <mode>/<variant>/<case> [ OK ]|[FAIL]|[SKIP]' line per
# case; outcomes and server logs in results/hostile/<mode>/<variant>/.
# Exit status: 0 all passed, 1 a failure, 4 everything skipped.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck disable=SC2034 # read by scripts/lib.sh
kit_name=hostile
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
trap kit_cleanup EXIT

modes=(plain) jobs=6 light='' cases=() unbuilt=() ran=()
SHARDS=${HOSTILE_SHARDS:-4}   # build/hostile runs per variant in the sanitizer and valgrind modes
while (($#)); do
    case $1 in
    --asan) modes=(asan) ;;
    --tsan) modes=(tsan) ;;
    --valgrind) modes=(valgrind) ;;
    --real-trunk) modes=(real-trunk) ;;
    --both) modes=(plain real-trunk) ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --light) light=--light ;;
    --cases) cases=(--cases "${2:?--cases needs a list}"); shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (try --help)" ;;
    *) break ;;
    esac
    shift
done
picked=("$@")

# variant|fixed defects|applied defects, for the C ("c") or Pascal ("fpc")
# series: the one source of truth is repro/harness/patchset.py.
variant_table() {
    python3 - "$1" "${@:2}" <<'EOF'
import sys
sys.path.insert(0, "repro/harness")
import patchset
kind, picked = sys.argv[1], sys.argv[2:]
names = patchset.variants(kind) + patchset.pairs(kind)
table = patchset.by_name(kind)
for v in picked or names:
    parts = list(table) if v == "all" else [] if v == "stock" else v.split("+")
    if any(p not in table for p in parts):
        print(f"{v}|?|?")
        continue
    applied = sorted({table[p].defect for p in parts}, key=lambda d: int(d[1:]))
    print(f"{v}|{' '.join(patchset.fixed_by(v, kind))}|{' '.join(applied)}")
EOF
}

make -s build/hostile build/exit-server || exit 1
kit_mktemp snap
cp build/hostile "$snap/" || exit 1
for mode in "${modes[@]}"; do
    case $mode in
    valgrind) require_command valgrind valgrind "hostile valgrind" ;;
    esac
done

# server_of MODE VARIANT: the binary under test.
server_of() {
    case $1 in
    plain|valgrind) echo "build/$2/server-min" ;;
    asan|tsan) echo "build-$1/$2/server-min" ;;
    real-trunk) echo "build/real-trunk/$2/fpserver" ;;
    esac
}

# valgrind's subset: every kind of input once (each case is a server start
# and stop under valgrind).
VALGRIND_CASES=start-garbage,start-ftp,start-crlf-100,bare-lf,cr-at-buffer-edge,header-32769,headers-257,cl-int64-max,te-chunked-and-cl,cl-duplicate-differ,body-short-eof,body-short-close,body-short-stall,overrun-then-serve,pipeline-3,pipeline-1000-echo,rst-mid-response,half-close,max-live-4,sigterm-keepalive,slow-1-polled,leak-thread,leak-pool
# run_variant MODE VARIANT FIXED APPLIED OUT [CASES]: one build/hostile run
# (of the comma list CASES only, if given) into results/hostile/MODE/VARIANT/,
# its output in OUT.
run_variant() {
    local mode=$1 v=$2 fixed=$3 applied=$4 out=$5 only=${6:-} dir=results/hostile/$1/$2 server args=()
    mkdir -p "$dir"
    server=$(server_of "$mode" "$v")
    [[ $mode == real-trunk ]] || args+=(--clone)
    case $mode in
    asan) args+=(--slow 3 --conns 300 --light) ;;
    tsan) args+=(--slow 5 --conns 200 --light) ;;
    valgrind)
        ((${#cases[@]})) || [[ -n $only ]] || args+=(--cases "$VALGRIND_CASES")
        args+=(--slow 20 --conns 100 --light
               --launcher valgrind --launcher --quiet --launcher --error-exitcode=99
               --launcher --leak-check=full --launcher --errors-for-leak-kinds=definite) ;;
    *)
        # Heavy cases where they show something: stock, all, a B8 or B12 fix.
        if [[ -n $light || ( $v != stock && $v != all && " $fixed " != *" B8 "* &&
                             " $fixed " != *" B12 "* ) ]]; then
            args+=(--light)
        fi ;;
    esac
    if [[ $fixed == "?" ]]; then
        echo "TEST: hostile $mode/$v [FAIL] not a variant of the series (repro/harness/patchset.py)" > "$out"
        return 1
    fi
    if [[ ! -x $snap/$mode/$v/${server##*/} && $mode == real-trunk ]]; then
        echo "TEST: hostile $mode/$v [SKIP] $server not built (make real-trunk)" > "$out"
        return 4
    elif [[ ! -x $snap/$mode/$v/${server##*/} || " ${unbuilt[*]} " == *" $server "* ]]; then
        echo "TEST: hostile $mode/$v [FAIL] $server did not build" > "$out"
        return 1
    fi
    "$snap/hostile" --server "$snap/$mode/$v/${server##*/}" --variant "$v" --mode "$mode" --fixed "$fixed" \
        --applied "$applied" --log-dir "$dir" "${args[@]}" "${cases[@]}" ${only:+--cases "$only"} > "$out" 2>&1
}

t0=$SECONDS
failed=0 passed=0 skipped=0
declare -A pid_of=()
# reap: wait for one job, print its TEST lines, count its result.
reap() {
    local pid out
    wait -n -p pid "${!pid_of[@]}" 2>/dev/null
    out=${pid_of[$pid]}
    unset "pid_of[$pid]"
    grep -E '^(TEST:|    )' "$out"
    passed=$((passed + $(grep -c '^TEST: .*\[ OK \]' "$out")))
    failed=$((failed + $(grep -c '^TEST: .*\[FAIL\]' "$out")))
    skipped=$((skipped + $(grep -c '^TEST: .*\[SKIP\]' "$out")))
}

# The driver's own stop (srv_stop), on a stand-in server
# (tests/hostile/fake/exit_server.c): one whose exit the kernel finishes
# 2 s late (a thread waits in vfork, as c47's servers' waited in
# exit_mmap after they had exited) passes; one whose main thread left
# while another sleeps in user space still needs SIGKILL.
driver_check() {
    local slow hang
    slow=$(EXIT_SERVER=slow "$snap/hostile" --server build/exit-server --log-dir "$snap/driver-slow" \
        --cases start-garbage 2>&1) &&
        grep -q 'the kernel took' <<< "$slow"
    if (($? == 0)); then
        echo "TEST: hostile driver: a server torn down late after its exit passes [ OK ] $(grep -o 'the kernel took [0-9]* ms more' <<< "$slow")"
    else
        echo "TEST: hostile driver: a server torn down late after its exit passes [FAIL] $(grep -m1 '^TEST:' <<< "$slow")"
    fi
    hang=$(EXIT_SERVER=hang "$snap/hostile" --server build/exit-server --log-dir "$snap/driver-hang" \
        --cases start-garbage 2>&1)
    if grep -q '^TEST: .*\[FAIL\] server needed SIGKILL' <<< "$hang"; then
        echo "TEST: hostile driver: a server that never exits needs SIGKILL [ OK ]"
    else
        echo "TEST: hostile driver: a server that never exits needs SIGKILL [FAIL] $(grep -m1 '^TEST:' <<< "$hang")"
    fi
}
if [[ " ${modes[*]} " == *" plain "* ]]; then
    driver_check > "$snap/driver.out" 2>&1 &
    pid_of[$!]=$snap/driver.out
fi

for mode in "${modes[@]}"; do
    kind=c
    [[ $mode == real-trunk ]] && kind=fpc
    vs=("${picked[@]}")
    if ((${#vs[@]} == 0)) && [[ $mode == valgrind ]]; then vs=(stock all); fi
    mapfile -t rows < <(variant_table "$kind" "${vs[@]}")
    targets=()
    for row in "${rows[@]}"; do
        v=${row%%|*}
        case $mode in
        plain|valgrind) targets+=("build/$v/server-min") ;;
        asan|tsan) targets+=("build-$mode/$v/server-min") ;;
        esac
    done
    # -k: a variant that does not build fails alone (make deletes its
    # binary), the others still run.
    # A target still out of date right after make did not build (its old
    # binary, if any, is not the variant any more).
    unbuilt=()
    if ((${#targets[@]})) && ! nice -n 5 make -s -k -j2 "${targets[@]}" >&2; then
        for t in "${targets[@]}"; do make -q "$t" 2>/dev/null || unbuilt+=("$t"); done
    fi
    # Each run uses a private copy, taken right after make: another build
    # in the shared tree may replace a binary while the cases run.
    for row in "${rows[@]}"; do
        v=${row%%|*}
        server=$(server_of "$mode" "$v")
        if [[ -x $server ]]; then
            mkdir -p "$snap/$mode/$v" && cp "$server" "$snap/$mode/$v/" || exit 1
        fi
    done
    for row in "${rows[@]}"; do
        IFS='|' read -r v fixed applied <<< "$row"
        dir=results/hostile/$mode/$v
        rm -rf "$dir"
        mkdir -p "$dir"
        # Shards: the sanitizer and valgrind modes run few variants whose
        # cases mostly wait (their time-outs scaled by --slow), one after
        # another; the cases of a variant are dealt round the shards, each a
        # build/hostile run of its own beside the others.  Each case still
        # runs once.
        shards=()
        if [[ $mode == asan || $mode == tsan || $mode == valgrind ]] && ((${#cases[@]} == 0 && SHARDS > 1)) &&
           [[ -x $snap/$mode/$v/server-min ]]; then
            mapfile -t shards < <(if [[ $mode == valgrind ]]; then tr , '\n' <<< "$VALGRIND_CASES"
                                  else "$snap/hostile" --server "$snap/$mode/$v/server-min" --list; fi |
                awk -v n="$SHARDS" '{ s[(NR - 1) % n] = s[(NR - 1) % n] (s[(NR - 1) % n] == "" ? "" : ",") $1 }
                                    END { for (k = 0; k < n; k++) if (s[k] != "") print s[k] }')
        fi
        ((${#shards[@]})) || shards=("")
        for k in "${!shards[@]}"; do
            out=$dir/hostile.out
            ((${#shards[@]} > 1)) && out=$dir/hostile.$k.out
            while ((${#pid_of[@]} >= jobs)); do reap; done
            run_variant "$mode" "$v" "$fixed" "$applied" "$out" "${shards[$k]}" &
            pid_of[$!]=$out
            ran+=("$out")
            KIT_PIDS+=($!)
        done
    done
done
while ((${#pid_of[@]})); do reap; done

# Side by side: each case's outcome on the clone and on the real trunk.
if [[ " ${modes[*]} " == *" plain "* && " ${modes[*]} " == *" real-trunk "* ]]; then
    echo "== hostile: clone (plain) vs real trunk, outcome per case"
    python3 - "${ran[@]}" <<'EOF'
import re, sys
out = {}
for f in sys.argv[1:]:
    for line in open(f, errors="replace"):
        m = re.match(r"OUTCOME: ([^/]+)/(.+)/([^/ ]+) (.*?) \| ", line)
        if m and m.group(1) in ("plain", "real-trunk"):
            out[(m.group(2), m.group(3), m.group(1))] = m.group(4)
same = diff = 0
for v, c in sorted({(v, c) for v, c, _ in out}):
    a, b = out.get((v, c, "plain")), out.get((v, c, "real-trunk"))
    if a is None or b is None:
        continue
    eq = a == b
    same += eq
    diff += not eq
    print(f"{'equal' if eq else 'DIFF '} {v:40s} {c:30s} clone {a}" + ("" if eq else f"  real {b}"))
print(f"{same} equal, {diff} different")
EOF
fi
echo "hostile: $passed passed, $failed failed, $skipped skipped in $((SECONDS - t0)) s (${modes[*]})"
((failed)) && exit 1
((passed == 0 && skipped > 0)) && exit 4
exit 0
