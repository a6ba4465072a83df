/* captures/tests/test_parsers.c - CUnit tests of the analysers' pure functions.
 * Build: make build/test-capture-parsers (with the common sources, -lcunit -lpcap)
 * main returns the number of failures. */
#define PA_NO_ANALYSER
#include "../pcap_analyse.c"
#include "../strace_parse.c"

#include <CUnit/Basic.h>

#define S(x) (const unsigned char *)(x), sizeof(x) - 1
#define C(x) (x), sizeof(x) - 1

static void t_classify(void)
{
    const char *r;
    /* same segment -> coalesced */
    CU_ASSERT_EQUAL(pa_classify(5, 5, 7, 100, 100, 200, 1, 1, &r), PA_COALESCED);
    /* body before the ACK (in capture order) -> sent-before-ack */
    CU_ASSERT_EQUAL(pa_classify(5, 6, 7, 100, 110, 150, 1, 1, &r), PA_SENT_BEFORE_ACK);
    CU_ASSERT_EQUAL(pa_classify(5, 6, -1, 100, 110, 0, 1, 0, &r), PA_SENT_BEFORE_ACK);
    /* 43 ms ACK, body 20 us later -> held */
    CU_ASSERT_EQUAL(pa_classify(5, 8, 7, 0, 43432, 43412, 1, 1, &r), PA_HELD_UNTIL_ACK);
    /* quick ACK 60 us, body 22 us later -> other (ratio rule) */
    CU_ASSERT_EQUAL(pa_classify(5, 8, 7, 0, 82, 60, 1, 1, &r), PA_OTHER);
    CU_ASSERT_PTR_NOT_NULL(r);
    CU_ASSERT_EQUAL(pa_classify(5, -1, 7, 0, 0, 60, 0, 1, &r), PA_OTHER);
}

