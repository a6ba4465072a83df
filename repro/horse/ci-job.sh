#!/usr/bin/env bash
# repro/horse/ci-job.sh - the CI steps the Horse patches add to Horse's
# tests.yml, run here by repro/horse/ci_job.py (their own shell steps, as
# written; what GitHub's runner provides emulated: checkout, apt-get):
#   announce-close        steps "Connection close announced" in Horse's jobs
#                         test (FPC 3.2.2) and fpc-trunk-keepalive (trunk)
#   epoll-keep-pipelined  job fpc-epoll-pipelining (FPC 3.2.2)
#   keepalive-ratio-check step "Keep-alive responses not held back" in
#                         fpc-trunk-keepalive (trunk)
# Horse's own steps in those jobs (Boss, its Console tests, the trunk
# download and build) are not run: in fpc-trunk-keepalive the kit's trunk
# (build/fpc-trunk, with the package sources Horse needs) stands for the
# trunk that job builds and puts on PATH.
# The workflow is Horse's master as reconstructed (HORSE_CURRENT, default
# build/horse/current/; repro/horse/current/MANIFEST) with every Horse patch;
# the tree it runs in is the Horse snapshot (HORSESRC, default ff41415: the
# reconstruction does not compile) with the kit's simulations of #563 and
# #566 (repro/horse/sim/: what master has of them) and every patch but its
# tests.yml hunks, and the files of master the steps use that ff41415 lacks
# (tests/src/FPCHttpKeepAliveServer.dpr):
#   patched    simulations and patches               each step passes
#   unpatched  the patches' tests, src/ the          each test step fails
#              snapshot's (before #563 and the fixes) (setup steps pass)
# The unpatched jobs go on past the first failure (--keep-going) so that
# every test step shows that it fails.
# Exit: 0 as expected, 1 not, 4 skipped.
set -uo pipefail
kit_name=horse-ci-job
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
current=${HORSE_CURRENT:-$top/build/horse/current}
require_command git git horse-ci-job
[[ -e $horsesrc ]] || { test_skip horse-ci-job "no Horse tree at $horsesrc (HORSESRC=...)"; exit $KSFT_SKIP; }
[[ -f $current/.github/workflows/tests.yml ]] ||
    { test_skip horse-ci-job "no reconstructed Horse master at $current (HORSE_CURRENT=DIR: repro/horse/current/MANIFEST)"; exit $KSFT_SKIP; }
yaml_python horse-ci-job || exit $KSFT_SKIP   # ci_job.py reads the workflow
command -v fpc > /dev/null || { test_skip horse-ci-job "no fpc (Debian package fpc: the jobs' FPC 3.2.2)"; exit $KSFT_SKIP; }
kit_mktemp tmp
G=(-c user.name=kit -c user.email=kit@localhost)

# tree NAME SRC: SRC (a tarball or a folder) as a git repository, in $tmp/NAME.
tree() {
    local d=$tmp/$1 src=$2
    mkdir -p "$d"
    if [[ -f $src ]]; then tar -C "$d" -xf "$src"; else cp -a "$src"/. "$d"/; rm -rf "$d/.git"; fi
    git -C "$d" init -q && git -C "$d" add -A && git -C "$d" "${G[@]}" commit -qm "Horse tree"
    echo "$d"
}
mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/horse/series")
mapfile -t sims < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/repro/horse/sim/series")
patched=$(tree patched "$horsesrc") unpatched=$(tree unpatched "$horsesrc") wf=$(tree workflow "$current")
base=$(git -C "$unpatched" rev-parse HEAD)
for p in "${sims[@]}"; do
    for d in "$patched" "$unpatched"; do
        git -C "$d" "${G[@]}" am -q "$top/repro/horse/sim/$p" || die "$p does not git am on $horsesrc"
    done
done
for p in "${patches[@]}"; do
    git -C "$wf" "${G[@]}" am -q "$top/patches/horse/$p" || die "$p does not git am on $current"
    for d in "$patched" "$unpatched"; do
        git -C "$d" "${G[@]}" am -q --exclude=.github/workflows/tests.yml "$top/patches/horse/$p" || die "$p does not git am on $horsesrc"
    done
done
# Unpatched: src/ the snapshot's (no #563, no fix), the patches' tests kept.
git -C "$unpatched" checkout -q "$base" -- src
git -C "$unpatched" diff --cached --quiet -- src && die "the simulations and patches change nothing in src/"
for d in "$patched" "$unpatched"; do
    cp "$wf/.github/workflows/tests.yml" "$d/.github/workflows/tests.yml"
    for f in tests/src/FPCHttpKeepAliveServer.dpr; do
        [[ -f $d/$f || ! -f $current/$f ]] || { mkdir -p "$(dirname "$d/$f")"; cp "$current/$f" "$d/$f"; }
    done
