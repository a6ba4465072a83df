/* common/http_request.c - request-head counting; see http_request.h. */
#include "http_request.h"

#include <string.h>
#include <strings.h>

int hq_is_request_start(const unsigned char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
        i++;
    return i > 0 && i < len && buf[i] == ' ';
}

size_t hq_head_end(const unsigned char *buf, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return i + 4;
    return 0;
}

long long hq_content_length(const unsigned char *buf, size_t len)
{
    static const char name[] = "Content-Length:";
    for (size_t i = 0; i + sizeof name - 1 < len; i++) {
        if ((i > 0 && buf[i - 1] != '\n') || strncasecmp((const char *)buf + i, name, sizeof name - 1) != 0)
            continue;
        size_t j = i + sizeof name - 1, digits = 0;
        long long v = 0;
        while (j < len && (buf[j] == ' ' || buf[j] == '\t'))
            j++;
        for (; j < len && buf[j] >= '0' && buf[j] <= '9'; j++, digits++) {
            v = v * 10 + (buf[j] - '0');
            if (v > (1ll << 40))
                return -1;
        }
        return digits ? v : -1;
    }
    return 0;
}

int hq_count_requests(const unsigned char *buf, size_t len, size_t *off)
{
    size_t o = *off;
    int n = 0;
    for (;;) {
        while (o < len && (buf[o] == '\r' || buf[o] == '\n'))
            o++;
        if (o >= len || !hq_is_request_start(buf + o, len - o))
            break;
        size_t he = hq_head_end(buf + o, len - o);
        if (!he)
            break;
        long long cl = hq_content_length(buf + o, he);
        if (cl < 0 || (unsigned long long)cl > len - o - he)
            break; /* unknown framing, or the body is not complete yet */
        n++;
        o += he + (size_t)cl;
    }
    *off = o;
    return n;
}
