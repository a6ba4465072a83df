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

/* opts as parse() left it against want: every property and mitigation
 * flag, one assertion each (a failure prints both values). */
static void assert_opts(const struct options *want)
{
    const struct httpserver_props *got = &opts.props, *w = &want->props;

    ASSERT_STR(got->address, w->address);
    ASSERT_INT(got->port, w->port);
    ASSERT_INT(got->queue_size, w->queue_size);
    ASSERT_INT(got->keep_connections, w->keep_connections);
    ASSERT_INT(got->keep_connection_timeout, w->keep_connection_timeout);
    ASSERT_INT(got->keep_connection_idle_timeout, w->keep_connection_idle_timeout);
    ASSERT_INT(got->thread_mode, w->thread_mode);
    ASSERT_INT(got->accept_idle_timeout, w->accept_idle_timeout);
    ASSERT_INT(got->request_read_timeout, w->request_read_timeout);
    ASSERT_INT(got->max_live_connection_count, w->max_live_connection_count);
    ASSERT_INT(got->send_503_on_max_connections, w->send_503_on_max_connections);
    ASSERT_INT(got->max_line_length, w->max_line_length);
    ASSERT_INT(got->max_header_count, w->max_header_count);
    ASSERT_INT(got->max_body_size, w->max_body_size);
    ASSERT_INT(got->strict_ascii_url, w->strict_ascii_url);
    ASSERT_INT(got->pool_threads, w->pool_threads);
    ASSERT_INT(opts.on_allow_connect_nodelay, want->on_allow_connect_nodelay);
    ASSERT_INT(opts.socket_handler_nodelay, want->socket_handler_nodelay);
    ASSERT_INT(opts.request_nodelay, want->request_nodelay);
}

static void test_defaults(void)
{
    struct httpserver s;
    struct options want;

    httpserver_init(&s);
    /* httpserver_init's values, with the ones the kit relies on spelled
     * out as numbers; no mitigation is on. */
    want = (struct options){ .props = s.props };
    snprintf(want.props.address, sizeof want.props.address, "127.0.0.1");
    want.props.keep_connections = 0;
    want.props.keep_connection_timeout = 0;
    want.props.keep_connection_idle_timeout = 50;
    want.props.thread_mode = TM_NONE;
    want.props.accept_idle_timeout = 0;
    want.props.request_read_timeout = 30000;
    want.props.max_live_connection_count = 128;
    want.props.send_503_on_max_connections = 1;
    want.props.strict_ascii_url = 1;
    ASSERT_INT(parse(NULL), 0);
    assert_opts(&want);
    ASSERT_INT(help_len, 0);
}

