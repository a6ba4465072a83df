# mk/horse.mk - Horse (HashLoad/horse) built from source (repro/horse/).
#
#   make horse         every Horse build the Horse rows of `make repro` use
#                      (repro/horse/rows.py builds): the kit's Horse program
#                      (FPC provider, and the epoll provider), Horse's own
#                      samples/lazarus/console, trunk stock / Pascal sets /
#                      Horse patches, FPC 3.2.2, win64
#   make horse-sets    the kit's Horse program against trunk + every Pascal
#                      set of patches/fpc/series and all
#   make horse-check   repro/horse/check.sh: the CI check of contrib/horse-ci/
#                      (Linux, and win64 under Wine)
#   make check-horse-patches  scripts/check-horse-patches.sh
# HORSESRC=<a Horse checkout or tarball> replaces the snapshot
# ../shared/upstream/horse-ff41415.tar.xz.  Builds are cached per Horse
# tree, compiler and patch sets (build/horse/<tc>/<set>/<horse set>/).

HORSESRC ?=
HORSE_ENV = $(if $(HORSESRC),HORSESRC=$(abspath $(HORSESRC)))

.PHONY: horse horse-sets horse-check check-horse-patches

# NPROC builds at a time (a compile is one thread; build.sh locks what they share).
horse: fpc-trunk
	@python3 repro/horse/rows.py builds | xargs -P $(NPROC) -L 1 sh -c \
	  '$(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc "$$0" --set "$$1" --horse "$$2" --program "$$3" > /dev/null || exit 255'


horse-sets: fpc-trunk
	@for s in stock $(FPC_SERIES) all; do \
	  $(HORSE_ENV) nice -n 5 repro/horse/build.sh --tc trunk --set $$s > /dev/null || exit 1; done

horse-check: horse build/probe
	@repro/horse/check.sh

check-horse-patches:
	@scripts/check-horse-patches.sh
