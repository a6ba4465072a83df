# shellcheck shell=bash
# repro/fpc/ppu.sh - what the kit reads in FPC's compiled units (.ppu),
# sourced by repro/fpc/build.sh and repro/horse/rebuild-check.sh.

# ppu_sums FILE: 'CRC INTERFACE INDIRECT', the checksums in a .ppu's header
# (tppuheader in compiler/ppu.pas, formats 207 (FPC 3.2) and 208 (trunk):
# bytes 20, 24 and 36) that FPC compares with those a user of the unit was
# compiled against, to decide that the user must be compiled again.  CRC
# covers all the .ppu holds (an inline routine's body too), not the code in
# the .o: a change to code only leaves all three as they were.  Exit 1,
# with a message, for another format.
ppu_sums() {
    local v
    v=$(head -c 6 "$1")
    [[ $v == PPU20[78] ]] || { echo "$1: .ppu format '${v#PPU}', whose header is not known here" >&2; return 1; }
    od -An -tx4 -w20 -j20 -N20 "$1" | awk '{ print $1, $2, $5 }'
}

# stale_copies UNITS BASE DEPS FRESH: the units of UNITS (a build's folder)
# that are BASE's prebuilt copies, not in FRESH (' a b ', the units the
# build compiled, lower case), and use a unit of FRESH whose checksums are
# not its copy's in BASE, or that BASE lacks (DEPS: 'user used' a line,
# lower case).  One 'USER (uses USED)' a line; none when the build is
# consistent: FPC would have compiled each of them again.
stale_copies() {
    local units=$1 base=$2 deps=$3 fresh=$4 u f p moved=" " user used
    for u in $fresh; do
        f=$(find "$units" -maxdepth 1 -iname "$u.ppu" -print -quit)
        p=$(find "$base" -maxdepth 1 -iname "$u.ppu" -print -quit)
        [[ -n $f && -n $p && $(ppu_sums "$f") == "$(ppu_sums "$p")" ]] || moved+="$u "
    done
    while read -r user used; do
        [[ $moved == *" $used "* && $fresh != *" $user "* ]] || continue
        [[ -n $(find "$units" -maxdepth 1 -iname "$user.ppu" -print -quit) ]] && echo "$user (uses $used)"
    done < "$deps"
    return 0
}
