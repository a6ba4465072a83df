#!/usr/bin/env bash
# scripts/fpc-trunk-win64.sh [SRC] - a win64 cross toolchain on top of the
# cached Linux trunk toolchain (scripts/fpc-trunk.sh), cached the same way.
#
# Builds, under build/fpc-trunk/:
#   src/rtl/units/x86_64-win64   the Windows RTL, compiled by the trunk
#                                ppcx64 (make -C rtl OS_TARGET=win64, ~10 s)
#   win64.cfg                    unit/include paths: that RTL and the package
#                                SOURCE folders (src, src/inc, src/win,
#                                src/windows, winunits-base)
#   bin/fpc-win64                ppcx64 -n -Twin64 @win64.cfg "$@": Windows
#                                .exe files with FPC's internal linker (no
#                                MinGW); -n keeps /etc/fpc.cfg out
#   win64.stamp                  the Linux stamp + this script; a second run
#                                with both unchanged prints "cached" at once
# SRC is passed to scripts/fpc-trunk.sh, which runs first (cached when done).
# Exit: 0 built or cached, 1 build failed, 4 skipped (no Linux trunk
# toolchain), with a 'TEST: fpc-trunk-win64 [SKIP] <why>' line.
set -uo pipefail
kit_name=fpc-trunk-win64
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

out=$top/build/fpc-trunk
ppc=$out/bin/ppcx64

# The Linux toolchain first: built, cached, or a skip we pass on.
"$top/scripts/fpc-trunk.sh" "$@"
rc=$?
if [ $rc -eq $KSFT_SKIP ] || { [ $rc -eq 0 ] && [ ! -x "$ppc" ]; }; then
    test_skip fpc-trunk-win64 "no Linux trunk toolchain to build on (scripts/fpc-trunk.sh exit $rc; needs $ppc)"
    exit $KSFT_SKIP
fi
[ $rc -eq 0 ] || die "scripts/fpc-trunk.sh failed (exit $rc)"

want="$(cat "$out/stamp") win64-script=$(sha256sum "$0" | cut -c1-16)"
if [ -x "$out/bin/fpc-win64" ] && [ "$(cat "$out/win64.stamp" 2>/dev/null)" = "$want" ]; then
    echo "fpc-trunk-win64: cached ($("$out/bin/fpc-win64" -iTP)-$("$out/bin/fpc-win64" -iTO), $want)"
    exit 0
fi
rm -f "$out/win64.stamp" "$out/bin/fpc-win64"

t0=$(date +%s.%N)
echo "fpc-trunk-win64: make -C rtl all OS_TARGET=win64 (log build/fpc-trunk/rtl-win64.log)"
if ! make -C "$out/src/rtl" all OS_TARGET=win64 CPU_TARGET=x86_64 PP="$ppc" > "$out/rtl-win64.log" 2>&1; then
    tail -20 "$out/rtl-win64.log" >&2
    die "Windows RTL build failed (build/fpc-trunk/rtl-win64.log)"
fi
rtl_units=$out/src/rtl/units/x86_64-win64
[ -f "$rtl_units/system.ppu" ] || die "no $rtl_units/system.ppu after the RTL build"
t1=$(date +%s.%N)

# Same packages as the Linux wrapper (linux.cfg), Windows folders instead of
# unix/linux ones; the package list is read from there (one fact, one place).
{
    echo "-Fu$rtl_units"
    sed -n 's|^-Fu\(.*/src/packages/[^/]*\)/src.*|\1|p' "$out/linux.cfg" | sort -u | while read -r p; do
        for d in src src/inc src/win src/windows src/base; do
            [ -d "$p/$d" ] || continue
            echo "-Fu$p/$d"
            echo "-Fi$p/$d"
        done
    done
} > "$out/win64.cfg"

cat > "$out/bin/fpc-win64" <<WRAP
#!/bin/sh
# Trunk compiler targeting win64 with its own Windows RTL; never reads
# /etc/fpc.cfg (-n).  Written by scripts/fpc-trunk-win64.sh.
exec "$ppc" -n -Twin64 -Px86_64 @"$out/win64.cfg" "\$@"
WRAP
chmod +x "$out/bin/fpc-win64"

# Prove the wrapper builds what fphttpserver needs, as a Windows .exe.
# Not $(kit_mktemp): its record of the folder would stay in the subshell.
probe_dir=$(mktemp -d "${TMPDIR:-/tmp}/kit.XXXXXX") || die "mktemp failed"
KIT_TMPS+=("$probe_dir")
cat > "$probe_dir/p.pas" <<'PAS'
program p;
uses Classes, SysUtils, Sockets, WinSock2, ssockets, httpdefs, fphttpserver;
begin
end.
PAS
if ! "$out/bin/fpc-win64" -FU"$probe_dir" -FE"$probe_dir" "$probe_dir/p.pas" > "$out/win64-units.log" 2>&1; then
    tail -20 "$out/win64-units.log" >&2
    die "the win64 wrapper cannot build fphttpserver's units (build/fpc-trunk/win64-units.log)"
fi
[ -f "$probe_dir/p.exe" ] || die "the win64 wrapper wrote no .exe"
t2=$(date +%s.%N)
echo "$want" > "$out/win64.stamp"
awk -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "fpc-trunk-win64: built (Windows RTL %.1f s, fphttpserver units + .exe %.1f s)\n", b - a, c - b }'
