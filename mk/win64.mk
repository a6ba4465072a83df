# mk/win64.mk - the real TFPHttpServer (repro/fpc/fpserver.lpr) as a win64
# .exe, run under Wine by repro/fpc/wine-server.sh.
#
#   make fpc-trunk-win64   the Windows RTL and build/fpc-trunk/bin/fpc-win64
#                          on top of the Linux trunk toolchain (cached)
#   make real-trunk-win64  build/real-trunk-win64/<set>/fpserver.exe for stock,
#                          every Pascal patch and all, plus
#                          build/real-trunk-win64/unix-guard/fpserver.exe:
#                          stock built with -dHORSE334_UNIX_GUARD, Horse
#                          3.3.4's TCP_NODELAY mitigation under a Unix-only
#                          guard (the Windows regression)
#   make win64-check       repro/fpc/win64-check.sh: every build meant to
#                          carry the mitigation shows it in its syscalls and
#                          fixes B3 (same-run ratio; wire when root), and the
#                          unix-guard build fails that check (~2 min)
# Everything skips (with the reason) without a trunk toolchain or Wine.

FPC_WIN64        = build/fpc-trunk/bin/fpc-win64
WIN64_SETS       = stock $(FPC_SERIES) $(if $(FPC_SERIES),all)
WIN64_GUARD_DEFS = -dHORSE334_UNIX_GUARD
WIN64_FPC_GUARD  = build/real-trunk-win64/bin/fpc-win64-unix-guard
REAL_TRUNK_WIN64 = $(foreach s,$(WIN64_SETS) unix-guard,build/real-trunk-win64/$(s)/fpserver.exe)
WIN64_DEPS       = build/fpc-trunk/win64.stamp repro/fpc/fpserver.lpr repro/fpc/build.sh repro/fpc/ppu.sh

.PHONY: fpc-trunk-win64 real-trunk-win64 win64-check wine-prefix

# Always asked; returns at once when the stamps say nothing changed.
fpc-trunk-win64:
	@scripts/fpc-trunk-win64.sh $(FPCSRC)

# Only when missing (a fresh tree): the script builds or skips.
build/fpc-trunk/win64.stamp:
	@scripts/fpc-trunk-win64.sh $(FPCSRC)

# Each set in its own folder; rebuilt when the toolchain, the program, the
# build script or the Pascal series changes.
build/real-trunk-win64/%/fpserver.exe: $(WIN64_DEPS) $(FPC_PATCHES)
	@repro/fpc/build.sh --fpc $(FPC_WIN64) --set $* --out build/real-trunk-win64/$* > /dev/null 2> build/real-trunk-win64-$(subst +,_,$*).log \
	 || { cat build/real-trunk-win64-$(subst +,_,$*).log; exit 1; }
	@scripts/phase.sh tick "built $@"

# The compiler wrapper plus the guard define: build.sh stays define-free.
$(WIN64_FPC_GUARD): build/fpc-trunk/win64.stamp mk/win64.mk
	@mkdir -p $(@D)
	@printf '#!/bin/sh\n# fpc-win64 with $(WIN64_GUARD_DEFS) (mk/win64.mk)\nexec "%s" $(WIN64_GUARD_DEFS) "$$@"\n' \
	  "$(abspath $(FPC_WIN64))" > $@
	@chmod +x $@

build/real-trunk-win64/unix-guard/fpserver.exe: $(WIN64_DEPS) $(WIN64_FPC_GUARD)
	@repro/fpc/build.sh --fpc $(WIN64_FPC_GUARD) --set stock --out build/real-trunk-win64/unix-guard > /dev/null 2> build/real-trunk-win64-unix-guard.log \
	 || { cat build/real-trunk-win64-unix-guard.log; exit 1; }
	@scripts/phase.sh tick "built $@"

real-trunk-win64: fpc-trunk-win64
	@if [ -x $(FPC_WIN64) ]; then \
	  KIT_PHASE_OF=$$($(call BUILDS_DUE,$(REAL_TRUNK_WIN64))) $(MAKE) --no-print-directory $(REAL_TRUNK_WIN64); fi

# The Wine prefix template (repro/harness/wineprefix.py): one wineboot per machine
# and Wine version, so that no run waits for one.  make real-servers makes
# it beside the builds (scripts/builds.sh).
wine-prefix:
	@if command -v wine > /dev/null; then python3 repro/harness/wineprefix.py --template > /dev/null; fi

win64-check: real-trunk-win64 wine-prefix build/probe build/pcap-analyse
	@repro/fpc/win64-check.sh
