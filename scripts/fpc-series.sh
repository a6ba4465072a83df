#!/usr/bin/env bash
# scripts/fpc-series.sh [--check | --reports DIR] [--keep DIR | --from DIR] [--snapshot TARBALL]
# - cut the Pascal series (patches/fpc/) as upstream takes it: one commit
# per patch, each on the result of the one before, written by git
# format-patch.
#
#   (no option)  rewrite patches/fpc/*.patch and patches/fpc/series
#   --check      TEST lines: what this script makes now from the committed
#                patches, with their author, equals them byte for byte
#   --keep DIR   also leave the git repository it made in DIR (branch
#                series, tag snapshot), to edit the commits there
#   --from DIR   take the commits snapshot..series of such a repository
#                (one per patch, in series order) instead of the patch files
#   --reports DIR  write nothing in patches/fpc: cut each upstream report's
#                commits (repro/harness/patchset.py reports; a report holds
#                the Pascal patches of its fixes, Report: field) on the
#                pristine snapshot alone, by git cherry-pick (a 3-way merge:
#                context lines of patches of other reports are no part of
#                it), into DIR/<report>/ as git format-patch files numbered
#                within the report; then git am (no 3-way) of every report
#                in their order (confidential last) on the snapshot: a
#                report that does not apply there is written again with 1
#                line of context.  A conflict is an error naming the patch
#                or the report.
#   --snapshot TARBALL  the FPCSource snapshot the series is cut against
#                (default ../shared/upstream/fpcsource-1dba64b-min.tar.xz)
#
# Where each fact lives.  The order is patches/fpc/series.  The message
# (Subject: and a plain body, as FPC's own history writes them: no DEP-3
# fields) and the change of a patch are in patches/fpc/<name>.patch itself,
# which this script re-reads (git mailinfo) and re-cuts.  Which defect a
# patch fixes, what it needs and which routines it changes are DEP-3 fields
# of the model's quilt patch of the same name (patches/<name>.patch, read by
# repro/harness/patchset.py), and nowhere in the Pascal series.  A fix that takes
# more than one upstream commit (a change to another package first) has
# <name>.patch and then <name>.<part>.patch (poll-can-read.fcl-web.patch):
# every Pascal patch belongs to the fix named before its first dot.
#
# Author: KIT_AUTHOR_NAME and KIT_AUTHOR_EMAIL, else git config user.name
# and user.email of this repository; neither is an error.  A placeholder
# address is the working series' business only: the filing (make upstream,
# scripts/upstream.sh) cuts it again with the filer's identity and refuses
# a placeholder one.  Dates: each patch keeps the date of its
# Date: header, as git commit --amend keeps a commit's author date (edit it
# there, or set KIT_PATCH_DATE, any git date, for every patch); a patch file
# without one gets the time of the run.  The
# snapshot commit, the committer and git's own settings are pinned, so the
# output depends only on the patch files, the author and the dates.
#
# To change one fix (the others stay as they are):
#   1. edit patches/fpc/<name>.patch: its Subject: and body, and/or its
#      diff.  The diff may also be replaced whole by one cut against the
#      snapshot (git diff in a pristine tree, a/ b/ paths) or against the
#      series before it: it is applied 3-way where its index line names a
#      blob the repository has (the snapshot's file, an earlier patch's
#      result), else by its context.
#      Or with git: scripts/fpc-series.sh --keep /tmp/s; in /tmp/s,
#      git rebase -i snapshot and amend the commit; then
#      scripts/fpc-series.sh --from /tmp/s.
#   2. run scripts/fpc-series.sh: every later patch is re-cut on the new
#      result (a conflict stops it, naming the patch, nothing written).
#   3. scripts/check-fpc-patches.sh (make test's fpc-patches step): git am
#      of the whole series, every single-fix build, compile, and --check.
# A new fix: its model patch in patches/ first (DEP-3 header, series line),
# then patches/fpc/<name>.patch in the same order in patches/fpc/series.
# Exit: 0 written or checked, 1 a failure, 4 skipped (--check without git or
# the snapshot).
set -uo pipefail
export LC_ALL=C
kit_name=fpc-series
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

check=0
# With --check a failure to make the series is a failed check.
die() {
    if ((check)); then test_fail "fpc-series current" "$*"; else echo "$kit_name: $*" >&2; fi
    exit 1
}
keep="" from="" reports=""
snapshot=${KIT_FPC_SNAPSHOT:-$top/../shared/upstream/fpcsource-1dba64b-min.tar.xz}
dir=${KIT_FPC_PATCHES:-$top/patches/fpc}
while (($#)); do
    case $1 in
    --check) check=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    --from) from=$(realpath "$2"); shift 2 ;;
    --snapshot) snapshot=$2; shift 2 ;;
    -h|--help) sed -n '2,66p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done

