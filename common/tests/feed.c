/* common/tests/feed.c - see feed.h. */
#include "feed.h"

#include <string.h>

#include "../http_response.h"

/* Where the next piece ends: the next cut, else step bytes on, else len. */
static size_t feed_next(size_t have, size_t len, const size_t *cuts, size_t ncuts, size_t *k,
                        size_t step)
{
    if (*k < ncuts)
        return cuts[(*k)++];
    return step && len - have > step ? have + step : len;
}

struct feed_seen feed_response(const char *in, size_t len, const size_t *cuts, size_t ncuts,
                               size_t step, unsigned flags, int at_eof,
                               unsigned long long max_body)
{
    struct feed_seen s;
    struct hr_response r;
    struct hr_body b;
    size_t have = 0, last = 0, body_at = 0, k = 0;
    int in_body = 0;
    memset(&s, 0, sizeof s);
    s.rc = HR_INCOMPLETE;
    do {
        size_t next = feed_next(have, len, cuts, ncuts, &k, step);
        if (next < have)
            continue;
        have = next;
        if (!in_body) {
            long long h = hr_parse_head(in, have, last, flags, &r);
            last = have;
            if (h == HR_INCOMPLETE)
                continue;
            if (h < 0) {
                s.rc = h;
                return s;
            }
            s.status = r.status;
            s.head_len = r.head_len;
            s.conn_close = r.conn_close;
            s.keep_alive_timeout = (int)r.keep_alive_timeout;
            if (hr_body_init(&b, &r, max_body) < 0) {
                s.rc = HR_TOO_LARGE;
                return s;
            }
            in_body = 1;
            body_at = (size_t)h;
        }
        long long u = hr_body_feed(&b, in + body_at, have - body_at, s.body, sizeof s.body,
                                   &s.body_got);
        if (u < 0) {
            s.rc = u;
            return s;
        }
        body_at += (size_t)u;
        if (b.done)
            break;
    } while (have < len || k < ncuts);
    if (in_body && !b.done && at_eof && hr_body_eof(&b) < 0)
        s.rc = HR_BAD;
    else if (in_body && b.done) {
        s.rc = (long long)body_at;
        s.body_len = b.body_len;
    }
    return s;
}
