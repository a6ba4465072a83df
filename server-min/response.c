/* response.c - see response.h.
 *
 * The two writes are the point (defect B3): fphttpserver writes the header
 * block with one send() and the body with another, and never sets
 * TCP_NODELAY, so on a reused connection Nagle holds the small body until the
 * client's delayed ACK of the header segment arrives. */
#include "response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connection.h"
#include "ssockets.h"
#include "stream.h"

void response_init(struct http_response *r, struct connection *c,
                   const struct http_request *req)
{
    memset(r, 0, sizeof *r);
    r->connection = c;
    r->request = req;
    r->code = 200;
}

static void response_free_stream(struct http_response *r)
{
    stream_free(r->content_stream);
    r->content_stream = NULL;
}

void response_free_content(struct http_response *r)
{
    free(r->content);
    r->content = NULL;
    r->content_len = 0;
    response_free_stream(r);
}

void response_set_header(struct http_response *r, const char *name,
                         const char *value)
{
    size_t i;

    for (i = 0; i < r->header_count; i++)
        if (strcasecmp(r->headers[i].name, name) == 0)
            break;
    if (i == RESPONSE_MAX_HEADERS)
        return;
    snprintf(r->headers[i].name, sizeof r->headers[i].name, "%s", name);
    snprintf(r->headers[i].value, sizeof r->headers[i].value, "%s", value);
    if (i == r->header_count)
        r->header_count++;
}

int response_header_is_set(const struct http_response *r, const char *name)
{
    size_t i;

    for (i = 0; i < r->header_count; i++)
        if (strcasecmp(r->headers[i].name, name) == 0)
            return 1;
    return 0;
}

int response_set_content(struct http_response *r, const void *buf, size_t len)
{
    char *c = malloc(len ? len : 1);

    if (!c)
        return -1;
    if (len)
        memcpy(c, buf, len);
    free(r->content);
    response_free_stream(r);
    r->content = c;
    r->content_len = len;
    return 0;
}

void response_set_content_stream(struct http_response *r,
                                 struct content_stream *s)
{
    if (r->content_stream != s)
        response_free_stream(r);
    r->content_stream = s;
}

uint64_t response_content_length(const struct http_response *r)
{
    return r->content_stream ? r->content_stream->size : r->content_len;
}

/* The socket stream as CopyFrom's destination: its WriteBuffer. */
static int response_socket_write(void *ctx, const void *buf, size_t n)
{
    return socket_stream_write_buffer(ctx, buf, n);
}

const char *response_status_text(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default:  return "Unknown";
    }
}

int response_format_headers(const struct http_response *r, char *out,
                            size_t cap)
{
    size_t len = 0, i;
    int n;

    n = snprintf(out, cap, "HTTP/1.1 %3d %s\r\n", r->code,
                 response_status_text(r->code));
    if (n < 0 || (size_t)n >= cap)
        return -1;
    len = (size_t)n;
    for (i = 0; i < r->header_count; i++) {
        n = snprintf(out + len, cap - len, "%s: %s\r\n", r->headers[i].name,
                     r->headers[i].value);
        if (n < 0 || (size_t)n >= cap - len)
            return -1;
        len += (size_t)n;
    }
    if (cap - len < 3)
        return -1;
    memcpy(out + len, "\r\n", 3);
    return (int)(len + 2);
}

int response_do_send_headers(struct http_response *r)
{
    char buf[RESPONSE_MAX_HEADERS * 330 + 64];
    int len;

    if (connection_is_upgraded(r->connection))
        return 0;
    len = response_format_headers(r, buf, sizeof buf);
    if (len < 0)
        return -1;
    return socket_stream_write_buffer(connection_socket(r->connection), buf,
                                      (size_t)len);
}

int response_do_send_content(struct http_response *r)
{
    struct socket_stream *sock = connection_socket(r->connection);

    if (connection_is_upgraded(r->connection))
        return 0;
    if (r->content_stream && r->content_stream->size > 0)
        return stream_copy_from(response_socket_write, sock, r->content_stream, 0);
    if (r->content_len == 0)
        return 0;
    return socket_stream_write_buffer(sock, r->content, r->content_len);
}

void response_collect_headers(struct http_response *r)
{
    char len[32];

    /* The length of what DoSendContent will write (SetContent and
     * SetContentStream keep ContentLength so). */
    snprintf(len, sizeof len, "%llu",
             (unsigned long long)response_content_length(r));
    response_set_header(r, "Content-Length", len);
}

int response_send_content(struct http_response *r)
{
    if (!r->headers_sent) {
        response_collect_headers(r);
        r->headers_sent = 1;
        if (response_do_send_headers(r) != 0)
            return -1;
    }
    r->content_sent = 1;
    return response_do_send_content(r);
}
