/* common/tests/test_common.c - CUnit tests of common/: the response reader
 * (every input fed whole, split at every point, and byte by byte, all of
 * which must agree), the TCP client helpers over loopback, and die().
 * Build: make build/test-common.  main returns the number of failures. */
#include "../http_request.h"
#include "../http_response.h"
#include "../tcpclient.h"
#include "../util.h"
#include "feed.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The input fed with cuts only (feed.h). */
static struct feed_seen feed(const char *in, size_t len, const size_t *cuts, size_t ncuts,
                             unsigned flags, int at_eof, unsigned long long max_body)
{
    return feed_response(in, len, cuts, ncuts, 0, flags, at_eof, max_body);
}

static void same(const struct feed_seen *a, const struct feed_seen *b, size_t cut)
{
    if (a->rc != b->rc || a->status != b->status || a->body_len != b->body_len ||
        a->conn_close != b->conn_close)
        fprintf(stderr, "\n  split at %zu: rc %lld vs %lld, body %llu vs %llu\n", cut, a->rc,
                b->rc, a->body_len, b->body_len);
    CU_ASSERT_EQUAL(a->rc, b->rc);
    CU_ASSERT_EQUAL(a->status, b->status);
    CU_ASSERT_EQUAL(a->body_len, b->body_len);
    CU_ASSERT_EQUAL(a->conn_close, b->conn_close);
    if (a->rc < 0)
        return; /* what was stored before a refusal depends on the split */
    CU_ASSERT_EQUAL(a->body_got, b->body_got);
    CU_ASSERT(memcmp(a->body, b->body, a->body_got) == 0);
}

/* The input whole, split once at every point, and byte by byte must all
 * give the same result; returns the whole-input result. */
static struct feed_seen all_splits(const char *in, size_t len, unsigned flags, int at_eof,
                              unsigned long long max_body)
{
    struct feed_seen whole = feed(in, len, NULL, 0, flags, at_eof, max_body);
    size_t *bytes = malloc((len + 1) * sizeof *bytes);
    for (size_t cut = 0; cut <= len; cut++) {
        struct feed_seen one = feed(in, len, &cut, 1, flags, at_eof, max_body);
        same(&whole, &one, cut);
        bytes[cut] = cut;
    }
    struct feed_seen each = feed(in, len, bytes, len + 1, flags, at_eof, max_body);
    same(&whole, &each, (size_t)-1);
    free(bytes);
    return whole;
}

#define IN(x) (x), sizeof(x) - 1

