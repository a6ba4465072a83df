/* probe_http: response parser; see probe_http.h for the contract. */
#include "probe_http.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

static int ph_lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static int ph_is_tchar(unsigned char c)
{
    /* RFC 9110 token characters; anything else in a header name is garbage. */
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Find the end of the line starting at p: returns the index just past the LF
 * and sets *eol to the index of the line end (CR or LF); -2 if no LF yet.
 * A bare LF is accepted (as picohttpparser does); a CR not followed by LF
 * is an error. */
static long long ph_line(const char *buf, size_t len, size_t p, size_t *eol)
{
    for (size_t i = p; i < len; i++) {
        if (buf[i] == '\n') {
            *eol = (i > p && buf[i - 1] == '\r') ? i - 1 : i;
            return (long long)(i + 1);
        }
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
            return -1;
        if (i - p > PH_MAX_HEAD)
            return -1;
    }
    return -2;
}

/* Status line "HTTP/1.x SSS[ reason]".  Checked byte by byte against what is
 * already there so garbage is rejected at once instead of waiting for a line
 * end that may never come (a silent garbage peer would otherwise look like a
 * timeout). */
static long long ph_status_line(const char *buf, size_t len, struct ph_response *r)
{
    static const char proto[] = "HTTP/1.";
    size_t n = len < 7 ? len : 7;
    if (memcmp(buf, proto, n) != 0)
        return -1;
    if (len > 7 && !(buf[7] >= '0' && buf[7] <= '9'))
        return -1;
    if (len > 8 && buf[8] != ' ')
        return -1;
    for (size_t i = 9; i < 12 && i < len; i++)
        if (!(buf[i] >= '0' && buf[i] <= '9'))
            return -1;
    if (len > 12 && buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n')
        return -1;
    size_t eol;
    long long next = ph_line(buf, len, 0, &eol);
    if (next < 0)
        return next;
    if (eol < 12)
        return -1;
    r->minor_version = buf[7] - '0';
    r->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    r->reason = eol > 12 ? buf + 13 : buf + eol;
    r->reason_len = eol > 12 ? eol - 13 : 0;
    return next;
}

static int ph_ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    return alen == blen && strncasecmp(a, b, blen) == 0;
}

const struct ph_header *ph_find_header(const struct ph_response *r, const char *name)
{
    for (size_t i = 0; i < r->num_headers; i++)
        if (ph_ieq(r->headers[i].name, r->headers[i].name_len, name))
            return &r->headers[i];
    return NULL;
}

int ph_has_token(const char *v, size_t len, const char *token)
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
        if (e > s && ph_ieq(v + s, e - s, token))
            return 1;
    }
    return 0;
}

long ph_keepalive_timeout(const char *v, size_t len)
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

/* Strict decimal Content-Length; -1 if invalid. */
static long long ph_content_length(const char *v, size_t len)
{
    if (len == 0)
        return -1;
    unsigned long long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9' || n > (unsigned long long)LLONG_MAX / 10 - 10)
            return -1;
        n = n * 10 + (unsigned)(v[i] - '0');
    }
    return (long long)n;
}

/* Walk a chunked body starting at p; returns the index past its end (after
 * the trailer section), -2 if incomplete, -1 if malformed. */
static long long ph_chunked(const char *buf, size_t len, size_t p, unsigned long long *body_len)
{
    *body_len = 0;
    for (;;) {
        size_t eol;
        long long next = ph_line(buf, len, p, &eol);
        if (next < 0)
            return next;
        unsigned long long size = 0;
        size_t i = p, digits = 0;
        for (; i < eol; i++, digits++) {
            char c = buf[i];
            int d = (c >= '0' && c <= '9') ? c - '0' : (ph_lower(c) >= 'a' && ph_lower(c) <= 'f') ? ph_lower(c) - 'a' + 10 : -1;
            if (d < 0)
                break;
            if (size > (1ull << 40))
                return -1; /* absurd chunk: garbage, and avoids overflow */
            size = size * 16 + (unsigned)d;
        }
        if (digits == 0 || (i < eol && buf[i] != ';' && buf[i] != ' ' && buf[i] != '\t'))
            return -1; /* only chunk extensions may follow the size */
        p = (size_t)next;
        if (size == 0) {
            /* Trailer fields up to an empty line. */
            for (;;) {
                next = ph_line(buf, len, p, &eol);
                if (next < 0)
                    return next;
                if (eol == p)
                    return next;
                p = (size_t)next;
            }
        }
        if (len - p < size + 1)
            return -2;
        p += size;
        *body_len += size;
        if (buf[p] == '\r') {
            if (len - p < 2)
                return -2;
            if (buf[p + 1] != '\n')
                return -1;
            p += 2;
        } else if (buf[p] == '\n') {
            p += 1;
        } else {
            return -1;
        }
    }
}

