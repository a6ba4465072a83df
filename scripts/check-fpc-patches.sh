#!/usr/bin/env bash
# scripts/check-fpc-patches.sh [SRC] - check the upstream Pascal patch series
# (patches/fpc/) against an FPCSource tree.
#
# SRC is an FPCSource tree (a directory; default build/fpc-trunk/src, the
# pristine copy scripts/fpc-trunk.sh made).  It is only read.  For each patch
# in patches/fpc/series, one TEST line per check:
#   form         git format-patch form: From <sha> Mon Sep 17 00:00:00 2001,
#                From:, Date:, Subject: [PATCH], body, ---, diffstat,
#                diff --git with index lines
#   message      a contributor's commit for FPC: the subject names the
#                package ("fcl-web: ") in at most 72 characters, the body
#                carries no DEP-3 field (those stay in the model's
#                patches/<name>.patch).  (FPC's own commits are mostly a
#                subject alone starting with "* "; a body explains a
#                contributor's change.  The author here is the kit's working
#                identity: make upstream re-authors every commit.)
# then for the series:
#   series-file  series and folder agree
#   in-order     git am of the whole series into a throwaway git repository
#                of the pristine files it touches (each patch is cut on the
#                one before: git am takes nothing else)
#   compile      the patched units fphttpserver needs compile with the trunk
#                compiler (build/fpc-trunk/bin/fpc) with no warning or note
#                for fphttpserver.pp / ssockets.pp that stock does not have
# and for every set make real-trunk builds but all (each fix, each pair):
#   alone        repro/fpc/build.sh's overlay for the set (patch, with its
#                fuzz, on pristine copies) is byte for byte what git
#                cherry-pick of the same commits onto the pristine files
#                makes (a 3-way merge: the stacked patches' context lines of
#                fixes the set leaves out are no part of the change)
#   compile      as above, for the set's overlay
# and for the filing (make upstream, scripts/upstream.sh, with a test
# identity), per report (report-NN-topic, report-confidential):
#   author-subject  every commit by the filer, subjects <= 72 characters
#   length       report.md at most 100 lines (and the cover at most 60)
#   alone        git am of the report's commits, and of no other report's,
#                on the pristine files
#   compile      as above, for that tree
# then reports in-order (git am of all, in their order, no 3-way), upstream
# public-texts (no public file names smuggling), upstream security-files
# (every kit file naming it is in report/confidential/ or named by its
# README.md), upstream refuses-HOST (placeholder identities),
# refuses-git-config-none and -placeholder (no --author: git config's
# identity, none or a placeholder) and refuses-malformed
# (a placeholder identity exits non-zero, saying why, writing nothing);
# and fpc-series current: scripts/fpc-series.sh --check (the committed series
# is what the generator makes of it), and nodelay-guard:
# scripts/check-nodelay-guard.py (set-tcp-nodelay's identifiers are declared,
# under its guard, on every target of fphttpserver).
# Compiles run concurrently, at most nproc at a time.
# Exit: 0 all passed, 1 a check failed, 4 skipped (no trunk toolchain, no git).
set -uo pipefail
export LC_ALL=C
kit_name=check-fpc-patches
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

src=${1:-$top/build/fpc-trunk/src}
fpc=$top/build/fpc-trunk/bin/fpc
dir=${KIT_FPC_PATCHES:-$top/patches/fpc}   # another folder: to test this script
# The source files whose compiler messages are compared with stock's.
WATCHED='(fphttpserver|ssockets)\.pp'

[ -x "$fpc" ] || { test_skip fpc-patch "no trunk toolchain at build/fpc-trunk (make fpc-trunk)"; exit $KSFT_SKIP; }
[ -d "$src/packages" ] || { test_skip fpc-patch "no FPCSource tree at $src"; exit $KSFT_SKIP; }
require_command git git fpc-patch
[ -f "$dir/series" ] || { test_fail "fpc-patch series series-file" "no $dir/series"; exit $KSFT_FAIL; }

