# mk/fpc.mk - the real TFPHttpServer (repro/fpc/fpserver.lpr).
#
#   make fpc-trunk         the trunk toolchain from an FPCSource tree
#                          (FPCSRC=..., default the snapshot in ../shared/upstream)
#   make real-trunk        build/real-trunk/<set>/fpserver for stock, every
#                          Pascal patch, every pair and all (patches/fpc/)
#   make fpc               build/fpc-<version>/fpserver with Debian's fpc (3.2.2)
# The trunk rows skip (with the reason) when no source tree is there.

FPCSRC     ?=
FPC        ?= fpc
FPC_TRUNK   = build/fpc-trunk/bin/fpc
FPC_PATCHES = $(wildcard patches/fpc/series patches/fpc/*.patch)
# The fixes with a Pascal patch, in series order: a patch's fix is its name
# up to the first dot (poll-can-read.fcl-web.patch is part of poll-can-read).
FPC_SERIES := $(shell [ -f patches/fpc/series ] && sed -e 's/\#.*//' -e 's/\.patch$$//' -e 's/\..*//' -e '/^[[:space:]]*$$/d' patches/fpc/series | awk '!s[$$0]++')
REAL_SETS   = stock $(FPC_SERIES) $(if $(FPC_SERIES),all) $(filter $(addsuffix +%,$(FPC_SERIES)),$(PAIRS))
REAL_TRUNK  = $(foreach s,$(REAL_SETS),build/real-trunk/$(s)/fpserver)

.PHONY: fpc-trunk real-trunk

# Always asked; returns at once when the stamp says nothing changed.
fpc-trunk:
	@scripts/fpc-trunk.sh $(FPCSRC)

# The program is rebuilt when the toolchain, the program, the build script
# or the Pascal series changes; each set in its own folder.
build/real-trunk/%/fpserver: build/fpc-trunk/stamp repro/fpc/fpserver.lpr repro/fpc/build.sh repro/fpc/ppu.sh $(FPC_PATCHES)
	@repro/fpc/build.sh --fpc $(FPC_TRUNK) --set $* --out build/real-trunk/$* > /dev/null 2> build/real-trunk-$(subst +,_,$*).log \
	 || { cat build/real-trunk-$(subst +,_,$*).log; exit 1; }
	@scripts/phase.sh tick "built $@"

# KIT_PHASE_OF: how many builds are due, for the 'k of n' of each.
BUILDS_DUE = $(MAKE) -n --no-print-directory $(1) 2>/dev/null | grep -c '^repro/fpc/build.sh'
real-trunk: fpc-trunk
	@if [ -x $(FPC_TRUNK) ]; then \
	  KIT_PHASE_OF=$$($(call BUILDS_DUE,$(REAL_TRUNK))) $(MAKE) --no-print-directory $(REAL_TRUNK); fi

FPC_VERSION := $(shell $(FPC) -iV 2>/dev/null)
FPC_SERVER = build/fpc-$(FPC_VERSION)/fpserver
fpc: $(FPC_SERVER)
$(FPC_SERVER): repro/fpc/fpserver.lpr repro/fpc/build.sh repro/fpc/ppu.sh
	repro/fpc/build.sh --fpc $(FPC) > /dev/null
