/* test_reader.c - suite "reader": the pure request-reading rules. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "unit.h"

/* ---- reader_scan_line -------------------------------------------------- */

/* What connection_read_string does with the scanner, over a sequence of
 * chunks (each chunk is what one read() returned): the line it assembles and
 * where in the input it stops.  Returns 1 when the line ended. */
struct feed {
    char line[512];
    size_t line_len;
    size_t consumed;  /* input bytes consumed, over all chunks */
    int ended;
};

static void feed_chunks(const char *in, const size_t *cuts, size_t ncuts,
                        size_t total, struct feed *f)
{
    size_t chunk_start = 0, k;
    int pending_cr = 0;

    memset(f, 0, sizeof *f);
    for (k = 0; k <= ncuts && !f->ended; k++) {
        size_t chunk_end = k < ncuts ? cuts[k] : total;
        size_t pos = chunk_start;

        /* Like FBuffer: scan what is left of this chunk until it is empty
         * or the line ended. */
        while (pos < chunk_end && !f->ended) {
            struct reader_chunk ch;

            reader_scan_line(in + pos, chunk_end - pos, pending_cr, &ch);
            if (ch.prepend_cr)
                f->line[f->line_len++] = '\r';
            memcpy(f->line + f->line_len, in + pos + ch.take_from,
                   ch.take_len);
            f->line_len += ch.take_len;
            pos += ch.consumed;
            pending_cr = ch.pending_cr;
            f->ended = ch.ended;
            if (ch.consumed == 0)
                break; /* would loop forever: a scanner bug */
        }
        f->consumed = pos;
        chunk_start = chunk_end;
    }
    f->line[f->line_len] = '\0';
}

/* The same line for the whole input, for every single split point, and fed
 * one byte per read. */
static void check_every_split(const char *in, const char *want_line,
                              size_t want_consumed)
{
    size_t n = strlen(in), k;
    size_t *cuts = calloc(n, sizeof *cuts);
    struct feed f;

    feed_chunks(in, NULL, 0, n, &f);
    ASSERT_INT(f.ended, 1);
    ASSERT_MEM(f.line, f.line_len, want_line);
    ASSERT_INT(f.consumed, want_consumed);
    for (k = 1; k < n; k++) {
        feed_chunks(in, &k, 1, n, &f);
        ASSERT_INT(f.ended, 1);
        ASSERT_MEM(f.line, f.line_len, want_line);
        ASSERT_INT(f.consumed, want_consumed);
    }
    for (k = 1; k < n; k++)
        cuts[k - 1] = k;
    feed_chunks(in, cuts, n - 1, n, &f);
    ASSERT_INT(f.ended, 1);
    ASSERT_MEM(f.line, f.line_len, want_line);
    ASSERT_INT(f.consumed, want_consumed);
    free(cuts);
}

