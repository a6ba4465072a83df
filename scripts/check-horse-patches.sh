#!/usr/bin/env bash
# scripts/check-horse-patches.sh - check the Horse-side patch series
# (patches/horse/) against the Horse tree (HORSESRC, default the snapshot
# ../shared/upstream/horse-ff41415.tar.xz).  One TEST line per check:
#   series-file  series and folder agree
#   fields       each patch's DEP-3 fields (in the commit message, after the
#                Subject): Description, Author, Mitigates: B<n>, Platforms
#                (unix, windows or all), Horse-Routine, Forwarded, Last-Update
#                (YYYY-MM-DD), optional Defect: H<n>, optional Needs: <an
#                earlier patch>
#   git-am       the series, in order, git am on a fresh repository of the tree
#                (so every file is git format-patch output that git am takes)
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
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
require_command git git horse-patch
[[ -e $horsesrc ]] || { test_skip horse-patch "no Horse tree at $horsesrc (HORSESRC=...)"; exit $KSFT_SKIP; }
failed=0
ok()   { test_ok "horse-patch $1"; }
fail() { test_fail "horse-patch $1" "$2"; failed=1; }

mapfile -t names < <(sed -e 's/#.*//' -e 's/\.patch[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$dir/series")
listed=$(printf '%s\n' "${names[@]}" | sort) present=$(cd "$dir" && ls ./*.patch | sed 's|^\./||; s/\.patch$//' | sort)
[[ $listed == "$present" ]] && ok series-file || fail series-file "series: $listed; folder: $present"

# check_fields PATCH POSITION: why the fields are not the kit's Horse form.
check_fields() {
    awk -v pos="$2" -v series=" ${names[*]} " '
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
        } else if (f !~ /^(Description|Author|Mitigates|Platforms|Defect|Needs|Horse-Routine|Forwarded|Last-Update)$/)
            print "field not in the kit form: " f
    }
    END {
        split("Description Author Mitigates Platforms Horse-Routine Forwarded Last-Update", req, " ")
        for (k in req) if (n[req[k]] != 1) print req[k] " appears " (n[req[k]] + 0) " times"
    }' "$1"
}

kit_mktemp tmp
repo=$tmp/horse
mkdir -p "$repo"
if [[ -f $horsesrc ]]; then tar -C "$repo" -xf "$horsesrc"; else cp -a "$horsesrc"/. "$repo"/; rm -rf "$repo/.git"; fi
G=(git -C "$repo" -c user.name=kit -c user.email=kit@localhost)
"${G[@]}" init -q && "${G[@]}" add -A && "${G[@]}" commit -qm "Horse tree"
pos=0 am_ok=1
for n in "${names[@]}"; do
    pos=$((pos + 1))
    why=$(check_fields "$dir/$n.patch" "$pos")
    [[ -z $why ]] && ok "$n fields" || fail "$n fields" "$(tr '\n' ';' <<< "$why")"
    if "${G[@]}" am -q "$dir/$n.patch" > "$tmp/am.log" 2>&1; then ok "$n git-am"
    else fail "$n git-am" "$(head -3 "$tmp/am.log" | tr '\n' ' ')"; "${G[@]}" am --abort 2> /dev/null; am_ok=0; break; fi
done

# Compile: every Horse set a row uses, Linux and win64 (the rows' own builds).
if ((am_ok)) && [[ -x $top/build/fpc-trunk/bin/fpc ]]; then
    while read -r tc set hset prog; do
        [[ $hset == stock || $set != stock ]] && continue
        if out=$("$top/repro/horse/build.sh" --tc "$tc" --set "$set" --horse "$hset" --program "$prog" 2>&1); then
            ok "$hset compile-$tc-$prog"
        else
            fail "$hset compile-$tc-$prog" "$(tail -3 <<< "$out" | tr '\n' ' ')"
        fi
    done < <(python3 "$top/repro/horse/rows.py" builds)
else
    test_skip "horse-patch compile" "no trunk toolchain (make fpc-trunk) or the series did not apply"
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
