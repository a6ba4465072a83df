#!/usr/bin/env bash
# scripts/check-horse-patches.sh - check the Horse-side patches
# (patches/horse/: only what Horse has not merged) and the kit's simulations
# of merged Horse fixes (repro/horse/sim/: matrix rows only) against the
# Horse tree (HORSESRC, default the snapshot
# ../shared/upstream/horse-ff41415.tar.xz).  One TEST line per check:
#   series-file  series and folder agree (both folders)
#   message      each Horse patch's commit message is Horse's own form
#                (its history: a subject such as `fix(core): ...`, a plain
#                body, no field lines) and its author no placeholder
#   fields       the kit's fields of each Horse patch (its stanza in
#                patches/horse/fields; a simulation's in its own DEP-3
#                header, with Description and Author): Mitigates: B<n>,
#                Platforms (unix, windows or all), Horse-Routine, Forwarded,
#                Last-Update (YYYY-MM-DD), optional Defect: H<n>, optional
#                Provider (fpc, epoll, or none: no provider code), optional
#                Needs: <an earlier patch>
#   git-am       each Horse patch ALONE on a fresh repository of the tree
#                (ff41415), its tests.yml hunks left out (they are written
#                for Horse's master, whose FPC jobs ff41415 has not); the
#                simulations in order, as rows build them
#   current      each Horse patch ALONE, whole, on Horse's master as
#                reconstructed (repro/horse/current/MANIFEST; the tree is
#                HORSE_CURRENT, default build/horse/current/ when it is
#                there, else skipped): the tree's files against the
#                MANIFEST, then git am; a patch that changes a file the
#                MANIFEST could not reconstruct is skipped, not passed
#   tests        each Horse patch adds its test in Horse's layout:
#                tests/fpc-<topic>/run-<name>-test.sh
#   ci           each Horse patch's tests.yml hunks run that test
#   same-check   the keep-alive check a patch offers Horse
#                (tests/fpc-keepalive/keepalive_check.py) has the code of
#                repro/horse/kaclient.py, which check.sh --kit proves
#   own-pids     each of those tests, run here with the system fpc under
#                strace, signals no PID it has already waited for (skipped
#                without strace or fpc)
#   not-merged   no Horse patch says it is already upstream (Forwarded:
#                not-needed belongs to a simulation in repro/horse/sim/)
#   compile      every Horse set the matrix rows use (repro/horse/rows.py:
#                each patch with those it needs) builds with the trunk
#                compiler for Linux and for win64 (repro/horse/build.sh; cached)
# Exit: 0 all passed, 1 a check failed, 4 skipped (no git, no Horse tree).
set -uo pipefail
export LC_ALL=C
kit_name=check-horse-patches
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

dir=$top/patches/horse
simdir=$top/repro/horse/sim
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
require_command git git horse-patch
[[ -e $horsesrc ]] || { test_skip horse-patch "no Horse tree at $horsesrc (HORSESRC=...)"; exit $KSFT_SKIP; }
failed=0
ok()   { test_ok "horse-patch $1"; }
fail() { test_fail "horse-patch $1" "$2"; failed=1; }

