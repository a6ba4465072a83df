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
#include "../../common/tests/feed.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void same(const struct feed_seen *a, const struct feed_seen *b)
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
    /* Whole, in pieces of `cut` bytes, and byte by byte (feed.h). */
    struct feed_seen whole = feed_response(in, len, NULL, 0, 0, flags, at_eof, max_body);
    struct feed_seen two = feed_response(in, len, NULL, 0, cut ? cut : 1, flags, at_eof, max_body);
    struct feed_seen bytes = feed_response(in, len, NULL, 0, 1, flags, at_eof, max_body);
    same(&whole, &two);
    same(&whole, &bytes);
    /* and the one-buffer form agrees with the incremental one */
    struct hr_response r;
    long long n = hr_parse_response(in, len, flags | (at_eof ? HR_AT_EOF : 0), &r);
    if (max_body == HR_BODY_UNLIMITED && whole.rc >= 0 && n != whole.rc)
        abort();
    return 0;
}
