/* probe_http: a pure HTTP/1.x response parser in the style of picohttpparser.
 * It never allocates and never copies: it reads a caller-owned buffer and
 * points into it.  The caller re-runs it over the whole buffer after each
 * read (responses are small, and re-parsing keeps it stateless).  Prefix: ph_.
 *
 * Return value of ph_parse_response: the length of one complete response
 * (head + body, framing included) at the start of buf; -1 if the bytes are
 * not HTTP; -2 if more bytes are needed. */
#ifndef PROBE_HTTP_H
#define PROBE_HTTP_H

#include <stddef.h>

#define PH_MAX_HEADERS 100
#define PH_MAX_HEAD (64 * 1024) /* a head larger than this is garbage to us */

#define PH_REQ_HEAD 1u /* the request was HEAD: no body whatever the headers say */
#define PH_AT_EOF 2u   /* the peer closed: a close-delimited body ends here */

struct ph_header {
    const char *name;
    size_t name_len;
    const char *value; /* leading/trailing whitespace trimmed */
    size_t value_len;
};

enum ph_framing { PH_BODY_NONE, PH_BODY_LENGTH, PH_BODY_CHUNKED, PH_BODY_CLOSE };

struct ph_response {
    int minor_version; /* x in HTTP/1.x */
    int status;
    const char *reason;
    size_t reason_len;
    struct ph_header headers[PH_MAX_HEADERS];
    size_t num_headers;
    size_t head_len; /* bytes up to and including the empty line */
    enum ph_framing framing;
    unsigned long long body_len; /* decoded body length */
};

long long ph_parse_response(const char *buf, size_t len, unsigned flags, struct ph_response *r);

/* First header with this name (case-insensitive), or NULL. */
const struct ph_header *ph_find_header(const struct ph_response *r, const char *name);

/* 1 if a comma-separated header value contains token (case-insensitive),
 * e.g. ph_has_token(v, n, "close") for Connection. */
int ph_has_token(const char *value, size_t len, const char *token);

/* Keep-Alive "timeout=N" in seconds, or -1 if absent/unparsable. */
long ph_keepalive_timeout(const char *value, size_t len);

/* Copy up to cap bytes of the decoded body of a response that
 * ph_parse_response accepted over the same buf; returns bytes copied. */
size_t ph_copy_body(const char *buf, const struct ph_response *r, char *dst, size_t cap);

#endif
