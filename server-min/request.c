/* request.c - see request.h. */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#include "reader.h"

static char *request_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);

    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

struct http_request *request_new(void)
{
    return calloc(1, sizeof(struct http_request));
}

void request_free(struct http_request *r)
{
    size_t i;

    if (!r)
        return;
    free(r->method);
    free(r->url);
    free(r->path_info);
    free(r->query);
    free(r->protocol_version);
    for (i = 0; i < r->header_count; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
    free(r->body);
    free(r);
}

int request_set_start_line(struct http_request *r,
                           const char *method, size_t method_len,
                           const char *url, size_t url_len,
                           const char *version, size_t version_len)
{
    const char *q = memchr(url, '?', url_len);
    size_t path_len = q ? (size_t)(q - url) : url_len;

    r->method = request_dup(method, method_len);
    r->url = request_dup(url, url_len);
    /* PathInfo: a path without its leading slash gets one; "/" alone
     * becomes empty. */
    if (path_len > 1 && url[0] != '/') {
        r->path_info = malloc(path_len + 2);
        if (r->path_info) {
            r->path_info[0] = '/';
            memcpy(r->path_info + 1, url, path_len);
            r->path_info[path_len + 1] = '\0';
        }
    } else {
        r->path_info = request_dup(url, path_len == 1 && url[0] == '/' ? 0 : path_len);
    }
    r->query = q ? request_dup(q + 1, url_len - path_len - 1)
                 : request_dup("", 0);
    r->protocol_version = request_dup(version, version_len);
    if (!r->method || !r->url || !r->path_info || !r->query ||
        !r->protocol_version)
        return -1;
    return 0;
}

int request_set_field(struct http_request *r, const char *name,
                      size_t name_len, const char *value, size_t value_len)
{
    size_t i;
    char *v;

    for (i = 0; i < r->header_count; i++)
        if (reader_same_text(name, name_len, r->headers[i].name)) {
            v = request_dup(value, value_len);
            if (!v)
                return -1;
            free(r->headers[i].value);
            r->headers[i].value = v;
            return 0;
        }
    if (r->header_count == r->header_cap) {
        size_t cap = r->header_cap ? r->header_cap * 2 : 16;
        struct request_header *h = realloc(r->headers, cap * sizeof *h);

        if (!h)
            return -1;
        r->headers = h;
        r->header_cap = cap;
    }
    r->headers[r->header_count].name = request_dup(name, name_len);
    r->headers[r->header_count].value = request_dup(value, value_len);
    if (!r->headers[r->header_count].name ||
        !r->headers[r->header_count].value) {
        free(r->headers[r->header_count].name);
        free(r->headers[r->header_count].value);
        return -1;
    }
    r->header_count++;
    return 0;
}

const char *request_get_header(const struct http_request *r, const char *name)
{
    size_t i;

    for (i = 0; i < r->header_count; i++)
        if (reader_same_text(r->headers[i].name, strlen(r->headers[i].name),
                             name))
            return r->headers[i].value;
    return NULL;
}

int64_t request_content_length(const struct http_request *r)
{
    const char *v = request_get_header(r, "Content-Length");

    return v ? reader_content_length(v, strlen(v)) : 0;
}
