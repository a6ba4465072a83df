/* common/http_response.c - HTTP/1.x response reader; contract in http_response.h. */
#include "http_response.h"

#include <string.h>
#include <strings.h>

static int hr_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static int hr_hex(int c)
{
    c = hr_lower(c);
    if (c >= '0' && c <= '9')
        return c - '0';
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

static int hr_is_tchar(unsigned char c)
{
    /* RFC 9110 token characters; anything else in a header name is garbage. */
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int hr_ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    return alen == blen && strncasecmp(a, b, blen) == 0;
}

static long long hr_fail(struct hr_response *r, const char *why)
{
    r->error = why;
    return HR_BAD;
}

/* The line starting at p: returns the index just past its LF and sets *eol
 * to the index of the line end (CR or LF).  Only called on a complete head,
 * so an LF is always there; a CR not followed by LF is an error. */
static long long hr_line(const char *buf, size_t len, size_t p, size_t *eol)
{
    for (size_t i = p; i < len; i++) {
        if (buf[i] == '\n') {
            *eol = (i > p && buf[i - 1] == '\r') ? i - 1 : i;
            return (long long)(i + 1);
        }
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
            return HR_BAD;
    }
    return HR_INCOMPLETE;
}

/* Whatever is there of "HTTP/1.d SSS" must match it: early garbage verdict. */
static int hr_prefix_ok(const char *buf, size_t len)
{
    static const char proto[] = "HTTP/1.";
    size_t n = len < 7 ? len : 7;
    if (memcmp(buf, proto, n) != 0)
        return 0;
    if (len > 7 && !(buf[7] >= '0' && buf[7] <= '9'))
        return 0;
    if (len > 8 && buf[8] != ' ')
        return 0;
    for (size_t i = 9; i < 12 && i < len; i++)
        if (!(buf[i] >= '0' && buf[i] <= '9'))
            return 0;
    return !(len > 12 && buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n');
}

/* Index just past the empty line that ends the head, or 0 if not there yet.
 * Scans from just before last_len so a head fed byte by byte costs O(n). */
static size_t hr_head_end(const char *buf, size_t len, size_t last_len)
{
    size_t i = last_len > 3 ? last_len - 3 : 0;
    for (; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        if (i + 1 < len && buf[i + 1] == '\n')
            return i + 2;
        if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

static long long hr_status_line(const char *buf, size_t len, struct hr_response *r)
{
    size_t eol;
    long long next = hr_line(buf, len, 0, &eol);
    if (next < 0 || eol < 12)
        return hr_fail(r, "malformed status line");
    r->minor_version = buf[7] - '0';
    r->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    r->reason = eol > 12 ? buf + 13 : buf + eol;
    r->reason_len = eol > 12 ? eol - 13 : 0;
    return next;
}

/* One "name: value" line [p, eol) into r->headers. */
static int hr_header_line(const char *buf, size_t p, size_t eol, struct hr_response *r)
{
    size_t c = p;
    while (c < eol && hr_is_tchar((unsigned char)buf[c]))
        c++;
    if (c == p || c >= eol || buf[c] != ':')
        return (int)hr_fail(r, "malformed header line"); /* also obsolete folding */
    if (r->num_headers == HR_MAX_HEADERS)
        return (int)hr_fail(r, "more than 100 header fields");
    size_t vs = c + 1, ve = eol;
    while (vs < ve && (buf[vs] == ' ' || buf[vs] == '\t'))
        vs++;
    while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
        ve--;
    struct hr_header *h = &r->headers[r->num_headers++];
    *h = (struct hr_header){buf + p, c - p, buf + vs, ve - vs};
    return 0;
}

/* Strict decimal; 0 and *out set, or -1 if not digits or above the cap. */
static int hr_decimal(const char *v, size_t len, unsigned long long *out)
{
    unsigned long long n = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9' || n > HR_MAX_CONTENT_LENGTH / 10)
            return -1;
        n = n * 10 + (unsigned)(v[i] - '0');
    }
    if (n > HR_MAX_CONTENT_LENGTH)
        return -1;
    *out = n;
    return 0;
}

/* Connection, Keep-Alive, Content-Length and Transfer-Encoding -> r. */
static long long hr_summarise(unsigned flags, struct hr_response *r)
{
    int have_cl = 0, te_chunked = -1;
    r->keep_alive_timeout = -1;
    for (size_t i = 0; i < r->num_headers; i++) {
        const struct hr_header *h = &r->headers[i];
        if (hr_ieq(h->name, h->name_len, "Connection")) {
            r->has_connection = 1;
            r->conn_close |= hr_has_token(h->value, h->value_len, "close");
            r->conn_keep_alive |= hr_has_token(h->value, h->value_len, "keep-alive");
        } else if (hr_ieq(h->name, h->name_len, "Keep-Alive") && r->keep_alive_timeout < 0) {
            r->keep_alive_timeout = hr_keepalive_timeout(h->value, h->value_len);
        } else if (hr_ieq(h->name, h->name_len, "Content-Length")) {
            unsigned long long v;
            if (hr_decimal(h->value, h->value_len, &v) < 0)
                return hr_fail(r, "Content-Length is not a decimal number below 2^62");
            if (have_cl && v != r->content_length)
                return hr_fail(r, "conflicting Content-Length values");
            r->content_length = v;
            have_cl = 1;
        } else if (hr_ieq(h->name, h->name_len, "Transfer-Encoding")) {
            /* chunked must be the final coding; otherwise the body runs to close. */
            size_t k = h->value_len;
            while (k > 0 && h->value[k - 1] != ',')
                k--;
            while (k < h->value_len && (h->value[k] == ' ' || h->value[k] == '\t'))
                k++;
            te_chunked = hr_ieq(h->value + k, h->value_len - k, "chunked");
        }
    }
    if ((flags & HR_REQ_HEAD) || (r->status >= 100 && r->status < 200) || r->status == 204 ||
        r->status == 304)
        r->framing = HR_BODY_NONE;
    else if (te_chunked >= 0)
        r->framing = te_chunked ? HR_BODY_CHUNKED : HR_BODY_CLOSE;
    else
        r->framing = have_cl ? HR_BODY_LENGTH : HR_BODY_CLOSE;
    return 0;
}

long long hr_parse_head(const char *buf, size_t len, size_t last_len, unsigned flags,
                        struct hr_response *r)
{
    memset(r, 0, sizeof *r);
    r->keep_alive_timeout = -1;
    if (!hr_prefix_ok(buf, len))
        return hr_fail(r, "not an HTTP/1.x status line");
    size_t end = hr_head_end(buf, len, last_len > len ? len : last_len);
    if (end == 0 || end > HR_MAX_HEAD)
        return (len > HR_MAX_HEAD || end > HR_MAX_HEAD) ? hr_fail(r, "head larger than 64 KiB")
                                                        : HR_INCOMPLETE;
    long long p = hr_status_line(buf, end, r);
    while (p >= 0) {
        size_t eol;
        long long next = hr_line(buf, end, (size_t)p, &eol);
        if (next < 0)
            return hr_fail(r, "CR without LF in the head");
        if (eol == (size_t)p) {
            r->head_len = (size_t)next;
            return hr_summarise(flags, r) < 0 ? HR_BAD : next;
        }
        if (hr_header_line(buf, (size_t)p, eol, r) < 0)
            return HR_BAD;
        p = next;
    }
    return p;
}

int hr_announces_close(const struct hr_response *r)
{
    return r->conn_close || (r->minor_version == 0 && !r->conn_keep_alive);
}

const struct hr_header *hr_find_header(const struct hr_response *r, const char *name)
{
    for (size_t i = 0; i < r->num_headers; i++)
        if (hr_ieq(r->headers[i].name, r->headers[i].name_len, name))
            return &r->headers[i];
    return NULL;
}

int hr_has_token(const char *v, size_t len, const char *token)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < len && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && hr_ieq(v + s, e - s, token))
            return 1;
    }
    return 0;
}