static void test_scan_whole_line(void)
{
    const char *in = "GET /a HTTP/1.1\r\nHost: x\r\n";
    struct reader_chunk ch;

    reader_scan_line(in, strlen(in), 0, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.prepend_cr, 0);
    ASSERT_INT(ch.pending_cr, 0);
    ASSERT_INT(ch.take_from, 0);
    ASSERT_INT(ch.take_len, 15);
    ASSERT_INT(ch.consumed, 17);
    ASSERT_MEM(in + ch.take_from, ch.take_len, "GET /a HTTP/1.1");
    /* The next call on the rest gives the next line. */
    reader_scan_line(in + 17, strlen(in) - 17, 0, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_MEM(in + 17 + ch.take_from, ch.take_len, "Host: x");
    ASSERT_INT(ch.consumed, 9);
}

static void test_scan_empty_line(void)
{
    struct reader_chunk ch;

    reader_scan_line("\r\nrest", 6, 0, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.take_len, 0);
    ASSERT_INT(ch.consumed, 2);
}

static void test_scan_no_line_end(void)
{
    struct reader_chunk ch;

    reader_scan_line("GET /", 5, 0, &ch);
    ASSERT_INT(ch.ended, 0);
    ASSERT_INT(ch.pending_cr, 0);
    ASSERT_INT(ch.take_len, 5);
    ASSERT_INT(ch.consumed, 5);
}

static void test_scan_cr_split_across_chunks(void)
{
    struct reader_chunk ch;

    /* The chunk ends with a CR: it is held back, not taken as data. */
    reader_scan_line("abc\r", 4, 0, &ch);
    ASSERT_INT(ch.ended, 0);
    ASSERT_INT(ch.pending_cr, 1);
    ASSERT_INT(ch.take_len, 3);
    ASSERT_INT(ch.consumed, 4);
    /* Its LF starts the next chunk: the line ends after one byte. */
    reader_scan_line("\nXYZ", 4, 1, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.prepend_cr, 0);
    ASSERT_INT(ch.take_len, 0);
    ASSERT_INT(ch.consumed, 1);
    /* A chunk that is a lone CR. */
    reader_scan_line("\r", 1, 0, &ch);
    ASSERT_INT(ch.pending_cr, 1);
    ASSERT_INT(ch.take_len, 0);
    ASSERT_INT(ch.consumed, 1);
}

static void test_scan_cr_then_other_byte(void)
{
    struct reader_chunk ch;

    /* The held-back CR is not followed by LF: it becomes data. */
    reader_scan_line("X\r\n", 3, 1, &ch);
    ASSERT_INT(ch.prepend_cr, 1);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.take_from, 0);
    ASSERT_INT(ch.take_len, 1);
    ASSERT_INT(ch.consumed, 3);
    /* Inside one chunk: CR + non-LF is data. */
    reader_scan_line("a\rb\r\n", 5, 0, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.take_len, 3);
    ASSERT_INT(ch.consumed, 5);
}

static void test_scan_bare_lf_is_data(void)
{
    struct reader_chunk ch;

    reader_scan_line("abc\ndef", 7, 0, &ch);
    ASSERT_INT(ch.ended, 0);
    ASSERT_INT(ch.take_len, 7);
    ASSERT_INT(ch.consumed, 7);
    reader_scan_line("abc\ndef\r\n", 9, 0, &ch);
    ASSERT_INT(ch.ended, 1);
    ASSERT_INT(ch.take_len, 7);
}

static void test_scan_every_split_point(void)
{
    check_every_split("GET /index.html HTTP/1.1\r\nHost: a\r\n",
                      "GET /index.html HTTP/1.1", 26);
    check_every_split("\r\nGET", "", 2);
    check_every_split("a\rb\r\nc", "a\rb", 5);
    check_every_split("a\r\r\nc", "a\r", 4);
    check_every_split("a\nb\r\n", "a\nb", 5);
    check_every_split("x\r\r\r\n", "x\r\r", 5);
}

/* ---- reader_parse_start_line ------------------------------------------- */

static int parse(const char *line, int strict, struct reader_start_line *sl)
{
    return reader_parse_start_line(line, strlen(line), strict, sl);
}

static void test_start_line_words(void)
{
    struct reader_start_line sl;

    ASSERT_INT(parse("GET /x?y=1 HTTP/1.1", 1, &sl), 0);
    ASSERT_MEM(sl.method, sl.method_len, "GET");
    ASSERT_MEM(sl.url, sl.url_len, "/x?y=1");
    ASSERT_MEM(sl.version, sl.version_len, "1.1");
    ASSERT_INT(parse("POST /echo HTTP/1.0", 1, &sl), 0);
    ASSERT_MEM(sl.method, sl.method_len, "POST");
    ASSERT_MEM(sl.version, sl.version_len, "1.0");
    /* A fourth word is ignored. */
    ASSERT_INT(parse("GET / HTTP/1.1 extra", 1, &sl), 0);
    ASSERT_MEM(sl.version, sl.version_len, "1.1");
}

static void test_start_line_missing_version(void)
{
    struct reader_start_line sl;

    ASSERT_INT(parse("GET /x", 1, &sl), 0);
    ASSERT_MEM(sl.method, sl.method_len, "GET");
    ASSERT_MEM(sl.url, sl.url_len, "/x");
    ASSERT_INT(sl.version_len, 0);
    ASSERT_INT(parse("GET", 1, &sl), 0);
    ASSERT_MEM(sl.method, sl.method_len, "GET");
    ASSERT_INT(sl.url_len, 0);
}

