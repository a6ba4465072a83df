# fphttpserver reproducer kit.
#   make          build every server variant, the probe and the analysers
#   make repro    the verification matrix (main job)
#   make test     the regression suite
#   make check FIX=NAME [FPCSRC=TREE]  one fix on a tree: its verdicts, hazards, tests
# Variant names are a contract (DESIGN section 7): build/<variant>/server-min.

CC      ?= cc
CSTD     = -std=c11 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) -pthread
ASAN_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
TSAN_FLAGS = -O1 -g -fsanitize=thread
# Every C program is compiled and linked through scripts/cc-objects.py: one
# object per source, shared by the builds that compile it the same (most of
# a variant is server-min/ unchanged).
# Its interpreter is resolved once here: a shim (pyenv) costs more to start
# than most compiles the script saves.
PYTHON := $(shell python3 -c 'import sys; print(sys.executable)' 2>/dev/null || echo python3)
CCO = $(PYTHON) scripts/cc-objects.py
# Where `python3` on PATH is a shim that starts it (pyenv), every recipe and
# every script it runs finds the interpreter itself first on PATH: the shim
# is two dozen bash processes per `python3`, and `make test` started
# python3 through it some two hundred times.  Where python3 on PATH is the
# interpreter (Debian's /usr/bin/python3), PATH stays as it is.
ifneq ($(filter /%,$(PYTHON)),)
ifneq ($(shell command -v python3),$(PYTHON))
export PATH := $(patsubst %/,%,$(dir $(PYTHON))):$(PATH)
endif
endif

