#!/usr/bin/env bash
# scripts/upstream.sh [--author "Name <address>"] [--out DIR] - `make upstream`:
# the filing bundle, written from the committed sources.
#
#   DIR/fpc/cover.md               the one-page cover
#   DIR/fpc/NN-topic/              one folder per public report
#                                  (repro/harness/patchset.py reports): its
#                                  commits as git format-patch files, cut to
#                                  git am ALONE on the pristine snapshot
#                                  (scripts/fpc-series.sh --reports), its
#                                  report.md and its reproducers (bN.lpr)
#   DIR/fpc-confidential/          the security-relevant report, the same
#                                  form, addressed to FPC's confidential
#                                  issue channel: it stays out of any public
#                                  copy until FPC has released a fix
#   DIR/horse/                     patches/horse, re-authored
#
# DIR defaults to results/upstream (its fpc, fpc-confidential and horse
# folders are replaced).  Every commit is authored by --author (make
# upstream AUTHOR="Name <address>"), else git config user.name and
# user.email; an empty, malformed or placeholder identity (reserved or
# example domains, no-reply hosts, localhost: scripts/lib.sh
# KIT_PLACEHOLDER_EMAIL) is refused, exit 1, saying why.  The texts come
# from repro/report/upstream_bundle.py (KIT_URL: the kit's link in them).
# A report whose commit conflicts on the pristine snapshot is an error
# naming the patch.  Exit: 0 written, 1 refused or failed.
set -uo pipefail
export LC_ALL=C
kit_name=upstream
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

author="" out=$top/results/upstream
while (($#)); do
    case $1 in
    --author) author=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
kit_filing_author "$author" || die "refused: $kit_author_why"
name=$kit_author_name email=$kit_author_email
horsesrc=${HORSESRC:-$top/../shared/upstream/horse-ff41415.tar.xz}

tmp="" && kit_mktemp tmp
mkdir -p "$out" || die "cannot make $out"
out=$(cd "$out" && pwd)

# The Pascal reports, each cut alone on the snapshot.
KIT_AUTHOR_NAME=$name KIT_AUTHOR_EMAIL=$email "$top/scripts/fpc-series.sh" --reports "$tmp/fpc" > "$tmp/series.log" 2>&1 \
    || die "$(sed 's/^fpc-series: //' "$tmp/series.log" | tail -1)"
rm -rf "$out/fpc" "$out/fpc-confidential" "$out/horse"
mkdir -p "$out/fpc"
for d in "$tmp/fpc"/*/; do
    r=$(basename "$d")
    if [ "$r" = confidential ]; then cp -a "$d" "$out/fpc-confidential"; else cp -a "$d" "$out/fpc/$r"; fi
done

# The Horse patches: written against Horse's master (repro/horse/current/
# MANIFEST), so each is checked as scripts/check-horse-patches.sh checks
# it: alone on Horse's snapshot, its tests.yml hunks left out (ff41415 has
# no FPC trunk job), and whole on HORSE_CURRENT where there is one; then
# re-authored, every hunk kept.
mapfile -t hnames < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/horse/series")
if ((${#hnames[@]})); then
    [ -f "$horsesrc" ] || die "no Horse snapshot $horsesrc (HORSESRC=...)"
    h=$tmp/horse
    mkdir -p "$h" "$out/horse" || die "cannot make $out/horse"
    tar -C "$h" -xf "$horsesrc" || die "cannot unpack $horsesrc"
    current=${HORSE_CURRENT:-$top/build/horse/current}
    for n in "${hnames[@]}"; do
        git -C "$h" apply --check --exclude=.github/workflows/tests.yml "$top/patches/horse/$n" > "$tmp/am.log" 2>&1 \
            || die "patches/horse/$n does not apply alone on Horse ff41415: $(grep -m1 -iE 'error|failed' "$tmp/am.log")"
        if [ -d "$current" ]; then
            git -C "$current" apply --check "$top/patches/horse/$n" > "$tmp/am.log" 2>&1 \
                || die "patches/horse/$n does not apply on $current: $(grep -m1 -iE 'error|failed' "$tmp/am.log")"
        fi
        # The From: header (with its folded lines) becomes the filer's.
        awk -v who="From: $name <$email>" '
            !done && /^From: / { print who; skip = 1; next }
            skip && /^[ \t]/ { next }
            skip { skip = 0; done = 1 }
            { print }' "$top/patches/horse/$n" > "$out/horse/$n" || die "$n: cannot re-author"
    done
fi

python3 "$top/repro/report/upstream_bundle.py" "$out" || exit 1

# Every commit written is the filer's.
bad=$(grep -L -F -x -e "From: $name <$email>" "$out"/fpc/*/*.patch "$out"/fpc-confidential/*.patch "$out"/horse/*.patch 2>/dev/null \
      | while read -r p; do
            git mailinfo /dev/null /dev/null < "$p" 2>/dev/null | grep -qx "Email: $email" || echo "$p"
        done)
[ -z "$bad" ] || die "not authored by $name <$email>: $bad"
count() { find "$@" -name '*.patch' | wc -l; }
np=$(find "$out/fpc" -mindepth 1 -maxdepth 1 -type d | wc -l)
echo "upstream: wrote ${out#"$top"/}: cover, $np public reports ($(count "$out/fpc") commits), fpc-confidential ($(count "$out/fpc-confidential") commits), horse ($(count "$out/horse") patches), every commit by $name <$email>"
[ -n "${KIT_URL:-}" ] || note "no KIT_URL: the texts name the kit without a link (KIT_URL=https://... make upstream)"
exit 0
