#!/usr/bin/env bash
# refresh-patches.sh [NAME...]: re-diff each patch against the current
# server-min/ tree (like `quilt refresh`), keeping its DEP-3 header.  A patch
# whose hunks no longer apply is reported and left untouched.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
names=("$@")
if ((${#names[@]} == 0)); then
    while read -r p; do [[ -z $p || $p == \#* ]] || names+=("${p%.patch}"); done < patches/series
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
for n in "${names[@]}"; do
    p=patches/$n.patch
    rm -rf "$tmp/a" "$tmp/b"
    mkdir -p "$tmp/a" "$tmp/b"
    cp -r server-min "$tmp/a/" && cp -r server-min "$tmp/b/"
    if ! patch -d "$tmp/b" -p1 -s --no-backup-if-mismatch -r - < "$p" > "$tmp/log" 2>&1; then
        echo "refresh: $p no longer applies:" >&2; cat "$tmp/log" >&2; rc=1; continue
    fi
    { sed -n '1,/^---$/p' "$p"
      (cd "$tmp" && diff -Nru a/server-min b/server-min || true) |
          sed -E -e '/^diff -Nru /d' -e 's#^(---|\+\+\+) ([ab]/server-min/[^\t]*)\t.*#\1 \2#'
    } > "$tmp/new"
    if cmp -s "$tmp/new" "$p"; then echo "refresh: $p unchanged"; else mv "$tmp/new" "$p"; echo "refresh: $p refreshed"; fi
done
exit $rc