static void test_start_line_bad_version(void)
{
    struct reader_start_line sl;

    ASSERT_INT(parse("GET /x FTP/1.0", 1, &sl), 400);
    ASSERT_INT(parse("GET /x HTTP", 1, &sl), 400);
    ASSERT_INT(parse("GET /x http/1.1", 1, &sl), 400);
    ASSERT_INT(parse("GET /x HTTP/", 1, &sl), 0);
    ASSERT_INT(sl.version_len, 0);
}

static void test_start_line_double_space(void)
{
    struct reader_start_line sl;

    /* Two spaces make an empty word: the URL is empty and "/x" lands in
     * the version slot, which is not HTTP/ -> 400. */
    ASSERT_INT(parse("GET  /x HTTP/1.1", 1, &sl), 400);
    /* Before the version, the empty third word means "no version". */
    ASSERT_INT(parse("GET /x  HTTP/1.1", 1, &sl), 0);
    ASSERT_MEM(sl.url, sl.url_len, "/x");
    ASSERT_INT(sl.version_len, 0);
}

static void test_start_line_strict_ascii(void)
{
    struct reader_start_line sl;

    ASSERT_INT(parse("GET /\x01 HTTP/1.1", 1, &sl), 400);
    ASSERT_INT(parse("GET /\x1f HTTP/1.1", 1, &sl), 400);
    ASSERT_INT(parse("GET /\t HTTP/1.1", 1, &sl), 400);
    ASSERT_INT(parse("GET /\x7f HTTP/1.1", 1, &sl), 400);
    ASSERT_INT(parse("GET /\xc3\xa9 HTTP/1.1", 1, &sl), 400);
    /* 0x20 and 0x7e are the printable bounds. */
    ASSERT_INT(parse("GET /~ HTTP/1.1", 1, &sl), 0);
    ASSERT_MEM(sl.url, sl.url_len, "/~");
}

static void test_start_line_not_strict(void)
{
    struct reader_start_line sl;

    ASSERT_INT(parse("GET /\xc3\xa9 HTTP/1.1", 0, &sl), 0);
    ASSERT_MEM(sl.url, sl.url_len, "/\xc3\xa9");
    ASSERT_INT(parse("GET /\x01 HTTP/1.1", 0, &sl), 0);
    ASSERT_INT(sl.url_len, 2);
    /* Non-strict mode still wants a printable version word. */
    ASSERT_INT(parse("GET / HTTP/1.1\t", 0, &sl), 400);
    ASSERT_INT(parse("GET / HTTP/1.\xb1", 0, &sl), 400);
    ASSERT_INT(parse("GET / HTTP/1.1", 0, &sl), 0);
    ASSERT_MEM(sl.version, sl.version_len, "1.1");
}

/* IsValidMethod: letters only, non-empty, in both modes. */
static void test_start_line_method(void)
{
    struct reader_start_line sl;
    int strict;

    for (strict = 0; strict <= 1; strict++) {
        ASSERT_INT(parse("GET / HTTP/1.1", strict, &sl), 0);
        ASSERT_INT(parse("propfind / HTTP/1.1", strict, &sl), 0);
        ASSERT_INT(parse("M-SEARCH * HTTP/1.1", strict, &sl), 400);
        ASSERT_INT(parse("GET1 / HTTP/1.1", strict, &sl), 400);
        ASSERT_INT(parse(" / HTTP/1.1", strict, &sl), 400);
        ASSERT_INT(parse("G_T / HTTP/1.1", strict, &sl), 400);
    }
    ASSERT_INT(parse("G\xc3\xa9T / HTTP/1.1", 0, &sl), 400);
    ASSERT_INT(reader_is_valid_method("", 0), 0);
    ASSERT_INT(reader_is_valid_method("Az", 2), 1);
    ASSERT_INT(reader_is_valid_method("A@", 2), 0);
    ASSERT_INT(reader_is_valid_method("[", 1), 0);
}