mapfile -t names < <(sed -e 's/#.*//' -e 's/\.patch[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$dir/series")
kit_mktemp tmp
failed=0
ok()   { test_ok "fpc-patch $1 $2"; }
fail() { test_fail "fpc-patch $1 $2" "$3"; failed=1; }

# check_form PATCH: prints why the patch is not in git format-patch form.
check_form() {
    # Header lines unfolded (git folds a long From: or Subject:).
    awk '!h && /^$/ { h = 1 } !h && /^[ \t]/ { sub(/^[ \t]+/, " "); line = line $0; next }
         { if (NR > 1) print line; line = $0 } END { print line }' "$1" | awk '
    NR == 1 { if ($0 !~ /^From [0-9a-f]+ Mon Sep 17 00:00:00 2001$/ || length($2) != 40) { print "line 1 is not the format-patch From line"; bad = 1; exit } next }
    !hdr_end && /^From: .+ <[^ >]+@[^ >]+>$/ { from = 1 }
    !hdr_end && /^Date: / { date = 1 }
    !hdr_end && /^Subject: \[PATCH[^]]*\] [^ ]/ { subj = 1 }
    !hdr_end && /^$/ { hdr_end = 1; next }
    hdr_end && /^---$/ && !diff { sep = 1 }
    sep && /^ [^ ].*\| +[0-9]+ /{ stat = 1 }
    /^diff --git a\/[^ ]+ b\/[^ ]+$/ { diff++; idx_due = 1; next }
    idx_due && /^index [0-9a-f]+\.\.[0-9a-f]+( [0-7]+)?$/ { idx++; idx_due = 0 }
    END {
        if (bad) exit
        if (!from) print "no From: Name <e-mail> header"
        else if (!date) print "no Date: header"
        else if (!subj) print "no Subject: [PATCH] header"
        else if (!sep) print "no --- line after the message"
        else if (!stat) print "no diffstat after ---"
        else if (!diff) print "no diff --git section"
        else if (idx != diff) print "a diff --git section has no index line"
    }'
}

