/* common/http_response.h - the kit's one HTTP/1.x response reader.
 * Prefix hr_.  Pure functions over caller buffers, picohttpparser style:
 * nothing allocates, nothing copies unless asked, nothing does I/O.
 *
 * Two layers:
 *
 * 1. The head (status line + header fields), re-parsed from the start of the
 *    caller's buffer on each call until it is complete:
 *
 *        long long n = hr_parse_head(buf, len, last_len, flags, &r);
 *        n >= 0         head complete: n = r.head_len bytes; r is filled in
 *        HR_INCOMPLETE  (-2) need more bytes; call again with the longer buffer
 *                       and last_len = the len of this call (a scan hint)
 *        HR_BAD         (-1) not an HTTP/1.x response; r.error says why
 *
 *    Garbage is rejected as soon as the bytes already there contradict
 *    "HTTP/1.d SSS", so a peer that sends garbage and goes silent is told
 *    apart from a slow one.  A head over HR_MAX_HEAD bytes is HR_BAD.
 *    Framing (RFC 9112 6.3): HR_REQ_HEAD, 1xx, 204 and 304 have no body; a
 *    Transfer-Encoding whose final coding is chunked is chunked, any other
 *    runs to close; else Content-Length (all copies must agree, at most
 *    HR_MAX_CONTENT_LENGTH, else HR_BAD); else the body runs to close.
 *    Connection / Keep-Alive are summarised in r.conn_* and r.keep_alive_timeout.
 *
 * 2. The body, decoded incrementally by a small state machine that can count
 *    a body of any size without storing it:
 *
 *        struct hr_body b;
 *        if (hr_body_init(&b, &r, max_body) == HR_TOO_LARGE) ...  // b.error
 *        while (!b.done) {
 *            long long used = hr_body_feed(&b, p, n, out, cap, &outlen);
 *            if (used < 0) ...          // HR_BAD (b.error) or HR_TOO_LARGE
 *            p += used; n -= used;      // bytes after the body: next response
 *            if (n == 0) read more (or hr_body_eof(&b) at the peer's FIN)
 *        }
 *        b.body_len = decoded body bytes; out holds the first cap of them
 *        (pass out = NULL, cap = 0 to count only).
 *
 *    Feeding the body whole, in pieces or byte by byte gives the same result.
 *    max_body bounds the decoded length (a Content-Length above it is refused
 *    at init, chunked and close-delimited bodies when they pass it): the
 *    caller's verdict for an absurd length, instead of waiting for or
 *    storing gigabytes.  HR_BODY_UNLIMITED accepts any length.
 *
 * For a response that is entirely in one buffer (analysers, tests),
 * hr_parse_response does both at once and returns its total length. */
#ifndef KIT_COMMON_HTTP_RESPONSE_H
#define KIT_COMMON_HTTP_RESPONSE_H

#include <stddef.h>

#define HR_MAX_HEADERS 100
#define HR_MAX_HEAD (64 * 1024)               /* a longer head is not HTTP to us */
#define HR_MAX_CONTENT_LENGTH (1ull << 62)    /* a larger one is garbage, not a size */
#define HR_BODY_UNLIMITED (~0ull)

/* Return codes (negative; lengths are >= 0). */
#define HR_BAD (-1)
#define HR_INCOMPLETE (-2)
#define HR_TOO_LARGE (-3)

/* flags */
#define HR_REQ_HEAD 1u /* the request was HEAD: no body whatever the headers say */
#define HR_AT_EOF 2u   /* hr_parse_response: the peer closed after these bytes */

struct hr_header {
    const char *name;
    size_t name_len;
    const char *value; /* leading/trailing blanks trimmed */
    size_t value_len;
};

enum hr_framing { HR_BODY_NONE, HR_BODY_LENGTH, HR_BODY_CHUNKED, HR_BODY_CLOSE };

struct hr_response {
    int minor_version; /* x in HTTP/1.x */
    int status;
    const char *reason;
    size_t reason_len;
    struct hr_header headers[HR_MAX_HEADERS];
    size_t num_headers;
    size_t head_len; /* bytes up to and including the empty line */
    enum hr_framing framing;
    unsigned long long content_length; /* when framing == HR_BODY_LENGTH */
    int has_connection;                /* a Connection header was present */
    int conn_close;                    /* ... with the token "close" */
    int conn_keep_alive;               /* ... with the token "keep-alive" */
    long keep_alive_timeout;           /* Keep-Alive: timeout=N (s), else -1 */
    unsigned long long body_len;       /* hr_parse_response only: decoded length */
    const char *error;                 /* why HR_BAD / HR_TOO_LARGE (static) */
};

long long hr_parse_head(const char *buf, size_t len, size_t last_len, unsigned flags,
                        struct hr_response *r);

/* 1 if the server will close after this response: "Connection: close", or
 * HTTP/1.0 without "keep-alive" (what a client pool must assume). */
int hr_announces_close(const struct hr_response *r);

/* First header with this name (case-insensitive), or NULL. */
const struct hr_header *hr_find_header(const struct hr_response *r, const char *name);

/* 1 if a comma-separated value contains token (case-insensitive). */
int hr_has_token(const char *value, size_t len, const char *token);

/* Keep-Alive "timeout=N" in seconds, or -1 if absent/unparsable. */
long hr_keepalive_timeout(const char *value, size_t len);

struct hr_body {
    enum hr_framing framing;
    int done;                     /* the body is complete */
    unsigned long long body_len;  /* decoded bytes so far */
    unsigned long long max_body;
    unsigned long long remaining; /* LENGTH: bytes left; CHUNKED: left in chunk */
    int state;                    /* chunked decoder state (private) */
    int digits;                   /* hex digits of the current chunk size */
    size_t line_len;              /* extension / trailer line length so far */
    const char *error;            /* why HR_BAD / HR_TOO_LARGE (static) */
};

/* 0, or HR_TOO_LARGE when a Content-Length exceeds max_body. */
int hr_body_init(struct hr_body *b, const struct hr_response *r, unsigned long long max_body);

/* Decode body bytes from buf; returns the bytes consumed (it stops at the
 * end of the body, setting b->done), HR_BAD or HR_TOO_LARGE.  Decoded bytes
 * are appended to out[*outlen..cap) while there is room (out may be NULL). */
long long hr_body_feed(struct hr_body *b, const char *buf, size_t len, char *out, size_t cap,
                       size_t *outlen);

/* The peer closed: 0 if that ends the body (close-delimited, or already
 * done), HR_BAD if the body was cut short. */
int hr_body_eof(struct hr_body *b);

/* Head and body from one buffer: the total length of the response at the
 * start of buf (r->body_len = decoded body length), HR_INCOMPLETE, HR_BAD.
 * A close-delimited body completes only with HR_AT_EOF. */
long long hr_parse_response(const char *buf, size_t len, unsigned flags, struct hr_response *r);

/* Copy up to cap decoded body bytes of a response hr_parse_response accepted
 * over the same buf; returns the bytes copied. */
size_t hr_copy_body(const char *buf, size_t len, const struct hr_response *r, char *dst, size_t cap);

#endif
