/* common/tests/test_kjson.c - CUnit suite "kjson": the strings that need
 * escaping (quotes, backslashes, control bytes, bytes that are not UTF-8,
 * as a hostile server sends them) come out as ASCII-only JSON that a
 * decoder turns back into exactly the bytes that went in; the numbers are
 * the ones printf("%.Nf") wrote; the analysers' layout is byte for byte
 * the one the shell checks read.  Run from build/test-common. */
#include "../kjson.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v written by kj_print_line, as a malloc'd string. */
static char *dump_line(json_t *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT_EQUAL(kj_print_line(f, v), 0);
    fclose(f);
    return buf;
}

static int all_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return 0;
    return 1;
}

/* A reader's view of the JSON text: jansson's own decoder, then the
 * string's code points as bytes (Latin-1), what Python's
 * json.loads(t)[0].encode("latin-1") gives.  -1 if any code point is
 * above U+00FF. */
static long decode_latin1(const char *text, unsigned char *out, size_t cap)
{
    json_error_t e;
    json_t *a = json_loads(text, JSON_DECODE_ANY, &e);
    CU_ASSERT_FATAL(a != NULL && json_is_string(a));
    const unsigned char *u = (const unsigned char *)json_string_value(a);
    size_t n = json_string_length(a), o = 0;
    long rc = 0;
    for (size_t i = 0; i < n && o < cap; o++) {
        if (u[i] < 0x80) {
            out[o] = u[i++];
        } else if ((u[i] & 0xe0) == 0xc0 && i + 1 < n && u[i] <= 0xc3) {
            out[o] = (unsigned char)(((u[i] & 0x1f) << 6) | (u[i + 1] & 0x3f));
            i += 2;
        } else {
            rc = -1;
            break;
        }
    }
    json_decref(a);
    return rc < 0 ? -1 : (long)o;
}

/* kj_bytes(in): ASCII JSON, decoded back to in exactly; want, if given, is
 * the exact text. */
static void round_trip(const char *in, const char *want)
{
    char *text = dump_line(kj_bytes(in));
    unsigned char back[1024];
    long n = decode_latin1(text, back, sizeof back);
    if (want && strcmp(text, want) != 0)
        printf("\n    got %s, want %s", text, want);
    CU_ASSERT(!want || strcmp(text, want) == 0);
    CU_ASSERT(all_ascii(text));
    CU_ASSERT_EQUAL(n, (long)strlen(in));
    CU_ASSERT(n >= 0 && memcmp(back, in, (size_t)n) == 0);
    free(text);
}

static void t_quotes_backslashes_controls(void)
{
    round_trip("close", "\"close\"");
    round_trip("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
    round_trip("\x01\x08\t\n\x0b\x0c\r\x1b\x1f \x7f", "\"\\u0001\\b\\t\\n\\u000B\\f\\r\\u001B\\u001F \x7f\"");
    /* A header value built to break hand-made JSON. */
    round_trip("keep-alive\", \"injected\": true, \"x\": \"", NULL);
}

static void t_non_utf8(void)
{
    round_trip("\xff", "\"\\u00FF\"");
    round_trip("\x80", "\"\\u0080\"");
    round_trip("\xc3\xa9", "\"\\u00C3\\u00A9\""); /* bytes, not decoded: the probe's rule */
    round_trip("\xc0\xaf", NULL);                 /* overlong '/' */
    round_trip("\xed\xa0\x80", NULL);             /* a UTF-16 surrogate in UTF-8 form */
    round_trip("\xe2\x82", NULL);                 /* truncated sequence */
    round_trip("\xf4\x90\x80\x80", NULL);         /* above U+10FFFF */
    char every[256];
    for (int i = 1; i < 256; i++)
        every[i - 1] = (char)i;
    every[255] = 0;
    round_trip(every, NULL);
}

static void t_names_and_nulls(void)
{
    char *t = dump_line(kj_name("/tmp/caf\xc3\xa9.pcap")); /* valid UTF-8: kept as text */
    CU_ASSERT_STRING_EQUAL(t, "\"/tmp/caf\\u00E9.pcap\"");
    free(t);
    t = dump_line(kj_name("/tmp/\xff.pcap")); /* not UTF-8: its bytes */
    CU_ASSERT_STRING_EQUAL(t, "\"/tmp/\\u00FF.pcap\"");
    free(t);
    t = dump_line(kj_name("x\"\\\x01"));
    CU_ASSERT_STRING_EQUAL(t, "\"x\\\"\\\\\\u0001\"");
    free(t);
    t = dump_line(kj_bytes(NULL));
    CU_ASSERT_STRING_EQUAL(t, "null");
    free(t);
    t = dump_line(kj_name(NULL));
    CU_ASSERT_STRING_EQUAL(t, "null");
    free(t);
}

/* The reader's number from kj_fixed's text equals the one from printf's. */
static void same_number(double v, int d)
{
    char want[400];
    char *t = dump_line(kj_fixed(true, v, d));
    snprintf(want, sizeof want, "%.*f", d, v);
    if (strtod(t, NULL) != strtod(want, NULL))
        printf("\n    %.17g: %s, printf %s", v, t, want);
    CU_ASSERT(strtod(t, NULL) == strtod(want, NULL));
    free(t);
}

static void t_fixed_numbers(void)
{
    char *t = dump_line(kj_fixed(true, 1234.0, 1));
    CU_ASSERT_STRING_EQUAL(t, "1234.0"); /* what "%.1f" wrote */
    free(t);
    t = dump_line(kj_fixed(true, 12.3, 3));
    CU_ASSERT_STRING_EQUAL(t, "12.3"); /* "12.300": the same number */
    free(t);
    t = dump_line(kj_fixed(true, 0.0625, 3)); /* a tie: printf rounds to even */
    CU_ASSERT_STRING_EQUAL(t, "0.062");
    free(t);
    t = dump_line(kj_fixed(false, 1.0, 1));
    CU_ASSERT_STRING_EQUAL(t, "null");
    free(t);
    t = dump_line(kj_fixed(true, NAN, 1));
    CU_ASSERT_STRING_EQUAL(t, "null");
    free(t);
    static const double fixed[] = {0, 0.05, 0.15, 0.25, 1.0005, 123456.789, 99999999999.999, 1e10 + 0.0625, -2.5};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        same_number(fixed[i], 1);
        same_number(fixed[i], 3);
    }
    /* Latencies are whole microseconds, ratios anything: a spread of both. */
    unsigned long long x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        same_number((double)(x % 100000000000ull), 1);
        same_number((double)(x % 100000000000ull) / 1000.0, 3);
        same_number((double)(x % 1000000) / (double)(1 + x % 99991), 3);
    }
}

