#!/usr/bin/env bash
# scripts/fpc-trunk.sh [SRC] - a Free Pascal trunk toolchain from source, cached.
#
# SRC is an FPCSource tree: a checkout (git or not) or a tarball (.tar.xz,
# .tar.gz).  Default: $FPCSRC, else the snapshot in ../shared/upstream/ next
# to the repository.  Builds, under build/fpc-trunk/:
#   src/        a private copy of the parts of SRC the build needs (compiler,
#               rtl, the package sources fphttpserver uses); SRC is never
#               written to
#   bin/ppcx64  the trunk compiler, bootstrapped from the installed FPC
#               (3.2.2): stage 1 of FPC's `make cycle` (the RTL and the
#               compiler compiled by 3.2.2, the compiler with OPT=-O2),
#               then the RTL compiled again by
#               that compiler.  The cycle's two further stages only prove the
#               compiler reproduces itself; what it compiles is the same
#               bytes (scripts/check-fpc-bootstrap.sh compares the RTL and
#               the server against a cycled toolchain, in `make test`).
#               KIT_FPC_CYCLE=1: the full `make cycle` instead
#   bin/fpc     a wrapper that compiles with that compiler, its own Linux RTL
#               and the package SOURCES (-n: Debian's fpc.cfg and its 3.2.2
#               units are never read)
#   stamp       what was built from: the source identity, the bootstrap
#               compiler and this script; a second run with the same three
#               prints "cached" and returns at once
# Exit: 0 built or cached, 1 build failed, 4 skipped (no source tree, or no
# bootstrap compiler), with a 'TEST: fpc-trunk [SKIP] <why>' line.
set -uo pipefail
kit_name=fpc-trunk
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT

out=$top/build/fpc-trunk
default_src=$top/../shared/upstream/fpcsource-1dba64b-min.tar.xz
src=${1:-${FPCSRC:-$default_src}}
bootstrap=${PP:-$(command -v ppcx64 || true)}

# The parts of an FPCSource tree the Linux and win64 builds read.
PKGS="rtl-objpas rtl-extra pthreads fcl-base fcl-net fcl-json fcl-process hash fcl-hash fcl-web winunits-base fcl-xml fcl-fpcunit rtl-generics regexpr"

[ -e "$src" ] || { test_skip fpc-trunk "no FPCSource tree at $src (pass one: make repro FPCSRC=/path/to/fpcsource)"; exit $KSFT_SKIP; }
[ -n "$bootstrap" ] || { test_skip fpc-trunk "no bootstrap compiler ppcx64 (Debian package: fpc)"; exit $KSFT_SKIP; }
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")

# source_id: what identifies the tree's content without reading all of it.
source_id() {
    if [ -f "$src" ]; then
        sha256sum "$src" | cut -c1-16
    elif git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
        { git -C "$src" rev-parse HEAD; git -C "$src" status --porcelain -- compiler rtl packages | sort;
          git -C "$src" diff HEAD -- compiler rtl packages; } | sha256sum | cut -c1-16
    else
        (cd "$src" && find compiler rtl packages -type f -printf '%P %s %T@\n' 2>/dev/null | sort) \
            | sha256sum | cut -c1-16
    fi
}