# The snapshot's commit: pinned, as upstream's 1dba64b is.
SNAP_ID="FPCSource snapshot <snapshot@fpcsource.invalid>"
SNAP_DATE="2026-08-22 00:00:00 +0000"
if ((check)); then
    command -v git > /dev/null || { test_skip "fpc-series current" "no git"; exit $KSFT_SKIP; }
    [ -f "$snapshot" ] || { test_skip "fpc-series current" "no snapshot $snapshot"; exit $KSFT_SKIP; }
else
    command -v git > /dev/null || die "needs git"
    [ -f "$snapshot" ] || die "no snapshot $snapshot (--snapshot TARBALL)"
fi
[ -f "$dir/series" ] || die "no $dir/series"
mapfile -t names < <(sed -e 's/#.*//' -e 's/\.patch[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$dir/series")
((${#names[@]})) || die "$dir/series lists no patch"

# The author: the environment, else this repository's git config; with
# --check, the committed series' own (its first From: line), so that the
# comparison is with what its author would get.
if ((check)); then
    kit_patch_author "$dir/${names[0]}.patch"
else
    kit_patch_author
fi || die "$kit_author_why"
name=$kit_author_name email=$kit_author_email

tmp="" && kit_mktemp tmp
# git in the scratch repository: no system or user settings (diff.*, format.*,
# commit.gpgsign would change the output), fixed abbreviations.
g() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C "$repo" -c core.abbrev=7 "$@"; }
repo=$tmp/repo
mkdir -p "$repo"
tar -xaf "$snapshot" -C "$repo" || die "cannot unpack $snapshot"
g init -q -b series && g add -A || die "cannot make a repository of $snapshot"
GIT_AUTHOR_NAME=${SNAP_ID% <*} GIT_AUTHOR_EMAIL=snapshot@fpcsource.invalid GIT_AUTHOR_DATE=$SNAP_DATE \
GIT_COMMITTER_NAME=${SNAP_ID% <*} GIT_COMMITTER_EMAIL=snapshot@fpcsource.invalid GIT_COMMITTER_DATE=$SNAP_DATE \
    g commit -q -m "snapshot $(basename "$snapshot")" && g tag snapshot || die "cannot commit the snapshot"

# The inputs: with --from, the commits of DIR exported as patch files first.
src=$dir
if [ -n "$from" ]; then
    src=$tmp/from && mkdir -p "$src"
    mapfile -t commits < <(git -C "$from" rev-list --reverse snapshot..series)
    ((${#commits[@]} == ${#names[@]})) \
        || die "$from has ${#commits[@]} commits in snapshot..series, $dir/series lists ${#names[@]}"
    for i in "${!names[@]}"; do
        git -C "$from" format-patch -q --stdout -1 "${commits[i]}" > "$src/${names[i]}.patch"
    done
fi

mkdir -p "$tmp/out"
now=$(date -u '+%Y-%m-%d %H:%M:%S +0000')
for i in "${!names[@]}"; do
    n=${names[i]} p=$src/${names[i]}.patch
    [ -f "$p" ] || die "no $p (listed in $dir/series)"
    g mailinfo "$tmp/msg" "$tmp/diff" < "$p" > "$tmp/info" || die "$n: not a mail (git format-patch) file"
    subject=$(sed -n 's/^Subject: //p' "$tmp/info")
    date=$(sed -n 's/^Date: //p' "$tmp/info")
    [ -n "$subject" ] || die "$n: no Subject:"
    [ -s "$tmp/diff" ] || die "$n: no diff"
    why=$(grep -nE "$KIT_DEP3_FIELDS" "$tmp/msg" | head -1)
    [ -z "$why" ] || die "$n: the message carries a DEP-3 field (line $why); such fields belong in patches/$n.patch"
    if ! out=$(g apply --3way "$tmp/diff" 2>&1); then
        die "$n does not apply on the series before it: $(grep -m3 -E 'error|conflict|CONFLICT' <<< "$out" | paste -sd';')"
    fi
    { printf '%s\n' "$subject"; [ -s "$tmp/msg" ] && { echo; cat "$tmp/msg"; }; } > "$tmp/message"
    d=${KIT_PATCH_DATE:-${date:-$now}}
    GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$d \
    GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$d \
        g commit -q --cleanup=whitespace -F "$tmp/message" || die "$n: cannot commit"
done
g format-patch -q --numbered --no-signature -o "$tmp/out" snapshot..series || die "git format-patch failed"
mapfile -t made < <(cd "$tmp/out" && ls -- *.patch | sort)
((${#made[@]} == ${#names[@]})) || die "git format-patch wrote ${#made[@]} patches for ${#names[@]}"
for i in "${!names[@]}"; do mv "$tmp/out/${made[i]}" "$tmp/out/${names[i]}.patch"; done
{
    echo "# FPC trunk patch series, git am order: one commit per patch, each cut on"
    echo "# the one before it.  Written by scripts/fpc-series.sh, which takes this"
    echo "# order and the patch files as its input (see its header to change one)."
    for n in "${names[@]}"; do echo "$n.patch"; done
} > "$tmp/out/series"
if [ -n "$keep" ]; then
    rm -rf "$keep" && mkdir -p "$(dirname "$keep")" && cp -a "$repo" "$keep" && echo "kept the repository in $keep"
fi

# --reports: each report's commits cut on the snapshot alone, then all of
# them in their order.
if [ -n "$reports" ]; then
    mkdir -p "$reports" || die "cannot make $reports"
    mapfile -t commits < <(g rev-list --reverse snapshot..series)
    mapfile -t rnames < <(python3 "$top/repro/harness/patchset.py" reports | tr ' ' '\n' | sed '/^$/d')
    ((${#rnames[@]})) || die "patchset.py names no report"
    filed=" "
    for r in "${rnames[@]}"; do
        fixes=$(python3 "$top/repro/harness/patchset.py" report "$r") || die "report $r: patchset.py report failed"
        g checkout -q -B "report-$r" snapshot || die "cannot branch report-$r"
        for i in "${!names[@]}"; do
            [[ " $fixes " == *" ${names[i]%%.*} "* ]] || continue
            filed+="${names[i]} "
            if ! out=$(GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE="$SNAP_DATE" \
                       g cherry-pick --allow-empty-message "${commits[i]}" 2>&1); then
                g cherry-pick --abort > /dev/null 2>&1
                die "report $r: ${names[i]}.patch does not apply on the pristine snapshot without the other reports: $(grep -m2 -iE 'conflict|error' <<< "$out" | paste -sd';')"
            fi
        done
    done
    for n in "${names[@]}"; do
        [[ $filed == *" $n "* ]] || die "$n.patch is in no report (its fix's Report: field in patches/${n%%.*}.patch)"
    done
    # Written with git's 3 lines of context; a report that then does not
    # git am (no 3-way: a maintainer's tree lacks the blobs) on the reports
    # before it is written again with 1 line, which still applies alone.
    g checkout -q -B reports-in-order snapshot || die "cannot branch reports-in-order"
    for r in "${rnames[@]}"; do
        ok=0 head=$(g rev-parse HEAD)
        for u in 3 1; do
            rm -rf "${reports:?}/$r" && mkdir -p "$reports/$r"
            g format-patch -q --numbered --no-signature -U$u -o "$reports/$r" snapshot.."report-$r" \
                || die "report $r: git format-patch failed"
            if GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE="$SNAP_DATE" \
               g am -q "$reports/$r"/*.patch > "$tmp/am.log" 2>&1; then
                ok=1; break
            fi
            g am --abort > /dev/null 2>&1; rm -rf "$repo/.git/rebase-apply"; g reset -q --hard "$head"
        done
        ((ok)) || die "report $r does not apply (git am) after the reports before it: $(grep -v "^hint" "$tmp/am.log" | head -3 | paste -sd";")"
        ((u == 3)) || note "report $r: written with 1 line of context, so that it applies after the reports before it as well as alone"
    done
    echo "cut ${#rnames[@]} reports into $reports (each alone on the snapshot, and all in order)"
    exit 0
fi

if ((!check)); then
    for f in "${names[@]/%/.patch}" series; do
        if cmp -s "$tmp/out/$f" "$dir/$f"; then continue; fi
        cp "$tmp/out/$f" "$dir/$f" && echo "wrote ${dir#"$top"/}/$f"
    done
    for p in "$dir"/*.patch; do
        [[ " ${names[*]} " == *" $(basename "$p" .patch) "* ]] || note "$(basename "$p") is not in the series (left as it is)"
    done
    exit 0
fi
failed=0
for f in "${names[@]/%/.patch}" series; do
    if cmp -s "$tmp/out/$f" "$dir/$f"; then
        test_ok "fpc-series current $f"
    else
        test_fail "fpc-series current $f" "differs from what scripts/fpc-series.sh makes (run it): $(diff "$dir/$f" "$tmp/out/$f" | grep -m1 '^[<>]')"
        failed=1
    fi
done
exit $((failed ? KSFT_FAIL : KSFT_PASS))
