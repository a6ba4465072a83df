/* stream.h - TStream, as much of it as TResponse.ContentStream needs:
 * a size, a position, Read, ReadBuffer and CopyFrom. */
#ifndef SERVER_MIN_STREAM_H
#define SERVER_MIN_STREAM_H

#include <stddef.h>
#include <stdint.h>

/* TStream.CopyFrom's buffer: MaxSize = $20000 (128 KiB). */
#define STREAM_COPY_BUFFER 0x20000

struct content_stream;

struct content_stream_ops {
    /* TStream.Read: up to n bytes at position; the count (0 at the end). */
    size_t (*read)(struct content_stream *s, void *buf, size_t n);
    void (*destroy)(struct content_stream *s);
};

struct content_stream {
    const struct content_stream_ops *ops;
    uint64_t size;
    uint64_t position;
};

/* TStream.Read: advances position by what it returns. */
size_t stream_read(struct content_stream *s, void *buf, size_t n);

/* TStream.ReadBuffer: exactly n bytes, or -1 (EReadError) when the stream
 * ends first. */
int stream_read_buffer(struct content_stream *s, void *buf, size_t n);

/* The destination side of TStream.CopyFrom(Source, Count): write(ctx, buf,
 * n) is the destination's WriteBuffer (0, or -1 on error). */
typedef int (*stream_write_fn)(void *ctx, const void *buf, size_t n);

/* TStream.CopyFrom: Count = 0 rewinds Source and copies until a Read comes
 * back short, in STREAM_COPY_BUFFER pieces; Count > 0 copies exactly Count
 * bytes from the current position, in pieces of at most that buffer.  One
 * write per piece.  Returns 0, or -1 (a failed write or a short stream). */
int stream_copy_from(stream_write_fn write, void *ctx,
                     struct content_stream *src, uint64_t count);

void stream_free(struct content_stream *s);

#endif
