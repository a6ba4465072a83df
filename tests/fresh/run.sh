#!/usr/bin/env bash
# tests/fresh/run.sh - `make repro` on a fresh machine, proven on this one
# (issue 20: the main job needs only what it installs).
#
# A fresh clone of this repository -- HEAD plus the working tree's
# uncommitted changes by default, HEAD alone with KIT_FRESH=committed; the
# first TEST line says which -- with ../shared beside it runs the recipe of
# `make repro` (KIT_NO_INSTALL=1: missing packages are named, never
# installed; see inside() for what is narrowed) in a
# private mount namespace where Debian packages are hidden by role
# (tests/fresh/hide.py, roles from scripts/require-packages.sh --list).
# Three runs (the second with KIT_FRESH_WINE=1), each hiding less than the
# one before, so that what an earlier run built is what the later machine
# would have built too:
#   1. test-only and every optional package hidden: the trunk, FPC 3.2.2
#      and win64 rows, strace, the captures and the clients skip with their
#      reasons; the clone rows pass (this run builds `make all`, for the
#      variants the rows and the clients run)
#   2. test-only, Wine and the clients' tools hidden: the trunk toolchain
#      and the real servers build; the win64 rows skip with the reason (a
#      .exe is built, nothing can run it), the trunk row passes
#   3. test-only hidden: everything else runs and passes, clients included
# Why not each optional package in turn: each is read by one check in one
# consumer (kit.have_strace, defects.can_capture, clients.py's tools, fpc for
# the 3.2.2 row and the trunk toolchain's bootstrap, wine for the win64
# rows), and hiding them together fires every check at once.  The one pair
# that interacts is Wine with the trunk toolchain (the .exe builds need
# fpc, running them needs wine): run 2 hides Wine with fpc present.
# The clients' tools are hidden with Wine only so that run 2 does not wait
# for them again (they read no Wine).
# Cheap on purpose: the real servers are built for the sets the rows use
# (REAL_SETS, WIN64_SETS), the model for the variants the rows and the
# clients run (VARIANTS, from matrix.py and clients.py --variants; every
# other variant is the same sources, patched, through the same compiler
# and flags, and make test's own build compiles them all), the matrix runs
# a few rows (KIT_ROWS), and the
# per-machine caches are this tree's: the trunk toolchain (build/fpc-trunk,
# bind-mounted read-only; scripts/fpc-trunk.sh must call it "cached" in the
# clone, so its cache key -- source, bootstrap compiler, script -- holds)
# and the Wine prefix template.  Each TEST line gives its run's seconds.
set -u
kit_name=fresh
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"

ROWS1="stock,all"
ROWS2="real trunk"
ROWS3="stock,all,real trunk,real trunk + all,real FPC 3.2.2"
# What the runs build of the real servers (mk/fpc.mk, mk/win64.mk): the
# sets ROWS3 and the clients (repro/harness/clients.py: curl and h2load stock and
# all, undici also buffer-aware-pending) use; run 3 fails its "nothing
# skipped" check when a client wants one more.
SETS=(REAL_SETS="stock all buffer-aware-pending" WIN64_SETS=stock)

# Inside the namespace: the caches, then `make repro` in the clone.
inside() {
    local kit=$1 rows=$2
    cd "$kit" || exit 1
    if command -v ppcx64 > /dev/null && [[ -x $top/build/fpc-trunk/bin/fpc ]]; then
        mkdir -p build/fpc-trunk
        mount --bind "$top/build/fpc-trunk" build/fpc-trunk \
            && mount -o remount,bind,ro build/fpc-trunk || exit 1
        if scripts/fpc-trunk.sh | grep -q '^fpc-trunk: cached'; then
            echo "fresh: trunk toolchain: $top/build/fpc-trunk, cached for the clone (read-only)"
        else
            echo "fresh: the trunk toolchain's cache key differs in the clone"; exit 1
        fi
    fi
    if command -v wine > /dev/null && [[ -d $top/build/wine-prefix && ! -e build/wine-prefix ]]; then
        ln -s "$top/build/wine-prefix" build/wine-prefix
    fi
    # The Makefile's repro recipe, step by step: deps, all (niced: the
    # matrix beside other steps measures timing), the real servers of the
    # rows this run measures (real-servers' fpc, real-trunk and
    # real-trunk-win64 for SETS; failures ignored as there, the rows then
    # fail; its other entries build rows this step does not run), and
    # scripts/repro.sh with the rows.
    # Debian's python3, as a maintainer's Debian machine runs the kit with
    # (this machine's python3 on PATH may be another: pyenv's, which had
    # imported modules at start-up that Debian's imports only when asked,
    # and so ran repro/bisect/bisect.py where Debian's failed).
    if [[ -x /usr/bin/python3 && $(command -v python3) != /usr/bin/python3 ]]; then
        mkdir -p "$TMPDIR/debian-python" && ln -sf /usr/bin/python3 "$TMPDIR/debian-python/python3"
        echo "fresh: python3 is Debian's, $(/usr/bin/python3 --version) (not $(command -v python3))"
        export PATH=$TMPDIR/debian-python:$PATH
    fi
    KIT_NO_INSTALL=1 make --no-print-directory deps || exit 1
    local variants c m
    c=$(python3 repro/harness/clients.py --variants) && m=$(python3 repro/harness/matrix.py --rows "$rows" --variants) \
        || { echo "fresh: the variants the rows and the clients run: not listed"; exit 1; }
    variants=$(printf '%s\n' stock $c $m | sort -u | tr '\n' ' ')
    echo "fresh: make all for the model variants the rows and the clients run: $variants"
    nice -n 10 make --no-print-directory -j"$(nproc)" all VARIANTS="$variants" PAIRS= > build.log 2>&1 \
        || { tail -20 build.log; echo "fresh: make all failed"; exit 1; }
    local t
    for t in fpc real-trunk real-trunk-win64; do
        nice -n 10 make --no-print-directory -j"$(nproc)" "$t" "${SETS[@]}"
    done
    KIT_ROWS=$rows scripts/repro.sh
}
if [[ ${1:-} == --inside ]]; then inside "$2" "$3"; exit; fi

