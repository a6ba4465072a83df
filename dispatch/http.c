/* http.c - see http.h. */
#include "http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *http_reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default:  return "Unknown";
    }
}

/* Offset of the first CRLFCRLF's end in buf[0..len), or 0 when absent. */
static size_t http_head_end(const char *buf, size_t len)
{
    size_t i;

    for (i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
            buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* Copy [p, p+n) into dst (size cap) with a terminator; -1 when too long. */
static int http_copy(char *dst, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        return -1;
    memcpy(dst, p, n);
    dst[n] = '\0';
    return 0;
}

/* "METHOD SP target SP HTTP/1.x" in line[0..n).  0 or -status. */
static int http_parse_start_line(const char *line, size_t n,
                                 struct http_request *r)
{
    const char *sp1 = memchr(line, ' ', n), *sp2, *target, *q;
    size_t tlen;

    if (!sp1 || sp1 == line)
        return -400;
    sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line));
    if (!sp2 || sp2 == sp1 + 1)
        return -400;
    if (http_copy(r->method, sizeof r->method, line, (size_t)(sp1 - line)))
        return -400;
    if ((size_t)(line + n - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) ||
        !isdigit((unsigned char)sp2[8]))
        return -400;
    r->minor = sp2[8] - '0';
    target = sp1 + 1;
    tlen = (size_t)(sp2 - target);
    if (target[0] != '/')
        return -400;
    q = memchr(target, '?', tlen);
    if (http_copy(r->path, sizeof r->path, target,
                  q ? (size_t)(q - target) : tlen))
        return -414;
    r->query[0] = '\0';
    if (q && http_copy(r->query, sizeof r->query, q + 1,
                       tlen - (size_t)(q + 1 - target)))
        return -414;
    return 0;
}

/* Does the comma-separated header value v[0..n) contain token tok? */
static int http_has_token(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok), i = 0;

    while (i < n) {
        size_t s, e;

        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        s = i;
        while (i < n && v[i] != ',')
            i++;
        e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == tl && strncasecmp(v + s, tok, tl) == 0)
            return 1;
    }
    return 0;
}

/* Content-Length value: digits only, at most HTTP_MAX_BODY. */
static long http_content_length(const char *v, size_t n)
{
    unsigned long long x = 0;
    size_t i;

    if (n == 0)
        return -400;
    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -400;
        x = x * 10 + (unsigned)(v[i] - '0');
        if (x > HTTP_MAX_BODY)
            return -413;
    }
    return (long)x;
}

/* One "Name: value" line.  0 or -status. */
static int http_parse_header(const char *line, size_t n, struct http_request *r,
                             int *conn_close, int *conn_keep, long *clen)
{
    const char *colon = memchr(line, ':', n), *v;
    size_t nl, vl;

    if (!colon || colon == line)
        return -400;
    nl = (size_t)(colon - line);
    v = colon + 1;
    vl = n - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (nl == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
        long x = http_content_length(v, vl);

        if (x < 0)
            return (int)x;
        if (*clen >= 0 && *clen != x)
            return -400;   /* two different lengths: refuse, never guess */
        *clen = x;
    } else if (nl == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
        return -501;
    } else if (nl == 10 && strncasecmp(line, "Connection", 10) == 0) {
        *conn_close |= http_has_token(v, vl, "close");
        *conn_keep |= http_has_token(v, vl, "keep-alive");
    }
    (void)r;
    return 0;
}

long http_parse(const char *buf, size_t len, struct http_request *r)
{
    size_t head = http_head_end(buf, len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD);
    const char *p, *end, *eol;
    int conn_close = 0, conn_keep = 0, rc;
    long clen = -1;

    if (head == 0)
        return len >= HTTP_MAX_HEAD ? -431 : 0;
    memset(r, 0, sizeof *r);
    p = buf;
    end = buf + head - 2;   /* the final CRLF ends the header block */
    eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol || eol[1] != '\n')
        return -400;
    rc = http_parse_start_line(p, (size_t)(eol - p), r);
    if (rc)
        return rc;
    for (p = eol + 2; p < end; p = eol + 2) {
        eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol || eol[1] != '\n')
            return -400;
        rc = http_parse_header(p, (size_t)(eol - p), r, &conn_close,
                               &conn_keep, &clen);
        if (rc)
            return rc;
    }
    r->head_len = head;
    r->body_len = clen < 0 ? 0 : (size_t)clen;
    r->keep_alive = r->minor >= 1 ? !conn_close : (conn_keep && !conn_close);
    if (len - head < r->body_len)
        return 0;
    return (long)(head + r->body_len);
}

int http_build_response(char **out, size_t *out_len, int code,
                        const char *content_type, const char *body,
                        size_t body_len, int keep_alive)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nConnection: %s\r\n\r\n",
                     code, http_reason(code), content_type, body_len,
                     keep_alive ? "keep-alive" : "close");
    char *b;

    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    b = malloc((size_t)n + body_len);
    if (!b)
        return -1;
    memcpy(b, head, (size_t)n);
    if (body_len)
        memcpy(b + n, body, body_len);
    *out = b;
    *out_len = (size_t)n + body_len;
    return 0;
}
