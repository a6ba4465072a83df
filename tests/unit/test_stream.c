/* test_stream.c - suite "stream": TStream.CopyFrom's pieces (one write
 * each: what a ContentStream body costs in send() calls, B3's mechanism),
 * and a ContentStream response on the wire. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connection.h"
#include "httpserver.h"
#include "request.h"
#include "response.h"
#include "stream.h"
#include "unit.h"

/* coalesce-writes (its response.h defines the bound): a response that fits
 * it is one write; without it the header block and the body are two. */
#ifdef RESPONSE_COALESCE_MAX
#define UNIT_COALESCED_SENDS 1
#else
#define UNIT_COALESCED_SENDS 2
#endif

/* A stream of `size` computed bytes; Read hands out at most `grain` at a
 * time when grain > 0 (a stream that returns short reads). */
struct test_stream {
    struct content_stream base;
    size_t grain;
};

static char test_byte(uint64_t i)
{
    return (char)('A' + i % 23);
}

static size_t test_read(struct content_stream *s, void *buf, size_t n)
{
    struct test_stream *t = (struct test_stream *)s;
    uint64_t left = s->size - s->position, i;

    if (n > left)
        n = (size_t)left;
    if (t->grain && n > t->grain)
        n = t->grain;
    for (i = 0; i < n; i++)
        ((char *)buf)[i] = test_byte(s->position + i);
    return n;
}

static void test_destroy(struct content_stream *s)
{
    free(s);
}

static const struct content_stream_ops test_ops = { test_read, test_destroy };

static struct content_stream *test_stream_new(uint64_t size, size_t grain)
{
    struct test_stream *t = calloc(1, sizeof *t);

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    t->base.ops = &test_ops;
    t->base.size = size;
    t->grain = grain;
    return &t->base;
}

/* The destination: records each write's size and checks its bytes. */
struct sink {
    size_t writes, sizes[16];
    uint64_t total;
    int bad;
    int fail_at;   /* write number that fails, 0 = none */
};

static int sink_write(void *ctx, const void *buf, size_t n)
{
    struct sink *k = ctx;
    size_t i;

    if (k->fail_at && (int)k->writes + 1 == k->fail_at)
        return -1;
    for (i = 0; i < n; i++)
        k->bad |= ((const char *)buf)[i] != test_byte(k->total + i);
    if (k->writes < 16)
        k->sizes[k->writes] = n;
    k->writes++;
    k->total += n;
    return 0;
}

static void test_copy_whole(void)
{
    /* Count 0: from the start, in 128 KiB pieces, until a short read. */
    struct content_stream *s = test_stream_new(2 * STREAM_COPY_BUFFER + 5, 0);
    struct sink k = {0};

    s->position = 77;   /* rewound */
    ASSERT_INT(stream_copy_from(sink_write, &k, s, 0), 0);
    ASSERT_INT(k.writes, 3);
    ASSERT_INT(k.sizes[0], STREAM_COPY_BUFFER);
    ASSERT_INT(k.sizes[2], 5);
    ASSERT_INT(k.total, 2 * STREAM_COPY_BUFFER + 5);
    ASSERT_INT(k.bad, 0);
    stream_free(s);
}

static void test_copy_exact_multiple(void)
{
    /* The read after the last full piece comes back empty: no write. */
    struct content_stream *s = test_stream_new(STREAM_COPY_BUFFER, 0);
    struct sink k = {0};

    ASSERT_INT(stream_copy_from(sink_write, &k, s, 0), 0);
    ASSERT_INT(k.writes, 1);
    ASSERT_INT(k.total, STREAM_COPY_BUFFER);
    stream_free(s);
}

static void test_copy_count(void)
{
    /* Count > 0: from the current position, exactly Count bytes, through
     * ReadBuffer (short reads are completed). */
    struct content_stream *s = test_stream_new(300000, 1000);
    struct sink k = {0};
    char first[10];

    ASSERT_INT(stream_read_buffer(s, first, sizeof first), 0);
    k.total = 10;   /* the sink checks bytes from the stream's offset 10 */
    ASSERT_INT(stream_copy_from(sink_write, &k, s, 300000 - 10), 0);
    ASSERT_INT(k.writes, 3);
    ASSERT_INT(k.sizes[0], STREAM_COPY_BUFFER);
    ASSERT_INT(k.total, 300000);
    ASSERT_INT(k.bad, 0);
    stream_free(s);
}

static void test_copy_errors(void)
{
    struct content_stream *s = test_stream_new(1000, 0);
    struct sink k = {0};

    /* More than the stream holds: EReadError, after what it could write. */
    ASSERT_INT(stream_copy_from(sink_write, &k, s, 2000), -1);
    s->position = 0;
    k = (struct sink){.fail_at = 1};
    ASSERT_INT(stream_copy_from(sink_write, &k, s, 0), -1);
    stream_free(s);
}

