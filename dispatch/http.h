/* http.h - HTTP/1.x request framing and response building over caller
 * buffers.  Pure functions: no I/O, no allocation except the response. */
#ifndef DISPATCH_HTTP_H
#define DISPATCH_HTTP_H

#include <stddef.h>

#define HTTP_MAX_HEAD  16384          /* no CRLFCRLF within this -> 431 */
#define HTTP_MAX_BODY  (1024 * 1024)  /* Content-Length above -> 413 */

struct http_request {
    char method[16];
    char path[1024];
    char query[1024];
    int minor;            /* HTTP/1.<minor> */
    int keep_alive;       /* after this response the connection stays */
    size_t head_len;      /* start line + headers + empty line */
    size_t body_len;      /* Content-Length */
};

/* Frame the request at the start of buf[0..len).  Returns its whole length
 * (head + body) when complete, 0 when more bytes are needed, or -status
 * (-400, -413, -414, -431, -501) for input that gets an error response and
 * a close.  Bytes after the returned length belong to the next request. */
long http_parse(const char *buf, size_t len, struct http_request *r);

/* Status line, Content-Type, Content-Length, Connection and the body in one
 * malloc'd buffer (one send per response).  0, or -1 when out of memory. */
int http_build_response(char **out, size_t *out_len, int code,
                        const char *content_type, const char *body,
                        size_t body_len, int keep_alive);

const char *http_reason(int code);

#endif
