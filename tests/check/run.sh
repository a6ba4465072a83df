#!/usr/bin/env bash
# tests/check/run.sh - `make check` (repro/harness/checkfix.py), the
# maintainer's one-minute loop, as printed in README.md:
#   - make check FIX=buffer-aware-pending passes, B2 REPRO on stock and
#     fixed with the fix, its hazard rows and fpcunit tests counted;
#   - make check FIX=no-such-fix is refused before anything is built
#     (exit 2, within seconds), naming the valid fixes and reports;
#   - a fix that changes nothing (no-op-b2.fpc.patch in place of
#     buffer-aware-pending's Pascal patch) fails its check: B2 REPRO with it;
#   - FPCSRC= a folder that carries the fix (the snapshot with
#     buffer-aware-pending's Pascal patch applied, the way a maintainer
#     changes it): built on the toolchain as it is, stock is the tree with
#     the fix reversed, B2 REPRO on it and fixed on the tree, PASS (only
#     where the toolchain is the snapshot's: --keep-toolchain).
#   - README.md, which prints these commands, is read in five minutes: at
#     most 150 lines, no paragraph over ten, every link to a file of the
#     repository.
# Needs the trunk toolchain (make fpc-trunk); without it a SKIP.
set -uo pipefail
kit_name=check
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT
cd "$top" || exit 1
failed=0
tmp="" && kit_mktemp tmp

python3 - README.md <<'PY' || failed=1
import re, sys
from pathlib import Path
path = Path(sys.argv[1])
text = path.read_text()
lines = text.splitlines()
longest, n, fenced = 0, 0, False
for line in lines + [""]:
    if line.startswith("```"):
        fenced, n = not fenced, 0
    elif fenced or line.startswith("|"):
        continue
    elif not line.strip():
        longest, n = max(longest, n), 0
    else:
        n += 1
links = re.findall(r"\]\(([^)#]+)\)", text)
dead = [l for l in links if "://" not in l and not (path.parent / l).exists()]
def test(ok, name, why):
    print(f"TEST: check {name} [{' OK ' if ok else 'FAIL'}] {why}")
    return ok
ok = test(len(lines) <= 150, "README.md at most 150 lines", f"{len(lines)} lines")
ok &= test(longest <= 10, "README.md no paragraph over ten lines", f"longest {longest}")
ok &= test(links and not dead, "README.md links name files of the repository",
           f"{len(links)} links" + (f"; dead: {' '.join(dead)}" if dead else ""))
sys.exit(0 if ok else 1)
PY

# The refusal: before any build, so quick; the names listed.
t0=$(date +%s.%N)
make --no-print-directory check FIX=no-such-fix > "$tmp/refused.out" 2>&1
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if ((rc == 2)) && grep -q "no fix or report named 'no-such-fix'" "$tmp/refused.out" \
   && grep -q "buffer-aware-pending" "$tmp/refused.out" && grep -q "03-persistence" "$tmp/refused.out" \
   && ! grep -q "^== " "$tmp/refused.out"; then
    test_ok "check an unknown fix is refused before any build, naming the valid ones" "exit 2 in $secs s"
else
    test_fail "check an unknown fix is refused before any build, naming the valid ones" \
        "exit $rc in $secs s: $(head -c 400 "$tmp/refused.out")"
    failed=1
fi

if [ ! -x build/fpc-trunk/bin/fpc ]; then
    test_skip "check FIX=buffer-aware-pending" "no trunk toolchain (make fpc-trunk)"
    exit $((failed ? KSFT_FAIL : KSFT_SKIP))
fi

make --no-print-directory check FIX=buffer-aware-pending > "$tmp/check.out" 2>&1
rc=$?
cat "$tmp/check.out"
if ((rc == 0)) && grep -Eq '^B2 +stock REPRO +fix fixed$' "$tmp/check.out" \
   && grep -Eq '^hazards +[1-9][0-9]* of [1-9][0-9]* checks as expected' "$tmp/check.out" \
   && grep -Eq '^fpcunit +[1-9][0-9]* of [1-9][0-9]* checks as expected' "$tmp/check.out" \
   && [[ $(tail -1 "$tmp/check.out") == "check buffer-aware-pending: PASS" ]]; then
    test_ok "check FIX=buffer-aware-pending: B2 REPRO on stock, fixed with the fix, PASS"
else
    test_fail "check FIX=buffer-aware-pending: B2 REPRO on stock, fixed with the fix, PASS" "exit $rc"
    failed=1
fi

# The check can fail: the fix's Pascal patch replaced by one that changes
# a comment only.
mkdir -p "$tmp/noop"
cp patches/fpc/series patches/fpc/*.patch "$tmp/noop/"
cp tests/check/no-op-b2.fpc.patch "$tmp/noop/buffer-aware-pending.patch"
KIT_FPC_PATCHES=$tmp/noop python3 repro/harness/checkfix.py --no-hazards --no-fpcunit buffer-aware-pending \
    > "$tmp/noop.out" 2>&1
rc=$?
if ((rc == 1)) && grep -Eq '^B2 +stock REPRO +fix REPRO' "$tmp/noop.out" \
   && [[ $(tail -1 "$tmp/noop.out") == "check buffer-aware-pending: FAIL" ]]; then
    test_ok "check a fix that changes nothing fails: B2 REPRO with it" "exit 1"
else
    test_fail "check a fix that changes nothing fails: B2 REPRO with it" "exit $rc: $(tail -5 "$tmp/noop.out")"
    failed=1
fi
# A maintainer's tree that carries the fix already.
snapshot=$top/../shared/upstream/fpcsource-1dba64b-min.tar.xz
if [[ ! -f $snapshot ]]; then
    test_skip "check FPCSRC= a tree carrying the fix" "no snapshot $snapshot"
elif ! grep -q "^src=$(sha256sum < "$snapshot" | cut -c1-16) " build/fpc-trunk/stamp; then
    test_skip "check FPCSRC= a tree carrying the fix" "the toolchain is not the snapshot's (make fpc-trunk)"
else
    mkdir -p "$tmp/tree"
    tar -xJf "$snapshot" -C "$tmp/tree" && patch -s -p1 -d "$tmp/tree" < patches/fpc/buffer-aware-pending.patch
    python3 repro/harness/checkfix.py --keep-toolchain --no-hazards --fpcsrc "$tmp/tree" buffer-aware-pending \
        > "$tmp/tree.out" 2>&1
    rc=$?
    if ((rc == 0)) && grep -q '^== trunk toolchain: kept' "$tmp/tree.out" \
       && grep -q "it carries the kit's fix" "$tmp/tree.out" \
       && grep -Eq '^B2 +stock REPRO +fix fixed$' "$tmp/tree.out"; then
        test_ok "check FPCSRC= a tree carrying the fix: stock (reversed) REPRO, the tree fixed, no toolchain build"
    else
        test_fail "check FPCSRC= a tree carrying the fix: stock (reversed) REPRO, the tree fixed, no toolchain build" \
            "exit $rc: $(tail -8 "$tmp/tree.out")"
        failed=1
    fi
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
