/* repro/probe/test_probe.c - CUnit tests of the probe's command line
 * (probe_args.c, getopt_long) and of its JSON for hostile header values
 * (probe_json.c over common/kjson: quotes, backslashes, control bytes and
 * bytes that are not UTF-8 come back exactly).  Build: make
 * build/test-probe (every probe source but probe.c's main). */
#include "probe.h"

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *prog = "probe";

static const struct opts defaults = {.scenario = "seq", .path = "/ping", .n = 30, .gap_ms = 300, .k = 3,
                                     .deadline_ms = 3000, .connections = 4, .rounds = 40, .max_idle_ms = 400,
                                     .seed = 1, .sample = 10, .sample_requests = 1, .max_body = 1ull << 30};
static struct opts o;
static char msg[8192];

/* probe_parse_args over a NULL-terminated list (argv[0] added), from the
 * defaults main() sets; what it printed (stderr, stdout) is left in msg. */
static int parse(const char *first, ...)
{
    static char words[32][128];
    char *argv[33];
    int argc = 0, rc, out, err;
    va_list ap;
    FILE *tmp = tmpfile();
    CU_ASSERT_FATAL(tmp != NULL);
    argv[argc++] = (char *)"probe";
    va_start(ap, first);
    for (const char *a = first; a && argc < 32; a = va_arg(ap, const char *), argc++) {
        snprintf(words[argc], sizeof words[argc], "%s", a); /* getopt permutes argv */
        argv[argc] = words[argc];
    }
    va_end(ap);
    argv[argc] = NULL;
    o = defaults;
    fflush(stdout);
    fflush(stderr);
    out = dup(1), err = dup(2);
    dup2(fileno(tmp), 1);
    dup2(fileno(tmp), 2);
    rc = probe_parse_args(&o, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1), dup2(err, 2);
    close(out), close(err);
    rewind(tmp);
    msg[fread(msg, 1, sizeof msg - 1, tmp)] = 0;
    fclose(tmp);
    return rc;
}

#define EXPECT_MSG(want)                                                                                   \
    do {                                                                                                   \
        if (strcmp(msg, want "\ntry 'probe --help'\n") != 0)                                               \
            printf("\n    got \"%s\", want \"%s\"", msg, want);                                            \
        CU_ASSERT_STRING_EQUAL(msg, want "\ntry 'probe --help'\n");                                        \
    } while (0)

static void t_forms(void)
{
    /* What kit.py writes: --json, --scenario, options, then HOST PORT. */
    CU_ASSERT_EQUAL(parse("--json", "--scenario", "pool", "-n", "5", "--deadline-ms", "500", "-c", "2",
                          "--rounds", "6", "--max-idle-ms", "40", "--seed", "7", "127.0.0.1", "8080", NULL),
                    0);
    CU_ASSERT_STRING_EQUAL(msg, "");
    CU_ASSERT(o.json);
    CU_ASSERT_STRING_EQUAL(o.scenario, "pool");
    CU_ASSERT_EQUAL(o.n, 5);
    CU_ASSERT_EQUAL(o.deadline_ms, 500);
    CU_ASSERT_EQUAL(o.connections, 2);
    CU_ASSERT_EQUAL(o.rounds, 6);
    CU_ASSERT_EQUAL(o.max_idle_ms, 40);
    CU_ASSERT_EQUAL(o.seed, 7);
    CU_ASSERT_STRING_EQUAL(o.host, "127.0.0.1");
    CU_ASSERT_EQUAL(o.port, 8080);
    CU_ASSERT_STRING_EQUAL(o.hosthdr, "127.0.0.1:8080");
    /* --opt=V, options after HOST PORT, short options glued, IPv6. */
    CU_ASSERT_EQUAL(parse("::1", "--scenario=fdscale", "81", "--connections=1100", "--sample=3", "-k7",
                          "--sample-requests=2", "--accept-stall-ms=1500", "--gap-ms=0", "--path=/slow?ms=5", "--max-body=0", NULL),
                    0);
    CU_ASSERT_STRING_EQUAL(o.scenario, "fdscale");
    CU_ASSERT_EQUAL(o.connections, 1100);
    CU_ASSERT_EQUAL(o.sample, 3);
    CU_ASSERT_EQUAL(o.sample_requests, 2);
    CU_ASSERT_EQUAL(o.accept_stall_ms, 1500);
    CU_ASSERT_EQUAL(o.k, 7);
    CU_ASSERT_EQUAL(o.gap_ms, 0);
    CU_ASSERT_STRING_EQUAL(o.path, "/slow?ms=5");
    CU_ASSERT_EQUAL(o.max_body, 0);
    CU_ASSERT_STRING_EQUAL(o.hosthdr, "[::1]:81");
    /* Untouched options keep main()'s defaults. */
    CU_ASSERT_EQUAL(o.n, 30);
    CU_ASSERT_EQUAL(o.deadline_ms, 3000);
    CU_ASSERT_FALSE(o.json);
    CU_ASSERT_EQUAL(parse("--help", NULL), -1);
    CU_ASSERT(strstr(msg, "usage: probe [options] HOST PORT") != NULL);
    CU_ASSERT(strstr(msg, "--max-body B") != NULL);
    CU_ASSERT_EQUAL(parse("-h", "--bogus", NULL), -1);
}