static void t_line_layout(void)
{
    json_t *o = json_object();
    kj_set(o, "probe", json_integer(1));
    kj_set(o, "s", kj_bytes("a\"b"));
    kj_set(o, "a", kj_ints((const int[]){1, 2, 3}, 3));
    kj_set(o, "e", json_array());
    kj_set(o, "n", json_null());
    kj_set(o, "t", json_true());
    char *t = dump_line(o);
    CU_ASSERT_STRING_EQUAL(t, "{\"probe\":1,\"s\":\"a\\\"b\",\"a\":[1,2,3],\"e\":[],\"n\":null,\"t\":true}");
    free(t);
}

static void t_rows_layout(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct kj_rows w;
    kj_rows_begin(&w, f);
    kj_rows_list_begin(&w, "connections");
    for (int i = 1; i <= 2; i++) {
        json_t *c = json_object();
        kj_set(c, "conn", json_integer(i));
        kj_set(c, "peer", kj_name("127.0.0.1:1"));
        kj_set(c, "sends", kj_ints((const int[]){2, 2}, 2));
        kj_rows_item(&w, c);
    }
    kj_rows_list_end(&w);
    kj_rows_member(&w, "accepts", json_integer(2));
    kj_rows_list_begin(&w, "empty");
    kj_rows_list_end(&w);
    kj_rows_member(&w, "sel", kj_ints(NULL, 0));
    CU_ASSERT_EQUAL(kj_rows_end(&w), 0);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(buf, "{\n"
                                "  \"connections\": [\n"
                                "    {\"conn\": 1, \"peer\": \"127.0.0.1:1\", \"sends\": [2, 2]},\n"
                                "    {\"conn\": 2, \"peer\": \"127.0.0.1:1\", \"sends\": [2, 2]}\n"
                                "  ],\n"
                                "  \"accepts\": 2,\n"
                                "  \"empty\": [\n"
                                "  ],\n"
                                "  \"sel\": []\n"
                                "}\n");
    free(buf);
}

void kjson_add_suite(void)
{
    CU_pSuite s = CU_add_suite("kjson", NULL, NULL);
    CU_add_test(s, "quotes_backslashes_controls", t_quotes_backslashes_controls);
    CU_add_test(s, "non_utf8", t_non_utf8);
    CU_add_test(s, "names_and_nulls", t_names_and_nulls);
    CU_add_test(s, "fixed_numbers", t_fixed_numbers);
    CU_add_test(s, "line_layout", t_line_layout);
    CU_add_test(s, "rows_layout", t_rows_layout);
}