series_names() { sed -e 's/#.*//' -e 's/\.patch[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$1/series"; }
mapfile -t names < <(series_names "$dir")
mapfile -t sims < <(series_names "$simdir")
for d in "$dir" "$simdir"; do
    listed=$(series_names "$d" | sort) present=$(cd "$d" && ls ./*.patch | sed 's|^\./||; s/\.patch$//' | sort)
    [[ $listed == "$present" ]] && ok "series-file ${d#"$top"/}" || fail "series-file ${d#"$top"/}" "series: $listed; folder: $present"
done
stanzas=$(sed -n 's/^Patch: *//p' "$dir/fields" | sort)
[[ $stanzas == "$(series_names "$dir" | sort)" ]] && ok "fields-file (a stanza per patch)" \
    || fail "fields-file (a stanza per patch)" "stanzas: $stanzas; series: $(series_names "$dir" | sort)"

# check_fields FILE POSITION REQUIRED: why the fields of FILE (a patch's
# message, or a stanza of patches/horse/fields) are not the kit's form.
check_fields() {
    awk -v pos="$2" -v series=" ${names[*]} " -v required="$3" '
    /^---$/ { exit }
    !body && /^$/ { body = 1; next }
    body && /^[A-Za-z][A-Za-z-]*: / {
        f = $0; sub(/:.*/, "", f); v = $0; sub(/^[^:]*: */, "", v); n[f]++
        if (f == "Mitigates" && v !~ /^B[0-9]+$/) print "Mitigates is not B<n>: " v
        else if (f == "Platforms" && v !~ /^(unix|windows|all)( (unix|windows))*$/) print "Platforms: " v
        else if (f == "Defect" && v !~ /^H[0-9]+$/) print "Defect is not H<n>: " v
        else if (f == "Last-Update" && v !~ /^[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]$/) print "Last-Update: " v
        else if (f == "Needs") {
            i = index(series, " " v " ")
            if (i == 0 || split(substr(series, 1, i), b, " ") >= pos) print "Needs names no earlier patch: " v
        } else if (f == "Provider" && v !~ /^(fpc|epoll|none)$/) print "Provider: " v
        else if (f !~ /^(Description|Author|Mitigates|Platforms|Defect|Provider|Needs|Horse-Routine|Forwarded|Last-Update)$/)
            print "field not in the kit form: " f
    }
    END {
        split(required, req, " ")
        for (k in req) if (n[req[k]] != 1) print req[k] " appears " (n[req[k]] + 0) " times"
    }' "$1"
}

# check_message PATCH: prints why a Horse patch's commit message is not in
# Horse's form (as scripts/check-fpc-patches.sh does for FPC's).
check_message() {
    local info
    info=$(git mailinfo "$tmp/msg" /dev/null < "$1" 2>/dev/null) || { echo "git mailinfo cannot read it"; return; }
    grep -qE '^Subject: [a-z]+(\([a-z0-9, -]+\))?: [^ ]' <<< "$info" \
        || echo "the subject is not Horse's form (type(scope): ...): $(sed -n 's/^Subject: //p' <<< "$info")"
    # (The author is the kit repository's identity: make upstream re-authors
    # the patches for the filing and refuses a placeholder there.)
    grep -nE '^[A-Z][A-Za-z-]*: ' "$tmp/msg" | head -2 | sed 's/^/a field line in the message (the kit'"'"'s fields are in patches\/horse\/fields), line /'
    [[ -s $tmp/msg ]] || echo "no body: say what the change does and how its test shows it"
}

kit_mktemp tmp
# fresh_repo DIR: a git repository of the Horse tree in DIR.
fresh_repo() {
    mkdir -p "$1"
    if [[ -f $horsesrc ]]; then tar -C "$1" -xf "$horsesrc"; else cp -a "$horsesrc"/. "$1"/; rm -rf "$1/.git"; fi
    git -C "$1" init -q && git -C "$1" add -A &&
        git -C "$1" -c user.name=kit -c user.email=kit@localhost commit -qm "Horse tree"
}
# own_pids PATCH REPO SCRIPT: SCRIPT (a test the CI steps of PATCH run),
# run as a step runs it with the system fpc under strace, signals no PID it
# has already waited for: by then the
# PID may be another process's.  Before 2026-12-06 both test scripts' EXIT
# traps sent SIGTERM to every server they had started, each long reaped;
# run beside the kit's matrix by the horse-ci step, such a stale SIGTERM
# stopped a real-trunk B8 server at its 354th connection (c107, twice in
# a row; c104 once): "stopping on signal" in its log, its listener gone.
own_pids() {
    local n=$1 repo=$2 f=$3 trace=$tmp/own-pids.trace stale
    grep -q "run: .*$f\b" "$dir/$n.patch" || return 0
    command -v strace > /dev/null || { test_skip "horse-patch $n own-pids ($f)" "no strace (Debian package strace)"; return; }
    command -v fpc > /dev/null || { test_skip "horse-patch $n own-pids ($f)" "no fpc (Debian package fpc)"; return; }
    local rc=0
    (cd "$repo" && timeout 600 strace -f -qq -e trace=kill,wait4 -e signal=none -o "$trace" \
        bash "$f" > "$tmp/own-pids.log" 2>&1) || rc=$?
    if ((rc == 4)); then   # the test skips itself (the system fpc is too old for it)
        test_skip "horse-patch $n own-pids ($f)" "$(grep -m1 '^SKIP' "$tmp/own-pids.log")"; return
    elif ((rc)); then
        fail "$n own-pids ($f)" "the test failed: $(tail -2 "$tmp/own-pids.log" | tr '\n' ' ')"; return
    fi
    # wait4 (whole or resumed) returning a PID reaps it; a kill() of it after
    # that is a stale signal.
    stale=$(awk '/wait4/ && / = [1-9][0-9]*$/ { reaped[$NF] = 1 }
                 match($0, /kill\([0-9]+, SIG[A-Z]+/) {
                     split(substr($0, RSTART + 5, RLENGTH - 5), a, ", ")
                     if (a[1] in reaped) printf "%s to %s; ", a[2], a[1] }' "$trace")
    if [[ -z $stale ]]; then ok "$n own-pids ($f: signals no PID it has waited for)"
    else fail "$n own-pids ($f)" "signals PIDs it had already waited for: $stale"; fi
}
am_ok=1
# The Horse patches: each alone on ff41415, and each brings its test.
pos=0
for n in "${names[@]}"; do
    pos=$((pos + 1))
    why=$(check_message "$dir/$n.patch")
    [[ -z $why ]] && ok "$n message (Horse's form)" || fail "$n message (Horse's form)" "$(tr '\n' ';' <<< "$why")"
    # Its stanza (read as rows.py reads it), as a message body for
    # check_fields (a blank line first).
    { echo; python3 "$top/repro/horse/rows.py" fields "$n"; } > "$tmp/fields-$n"
    why=$(check_fields "$tmp/fields-$n" "$pos" "Mitigates Platforms Horse-Routine Forwarded Last-Update")
    [[ -z $why ]] && ok "$n fields" || fail "$n fields" "$(tr '\n' ';' <<< "$why")"
    if grep -q '^Forwarded: not-needed' "$tmp/fields-$n"; then
        fail "$n not-merged" "Forwarded: not-needed: a fix Horse has is a simulation (repro/horse/sim/), not a Horse patch"
    else ok "$n not-merged"; fi
    repo=$tmp/alone-$n
    fresh_repo "$repo"
    if git -C "$repo" -c user.name=kit -c user.email=kit@localhost am -q --exclude=.github/workflows/tests.yml \
            "$dir/$n.patch" > "$tmp/am.log" 2>&1; then
        ok "$n git-am (alone on the Horse tree, its tests.yml hunks left out)"
        t=$(git -C "$repo" diff --name-only --diff-filter=A HEAD~1 -- tests/ | grep -E '^tests/fpc-[a-z0-9-]+/run-[a-z0-9-]+-test\.sh$' | tr '\n' ' ')
        if [[ -n $t ]]; then ok "$n tests ($t)"
        else fail "$n tests" "adds no tests/fpc-<topic>/run-<name>-test.sh (added: $(git -C "$repo" diff --name-only --diff-filter=A HEAD~1 -- tests/ | tr '\n' ' '))"; fi
        for f in $t; do
            # The workflow hunks (+ lines of the patch's tests.yml part) run it.
            if awk '/^diff --git a\/.github\/workflows\/tests.yml/ { w = 1; next } /^diff --git/ { w = 0 } w && /^\+/' \
                    "$dir/$n.patch" | grep -q "run: .*$f\b"; then ok "$n ci (tests.yml runs $f)"
            else fail "$n ci" "no tests.yml step of the patch runs $f"; fi
            own_pids "$n" "$repo" "$f"
        done
        # The keep-alive check offered to Horse is the kit's kaclient.py (the
        # one repro/horse/check.sh --kit proves on #562's servers): the same
        # code below its docstring.
        k=$repo/tests/fpc-keepalive/keepalive_check.py
        if [[ -f $k ]]; then
            if cmp -s <(sed -n '/^from __future__/,$p' "$k") <(sed -n '/^from __future__/,$p' "$top/repro/horse/kaclient.py"); then
                ok "$n same-check (keepalive_check.py is repro/horse/kaclient.py's code)"
            else fail "$n same-check" "tests/fpc-keepalive/keepalive_check.py's code is not repro/horse/kaclient.py's"; fi
        fi
    else
        fail "$n git-am (alone on the Horse tree)" "$(head -3 "$tmp/am.log" | tr '\n' ' ')"; am_ok=0
    fi
done
# Horse's master as reconstructed (repro/horse/current/MANIFEST): its files
# checked against the MANIFEST, then each patch alone, whole.
current=${HORSE_CURRENT:-$top/build/horse/current}
manifest=$top/repro/horse/current/MANIFEST
if [[ ! -d $current/src ]]; then
    test_skip "horse-patch current" "no reconstructed Horse master at $current (HORSE_CURRENT=DIR: see repro/horse/current/MANIFEST)"
else
    missing=() differ=()
    while read -r path commit chars sum; do
        [[ $commit == - ]] && { missing+=("$path"); continue; }
        if [[ ! -f $current/$path ]]; then differ+=("$path: absent")
        elif [[ $(sha256sum < "$current/$path" | cut -d' ' -f1) != "$sum" ]]; then
            differ+=("$path: not the text of $commit (${chars} chars; here $(wc -m < "$current/$path"))")
        fi
    done < <(sed -e '/^#/d' -e '/^[[:space:]]*$/d' "$manifest")
    if ((${#differ[@]})); then
        # A maintainer's checkout of Horse's master is newer than the MANIFEST:
        # said, not required.
        echo "# horse-patch current: $current is not the MANIFEST's reconstruction: ${differ[*]}"
    else
        ok "current tree (the MANIFEST's files, by size and sha256)"
    fi
    for n in "${names[@]}"; do
        repo=$tmp/current-$n
        mkdir -p "$repo"
        cp -a "$current"/. "$repo"/; rm -rf "$repo/.git"
        git -C "$repo" init -q && git -C "$repo" add -A &&
            git -C "$repo" -c user.name=kit -c user.email=kit@localhost commit -qm "Horse master (reconstructed)"
        touched=$(sed -n 's|^diff --git a/\([^ ]*\) .*|\1|p' "$dir/$n.patch")
        unknown=()
        for m in "${missing[@]}"; do grep -qxF "$m" <<< "$touched" && unknown+=("$m"); done
        if ((${#unknown[@]})) && ((${#differ[@]})); then :   # a real checkout: every file is there
        elif ((${#unknown[@]})); then
            test_skip "horse-patch $n current" "changes ${unknown[*]}, which the MANIFEST could not reconstruct (HORSE_CURRENT=<a checkout of Horse's master>)"
            continue
        fi
        if git -C "$repo" -c user.name=kit -c user.email=kit@localhost am -q "$dir/$n.patch" > "$tmp/am.log" 2>&1; then
            ok "$n current (alone, whole, on Horse's master as reconstructed)"
        else
            fail "$n current" "$(head -3 "$tmp/am.log" | tr '\n' ' ')"
        fi
    done
fi

# The simulations: in order, as repro/horse/build.sh applies them.
repo=$tmp/sims
fresh_repo "$repo"
names=("${sims[@]}") pos=0
for n in "${sims[@]}"; do
    pos=$((pos + 1))
    why=$(check_fields "$simdir/$n.patch" "$pos" "Description Author Mitigates Platforms Horse-Routine Forwarded Last-Update")
    [[ -z $why ]] && ok "sim $n fields" || fail "sim $n fields" "$(tr '\n' ';' <<< "$why")"
    if git -C "$repo" -c user.name=kit -c user.email=kit@localhost am -q "$simdir/$n.patch" > "$tmp/am.log" 2>&1; then ok "sim $n git-am"
    else fail "sim $n git-am" "$(head -3 "$tmp/am.log" | tr '\n' ' ')"; git -C "$repo" am --abort 2> /dev/null; am_ok=0; break; fi
done

# Compile: every Horse set a row or the horse check (check.sh --kit) uses,
# Linux and win64 (their own builds).
if ((am_ok)) && [[ -x $top/build/fpc-trunk/bin/fpc ]]; then
    while read -r tc set hset prog; do
        [[ $hset == stock || $set != stock ]] && continue
        if out=$("$top/repro/horse/build.sh" --tc "$tc" --set "$set" --horse "$hset" --program "$prog" 2>&1); then
            ok "$hset compile-$tc-$prog"
        else
            fail "$hset compile-$tc-$prog" "$(tail -3 <<< "$out" | tr '\n' ' ')"
        fi
    done < <(python3 "$top/repro/horse/rows.py" builds --test)
else
    test_skip "horse-patch compile" "no trunk toolchain (make fpc-trunk) or the series did not apply"
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