static void t_errors(void)
{
    CU_ASSERT_EQUAL(parse("h", "1", "--deadline-ms", NULL), 2);
    EXPECT_MSG("probe: option '--deadline-ms' needs a value");
    CU_ASSERT_EQUAL(parse("h", "1", "-n", NULL), 2);
    EXPECT_MSG("probe: option '-n' needs a value");
    CU_ASSERT_EQUAL(parse("--bogus", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown option '--bogus'");
    CU_ASSERT_EQUAL(parse("-x", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown option '-x'");
    CU_ASSERT_EQUAL(parse("--max=5", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown option '--max=5'");
    /* Exact names only (getopt_long would take a prefix). */
    CU_ASSERT_EQUAL(parse("--dead", "5", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown option '--dead'");
    CU_ASSERT_EQUAL(parse("--js", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown option '--js'");
    CU_ASSERT_EQUAL(parse("h", "1", "--scen=seq", NULL), 2);
    EXPECT_MSG("probe: unknown option '--scen=seq'");
    CU_ASSERT_EQUAL(parse("h", "1", "--dead", NULL), 2);
    EXPECT_MSG("probe: unknown option '--dead'");
    CU_ASSERT_EQUAL(parse("--deadline-ms", "5", "-hn5", NULL), -1); /* -h in a cluster after a long option */
    CU_ASSERT_EQUAL(parse("--deadline-ms", "5", "-k5c", NULL), 2);
    EXPECT_MSG("probe: invalid value '5c' for -k (range 1..1000)");
    CU_ASSERT_EQUAL(parse("--help=1", NULL), 2);
    EXPECT_MSG("probe: option '--help' takes no value");
    CU_ASSERT_EQUAL(parse("--json=yes", "h", "1", NULL), 2);
    EXPECT_MSG("probe: option '--json' takes no value");
    CU_ASSERT_EQUAL(parse("--scenario=fast", "h", "1", NULL), 2);
    EXPECT_MSG("probe: unknown scenario 'fast'");
    CU_ASSERT_EQUAL(parse("--path", "ping", "h", "1", NULL), 2);
    EXPECT_MSG("probe: --path must start with '/', have no spaces/CR/LF and be <= 1024 bytes");
    CU_ASSERT_EQUAL(parse("h", NULL), 2);
    EXPECT_MSG("probe: need HOST and PORT");
    CU_ASSERT_EQUAL(parse("h", "1", "2", NULL), 2);
    EXPECT_MSG("probe: unexpected argument '2'");
    CU_ASSERT_EQUAL(parse("h", "65536", NULL), 2);
    EXPECT_MSG("probe: invalid port '65536'");
    CU_ASSERT_EQUAL(parse("--seed=-1", "h", "1", NULL), 2);
    EXPECT_MSG("probe: invalid value '-1' for --seed");
}

static void t_ranges(void)
{
    static const struct {
        const char *opt, *val;
        int ok;
    } cases[] = {
        {"-n", "0", 0},          {"-n", "1", 1},           {"-n", "1000000", 1}, {"-n", "1000001", 0},
        {"-k", "1000", 1},       {"-k", "1001", 0},        {"-c", "0", 0},       {"--connections", "100000", 1},
        {"-c", "100001", 0},     {"--deadline-ms", "0", 0}, {"--deadline-ms", "86400000", 1},
        {"--gap-ms", "-1", 0},   {"--gap-ms", "3600000", 1}, {"--gap-ms", "3600001", 0},
        {"--rounds", "100001", 0}, {"--max-idle-ms", "0", 1}, {"--sample", "50001", 0},
        {"--max-body", "9223372036854775807", 1}, {"--max-body", "9223372036854775808", 0},
        {"-n", "", 0},           {"-n", "5x", 0},          {"-n", "99999999999999999999", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = parse(cases[i].opt, cases[i].val, "h", "1", NULL);
        if (rc != (cases[i].ok ? 0 : 2))
            printf("\n    %s %s: rc %d, %s", cases[i].opt, cases[i].val, rc, msg);
        CU_ASSERT_EQUAL(rc, cases[i].ok ? 0 : 2);
        if (!cases[i].ok)
            CU_ASSERT(strncmp(msg, "probe: invalid value '", 22) == 0);
    }
    CU_ASSERT_EQUAL(parse("-c", "0", "h", "1", NULL), 2);
    EXPECT_MSG("probe: invalid value '0' for -c/--connections (range 1..100000)");
}

/* A decoded JSON string's code points as bytes (all <= U+00FF), or "". */
static size_t latin1(json_t *s, char *out, size_t cap)
{
    const unsigned char *u = (const unsigned char *)json_string_value(s);
    size_t n = 0;
    for (; u && *u && n + 1 < cap; n++)
        if (*u < 0x80) {
            out[n] = (char)*u++;
        } else {
            out[n] = (char)(((u[0] & 0x1f) << 6) | (u[1] & 0x3f));
            u += 2;
        }
    out[n] = 0;
    return n;
}

static void t_hostile_headers(void)
{
    static const char conn[] = "ke\"ep\\-al\x01ive\x7f\xff\xc3\xa9\xc3(\r";
    static const char ka[] = "timeout=5\", \"reused\": true, \"x\": \"\x80";
    struct run R;
    char *text = NULL, got[256];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_EQUAL(parse("--path=/p\xe9", "h\xff", "1", NULL), 0);
    run_init(&R, "seq", 3);
    R.recs[0] = (struct rec){.oc = OC_RESPONSE, .status = 200, .minor = 1, .connection = strdup(conn),
                             .keep_alive = strdup(ka), .body_len = 4, .latency_us = 1234, .conn_index = 0,
                             .local_port = 5};
    /* Valid UTF-8 is bytes too: the reader gets c3 a9 back, not U+00E9. */
    R.recs[2] = (struct rec){.oc = OC_RESPONSE, .status = 200, .connection = strdup("caf\xc3\xa9"),
                             .body_len = 0, .conn_index = 1, .local_port = 6};
    json_out(f, json_run(&R, &o, "seq"));
    fclose(f);
    run_free(&R);
    for (size_t i = 0; i < len; i++)
        CU_ASSERT((unsigned char)text[i] < 0x80);
    CU_ASSERT(len > 0 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_FATAL(j != NULL);
    latin1(json_array_get(json_object_get(j, "connection_header"), 0), got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, conn);
    latin1(json_array_get(json_object_get(j, "keep_alive_header"), 0), got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, ka);
    CU_ASSERT(json_is_null(json_array_get(json_object_get(j, "connection_header"), 1)));
    latin1(json_array_get(json_object_get(j, "connection_header"), 2), got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, "caf\xc3\xa9");
    CU_ASSERT(json_is_null(json_array_get(json_object_get(j, "keep_alive_header"), 2)));
    latin1(json_object_get(j, "host"), got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, "h\xff");
    latin1(json_object_get(json_object_get(j, "params"), "path"), got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, "/p\xe9");
    CU_ASSERT(json_is_false(json_object_get(j, "reused"))); /* the injected key is a value, not a key */
    CU_ASSERT_EQUAL(json_real_value(json_array_get(json_object_get(j, "latency_us"), 0)), 1234.0);
    json_decref(j);
    free(text);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite a = CU_add_suite("probe_args", NULL, NULL);
    CU_add_test(a, "forms", t_forms);
    CU_add_test(a, "errors", t_errors);
    CU_add_test(a, "ranges", t_ranges);
    CU_pSuite j = CU_add_suite("probe_json", NULL, NULL);
    CU_add_test(j, "hostile_headers", t_hostile_headers);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return (int)failed;
}
