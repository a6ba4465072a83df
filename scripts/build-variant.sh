#!/usr/bin/env bash
# build-variant.sh VARIANT OUTDIR CC CFLAGS...
# Copies the pristine server-min/ tree to OUTDIR/src, applies the variant's
# patch(es) from patches/series (one for a fix, several for "a+b", all of
# them in order for "all"), and leaves the patched tree there for the compiler.  A patch that
# does not apply fails the build with its name.
set -euo pipefail
variant=$1 outdir=$2
top=$(cd "$(dirname "$0")/.." && pwd)
series=$top/patches/series

patches=()
case $variant in
stock) ;;
all) while read -r p; do [[ -z $p || $p == \#* ]] || patches+=("$p"); done < "$series" ;;
*)
    # A fix, or fixes joined with '+' (applied in series order).
    IFS=+ read -ra wanted <<< "$variant"
    for w in "${wanted[@]}"; do
        if ! grep -qx "$w.patch" "$series"; then
            echo "build-variant: no patch '$w.patch' in patches/series" >&2
            exit 1
        fi
    done
    while read -r p; do
        for w in "${wanted[@]}"; do [[ $p == "$w.patch" ]] && patches+=("$p"); done
    done < "$series" ;;
esac

rm -rf "$outdir/src"
mkdir -p "$outdir/src"
cp -r "$top/server-min" "$outdir/src/"
for p in "${patches[@]}"; do
    if ! patch -d "$outdir/src" -p1 -s --no-backup-if-mismatch --forward \
            -r - < "$top/patches/$p" > "$outdir/patch.log" 2>&1; then
        echo "build-variant: patches/$p does not apply to server-min/ (variant $variant):" >&2
        cat "$outdir/patch.log" >&2
        exit 1
    fi
done