trap kit_cleanup EXIT
require_root fresh
require_command unshare util-linux fresh
require_command git git fresh
tmp="" && kit_mktemp tmp
export TMPDIR=$tmp
t0=$SECONDS

# The clone, and what it holds.
kit=$tmp/kit
git clone -q "$top" "$kit" || { test_fail "fresh: clone"; exit 1; }
what="HEAD $(git -C "$top" rev-parse --short HEAD)"
if [[ ${KIT_FRESH:-worktree} != committed ]]; then
    n=$(git -C "$top" status --porcelain --untracked-files=all | wc -l)
    git -C "$top" diff --binary HEAD > "$tmp/wt.diff"
    if [[ -s $tmp/wt.diff ]] && ! git -C "$kit" apply --whitespace=nowarn "$tmp/wt.diff"; then
        test_fail "fresh: clone" "the working tree's changes do not apply to $what"; exit 1
    fi
    git -C "$top" ls-files -z --others --exclude-standard \
        | tar -C "$top" --null -T - -cf - | tar -C "$kit" -xf -
    what+=" + the working tree's $n uncommitted paths"
else
    what+=" (committed only)"
fi
[[ -d $top/../shared ]] && ln -s "$(cd "$top/../shared" && pwd)" "$tmp/shared"
test_ok "fresh: clone" "$what, ../shared beside it ($((SECONDS - t0)) s)"

# run NAME HIDE ROWS MUST...: make repro in the clone with HIDE hidden; it
# must exit 0 and its output must match every MUST (an extended regex).
fail=0
run() {
    local name=$1 hide=$2 rows=$3 t=$SECONDS rc re log=$tmp/$1.log
    shift 3
    python3 "$top/tests/fresh/hide.py" --hide "$hide" -- "$top/tests/fresh/run.sh" --inside "$kit" "$rows" > "$log" 2>&1
    rc=$?
    # The run's own lines, indented: its skips are its figures, not ours.
    grep -E '^hide: |^fresh: |^TEST: (matrix|clients).*\[SKIP\]|^note: |rows as expected|^make repro' \
        "$log" | cut -c1-300 | sed 's/^/    /'
    if ((rc == 0)); then
        test_ok "fresh: $name: make repro" "$((SECONDS - t)) s, rows $rows"
    else
        fail=1
        # What was not as expected (the matrix's UNEXPECTED rows and their
        # measures, failed measures), then the end of the run.
        grep -E 'UNEXPECTED|FAILED|^\[|not as expected' "$log" | grep -B1 -E 'UNEXPECTED|FAILED' \
            | cut -c1-400 | sed 's/^/    /'
        tail -30 "$log" | sed 's/^/    /'
        test_fail "fresh: $name: make repro" "exit $rc after $((SECONDS - t)) s (log above)"
    fi
    for re in "$@"; do
        if grep -Eq "$re" "$log"; then
            test_ok "fresh: $name: shows '$re'"
        else
            fail=1; test_fail "fresh: $name: shows '$re'" "not in its output"
        fi
    done
}

run "test-only and optional hidden" test,optional "$ROWS1" \
    'TEST: matrix real-trunk rows \[SKIP\]' 'TEST: matrix real FPC 3.2.2 row \[SKIP\]' \
    'note: strace evidence skipped' 'note: wire captures skipped: capture needs tcpdump' \
    'TEST: clients .*\[SKIP\] missing curl node wrk' 'TEST: fpc-trunk \[SKIP\]'
# KIT_FRESH_WINE=1: also the run with Wine hidden and fpc present (the one
# pair that interacts); ~25 s more, so not in every `make test`.
if [[ ${KIT_FRESH_WINE:-0} == 1 ]]; then
run "test-only, wine and the clients' tools hidden" test,wine,wine64,curl,wrk,nodejs,python3-urllib3 \
    "$ROWS2" 'TEST: matrix win64 rows \[SKIP\] no wine' 'fresh: trunk toolchain: .*cached' \
    'TEST: clients .*\[SKIP\] missing curl node wrk' 'built build/real-trunk-win64/stock/fpserver.exe'
fi
run "test-only hidden" test "$ROWS3" 'fresh: trunk toolchain: .*cached' \
    'clients: 0 unexpected outcome'
# Nothing optional was missing in the last run: no row or client skipped.
if grep -Eq '^TEST: (matrix|clients).*\[SKIP\]' "$tmp/test-only hidden.log"; then
    fail=1; test_fail "fresh: test-only hidden: nothing skipped" \
        "$(grep -E '^TEST: (matrix|clients).*\[SKIP\]' "$tmp/test-only hidden.log" | head -3)"
else
    test_ok "fresh: test-only hidden: nothing skipped"
fi
echo "fresh: $((SECONDS - t0)) s in all"
exit $fail
