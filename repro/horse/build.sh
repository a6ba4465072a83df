#!/usr/bin/env bash
# repro/horse/build.sh - build a Horse program from Horse's own sources.
#
# usage: repro/horse/build.sh --tc trunk|win64|322 [--set FPCSET] [--horse HSET]
#                             [--program kithorse|epoll|console] [--out DIR]
#   --tc       the compiler: the trunk toolchain (build/fpc-trunk/bin/fpc),
#              its win64 cross compiler (fpc-win64), or Debian's fpc 3.2.2
#   --set      the Pascal patch set of fcl-web (patches/fpc/, as for
#              repro/fpc/build.sh: stock, a name, A+B, all); trunk/win64 only
#   --horse    the Horse-side patch set (patches/horse/series, and the kit's
#              simulations of merged Horse fixes, repro/horse/sim/series):
#              stock, a name, A+B, or all (patches/horse only); applied to
#              the Horse tree with git am, simulations first, series order
#              (their tests.yml hunks left out: a build needs src/, and
#              they are written for Horse's master, whose FPC jobs ff41415
#              has not)
#   --program  kithorse (repro/horse/kithorse.lpr, FPC provider), epoll (the
#              same program with -dHORSE_PROVIDER_EPOLL), or console (Horse's
#              own samples/lazarus/console/Console.lpr, unchanged)
#   --out      the program's folder (default build/horse/<tc>/<set>/<hset>/
#              <program>/)
# The Horse tree is HORSESRC (a checkout or a tarball), default the snapshot
# ../shared/upstream/horse-ff41415.tar.xz, unpacked under build/horse/trees/;
# nothing of Horse is kept in the kit (KIT_HORSE_TREES=DIR: another folder
# for the unpacked trees).  The program goes to --out and is cached there:
# rebuilt only when the Horse tree, the compiler, the patches (the Pascal
# ones of KIT_FPC_PATCHES if set, as repro/fpc/build.sh reads them), the
# program or this script change (the key is in the folder's stamp).  Prints
# the program's path.
set -euo pipefail
kit_name=horse-build
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"

tc="" set=stock hset=stock prog=kithorse out=""
while (($#)); do
    case $1 in
    --tc) tc=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --horse) hset=$2; shift 2 ;;
    --program) prog=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}
[[ -e $horsesrc ]] || die "no Horse tree at $horsesrc (HORSESRC=...)"
require_command git git

case $tc in
trunk) fpc=$top/build/fpc-trunk/bin/fpc ;;
win64) fpc=$top/build/fpc-trunk/bin/fpc-win64 ;;
322)   fpc=$(command -v fpc || true); [[ $set == stock ]] || die "--set needs the trunk toolchain" ;;
*)     die "--tc trunk|win64|322" ;;
esac
[[ -n $fpc && -x $fpc ]] || die "no compiler for --tc $tc ($fpc)"