if [ "${KIT_FPC_CYCLE:-0}" = 1 ]; then mode=cycle; else mode=stage1; fi
want="src=$(source_id) bootstrap=$("$bootstrap" -iV) build=$mode script=$(sha256sum "$0" | cut -c1-16)"
if [ -x "$out/bin/fpc" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$want" ]; then
    echo "fpc-trunk: cached ($("$out/bin/fpc" -iV), $want)"
    exit 0
fi

t0=$(date +%s)
rm -rf "$out"
mkdir -p "$out/src" "$out/bin"
echo "fpc-trunk: copying the tree ($src)"
if [ -f "$src" ]; then
    tar -xaf "$src" -C "$out/src" || die "cannot unpack $src"
else
    dirs=(compiler rtl)
    for p in $PKGS; do [ -d "$src/packages/$p" ] && dirs+=("packages/$p"); done
    (cd "$src" && tar -cf - --exclude=.git "${dirs[@]}" Makefile* fpmake* 2>/dev/null) \
        | tar -xf - -C "$out/src" || die "cannot copy $src"
fi
[ -f "$out/src/compiler/pp.pas" ] || die "$src is not an FPCSource tree (no compiler/pp.pas)"

# make_step LOG ARGS...: one make in the compiler folder, its log kept.
make_step() {
    local log=$1; shift
    make -C "$out/src/compiler" "$@" >> "$out/$log" 2>&1 && return 0
    tail -20 "$out/$log" >&2
    die "make -C compiler $* failed (build/fpc-trunk/$log)"
}
if [ "$mode" = cycle ]; then
    # The cycle builds the compiler three times over itself and the Linux
    # RTL each time, and compares the last two compilers.
    echo "fpc-trunk: make -C compiler cycle (bootstrap $bootstrap $("$bootstrap" -iV); log build/fpc-trunk/cycle.log)"
    make_step cycle.log cycle PP="$bootstrap" -j"$(nproc)"
    cp "$out/src/compiler/ppcx64" "$out/bin/ppcx64"
else
    # The cycle's first stage (its own target, ppc1), then the RTL again
    # with ppc1, as the cycle's second stage starts.  rtlclean and rtl are
    # two makes: one make -j would run them side by side.
    ppc1=$out/src/compiler/ppc1
    echo "fpc-trunk: make -C compiler ppc1, then rtl with it (bootstrap $bootstrap $("$bootstrap" -iV); log build/fpc-trunk/bootstrap.log)"
    # ppc1's own code optimised (OPT=-O2; the RTL after it is compiled
    # without OPT, as the cycle compiles it): it compiles every unit of
    # the kit 14 % faster (10.3 against 12.2 CPU-s for a Horse build here),
    # to the same bytes (scripts/check-fpc-bootstrap.sh).
    make_step bootstrap.log ppc1 PP="$bootstrap" OPT=-O2 -j"$(nproc)"
    make_step bootstrap.log rtlclean FPC="$ppc1"
    make_step bootstrap.log rtl FPC="$ppc1" -j"$(nproc)"
    cp "$ppc1" "$out/bin/ppcx64"
fi

# Unit and include paths: the package source folders the build may read.
# Linux: src, src/inc, src/unix, src/linux of every package.
gcclib=$(dirname "$(gcc -print-libgcc-file-name 2>/dev/null || echo /usr/lib/gcc/x86_64-linux-gnu/12/x)")
{
    echo "-Fu$out/src/rtl/units/x86_64-linux"
    for p in $PKGS; do
        for d in src src/inc src/unix src/linux src/base; do
            [ -d "$out/src/packages/$p/$d" ] || continue
            echo "-Fu$out/src/packages/$p/$d"
            echo "-Fi$out/src/packages/$p/$d"
        done
    done
    echo "-Fl$gcclib"
} > "$out/linux.cfg"

cat > "$out/bin/fpc" <<WRAP
#!/bin/sh
# Trunk compiler from $src; never reads /etc/fpc.cfg (-n).
exec "$out/bin/ppcx64" -n @"$out/linux.cfg" "\$@"
WRAP
chmod +x "$out/bin/fpc"

# Prove the wrapper builds what fphttpserver needs (19 units, ~2 s).
kit_mktemp probe_dir
cat > "$probe_dir/p.pas" <<'PAS'
program p;
uses cthreads, Classes, SysUtils, Sockets, ssockets, httpdefs, fphttpserver;
begin
end.
PAS
if ! "$out/bin/fpc" -FU"$probe_dir" -FE"$probe_dir" "$probe_dir/p.pas" > "$out/units.log" 2>&1; then
    tail -20 "$out/units.log" >&2
    die "the trunk compiler cannot build fphttpserver's units (build/fpc-trunk/units.log)"
fi
echo "$want" > "$out/stamp"
echo "fpc-trunk: built $("$out/bin/fpc" -iV) in $(( $(date +%s) - t0 )) s ($want)"
