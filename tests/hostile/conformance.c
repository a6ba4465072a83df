/* tests/hostile/conformance.c - the RFC 9110 / RFC 9112 conformance table:
 * what the two RFCs ask of a server's connection management and message
 * framing, one case per requirement, run by the hostile driver
 * (build/hostile --conformance) against the clone and the real trunk.
 *
 * A case is a hostile case (struct hcase: runner, flags, input, the outcome
 * measured on the real trunk per defect state, which the clone must give
 * too) plus the RFC section, the requirement in one line, its level, and the
 * outcomes that meet it (patterns, cf_match).  The verdict is derived from the
 * outcome; "fixed_by" names the defects whose patches make the case conform
 * (a variant that fixes them claims the case, and must conform), "at_merge"
 * a defect filed outside this tree that no patch here claims yet (none
 * now: B10, Expect: 100-continue, was one until its fix joined the series).  Requests carry "Host: k" (RFC 9112 3.2) unless
 * the case is about Host.
 *
 * The outcome is the hostile one ("STATUS/LENB" per response, +C for
 * Connection: close, +K for Connection: keep-alive, then ";open" or
 * ";closed"), with runners of its own for what that cannot say: Expect
 * (what came before the body was sent), HEAD (content bytes after the
 * head), the keep-alive time-out and the stop (how an idle connection
 * ended), an incomplete body (zero-filled or not) and sequential requests
 * on one connection (how many were answered). */
#include "hostile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/http_response.h"
#include "../../common/tcpclient.h"

#define H "Host: k\r\n"
#define GET_H "GET /ping HTTP/1.1\r\n" H "\r\n"
#define IDLE_MS 250

/* ---- runners ------------------------------------------------------------ */

/* Expect: 100-continue.  The head goes first; what the server sends before
 * the body is the point (RFC 9110 10.1.1: a 100 or a final status, for an
 * HTTP/1.1 request; nothing for HTTP/1.0).  The body follows once the
 * server has read the head and gone quiet, as a client's time-out would
 * send it. */
static int expect_continue(struct ctx *c, const char *head, const char *body)
{
    struct rx x;
    char before[64], after[160];
    size_t n0;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    rx_xfer(&x, head, strlen(head), 0, 3000, IDLE_MS);
    srv_wait_consumed(c->s, x.fd, 1000);
    n0 = x.nr;
    rx_outcome(&x, before, sizeof before);
    if (strchr(before, ';'))
        *strchr(before, ';') = '\0'; /* what came, not yet how it ended */
    if (!rx_closed(&x))
        rx_xfer(&x, body, strlen(body), 0, 10000, hs_idle_for(c, IDLE_MS));
    rx_outcome(&x, after, sizeof after);
    snprintf(c->outcome, sizeof c->outcome, "before-body=%s,all=%s", before, after);
    rx_detail(&x, c->detail, sizeof c->detail);
    snprintf(c->detail + strlen(c->detail), sizeof c->detail - strlen(c->detail),
             "; %zu response(s) before the body was sent", n0);
    rx_free(&x);
    return 0;
}

static int run_expect_11(struct ctx *c)
{
    return expect_continue(c,
                           "POST /echo HTTP/1.1\r\n" H "Content-Length: 5\r\n"
                           "Expect: 100-continue\r\n\r\n",
                           "hello");
}

static int run_expect_10(struct ctx *c)
{
    return expect_continue(c,
                           "POST /echo HTTP/1.0\r\n" H "Content-Length: 5\r\n"
                           "Expect: 100-continue\r\n\r\n",
                           "hello");
}

/* HEAD: the response's head is parsed as a response to HEAD (no content
 * whatever its Content-Length says); every byte after it is content the
 * server should not have sent (and, on a kept connection, what the client
 * would read as the start of the next response). */
