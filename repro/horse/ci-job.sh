#!/usr/bin/env bash
# repro/horse/ci-job.sh - the Linux job Horse's workflow gets from
# patches/horse/ci-fpc-connections.patch (fpc-connections), run here from a
# copy of the Horse snapshot with the job's files, by repro/horse/ci_job.py
# (its own shell steps, as written; what GitHub's runner provides emulated:
# checkout, actions/cache, apt-get, the FPCSource download):
#   patched    ff41415 + every patch in patches/horse/       the job passes
#   unpatched  ff41415 + the CI patch + the tests the fix    the job fails, in
#              patches add, their src/ changes left out      its test steps
# The unpatched run goes on past the first failure (--keep-going) so that
# every test step shows that it fails, and that the setup steps pass.  The
# two run side by side; the unpatched one restores the trunk build the
# patched one saved.
# The trunk build the job caches (actions/cache) is kept in
# build/horse-ci/cache/ (the first run cycles the compiler, ~1-2 min).
# HORSESRC: the Horse tree (default ../shared/upstream/horse-ff41415.tar.xz);
# FPCSRC: the FPCSource tree the job's pinned commit stands for (default the
# 1dba64b snapshot: the commit the job pins).
# Exit: 0 as expected, 1 not, 4 skipped.
set -uo pipefail
kit_name=horse-ci-job
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
fpcsrc=${FPCSRC:-$top/../shared/upstream/fpcsource-1dba64b-min.tar.xz}
require_command git git horse-ci-job
[[ -e $horsesrc ]] || { test_skip horse-ci-job "no Horse tree at $horsesrc (HORSESRC=...)"; exit $KSFT_SKIP; }
[[ -e $fpcsrc ]] || { test_skip horse-ci-job "no FPCSource at $fpcsrc (FPCSRC=...)"; exit $KSFT_SKIP; }
yaml_python horse-ci-job || exit $KSFT_SKIP   # ci_job.py reads the workflow
command -v ppcx64 > /dev/null || { test_skip horse-ci-job "no fpc (the job bootstraps trunk with it)"; exit $KSFT_SKIP; }
kit_mktemp tmp
G=(-c user.name=kit -c user.email=kit@localhost)

# tree NAME: the Horse tree as a git repository, in $tmp/NAME.
tree() {
    local d=$tmp/$1
    mkdir -p "$d"
    if [[ -f $horsesrc ]]; then tar -C "$d" -xf "$horsesrc"; else cp -a "$horsesrc"/. "$d"/; rm -rf "$d/.git"; fi
    git -C "$d" init -q && git -C "$d" add -A && git -C "$d" "${G[@]}" commit -qm "Horse tree"
    echo "$d"
}
mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/horse/series")
patched=$(tree patched) unpatched=$(tree unpatched)
for p in "${patches[@]}"; do
    git -C "$patched" "${G[@]}" am -q "$top/patches/horse/$p" || die "$p does not git am"
    git -C "$unpatched" "${G[@]}" am -q "$top/patches/horse/$p" || die "$p does not git am"
done
# Unpatched: the fixes' src/ changes reverted, their tests and the job kept.
git -C "$unpatched" checkout -q HEAD~${#patches[@]} -- src
git -C "$unpatched" diff --cached --quiet -- src && die "the patches change nothing in src/"

failed=0
# job NAME TREE [OPTIONS]: the job on TREE, its lines in $tmp/NAME.log, its
# exit in $tmp/NAME.rc; $tmp/NAME.done when it has ended (its cache saved).
job() {
    local name=$1 d=$2
    shift 2
    "$yaml_py" "$top/repro/horse/ci_job.py" "$d" fpc-connections --cache "$top/build/horse-ci/cache" \
        --source FPC_SOURCE_URL="$fpcsrc" "$@" > "$tmp/$name.log" 2>&1
    echo $? > "$tmp/$name.rc"
    touch "$tmp/$name.done"
}
judge() {   # judge NAME WANT
    local name=$1 want=$2 rc
    rc=$(cat "$tmp/$name.rc")
    # The job's lines indented: the unpatched job's FAIL lines are expected,
    # and a line that starts with FAIL is where CI's excerpt of the output
    # looks first.
    echo "# fpc-connections on the $name tree"
    sed 's/^/  | /' "$tmp/$name.log"
    case $rc:$want in
    0:pass) test_ok "horse-ci-job $name" "the job passes" ;;
    1:fail)
        # Only the tests' steps may fail; the setup (install, trunk build) must pass.
        if grep '^FAIL step' "$tmp/$name.log" | grep -qv -e 'Connection close announced' -e 'Pipelined requests'; then
            test_fail "horse-ci-job $name" "a setup step failed: $(grep '^FAIL step' "$tmp/$name.log" | head -1)"; failed=1
        else
            test_ok "horse-ci-job $name" "fails, as it must: $(grep -c '^FAIL step' "$tmp/$name.log") test steps failed"
        fi ;;
    4:*) test_skip "horse-ci-job $name" "$(grep '^SKIP' "$tmp/$name.log" | head -1)"; return 4 ;;
    *)   test_fail "horse-ci-job $name" "expected the job to $want (exit $rc)"; failed=1 ;;
    esac
}
# An unanswered pipelined batch waits out the test's bound (30 s in Horse's
# CI); a server that answers does so in milliseconds, so 3 s here.
export PIPELINING_TIMEOUT=3
# The two jobs side by side, as two runs on GitHub's runners would be; the
# unpatched one's cache step waits for the patched job's end, so that it
# restores the trunk build that job saved (as a later run does) rather than
# cycling the same compiler a second time beside it.
job patched "$patched" &
job unpatched "$unpatched" --keep-going --cache-after "$tmp/patched.done" &
wait
judge patched pass || exit $KSFT_SKIP
judge unpatched fail || exit $KSFT_SKIP
exit $((failed ? KSFT_FAIL : KSFT_PASS))