long hr_keepalive_timeout(const char *v, size_t len)
{
    for (size_t i = 0; i + 8 <= len; i++) {
        if (strncasecmp(v + i, "timeout=", 8) != 0 || (i > 0 && v[i - 1] != ' ' && v[i - 1] != ','))
            continue;
        size_t j = i + 8;
        long t = 0;
        if (j >= len || v[j] < '0' || v[j] > '9')
            return -1;
        while (j < len && v[j] >= '0' && v[j] <= '9' && t < 100000000)
            t = t * 10 + (v[j++] - '0');
        return t;
    }
    return -1;
}

/* ---- body ---------------------------------------------------------------- */

/* Chunked decoder states: one byte of framing at a time, data in runs. */
enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER_START,
       CH_TRAILER, CH_TRAILER_LF, CH_END_LF };

static int hr_body_fail(struct hr_body *b, int code, const char *why)
{
    b->error = why;
    return code;
}

int hr_body_init(struct hr_body *b, const struct hr_response *r, unsigned long long max_body)
{
    memset(b, 0, sizeof *b);
    b->framing = r->framing;
    b->max_body = max_body;
    b->state = CH_SIZE;
    if (r->framing == HR_BODY_NONE)
        b->done = 1;
    if (r->framing == HR_BODY_LENGTH) {
        if (r->content_length > max_body)
            return hr_body_fail(b, HR_TOO_LARGE, "Content-Length exceeds the body limit");
        b->remaining = r->content_length;
        b->done = r->content_length == 0;
    }
    return 0;
}