/* A ContentStream response over a socketpair: Content-Length is the
 * stream's size, the bytes are the stream's, and the header block and the
 * piece are separate writes (B3's two writes), or, with coalesce-writes,
 * the header block and the stream's first RESPONSE_COALESCE_MAX bytes one
 * write and the rest CopyFrom's pieces. */
static void response_stream_of(uint64_t size, int want_sends)
{
    static struct httpserver s;
    struct unit_response *got = malloc(sizeof *got);
    struct http_response r;
    struct unit_conn u;
    char len[48];
    uint64_t i;
    int ok = 1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    unit_server_init(&s);
    unit_conn_open(&u, &s);
    response_init(&r, u.c, NULL);
    response_set_content_stream(&r, test_stream_new(size, 0));
    ASSERT_INT(response_content_length(&r), size);
    ASSERT_INT(response_send_content(&r), 0);
    ASSERT_INT(unit_send_calls(), want_sends);
    response_free_content(&r);
    CU_ASSERT_PTR_NULL(r.content_stream);
    unit_read_response(u.peer, got);
    unit_conn_close(&u);
    ASSERT_INT(got->ok, 1);
    snprintf(len, sizeof len, "Content-Length: %llu\r\n", (unsigned long long)size);
    CU_ASSERT(strstr(got->head, len) != NULL);
    ASSERT_INT(got->body_len, size);
    for (i = 0; i < size && i < got->body_len; i++)
        ok &= got->body[i] == test_byte(i);
    ASSERT_INT(ok, 1);
    free(got);
}

static void test_response_stream(void)
{
    response_stream_of(5000, UNIT_COALESCED_SENDS);
}

/* 70,000 bytes: beyond the bound, the rest (4,464) is a write of its own. */
static void test_response_stream_beyond_bound(void)
{
    response_stream_of(70000, 2);
}

/* B14: a response to HEAD says the length a GET would get and sends no
 * byte of its ContentStream (stock sends the whole stream after the head),
 * within and beyond coalesce-writes' bound. */
static void response_stream_to_head(uint64_t size)
{
    static struct httpserver s;
    struct unit_conn u;
    struct http_response r;
    struct http_request *req = request_new();
    char head[4096], len[48];
    size_t n = 0, after = 0;
    char byte;

    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    ASSERT_INT(request_set_start_line(req, "HEAD", 4, "/file", 5, "1.1", 3), 0);
    unit_server_init(&s);
    unit_conn_open(&u, &s);
    response_init(&r, u.c, req);
    response_set_content_stream(&r, test_stream_new(size, 0));
    ASSERT_INT(response_send_content(&r), 0);
    response_free_content(&r);
    connection_free(u.c); /* the server's side closes: EOF ends the read */
    u.c = NULL;
    /* The head, byte by byte, then whatever follows it until the close. */
    while (n < sizeof head - 1 && read(u.peer, head + n, 1) == 1) {
        n++;
        if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    head[n] = '\0';
    while (read(u.peer, &byte, 1) == 1)
        after++;
    unit_conn_close(&u);
    snprintf(len, sizeof len, "Content-Length: %llu\r\n", (unsigned long long)size);
    CU_ASSERT(strstr(head, len) != NULL);
    ASSERT_INT(after, KIT_FIXED_B14 ? 0 : size);
    request_free(req);
}

static void test_b14_head_stream(void)
{
    response_stream_to_head(5000);
    response_stream_to_head(70000);
}

static void test_content_replaces_stream(void)
{
    /* SetContent drops a ContentStream (upstream frees it when it owns it). */
    struct http_response r;

    response_init(&r, NULL, NULL);
    response_set_content_stream(&r, test_stream_new(10, 0));
    ASSERT_INT(response_set_content(&r, "abc", 3), 0);
    CU_ASSERT_PTR_NULL(r.content_stream);
    ASSERT_INT(response_content_length(&r), 3);
    response_free_content(&r);
}

static const struct unit_test stream_tests[] = {
    { "copy_whole", test_copy_whole },
    { "copy_exact_multiple", test_copy_exact_multiple },
    { "copy_count", test_copy_count },
    { "copy_errors", test_copy_errors },
    { "response_stream", test_response_stream },
    { "b14_head_stream", test_b14_head_stream },
    { "response_stream_beyond_bound", test_response_stream_beyond_bound },
    { "content_replaces_stream", test_content_replaces_stream },
};

int unit_register_stream(void)
{
    return UNIT_ADD_SUITE("stream", NULL, stream_tests);
}
