# dispatch/dispatch.mk - the epoll-provider dispatch model (Horse PR #553)
# and its benchmark.  Included by the top-level Makefile, which defines CC,
# CSTD, WARN, ALL_CFLAGS, ASAN_FLAGS and TSAN_FLAGS.
#
#   build/dispatch/dispatch         the model (-O2)
#   build/dispatch/tsan/dispatch    TSan build, driven by dispatch/test.sh
#   build/dispatch/asan/dispatch    ASan + UBSan build, driven by dispatch/test.sh
#   build/dispatch/unit             CUnit: bounded pool (queue full, drain),
#                                   global pool (growth); ASan + UBSan
#   build/dispatch/unit-tsan        the same under TSan
#
# `all` (and so `make repro`) builds the model only: the sanitizer builds
# and the CUnit suites are `make test`'s (dispatch-tests), because CUnit is
# a test-only package (scripts/require-packages.sh --test).
#
#   make bench          every dispatch side by side, then B3's fixes' /ping
#                       throughput (dispatch/b3bench.py) (results/bench/)
#   make dispatch-test  the short shape test (dispatch/test.sh)
#   make dispatch-doc   regenerate docs/DISPATCH.md from results/bench

# server-min's OS wrappers and log are linked, not copied (dispatch/os.h).
DISPATCH_SHARED := server-min/os.c server-min/log.c
DISPATCH_SRC  := $(wildcard dispatch/*.c) $(DISPATCH_SHARED)
DISPATCH_HDR  := $(wildcard dispatch/*.h) $(DISPATCH_SHARED:.c=.h)
DISPATCH_LIB  := $(filter-out dispatch/main.c,$(DISPATCH_SRC))
DISPATCH_TEST := $(wildcard dispatch/tests/*.c)
DISPATCH_BINS := build/dispatch/dispatch
DISPATCH_TEST_BINS := build/dispatch/tsan/dispatch build/dispatch/asan/dispatch \
                      build/dispatch/unit build/dispatch/unit-tsan

.PHONY: dispatch dispatch-tests bench dispatch-test dispatch-doc
dispatch: $(DISPATCH_BINS)
dispatch-tests: $(DISPATCH_BINS) $(DISPATCH_TEST_BINS)
all: dispatch

build/dispatch/dispatch: $(DISPATCH_SRC) $(DISPATCH_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $(DISPATCH_SRC)

build/dispatch/tsan/dispatch: $(DISPATCH_SRC) $(DISPATCH_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(TSAN_FLAGS) -pthread -o $@ $(DISPATCH_SRC)

build/dispatch/asan/dispatch: $(DISPATCH_SRC) $(DISPATCH_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -pthread -o $@ $(DISPATCH_SRC)

build/dispatch/unit: $(DISPATCH_TEST) $(DISPATCH_LIB) $(DISPATCH_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -pthread -Idispatch -o $@ \
	    $(DISPATCH_TEST) $(DISPATCH_LIB) -lcunit

build/dispatch/unit-tsan: $(DISPATCH_TEST) $(DISPATCH_LIB) $(DISPATCH_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(TSAN_FLAGS) -pthread -Idispatch -o $@ \
	    $(DISPATCH_TEST) $(DISPATCH_LIB) -lcunit

# The clone and the probe belong to other areas: a failure to rebuild them
# (say, a patch being refreshed) must not stop the bench; bench.py uses the
# binaries that exist and prints a [SKIP] line for a missing one.
bench: build/dispatch/dispatch
	-@$(MAKE) --no-print-directory build/all/server-min build/probe >/dev/null 2>&1 \
	  || echo "[bench] note: could not rebuild build/all/server-min or build/probe; using what is built"
	-@$(MAKE) --no-print-directory horse-epoll >/dev/null 2>&1 \
	  || echo "[bench] note: could not build Horse's epoll provider (make horse-epoll); its rows skip"
	/usr/bin/python3 dispatch/bench.py --out results/bench
	-@$(MAKE) --no-print-directory -j$(NPROC) $(foreach s,stock $(shell python3 repro/harness/patchset.py fixing B3) all,build/$(s)/server-min) >/dev/null 2>&1 \
	  || echo "[bench] note: could not rebuild the B3 model variants; using what is built"
	/usr/bin/python3 dispatch/b3bench.py --out results/bench

dispatch-test: $(DISPATCH_BINS) $(DISPATCH_TEST_BINS) build/probe
	dispatch/test.sh

dispatch-doc:
	/usr/bin/python3 dispatch/gendoc.py --bench results/bench