/* Data bytes: count them, keep what fits in out. */
static size_t hr_take(struct hr_body *b, const char *buf, size_t n, char *out, size_t cap,
                      size_t *outlen)
{
    if (out && *outlen < cap) {
        size_t k = cap - *outlen < n ? cap - *outlen : n;
        memcpy(out + *outlen, buf, k);
        *outlen += k;
    }
    b->body_len += n;
    return n;
}

/* End of a chunk-size line: a last chunk, or data to expect. */
static int hr_chunk_start(struct hr_body *b)
{
    if (b->remaining == 0) {
        b->state = CH_TRAILER_START;
        return 0;
    }
    if (b->remaining > b->max_body - b->body_len)
        return hr_body_fail(b, HR_TOO_LARGE, "chunked body exceeds the body limit");
    b->state = CH_DATA;
    return 0;
}

/* A byte of a chunk-size line: hex digits, then ";ext" or blanks, CRLF. */
static int hr_size_byte(struct hr_body *b, char c)
{
    int d;
    if (b->state == CH_SIZE_LF)
        return c == '\n' ? hr_chunk_start(b) : hr_body_fail(b, HR_BAD, "CR without LF in a chunk");
    if (b->state == CH_EXT) {
        if (c == '\r')
            b->state = CH_SIZE_LF;
        return c == '\n' ? hr_chunk_start(b) : 0;
    }
    if ((d = hr_hex(c)) >= 0) {
        if (++b->digits > 15)
            return hr_body_fail(b, HR_BAD, "chunk size above 2^60");
        b->remaining = b->remaining * 16 + (unsigned)d;
        return 0;
    }
    if (b->digits == 0)
        return hr_body_fail(b, HR_BAD, "chunk size is not hexadecimal");
    if (c == ';' || c == ' ' || c == '\t')
        b->state = CH_EXT;
    else if (c == '\r')
        b->state = CH_SIZE_LF;
    else if (c == '\n')
        return hr_chunk_start(b);
    else
        return hr_body_fail(b, HR_BAD, "junk after the chunk size");
    return 0;
}

/* A byte after the last chunk: trailer lines up to an empty line. */
static int hr_trailer_byte(struct hr_body *b, char c)
{
    switch (b->state) {
    case CH_TRAILER_START:
        b->line_len = 1;
        b->state = c == '\r' ? CH_END_LF : c == '\n' ? CH_TRAILER_START : CH_TRAILER;
        b->done = c == '\n';
        return 0;
    case CH_TRAILER:
        if (c == '\r')
            b->state = CH_TRAILER_LF;
        else if (c == '\n')
            b->state = CH_TRAILER_START;
        return 0;
    default: /* CH_TRAILER_LF, CH_END_LF */
        if (c != '\n')
            return hr_body_fail(b, HR_BAD, "CR without LF in the trailer");
        b->done = b->state == CH_END_LF;
        b->state = CH_TRAILER_START;
        return 0;
    }
}

