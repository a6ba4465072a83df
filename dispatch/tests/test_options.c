/* test_options.c - CUnit tests of the dispatch model's command line
 * (dispatch/options.c, getopt_long): both value forms, every option, and
 * one message per kind of mistake (read back from stderr).  Registered by
 * the runner in test_pools.c. */
#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

static struct options opts;
static char msg[4096];

/* options_parse over a NULL-terminated argument list (argv[0] added);
 * whatever it printed (stderr, or stdout for --help) is left in msg. */
static int parse(const char *first, ...)
{
    char *argv[32];
    int argc = 0, rc, saved_out, saved_err;
    const char *a;
    va_list ap;
    FILE *tmp = tmpfile();
    size_t n;

    CU_ASSERT_FATAL(tmp != NULL);
    argv[argc++] = (char *)"dispatch";
    va_start(ap, first);
    for (a = first; a && argc < 31; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fileno(tmp), 1);
    dup2(fileno(tmp), 2);
    rc = options_parse(&opts, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    rewind(tmp);
    n = fread(msg, 1, sizeof msg - 1, tmp);
    msg[n] = '\0';
    fclose(tmp);
    return rc;
}

#define EXPECT_MSG(want) do { \
    if (strcmp(msg, want) != 0) \
        printf("\n    got \"%s\", want \"%s\"", msg, want); \
    CU_ASSERT_STRING_EQUAL(msg, want); \
} while (0)

void test_options_forms(void)
{
    CU_ASSERT_EQUAL(parse("--port", "8081", "--address=0.0.0.0", "--dispatch=inline",
                          "--loops", "3", "--workers=7", "--queue-capacity", "9",
                          "--pool-min=2", "--pool-max", "4", "--pool-retire-ms=11",
                          "--keep-alive-timeout", "12", "--verbose", NULL), 0);
    EXPECT_MSG("");
    CU_ASSERT_EQUAL(opts.port, 8081);
    CU_ASSERT_STRING_EQUAL(opts.address, "0.0.0.0");
    CU_ASSERT_EQUAL(opts.mode, DISPATCH_INLINE);
    CU_ASSERT_EQUAL(opts.loops, 3);
    CU_ASSERT_EQUAL(opts.workers, 7);
    CU_ASSERT_EQUAL(opts.queue_capacity, 9);
    CU_ASSERT_EQUAL(opts.pool_min, 2);
    CU_ASSERT_EQUAL(opts.pool_max, 4);
    CU_ASSERT_EQUAL(opts.pool_retire_ms, 11);
    CU_ASSERT_EQUAL(opts.keep_alive_timeout, 12);
    CU_ASSERT_EQUAL(opts.verbose, 1);
    /* Defaults again on the next parse (getopt's state restarts too). */
    CU_ASSERT_EQUAL(parse("--dispatch", "global-pool", NULL), 0);
    CU_ASSERT_EQUAL(opts.mode, DISPATCH_GLOBAL_POOL);
    CU_ASSERT_EQUAL(opts.port, 0);
    CU_ASSERT_EQUAL(opts.verbose, 0);
    CU_ASSERT_STRING_EQUAL(opts.address, "127.0.0.1");
    CU_ASSERT_EQUAL(parse("--help", NULL), 1);
    CU_ASSERT(strstr(msg, "--keep-alive-timeout MS") != NULL);
    CU_ASSERT(strstr(msg, "--option=V") != NULL);
}

void test_options_errors(void)
{
    CU_ASSERT_EQUAL(parse("--port", NULL), -1);
    EXPECT_MSG("dispatch: --port needs a value (try --help)\n");
    CU_ASSERT_EQUAL(parse("--bogus", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '--bogus' (try --help)\n");
    CU_ASSERT_EQUAL(parse("-x", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '-x' (try --help)\n");
    CU_ASSERT_EQUAL(parse("--pool", "3", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '--pool' (try --help)\n");
    /* Exact names only (getopt_long would take a prefix). */
    CU_ASSERT_EQUAL(parse("--work", "3", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '--work' (try --help)\n");
    CU_ASSERT_EQUAL(parse("--dispatch=inline", "--verb", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '--verb' (try --help)\n");
    CU_ASSERT_EQUAL(parse("--work", NULL), -1);
    EXPECT_MSG("dispatch: unknown option '--work' (try --help)\n");
    CU_ASSERT_EQUAL(parse("--verbose=1", NULL), -1);
    EXPECT_MSG("dispatch: --verbose takes no value (try --help)\n");
    CU_ASSERT_EQUAL(parse("--port=65536", NULL), -1);
    EXPECT_MSG("dispatch: --port: '65536' is not a number in 0..65535\n");
    CU_ASSERT_EQUAL(parse("--loops=0", NULL), -1);
    EXPECT_MSG("dispatch: --loops: '0' is not a number in 1..256\n");
    CU_ASSERT_EQUAL(parse("--workers", "4097", NULL), -1);
    EXPECT_MSG("dispatch: --workers: '4097' is not a number in 1..4096\n");
    CU_ASSERT_EQUAL(parse("--queue-capacity=", NULL), -1);
    EXPECT_MSG("dispatch: --queue-capacity: '' is not a number in 1..1048576\n");
    CU_ASSERT_EQUAL(parse("--keep-alive-timeout", "2147483648", NULL), -1);
    EXPECT_MSG("dispatch: --keep-alive-timeout: '2147483648' is not a number in 1..2147483647\n");
    CU_ASSERT_EQUAL(parse("--dispatch", "fast", NULL), -1);
    EXPECT_MSG("dispatch: --dispatch: 'fast' is not global-pool, inline or bounded-pool\n");
    CU_ASSERT_EQUAL(parse("--pool-min", "10", "--pool-max=5", NULL), -1);
    EXPECT_MSG("dispatch: --pool-min 10 is above --pool-max 5\n");
    CU_ASSERT_EQUAL(parse("8080", NULL), -1);
    EXPECT_MSG("dispatch: unexpected argument '8080' (try --help)\n");
}
