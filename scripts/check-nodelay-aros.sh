#!/usr/bin/env bash
# scripts/check-nodelay-aros.sh FPCSOURCE - compile fphttpserver with the
# Pascal set-tcp-nodelay patch for x86_64-aros, an Amiga-like target whose
# sockets unit declares neither IPPROTO_TCP nor TCP_NODELAY, with the kit's
# trunk compiler (build/fpc-trunk/bin/ppcx64 has the x86_64 back end, which
# AROS uses; its object writer is internal, so no AROS binutils are needed).
#
# FPCSOURCE is a full FPCSource tree (a checkout at the snapshot's commit,
# 1dba64b): the kit's snapshot holds no rtl/aros, rtl/amicommon or
# packages/arosunits, so without such a tree this is a SKIP.  It is only
# read: the AROS RTL is built (make -C rtl OS_TARGET=aros CPU_TARGET=x86_64;
# the host's `as` assembles its one .as start-up file) and fphttpserver is
# compiled in a temporary folder.  TEST lines:
#   nodelay-aros rtl         the AROS RTL builds with the trunk compiler
#   nodelay-aros stock       the snapshot's fphttpserver.pp compiles for AROS
#   nodelay-aros guarded     with patches/fpc/set-tcp-nodelay.patch it compiles
#   nodelay-aros unguarded   with the patch's declared() guards made true it
#                            stops at 'Identifier not found "IPPROTO_TCP"':
#                            the proof that the compile sees the guard
# make test runs scripts/check-nodelay-guard.py instead (every target, from
# the sockets sources the snapshot does hold).
# Exit: 0 passed, 1 a check failed, 4 skipped (no tree, toolchain or as).
set -uo pipefail
export LC_ALL=C
kit_name=check-nodelay-aros
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

full=${1:-${KIT_FPCSOURCE_FULL:-}}
ppc=$top/build/fpc-trunk/bin/ppcx64
snap=$top/build/fpc-trunk/src
patch=$top/patches/fpc/set-tcp-nodelay.patch
unit=packages/fcl-web/src/base/fphttpserver.pp

[ -x "$ppc" ] || { test_skip nodelay-aros "no trunk toolchain at build/fpc-trunk (make fpc-trunk)"; exit $KSFT_SKIP; }
if [ -z "$full" ] || [ ! -d "$full/rtl/aros" ] || [ ! -d "$full/packages/arosunits/src" ]; then
    test_skip nodelay-aros "no full FPCSource tree given (FPCSOURCE with rtl/aros and packages/arosunits; the snapshot has neither)"
    exit $KSFT_SKIP
fi
command -v as > /dev/null || { test_skip nodelay-aros "no 'as' (binutils) for the RTL's start-up file"; exit $KSFT_SKIP; }
require_command patch patch nodelay-aros
kit_mktemp tmp
failed=0

# The AROS RTL, from a copy of the tree's rtl (make writes into it).
cp -r "$full/rtl" "$tmp/rtl"
if ! nice make -C "$tmp/rtl" all OS_TARGET=aros CPU_TARGET=x86_64 BINUTILSPREFIX= PP="$ppc" \
        > "$tmp/rtl.log" 2>&1 || [ ! -f "$tmp/rtl/units/x86_64-aros/system.ppu" ]; then
    test_fail "nodelay-aros rtl" "the AROS RTL did not build: $(grep -m1 -E 'Error|Fatal|\*\*\*' "$tmp/rtl.log")"
    exit $KSFT_FAIL
fi
test_ok "nodelay-aros rtl"

P=$full/packages
cfg=$tmp/aros.cfg
{
    echo "-Taros"
    echo "-Fu$tmp/rtl/units/x86_64-aros"
    for d in arosunits/src rtl-objpas/src/inc rtl-extra/src/aros rtl-extra/src/inc \
             fcl-base/src fcl-net/src fcl-json/src hash/src fcl-hash/src; do
        echo "-Fu$P/$d"
        echo "-Fi$P/$d"
    done
    echo "-Fi$P/rtl-objpas/src/x86_64"
    echo "-Fi$P/fcl-net/src/aros"
} > "$cfg"

# compile NAME DIR: fphttpserver.pp of DIR (with the snapshot's fcl-web
# beside it) for AROS; its log in $tmp/NAME.log.
compile() {
    mkdir -p "$tmp/$1.units"
    nice "$ppc" -n @"$cfg" -FU"$tmp/$1.units" -Fu"$2" -Fi"$2" -Fu"$snap/packages/fcl-web/src/base" \
        "$2/fphttpserver.pp" > "$tmp/$1.log" 2>&1
}
# overlay NAME: the snapshot's fcl-web/src/base with the patch applied.
overlay() {
    mkdir -p "$tmp/$1"
    cp "$snap/packages/fcl-web/src/base/"*.pp "$tmp/$1/"
    mkdir -p "$tmp/$1.tree/$(dirname "$unit")"
    cp "$snap/$unit" "$tmp/$1.tree/$unit"
    cp "$snap/packages/fcl-web/src/base/httpdefs.pp" "$tmp/$1.tree/packages/fcl-web/src/base/"
    patch -d "$tmp/$1.tree" -p1 -s --no-backup-if-mismatch < "$2" > "$tmp/$1.patch.log" 2>&1 || return 1
    cp "$tmp/$1.tree/packages/fcl-web/src/base/"*.pp "$tmp/$1/"
}

mkdir -p "$tmp/stock" && cp "$snap/packages/fcl-web/src/base/"*.pp "$tmp/stock/"
if compile stock "$tmp/stock"; then test_ok "nodelay-aros stock"; else
    test_fail "nodelay-aros stock" "$(grep -m1 -E 'Error|Fatal' "$tmp/stock.log")"; failed=1; fi

if ! overlay guarded "$patch"; then
    test_fail "nodelay-aros guarded" "the patch does not apply to the snapshot: $(head -1 "$tmp/guarded.patch.log")"; failed=1
elif compile guarded "$tmp/guarded"; then
    test_ok "nodelay-aros guarded"
else
    test_fail "nodelay-aros guarded" "$(grep -m1 -E 'Error|Fatal' "$tmp/guarded.log")"; failed=1
fi

sed -E 's/^\+\{\$if declared\([^}]*\}/+{$if 1=1}/' "$patch" > "$tmp/unguarded.patch"
if cmp -s "$tmp/unguarded.patch" "$patch"; then
    test_fail "nodelay-aros unguarded" "the patch has no {\$if declared(...)} guard to make true"; failed=1
elif ! overlay unguarded "$tmp/unguarded.patch"; then
    test_fail "nodelay-aros unguarded" "the unguarded patch does not apply"; failed=1
elif compile unguarded "$tmp/unguarded"; then
    test_fail "nodelay-aros unguarded" "compiles without its guard: the compile cannot see what the guard is for"; failed=1
elif grep -q 'Identifier not found "IPPROTO_TCP"' "$tmp/unguarded.log"; then
    test_ok "nodelay-aros unguarded" "stops at: $(grep -m1 'Identifier not found' "$tmp/unguarded.log")"
else
    test_fail "nodelay-aros unguarded" "failed otherwise: $(grep -m1 -E 'Error|Fatal' "$tmp/unguarded.log")"; failed=1
fi
exit $((failed ? KSFT_FAIL : KSFT_PASS))