long long ph_parse_response(const char *buf, size_t len, unsigned flags, struct ph_response *r)
{
    memset(r, 0, sizeof *r);
    long long p = ph_status_line(buf, len, r);
    if (p < 0)
        return p;
    /* Header fields until the empty line. */
    for (;;) {
        size_t eol;
        long long next = ph_line(buf, len, (size_t)p, &eol);
        if (next < 0)
            return (next == -2 && len > PH_MAX_HEAD) ? -1 : next;
        if (eol == (size_t)p) {
            p = next;
            break;
        }
        size_t s = (size_t)p, c = s;
        while (c < eol && ph_is_tchar((unsigned char)buf[c]))
            c++;
        if (c == s || c >= eol || buf[c] != ':')
            return -1; /* also rejects obsolete line folding */
        if (r->num_headers == PH_MAX_HEADERS)
            return -1;
        size_t vs = c + 1, ve = eol;
        while (vs < ve && (buf[vs] == ' ' || buf[vs] == '\t'))
            vs++;
        while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
            ve--;
        struct ph_header *h = &r->headers[r->num_headers++];
        h->name = buf + s;
        h->name_len = c - s;
        h->value = buf + vs;
        h->value_len = ve - vs;
        p = next;
    }
    r->head_len = (size_t)p;

    /* Message framing, in the order of RFC 9112 section 6.3. */
    if ((flags & PH_REQ_HEAD) || (r->status >= 100 && r->status < 200) || r->status == 204 ||
        r->status == 304) {
        r->framing = PH_BODY_NONE;
        return p;
    }
    const struct ph_header *te = ph_find_header(r, "Transfer-Encoding");
    if (te) {
        /* chunked must be the final coding; otherwise the body runs to close. */
        const char *v = te->value;
        size_t n = te->value_len, k = n;
        while (k > 0 && v[k - 1] != ',')
            k--;
        while (k < n && (v[k] == ' ' || v[k] == '\t'))
            k++;
        if (ph_ieq(v + k, n - k, "chunked")) {
            r->framing = PH_BODY_CHUNKED;
            return ph_chunked(buf, len, (size_t)p, &r->body_len);
        }
        r->framing = PH_BODY_CLOSE;
    } else {
        long long cl = -1;
        for (size_t i = 0; i < r->num_headers; i++) {
            const struct ph_header *h = &r->headers[i];
            if (!ph_ieq(h->name, h->name_len, "Content-Length"))
                continue;
            long long v = ph_content_length(h->value, h->value_len);
            if (v < 0 || (cl >= 0 && v != cl))
                return -1; /* differing lengths: framing cannot be trusted */
            cl = v;
        }
        if (cl >= 0) {
            r->framing = PH_BODY_LENGTH;
            r->body_len = (unsigned long long)cl;
            if (len - (size_t)p < (unsigned long long)cl)
                return -2;
            return p + cl;
        }
        r->framing = PH_BODY_CLOSE;
    }
    if (!(flags & PH_AT_EOF))
        return -2;
    r->body_len = len - (size_t)p;
    return (long long)len;
}

size_t ph_copy_body(const char *buf, const struct ph_response *r, char *dst, size_t cap)
{
    if (r->framing != PH_BODY_CHUNKED) {
        size_t n = r->body_len < cap ? (size_t)r->body_len : cap;
        memcpy(dst, buf + r->head_len, n);
        return n;
    }
    /* The message was validated by ph_parse_response, so walk it trustingly. */
    size_t p = r->head_len, out = 0;
    for (;;) {
        unsigned long long size = 0;
        for (; buf[p] != ';' && buf[p] != '\r' && buf[p] != '\n' && buf[p] != ' ' && buf[p] != '\t'; p++) {
            int c = ph_lower(buf[p]);
            size = size * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        while (buf[p] != '\n')
            p++;
        p++;
        if (size == 0)
            return out;
        size_t n = size < cap - out ? (size_t)size : cap - out;
        memcpy(dst + out, buf + p, n);
        out += n;
        p += size;
        p += buf[p] == '\r' ? 2 : 1;
        if (out == cap)
            return out;
    }
}