/* One framing byte of a chunked body; 0 or an HR_ error. */
static int hr_chunk_byte(struct hr_body *b, char c)
{
    b->line_len++;
    if ((b->state == CH_EXT || b->state == CH_TRAILER) && b->line_len > HR_MAX_HEAD)
        return hr_body_fail(b, HR_BAD, "chunk extension or trailer line too long");
    if (b->state == CH_SIZE || b->state == CH_EXT || b->state == CH_SIZE_LF)
        return hr_size_byte(b, c);
    if (b->state == CH_DATA_CR && c == '\r') {
        b->state = CH_DATA_LF;
        return 0;
    }
    if (b->state == CH_DATA_CR || b->state == CH_DATA_LF) { /* a bare LF ends the chunk too */
        if (c != '\n')
            return hr_body_fail(b, HR_BAD, "chunk data not followed by CRLF");
        b->state = CH_SIZE;
        b->digits = 0;
        b->line_len = 0;
        return 0;
    }
    return hr_trailer_byte(b, c);
}

static long long hr_chunked_feed(struct hr_body *b, const char *buf, size_t len, char *out,
                                 size_t cap, size_t *outlen)
{
    size_t i = 0;
    while (i < len && !b->done) {
        if (b->state == CH_DATA) {
            size_t n = b->remaining < len - i ? (size_t)b->remaining : len - i;
            i += hr_take(b, buf + i, n, out, cap, outlen);
            b->remaining -= n;
            if (b->remaining == 0)
                b->state = CH_DATA_CR;
            continue;
        }
        int rc = hr_chunk_byte(b, buf[i++]);
        if (rc < 0)
            return rc;
    }
    return (long long)i;
}

long long hr_body_feed(struct hr_body *b, const char *buf, size_t len, char *out, size_t cap,
                       size_t *outlen)
{
    size_t dummy = 0, n;
    if (!outlen)
        outlen = &dummy;
    if (b->error)
        return HR_BAD; /* a failed decoder stays failed */
    if (b->done)
        return 0;
    switch (b->framing) {
    case HR_BODY_LENGTH:
        n = b->remaining < len ? (size_t)b->remaining : len;
        hr_take(b, buf, n, out, cap, outlen);
        b->remaining -= n;
        b->done = b->remaining == 0;
        return (long long)n;
    case HR_BODY_CHUNKED:
        return hr_chunked_feed(b, buf, len, out, cap, outlen);
    case HR_BODY_CLOSE:
        if (len > b->max_body - b->body_len)
            return hr_body_fail(b, HR_TOO_LARGE, "close-delimited body exceeds the body limit");
        return (long long)hr_take(b, buf, len, out, cap, outlen);
    case HR_BODY_NONE:
        break;
    }
    return 0;
}

int hr_body_eof(struct hr_body *b)
{
    if (b->done)
        return 0;
    if (b->framing == HR_BODY_CLOSE && !b->error) {
        b->done = 1;
        return 0;
    }
    if (!b->error)
        b->error = "body truncated by the peer's close";
    return HR_BAD;
}

long long hr_parse_response(const char *buf, size_t len, unsigned flags, struct hr_response *r)
{
    long long head = hr_parse_head(buf, len, 0, flags, r);
    if (head < 0)
        return head;
    struct hr_body b;
    hr_body_init(&b, r, HR_BODY_UNLIMITED);
    long long used = hr_body_feed(&b, buf + head, len - (size_t)head, NULL, 0, NULL);
    if (used < 0)
        return hr_fail(r, b.error);
    if (!b.done && (flags & HR_AT_EOF) && hr_body_eof(&b) < 0)
        return hr_fail(r, b.error);
    if (!b.done)
        return HR_INCOMPLETE;
    r->body_len = b.body_len;
    return head + used;
}

size_t hr_copy_body(const char *buf, size_t len, const struct hr_response *r, char *dst, size_t cap)
{
    struct hr_body b;
    size_t got = 0;
    if (r->head_len > len)
        return 0;
    hr_body_init(&b, r, HR_BODY_UNLIMITED);
    hr_body_feed(&b, buf + r->head_len, len - r->head_len, dst, cap, &got);
    return got;
}