static void t_content_length(void)
{
    static const char in[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\npongNEXT";
    struct feed_seen s = all_splits(IN(in), 0, 0, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.status, 200);
    CU_ASSERT_EQUAL(s.rc, (long long)sizeof in - 1 - 4); /* NEXT is the next response's */
    CU_ASSERT_EQUAL(s.body_len, 4);
    CU_ASSERT(s.body_got == 4 && memcmp(s.body, "pong", 4) == 0);
    CU_ASSERT_TRUE(s.conn_close);
}

static void t_chunked(void)
{
    static const char in[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                             "4;ext=1\r\npong\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
    struct feed_seen s = all_splits(IN(in), 0, 0, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.rc, (long long)sizeof in - 1 - 4);
    CU_ASSERT_EQUAL(s.body_len, 14);
    CU_ASSERT(memcmp(s.body, "pong0123456789", 14) == 0);
    static const char bare[] = "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nhi\n0\n\n";
    s = all_splits(IN(bare), 0, 0, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.rc, (long long)sizeof bare - 1);
    CU_ASSERT_EQUAL(s.body_len, 2);
}

static void t_close_delimited(void)
{
    static const char in[] = "HTTP/1.0 200 OK\nKeep-Alive: timeout=5, max=9\n\nhello";
    struct feed_seen s = all_splits(IN(in), 0, 1, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.rc, (long long)sizeof in - 1);
    CU_ASSERT_EQUAL(s.body_len, 5);
    CU_ASSERT_EQUAL(s.keep_alive_timeout, 5);
    s = feed(IN(in), NULL, 0, 0, 0, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.rc, HR_INCOMPLETE); /* no EOF yet: the body may go on */
    /* Any Transfer-Encoding that does not end in chunked runs to close. */
    static const char te[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxyz";
    s = all_splits(IN(te), 0, 1, HR_BODY_UNLIMITED);
    CU_ASSERT_EQUAL(s.body_len, 3);
}

static void t_no_body(void)
{
    static const char r204[] = "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n";
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
    static const char r100[] = "HTTP/1.1 100 Continue\r\n\r\n";
    CU_ASSERT_EQUAL(all_splits(IN(r204), 0, 0, HR_BODY_UNLIMITED).rc, (long long)sizeof r204 - 1);
    CU_ASSERT_EQUAL(all_splits(IN(head), HR_REQ_HEAD, 0, HR_BODY_UNLIMITED).rc, (long long)sizeof head - 1);
    CU_ASSERT_EQUAL(all_splits(IN(r100), 0, 0, HR_BODY_UNLIMITED).status, 100);
}

static void t_garbage(void)
{
    struct hr_response r;
    /* rejected as soon as the bytes contradict "HTTP/1.d SSS" */
    CU_ASSERT_EQUAL(hr_parse_head("X", 1, 0, 0, &r), HR_BAD);
    CU_ASSERT_PTR_NOT_NULL(r.error);
    CU_ASSERT_EQUAL(hr_parse_head("HTTP/1.1 2x", 11, 0, 0, &r), HR_BAD);
    CU_ASSERT_EQUAL(hr_parse_head("HTTP/2 200", 10, 0, 0, &r), HR_BAD);
    CU_ASSERT_EQUAL(hr_parse_head("HTTP/1.1 20", 11, 0, 0, &r), HR_INCOMPLETE);
    static const char *bad[] = {
        "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nA: 1\rB: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\npong",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiX",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct feed_seen s = all_splits(bad[i], strlen(bad[i]), 0, 0, HR_BODY_UNLIMITED);
        if (s.rc != HR_BAD)
            fprintf(stderr, "\n  bad[%zu] gave %lld\n", i, s.rc);
        CU_ASSERT_EQUAL(s.rc, HR_BAD);
        CU_ASSERT_EQUAL(hr_parse_response(bad[i], strlen(bad[i]), HR_AT_EOF, &r), HR_BAD);
        CU_ASSERT_PTR_NOT_NULL(r.error);
    }
}

static void t_absurd_lengths(void)
{
    static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\nabc";
    static const char ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n80000000\r\nabc";
    static const char cd[] = "HTTP/1.1 200 OK\r\n\r\nabcdef";
    /* Above the caller's limit: a verdict at once, whatever the split. */
    CU_ASSERT_EQUAL(all_splits(IN(cl), 0, 0, 1u << 30).rc, HR_TOO_LARGE);
    CU_ASSERT_EQUAL(all_splits(IN(ch), 0, 0, 1u << 30).rc, HR_TOO_LARGE);
    CU_ASSERT_EQUAL(all_splits(IN(cd), 0, 1, 4).rc, HR_TOO_LARGE);
    /* Unlimited: counted as it streams, never stored beyond out's room. */
    struct hr_response r;
    struct hr_body b;
    static char chunk[65536];
    CU_ASSERT_EQUAL(hr_parse_head(IN(cl), 0, 0, &r), (long long)sizeof cl - 4);
    CU_ASSERT_EQUAL(r.content_length, 2147483648ull);
    CU_ASSERT_EQUAL(hr_body_init(&b, &r, HR_BODY_UNLIMITED), 0);
    for (int i = 0; i < 32768; i++) /* 2 GiB in 64 KiB pieces */
        CU_ASSERT_EQUAL_FATAL(hr_body_feed(&b, chunk, sizeof chunk, NULL, 0, NULL), (long long)sizeof chunk);
    CU_ASSERT_TRUE(b.done);
    CU_ASSERT_EQUAL(b.body_len, 2147483648ull);
    CU_ASSERT_EQUAL(hr_body_feed(&b, chunk, 10, NULL, 0, NULL), 0); /* the next response's bytes */
}

static void t_truncated(void)
{
    static const char in[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    CU_ASSERT_EQUAL(all_splits(IN(in), 0, 1, HR_BODY_UNLIMITED).rc, HR_BAD);
    CU_ASSERT_EQUAL(all_splits(IN(in), 0, 0, HR_BODY_UNLIMITED).rc, HR_INCOMPLETE);
    static char big[HR_MAX_HEAD + 100];
    memset(big, 'a', sizeof big);
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 21);
    struct hr_response r;
    CU_ASSERT_EQUAL(hr_parse_head(big, sizeof big, 0, 0, &r), HR_BAD);
    CU_ASSERT_EQUAL(hr_parse_head(big, HR_MAX_HEAD, 0, 0, &r), HR_INCOMPLETE);
}

static void t_whole_buffer(void)
{
    static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong"
                              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nping\r\n0\r\n\r\n";
    struct hr_response r;
    char body[8];
    long long n = hr_parse_response(IN(two), 0, &r);
    CU_ASSERT_EQUAL(n, 42);
    CU_ASSERT_EQUAL(r.body_len, 4);
    long long m = hr_parse_response(two + n, sizeof two - 1 - (size_t)n, 0, &r);
    CU_ASSERT_EQUAL(n + m, (long long)sizeof two - 1);
    CU_ASSERT_EQUAL(hr_copy_body(two + n, (size_t)m, &r, body, sizeof body), 4);
    CU_ASSERT(memcmp(body, "ping", 4) == 0);
    CU_ASSERT_EQUAL(hr_parse_response(two, 20, 0, &r), HR_INCOMPLETE);
}

static void t_headers(void)
{
    static const char in[] = "HTTP/1.0 200 OK\r\nconnection: Upgrade, Keep-Alive\r\n\r\n";
    struct hr_response r;
    CU_ASSERT_EQUAL(hr_parse_head(IN(in), 0, 0, &r), (long long)sizeof in - 1);
    CU_ASSERT_EQUAL(r.minor_version, 0);
    CU_ASSERT_TRUE(r.has_connection && r.conn_keep_alive && !r.conn_close);
    CU_ASSERT_FALSE(hr_announces_close(&r));
    CU_ASSERT_PTR_NOT_NULL(hr_find_header(&r, "CONNECTION"));
    CU_ASSERT_PTR_NULL(hr_find_header(&r, "Content-Length"));
    CU_ASSERT_EQUAL(r.reason_len, 2);
    CU_ASSERT_TRUE(hr_has_token(" a , close ", 11, "close"));
    CU_ASSERT_FALSE(hr_has_token("closed", 6, "close"));
    CU_ASSERT_EQUAL(hr_keepalive_timeout("max=3, timeout=7", 16), 7);
    CU_ASSERT_EQUAL(hr_keepalive_timeout("timeout=", 8), -1);
}

/* Request heads: counted once complete, the same whatever the split. */
static void t_requests(void)
{
    static const unsigned char in[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n\r\n"
                                      "POST /echo HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello"
                                      "GET /b HTTP/1.1\r\n\r\n";
    size_t len = sizeof in - 1;
    for (size_t cut = 0; cut <= len; cut++) {
        size_t off = 0;
        int n = hq_count_requests(in, cut, &off);
        n += hq_count_requests(in, len, &off);
        CU_ASSERT_EQUAL(n, 3);
        CU_ASSERT_EQUAL(off, len);
    }
    size_t off = 0;
    CU_ASSERT_EQUAL(hq_count_requests((const unsigned char *)"garbage\r\n\r\n", 11, &off), 0);
    off = 0;
    CU_ASSERT_EQUAL(hq_count_requests((const unsigned char *)"GET / HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n", 52, &off), 0);
    CU_ASSERT_EQUAL(hq_content_length((const unsigned char *)"X: 1\r\n", 6), 0);
}

/* ---- tcpclient --------------------------------------------------------- */

static int listener(int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

static void t_client(void)
{
    int port, fd, err = 0, writes = 0;
    char ps[16], msg[256], buf[16];
    size_t n;
    int lfd = listener(&port);
    CU_ASSERT_FATAL(lfd >= 0);
    snprintf(ps, sizeof ps, "%d", port);
    int64_t dl = tc_now_us() + 3000000;
    CU_ASSERT_EQUAL_FATAL(tc_connect("127.0.0.1", ps, dl, &fd, msg, sizeof msg), TC_CONN_OK);
    int sfd = accept(lfd, NULL, NULL);
    CU_ASSERT_FATAL(sfd >= 0);
    CU_ASSERT(tc_local_port(fd) > 0);
    CU_ASSERT_EQUAL(tc_send_all(fd, "hello", 5, dl, &n, &writes, &err), TC_IO_OK);
    CU_ASSERT_EQUAL(writes, 1);
    CU_ASSERT_EQUAL(read(sfd, buf, 5), 5); /* unread bytes would turn close into RST */
    CU_ASSERT_EQUAL(write(sfd, "pong", 4), 4);
    CU_ASSERT_EQUAL(tc_read_full(fd, buf, 4, dl, &n, &err), TC_IO_OK);
    CU_ASSERT(n == 4 && memcmp(buf, "pong", 4) == 0);
    /* Nothing there and a deadline already past: a timeout, not a wait. */
    CU_ASSERT_EQUAL(tc_recv(fd, buf, sizeof buf, tc_now_us(), &n, &err), TC_IO_TIMEOUT);
    close(sfd);
    CU_ASSERT_EQUAL(tc_read_full(fd, buf, 4, dl, &n, &err), TC_IO_EOF);
    tc_close(fd);
    close(lfd); /* the port is now closed: refused, with an anet-style message */
    CU_ASSERT_EQUAL(tc_connect("127.0.0.1", ps, dl, &fd, msg, sizeof msg), TC_CONN_REFUSED);
    CU_ASSERT_EQUAL(fd, -1);
    char want[64];
    snprintf(want, sizeof want, "connect 127.0.0.1:%d: %s", port, strerror(ECONNREFUSED));
    CU_ASSERT_STRING_EQUAL(msg, want);
    CU_ASSERT_EQUAL(tc_connect("no.such.host.invalid", ps, dl, &fd, msg, sizeof msg), TC_CONN_RESOLVE);
    CU_ASSERT(strncmp(msg, "resolve no.such.host.invalid: ", 30) == 0);
    CU_ASSERT(tc_raise_nofile() >= 1024);
}

/* A listener on 127.0.0.1 at a port the kernel picks: its fd, the port
 * in *port and, as text, in ps (16 bytes).  -1 if it could not be made. */
static int loopback_listener(int *port, char *ps)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 8) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) != 0) {
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    snprintf(ps, 16, "%d", *port);
    return lfd;
}

static void t_listen_queue(void)
{
    /* A real listener with two finished handshakes nobody accepted. */
    int port, c[2];
    char ps[16], msg[128];
    int lfd = loopback_listener(&port, ps);
    CU_ASSERT_FATAL(lfd >= 0);
    CU_ASSERT_EQUAL(tc_listen_queue(port), 0);
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL(tc_connect("127.0.0.1", ps, tc_now_us() + 2000000, &c[i], msg, sizeof msg), TC_CONN_OK);
    CU_ASSERT_EQUAL(tc_listen_queue(port), 2);
    close(accept(lfd, NULL, NULL));
    CU_ASSERT_EQUAL(tc_listen_queue(port), 1);
    tc_close(c[0]);
    tc_close(c[1]);
    close(lfd);
    CU_ASSERT_EQUAL(tc_listen_queue(port), -1);
}

/* tc_peer_rqueue once it reads want (and *st, when st_want >= 0), polled
 * for up to 2 s: loopback delivers in the sender's call, or in ksoftirqd
 * on a loaded machine.  The last value read (-2: the value, not the state). */
static long peer_rqueue_when(int lport, int rport, long want, int st_want)
{
    int64_t end = tc_now_us() + 2000000;
    for (;;) {
        int st = -1;
        long q = tc_peer_rqueue(lport, rport, &st);
        if ((q == want && (st_want < 0 || st == st_want)) || tc_now_us() >= end)
            return q == want && st_want >= 0 && st != st_want ? -2 : q;
        tc_sleep_until_us(tc_now_us() + 1000);
    }
}

static void t_peer_rqueue(void)
{
    /* A server's end of a real connection, seen from the client: what it
     * holds unread, then CLOSE_WAIT once the client closes, then gone. */
    int port, c;
    char ps[16], msg[128], buf[16];
    size_t sent;
    int err;
    int lfd = loopback_listener(&port, ps);
    CU_ASSERT_FATAL(lfd >= 0);
    CU_ASSERT_FATAL(tc_connect("127.0.0.1", ps, tc_now_us() + 2000000, &c, msg, sizeof msg) == TC_CONN_OK);
    int sfd = accept(lfd, NULL, NULL), cport = tc_local_port(c);
    CU_ASSERT_FATAL(sfd >= 0);
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, 0, 1 /* TCP_ESTABLISHED */), 0);
    CU_ASSERT_EQUAL(tc_send_all(c, "0123456789", 10, tc_now_us() + 2000000, &sent, NULL, &err), TC_IO_OK);
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, 10, 1), 10);
    CU_ASSERT_EQUAL(read(sfd, buf, 4), 4);
    CU_ASSERT_EQUAL(tc_peer_rqueue(port, cport, NULL), 6);
    tc_close(c);
    /* The FIN takes a sequence number too, as in /proc/net/tcp's rx_queue
     * (the same rcv_nxt - copied_seq). */
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, 7, 8 /* TCP_CLOSE_WAIT */), 7);
    struct stat st;
    CU_ASSERT_FATAL(fstat(sfd, &st) == 0);
    CU_ASSERT_EQUAL(tc_peer_inode(port, cport), (unsigned long)st.st_ino);
    close(sfd);
    /* Gone, the listener still there: the kernel's 4-tuple lookup answers
     * with the listener, which is not the connection. */
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, -1, -1), -1);
    CU_ASSERT_EQUAL(tc_peer_inode(port, cport), 0);
    CU_ASSERT_EQUAL(tc_peer_rqueue(port, port, NULL), -1);
    close(lfd);
    CU_ASSERT_EQUAL(tc_peer_rqueue(port, cport, NULL), -1);
}

