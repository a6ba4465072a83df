#!/usr/bin/env bash
# repro/horse/rebuild-check.sh - a Horse change and an fcl-web patch change
# each reach the Horse program repro/horse/build.sh builds, although the
# units are compiled once per compiler for every Horse tree (the prebuilt
# units of repro/fpc/build.sh) and a build compiles only what its Horse
# tree and Pascal set change, and the users FPC finds out of date.
#
# usage: repro/horse/rebuild-check.sh
# First, repro/fpc/ppu.sh's verdict on made-up .ppu headers (a prebuilt
# copy is stale when a unit it uses moved its checksums in the build), and
# what that rests on, shown by the trunk compiler on two small units: a
# change to code keeps a unit's checksums, a change to an inline body
# moves them and FPC compiles the user again.  Then twice, in a temporary
# folder (the kit's build/horse is not touched): a copy of the Horse
# snapshot (HORSESRC) whose Horse.Core has a marker string, and a copy of
# patches/fpc (KIT_FPC_PATCHES) whose announce-close patch has another;
# the kit's program built on the trunk toolchain with --set announce-close
# into the same --out.  Between the two builds both markers change.  Each
# build's program must hold its own two markers and not the other build's
# (a stale Horse.Core or fphttpserver would keep the old one), and the
# second build must not compile FPC's units again: the units it compiled
# (repro/fpc/build.sh's count in its log) are Horse's and fcl-web's only.
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
rc=0

# ---- which prebuilt copies a build may link (repro/fpc/ppu.sh) ----
# A build compiles the units its set and Horse tree change; FPC compiles
# their users again when the changed unit's checksums moved, and the build
# then checks that no prebuilt copy uses a unit whose checksums moved.
# shellcheck source=repro/fpc/ppu.sh
source "$top/repro/fpc/ppu.sh"
check() {   # check NAME GOT WANT
    if [[ $2 == "$3" ]]; then test_ok "horse-rebuild: $1"
    else test_fail "horse-rebuild: $1" "got '$2', want '$3'"; rc=1; fi
}
# Made-up headers: a .ppu of format 208 with CRC, INTERFACE and INDIRECT.
ppu() {
    python3 - "$@" <<'PY'
import struct, sys
f, crc, intf, ind = sys.argv[1], *(int(x, 16) for x in sys.argv[2:5])
open(f, "wb").write(b"PPU208" + bytes(14) + struct.pack("<IIiiI", crc, intf, 0, 0, ind))
PY
}
mkdir -p "$tmp/ppu/base" "$tmp/ppu/out"
ppu "$tmp/ppu/base/ua.ppu" 1 2 3; ppu "$tmp/ppu/base/ub.ppu" 4 5 6
printf 'ub ua\nprogram ub\n' > "$tmp/ppu/deps"
cp "$tmp/ppu/base/ub.ppu" "$tmp/ppu/out/"
stale() { stale_copies "$tmp/ppu/out" "$tmp/ppu/base" "$tmp/ppu/deps" "$1"; }
ppu "$tmp/ppu/out/ua.ppu" 1 2 3
check "a copy whose used unit kept its checksums stays" "$(stale " ua ")" ""
ppu "$tmp/ppu/out/ua.ppu" 9 2 3
check "a copy whose used unit's CRC moved is stale" "$(stale " ua ")" "ub (uses ua)"
ppu "$tmp/ppu/out/ua.ppu" 1 2 9
check "a copy whose used unit's indirect checksum moved is stale" "$(stale " ua ")" "ub (uses ua)"
check "a user compiled again is no copy" "$(stale " ua ub ")" ""
rm "$tmp/ppu/base/ua.ppu"
check "a copy using a unit new to the build is stale" "$(stale " ua ")" "ub (uses ua)"

# What the rule rests on, shown by the trunk compiler: a change to code
# leaves a unit's checksums, a change to an inline body moves them (its
# users inline it), and FPC then compiles the user again (it prints
# 3 * 100 + 21, where the stale user would print 2 * 100 + 21).
mkdir -p "$tmp/inl/u"
unit_ua() {   # unit_ua F-BODY G-BODY: ua.pas with inline F and plain G
    printf '%s\n' 'unit ua;' '{$mode objfpc}' 'interface' \
        'function F(x: Integer): Integer; inline;' 'function G(x: Integer): Integer;' \
        'implementation' "function F(x: Integer): Integer; begin Result := $1; end;" \
        "function G(x: Integer): Integer; begin Result := $2; end;" 'end.' > "$tmp/inl/ua.pas"
}
printf '%s\n' 'unit ub;' '{$mode objfpc}' 'interface' 'uses ua;' 'function H(x: Integer): Integer;' \
    'implementation' 'function H(x: Integer): Integer; begin Result := F(x) * 100 + G(x); end;' \
    'end.' > "$tmp/inl/ub.pas"
echo 'program p; uses ub; begin WriteLn(H(1)); end.' > "$tmp/inl/p.lpr"
build_p() {   # the program, ua compiled from its source, ub from ua's old .ppu if valid
    rm -f "$tmp/inl/u"/ua.* "$tmp/inl/p"
    "$top/build/fpc-trunk/bin/fpc" -O2 -FU"$tmp/inl/u" -FE"$tmp/inl" "$tmp/inl/p.lpr" > "$tmp/inl/log" 2>&1 \
        || { cat "$tmp/inl/log" >&2; die "the inline example does not compile"; }
}
unit_ua "x + 1" "x + 10"; build_p; s1=$(ppu_sums "$tmp/inl/u/ua.ppu")
unit_ua "x + 1" "x + 20"; build_p; s2=$(ppu_sums "$tmp/inl/u/ua.ppu")
check "trunk: a change to code keeps a unit's checksums" "$s2" "$s1"
unit_ua "x + 2" "x + 20"; build_p; s3=$(ppu_sums "$tmp/inl/u/ua.ppu")
check "trunk: a change to an inline body moves its unit's CRC" "$([[ ${s3%% *} != "${s1%% *}" ]] && echo moved)" moved
check "trunk: the user of a changed inline body is compiled again" "$("$tmp/inl/p")" 321

# The units of Horse's tree and of fcl-web, lower case.
ours=" $(find "$tmp/horse/src" "$top/build/fpc-trunk/src/packages/fcl-web/src" \( -iname '*.pas' -o -iname '*.pp' \) \
          -printf '%f\n' | sed 's/\.[^.]*$//' | tr '[:upper:]' '[:lower:]' | tr '\n' ' ')"
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