# ---- the Horse tree: unpacked once per identity and Horse patch set ----
tree_id() {
    if [[ -f $horsesrc ]]; then sha256sum "$horsesrc" | cut -c1-16
    elif git -C "$horsesrc" rev-parse HEAD > /dev/null 2>&1; then
        { git -C "$horsesrc" rev-parse HEAD; git -C "$horsesrc" diff HEAD; } | sha256sum | cut -c1-16
    else tar -C "$horsesrc" -cf - --sort=name src samples | sha256sum | cut -c1-16
    fi
}
horse_patches() {   # the patch files of HSET, in series order
    # The kit's simulations of merged Horse fixes (repro/horse/sim/) come
    # first: they stand for Horse's master after them.  `all` is the Horse
    # patches only (patches/horse/).
    [[ $hset == stock ]] && return 0
    local series n want=" ${hset//+/ } " d
    for d in "$top/repro/horse/sim" "$top/patches/horse"; do
        series=$d/series
        [[ -f $series ]] || die "no $series"
        [[ $hset == all && $d != "$top/patches/horse" ]] && continue
        while read -r n; do
            n=${n%.patch}
            [[ $hset == all || $want == *" $n "* ]] && { echo "$d/$n.patch"; want=${want/ $n / }; }
        done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$series")
    done
    [[ $hset == all || -z ${want// /} ]] || die "not in patches/horse/series nor repro/horse/sim/series:$want"
}
mapfile -t hpatches < <(horse_patches)
tid=$(tree_id)
pid=$(cat /dev/null "${hpatches[@]}" | sha256sum | cut -c1-12)
trees=${KIT_HORSE_TREES:-$top/build/horse/trees}
tree=$trees/$tid-$hset-$pid
mkdir -p "$trees"
exec 9> "$tree.lock"
flock 9                      # parallel builds share one tree per patch set
if [[ ! -f $tree/.kit-ready ]]; then
    rm -rf "$tree"; mkdir -p "$tree"
    if [[ -f $horsesrc ]]; then tar -C "$tree" -xf "$horsesrc"
    else cp -a "$horsesrc"/. "$tree"/; rm -rf "$tree/.git"; fi
    # A throw-away repository, so that git am applies the format-patch files.
    git -C "$tree" init -q
    git -C "$tree" -c user.name=kit -c user.email=kit@localhost add -A
    git -C "$tree" -c user.name=kit -c user.email=kit@localhost commit -qm "Horse snapshot $tid"
    for p in "${hpatches[@]}"; do
        git -C "$tree" -c user.name=kit -c user.email=kit@localhost am -q --exclude=.github/workflows/tests.yml "$p" \
            || die "$(basename "$p") does not git am on the Horse tree"
    done
    touch "$tree/.kit-ready"
fi
exec 9>&-

# ---- the program and the compiler wrapper ----
defs=(-dUseCThreads)
case $prog in
kithorse) lpr=$top/repro/horse/kithorse.lpr ;;
epoll)    lpr=$top/repro/horse/kithorse.lpr; defs+=(-dHORSE_PROVIDER_EPOLL) ;;
console)  lpr=$tree/samples/lazarus/console/Console.lpr ;;
*)        die "--program kithorse|epoll|console" ;;
esac
if [[ -n $out ]]; then out=$(realpath -m "$out"); else out=$top/build/horse/$tc/$set/$hset/$prog; fi
extra=()
if [[ $tc != 322 ]]; then
    # Units the trunk wrapper's config does not list, that Horse uses: from
    # the toolchain's copy of the tree (a tarball is copied whole), else from
    # FPCSRC (a checkout: scripts/fpc-trunk.sh copies only what fphttpserver
    # needs).
    pkg() {
        local d=$top/build/fpc-trunk/src/packages/$1
        [[ -d $d ]] || d=${FPCSRC:-/nonexistent}/packages/$1
        [[ -d $d ]] || die "no packages/$1 in build/fpc-trunk/src nor in FPCSRC=${FPCSRC:-} (Horse needs it)"
        echo "$d"
    }
    gen=$(pkg rtl-generics) xml=$(pkg fcl-xml) rex=$(pkg regexpr) obj=$(pkg rtl-objpas)
    extra=("-Fu$gen/src" "-Fi$gen/src/inc" "-Fu$xml/src" "-Fi$xml/src" "-Fu$rex/src"
           "-Fi$obj/src/x86_64")
fi
wrapper_text() {
    echo '#!/bin/sh'
    echo "# $fpc with the unit paths Horse needs besides its own (repro/horse/build.sh)"
    printf 'exec "%s"' "$fpc"
    printf ' "%s"' "${defs[@]}" "${extra[@]}"
    echo ' "$@"'
}
# The cache key: what the program is made of, and how it is compiled.
key=$( { cat "$lpr" "$top/repro/fpc/build.sh" "$top/repro/fpc/ppu.sh" "$fpc"; wrapper_text; echo "own units: $tree/src"
         [[ $set == stock ]] || cat "${KIT_FPC_PATCHES:-$top/patches/fpc}"/{series,*.patch}; } \
       | sha256sum | cut -c1-16)
key="tree=$tid-$hset-$pid compiler=$("$fpc" -iV)-$(sha256sum < "$fpc" | cut -c1-8) \
trunk=$(cat "$top/build/fpc-trunk/stamp" 2>/dev/null | tr ' ' ,) inputs=$key"
name=$(basename "$lpr"); name=${name%.*}
mkdir -p "$(dirname "$out")"
exec 8> "$out.lock"
flock 8                      # one build per folder (make horse may run twice)
for exe in "$out/$name" "$out/$name.exe"; do
    if [[ -f $exe && -f $out/stamp && $(cat "$out/stamp") == "$key" ]]; then echo "$exe"; exit 0; fi
done

rm -rf "$out"; mkdir -p "$out/tc/bin"
# build.sh finds the fcl-web sources next to the compiler (../src).
[[ $tc == 322 ]] || ln -s "$top/build/fpc-trunk/src" "$out/tc/src"
wrapper=$out/tc/bin/fpc
wrapper_text > "$wrapper"
chmod +x "$wrapper"
# The wrapper does not name the Horse tree: the units are compiled once per
# compiler and defines (repro/fpc/build.sh's prebuilt units), for every
# Horse tree.  Horse's src is the program's own (--own-units): a unit whose
# file differs from the one the prebuilt units were compiled from, and
# every user of it or of a unit the Pascal set changes, is compiled with the
# program (-FU per build), never copied, so that a Horse or fcl-web change
# can never be picked up stale (repro/horse/rebuild-check.sh).
exe=$("$top/repro/fpc/build.sh" --fpc "$wrapper" --set "$set" --out "$out" --program "$lpr" \
      --own-units "$tree/src" \
      2> "$out/build.log" | tail -1) || { cat "$out/build.log" >&2; die "build failed: $out/build.log"; }
rm -rf "$out/units"
echo "$key" > "$out/stamp"
echo "$exe"
