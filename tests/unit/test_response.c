/* test_response.c - suite "response": the header block and the writes that
 * send a response (B3: two writes, header block then content, on every
 * variant; the fix is TCP_NODELAY, not fewer writes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "httpserver.h"
#include "response.h"
#include "unit.h"

/* coalesce-writes (its response.h defines the bound): a response that fits
 * it is one write; without it the header block and the body are two. */
#ifdef RESPONSE_COALESCE_MAX
#define UNIT_COALESCED_SENDS 1
#else
#define UNIT_COALESCED_SENDS 2
#endif

static void test_format_headers(void)
{
    struct http_response r;
    char out[512];
    int n;

    response_init(&r, NULL, NULL);
    ASSERT_INT(r.code, 200);
    response_set_header(&r, "Content-Type", "text/plain");
    response_set_header(&r, "X-A", "1");
    n = response_format_headers(&r, out, sizeof out);
    ASSERT_STR(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\n");
    ASSERT_INT(n, (int)strlen(out));
    /* Too small a buffer is refused, never truncated. */
    ASSERT_INT(response_format_headers(&r, out, 20), -1);
    ASSERT_INT(response_format_headers(&r, out, (size_t)n), -1);
    ASSERT_INT(response_format_headers(&r, out, (size_t)n + 1), n);
    r.code = 404;
    response_format_headers(&r, out, sizeof out);
    ASSERT_INT(strncmp(out, "HTTP/1.1 404 Not Found\r\n", 24), 0);
}

static void test_set_header(void)
{
    struct http_response r;
    char name[16];
    int i;

    response_init(&r, NULL, NULL);
    response_set_header(&r, "Connection", "keep-alive");
    response_set_header(&r, "connection", "close");
    ASSERT_INT(r.header_count, 1);
    ASSERT_STR(r.headers[0].value, "close");
    ASSERT_INT(response_header_is_set(&r, "CONNECTION"), 1);
    ASSERT_INT(response_header_is_set(&r, "Keep-Alive"), 0);
    for (i = 0; i < RESPONSE_MAX_HEADERS + 3; i++) {
        snprintf(name, sizeof name, "X-%d", i);
        response_set_header(&r, name, "v");
    }
    /* Past the table's size headers are ignored. */
    ASSERT_INT(r.header_count, RESPONSE_MAX_HEADERS);
}

static void test_status_text(void)
{
    ASSERT_STR(response_status_text(200), "OK");
    ASSERT_STR(response_status_text(400), "Bad Request");
    ASSERT_STR(response_status_text(408), "Request Timeout");
    ASSERT_STR(response_status_text(413), "Payload Too Large");
    ASSERT_STR(response_status_text(431), "Request Header Fields Too Large");
    ASSERT_STR(response_status_text(503), "Service Unavailable");
    ASSERT_STR(response_status_text(299), "Unknown");
}

static void test_set_content(void)
{
    struct http_response r;

    response_init(&r, NULL, NULL);
    ASSERT_INT(response_set_content(&r, "abc", 3), 0);
    ASSERT_MEM(r.content, r.content_len, "abc");
    ASSERT_INT(response_set_content(&r, "", 0), 0);
    ASSERT_INT(r.content_len, 0);
    response_free_content(&r);
    CU_ASSERT_PTR_NULL(r.content);
}

/* send_content over a socketpair: the exact bytes, and how many send()
 * calls carried them. */
static void send_and_count(const char *body, size_t body_len,
                           int *sends, struct unit_response *got)
{
    static struct httpserver s;
    struct unit_conn u;
    struct http_response r;

    unit_server_init(&s);
    unit_conn_open(&u, &s);
    response_init(&r, u.c, NULL);
    response_set_header(&r, "X-Test", "1");
    if (body_len)
        response_set_content(&r, body, body_len);
    ASSERT_INT(response_send_content(&r), 0);
    ASSERT_INT(r.headers_sent, 1);
    ASSERT_INT(r.content_sent, 1);
    *sends = unit_send_calls();
    response_free_content(&r);
    unit_read_response(u.peer, got);
    unit_conn_close(&u);
}

static void test_send_small_body(void)
{
    struct unit_response *got = malloc(sizeof *got);
    int sends;

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    send_and_count("pong", 4, &sends, got);
    ASSERT_INT(got->ok, 1);
    ASSERT_STR(got->head, "HTTP/1.1 200 OK\r\nX-Test: 1\r\nContent-Length: 4\r\n\r\n");
    ASSERT_MEM(got->body, got->body_len, "pong");
    /* Header block and body as two writes (set-tcp-nodelay sets
     * TCP_NODELAY in SetupSocket instead), one with coalesce-writes. */
    ASSERT_INT(sends, UNIT_COALESCED_SENDS);
    free(got);
}

static void test_send_no_body(void)
{
    struct unit_response *got = malloc(sizeof *got);
    int sends;

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    send_and_count(NULL, 0, &sends, got);
    ASSERT_INT(got->ok, 1);
    ASSERT_STR(got->head, "HTTP/1.1 200 OK\r\nX-Test: 1\r\nContent-Length: 0\r\n\r\n");
    ASSERT_INT(sends, 1);
    free(got);
}

static void send_body_of(size_t n, int want_sends)
{
    struct unit_response *got = malloc(sizeof *got);
    size_t i;
    char *body = malloc(n);
    int sends;

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    for (i = 0; i < n; i++)
        body[i] = (char)('a' + i % 26);
    send_and_count(body, n, &sends, got);
    ASSERT_INT(got->ok, 1);
    ASSERT_INT(got->body_len, n);
    CU_ASSERT(memcmp(got->body, body, n) == 0);
    ASSERT_INT(sends, want_sends);
    free(body);
    free(got);
}

/* Within coalesce-writes' bound: one write with it, two without. */
static void test_send_large_body(void)
{
    send_body_of(20000, UNIT_COALESCED_SENDS);
}

/* Beyond the bound (70,000 > 65,536): the header block, then the body. */
static void test_send_body_beyond_bound(void)
{
    send_body_of(70000, 2);
}

/* An application that sends the headers itself (TResponse.SendHeaders:
 * CollectHeaders, DoSendHeaders, HeadersSent) and then sets the content:
 * the client gets the content set after the headers, on every variant
 * (coalesce-writes appends the content only while SendContent sends the
 * headers). */
static void test_own_send_headers_then_content(void)
{
    static struct httpserver s;
    struct unit_conn u;
    struct http_response r;
    struct unit_response *got = malloc(sizeof *got);

    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    unit_server_init(&s);
    unit_conn_open(&u, &s);
    response_init(&r, u.c, NULL);
    ASSERT_INT(response_set_content(&r, "early", 5), 0);
    response_collect_headers(&r);
    r.headers_sent = 1;
    ASSERT_INT(response_do_send_headers(&r), 0);
    ASSERT_INT(response_set_content(&r, "late!", 5), 0);
    ASSERT_INT(response_send_content(&r), 0);
    ASSERT_INT(r.content_sent, 1);
    response_free_content(&r);
    unit_read_response(u.peer, got);
    unit_conn_close(&u);
    ASSERT_INT(got->ok, 1);
    ASSERT_STR(got->head, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
    ASSERT_MEM(got->body, got->body_len, "late!");
    free(got);
}

static const struct unit_test response_tests[] = {
    { "format_headers", test_format_headers },
    { "set_header", test_set_header },
    { "status_text", test_status_text },
    { "set_content", test_set_content },
    { "send_small_body", test_send_small_body },
    { "send_no_body", test_send_no_body },
    { "send_large_body", test_send_large_body },
    { "send_body_beyond_bound", test_send_body_beyond_bound },
    { "own_send_headers_then_content", test_own_send_headers_then_content },
};

int unit_register_response(void)
{
    return UNIT_ADD_SUITE("response", NULL, response_tests);
}
