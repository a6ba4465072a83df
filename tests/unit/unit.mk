# tests/unit/unit.mk - the CUnit unit tests, built against one variant.
# Included by the top-level Makefile (it defines CC, CSTD, WARN, ASAN_FLAGS,
# TSAN_FLAGS, VARIANTS and the build/<variant>/server-min rules).
#
#   build/tests/<variant>/unit        -O1 -g
#   build/tests-asan/<variant>/unit   ASan + UBSan
#   build/tests-tsan/<variant>/unit   TSan
#
# Each compiles tests/unit/*.c with the variant's server-min sources minus
# main.c: server-min/ itself for stock, otherwise the patched copy that
# scripts/build-variant.sh leaves in build/<variant>/src/server-min (made by
# the rule for build/<variant>/server-min, hence that prerequisite).
# KIT_FIXED_Bn / KIT_PATCHED_Bn tell the tests which defects the variant
# fixes and which patches it carries (derived from the patches, below).
#
#   make unit-tests    build all three flavours for every variant
#   make unit-check    build and run them all; fails if any test fails
#   make unit-check UNIT_VARIANTS="stock all" UNIT_FLAVOURS=tests-asan

UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_HDR := $(wildcard tests/unit/*.h)
# send/recv/log_line/os_tick_ms are interposed at link time (see tests/unit/unit.h).
UNIT_LDFLAGS := -Wl,--wrap=send -Wl,--wrap=recv -Wl,--wrap=log_line -Wl,--wrap=os_tick_ms
UNIT_LIBS := -lcunit

# Variants, and what each fixes, come from the patches (repro/harness/patchset.py,
# through build/patchset.mk): one source of truth, nothing listed here.
UNIT_VARIANTS ?= $(VARIANTS)
UNIT_FLAVOURS ?= tests tests-asan tests-tsan

# Every defect some patch fixes (B1 B2 ...).
UNIT_DEFECTS := $(PATCH_DEFECTS)
# $(call unit_patches,VARIANT): the patch names a variant carries.
unit_patches = $(if $(filter stock,$(1)),,$(if $(filter all,$(1)),$(PATCH_NAMES),$(subst +, ,$(1))))
# $(call unit_patched,VARIANT): the defects whose patch the variant carries
# (KIT_PATCHED_Bn: the patch's own change is there, whether or not the
# defect is fixed; keep-surplus-bytes alone keeps the bytes but fixes
# nothing).
unit_patched = $(foreach p,$(call unit_patches,$(1)),$(PATCH_DEFECT_$(p)))
# KIT_FIXED_Bn: the defect is fixed in the variant, interactions counted
# (patchset.py fixed).  KIT_WITH_<patch> (dashes as underscores): the
# variant carries that patch, for a defect with two fixes that work
# differently (B3: set-tcp-nodelay, coalesce-writes).
unit_defs = $(foreach d,$(UNIT_DEFECTS),-DKIT_PATCHED_$(d)=$(if $(filter $(d),$(call unit_patched,$(1))),1,0) \
              -DKIT_FIXED_$(d)=$(if $(filter $(d),$(PATCH_FIXED_$(1))),1,0)) \
              $(foreach p,$(PATCH_NAMES),-DKIT_WITH_$(subst -,_,$(p))=$(if $(filter $(p),$(call unit_patches,$(1))),1,0))
unit_srcdir = $(if $(filter stock,$(1)),server-min,build/$(1)/src/server-min)
# A patched copy is compared with server-min/ (scripts/cc-objects.py --map).
unit_map = $(if $(filter stock,$(1)),,--map build/$(1)/src/=)
# The variant's sources without main.c, listed when the recipe runs (the
# patched tree may not exist when make reads this file).
unit_server_c = $$(find $(call unit_srcdir,$(1)) -maxdepth 1 -name '*.c' ! -name main.c | LC_ALL=C sort)

# $(call unit_link,VARIANT,FLAGS)
define unit_link
	@mkdir -p $(@D)
	$(CCO) $(call unit_map,$(1)) $(CC) $(CSTD) $(WARN) $(2) -pthread $(call unit_defs,$(1)) \
	    -I$(call unit_srcdir,$(1)) -Itests/unit -o $@ \
	    $(UNIT_SRC) $(call unit_server_c,$(1)) $(UNIT_LDFLAGS) $(UNIT_LIBS)
endef

UNIT_DEPS = $(UNIT_SRC) $(UNIT_HDR) tests/unit/unit.mk

build/tests/%/unit: $(UNIT_DEPS) build/%/server-min
	$(call unit_link,$*,-O1 -g)

build/tests-asan/%/unit: $(UNIT_DEPS) build/%/server-min
	$(call unit_link,$*,$(ASAN_FLAGS))

build/tests-tsan/%/unit: $(UNIT_DEPS) build/%/server-min
	$(call unit_link,$*,$(TSAN_FLAGS))

UNIT_BINS = $(foreach f,$(UNIT_FLAVOURS),$(foreach v,$(UNIT_VARIANTS),build/$(f)/$(v)/unit))

.PHONY: unit-tests unit-check
unit-tests: $(UNIT_BINS)

# Runs every binary even after a failure, then fails if any did.
# halt_on_error/exitcode make any sanitizer report fail the run.
unit-check: $(UNIT_BINS)
	@fail=0; for b in $(UNIT_BINS); do \
	    echo "=== $$b"; \
	    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	    $$b || { echo "=== FAILED: $$b (exit $$?)"; fail=1; }; \
	done; exit $$fail
