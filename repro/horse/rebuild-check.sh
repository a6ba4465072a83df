#!/usr/bin/env bash
# repro/horse/rebuild-check.sh - a Horse change and an fcl-web patch change
# each reach the Horse program repro/horse/build.sh builds, although the
# units are compiled once per compiler for every Horse tree (the prebuilt
# units of repro/fpc/build.sh) and a build compiles only what its Horse
# tree and Pascal set change, and their users.
#
# usage: repro/horse/rebuild-check.sh
# Twice, in a temporary folder (the kit's build/horse is not touched): a
# copy of the Horse snapshot (HORSESRC) whose Horse.Core has a marker
# string, and a copy of patches/fpc (KIT_FPC_PATCHES) whose announce-close
# patch has another; the kit's program built on the trunk toolchain with
# --set announce-close into the same --out.  Between the two builds both
# markers change.  Each build's program must hold its own two markers and
# not the other build's (a stale Horse.Core or fphttpserver would keep the
# old one), and the second build must not compile FPC's units again: the
# units it compiled (repro/fpc/build.sh's count in its log) are Horse's
# and fcl-web's only.
# Needs build/fpc-trunk (make fpc-trunk); skips without it.
set -euo pipefail
kit_name=horse-rebuild
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"

[[ -x $top/build/fpc-trunk/bin/fpc ]] || { test_skip horse-rebuild "no trunk toolchain (make fpc-trunk)"; exit $KSFT_SKIP; }
snap=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
[[ -f $snap ]] || { test_skip horse-rebuild "no Horse snapshot at $snap"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kit-horse-rebuild.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/horse"
tar -C "$tmp/horse" -xf "$snap"
cp -r "$top/patches/fpc" "$tmp/fpc"
core=$tmp/horse/src/Horse.Core.pas
hlit="'The Horse instance has already been created'"
flit="'keep-alive'"
grep -qF "$hlit" "$core" || die "no $hlit in Horse.Core.pas"
grep -qF "+        Resp.SetHeader(hhConnection,$flit)" "$tmp/fpc/announce-close.patch" \
    || die "no $flit line in patches/fpc/announce-close.patch"
# The units of Horse's tree and of fcl-web, lower case.
ours=" $(find "$tmp/horse/src" "$top/build/fpc-trunk/src/packages/fcl-web/src" \( -iname '*.pas' -o -iname '*.pp' \) \
          -printf '%f\n' | sed 's/\.[^.]*$//' | tr '[:upper:]' '[:lower:]' | tr '\n' ' ')"
rc=0
prev=""
for n in 1 2; do
    # The markers of build n, in place of the last build's text.
    hm="kit-horse-marker-$n-$$" fm="kit-fclweb-marker-$n-$$"
    sed -i "s#'[^']*instance has already been created'\\|'kit-horse-marker-[^']*'#'$hm'#" "$core"
    sed -i "s|^\\(+        Resp.SetHeader(hhConnection,\\)'[^']*')|\\1'$fm')|" "$tmp/fpc/announce-close.patch"
    grep -qF "'$hm'" "$core" && grep -qF "'$fm'" "$tmp/fpc/announce-close.patch" || die "marker $n not written"
    exe=$(HORSESRC=$tmp/horse KIT_HORSE_TREES=$tmp/trees KIT_FPC_PATCHES=$tmp/fpc \
          "$top/repro/horse/build.sh" --tc trunk --set announce-close --program kithorse --out "$tmp/out" 2> "$tmp/log") \
        || { cat "$tmp/log" >&2; die "build $n failed"; }
    log=$tmp/out/build.log
    for m in "$hm" "$fm"; do
        if grep -qaF "$m" "$exe"; then echo "TEST: horse-rebuild: build $n has $m [ OK ]"
        else echo "TEST: horse-rebuild: build $n has $m [FAIL]"; rc=1; fi
    done
    if [[ -n $prev ]]; then
        if grep -qaF -e "${prev% *}" -e "${prev#* }" "$exe"; then
            echo "TEST: horse-rebuild: build $n has none of build $((n - 1))'s markers [FAIL]"; rc=1
        else echo "TEST: horse-rebuild: build $n has none of build $((n - 1))'s markers [ OK ]"; fi
        # FPC's own units came from the prebuilt ones: the units compiled
        # (repro/fpc/build.sh counts them) are Horse's and fcl-web's only.
        line=$(grep -m1 '^compiled in this build: ' "$log" || true)
        others=$(for u in ${line#*units:}; do [[ $ours == *" $u "* ]] || echo "$u"; done)
        if [[ -n $line && -z $others ]]; then
            echo "TEST: horse-rebuild: build $n compiled Horse's and fcl-web's units only ($(sed 's/^compiled in this build: \([0-9]*\) units.*/\1/' <<< "$line") units) [ OK ]"
        else
            echo "TEST: horse-rebuild: build $n compiled Horse's and fcl-web's units only [FAIL] ${line:-no count}; others: $(echo $others)"
            rc=1
        fi
    fi
    prev="$hm $fm"
done
exit $rc
