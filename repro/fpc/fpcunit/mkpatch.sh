#!/usr/bin/env bash
# repro/fpc/fpcunit/mkpatch.sh [--check] [SRC] - the upstream form of the
# fpcunit tests: one git format-patch commit that adds tcfphttpserver.pp and
# fpcunithttpserver.lpr (this folder, the only copy) to
# packages/fcl-web/tests/ of FPCSource.
#
#   (no option)  write patches/fpc/tests/fcl-web-http-connection-tests.patch
#   --check      TEST lines: the committed patch is what this script makes
#                now (sources, tests.json and headers unchanged since), and
#                git am applies it to a git repository of SRC's
#                packages/fcl-web/tests (default build/fpc-trunk/src, the
#                snapshot's pristine copy)
# Not in patches/fpc/series: the series is the fixes, this is their test.
# The message is in FPC's own form, as scripts/fpc-series.sh writes the
# series: a "fcl-web: ..." subject and a plain body (the tests and what they
# assert, from tests.json), no DEP-3 field.  Author: kit_patch_author
# (scripts/lib.sh, as fpc-series.sh): KIT_AUTHOR_NAME and KIT_AUTHOR_EMAIL,
# else git config user.name and user.email, never a placeholder; --check
# takes the committed patch's own.  Date: KIT_PATCH_DATE, else the committed
# patch's Date: (as git commit --amend keeps it), else now.  The commit is
# made on an empty history with git's own settings pinned, so the output
# depends only on the sources, the author and the date.
# Exit: 0 written or checked, 1 a check failed, 4 skipped (no git, no SRC).
set -uo pipefail
export LC_ALL=C
kit_name=fpcunit-patch
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

check=0
[[ ${1:-} == --check ]] && { check=1; shift; }
src=${1:-$top/build/fpc-trunk/src}
patch=$top/patches/fpc/tests/fcl-web-http-connection-tests.patch
dest=packages/fcl-web/tests
files=(tcfphttpserver.pp fpcunithttpserver.lpr)

require_command git git fpcunit-patch
require_command python3 python3 fpcunit-patch
tmp="" && kit_mktemp tmp

# The author and the date: with --check, the committed patch's.
if ((check)) && [ -f "$patch" ]; then kit_patch_author "$patch"; else kit_patch_author; fi \
    || { if ((check)); then test_fail "fpcunit patch current" "$kit_author_why"; exit 1; else die "$kit_author_why"; fi; }
date=""
[ -f "$patch" ] && date=$(git mailinfo /dev/null /dev/null < "$patch" 2>/dev/null | sed -n 's/^Date: //p')
date=${KIT_PATCH_DATE:-${date:-$(date -u '+%Y-%m-%d %H:%M:%S +0000')}}
((check)) && [ -f "$patch" ] && date=$(git mailinfo /dev/null /dev/null < "$patch" 2>/dev/null | sed -n 's/^Date: //p')

# make_patch OUT: the patch, from the files as they are now.
make_patch() {
    local r=$tmp/make f
    rm -rf "$r" && mkdir -p "$r/$dest"
    for f in "${files[@]}"; do cp "$here/$f" "$r/$dest/$f"; done
    {
        echo "fcl-web: add tests for the HTTP/1.1 connection handling of TFPHttpServer"
        echo
        echo "tcfphttpserver.pp runs a real TFPHttpServer on 127.0.0.1 in a thread"
        echo "and talks to it over raw TCP sockets; fpcunithttpserver.lpr is its"
        echo "console runner, as fpcunithttp2.lpr is for the HTTP/2 server. Verdicts"
        echo "are counts and orderings; every wait for the server is bounded by a"
        echo "watchdog, so a hang is a failure with a message and the run ends. Each"
        echo "test stands alone and gives back what it takes, also on a server that"
        echo "has the defect it looks for."
        echo
        python3 "$here/tests.py" description
    } > "$tmp/msg"
    local why
    why=$(grep -nE "$KIT_DEP3_FIELDS" "$tmp/msg" | head -1)
    [ -z "$why" ] || { echo "$kit_name: the message carries a DEP-3 field (line $why)" >&2; return 1; }
    gr() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C "$r" -c core.abbrev=7 "$@"; }
    gr init -q
    gr add -A
    GIT_AUTHOR_NAME=$kit_author_name GIT_AUTHOR_EMAIL=$kit_author_email GIT_AUTHOR_DATE=$date \
    GIT_COMMITTER_NAME=$kit_author_name GIT_COMMITTER_EMAIL=$kit_author_email GIT_COMMITTER_DATE=$date \
        gr commit -q --cleanup=whitespace -F "$tmp/msg" || return 1
    gr format-patch -q --root --no-signature --stdout HEAD > "$1"
}

if ((!check)); then
    mkdir -p "$(dirname "$patch")"
    make_patch "$tmp/new.patch" || die "cannot make the patch"
    mv "$tmp/new.patch" "$patch"
    echo "wrote ${patch#"$top"/}"
    exit 0
fi

[ -d "$src/$dest" ] || { test_skip "fpcunit patch" "no $dest in $src (make fpc-trunk)"; exit $KSFT_SKIP; }
failed=0
if [ ! -f "$patch" ]; then
    test_fail "fpcunit patch current" "no ${patch#"$top"/} (run repro/fpc/fpcunit/mkpatch.sh)"; failed=1
elif ! make_patch "$tmp/now.patch"; then
    test_fail "fpcunit patch current" "cannot make the patch"; failed=1
elif cmp -s "$tmp/now.patch" "$patch"; then
    test_ok "fpcunit patch current"
else
    test_fail "fpcunit patch current" "differs from what mkpatch.sh makes now (run it): $(diff "$patch" "$tmp/now.patch" | sed -n 2p)"
    failed=1
fi

# git am on a repository of the snapshot's tests folder, as a maintainer would.
r=$tmp/am
mkdir -p "$r/$dest"
cp -a "$src/$dest/." "$r/$dest/"
git -C "$r" init -q && git -C "$r" add -A \
    && git -C "$r" -c user.name=pristine -c user.email=pristine@localhost commit -qm pristine
if [ -f "$patch" ] && why=$(git -C "$r" -c user.name=check -c user.email=check@localhost am -q "$patch" 2>&1); then
    ok=1
    for f in "${files[@]}"; do cmp -s "$r/$dest/$f" "$here/$f" || ok=0; done
    if ((ok)); then test_ok "fpcunit patch git-am"; else test_fail "fpcunit patch git-am" "applied files differ from $here"; failed=1; fi
else
    test_fail "fpcunit patch git-am" "$(head -1 <<< "${why:-no patch}")"
    failed=1
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