/* HasIllegalControlChar: below 0x20 except TAB, LF, CR. */
static void test_illegal_control_char(void)
{
    char b[1];
    int ch;

    for (ch = 0; ch < 0x100; ch++) {
        b[0] = (char)ch;
        ASSERT_INT(reader_has_illegal_control_char(b, 1),
                   ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r');
    }
    ASSERT_INT(reader_has_illegal_control_char("Host: a\tb", 9), 0);
    ASSERT_INT(reader_has_illegal_control_char("\x16\x03\x01", 3), 1);
    ASSERT_INT(reader_has_illegal_control_char("ab\0", 3), 1);
    ASSERT_INT(reader_has_illegal_control_char("", 0), 0);
}

/* ---- reader_split_header ----------------------------------------------- */

static void test_split_header(void)
{
    const char *name, *value;
    size_t nl, vl;
    const char *l1 = "Host: example.com", *l2 = "X-A :  v w \t",
               *l3 = "Host: a:8080", *l4 = "X-Empty:", *l5 = "NoColon";

    ASSERT_INT(reader_split_header(l1, strlen(l1), &name, &nl, &value, &vl), 1);
    ASSERT_MEM(name, nl, "Host");
    ASSERT_MEM(value, vl, "example.com");
    /* The value is trimmed at both ends; the name is taken as it is. */
    ASSERT_INT(reader_split_header(l2, strlen(l2), &name, &nl, &value, &vl), 1);
    ASSERT_MEM(name, nl, "X-A ");
    ASSERT_MEM(value, vl, "v w");
    /* Only the first colon splits. */
    ASSERT_INT(reader_split_header(l3, strlen(l3), &name, &nl, &value, &vl), 1);
    ASSERT_MEM(value, vl, "a:8080");
    ASSERT_INT(reader_split_header(l4, strlen(l4), &name, &nl, &value, &vl), 1);
    ASSERT_MEM(name, nl, "X-Empty");
    ASSERT_INT(vl, 0);
    ASSERT_INT(reader_split_header(l5, strlen(l5), &name, &nl, &value, &vl), 0);
}

/* ---- reader_content_length --------------------------------------------- */

static int64_t cl(const char *s)
{
    return reader_content_length(s, strlen(s));
}

static void test_content_length(void)
{
    ASSERT_INT(cl("42"), 42);
    ASSERT_INT(cl("0"), 0);
    ASSERT_INT(cl(" 42 "), 42);
    ASSERT_INT(cl("\t10\t"), 10);
    ASSERT_INT(cl("+7"), 7);
    ASSERT_INT(cl("-5"), -5);
    ASSERT_INT(cl("007"), 7);
    ASSERT_INT(cl(""), 0);
    ASSERT_INT(cl("   "), 0);
    ASSERT_INT(cl("+"), 0);
    ASSERT_INT(cl("-"), 0);
    ASSERT_INT(cl("abc"), 0);
    ASSERT_INT(cl("12a"), 0);
    ASSERT_INT(cl("1 2"), 0);
    ASSERT_INT(cl("0x10"), 0);
    ASSERT_INT(cl("9223372036854775807"), INT64_MAX);
    ASSERT_INT(cl("-9223372036854775807"), -INT64_MAX);
    ASSERT_INT(cl("9223372036854775808"), 0);
    ASSERT_INT(cl("99999999999999999999999"), 0);
}

/* ---- reader_keep_alive / reader_same_text ------------------------------ */

static void test_keep_alive_rules(void)
{
    ASSERT_INT(reader_keep_alive("1.1", NULL), 1);
    ASSERT_INT(reader_keep_alive("1.0", NULL), 0);
    ASSERT_INT(reader_keep_alive("", NULL), 0);
    ASSERT_INT(reader_keep_alive("2", NULL), 0);
    ASSERT_INT(reader_keep_alive("1.1", "close"), 0);
    ASSERT_INT(reader_keep_alive("1.1", "CLOSE"), 0);
    ASSERT_INT(reader_keep_alive("1.1", "Close"), 0);
    ASSERT_INT(reader_keep_alive("1.0", "keep-alive"), 1);
    ASSERT_INT(reader_keep_alive("1.0", "Keep-Alive"), 1);
    ASSERT_INT(reader_keep_alive("1.0", "KEEP-ALIVE"), 1);
    ASSERT_INT(reader_keep_alive("1.1", "keep-alive"), 1);
    ASSERT_INT(reader_keep_alive("1.1", "Upgrade"), 1);
    ASSERT_INT(reader_keep_alive("1.0", ""), 0);
    ASSERT_INT(reader_keep_alive("1.1", ""), 1);
    ASSERT_INT(reader_keep_alive("0.9", NULL), 0);
    ASSERT_INT(reader_keep_alive("1.", NULL), 0);
    ASSERT_INT(reader_keep_alive("1.00", NULL), 0);
    ASSERT_INT(reader_keep_alive("1.1x", NULL), 0);
    ASSERT_INT(reader_keep_alive("1.1", "closed"), 1);
    ASSERT_INT(reader_keep_alive("1.0", "keep-alived"), 0);
}

/* B13: stock compares the whole Connection value and the version string
 * "1.1"; with the fix Connection is a list of options (RFC 9110 7.6.1,
 * "close" wins) and every HTTP/1.x from 1.1 on persists (RFC 9112 9.3). */
static void test_b13_connection_options(void)
{
    static const struct {
        const char *version, *connection;
        int stock, fixed;
    } cases[] = {
        { "1.1", "keep-alive, close", 1, 0 },
        { "1.1", "close, Upgrade", 1, 0 },
        { "1.1", "Upgrade, Close", 1, 0 },
        { "1.1", " close ", 1, 0 },
        { "1.1", "close,", 1, 0 },
        { "1.1", ",\tclose", 1, 0 },
        { "1.0", "keep-alive, Upgrade", 0, 1 },
        { "1.0", "Upgrade,Keep-Alive", 0, 1 },
        { "1.0", "keep-alive, close", 0, 0 },
        { "1.2", NULL, 0, 1 },
        { "1.10", NULL, 0, 1 },
        { "1.2", "close", 0, 0 },
        /* single values: as before */
        { "1.1", "close", 0, 0 },
        { "1.1", "CLOSE", 0, 0 },
        { "1.0", "keep-alive", 1, 1 },
        { "1.1", NULL, 1, 1 },
        { "1.0", NULL, 0, 0 },
        { "2.0", NULL, 0, 0 },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int want = KIT_FIXED_B13 ? cases[i].fixed : cases[i].stock;

        ASSERT_INT(reader_keep_alive(cases[i].version, cases[i].connection), want);
    }
}

static void test_same_text(void)
{
    ASSERT_INT(reader_same_text("Content-Length", 14, "content-length"), 1);
    ASSERT_INT(reader_same_text("Content-Length", 7, "content"), 1);
    ASSERT_INT(reader_same_text("Content", 7, "content-length"), 0);
    ASSERT_INT(reader_same_text("", 0, ""), 1);
    ASSERT_INT(reader_same_text("abc", 3, "abd"), 0);
}

static const struct unit_test reader_tests[] = {
    { "scan_whole_line", test_scan_whole_line },
    { "scan_empty_line", test_scan_empty_line },
    { "scan_no_line_end", test_scan_no_line_end },
    { "scan_cr_split_across_chunks", test_scan_cr_split_across_chunks },
    { "scan_cr_then_other_byte", test_scan_cr_then_other_byte },
    { "scan_bare_lf_is_data", test_scan_bare_lf_is_data },
    { "scan_every_split_point", test_scan_every_split_point },
    { "start_line_words", test_start_line_words },
    { "start_line_missing_version", test_start_line_missing_version },
    { "start_line_bad_version", test_start_line_bad_version },
    { "start_line_double_space", test_start_line_double_space },
    { "start_line_strict_ascii", test_start_line_strict_ascii },
    { "start_line_not_strict", test_start_line_not_strict },
    { "start_line_method", test_start_line_method },
    { "illegal_control_char", test_illegal_control_char },
    { "split_header", test_split_header },
    { "content_length", test_content_length },
    { "keep_alive_rules", test_keep_alive_rules },
    { "b13_connection_options", test_b13_connection_options },
    { "same_text", test_same_text },
};

int unit_register_reader(void)
{
    return UNIT_ADD_SUITE("reader", NULL, reader_tests);
}