static void t_http(void)
{
    static const char resp[] = "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong";
    static const char req2[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    static const char post[] = "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /ping HTTP/1.1\r\n\r\n";
    static const char chunk[] = "4\r\npong\r\n0\r\n\r\nX";
    size_t used = 0;
    struct hr_response r;
    CU_ASSERT_EQUAL(hr_parse_head(resp, sizeof resp - 1, 0, 0, &r), (long long)sizeof resp - 1 - 4);
    CU_ASSERT_EQUAL(r.content_length, 4);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_TRUE(pa_is_response_start(S(resp)));
    CU_ASSERT_EQUAL(hq_count_requests(S(req2), &used), 2);
    used = 0;
    CU_ASSERT_EQUAL(hq_count_requests(S(post), &used), 2);
    used = 0;
    CU_ASSERT_EQUAL(hq_count_requests(S("garbage\r\n\r\n"), &used), 0);
    /* the analyser's wire length of a chunked body: framing included */
    static const char chead[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    CU_ASSERT_EQUAL(hr_parse_head(chead, sizeof chead - 1, 0, 0, &r), (long long)sizeof chead - 1);
    CU_ASSERT_EQUAL(pa_body_wire_len(&r, S(chunk)), sizeof chunk - 2);
    {
        int64_t v[] = {1, 5, 9, 10};
        CU_ASSERT_EQUAL(pa_median_sorted(v, 3), 5);
        CU_ASSERT_EQUAL(pa_median_sorted(v, 4), 7);
    }
}

/* strace_parse_line over a whole C string. */
static enum st_kind parse(const char *line, struct st_line *L)
{
    return strace_parse_line(line, strlen(line), L);
}

/* line is one whole call that returned ret, named name (NULL: any); *L
 * keeps it for the checks that follow. */
static void expect_call(const char *line, struct st_line *L, const char *name, long ret)
{
    CU_ASSERT_EQUAL_FATAL(parse(line, L), ST_CALL);
    if (name)
        CU_ASSERT_STRING_EQUAL(L->name, name);
    CU_ASSERT_EQUAL(L->ret, ret);
}

static void t_strace_line(void)
{
    struct st_line L;
    const char *a = "5473  00:49:50.327219 sendto(4, \"HTTP/1.1 200 OK\\r\\n\\r\\n\", 19, 0, NULL, 0) = 19 <0.000198>";
    const char *b = "9186  00:52:22.554762 accept(3, NULL, NULL <unfinished ...>";
    const char *c = "9186  00:52:23.284460 <... accept resumed>) = 5 <0.729649>";
    const char *d = "77 00:00:01.000000 select(6, [5], NULL, NULL, {tv_sec=0, tv_usec=50000}) = 0 (Timeout) <0.050123>";
    const char *e = "5430  00:49:50.159379 close(3)          = 0 <0.000030>";
    const char *f = "[pid 12] 00:00:01.5 recvfrom(4, 0x7f, 4096, 0, NULL, NULL) = -1 EAGAIN (Resource temporarily unavailable) <0.000010>";
    expect_call(a, &L, "sendto", 19);
    CU_ASSERT_EQUAL(L.pid, 5473);
    CU_ASSERT_EQUAL(L.dur_us, 198);
    CU_ASSERT_EQUAL(parse(b, &L), ST_UNFINISHED);
    CU_ASSERT_EQUAL(parse(c, &L), ST_RESUMED);
    CU_ASSERT_EQUAL(L.ret, 5);
    expect_call(d, &L, NULL, 0);
    CU_ASSERT_EQUAL(L.dur_us, 50123);
    expect_call(e, &L, "close", 0);
    expect_call(f, &L, NULL, -1);
    CU_ASSERT_EQUAL(L.pid, 12);
    CU_ASSERT_EQUAL(parse("hello world", &L), ST_BAD);
    CU_ASSERT_EQUAL(parse("1 00:00:00.1 +++ exited with 0 +++", &L), ST_EXIT);
}

static void t_strace_args(void)
{
    const char *st[6];
    size_t sl[6], used;
    unsigned char out[64];
    const char *args = "5, [5], [5], NULL, {tv_sec=0, tv_usec=50000}";
    const char *wv = "4, [{iov_base=\"HTTP/1.1 200\\r\\n\", iov_len=14}, {iov_base=\"pong\", iov_len=4}], 2";
    size_t n;
    unsigned char *d;
    CU_ASSERT_EQUAL(st_split_args(args, strlen(args), st, sl, 6), 5);
    CU_ASSERT_EQUAL(st_timeout_ms(st[4], sl[4], 0), 50);
    CU_ASSERT_EQUAL(st_timeout_ms(C("{tv_sec=30, tv_nsec=0}"), 1), 30000);
    CU_ASSERT_EQUAL(st_timeout_ms(C("{0, 50000}"), 0), 50);
    CU_ASSERT_EQUAL(st_timeout_ms(C("NULL"), 0), -1);
    CU_ASSERT_TRUE(st_fdset_has(st[1], sl[1], 5));
    CU_ASSERT_FALSE(st_fdset_has(st[1], sl[1], 4));
    CU_ASSERT_TRUE(st_fdset_has(C("[{fd=7, events=POLLIN}]"), 7));
    CU_ASSERT_EQUAL(st_unescape(C("\"a\\r\\n\\x41\\101\\0\"..."), out, sizeof out, &used), 6);
    CU_ASSERT_EQUAL(memcmp(out, "a\r\nAA\0", 6), 0);
    CU_ASSERT_EQUAL(used, 20u);
    d = st_call_data("writev", wv, strlen(wv), &n);
    CU_ASSERT_EQUAL(n, 18u);
    CU_ASSERT_TRUE(d && memcmp(d, "HTTP/1.1 200\r\npong", 18) == 0);
    free(d);
    {
        static const unsigned char two[] = "GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab";
        size_t off = 0;
        CU_ASSERT_EQUAL(hq_count_requests(two, sizeof two - 1, &off), 1); /* POST body incomplete */
        CU_ASSERT_EQUAL(off, 18u);
    }
}

/* Numbers of any length: clamped, never undefined behaviour (run under
 * UBSan by make build/test-capture-parsers). */
static void t_strace_numbers(void)
{
    struct st_line L;
    const char *a = "1 00:00:01.000000 read(99999999999999999999, \"x\", 1) = 99999999999999999999 <99999999999999999999.5>";
    const char *b = "99999999999999999999 99999999999999999999:99999999999999999999:99999999999999999999.1 close(5) = -99999999999999999999 ENOENT (x) <0.1>";
    const char *c = "[pid 99999999999999999999] 00:00:01.1 accept4(3, NULL, NULL, SOCK_CLOEXEC) = 70003 <0.000010>";
    expect_call(a, &L, NULL, LONG_MAX);
    CU_ASSERT(L.dur_us > 0);
    expect_call(b, &L, NULL, -LONG_MAX);
    CU_ASSERT(L.t_us > 0);
    expect_call(c, &L, NULL, 70003); /* fds >= 65536 are fds like any other */
    CU_ASSERT_EQUAL(st_timeout_ms(C("{tv_sec=99999999999999999999, tv_usec=99999999999999999999}"), 0),
                    1000000000000l + 1000000);
    CU_ASSERT_EQUAL(st_timeout_ms(C("99999999999999999999"), 0), 1000000000);
    CU_ASSERT_TRUE(st_fdset_has(C("[{fd=70001, events=POLLIN}, {fd=99999999999999999999, events=POLLIN}]"), 70001));
    CU_ASSERT_TRUE(st_fdset_has(C("[1023 1024 65536]"), 65536));
}

/* What Wine's Winsock turns into on Linux (a win64 fphttpserver under Wine
 * sends with sendmsg/writev and waits with poll/ppoll/epoll).  These lines
 * are written from strace's formats, not captured from a Wine run. */
static void t_strace_wine(void)
{
    struct st_line L;
    const char *sm = "101   00:00:00.010800 sendmsg(57, {msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base=\"HTTP/1.1 200 OK\\r\\nContent-Length: 4\\r\\n\\r\\n\", iov_len=38}], msg_iovlen=1, msg_controllen=0, msg_flags=0}, MSG_NOSIGNAL) = 38 <0.000020>";
    const char *po = "101   00:00:00.011000 poll([{fd=5, events=POLLIN}], 1, 50) = 0 (Timeout) <0.050100>";
    const char *so = "101   00:00:00.010500 setsockopt(5, SOL_TCP, TCP_NODELAY, [1], 4) = 0 <0.000004>";
    const char *pp = "101 00:00:00.061200 ppoll([{fd=57, events=POLLIN}], 1, {tv_sec=0, tv_nsec=50000000}, NULL, 8) = 1 ([{fd=57, revents=POLLIN}], left {tv_sec=0, tv_nsec=7000000}) <0.043000>";
    const char *ew = "200 00:00:00.010000 epoll_wait(12, [{events=EPOLLIN, data={u32=30, u64=30}}], 128, 50) = 1 <0.009000>";
    const char *st[5];
    size_t sl[5], n;
    unsigned char *d;
    expect_call(sm, &L, "sendmsg", 38);
    d = st_call_data(L.name, L.args, L.args_len, &n);
    CU_ASSERT_TRUE(d && n == 38 && memcmp(d, "HTTP/1.1 200 OK\r\n", 17) == 0);
    free(d);
    expect_call(po, &L, NULL, 0);
    CU_ASSERT_EQUAL(L.detail_len, 9); /* "(Timeout)" */
    CU_ASSERT_EQUAL(st_split_args(L.args, L.args_len, st, sl, 5), 3);
    CU_ASSERT_EQUAL(st_timeout_ms(st[2], sl[2], 0), 50);
    CU_ASSERT_TRUE(st_fdset_has(st[0], sl[0], 5));
    expect_call(so, &L, NULL, 0);
    CU_ASSERT_EQUAL(st_split_args(L.args, L.args_len, st, sl, 5), 5);
    CU_ASSERT(sl[2] == 11 && memcmp(st[2], "TCP_NODELAY", 11) == 0);
    expect_call(pp, &L, NULL, 1);
    CU_ASSERT_EQUAL(st_split_args(L.args, L.args_len, st, sl, 5), 5);
    CU_ASSERT_EQUAL(st_timeout_ms(st[2], sl[2], 1), 50);
    expect_call(ew, &L, NULL, 1);
    CU_ASSERT_EQUAL(st_split_args(L.args, L.args_len, st, sl, 5), 4);
    CU_ASSERT_EQUAL(st_timeout_ms(st[3], sl[3], 1), 50);
}

int main(void)
{
    CU_pSuite s;
    unsigned fails;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("pcap_analyse", NULL, NULL);
    CU_add_test(s, "classify", t_classify);
    CU_add_test(s, "http", t_http);
    s = CU_add_suite("strace_analyse", NULL, NULL);
    CU_add_test(s, "parse_line", t_strace_line);
    CU_add_test(s, "args", t_strace_args);
    CU_add_test(s, "numbers", t_strace_numbers);
    CU_add_test(s, "wine", t_strace_wine);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return (int)fails;
}
