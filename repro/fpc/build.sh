#!/usr/bin/env bash
# repro/fpc/build.sh - build the real TFPHttpServer program (fpserver.lpr).
#
# usage: repro/fpc/build.sh [--fpc FPC] [--set SET] [--out DIR] [--program LPR] [--tree DIR]
#                           [--own-units DIR]
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
#   --own-units DIR  a folder of the program's own units and include files
#              (repro/horse/build.sh: the Horse tree's src), searched before
#              the compiler's folders; not in the prebuilt units' key: its
#              files are compared with those the prebuilt units were
#              compiled from, as an overlay's are; repeatable
#   --overlay-only  make DIR/overlay for SET, print its path, compile nothing
#              (scripts/check-fpc-patches.sh checks what a build applies)
# A patch set other than stock needs a compiler that reads fcl-web from
# source (the trunk wrapper): the patched copies of the upstream files are
# put in DIR/overlay and searched before the tree's own.
# The unpatched units are compiled once per compiler (build/fpc-units/<id>/,
# <id> a hash of the compiler wrapper, every file it names and the trunk
# toolchain's stamp): a set's build starts from copies of them without the
# units its overlay changes, so those are compiled from the overlay; FPC
# compiles a unit that uses one again when the changed unit's checksums
# (the .ppu header) are not those it was compiled against, as in any
# incremental build, and a change to code only leaves them.  The build
# fails if a unit the overlay changes was not compiled in it, or if a
# prebuilt copy was linked that uses a unit whose checksums this build
# moved (repro/fpc/ppu.sh, with FPC's own dependency graph, recorded when
# the stock units were compiled).  The prebuilt units hold those of the
# --own-units folders too, with the folders' files (name and hash) they
# were compiled from: a unit whose file differs here, or is new or gone,
# is left out of the copies the same way (every one of them, if a file
# that is no unit differs: an include file), and the build fails if such a
# unit was linked that this build did not compile.  The log counts the
# units a build compiled.  Not with --tree.
# Prints the compiler version and the program path on stdout.
set -euo pipefail
kit_name=fpc-build
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
# shellcheck source=repro/fpc/ppu.sh
source "$top/repro/fpc/ppu.sh"

fpc=${FPC:-fpc} set=stock out="" program=$top/repro/fpc/fpserver.lpr tree="" overlay_only=0 own=()
while (($#)); do
    case $1 in
    --fpc) fpc=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --program) program=$(realpath "$2"); shift 2 ;;
    --tree) tree=$(realpath "$2"); shift 2 ;;
    --own-units) [[ -d $2 ]] || die "--own-units $2: no such folder"; own+=("$(realpath "$2")"); shift 2 ;;
    --overlay-only) overlay_only=1; shift ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ $1 != -* && $fpc == fpc ]] && { fpc=$1; shift; continue; }   # old form: build.sh FPC
       die "unknown argument '$1' (see --help)" ;;
    esac
done
require_command "$fpc" fpc
version=$("$fpc" -iV)
target=$("$fpc" -iTP)-$("$fpc" -iTO)
out=${out:-$top/build/fpc-$version}
rm -rf "$out/units"
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
# The program's own folders: first on the command line (the prebuilt
# units' compile gets them too: it compiles the program), not in the
# prebuilt units' key.
oflags=()
for d in "${own[@]}"; do oflags+=("-Fu$d" "-Fi$d"); done
echo "fpc $version ($target) set=$set${tree:+ tree=$tree}${own[*]:+ own units=${own[*]}}"
[[ -f $program ]] || die "no program $program"
fpc_flags=(-O2 -vew -l-)

