# mk/tools.mk - the kit's C tools: the probe and the capture analysers.
# Included by the top-level Makefile (flags are defined there, once).

# common/: C shared by several programs (response reader, TCP client, die).
# The JSON writer (jansson) is linked only into the tools that write JSON.
JSON_SRC   = common/kjson.c
JSON_LIBS  = -ljansson
COMMON_SRC = $(filter-out $(JSON_SRC),$(wildcard common/*.c))
COMMON_HDR = $(wildcard common/*.h)

PROBE_SRC  = $(wildcard repro/probe/probe*.c)
PROBE_HDR  = $(wildcard repro/probe/probe*.h)
PCAP_SRC   = $(wildcard captures/pcap_*.c)
STRACE_SRC = $(wildcard captures/strace_*.c)
CAP_HDR    = $(wildcard captures/*.h)

TOOLS   = build/probe build/pcap-analyse build/strace-analyse

build/probe: $(PROBE_SRC) $(PROBE_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $(PROBE_SRC) $(COMMON_SRC) $(JSON_SRC) $(JSON_LIBS) -lm

build-asan/probe: $(PROBE_SRC) $(PROBE_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -pthread -o $@ $(PROBE_SRC) $(COMMON_SRC) $(JSON_SRC) $(JSON_LIBS) -lm

build/pcap-analyse: $(PCAP_SRC) $(CAP_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $(PCAP_SRC) $(COMMON_SRC) $(JSON_SRC) $(JSON_LIBS) -lpcap -lm

build/strace-analyse: $(STRACE_SRC) $(CAP_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $(STRACE_SRC) $(COMMON_SRC) $(JSON_SRC) $(JSON_LIBS) -lm

build/test-common: common/tests/test_common.c common/tests/test_kjson.c common/tests/feed.c common/tests/feed.h $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -o $@ common/tests/test_common.c common/tests/test_kjson.c common/tests/feed.c $(COMMON_SRC) $(JSON_SRC) -lcunit $(JSON_LIBS)

# The probe's command line and JSON (every probe source but probe.c's main).
build/test-probe: repro/probe/test_probe.c $(PROBE_SRC) $(PROBE_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -o $@ repro/probe/test_probe.c $(filter-out repro/probe/probe.c,$(PROBE_SRC)) $(COMMON_SRC) $(JSON_SRC) -lcunit $(JSON_LIBS) -lm

build/test-capture-parsers: captures/tests/test_parsers.c $(PCAP_SRC) $(STRACE_SRC) $(CAP_HDR) $(COMMON_SRC) $(JSON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(CSTD) $(WARN) $(ASAN_FLAGS) -o $@ captures/tests/test_parsers.c $(COMMON_SRC) $(JSON_SRC) -lcunit $(JSON_LIBS) -lpcap -lm

# libFuzzer (tests/fuzz/run.sh): `make fuzz FUZZ_SECONDS=600 FUZZ_VARIANT=all`
# runs the request reader built against a variant (with stock, also the
# common response reader and the pcap and strace analysers' input paths) for
# that long; `make fuzz-long` runs
# every target for FUZZ_RUNS inputs (at least 10 million), without a time
# limit.  A missing clang is a skip (exit 4).
FUZZ_SECONDS ?= 60
FUZZ_VARIANT ?= stock
FUZZ_RUNS    ?= 10000000
.PHONY: fuzz-long
fuzz:
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_VARIANT)
fuzz-long:
	tests/fuzz/run.sh --runs $(FUZZ_RUNS) 0 stock request response pcap strace
