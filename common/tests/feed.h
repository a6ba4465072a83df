/* common/tests/feed.h - a client reading one response through
 * common/http_response as its bytes arrive in pieces: the head re-parsed
 * over the growing buffer (with last_len), then the rest through the body
 * decoder.  The CUnit tests (test_common.c) and the fuzz target
 * (tests/fuzz/fuzz_response.c) both feed one input cut in several ways and
 * require the same result, so they read it with this one loop. */
#ifndef KIT_COMMON_TESTS_FEED_H
#define KIT_COMMON_TESTS_FEED_H

#include <stddef.h>

/* What the client saw. */
struct feed_seen {
    long long rc;     /* head/body verdict: >= 0 total length, or an HR_ code */
    int status;
    size_t head_len;
    unsigned long long body_len;
    char body[256];   /* the first decoded body bytes */
    size_t body_got;
    int conn_close, keep_alive_timeout;
};

/* Feed in[0..len): pieces end at the offsets cuts[0..ncuts) (ascending; a
 * cut below what has arrived is skipped), then every step bytes (0: the
 * rest at once) up to len.  flags as hr_parse_head's; at_eof: the peer
 * closes after the last byte; max_body as hr_body_init's. */
struct feed_seen feed_response(const char *in, size_t len, const size_t *cuts, size_t ncuts,
                               size_t step, unsigned flags, int at_eof,
                               unsigned long long max_body);

#endif