static void t_peer_reset(void)
{
    /* A server that writes to a connection its client has closed gets a
     * reset: the socket leaves the kernel's tables while the server still
     * holds its descriptor (what hostile's srv_holds_socket is for). */
    int port, c;
    char ps[16], msg[128];
    int lfd = loopback_listener(&port, ps);
    CU_ASSERT_FATAL(lfd >= 0);
    CU_ASSERT_FATAL(tc_connect("127.0.0.1", ps, tc_now_us() + 2000000, &c, msg, sizeof msg) == TC_CONN_OK);
    int sfd = accept(lfd, NULL, NULL), cport = tc_local_port(c);
    CU_ASSERT_FATAL(sfd >= 0);
    CU_ASSERT_NOT_EQUAL(tc_peer_inode(port, cport), 0);
    tc_close(c);
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, 1, 8 /* TCP_CLOSE_WAIT: the FIN */), 1);
    CU_ASSERT_EQUAL(write(sfd, "x", 1), 1);   /* the client's kernel answers RST */
    CU_ASSERT_EQUAL(peer_rqueue_when(port, cport, -1, -1), -1);
    CU_ASSERT(fcntl(sfd, F_GETFD) >= 0);     /* still open here */
    close(sfd);
    close(lfd);
}

static void t_die(void)
{
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        die("open %s: %s", "x", "No such file or directory");
    }
    close(p[1]);
    char buf[128] = {0};
    ssize_t n = 0, k;
    while ((k = read(p[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += k;
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CU_ASSERT(n > 0);
    CU_ASSERT_STRING_EQUAL(buf, "open x: No such file or directory\n");
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    char *q = xreallocarray(NULL, 4, 4);
    q = xrealloc(q, 0);
    free(q);
}

void kjson_add_suite(void); /* test_kjson.c: the JSON writer */

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("http_response", NULL, NULL);
    CU_add_test(s, "content_length", t_content_length);
    CU_add_test(s, "chunked", t_chunked);
    CU_add_test(s, "close_delimited", t_close_delimited);
    CU_add_test(s, "no_body", t_no_body);
    CU_add_test(s, "garbage", t_garbage);
    CU_add_test(s, "absurd_lengths", t_absurd_lengths);
    CU_add_test(s, "truncated", t_truncated);
    CU_add_test(s, "whole_buffer", t_whole_buffer);
    CU_add_test(s, "headers", t_headers);
    CU_pSuite q = CU_add_suite("http_request", NULL, NULL);
    CU_add_test(q, "count", t_requests);
    CU_pSuite c = CU_add_suite("tcpclient", NULL, NULL);
    CU_add_test(c, "loopback", t_client);
    CU_add_test(c, "listen_queue", t_listen_queue);
    CU_add_test(c, "peer_rqueue", t_peer_rqueue);
    CU_add_test(c, "peer_reset", t_peer_reset);
    CU_pSuite u = CU_add_suite("util", NULL, NULL);
    CU_add_test(u, "die", t_die);
    kjson_add_suite();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return (int)failed;
}
