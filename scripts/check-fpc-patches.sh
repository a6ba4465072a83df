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
#   dep3         the body's DEP-3 fields, exactly: Description (one line, then
#                indented text), Author with an e-mail address, Defect: B<n>,
#                optional Needs: <an earlier patch of the series>,
#                Upstream-Routine, Forwarded: no, Last-Update: YYYY-MM-DD;
#                no Bug: field, no other field
#   apply-alone  git apply --check on a pristine copy of the files it touches
#   git-am       git am into a throwaway git repository of those pristine files
#   compile      the patched units fphttpserver needs compile with the trunk
#                compiler (build/fpc-trunk/bin/fpc) with no warning or note
#                for fphttpserver.pp / ssockets.pp that stock does not have
# then for the series: series-file (series and folder agree), in-order (git am
# of the whole series) and compile (the whole series).
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
    awk '
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
    }' "$1"
}

# check_dep3 PATCH POSITION: prints why the DEP-3 fields are not the kit's.
check_dep3() {
    local p=$1 pos=$2 body
    # The message body: after the header block, up to the --- line.
    body=$(awk '!h && /^$/ { h = 1; next } h && /^---$/ { exit } h' "$p")
    awk -v pos="$pos" -v series=" ${names[*]} " '
    /^[A-Za-z][A-Za-z-]*:/ {
        f = $0; sub(/:.*/, "", f); v = $0; sub(/^[^:]*: */, "", v)
        n[f]++; last = f
        if (f == "Description" && v == "") print "Description has no one-line summary"
        else if (f == "Author" && v !~ /^[^<>]+ <[^ <>]+@[^ <>]+\.[^ <>]+>$/) print "Author has no e-mail address: " v
        else if (f == "Defect" && v !~ /^B[0-9]+$/) print "Defect is not B<n>: " v
        else if (f == "Forwarded" && v != "no") print "Forwarded is not no: " v
        else if (f == "Last-Update" && v !~ /^[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]$/) print "Last-Update is not a date: " v
        else if (f == "Upstream-Routine" && v == "") print "Upstream-Routine is empty"
        else if (f == "Needs") {
            i = index(series, " " v " ")
            if (v == "" || i == 0) print "Needs names no patch of the series: " v
            else if (split(substr(series, 1, i), before, " ") >= pos - 1) print "Needs names this or a later patch: " v
        }
        else if (f !~ /^(Description|Author|Defect|Needs|Upstream-Routine|Forwarded|Last-Update)$/) print "field not in the kit form: " f
        next
    }
    /^ / { if (last != "Description") print "indented text after " last " (only Description continues)"; next }
    END {
        split("Description Author Defect Upstream-Routine Forwarded Last-Update", req, " ")
        for (k in req) if (n[req[k]] != 1) print req[k] " appears " (n[req[k]] + 0) " times"
        if (n["Needs"] > 1) print "Needs appears " n["Needs"] " times"
    }' <<< "$(awk '/^[A-Za-z][A-Za-z-]*: /{ f = 1 } f' <<< "$body")"
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
pos=0
for n in "${names[@]}"; do
    pos=$((pos + 1))
    p=$dir/$n.patch
    [ -f "$p" ] || continue
    why=$(check_form "$p"); [ -z "$why" ] && ok "$n" form || fail "$n" form "$why"
    why=$(check_dep3 "$p" "$pos" | head -3 | paste -sd';'); [ -z "$why" ] && ok "$n" dep3 || fail "$n" dep3 "$why"
    r=$tmp/repo-$n
    if ! why=$(pristine_repo "$r" "$p" 2>&1); then
        fail "$n" apply-alone "$why"
        continue
    fi
    if why=$(git -C "$r" apply --check "$p" 2>&1); then ok "$n" apply-alone; else fail "$n" apply-alone "$(head -1 <<< "$why")"; continue; fi
    if why=$(git -C "$r" -c user.name=check -c user.email=check@localhost am -q "$p" 2>&1); then
        ok "$n" git-am
        compiled[$n]=1
        spawn "$n" "$r"
    else
        fail "$n" git-am "$(head -1 <<< "$why")"
        git -C "$r" am --abort >/dev/null 2>&1
    fi
done

# The whole series, in order.
r=$tmp/repo-all
all=()
for n in "${names[@]}"; do [ -f "$dir/$n.patch" ] && all+=("$dir/$n.patch"); done
if ((${#all[@]})) && pristine_repo "$r" "${all[@]}" >/dev/null 2>&1 \
   && why=$(git -C "$r" -c user.name=check -c user.email=check@localhost am -q "${all[@]}" 2>&1); then
    ok series in-order
    compiled[all]=1
    spawn all "$r"
else
    fail series in-order "$(head -1 <<< "${why:-no pristine copy}")"
fi
wait

# Messages for the watched files, without positions (patches move lines).
messages() { grep -E "^$WATCHED\([0-9]+,[0-9]+\) (Warning|Note):" "$1" | sed -E 's/\([0-9]+,[0-9]+\)//' | sort; }
if [ "$(cat "$tmp/stock.rc")" != 0 ]; then
    fail stock compile "stock does not compile: $(grep -m1 -E 'Error|Fatal' "$tmp/stock.log")"
else
    messages "$tmp/stock.log" > "$tmp/stock.msg"
    for n in "${names[@]}" all; do
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
