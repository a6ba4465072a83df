/* test_options.c - suite "options": server-min's command line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpserver.h"
#include "options.h"
#include "unit.h"

static struct options opts;
static char err[256];

/* options_parse over a NULL-terminated list of arguments (argv[0] added);
 * --help output goes to a memory stream kept in help_text. */
static char *help_text;
static size_t help_len;

static int parse(const char *first, ...)
{
    char *argv[64];
    int argc = 0, rc;
    va_list ap;
    const char *a;
    FILE *out;

    argv[argc++] = (char *)"server-min";
    va_start(ap, first);
    for (a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    free(help_text);
    help_text = NULL;
    help_len = 0;
    out = open_memstream(&help_text, &help_len);
    err[0] = '\0';
    rc = options_parse(&opts, argc, argv, err, sizeof err, out);
    fclose(out);
    return rc;
}

static void test_defaults(void)
{
    struct httpserver s;

    httpserver_init(&s);
    ASSERT_INT(parse(NULL), 0);
    ASSERT_STR(opts.props.address, "127.0.0.1");
    ASSERT_INT(opts.props.port, s.props.port);
    ASSERT_INT(opts.props.queue_size, s.props.queue_size);
    ASSERT_INT(opts.props.keep_connections, 0);
    ASSERT_INT(opts.props.keep_connection_timeout, 0);
    ASSERT_INT(opts.props.keep_connection_idle_timeout, 50);
    ASSERT_INT(opts.props.thread_mode, TM_NONE);
    ASSERT_INT(opts.props.accept_idle_timeout, 0);
    ASSERT_INT(opts.props.request_read_timeout, 30000);
    ASSERT_INT(opts.props.max_live_connection_count, 128);
    ASSERT_INT(opts.props.send_503_on_max_connections, 1);
    ASSERT_INT(opts.props.max_line_length, s.props.max_line_length);
    ASSERT_INT(opts.props.max_header_count, s.props.max_header_count);
    ASSERT_INT(opts.props.max_body_size, s.props.max_body_size);
    ASSERT_INT(opts.props.strict_ascii_url, 1);
    ASSERT_INT(opts.props.pool_threads, s.props.pool_threads);
    ASSERT_INT(opts.on_allow_connect_nodelay, 0);
    ASSERT_INT(opts.socket_handler_nodelay, 0);
    ASSERT_INT(opts.request_nodelay, 0);
    ASSERT_INT(help_len, 0);
}

static void test_every_flag(void)
{
    ASSERT_INT(parse("--port", "8081", "--address", "0.0.0.0",
                     "--keep-connections", "--keep-connection-timeout", "1234",
                     "--keep-connection-idle-timeout", "7",
                     "--thread-mode", "polled", "--accept-idle-timeout", "33",
                     "--request-read-timeout", "444",
                     "--max-live-connection-count", "5",
                     "--no-send-503-on-max-connections",
                     "--max-line-length", "99", "--max-header-count", "11",
                     "--max-body-size", "12345678901",
                     "--no-strict-ascii-url", "--queue-size", "17",
                     "--pool-threads", "3", "--on-allow-connect", "nodelay",
                     "--socket-handler", "nodelay", "--request-nodelay", NULL),
               0);
    ASSERT_STR(err, "");
    ASSERT_INT(opts.props.port, 8081);
    ASSERT_STR(opts.props.address, "0.0.0.0");
    ASSERT_INT(opts.props.keep_connections, 1);
    ASSERT_INT(opts.props.keep_connection_timeout, 1234);
    ASSERT_INT(opts.props.keep_connection_idle_timeout, 7);
    ASSERT_INT(opts.props.thread_mode, TM_POLLED);
    ASSERT_INT(opts.props.accept_idle_timeout, 33);
    ASSERT_INT(opts.props.request_read_timeout, 444);
    ASSERT_INT(opts.props.max_live_connection_count, 5);
    ASSERT_INT(opts.props.send_503_on_max_connections, 0);
    ASSERT_INT(opts.props.max_line_length, 99);
    ASSERT_INT(opts.props.max_header_count, 11);
    ASSERT_INT(opts.props.max_body_size, 12345678901LL);
    ASSERT_INT(opts.props.strict_ascii_url, 0);
    ASSERT_INT(opts.props.queue_size, 17);
    ASSERT_INT(opts.props.pool_threads, 3);
    ASSERT_INT(opts.on_allow_connect_nodelay, 1);
    ASSERT_INT(opts.socket_handler_nodelay, 1);
    ASSERT_INT(opts.request_nodelay, 1);
}

static void test_thread_modes(void)
{
    ASSERT_INT(parse("--thread-mode", "none", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_NONE);
    ASSERT_INT(parse("--thread-mode", "thread", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_THREAD);
    ASSERT_INT(parse("--thread-mode", "pool", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_POOL);
    ASSERT_INT(parse("--thread-mode", "polled", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_POLLED);
    ASSERT_STR(options_thread_mode_name(TM_NONE), "none");
    ASSERT_STR(options_thread_mode_name(TM_POLLED), "polled");
    ASSERT_STR(options_thread_mode_name(TM_THREAD), "thread");
    ASSERT_STR(options_thread_mode_name(TM_POOL), "pool");
}

static void test_horse_then_overrides(void)
{
    ASSERT_INT(parse("--horse", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_THREAD);
    ASSERT_INT(opts.props.keep_connections, 1);
    ASSERT_INT(opts.props.keep_connection_timeout, 15000);
    ASSERT_INT(opts.props.keep_connection_idle_timeout, 50);
    /* Later flags override --horse ... */
    ASSERT_INT(parse("--horse", "--thread-mode", "pool",
                     "--keep-connection-timeout", "5", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_POOL);
    ASSERT_INT(opts.props.keep_connections, 1);
    ASSERT_INT(opts.props.keep_connection_timeout, 5);
    /* ... and --horse overrides earlier ones. */
    ASSERT_INT(parse("--keep-connection-timeout", "5", "--thread-mode", "pool",
                     "--horse", NULL), 0);
    ASSERT_INT(opts.props.thread_mode, TM_THREAD);
    ASSERT_INT(opts.props.keep_connection_timeout, 15000);
}

/* A usage error: -1 and a message naming the flag. */
static void expect_error(const char *flag, const char *value)
{
    int rc = value ? parse(flag, value, NULL) : parse(flag, NULL);

    ASSERT_INT(rc, -1);
    if (!strstr(err, flag))
        printf("\n    message for %s: \"%s\"", flag, err);
    CU_ASSERT(strstr(err, flag) != NULL);
}

static void test_bad_numbers(void)
{
    static const char *const int_flags[] = {
        "--port", "--keep-connection-timeout", "--keep-connection-idle-timeout",
        "--accept-idle-timeout", "--request-read-timeout",
        "--max-live-connection-count", "--max-line-length",
        "--max-header-count", "--queue-size", "--pool-threads",
        "--max-body-size",
    };
    size_t i;

    for (i = 0; i < sizeof int_flags / sizeof int_flags[0]; i++) {
        expect_error(int_flags[i], "abc");
        expect_error(int_flags[i], "12x");
        expect_error(int_flags[i], "");
        expect_error(int_flags[i], "-1");
        expect_error(int_flags[i], "99999999999999999999");
        expect_error(int_flags[i], NULL); /* missing value */
    }
    /* Range ends. */
    expect_error("--port", "65536");
    ASSERT_INT(parse("--port", "65535", NULL), 0);
    expect_error("--queue-size", "0");
    expect_error("--pool-threads", "0");
    expect_error("--pool-threads", "257");
    ASSERT_INT(parse("--pool-threads", "256", NULL), 0);
    expect_error("--keep-connection-timeout", "2147483648");
    ASSERT_INT(parse("--keep-connection-timeout", "2147483647", NULL), 0);
    ASSERT_INT(opts.props.keep_connection_timeout, 2147483647);
}

static void test_bad_words(void)
{
    expect_error("--thread-mode", "fast");
    expect_error("--thread-mode", NULL);
    expect_error("--on-allow-connect", "cork");
    expect_error("--on-allow-connect", NULL);
    expect_error("--socket-handler", "cork");
    expect_error("--socket-handler", NULL);
    expect_error("--address", NULL);
    expect_error("--address", "0123456789012345678901234567890123456789012345678901234567890123");
}

static void test_unknown_flag(void)
{
    expect_error("--bogus", NULL);
    expect_error("-x", NULL);
    expect_error("8080", NULL);
    /* An error stops parsing where it is found. */
    ASSERT_INT(parse("--keep-connections", "--bogus", NULL), -1);
}

static void test_help(void)
{
    static const char *const flags[] = {
        "--port", "--address", "--keep-connections",
        "--keep-connection-timeout", "--keep-connection-idle-timeout",
        "--thread-mode", "--accept-idle-timeout", "--request-read-timeout",
        "--max-live-connection-count", "--no-send-503-on-max-connections",
        "--max-line-length", "--max-header-count", "--max-body-size",
        "--no-strict-ascii-url", "--queue-size", "--pool-threads",
        "--on-allow-connect", "--socket-handler", "--request-nodelay",
        "--horse", "--help",
    };
    size_t i;

    ASSERT_INT(parse("--help", NULL), 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(help_text);
    for (i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strstr(help_text, flags[i])) {
            printf("\n    --help does not list %s", flags[i]);
            CU_FAIL("--help misses a flag");
        }
    /* Defaults are shown. */
    CU_ASSERT(strstr(help_text, "(default 30000)") != NULL);
    CU_ASSERT(strstr(help_text, "(default 128") != NULL);
    CU_ASSERT(strstr(help_text, "(default none)") != NULL);
    ASSERT_INT(parse("-h", NULL), 1);
    CU_ASSERT(help_len > 0);
    /* --help wins wherever it is, once reached. */
    ASSERT_INT(parse("--keep-connections", "--help", "--bogus", NULL), 1);
}

static int options_suite_clean(void)
{
    free(help_text);
    help_text = NULL;
    return 0;
}

int unit_register_options(void)
{
    CU_pSuite s = CU_add_suite("options", NULL, options_suite_clean);

    if (!s ||
        !CU_add_test(s, "defaults", test_defaults) ||
        !CU_add_test(s, "every_flag", test_every_flag) ||
        !CU_add_test(s, "thread_modes", test_thread_modes) ||
        !CU_add_test(s, "horse_then_overrides", test_horse_then_overrides) ||
        !CU_add_test(s, "bad_numbers", test_bad_numbers) ||
        !CU_add_test(s, "bad_words", test_bad_words) ||
        !CU_add_test(s, "unknown_flag", test_unknown_flag) ||
        !CU_add_test(s, "help", test_help))
        return -1;
    return 0;
}
