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

# The Horse patches: each applied alone on Horse's snapshot (as
# scripts/check-horse-patches.sh does), re-authored, cut again.
mapfile -t hnames < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/horse/series")
if ((${#hnames[@]})); then
    [ -f "$horsesrc" ] || die "no Horse snapshot $horsesrc (HORSESRC=...)"
    h=$tmp/horse
    mkdir -p "$h" "$out/horse" || die "cannot make $out/horse"
    tar -C "$h" -xf "$horsesrc" || die "cannot unpack $horsesrc"
    hg() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C "$h" -c core.abbrev=7 \
           -c user.name="$name" -c user.email="$email" "$@"; }
    { hg init -q -b base && hg add -A && hg commit -qm "Horse ff41415"; } || die "cannot make a repository of $horsesrc"
    for n in "${hnames[@]}"; do
        hg checkout -q -B "${n%.patch}" base || die "cannot branch ${n%.patch}"
        hg am -q "$top/patches/horse/$n" > "$tmp/am.log" 2>&1 \
            || { hg am --abort > /dev/null 2>&1; die "patches/horse/$n does not apply alone on Horse ff41415: $(grep -m1 -iE 'error|failed' "$tmp/am.log")"; }
        hg commit -q --amend --no-edit --author="$name <$email>" || die "$n: cannot re-author"
        hg format-patch -q --no-signature -o "$out/horse" base.."${n%.patch}" || die "$n: git format-patch failed"
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