# check_message PATCH: prints why the commit message is not in the form
# the message check above describes.
check_message() {
    local p=$1 info subject
    info=$(git mailinfo "$tmp/msg" /dev/null < "$p" 2>/dev/null) || { echo "git mailinfo cannot read it"; return; }
    subject=$(sed -n 's/^Subject: //p' <<< "$info")
    grep -q '^Subject: [a-z][a-z0-9-]*: [^ ]' <<< "$info" || echo "the subject does not start with the package (fcl-web: ...): $subject"
    ((${#subject} <= 72)) || echo "the subject has ${#subject} characters (at most 72): $subject"
    grep -nE "$KIT_DEP3_FIELDS" "$tmp/msg" | head -2 | sed 's/^/a DEP-3 field in the message, line /'
}

# pristine_repo DIR PATCH...: a git repository of the pristine files the
# patches touch, one commit.
pristine_repo() {
    local d=$1 f
    shift
    mkdir -p "$d"
    git -C "$d" init -q
    for f in $(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$@" | sort -u); do
        [ -f "$src/$f" ] || { echo "no $f in $src"; return 1; }
        mkdir -p "$d/$(dirname "$f")"
        cp "$src/$f" "$d/$f"
    done
    git -C "$d" add -A
    git -C "$d" -c user.name=pristine -c user.email=pristine@localhost commit -qm pristine
}

# compile_set NAME [OVERLAY]: compile (no link) a program using fphttpserver,
# the overlay's package folders searched first; log in $tmp/NAME.log.  A set
# starts from stock's units without those of the files its overlay holds, so
# the patched units (and what depends on them) are compiled, nothing else.
compile_set() {
    local name=$1 ov=${2:-} d f flags=() u=$tmp/units-$1
    mkdir -p "$u"
    if [ -n "$ov" ]; then
        cp -a "$tmp/units-stock/." "$u/"
        for d in packages/fcl-web/src/base packages/fcl-net/src; do
            [ -d "$ov/$d" ] || continue
            flags+=("-Fu$ov/$d" "-Fi$ov/$d")
            for f in "$ov/$d"/*.pp; do rm -f "$u/$(basename "$f" .pp)".{ppu,o}; done
        done
    fi
    nice -n 5 "$fpc" -Cn -vwn "${flags[@]}" -FU"$u" -FE"$u" "$tmp/p.pas" > "$tmp/$name.log" 2>&1
    echo $? > "$tmp/$name.rc"
}
cat > "$tmp/p.pas" <<'PAS'
program p;
uses cthreads, Classes, SysUtils, Sockets, ssockets, httpdefs, fphttpserver;
begin
end.
PAS

# Start compiles as soon as their overlay exists, nproc at a time.
jobs_max=$(nproc 2>/dev/null || echo 2)
spawn() {
    while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
    compile_set "$@" &
}
compile_set stock   # the others start from its units

# series-file: every patch listed exists, every patch file is listed.
missing=""
for n in "${names[@]}"; do [ -f "$dir/$n.patch" ] || missing+=" $n.patch"; done
for p in "$dir"/*.patch; do
    n=$(basename "$p" .patch)
    [[ " ${names[*]} " == *" $n "* ]] || missing+=" $n.patch(not listed)"
done
[ -z "$missing" ] && ok series series-file || fail series series-file "series and folder differ:$missing"

declare -A compiled
for n in "${names[@]}"; do
    p=$dir/$n.patch
    [ -f "$p" ] || continue
    why=$(check_form "$p"); [ -z "$why" ] && ok "$n" form || fail "$n" form "$why"
    why=$(check_message "$p" | head -3 | paste -sd';'); [ -z "$why" ] && ok "$n" message || fail "$n" message "$why"
done

# The whole series, in order: one commit per patch, commit i is names[i].
r=$tmp/repo-all
all=()
for n in "${names[@]}"; do [ -f "$dir/$n.patch" ] && all+=("$dir/$n.patch"); done
commits=()
if ((${#all[@]})) && pristine_repo "$r" "${all[@]}" >/dev/null 2>&1 \
   && why=$(git -C "$r" -c user.name=check -c user.email=check@localhost am -q "${all[@]}" 2>&1); then
    ok series in-order
    compiled[all]=1
    spawn all "$r"
    mapfile -t commits < <(git -C "$r" rev-list --reverse HEAD~${#all[@]}..HEAD)
else
    fail series in-order "$(head -1 <<< "${why:-no pristine copy}")"
fi

# Every set make real-trunk builds but stock and all: as build.sh applies
# it, and as git cherry-pick makes it of the series' commits.
mapfile -t sets < <(printf '%s\n' "${names[@]%%.*}" | awk '!seen[$0]++'
                    python3 "$top/repro/harness/patchset.py" pairs | tr ' ' '\n' | sed '/^$/d')
if ((${#commits[@]} == ${#names[@]})); then
    git clone -q "$r" "$tmp/pick"
    for set in "${sets[@]}"; do
        ov=$tmp/overlay-$set
        if ! why=$(KIT_FPC_PATCHES=$dir "$top/repro/fpc/build.sh" --fpc "$fpc" --set "$set" --out "$ov" --overlay-only 2>&1); then
            fail "$set" alone "build.sh: $(tail -1 <<< "$why")"; continue
        fi
        git -C "$tmp/pick" checkout -q --detach "${commits[0]}~1"
        picks=()
        for i in "${!names[@]}"; do
            [[ " ${set//+/ } " == *" ${names[i]%%.*} "* ]] && picks+=("${commits[i]}")
        done
        if ! why=$(git -C "$tmp/pick" -c user.name=check -c user.email=check@localhost cherry-pick "${picks[@]}" 2>&1); then
            fail "$set" alone "git cherry-pick onto the snapshot: $(grep -m1 -i conflict <<< "$why")"
            git -C "$tmp/pick" cherry-pick --abort > /dev/null 2>&1
            continue
        fi
        differ=""
        while read -r f; do
            cmp -s "$ov/overlay/$f" "$tmp/pick/$f" || differ+=" $f"
        done < <(cd "$ov/overlay" && find . -type f -printf '%P\n' | sort)
        if [ -z "$differ" ]; then
            ok "$set" alone
            compiled[$set]=1
            spawn "$set" "$ov/overlay"
        else
            fail "$set" alone "build.sh's overlay differs from git cherry-pick:$differ"
        fi
    done
fi

# The filing (make upstream, scripts/upstream.sh): each report's commits
# git am ALONE on the pristine files and compile, all reports git am in
# their order, every commit by the filer, subjects at most 72 characters,
# texts within their lengths, no public file naming smuggling; and a
# placeholder identity refused.
reps=()
up=$tmp/upstream
filer="Ana Tester <ana.tester@mail.freepascal.dev>"
need=""
for f in "${KIT_FPC_SNAPSHOT:-$top/../shared/upstream/fpcsource-1dba64b-min.tar.xz}" \
         "${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}"; do
    [ -e "$f" ] || need+=" $f"
done
if [ -n "$need" ]; then
    test_skip "fpc-patch upstream" "make upstream needs the snapshots:$need"
elif why=$("$top/scripts/upstream.sh" --author "$filer" --out "$up" 2>&1); then
    ok upstream written
    mapfile -t rdirs < <(find "$up/fpc" -mindepth 1 -maxdepth 1 -type d | sort; echo "$up/fpc-confidential")
    order=()
    for d in "${rdirs[@]}"; do
        r=$(basename "$d")
        mapfile -t rp < <(find "$d" -maxdepth 1 -name '*.patch' | sort)
        if ((${#rp[@]} == 0)); then fail "report-$r" alone "no patch in ${d#"$up"/}"; continue; fi
        order+=("${rp[@]}")
        bad=$(for p in "${rp[@]}"; do
                  info=$(git mailinfo /dev/null /dev/null < "$p")
                  [ "$(sed -n 's/^Author: //p' <<< "$info") <$(sed -n 's/^Email: //p' <<< "$info")>" = "$filer" ] \
                      || echo "$(basename "$p") is not by $filer"
                  subject=$(sed -n 's/^Subject: //p' <<< "$info")
                  ((${#subject} <= 72)) || echo "$(basename "$p"): subject of ${#subject} characters"
              done | head -2 | paste -sd';')
        [ -z "$bad" ] && ok "report-$r" author-subject || fail "report-$r" author-subject "$bad"
        n=$(wc -l < "$d/report.md" 2>/dev/null || echo missing)
        [[ $n =~ ^[0-9]+$ ]] && ((n <= 100)) && ok "report-$r" length || fail "report-$r" length "report.md: $n lines (at most 100)"
        rr=$tmp/repo-report-$r
        if pristine_repo "$rr" "${rp[@]}" > /dev/null 2>&1 \
           && why=$(git -C "$rr" -c user.name=check -c user.email=check@localhost am -q "${rp[@]}" 2>&1); then
            ok "report-$r" alone
            reps+=("report-$r") compiled[report-$r]=1
            spawn "report-$r" "$rr"
        else
            fail "report-$r" alone "git am on the pristine files: $(head -1 <<< "${why:-no pristine copy}")"
        fi
    done
    ra=$tmp/repo-reports
    if pristine_repo "$ra" "${order[@]}" > /dev/null 2>&1 \
       && why=$(git -C "$ra" -c user.name=check -c user.email=check@localhost am -q "${order[@]}" 2>&1); then
        ok reports in-order
    else
        fail reports in-order "git am of every report in order: $(head -1 <<< "${why:-no pristine copy}")"
    fi
    n=$(wc -l < "$up/fpc/cover.md" 2>/dev/null || echo missing)
    [[ $n =~ ^[0-9]+$ ]] && ((n <= 60)) && ok upstream cover-length || fail upstream cover-length "cover.md: $n lines (at most 60)"
    named=$(grep -rilE 'smuggl' "$up/fpc" "$up/horse" | head -2 | paste -sd' ')
    [ -z "$named" ] && ok upstream public-texts || fail upstream public-texts "a public file names smuggling: $named"
else
    fail upstream written "$(tail -1 <<< "$why")"
fi
# Every file of the kit that names the security class is in this folder or
# named by report/confidential/README.md (what stays out of public copies).
conf=$top/report/confidential/README.md
unlisted=$(cd "$top" && git ls-files -z 2>/dev/null | xargs -0 grep -ilE 'smuggl' 2>/dev/null \
           | while read -r f; do
                 [[ $f == report/confidential/* ]] && continue
                 grep -qF "\`$f\`" "$conf" 2>/dev/null || echo "$f"
             done | head -3 | paste -sd' ')
[ -f "$conf" ] && [ -z "$unlisted" ] && ok upstream security-files \
    || fail upstream security-files "not named in report/confidential/README.md: ${unlisted:-(no such README)}"

# A placeholder identity is refused, saying why; a good one above passed.
for id in "Seed d772d164 maintainers <maintainers@users.noreply.a-seed-d772d164.example>" \
          "Some One <some.one@example.org>" "Some One <12345+someone@users.noreply.github.com>"; do
    why=$("$top/scripts/upstream.sh" --author "$id" --out "$tmp/upstream-refused" 2>&1)
    rc=$? host=${id##*@}
    if ((rc != 0)) && grep -q placeholder <<< "$why" && [ ! -e "$tmp/upstream-refused/fpc" ]; then
        ok upstream "refuses-${host%>}"
    else
        fail upstream "refuses-${host%>}" "exit $rc for '$id': $(tail -1 <<< "$why")"
    fi
done

# Without --author, git config's identity: refused when there is none, or
# when it is a placeholder (a global config of the test's own; skipped where
# the repository's own config names a user).
if [ -z "$(git -C "$top" config --local user.email 2>/dev/null)" ]; then
    printf '[user]\n\tname = Seed maintainers\n\temail = maintainers@users.noreply.seed.example\n' > "$tmp/gitconfig"
    for case in none:/dev/null placeholder:$tmp/gitconfig; do
        why=$(GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=${case#*:} "$top/scripts/upstream.sh" --out "$tmp/upstream-refused" 2>&1)
        rc=$?
        want=$([ "${case%%:*}" = none ] && echo "no author" || echo placeholder)
        if ((rc != 0)) && grep -q "$want" <<< "$why" && [ ! -e "$tmp/upstream-refused/fpc" ]; then
            ok upstream "refuses-git-config-${case%%:*}"
        else
            fail upstream "refuses-git-config-${case%%:*}" "exit $rc: $(tail -1 <<< "$why")"
        fi
    done
else
    test_skip "fpc-patch upstream refuses-git-config" "this repository's own git config names a user"
fi
why=$("$top/scripts/upstream.sh" --author "Ana Tester" --out "$tmp/upstream-refused" 2>&1)
rc=$?
((rc != 0)) && grep -q "not of the form" <<< "$why" && ok upstream refuses-malformed \
    || fail upstream refuses-malformed "exit $rc for 'Ana Tester': $(tail -1 <<< "$why")"

# The committed series is what the generator makes of it.
KIT_FPC_PATCHES=$dir "$top/scripts/fpc-series.sh" --check
(($? == KSFT_FAIL)) && failed=1
# set-tcp-nodelay's socket option is declared, under its guard, on every
# target fcl-web builds fphttpserver for (their sockets units are in SRC).
python3 "$top/scripts/check-nodelay-guard.py" "$src" "$dir/set-tcp-nodelay.patch"
(($? == KSFT_FAIL)) && failed=1
wait

# Messages for the watched files, without positions (patches move lines).
messages() { grep -E "^$WATCHED\([0-9]+,[0-9]+\) (Warning|Note):" "$1" | sed -E 's/\([0-9]+,[0-9]+\)//' | sort; }
if [ "$(cat "$tmp/stock.rc")" != 0 ]; then
    fail stock compile "stock does not compile: $(grep -m1 -E 'Error|Fatal' "$tmp/stock.log")"
else
    messages "$tmp/stock.log" > "$tmp/stock.msg"
    for n in "${sets[@]}" all "${reps[@]}"; do
        [ -n "${compiled[$n]:-}" ] || continue
        label=$n; [ "$n" = all ] && label=series
        if [ "$(cat "$tmp/$n.rc")" != 0 ]; then
            fail "$label" compile "$(grep -m1 -E 'Error|Fatal' "$tmp/$n.log")"
            continue
        fi
        new=$(messages "$tmp/$n.log" | comm -13 "$tmp/stock.msg" - | head -2 | paste -sd';')
        [ -z "$new" ] && ok "$label" compile || fail "$label" compile "new compiler message: $new"
    done
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
