# tests/hostile/hostile.mk - bad input, load and faults (tests/hostile/README.md).
# Included by the top-level Makefile (flags are defined there, once); the
# response reader and TCP client come from common/ (COMMON_SRC, mk/tools.mk).
HOSTILE_SRC = $(wildcard tests/hostile/*.c)
HOSTILE_HDR = $(wildcard tests/hostile/*.h)

build/hostile: $(HOSTILE_SRC) $(HOSTILE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $(HOSTILE_SRC) $(COMMON_SRC)

# A stand-in server for the driver's own check of its stop (run.sh).
build/exit-server: tests/hostile/fake/exit_server.c
	@mkdir -p $(@D)
	$(CCO) $(CC) $(ALL_CFLAGS) -o $@ $<