static void test_every_flag(void)
{
    static const struct options want = {
        .props = {
            .address = "0.0.0.0", .port = 8081, .queue_size = 17,
            .keep_connections = 1, .keep_connection_timeout = 1234,
            .keep_connection_idle_timeout = 7, .thread_mode = TM_POLLED,
            .accept_idle_timeout = 33, .request_read_timeout = 444,
            .max_live_connection_count = 5, .send_503_on_max_connections = 0,
            .max_line_length = 99, .max_header_count = 11,
            .max_body_size = 12345678901LL, .strict_ascii_url = 0,
            .pool_threads = 3,
        },
        .on_allow_connect_nodelay = 1,
        .socket_handler_nodelay = 1,
        .request_nodelay = 1,
    };

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
    assert_opts(&want);
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

/* --stop: what the program does after the accept loop ended (B15). */
static void test_stop(void)
{
    ASSERT_INT(parse(NULL), 0);
    ASSERT_INT(opts.stop_free, 0);          /* bounded by default */
    ASSERT_INT(parse("--stop", "free", NULL), 0);
    ASSERT_INT(opts.stop_free, 1);
    ASSERT_INT(parse("--stop=free", "--stop", "bounded", NULL), 0);
    ASSERT_INT(opts.stop_free, 0);          /* the later flag wins */
    expect_error("--stop", "forever");
    expect_error("--stop", NULL);
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

static void test_equals_form(void)
{
    /* --flag=value and --flag value are the same, mixed freely. */
    ASSERT_INT(parse("--port=8081", "--address=0.0.0.0", "--thread-mode=pool",
                     "--keep-connection-timeout", "1234",
                     "--max-body-size=12345678901", "--on-allow-connect=refuse",
                     "--socket-handler=nodelay", "--pool-threads=3", NULL), 0);
    ASSERT_STR(err, "");
    ASSERT_INT(opts.props.port, 8081);
    ASSERT_STR(opts.props.address, "0.0.0.0");
    ASSERT_INT(opts.props.thread_mode, TM_POOL);
    ASSERT_INT(opts.props.keep_connection_timeout, 1234);
    ASSERT_INT(opts.props.max_body_size, 12345678901LL);
    ASSERT_INT(opts.on_allow_connect_refuse, 1);
    ASSERT_INT(opts.on_allow_connect_nodelay, 0);
    ASSERT_INT(opts.socket_handler_nodelay, 1);
    ASSERT_INT(opts.props.pool_threads, 3);
    /* Exact names only: getopt_long's prefixes would turn a flag the
     * server does not have into one it has. */
    ASSERT_INT(parse("--por", "8082", NULL), -1);
    ASSERT_STR(err, "unknown flag '--por' (see --help)");
    ASSERT_INT(parse("--port=1", "--keep-connection", NULL), -1);
    ASSERT_STR(err, "unknown flag '--keep-connection' (see --help)");
    ASSERT_INT(parse("--max-body=5", NULL), -1);
    ASSERT_STR(err, "unknown flag '--max-body=5' (see --help)");
    ASSERT_INT(parse("--horse", "--hel", NULL), -1);
    ASSERT_STR(err, "unknown flag '--hel' (see --help)");
    ASSERT_INT(parse("--por", NULL), -1); /* a prefix missing its value */
    ASSERT_STR(err, "unknown flag '--por' (see --help)");
    ASSERT_INT(parse("--keep-connection=1", NULL), -1);
    ASSERT_STR(err, "unknown flag '--keep-connection=1' (see --help)");
    /* A short flag after a long one is judged as itself. */
    ASSERT_INT(parse("--keep-connections", "-hx", NULL), 1);
    ASSERT_INT(parse("--keep-connections", "-xh", NULL), -1);
    ASSERT_STR(err, "unknown flag '-x' (see --help)");
    /* An empty value is a bad value, not a missing one. */
    ASSERT_INT(parse("--port=", NULL), -1);
    ASSERT_STR(err, "--port: '' is not a whole number from 0 to 65535");
}

static void test_messages(void)
{
    /* One message per kind of mistake, naming the flag as written in --help. */
    ASSERT_INT(parse("--keep-connections", "--port", NULL), -1);
    ASSERT_STR(err, "--port needs a value");
    ASSERT_INT(parse("--thread-mode", NULL), -1);
    ASSERT_STR(err, "--thread-mode needs a value");
    ASSERT_INT(parse("--bogus", NULL), -1);
    ASSERT_STR(err, "unknown flag '--bogus' (see --help)");
    ASSERT_INT(parse("--bogus=1", NULL), -1);
    ASSERT_STR(err, "unknown flag '--bogus=1' (see --help)");
    ASSERT_INT(parse("-x", NULL), -1);
    ASSERT_STR(err, "unknown flag '-x' (see --help)");
    ASSERT_INT(parse("--keep-connections=1", NULL), -1);
    ASSERT_STR(err, "--keep-connections takes no value");
    ASSERT_INT(parse("--help=x", NULL), -1);
    ASSERT_STR(err, "--help takes no value");
    ASSERT_INT(parse("--max", "5", NULL), -1);
    ASSERT_STR(err, "unknown flag '--max' (see --help)");
    ASSERT_INT(parse("--port", "80", "8080", NULL), -1);
    ASSERT_STR(err, "unexpected argument '8080' (see --help)");
    ASSERT_INT(parse("--thread-mode=fast", NULL), -1);
    ASSERT_STR(err, "--thread-mode: 'fast' is not none, polled, thread or pool");
    ASSERT_INT(parse("--socket-handler=refuse", NULL), -1);
    ASSERT_STR(err, "--socket-handler: 'refuse' is not nodelay");
    /* A word after an error is never reached: parsing stops there. */
    ASSERT_INT(parse("--bogus", "--help", NULL), -1);
    ASSERT_INT(help_len, 0);
}

static void test_ranges(void)
{
    static const struct { const char *arg; int ok; } cases[] = {
        { "--port=-1", 0 }, { "--port=0", 1 }, { "--port=65535", 1 }, { "--port=65536", 0 },
        { "--queue-size=0", 0 }, { "--queue-size=1", 1 }, { "--queue-size=65535", 1 },
        { "--queue-size=65536", 0 }, { "--pool-threads=0", 0 }, { "--pool-threads=1", 1 },
        { "--pool-threads=256", 1 }, { "--pool-threads=257", 0 },
        { "--keep-connection-idle-timeout=-1", 0 }, { "--keep-connection-idle-timeout=0", 1 },
        { "--request-read-timeout=2147483647", 1 }, { "--request-read-timeout=2147483648", 0 },
        { "--max-body-size=-1", 0 }, { "--max-body-size=9223372036854775807", 1 },
        { "--max-body-size=9223372036854775808", 0 },
        { "--max-header-count=5 ", 0 }, { "--max-live-connection-count=0x10", 0 },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse(cases[i].arg, NULL);

        if (rc != (cases[i].ok ? 0 : -1))
            printf("\n    %s: rc %d, err \"%s\"", cases[i].arg, rc, err);
        CU_ASSERT_EQUAL(rc, cases[i].ok ? 0 : -1);
        if (!cases[i].ok)
            CU_ASSERT(strstr(err, "is not a whole number from") != NULL);
    }
    ASSERT_INT(parse("--max-body-size=9223372036854775807", NULL), 0);
    ASSERT_INT(opts.props.max_body_size, 9223372036854775807LL);
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
        "--horse", "--stop", "--help",
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

/* set-tcp-nodelay's opt-out: TCPNoDelay is on by default, --no-tcp-no-delay
 * turns it off, --help lists it; stock refuses the flag. */
static void test_tcp_no_delay(void)
{
#if KIT_WITH_set_tcp_nodelay
    ASSERT_INT(parse(NULL), 0);
    ASSERT_INT(opts.props.tcp_no_delay, 1);
    ASSERT_INT(parse("--no-tcp-no-delay", NULL), 0);
    ASSERT_INT(opts.props.tcp_no_delay, 0);
    ASSERT_INT(parse("--help", NULL), 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(help_text);
    CU_ASSERT(strstr(help_text, "--no-tcp-no-delay") != NULL);
#else
    ASSERT_INT(parse("--no-tcp-no-delay", NULL), -1);
#endif
}

static const struct unit_test options_tests[] = {
    { "defaults", test_defaults },
    { "every_flag", test_every_flag },
    { "thread_modes", test_thread_modes },
    { "horse_then_overrides", test_horse_then_overrides },
    { "bad_numbers", test_bad_numbers },
    { "bad_words", test_bad_words },
    { "stop", test_stop },
    { "unknown_flag", test_unknown_flag },
    { "equals_form", test_equals_form },
    { "messages", test_messages },
    { "ranges", test_ranges },
    { "help", test_help },
    { "tcp_no_delay", test_tcp_no_delay },
};

int unit_register_options(void)
{
    return UNIT_ADD_SUITE("options", options_suite_clean, options_tests);
}