done

# The trunk the job fpc-trunk-keepalive installs: the kit's, with the
# package sources Horse uses beside fphttpserver's (as repro/horse/build.sh).
trunk=$tmp/trunk-bin
if [[ -x $top/build/fpc-trunk/bin/fpc ]]; then
    mkdir -p "$trunk"
    p=$top/build/fpc-trunk/src/packages
    cat > "$trunk/fpc" <<WRAP
#!/bin/sh
exec "$top/build/fpc-trunk/bin/fpc" -Fu$p/rtl-generics/src -Fi$p/rtl-generics/src/inc -Fu$p/fcl-xml/src -Fi$p/fcl-xml/src -Fu$p/regexpr/src -Fi$p/rtl-objpas/src/x86_64 "\$@"
WRAP
    chmod +x "$trunk/fpc"
fi

steps='Connection close announced|Pipelined requests|Keep-alive responses not held back'
# The jobs to run: JOB OPTIONS, from the patched workflow.
"$yaml_py" - "$wf/.github/workflows/tests.yml" "$steps" > "$tmp/jobs" <<'PY' || die "cannot read the patched workflow"
import re, sys, yaml
jobs = yaml.safe_load(open(sys.argv[1]))["jobs"]
for name, job in jobs.items():
    if job.get("runs-on") != "ubuntu-latest":
        continue
    names = [s.get("name") or "" for s in job["steps"]]
    if not any(re.search(sys.argv[2], n) for n in names):
        continue
    # A job of a patch's own runs whole; in one of Horse's, only its steps.
    own = all(re.search(sys.argv[2], n) or s.get("uses") or "apt-get install" in str(s.get("run", ""))
              for n, s in zip(names, job["steps"]))
    print(name, "whole" if own else "only")
PY
failed=0
# run NAME TREE: every job of $tmp/jobs on TREE, one after the other; the
# lines in $tmp/NAME.log, a job's exit in $tmp/NAME.JOB.rc.
run() {
    local name=$1 d=$2 job how opts
    shift 2
    while read -r job how; do
        opts=("$@")
        [[ $how == only ]] && opts+=(--only "$steps")
        if [[ $job == fpc-trunk-keepalive ]]; then
            [[ -x $trunk/fpc ]] || { echo "SKIP job $job: no trunk toolchain (make fpc-trunk)" >> "$tmp/$name.log"; echo 4 > "$tmp/$name.$job.rc"; continue; }
            # The kit's trunk compiles the package units from source, where
            # the job's installed trunk has them built: 3 x its steps' bounds.
            opts+=(--path "$trunk" --timeout-scale 3)
        fi
        if [[ $how == only ]]; then echo "# job $job (the patches' steps)"; else echo "# job $job (whole)"; fi >> "$tmp/$name.log"
        "$yaml_py" "$top/repro/horse/ci_job.py" "$d" "$job" "${opts[@]}" >> "$tmp/$name.log" 2>&1
        echo $? > "$tmp/$name.$job.rc"
    done < "$tmp/jobs"
}
judge() {   # judge NAME WANT
    local name=$1 want=$2 job how rc
    echo "# the Horse patches' CI steps on the $name tree"
    sed 's/^/  | /' "$tmp/$name.log"
    while read -r job how; do
        rc=$(cat "$tmp/$name.$job.rc")
        case $rc:$want in
        0:pass) test_ok "horse-ci-job $name $job" "its steps pass" ;;
        1:fail)
            # Only the tests' steps may fail; the setup (install) must pass.
            if sed -n "/^# job $job (/,/^# job /p" "$tmp/$name.log" | grep '^FAIL step' | grep -qvE "$steps"; then
                test_fail "horse-ci-job $name $job" "a setup step failed"; failed=1
            else
                test_ok "horse-ci-job $name $job" "fails, as it must: $(sed -n "/^# job $job (/,/^# job /p" "$tmp/$name.log" | grep -c '^FAIL step') test steps failed"
            fi ;;
        4:*) test_skip "horse-ci-job $name $job" "$(grep "^SKIP.*$job" "$tmp/$name.log" | head -1)" ;;
        *)   test_fail "horse-ci-job $name $job" "expected its steps to $want (exit $rc)"; failed=1 ;;
        esac
    done < "$tmp/jobs"
}
# An unanswered pipelined batch waits out the test's bound (30 s in Horse's
# CI); a server that answers does so in milliseconds, so 3 s here.
export PIPELINING_TIMEOUT=3
run patched "$patched" &
run unpatched "$unpatched" --keep-going &
wait
judge patched pass
judge unpatched fail
exit $((failed ? KSFT_FAIL : KSFT_PASS))
