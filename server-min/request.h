/* request.h - TFPHTTPConnectionRequest: what the reader produced for one
 * request.  Fields own their strings (NUL-terminated copies). */
#ifndef SERVER_MIN_REQUEST_H
#define SERVER_MIN_REQUEST_H

#include <stddef.h>
#include <stdint.h>

struct request_header {
    char *name;
    char *value;
};

struct http_request {
    char *method;
    char *url;
    char *path_info;        /* URL without query, as ParseStartLine sets it:
                               a leading '/' added when missing, "/" -> "" */
    char *query;            /* after '?', or "" */
    char *protocol_version; /* "1.1", "1.0" or "" */
    struct request_header *headers;
    size_t header_count, header_cap;
    unsigned char *body;    /* ContentBytes */
    size_t body_len;
};

/* NULL on out-of-memory. */
struct http_request *request_new(void);
void request_free(struct http_request *r);

/* ParseStartLine's assignments; 0 or -1 (out of memory). */
int request_set_start_line(struct http_request *r,
                           const char *method, size_t method_len,
                           const char *url, size_t url_len,
                           const char *version, size_t version_len);

/* SetFieldByName: a later header of the same name replaces the earlier one.
 * 0 or -1 (out of memory). */
int request_set_field(struct http_request *r, const char *name,
                      size_t name_len, const char *value, size_t value_len);

/* GetHeader: the value, or NULL when absent (case-insensitive name). */
const char *request_get_header(const struct http_request *r, const char *name);

/* ContentLength as TRequest computes it (0 when absent or not a number). */
int64_t request_content_length(const struct http_request *r);

#endif