# Which fixes exist, what each fixes and which pairs show an interaction is
# read from the patches themselves (patches/series, each patch's Defect: and
# Needs: headers) by repro/harness/patchset.py, once, into build/patchset.mk.
SERVER_SRC = $(wildcard server-min/*.c server-min/*.h)
PATCHES    = patches/series $(wildcard patches/*.patch)
build/patchset.mk: repro/harness/patchset.py $(PATCHES)
	@mkdir -p $(@D)
	@python3 repro/harness/patchset.py make > $@.tmp && mv $@.tmp $@
include build/patchset.mk
FIXES    := $(PATCH_NAMES)
VARIANTS := stock $(FIXES) all
PAIRS    := $(PATCH_PAIRS)

include mk/tools.mk

SERVERS = $(foreach v,$(VARIANTS) $(PAIRS),build/$(v)/server-min)

.PHONY: all servers tools sanitizers repro check test test-build test-repeat deps test-deps real-servers clean report upstream fuzz fpc sweep hazards conformance
.DELETE_ON_ERROR:

all: servers tools

servers: $(SERVERS)
tools: $(TOOLS)

# Stock is compiled straight from server-min/; every other variant from a
# patched copy of it (scripts/build-variant.sh), so no patch edits the tree.
build/stock/server-min: $(SERVER_SRC)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ server-min/*.c

build/%/server-min: $(SERVER_SRC) $(PATCHES) scripts/build-variant.sh
	@scripts/build-variant.sh $* build/$*
	$(CCO) --map build/$*/src/= $(CC) $(ALL_CFLAGS) -o $@ build/$*/src/server-min/*.c

# Sanitizer builds in their own folders: build-asan/<variant>, build-tsan/<variant>.
build-asan/stock/server-min: $(SERVER_SRC)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -pthread -o $@ server-min/*.c
build-asan/%/server-min: $(SERVER_SRC) $(PATCHES) scripts/build-variant.sh
	@scripts/build-variant.sh $* build-asan/$*
	$(CCO) --map build-asan/$*/src/= $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -pthread -o $@ build-asan/$*/src/server-min/*.c
build-tsan/stock/server-min: $(SERVER_SRC)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(TSAN_FLAGS) -pthread -o $@ server-min/*.c
build-tsan/%/server-min: $(SERVER_SRC) $(PATCHES) scripts/build-variant.sh
	@scripts/build-variant.sh $* build-tsan/$*
	$(CCO) --map build-tsan/$*/src/= $(CC) $(CSTD) $(WARN) $(TSAN_FLAGS) -pthread -o $@ build-tsan/$*/src/server-min/*.c
# The sanitizer passes of `make test` run stock and all.
SAN_VARIANTS = stock forward-allow-connect all
sanitizers: $(foreach v,$(SAN_VARIANTS),build-asan/$(v)/server-min build-tsan/$(v)/server-min) build-asan/probe

# Debian packages the kit needs; installed when root, named otherwise
# (scripts/require-packages.sh: what is optional skips, never fails).
deps:
	@scripts/require-packages.sh
test-deps:
	@scripts/require-packages.sh --test

NPROC := $(shell nproc 2>/dev/null || echo 2)

# The real servers: Debian's FPC 3.2.2, the trunk toolchain and its builds
# (mk/fpc.mk), the win64 builds (mk/win64.mk), Horse (mk/horse.mk), and the
# Wine prefix beside them.  Each skips with its reason when its toolchain or
# source tree is missing; a failing build shows, and the matrix then fails
# the rows it could not build.  Each is a phase (scripts/builds.sh).
BUILDS = MAKE="$(MAKE)" NPROC=$(NPROC) scripts/builds.sh
real-servers:
	@$(BUILDS) --real-only

# Every phase shown with its time (scripts/phase.sh), the table at the end.
repro:
	@scripts/phase.sh begin "make repro"
	@$(BUILDS) all
	@scripts/repro.sh; rc=$$?; scripts/phase.sh table; exit $$rc

# One fix, an upstream report's fixes or all, on the snapshot or FPCSRC:
# stock against the fix, its defects' verdicts, its hazard rows and its
# fpcunit tests (repro/harness/checkfix.py --help says how a tree that
# carries the fix already is measured).
check:
	@$(PYTHON) repro/harness/checkfix.py $(if $(FPCSRC),--fpcsrc $(FPCSRC)) $(FIX)

# What `make test` runs: every variant's unit tests, and the sanitizer
# flavours of the variants the sanitizer passes use.
TEST_UNITS = $(foreach v,$(VARIANTS),build/tests/$(v)/unit) \
             $(foreach f,tests-asan tests-tsan,$(foreach v,$(SAN_VARIANTS),build/$(f)/$(v)/unit))

# The failed checks again at the very end (tests/run.sh keeps them in
# failed.txt): CI shows only an excerpt of the output, with its tail.
FAILED_TXT = results/test-logs/failed.txt
test:
	@scripts/phase.sh begin "make test"
	@$(MAKE) --no-print-directory test-build
	@scripts/phase.sh run suite -- tests/run.sh; rc=$$?; scripts/phase.sh table; \
	 if [ -s $(FAILED_TXT) ]; then echo "make test: what failed ($(FAILED_TXT))"; cat $(FAILED_TXT); fi; exit $$rc
test-build:
	@$(BUILDS) --test all sanitizers dispatch-tests build/hostile build/test-capture-parsers build/test-common build/test-probe $(TEST_UNITS)

# `make test-repeat N` (or N=...): the suite N times on one build, then how
# many runs each check failed (tests/repeat.sh).  The number is a goal of
# its own on the command line: it gets an empty rule.
ifeq ($(firstword $(MAKECMDGOALS)),test-repeat)
REPEAT_N := $(or $(N),$(word 2,$(MAKECMDGOALS)),3)
ifneq ($(word 2,$(MAKECMDGOALS)),)
$(word 2,$(MAKECMDGOALS)):
	@:
endif
endif
test-repeat: test-build
	tests/repeat.sh $(REPEAT_N)

# Every fix across body sizes, pipeline depths and links (repro/harness/sweep.py):
# results/sweep/sweep.json and sweep.md; `make report` reads them too.
sweep: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory real-servers
	python3 repro/harness/sweep.py

# What a fix may break: fairness and resources per thread mode, model and
# real trunk (repro/harness/hazards.py; results/hazards/hazards.json).
hazards: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory real-servers
	python3 repro/harness/hazards.py

# RFC 9110 / 9112 conformance of the connection path: model and real trunk,
# stock and all (tests/hostile/conformance.sh; results/conformance/).
conformance:
	@$(MAKE) --no-print-directory real-servers
	tests/hostile/conformance.sh

# The filing bundle (results/upstream/: FPC's cover and reports, the
# confidential report, the Horse patches), every commit by AUTHOR="Name
# <address>" or git config's identity, a placeholder one refused
# (scripts/upstream.sh).
upstream:
	scripts/upstream.sh $(if $(AUTHOR),--author "$(AUTHOR)")

# Rewrite REPORT.md's generated parts (and docs/latency.png) from the
# latest `make repro` run.
report:
	python3 repro/report/report.py --matrix results/latest/matrix.json

clean:
	rm -rf build build-asan build-tsan results

include tests/unit/unit.mk
include tests/hostile/hostile.mk
-include dispatch/dispatch.mk
-include mk/fpc.mk
-include mk/win64.mk
-include mk/bisect.mk
-include mk/horse.mk
