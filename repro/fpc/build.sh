#!/usr/bin/env bash
# repro/fpc/build.sh - build the real TFPHttpServer program (fpserver.lpr).
#
# usage: repro/fpc/build.sh [--fpc FPC] [--set SET] [--out DIR] [--program LPR] [--tree DIR]
#   --fpc FPC  the compiler: Debian's fpc (default), or the trunk wrapper
#              build/fpc-trunk/bin/fpc (scripts/fpc-trunk.sh), or any
#              compiler whose fcl-web sources it can read
#   --set SET  the Pascal patch set compiled into fphttpserver: stock (no
#              patch, the default), a fix's name, two names joined by '+',
#              or all (the whole series in order).  A fix is every patch of
#              patches/fpc/series named <fix> or <fix>.<part>, in series order
#              (poll-can-read is poll-can-read and poll-can-read.fcl-web)
#   --out DIR  where the program goes (default build/fpc-<version>);
#              build/real-trunk/<SET> is what the Makefile uses for trunk
#   --program LPR  the program to compile (default repro/fpc/fpserver.lpr):
#              any program using fphttpserver gets the same patched overlay
#   --tree DIR the package folders of another FPCSource tree (an older
#              commit's, repro/bisect) searched before the compiler's own;
#              not with --set (the patches are against the snapshot)
#   --overlay-only  make DIR/overlay for SET, print its path, compile nothing
#              (scripts/check-fpc-patches.sh checks what a build applies)
# A patch set other than stock needs a compiler that reads fcl-web from
# source (the trunk wrapper): the patched copies of the upstream files are
# put in DIR/overlay and searched before the tree's own.
# Prints the compiler version and the program path on stdout.
set -euo pipefail
kit_name=fpc-build
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"

fpc=${FPC:-fpc} set=stock out="" program=$top/repro/fpc/fpserver.lpr tree="" overlay_only=0
while (($#)); do
    case $1 in
    --fpc) fpc=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --program) program=$(realpath "$2"); shift 2 ;;
    --tree) tree=$(realpath "$2"); shift 2 ;;
    --overlay-only) overlay_only=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ $1 != -* && $fpc == fpc ]] && { fpc=$1; shift; continue; }   # old form: build.sh FPC
       die "unknown argument '$1' (see --help)" ;;
    esac
done
require_command "$fpc" fpc
version=$("$fpc" -iV)
target=$("$fpc" -iTP)-$("$fpc" -iTO)
out=${out:-$top/build/fpc-$version}
mkdir -p "$out/units"

# The patches of SET, in series order.  The series is stacked (each patch
# cut on the one before), and a set other than all leaves some out: patch
# applies each by its context, with patch's default fuzz, where git am would
# want the exact lines.  scripts/check-fpc-patches.sh proves, for every set
# make real-trunk builds, that the result is the file git cherry-pick makes
# of the same commits on the snapshot.
pdir=${KIT_FPC_PATCHES:-$top/patches/fpc}   # another folder: scripts/check-fpc-patches.sh's
series=$pdir/series
patches=()
if [[ $set != stock ]]; then
    [[ -f $series ]] || die "no Pascal series ($series)"
    mapfile -t names < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$series")
    want=" ${set//+/ } " found=" "
    for n in "${names[@]}"; do
        n=${n%.patch}
        fix=${n%%.*}
        if [[ $set == all || $want == *" $fix "* ]]; then patches+=("$pdir/$n.patch"); found+="$fix "; fi
    done
    if [[ $set != all ]]; then
        for fix in $want; do [[ $found == *" $fix "* ]] || die "no patch of $fix in $series"; done
    fi
fi

# Overlay: fresh copies of every upstream file a patch touches, patched.
flags=()
rm -rf "$out/overlay"
if ((${#patches[@]})); then
    srcroot=$(dirname "$(dirname "$(command -v "$fpc")")")/src   # build/fpc-trunk/src
    [[ -d $srcroot/packages ]] || die "--set $set needs the trunk wrapper (no source tree next to $fpc)"
    for p in "${patches[@]}"; do
        while read -r f; do
            [[ -f $out/overlay/$f ]] && continue
            mkdir -p "$out/overlay/$(dirname "$f")"
            cp "$srcroot/$f" "$out/overlay/$f"
            flags+=("-Fu$out/overlay/$(dirname "$f")" "-Fi$out/overlay/$(dirname "$f")")
        done < <(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$p")
        patch -s -p1 -d "$out/overlay" --no-backup-if-mismatch < "$p" \
            || die "$(basename "$p") does not apply on top of the set so far"
    done
fi
if ((overlay_only)); then
    echo "$out/overlay"
    exit 0
fi
# Another tree's package folders, in front of the compiler's: the same
# subfolders as scripts/fpc-trunk.sh's cfg, most specific first (a cfg's
# later lines are searched first, command-line paths in their order).
if [[ -n $tree ]]; then
    [[ $set == stock ]] || die "--tree and --set $set: the patches are against the snapshot"
    dirs=("$tree"/packages/*/src{,/inc,/unix,/linux,/base})
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        [[ -d ${dirs[i]} ]] && flags+=("-Fu${dirs[i]}" "-Fi${dirs[i]}")
    done
fi
echo "fpc $version ($target) set=$set${tree:+ tree=$tree}"
[[ -f $program ]] || die "no program $program"
"$fpc" -O2 -vew -l- "${flags[@]}" -FE"$out" -FU"$out/units" "$program" >&2
name=$(basename "$program"); name=${name%.*}
for exe in "$out/$name" "$out/$name.exe"; do
    [[ -f $exe ]] && { echo "$exe"; exit 0; }
done
die "no program in $out"