static int run_head(struct ctx *c)
{
    static const char in[] = "HEAD /ping HTTP/1.1\r\n" H "\r\n";
    struct rx x;
    struct hr_response r;
    long long n;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    rx_xfer(&x, in, sizeof in - 1, 0, 5000, IDLE_MS);
    n = x.len ? hr_parse_head(x.buf, x.len, 0, HR_REQ_HEAD, &r) : HR_INCOMPLETE;
    if (n < 0)
        snprintf(c->outcome, sizeof c->outcome, "-;%s", rx_closed(&x) ? "closed" : "open");
    else
        snprintf(c->outcome, sizeof c->outcome, "%d,content=%lluB;%s", r.status,
                 (unsigned long long)(x.len - (size_t)n), rx_closed(&x) ? "closed" : "open");
    snprintf(c->detail, sizeof c->detail, "%zu bytes received, head %lld; Content-Length %s",
             x.len, n, n >= 0 && r.framing == HR_BODY_LENGTH ? "present" : "absent");
    rx_free(&x);
    return 0;
}

/* A kept connection left idle past --keep-connection-timeout: does the
 * server close it, with a FIN (graceful, RFC 9112 9.5) or a reset, and not
 * before its own time-out (a lower bound the server set, not a guess)?
 * The bound counts from before the request was sent: the server's idle
 * time starts after its response (upstream's FLastRequestTime), which is
 * later, whereas the client may see the response late on a loaded machine
 * (counted from then, a real trunk's close once came "early").  Less one
 * millisecond: GetTickCount64's resolution. */
#define KEEP_TIMEOUT_MS 300
static int run_idle_close(struct ctx *c)
{
    struct rx x;
    int64_t t_sent;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    t_sent = tc_now_us();
    rx_xfer(&x, GET_H, sizeof GET_H - 1, 1, 3000, 0);
    if (!rx_closed(&x))
        rx_xfer(&x, NULL, 0, 0, KEEP_TIMEOUT_MS * 10, 0);
    snprintf(c->outcome, sizeof c->outcome, "%s;%s", x.nr == 1 ? "200/4B" : "-",
             !rx_closed(&x)                                 ? "open"
             : x.rst                                        ? "closed-by-rst"
             : x.t_end - t_sent < (KEEP_TIMEOUT_MS - 1) * 1000LL ? "closed-before-timeout"
                                                            : "closed-by-fin");
    snprintf(c->detail, sizeof c->detail, "closed %lld ms after the request was sent (time-out %d ms)",
             rx_closed(&x) ? (long long)(x.t_end - t_sent) / 1000 : -1LL, KEEP_TIMEOUT_MS);
    rx_free(&x);
    return 0;
}

/* 10 of 100 announced body bytes, then a half-close: the message is
 * incomplete (RFC 9112 6.3 item 5).  ",zero-filled": a response carried the
 * 100 bytes, the 90 that never came as zeros. */
static int run_body_incomplete(struct ctx *c)
{
    static const char in[] = "POST /echo HTTP/1.1\r\n" H "Content-Length: 100\r\n\r\n0123456789";
    static const char zero[90];
    struct rx x;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    rx_xfer(&x, in, sizeof in - 1, 0, 50, 30);
    rx_half_close(&x);
    rx_xfer(&x, NULL, 0, 0, 5000, 0);
    rx_outcome(&x, c->outcome, sizeof c->outcome);
    if (x.nr && x.r[0].body_len == 100)
        strncat(c->outcome,
                memcmp(x.buf + x.r[0].body_off + 10, zero, 90) == 0 ? ",zero-filled"
                                                                     : ",other-fill",
                sizeof c->outcome - strlen(c->outcome) - 1);
    rx_detail(&x, c->detail, sizeof c->detail);
    rx_free(&x);
    return 0;
}

/* Three requests on one connection, each sent once the previous one is
 * answered (not pipelined): how many were answered.  The deadline bounds a
 * wait for an answer that never comes (B6's pool mode). */
static int run_sequential(struct ctx *c)
{
    struct rx x;
    int i;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    for (i = 0; i < 3 && !rx_closed(&x) && x.nr == (size_t)i; i++)
        rx_xfer(&x, GET_H, sizeof GET_H - 1, (size_t)i + 1, 1500, 0);
    snprintf(c->outcome, sizeof c->outcome, "answered=%zu-of-3;%s", x.nr,
             rx_closed(&x) ? "closed" : "open");
    rx_detail(&x, c->detail, sizeof c->detail);
    rx_free(&x);
    return 0;
}

