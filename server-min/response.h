/* response.h - TFPHTTPConnectionResponse: status, headers, content, and
 * the two writes that send them (DoSendHeaders, DoSendContent). */
#ifndef SERVER_MIN_RESPONSE_H
#define SERVER_MIN_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

struct connection;
struct content_stream;
struct http_request;

#define RESPONSE_MAX_HEADERS 16

struct response_header {
    char name[64];
    char value[256];
};

struct http_response {
    struct connection *connection;
    /* TResponse.Request: the request it answers (CreateResponse(Req)); NULL
     * for a response made without one (the unit tests). */
    const struct http_request *request;
    int code;
    struct response_header headers[RESPONSE_MAX_HEADERS];
    size_t header_count;
    char *content;          /* owned */
    size_t content_len;
    struct content_stream *content_stream;   /* owned (FreeContentStream) */
    int headers_sent;
    int content_sent;
};

void response_init(struct http_response *r, struct connection *c,
                   const struct http_request *req);
void response_free_content(struct http_response *r);

/* SetHeader: replace or add (silently ignored past RESPONSE_MAX_HEADERS). */
void response_set_header(struct http_response *r, const char *name,
                         const char *value);
int response_header_is_set(const struct http_response *r, const char *name);

/* Content := copy of buf (drops a ContentStream, as SetContent does).  0,
 * or -1 on out-of-memory. */
int response_set_content(struct http_response *r, const void *buf, size_t len);

/* ContentStream := s, owned by the response from now on (FreeContentStream);
 * ContentLength becomes its size. */
void response_set_content_stream(struct http_response *r,
                                 struct content_stream *s);

/* ContentLength: the stream's size when there is a stream, else the
 * content's length. */
uint64_t response_content_length(const struct http_response *r);

/* GetHTTPStatusText. */
const char *response_status_text(int code);

/* Builds "HTTP/1.1 <code> <text>\r\n" + headers + "\r\n" into out (NUL
 * terminated). Returns the length, or -1 when out is too small. */
int response_format_headers(const struct http_response *r, char *out,
                            size_t cap);

/* TResponse.CollectHeaders (TFPHTTPConnectionResponse does not override
 * it): the fields SendHeaders writes, Content-Length among them. */
void response_collect_headers(struct http_response *r);

/* DoSendHeaders: the status line and headers in ONE socket write. */
int response_do_send_headers(struct http_response *r);

/* DoSendContent: the content in a SECOND socket write (none when empty);
 * a ContentStream by TStream.CopyFrom, one write per 128 KiB piece. */
int response_do_send_content(struct http_response *r);

/* TResponse.SendContent: headers first if not yet sent, then the content. */
int response_send_content(struct http_response *r);

#endif