# compiler_ident FILE [DEPTH]: hashes of FILE and, for a script (a wrapper,
# a cfg), of every file it names, three levels deep.
compiler_ident() {
    local f=$1 n=${2:-0} p
    sha256sum < "$f"
    ((n < 3)) && grep -Iq . "$f" || return 0
    grep -o '/[^"'"'"' @]*' "$f" | sort -u | while read -r p; do
        [[ -f $p ]] && compiler_ident "$p" $((n + 1))
    done
    return 0
}
# The stock units of this compiler, compiled once (under a lock: builds run
# side by side): DIR/units, and DIR/deps, 'unit used-unit' a line, from
# FPC's -vu log.
prebuilt_units() {
    local fpc_path id
    fpc_path=$(command -v "$fpc")
    id=$( { compiler_ident "$fpc_path"; echo "$version $target ${fpc_flags[*]}"
            cat "$top/build/fpc-trunk/stamp" 2>/dev/null || true; } \
          | sha256sum | cut -c1-16)
    base=$top/build/fpc-units/$id
    mkdir -p "$top/build/fpc-units"
    exec 7> "$base.lock"
    flock 7
    if [[ ! -f $base/ready ]]; then
        rm -rf "$base"; mkdir -p "$base/units"
        if ! "$fpc" "${fpc_flags[@]}" "${oflags[@]}" -FE"$base" -FU"$base/units" "$program" > "$base/log" 2>&1; then
            grep -E 'Error|Fatal' "$base/log" >&2
            die "the stock units do not compile ($base/log)"
        fi
        # The graph: the program again, its units loaded from their .ppu
        # with -vu (not compiled with it: a unit keeps its verbosity).
        "$fpc" "${fpc_flags[@]}" "${oflags[@]}" -vu -FE"$base" -FU"$base/units" "$program" > "$base/log" 2>&1 \
            || die "the stock program does not compile again ($base/log)"
        # Every unit loaded comes from here, an RTL or an installed compiler's
        # units: a .ppu left in a source folder would be linked unseen.
        stray=$(sed -n 's/.*PPU Name: //p' "$base/log" | { grep -v -e "^$base/units/" -e '/rtl/units/' -e '^/usr/lib/' || true; } | sort -u)
        [[ -z $stray ]] || die "precompiled units outside the toolchain's unit folders (remove them): $(echo $stray)"
        sed -n 's/.*Adding dependency: \([^ ]*\) depends on \([^ ]*\).*/\L\1 \2/p' "$base/log" \
            | sort -u > "$base/deps"
        own_files > "$base/own"
        rm -f "$base/log" "$base"/*.exe
        find "$base" -maxdepth 1 -type f -perm -u+x -delete
        touch "$base/ready"
    fi
    exec 7>&-
}
# The units the overlay changes, lower case; none if it changes a file that
# is no unit (an include file: its units are not known here).
changed_units() {
    local f
    while read -r f; do
        case $f in
        *.pp|*.pas|*.p) f=${f##*/}; f=${f%.*}; echo "${f,,}" ;;
        *) return 1 ;;
        esac
    done < <(cd "$out/overlay" 2>/dev/null && find . -type f)
}
# The files of the own folders: 'folder-number file-name sha256' a line.
own_files() {
    local i
    for i in "${!own[@]}"; do
        (cd "${own[i]}" && find . -maxdepth 1 -type f -printf '%f\0' | sort -z | xargs -0r sha256sum) \
            | awk -v i="$i" '{ h = $1; sub(/^[^ ]+  /, ""); print i, $0, h }'
    done
}
# The own units this build must compile, lower case: those whose file
# differs from the prebuilt units' (BASE/own), or is new or gone; all of
# them if a file that is no unit differs, or BASE has no list.
own_changed() {
    local f all=0 d ref="" here
    here=$(own_files)
    if [[ -f $base/own ]]; then ref=$(cat "$base/own"); else all=1; fi
    d=$(printf '%s\n' "$here" "$ref" | sed '/^$/d' | sort | uniq -u | cut -d' ' -f2- | sed 's/ [^ ]*$//')
    while read -r f; do
        [[ -n $f ]] || continue
        case ${f,,} in *.pp|*.pas|*.p) ;; *) all=1 ;; esac
    done <<< "$d"
    ((all)) && d=$(printf '%s\n' "$here" "$ref" | sed '/^$/d' | cut -d' ' -f2- | sed 's/ [^ ]*$//')
    while read -r f; do
        case ${f,,} in *.pp|*.pas|*.p) f=${f%.*}; echo "${f,,}" ;; esac
    done <<< "$d" | sort -u
}
# A .ppu in an own folder would be loaded instead of its source (the
# prebuilt units' check of what was loaded ran with another folder).
if ((${#own[@]})); then
    stray=$(find "${own[@]}" -maxdepth 1 -iname '*.ppu')
    [[ -z $stray ]] || die "precompiled units in an own folder (remove them): $(echo $stray)"
fi
changed=() base="" mine=()
if [[ -z $tree ]] && mapfile -t changed < <(changed_units) && changed_units > /dev/null; then
    prebuilt_units
    if ((${#own[@]})); then
        list=$(own_changed) || die "cannot compare ${own[*]} with $base/own"
        [[ -z $list ]] || mapfile -t mine <<< "$list"
    fi
    # What to compile again: the units the overlay and the own folders
    # change (a changed own unit the program does not use is none of them).
    # Their users are FPC's to judge, as in any incremental build: it
    # compiles a unit again when a unit it uses has other checksums than
    # those it was compiled against (a changed declaration, layout or
    # inline body), and a change to code only leaves the users' prebuilt
    # copies valid.  Checked after the build (repro/fpc/ppu.sh).
    mapfile -t again < <(awk -v seeds="${changed[*]}" -v own="${mine[*]}" '
        { known[$1]; known[$2] }
        END { n = split(seeds, q, " "); for (i = 1; i <= n; i++) print q[i]
              m = split(own, o, " "); for (i = 1; i <= m; i++) if (o[i] in known) print o[i] }' "$base/deps" | sort -u)
    skip=" ${again[*]} ${mine[*]} " copy=()
    for f in "$base/units"/*; do
        [[ -f $f ]] || continue
        u=${f##*/}; u=${u%.*}
        [[ $skip == *" ${u,,} "* ]] || copy+=("$f")
    done
    # Copies with their times (FPC compares a unit's sources with them);
    # never links: a unit FPC compiles again must not write into the shared.
    ((${#copy[@]})) && cp -p "${copy[@]}" "$out/units/"
    echo "prebuilt units: $base (${#copy[@]} files; compiled here: ${#again[@]} units)" >&2
fi
"$fpc" "${fpc_flags[@]}" "${oflags[@]}" "${flags[@]}" -FE"$out" -FU"$out/units" "$program" >&2
# The units this build compiled: every .ppu that is not a prebuilt copy
# (a copy keeps its time and bytes).  Proof that the changed own units
# linked are this build's: each is one of them.
if [[ -n $base ]]; then
    # The files whose bytes differ from the prebuilt ones': one diff for the
    # folder, not a cmp per unit (a build has a hundred); its messages in
    # English, which the sed reads.
    q=$(LC_ALL=C diff -q "$out/units" "$base/units") || [[ $? == 1 ]] || die "cannot compare $out/units with $base/units"
    differ=" $(sed -n 's|^Files .*/\([^/]*\) and .* differ$|\1|p' <<< "$q" | tr '\n' ' ') "
    fresh=" "
    for f in "$out/units"/*.ppu; do
        [[ -f $f ]] || continue
        p=$base/units/${f##*/}
        [[ -f $p && ! $f -nt $p && ! $f -ot $p && $differ != *" ${f##*/} "* ]] && continue
        u=${f##*/}; u=${u%.ppu}; fresh+="${u,,} "
    done
    echo "compiled in this build: $(wc -w <<< "$fresh") units:$fresh" >&2
    stale=$(stale_copies "$out/units" "$base/units" "$base/deps" "$fresh")
    [[ -z $stale ]] || die "prebuilt copies linked although a unit they use moved its checksums in this build: $(echo $stale)"
    for u in "${mine[@]}"; do
        [[ -z $(find "$out/units" -maxdepth 1 -iname "$u.ppu") || $fresh == *" $u "* ]] \
            || die "$u.ppu (changed in ${own[*]}) is the prebuilt copy, not compiled here"
    done
fi
# Proof that the set's own units were linked: every unit the overlay
# changes was compiled in this build (none of it was copied in).
for u in "${changed[@]}"; do
    [[ -n $(find "$out/units" -maxdepth 1 -iname "$u.ppu") ]] || die "$u (changed by set $set) was not compiled from the overlay"
done
name=$(basename "$program"); name=${name%.*}
for exe in "$out/$name" "$out/$name.exe"; do
    [[ -f $exe ]] && { echo "$exe"; exit 0; }
done
die "no program in $out"
