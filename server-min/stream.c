/* stream.c - see stream.h.  CopyFrom's piece size matters to B3: every
 * piece is one send(), so a ContentStream body leaves as writes of 128 KiB
 * after the header block's write. */
#include "stream.h"

#include <stdlib.h>

size_t stream_read(struct content_stream *s, void *buf, size_t n)
{
    size_t got = s->ops->read(s, buf, n);

    s->position += got;
    return got;
}

int stream_read_buffer(struct content_stream *s, void *buf, size_t n)
{
    char *p = buf;

    while (n > 0) {
        size_t got = stream_read(s, p, n);

        if (got == 0)
            return -1;
        p += got;
        n -= got;
    }
    return 0;
}

int stream_copy_from(stream_write_fn write, void *ctx,
                     struct content_stream *src, uint64_t count)
{
    size_t bufsize = STREAM_COPY_BUFFER, got;
    char *buf;
    int rc = 0;

    if (count == 0)
        src->position = 0;
    else if (count < bufsize)
        bufsize = (size_t)count;   /* do not allocate more than needed */
    buf = malloc(bufsize);
    if (!buf)
        return -1;
    if (count == 0) {
        do {
            got = stream_read(src, buf, bufsize);
            if (got > 0 && write(ctx, buf, got) != 0)
                rc = -1;
        } while (rc == 0 && got == bufsize);
    } else {
        while (rc == 0 && count > 0) {
            got = count > bufsize ? bufsize : (size_t)count;
            if (stream_read_buffer(src, buf, got) != 0 || write(ctx, buf, got) != 0)
                rc = -1;
            count -= got;
        }
    }
    free(buf);
    return rc;
}

void stream_free(struct content_stream *s)
{
    if (s && s->ops->destroy)
        s->ops->destroy(s);
}