/* A kept connection, idle, when the server is stopped (SIGTERM): closed
 * with a FIN (graceful) or a reset? */
static int run_stop_idle(struct ctx *c)
{
    struct rx x;
    char why[256];
    long long ms;

    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&x), -1;
    rx_xfer(&x, GET_H, sizeof GET_H - 1, 1, 3000, 0);
    srv_stop(c->s, why, sizeof why, &ms);
    c->stopped = 1;
    if (!rx_closed(&x))
        rx_xfer(&x, NULL, 0, 0, 1000, 0);
    snprintf(c->outcome, sizeof c->outcome, "%s;%s,exit=%s", x.nr == 1 ? "200/4B" : "-",
             !rx_closed(&x) ? "open" : x.rst ? "closed-by-rst" : "closed-by-fin",
             why[0] ? "bad" : "0");
    snprintf(c->detail, sizeof c->detail, "server exit after %lld ms (%s)", ms,
             why[0] ? why : "status 0");
    rx_free(&x);
    return 0;
}

/* MaxLiveConnectionCount 1: a kept-alive connection takes the slot, then a
 * second one's GET gets the server's 503, read until the connection ends:
 * whether its body ended by its length or only by the close (B19). */
static int run_cap_503(struct ctx *c)
{
    struct rx k, x;
    int held;

    if (rx_open(&k, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&k), -1;
    rx_xfer(&k, GET_H, sizeof GET_H - 1, 1, 3000, 0);
    held = k.nr == 1 && !rx_closed(&k);
    if (rx_open(&x, c->s, c->why, sizeof c->why) != 0)
        return rx_free(&k), rx_free(&x), -1;
    rx_xfer(&x, GET_H, sizeof GET_H - 1, 0, 3000, 0);
    rx_outcome(&x, c->outcome, sizeof c->outcome);
    if (!held)
        strncat(c->outcome, ",slot-not-held", sizeof c->outcome - strlen(c->outcome) - 1);
    else if (x.nr)
        strncat(c->outcome, x.r[0].to_close ? ",end=close" : ",end=length",
                sizeof c->outcome - strlen(c->outcome) - 1);
    rx_detail(&x, c->detail, sizeof c->detail);
    rx_free(&x);
    rx_free(&k);
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

#define HORSE "--horse"
#define POST_ECHO(hdrs, body) "POST /echo HTTP/1.1\r\n" H hdrs "\r\n" body
#define CHUNKED_HELLO "5\r\nhello\r\n0\r\n\r\n"
#define E(...) { __VA_ARGS__ }
#define CASE(name, run, flags, in, idle, ...) {name, run, flags, in, 0, NULL, idle, 0, E(__VA_ARGS__)}
/* thread mode, keep-alive with a 300 ms time-out (KEEP_TIMEOUT_MS) */
#define KEEP_300 "--thread-mode", "thread", "--keep-connections", "--keep-connection-timeout", "300"
/* pool mode, keep-alive, the default AcceptIdleTimeout (B6's setting) */
#define POOL_KEEP "--thread-mode", "pool", "--keep-connections", "--keep-connection-timeout", "15000"
#define HOLD 400 /* silence that means "nothing more" where a request may sit unanswered */
/* --horse with one live connection at most: the next one gets the 503 */
#define HORSE_CAP_1 HORSE, "--max-live-connection-count", "1"

const struct cfcase cf_cases[] = {
    /* persistence (RFC 9112 9.3, RFC 9110 7.6.1) */
    {CASE("9112-9.3-persist-1.1-default", hs_run_one, {HORSE}, GET_H, 0, {0, "200/4B;open"}),
     "RFC 9112 9.3", "SHOULD",
     "an HTTP/1.1 request without a close option leaves the connection open after the response",
     "200/4B;open", NULL, NULL, NULL},
    {CASE("9112-9.3-http10-default-close", hs_run_one, {HORSE},
          "GET /ping HTTP/1.0\r\n" H "\r\n", 0, {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9112 9.3", "MUST",
     "an HTTP/1.0 request without keep-alive: the connection closes after the response",
     "200/4B;closed|200/4B+C;closed", NULL, NULL, NULL},
    {CASE("9112-9.3-http10-keepalive", hs_run_one, {HORSE},
          "GET /ping HTTP/1.0\r\n" H "Connection: keep-alive\r\n\r\n", 0, {0, "200/4B+K;open"}),
     "RFC 9112 9.3", "SHOULD",
     "HTTP/1.0 with Connection: keep-alive persists, and the response says keep-alive",
     "200/4B+K;open", NULL, NULL, NULL},
    {CASE("9110-7.6.1-connection-close", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "Connection: close\r\n\r\n", 0,
          {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9110 7.6.1", "MUST",
     "a request with the close option: the server closes after its response",
     "200/4B;closed|200/4B+C;closed", NULL, NULL, NULL},
    {CASE("9110-7.6.1-connection-close-case", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "Connection: CLOSE\r\n\r\n", 0,
          {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9110 7.6.1", "MUST", "connection options are case-insensitive: CLOSE closes",
     "200/4B;closed|200/4B+C;closed", NULL, NULL, NULL},
    {CASE("9110-7.6.1-connection-close-in-list", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "Connection: keep-alive, close\r\n\r\n", 0,
          {0, "200/4B;open"}, {FX(13), "200/4B;closed"}, {FX(4) | FX(13), "200/4B+C;closed"}),
     "RFC 9110 7.6.1", "MUST",
     "Connection is a list of options: close among others still closes",
     "200/4B;closed|200/4B+C;closed", "B13", NULL, NULL},
    {CASE("9112-9.6-close-announced", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "Connection: close\r\n\r\n", 0,
          {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9112 9.6", "SHOULD",
     "a server that will close sends Connection: close in that final response",
     "200/4B+C;closed", "B4", NULL, NULL},
    {CASE("9112-9.6-close-announced-http10", hs_run_one, {HORSE},
          "GET /ping HTTP/1.0\r\n" H "\r\n", 0, {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9112 9.6", "SHOULD",
     "an HTTP/1.1 response that ends an HTTP/1.0 exchange announces the close",
     "200/4B+C;closed", "B4", NULL, NULL},
    {CASE("9112-9.3-persist-sequential", run_sequential, {HORSE}, NULL, 0,
          {0, "answered=3-of-3;open"}),
     "RFC 9112 9.3", "SHOULD", "a kept connection serves request after request (thread mode)",
     "answered=3-of-3;open", NULL, NULL, NULL},
    {CASE("9112-9.3-persist-sequential-pool", run_sequential, {POOL_KEEP}, NULL, 0,
          {0, "answered=1-of-3;open"}, {FX(6), "answered=3-of-3;open"}),
     "RFC 9112 9.3", "SHOULD", "a kept connection serves request after request (pool mode)",
     "answered=3-of-3;open", "B6", NULL, NULL},
    {CASE("9112-9.3-persist-http12", hs_run_one, {HORSE}, "GET /ping HTTP/1.2\r\n" H "\r\n", 0,
          {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}, {FX(13), "200/4B;open"},
          {FX(4) | FX(13), "200/4B;open"}),
     "RFC 9112 9.3", "SHOULD",
     "HTTP/1.1 or later (a 1.2 request, read as the highest 1.x the server has) persists",
     "200/4B;open", "B13", NULL, NULL},
    {CASE("9112-9.5-idle-timeout-close", run_idle_close,
          {KEEP_300},
          NULL, 0, {0, "200/4B;closed-by-fin"}),
     "RFC 9112 9.5", "SHOULD",
     "an idle kept connection is timed out with a graceful close (FIN), after the time-out",
     "200/4B;closed-by-fin", NULL, NULL, NULL},
    {CASE("9112-9.6-stop-closes-idle", run_stop_idle, {HORSE}, NULL, 0,
          {0, "200/4B;closed-by-fin,exit=0"}),
     "RFC 9112 9.6", "SHOULD", "a server that stops closes its idle kept connections gracefully",
     "200/4B;closed-by-fin,exit=0", NULL, NULL, NULL},
    {CASE("9112-9.6-no-request-after-close", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "Connection: close\r\n\r\n" GET_H, HOLD, {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9112 9.6", "MUST",
     "after a request with close, no further request on that connection is processed",
     "200/4B;closed|200/4B+C;closed", NULL, NULL, NULL},
    {CASE("9112-9.6-no-request-after-http10", hs_run_one, {HORSE},
          "GET /ping HTTP/1.0\r\n" H "\r\n" GET_H, HOLD, {0, "200/4B;closed"}, {FX(4), "200/4B+C;closed"}),
     "RFC 9112 9.6", "MUST",
     "after an HTTP/1.0 request without keep-alive, no further request is processed",
     "200/4B;closed|200/4B+C;closed", NULL, NULL, NULL},
    /* pipelining (RFC 9112 9.3.2) */
    {CASE("9112-9.3.2-pipeline-3-get", hs_run_one, {HORSE}, GET_H GET_H GET_H, HOLD,
          {0, "200/4B;open"}, {FX(2), "200/4B*3;open"}),
     "RFC 9112 9.3.2", "MUST",
     "pipelined requests are each answered, in the order received",
     "200/4B*3;open", "B2", NULL, NULL},
    {CASE("9112-9.3.2-pipeline-after-cl-body", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: 5\r\n", "hello") GET_H, HOLD,
          {0, "200/5B;open"}, {FX(2) | FX(5), "200/5B,200/4B;open"}),
     "RFC 9112 9.3.2", "MUST",
     "a request pipelined after a Content-Length body is answered after it",
     "200/5B,200/4B;open", "B2 B5", NULL, NULL},
    {CASE("9112-9.3.2-pipeline-after-chunked-body", hs_run_one, {HORSE},
          POST_ECHO("Transfer-Encoding: chunked\r\n", CHUNKED_HELLO) GET_H, HOLD,
          {0, "200/0B;open"}, {FX(11), "501/0B+C;closed"}, {FX(2), "200/0B;closed"}),
     "RFC 9112 9.3.2", "MUST",
     "a request pipelined after a chunked body is answered after it",
     "200/5B,200/4B;open", NULL, NULL, "chunked request bodies not decoded (B11's fix answers 501)"},
    /* message body length (RFC 9112 6) */
    {CASE("9112-6.3-no-length-no-body", hs_run_one, {HORSE},
          "POST /echo HTTP/1.1\r\n" H "\r\n", 0, {0, "200/0B;open"}),
     "RFC 9112 6.3", "MUST",
     "a request with neither Content-Length nor Transfer-Encoding has no content",
     "200/0B;open", NULL, NULL, NULL},
    {CASE("9112-6.1-te-chunked-body", hs_run_one, {HORSE},
          POST_ECHO("Transfer-Encoding: chunked\r\n", CHUNKED_HELLO), 0, {0, "200/0B;open"},
          {FX(11), "501/0B+C;closed"}, {FX(2), "200/0B;closed"}),
     "RFC 9112 6.1", "MUST", "a server decodes a chunked request body",
     "200/5B;open", NULL, NULL, "chunked request bodies not decoded (B11's fix answers 501)"},
    {CASE("9112-6.3-te-and-cl", hs_run_one, {HORSE},
          POST_ECHO("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", CHUNKED_HELLO), 0,
          {0, "200/3B;open"}, {FX(11), "400/0B+C;closed"}, {FX(2) | FX(5), "200/3B,404/9B;closed"},
          {FX(2) | FX(4) | FX(5), "200/3B,404/9B+C;closed"},
          {FX(2) | FX(4) | FX(5) | FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.3", "MUST",
     "Transfer-Encoding overrides Content-Length; reject (400) or decode, then close",
     "400/~;closed|200/5B;closed|200/5B+C;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-te-not-final-chunked", hs_run_one, {HORSE},
          POST_ECHO("Transfer-Encoding: gzip\r\n", "hello"), 0, {0, "200/0B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.3", "MUST",
     "a request whose final transfer coding is not chunked: 400, then close",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.1-te-in-http10", hs_run_one, {HORSE},
          "POST /echo HTTP/1.0\r\n" H "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n"
          "Content-Length: 3\r\n\r\n" CHUNKED_HELLO, 0, {0, "200/3B+K;open"}, {FX(11), "400/0B+C;closed"},
          {FX(2) | FX(5), "200/3B+K,404/9B;closed"},
          {FX(2) | FX(4) | FX(5), "200/3B+K,404/9B+C;closed"},
          {FX(2) | FX(4) | FX(5) | FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.1", "MUST",
     "Transfer-Encoding in an HTTP/1.0 request: framing faulty, close after it",
     "400/~;closed|200/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-duplicate-differ", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: 22\r\nContent-Length: 0\r\n", GET_H), 0, {0, "200/0B;open"}, {FX(11), "400/0B+C;closed"},
          {FX(2), "200/0B,200/4B;open"}),
     "RFC 9112 6.3", "MUST",
     "differing Content-Length values are an unrecoverable error: 400, then close",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-list-same", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: 5, 5\r\n", "hello"), 0, {0, "200/0B;open"},
          {FX(11), "200/5B;open"}),
     "RFC 9112 6.3", "MUST",
     "a list of one repeated valid length is that length, or rejected (400)",
     "200/5B;open|400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-invalid", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: abc\r\n", ""), 0, {0, "200/0B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.3", "MUST", "an invalid Content-Length: 400, then close",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-negative", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: -5\r\n", ""), 0, {0, "200/0B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.3", "MUST", "a negative Content-Length is invalid: 400, then close",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-plus-sign", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: +5\r\n", "hello"), 0, {0, "200/5B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 6.3", "MUST", "Content-Length is digits only: +5 is invalid, 400 then close",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-6.3-cl-body-incomplete", run_body_incomplete, {HORSE}, NULL, 0,
          {0, "200/100B;closed,zero-filled"}, {FX(12), "-;closed"},
          {FX(12) | FX(16), "400/11B+C;closed"}),
     "RFC 9112 6.3", "MUST",
     "a body cut short by the client's close is incomplete: not processed, connection closed",
     "-;closed|400/~;closed", "B12", NULL, NULL},
    {CASE("9110-8.6-503-content-length", run_cap_503, {HORSE_CAP_1}, NULL, 0,
          {0, "503/59B+C;closed,end=close"}, {FX(19), "503/59B+C;closed,end=length"}),
     "RFC 9110 8.6", "SHOULD",
     "the 503 sent at MaxLiveConnectionCount, whose size is known, says its Content-Length",
     "503/~;closed,end=length", "B19", NULL, NULL},
    /* field lines (RFC 9112 5) */
    {CASE("9112-5.1-space-before-colon", hs_run_one, {HORSE},
          POST_ECHO("Content-Length : 5\r\n", "hello"), 0, {0, "200/0B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 5.1", "MUST", "whitespace between field name and colon: 400",
     "400/~;closed", "B11", NULL, NULL},
    {CASE("9112-5.2-obs-fold", hs_run_one, {HORSE},
          POST_ECHO("Content-Length:\r\n 5\r\n", "hello"), 0, {0, "200/0B;open"},
          {FX(11), "400/0B+C;closed"}),
     "RFC 9112 5.2", "MUST",
     "an obs-fold line is rejected (400) or joined to the field with a space",
     "400/~;closed|200/5B;open", "B11", NULL, NULL},
    {CASE("9112-5-field-no-colon", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H "X-No-Colon\r\n\r\n", 0, {0, "200/4B;open"}),
     "RFC 9112 5", "SHOULD", "a field line without a colon is invalid: 400 and close",
     "400/~;closed", NULL, NULL, NULL},
    {CASE("9112-5-field-empty-name", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H ": x\r\n\r\n", 0, {0, "200/4B;open"}),
     "RFC 9112 5", "SHOULD", "a field line with an empty name is invalid: 400 and close",
     "400/~;closed", NULL, NULL, NULL},
    /* message parsing (RFC 9112 2.2) and the request line (RFC 9112 3) */
    {CASE("9112-2.2-bare-lf", hs_run_one, {HORSE}, "GET /ping HTTP/1.1\n" H "\n", HOLD,
          {0, "-;closed"}, {FX(16), "400/11B+C;closed"}),
     "RFC 9112 2.2", "SHOULD",
     "bare LF line ends: accept them, or answer 400 and close; not silence",
     "200/4B;open|400/~;closed", "B16", NULL, NULL},
    {CASE("9112-2.2-leading-crlf", hs_run_one, {HORSE}, "\r\n" GET_H, 0, {0, "-;closed"},
          {FX(18), "200/4B;open"}),
     "RFC 9112 2.2", "SHOULD", "one empty line before the request line is ignored",
     "200/4B;open", "B18", NULL, NULL},
    {CASE("9112-3-invalid-request-line", hs_run_one, {HORSE}, "GET /ping FTP/1.0\r\n" H "\r\n", 0,
          {0, "-;closed"}, {FX(16), "400/11B+C;closed"}),
     "RFC 9112 3", "SHOULD", "an invalid request line is answered 400 (or 301), not a silent close",
     "400/~;closed|301/~", "B16", NULL, NULL},
    {CASE("9112-3.2-host-missing", hs_run_one, {HORSE}, "GET /ping HTTP/1.1\r\n\r\n", 0,
          {0, "200/4B;open"}),
     "RFC 9112 3.2", "MUST", "an HTTP/1.1 request without Host: 400",
     "400/~;closed|400/~;open", NULL, NULL, NULL},
    {CASE("9112-3.2-host-duplicate", hs_run_one, {HORSE},
          "GET /ping HTTP/1.1\r\n" H H "\r\n", 0, {0, "200/4B;open"}),
     "RFC 9112 3.2", "MUST", "a request with two Host fields: 400",
     "400/~;closed|400/~;open", NULL, NULL, NULL},
    {CASE("9112-3.2.2-absolute-form", hs_run_one, {HORSE},
          "GET http://k/ping HTTP/1.1\r\n" H "\r\n", 0, {0, "404/9B;open"},
          {FX(20), "200/4B;open"}),
     "RFC 9112 3.2.2", "MUST", "a server accepts the absolute-form of the request target",
     "200/4B;open", "B20", NULL, NULL},
    /* methods and expectations (RFC 9110 9.3, 10.1.1) */
    {CASE("9110-9.3.2-head-no-body", run_head, {HORSE}, NULL, 0, {0, "404,content=9B;open"},
          {FX(14), "404,content=0B;open"}),
     "RFC 9110 9.3.2", "MUST", "a response to HEAD carries no content",
     "~,content=0B;open", "B14", NULL, NULL},
    {CASE("9110-10.1.1-expect-100-continue", run_expect_11, {HORSE}, NULL, 0, {0, "before-body=-,all=200/5B;open"},
          {FX(10), "before-body=100/0B,all=100/0B,200/5B;open"}),
     "RFC 9110 10.1.1", "MUST",
     "Expect: 100-continue on HTTP/1.1: a 100 or a final status before the body is read",
     "before-body=100/0B,~~|before-body=[2-5]~~", "B10", NULL, NULL},
    {CASE("9110-10.1.1-expect-body-already-sent", hs_run_one, {HORSE},
          POST_ECHO("Content-Length: 5\r\nExpect: 100-continue\r\n", "hello"), 0, {0, "200/5B;open"}),
     "RFC 9110 10.1.1", "MUST",
     "Expect with the body already there: the final response (a 100 before it may be omitted)",
     "200/5B;open|100/0B,200/5B;open", NULL, NULL, NULL},
    {CASE("9110-10.1.1-expect-http10-ignored", run_expect_10, {HORSE}, NULL, 0, {0, "before-body=-,all=200/5B;closed"},
          {FX(4), "before-body=-,all=200/5B+C;closed"}),
     "RFC 9110 10.1.1", "MUST", "Expect: 100-continue in an HTTP/1.0 request is ignored",
     "before-body=-,all=200/5B~;closed", NULL, NULL, NULL},
};
const size_t cf_ncases = sizeof cf_cases / sizeof cf_cases[0];

/* A pattern of the table against an outcome: "~" stands for any characters
 * within one response (never a ','), "~~" for any characters, "[a-b]" for
 * one character in that range; everything else, '*' included (the count of
 * equal responses), is itself. */
static int cf_match(const char *p, const char *s)
{
    if (!*p)
        return !*s;
    if (p[0] == '~' && p[1] == '~') {
        for (;; s++) {
            if (cf_match(p + 2, s))
                return 1;
            if (!*s)
                return 0;
        }
    }
    if (*p == '~') {
        for (;; s++) {
            if (cf_match(p + 1, s))
                return 1;
            if (!*s || *s == ',')
                return 0;
        }
    }
    if (p[0] == '[' && p[1] && p[2] == '-' && p[3] && p[4] == ']')
        return *s >= p[1] && *s <= p[3] && cf_match(p + 5, s + 1);
    return *p == *s && cf_match(p + 1, s + 1);
}

const char *cf_verdict(const struct cfcase *k, const char *outcome)
{
    char pat[256];
    const char *p = k->conforms;

    while (*p) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);

        snprintf(pat, sizeof pat, "%.*s", (int)l, p);
        if (cf_match(pat, outcome))
            return "conforms";
        if (!e)
            break;
        p = e + 1;
    }
    return strcmp(k->level, "MUST") == 0 ? "violates (MUST)" : "violates (SHOULD)";
}

/* ---- --describe ----------------------------------------------------------- */

static void json_str(const char *s, size_t n)
{
    size_t i;

    putchar('"');
    for (i = 0; s && i < n; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\r')
            fputs("\\r", stdout);
        else if (ch == '\n')
            fputs("\\n", stdout);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_field(const char *key, const char *v, int last)
{
    printf("    \"%s\": ", key);
    if (v)
        json_str(v, strlen(v));
    else
        fputs("null", stdout);
    fputs(last ? "\n" : ",\n", stdout);
}

/* The input a runner sends, for the table (the special runners' own). */
static const char *runner_input(const struct cfcase *k, size_t *len)
{
    static const struct {
        int (*run)(struct ctx *);
        const char *in;
    } own[] = {
        {run_expect_11, "POST /echo HTTP/1.1\r\n" H "Content-Length: 5\r\nExpect: 100-continue\r\n"
                        "\r\n(then, once the server is quiet) hello"},
        {run_expect_10, "POST /echo HTTP/1.0\r\n" H "Content-Length: 5\r\nExpect: 100-continue\r\n"
                        "\r\n(then, once the server is quiet) hello"},
        {run_head, "HEAD /ping HTTP/1.1\r\n" H "\r\n"},
        {run_idle_close, GET_H "(then silence)"},
        {run_sequential, GET_H "(3 times, each once the previous one is answered)"},
        {run_stop_idle, GET_H "(then the server gets SIGTERM)"},
        {run_body_incomplete,
         "POST /echo HTTP/1.1\r\n" H "Content-Length: 100\r\n\r\n0123456789(then half-close)"},
    };
    size_t i;

    for (i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].run == k->c.run)
            return *len = strlen(own[i].in), own[i].in;
    if (!k->c.in)
        return *len = 0, "";
    *len = k->c.inlen ? k->c.inlen : strlen(k->c.in);
    return k->c.in;
}

void cf_describe(uint64_t state)
{
    size_t i, j, len;

    printf("[\n");
    for (i = 0; i < cf_ncases; i++) {
        const struct cfcase *k = &cf_cases[i];
        const char *in = runner_input(k, &len);
        char flags[256] = "";

        for (j = 0; j < 16 && k->c.flags[j]; j++)
            snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%s", j ? " " : "",
                     k->c.flags[j]);
        printf("  {\n");
        json_field("case", k->c.name, 0);
        json_field("section", k->section, 0);
        json_field("level", k->level, 0);
        json_field("requirement", k->requirement, 0);
        json_field("conforms", k->conforms, 0);
        json_field("fixed_by", k->fixed_by, 0);
        json_field("at_merge", k->at_merge, 0);
        json_field("candidate", k->candidate, 0);
        json_field("flags", flags, 0);
        json_field("expected", hs_expected(&k->c, state), 0);
        printf("    \"request\": ");
        json_str(in, len);
        printf("\n  }%s\n", i + 1 < cf_ncases ? "," : "");
    }
    printf("]\n");
}
