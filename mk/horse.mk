# mk/horse.mk - Horse (HashLoad/horse) built from source (repro/horse/).
#
#   make horse         every Horse build the Horse rows of `make repro` use
#                      (repro/horse/rows.py builds): the kit's Horse program
#                      (FPC provider), Horse's own
#                      samples/lazarus/console, trunk stock / Pascal sets /
#                      Horse patches, FPC 3.2.2, win64; HORSE_FOR=--test
#                      adds what `make test`'s horse step runs (Horse's
#                      sample on win64 and with each Horse set)
#   make horse-epoll   the kit's Horse program with the epoll provider
#                      (-dHORSE_PROVIDER_EPOLL), trunk and FPC 3.2.2: make
#                      bench's horse-epoll rows (dispatch/bench.py), no row
#                      of make repro
#   make horse-sets    the kit's Horse program against trunk + every Pascal
#                      set of patches/fpc/series and all
#   make horse-check   repro/horse/check.sh --kit: the keep-alive check on
#                      Horse's sample (Linux, and win64 under Wine) and the
#                      workflow the Horse patches make (contrib/horse-ci/)
#   make check-horse-patches  scripts/check-horse-patches.sh: every Horse
#                      patch on the snapshot and on Horse's master
# HORSESRC=<a Horse checkout or tarball> replaces the snapshot
# ../shared/upstream/horse-ff41415.tar.xz for the builds.
# HORSE_CURRENT=<a checkout of Horse's master> replaces the reconstruction
# of it (build/horse/current/, repro/horse/current/MANIFEST) that the patch
# and workflow checks apply the patches to.  Builds are cached per Horse
# tree, compiler and patch sets (build/horse/<tc>/<set>/<horse set>/); the
# units per compiler and defines (build/fpc-units/).

HORSESRC ?=
HORSE_FOR ?=
HORSE_CURRENT ?=
HORSE_ENV = $(if $(HORSESRC),HORSESRC=$(abspath $(HORSESRC))) $(if $(HORSE_CURRENT),HORSE_CURRENT=$(abspath $(HORSE_CURRENT)))

.PHONY: horse horse-epoll horse-sets horse-check check-horse-patches

# NPROC builds at a time (a compile is one thread; build.sh locks what they
# share), a line as each is done: 'horse: TC SET HSET PROGRAM (k of n, T s)'.
# Builds with the same compiler and defines share their units, whatever
# their Horse tree (repro/fpc/build.sh compiles FPC's and Horse's once; a
# build compiles the units its Horse tree and Pascal set change, and the
# users FPC finds out of date): the first of each such group goes first, so that no build waits
# for another's units while a core idles.
horse: fpc-trunk
	@mkdir -p build/horse
	@python3 repro/horse/rows.py builds $(HORSE_FOR) | awk '{ k = $$1 " " ($$4 == "epoll") } \
	  !(k in first) { first[k]; print; next } { rest[++n] = $$0 } END { for (i = 1; i <= n; i++) print rest[i] }' \
	  > build/horse/builds.txt
	@KIT_PHASE_OF=$$(wc -l < build/horse/builds.txt) xargs -P $(NPROC) -L 1 sh -c \
	  '$(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc "$$0" --set "$$1" --horse "$$2" --program "$$3" > /dev/null || exit 255; \
	   scripts/phase.sh tick "horse: $$0 $$1 $$2 $$3"' < build/horse/builds.txt


# Each compiler that is here (a missing one is bench.py's [SKIP] line).
horse-epoll: fpc-trunk
	@if [ -x $(FPC_TRUNK) ]; then $(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc trunk --program epoll > /dev/null; fi
	@if command -v fpc > /dev/null; then $(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc 322 --program epoll > /dev/null; fi

horse-sets: fpc-trunk
	@for s in stock $(FPC_SERIES) all; do \
	  $(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc trunk --set $$s > /dev/null || exit 1; done

horse-check: build/probe
	@$(MAKE) --no-print-directory horse HORSE_FOR=--test
	@$(HORSE_ENV) repro/horse/check.sh --kit

check-horse-patches:
	@$(HORSE_ENV) scripts/check-horse-patches.sh
