/* fuzz_response.c - libFuzzer target over common/http_response (the one
 * response reader the probe, the pcap analyser and the hostile tests share).
 *
 * Property, not just "no crash": the input read whole and the input read in
 * two pieces (cut where its first byte says) and byte by byte must give the
 * same verdict, head length, status, framing and decoded body (length and
 * first bytes).  Any difference aborts.  Flags (HEAD request, EOF) and the
 * body limit also come from the first byte.
 *
 * Build and run: tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#include "../../common/http_response.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seen {
    long long rc; /* total length, or an HR_ code */
    int status;
    unsigned long long body_len;
    char body[32];
    size_t body_got;
};

/* Read in[0..len) arriving in pieces of `step` bytes (0: whole). */
static struct seen read_in(const char *in, size_t len, size_t step, unsigned flags, int at_eof,
                           unsigned long long max_body)
{
    static struct hr_response r;
    struct hr_body b;
    struct seen s = {.rc = HR_INCOMPLETE};
    size_t have = 0, last = 0, at = 0;
    int in_body = 0;
    while (have < len) {
        have = step && len - have > step ? have + step : len;
        if (!in_body) {
            long long h = hr_parse_head(in, have, last, flags, &r);
            last = have;
            if (h == HR_INCOMPLETE)
                continue;
            if (h < 0 || hr_body_init(&b, &r, max_body) < 0) {
                s.rc = h < 0 ? h : HR_TOO_LARGE;
                return s;
            }
            s.status = r.status;
            in_body = 1;
            at = (size_t)h;
        }
        long long u = hr_body_feed(&b, in + at, have - at, s.body, sizeof s.body, &s.body_got);
        if (u < 0) {
            s.rc = u;
            return s;
        }
        at += (size_t)u;
        if (b.done)
            break;
    }
    if (in_body && !b.done && at_eof && hr_body_eof(&b) < 0)
        s.rc = HR_BAD;
    else if (in_body && b.done) {
        s.rc = (long long)at;
        s.body_len = b.body_len;
    }
    return s;
}

static void same(const struct seen *a, const struct seen *b)
{
    if (a->rc != b->rc || a->status != b->status || a->body_len != b->body_len)
        abort();
    if (a->rc >= 0 && (a->body_got != b->body_got || memcmp(a->body, b->body, a->body_got) != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned ctl = data[0];
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    unsigned flags = ctl & 1 ? HR_REQ_HEAD : 0;
    int at_eof = (ctl >> 1) & 1;
    unsigned long long max_body = ctl & 4 ? 64 : HR_BODY_UNLIMITED;
    size_t cut = len ? (ctl >> 3) % (len + 1) : 0;
    struct seen whole = read_in(in, len, 0, flags, at_eof, max_body);
    struct seen two = read_in(in, len, cut ? cut : 1, flags, at_eof, max_body);
    struct seen bytes = read_in(in, len, 1, flags, at_eof, max_body);
    same(&whole, &two);
    same(&whole, &bytes);
    /* and the one-buffer form agrees with the incremental one */
    struct hr_response r;
    long long n = hr_parse_response(in, len, flags | (at_eof ? HR_AT_EOF : 0), &r);
    if (max_body == HR_BODY_UNLIMITED && whole.rc >= 0 && n != whole.rc)
        abort();
    return 0;
}
