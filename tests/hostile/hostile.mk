# tests/hostile/hostile.mk - bad input, load and faults (tests/hostile/README.md).
# Included by the top-level Makefile (flags are defined there, once).
build/hostile: tests/hostile/hostile.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ tests/hostile/hostile.c
