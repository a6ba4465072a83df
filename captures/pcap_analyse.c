/* pcap_analyse.c - classify how HTTP responses leave a server, from a pcap.
 *
 * Build: make build/pcap-analyse (with the common sources, -lpcap).
 *
 * Usage: pcap-analyse [--port P] [--json] [--ladder N] FILE.pcap
 *
 * See pcap_analyse.h for the classification rule. Exit 0 ok, 1 bad input,
 * 2 usage error.
 */
#include "pcap_analyse.h"

#include "../common/http_request.h"
#include "../common/http_response.h"
#include "../common/kjson.h"
#include "../common/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Pure helpers                                                        */
/* ------------------------------------------------------------------ */

const char *pa_class_name(enum pa_class c)
{
    switch (c) {
    case PA_COALESCED: return "coalesced";
    case PA_SENT_BEFORE_ACK: return "sent-before-ack";
    case PA_HELD_UNTIL_ACK: return "held-until-ack";
    default: return "other";
    }
}

enum pa_class pa_classify(long idx_hdr, long idx_body, long idx_ack,
                          int64_t t_hdr, int64_t t_body, int64_t t_ack,
                          int has_body, int has_ack, const char **reason)
{
    *reason = NULL;
    if (!has_body) {
        *reason = "no body bytes";
        return PA_OTHER;
    }
    if (idx_body == idx_hdr)
        return PA_COALESCED;
    if (idx_body < idx_hdr) {
        *reason = "body segment before header segment";
        return PA_OTHER;
    }
    if (!has_ack || idx_body < idx_ack)
        return PA_SENT_BEFORE_ACK;
    {
        int64_t ack_delay = t_ack - t_hdr;
        int64_t gap = t_body - t_ack;
        if (gap < 0)
            gap = 0;
        if (gap * PA_HELD_RATIO < ack_delay)
            return PA_HELD_UNTIL_ACK;
    }
    *reason = "ack not delayed: body gap not small relative to ack delay";
    return PA_OTHER;
}

int pa_is_response_start(const unsigned char *buf, size_t len)
{
    return len >= 7 && memcmp(buf, "HTTP/1.", 7) == 0;
}

/* Body bytes on the wire after a head (chunk framing included), as far as
 * the capture holds them; a Content-Length body counts in full even when the
 * capture ends early, and an unfinished chunked body counts 0. */
size_t pa_body_wire_len(const struct hr_response *h, const unsigned char *p, size_t avail)
{
    struct hr_body b;
    if (h->framing == HR_BODY_LENGTH)
        return (size_t)h->content_length;
    hr_body_init(&b, h, HR_BODY_UNLIMITED);
    long long used = hr_body_feed(&b, (const char *)p, avail, NULL, 0, NULL);
    if (used < 0 || (h->framing == HR_BODY_CHUNKED && !b.done))
        return 0;
    return (size_t)used;
}

int64_t pa_median_sorted(const int64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    if (n % 2)
        return v[n / 2];
    return (v[n / 2 - 1] + v[n / 2]) / 2;
}

#ifndef PA_NO_ANALYSER

#include <pcap/pcap.h>
#include <getopt.h>

/* ------------------------------------------------------------------ */
/* Packets and connections                                             */
/* ------------------------------------------------------------------ */

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10

struct endpoint {
    int family;               /* 4 or 6 */
    unsigned char addr[16];
    uint16_t port;
};

struct pkt {
    int conn;                 /* connection index */
    int from0;                /* 1 if sent by the connection's endpoint 0 */
    int64_t ts;               /* µs since the first packet */
    uint32_t seq, ack;
    uint8_t flags;
    uint32_t len;
    unsigned char *data;      /* payload copy (len bytes) */
};

struct stream {               /* one direction's reassembled bytes */
    int have_base;
    uint32_t base;            /* sequence number of stream byte 0 */
    unsigned char *buf;
    unsigned char *filled;
    size_t len;
};

struct response {
    int conn, index;          /* index within the connection, 1-based */
    size_t start, head_end, body_len;
    int status;
    long i_hdr, i_body, i_ack;  /* packet indexes, -1 if none */
    enum pa_class cls;
    const char *reason;
};

struct conn {
    struct endpoint ep[2];
    int server;               /* 0 or 1: which endpoint is the server, -1 unknown */
    int syn_seen, synack_from;  /* synack_from: endpoint that sent SYN-ACK, -1 */
    uint32_t isn[2];
    int have_isn[2];
    int closed;               /* FIN or RST seen */
    int requests, responses;
    int fin[2], rst[2];       /* by endpoint */
    struct stream st[2];      /* bytes sent by endpoint i */
};

static struct pkt *pkts;
static size_t npkts, cappkts;
static struct conn *conns;
static size_t nconns, capconns;
static struct response *resps;
static size_t nresps, capresps;
static const char *prog_file = "";

static int ep_eq(const struct endpoint *a, const struct endpoint *b)
{
    size_t al = a->family == 6 ? 16 : 4;
    return a->family == b->family && a->port == b->port && memcmp(a->addr, b->addr, al) == 0;
}

static int find_conn(const struct endpoint *src, const struct endpoint *dst,
                     uint8_t flags, uint32_t seq, int *from0)
{
    size_t i;
    int is_syn = (flags & TH_SYN) && !(flags & TH_ACK);
    for (i = nconns; i-- > 0;) {
        struct conn *c = &conns[i];
        int f;
        if (ep_eq(&c->ep[0], src) && ep_eq(&c->ep[1], dst))
            f = 1;
        else if (ep_eq(&c->ep[1], src) && ep_eq(&c->ep[0], dst))
            f = 0;
        else
            continue;
        /* a new SYN with another ISN on a finished tuple: a new connection */
        if (is_syn && c->closed && c->have_isn[f ? 0 : 1] && c->isn[f ? 0 : 1] != seq)
            break;
        *from0 = f;
        return (int)i;
    }
    if (nconns == capconns) {
        capconns = capconns ? capconns * 2 : 16;
        conns = xrealloc(conns, capconns * sizeof *conns);
    }
    memset(&conns[nconns], 0, sizeof conns[nconns]);
    conns[nconns].ep[0] = *src;
    conns[nconns].ep[1] = *dst;
    conns[nconns].server = -1;
    conns[nconns].synack_from = -1;
    *from0 = 1;
    return (int)nconns++;
}

static uint16_t be16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Network-layer offset and ethertype-like protocol for a link type.
 * Returns 0 and sets *off, *ipver (4/6, 0 = not IP) or -1 if unsupported. */
static int link_decode(int dlt, const unsigned char *p, size_t caplen, size_t *off, int *ipver)
{
    uint32_t af;
    uint16_t et;
    *ipver = 0;
    switch (dlt) {
    case DLT_EN10MB:
        if (caplen < 14)
            return 0;
        et = be16(p + 12);
        *off = 14;
        while ((et == 0x8100 || et == 0x88a8) && caplen >= *off + 4) {
            et = be16(p + *off + 2);
            *off += 4;
        }
        break;
    case DLT_NULL:
    case DLT_LOOP:
        if (caplen < 4)
            return 0;
        if (dlt == DLT_LOOP)
            af = be32(p);
        else
            memcpy(&af, p, 4);   /* host byte order of the writer; try both */
        if (af > 0xffff)
            af = __builtin_bswap32(af);
        *off = 4;
        *ipver = af == 2 ? 4 : (af == 10 || af == 24 || af == 28 || af == 30) ? 6 : 0;
        return 0;
    case DLT_LINUX_SLL:
        if (caplen < 16)
            return 0;
        et = be16(p + 14);
        *off = 16;
        break;
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
        if (caplen < 20)
            return 0;
        et = be16(p);
        *off = 20;
        break;
#endif
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
        *off = 0;
        if (caplen >= 1)
            *ipver = p[0] >> 4;
        if (*ipver != 4 && *ipver != 6)
            *ipver = 0;
        return 0;
    default:
        return -1;
    }
    *ipver = et == 0x0800 ? 4 : et == 0x86dd ? 6 : 0;
    return 0;
}

/* Parse IP + TCP; returns 1 if a TCP segment was decoded. */
static int ip_tcp_decode(const unsigned char *p, size_t len, int ipver,
                         struct endpoint *src, struct endpoint *dst,
                         const unsigned char **tcp, size_t *tcplen)
{
    size_t ihl, tot;
    int proto;
    memset(src, 0, sizeof *src);
    memset(dst, 0, sizeof *dst);
    if (ipver == 4) {
        if (len < 20 || (p[0] >> 4) != 4)
            return 0;
        ihl = (size_t)(p[0] & 0x0f) * 4;
        tot = be16(p + 2);
        if (ihl < 20 || tot < ihl || len < ihl)
            return 0;
        if ((be16(p + 6) & 0x1fff) != 0)  /* fragment: not handled */
            return 0;
        proto = p[9];
        src->family = dst->family = 4;
        memcpy(src->addr, p + 12, 4);
        memcpy(dst->addr, p + 16, 4);
        if (tot > len)
            tot = len;   /* snaplen-truncated */
    } else if (ipver == 6) {
        if (len < 40 || (p[0] >> 4) != 6)
            return 0;
        proto = p[6];
        ihl = 40;
        tot = 40 + (size_t)be16(p + 4);
        src->family = dst->family = 6;
        memcpy(src->addr, p + 8, 16);
        memcpy(dst->addr, p + 24, 16);
        /* skip common extension headers */
        while ((proto == 0 || proto == 43 || proto == 60) && len >= ihl + 8) {
            proto = p[ihl];
            ihl += ((size_t)p[ihl + 1] + 1) * 8;
        }
        if (tot > len)
            tot = len;
        if (ihl > tot)
            return 0;
    } else {
        return 0;
    }
    if (proto != 6 || tot - ihl < 20)
        return 0;
    *tcp = p + ihl;
    *tcplen = tot - ihl;
    src->port = be16(*tcp);
    dst->port = be16(*tcp + 2);
    return 1;
}

static void add_packet(int conn, int from0, int64_t ts, uint32_t seq, uint32_t ack,
                       uint8_t flags, const unsigned char *data, uint32_t len)
{
    struct pkt *k;
    if (npkts == cappkts) {
        cappkts = cappkts ? cappkts * 2 : 256;
        pkts = xrealloc(pkts, cappkts * sizeof *pkts);
    }
    k = &pkts[npkts++];
    k->conn = conn;
    k->from0 = from0;
    k->ts = ts;
    k->seq = seq;
    k->ack = ack;
    k->flags = flags;
    k->len = len;
    k->data = NULL;
    if (len) {
        k->data = xrealloc(NULL, len);
        memcpy(k->data, data, len);
    }
}

/* The TCP segment at p (a captured frame) into pkts/conns. */
static void take_segment(const struct pcap_pkthdr *h, const unsigned char *p, size_t off, int ipver, int64_t *t0,
                         int *first)
{
    size_t tcplen, hl;
    int from0, ci;
    struct endpoint src, dst;
    const unsigned char *tcp;
    int64_t ts = (int64_t)h->ts.tv_sec * 1000000 + h->ts.tv_usec;
    if (!ip_tcp_decode(p + off, h->caplen - off, ipver, &src, &dst, &tcp, &tcplen))
        return;
    hl = (size_t)(tcp[12] >> 4) * 4;
    if (hl < 20 || hl > tcplen)
        return;
    if (*first) {
        *t0 = ts;
        *first = 0;
    }
    uint32_t seq = be32(tcp + 4), ack = be32(tcp + 8);
    uint8_t flags = tcp[13];
    ci = find_conn(&src, &dst, flags, seq, &from0);
    add_packet(ci, from0, ts - *t0, seq, ack, flags, tcp + hl, (uint32_t)(tcplen - hl));
    struct conn *c = &conns[ci];
    int e = from0 ? 0 : 1;
    if (flags & TH_SYN) {
        c->syn_seen = 1;
        c->isn[e] = seq;
        c->have_isn[e] = 1;
        if (flags & TH_ACK)
            c->synack_from = e;
    }
    if (flags & (TH_FIN | TH_RST))
        c->closed = 1;
}

/* Every TCP segment of an open capture: 0, or -1 with the reason in err
 * (bad input is a clear one-line outcome, never a crash or a guess). */
static int read_capture(pcap_t *pc, const char *file, char *err, size_t errlen)
{
    struct pcap_pkthdr *h;
    const unsigned char *p;
    int64_t t0 = 0;
    int first = 1, rc, dlt = pcap_datalink(pc);
    while ((rc = pcap_next_ex(pc, &h, &p)) == 1) {
        size_t off;
        int ipver;
        if (link_decode(dlt, p, h->caplen, &off, &ipver) < 0) {
            snprintf(err, errlen, "pcap-analyse %s: unsupported link type %d (%s)", file, dlt,
                     pcap_datalink_val_to_name(dlt) ? pcap_datalink_val_to_name(dlt) : "?");
            return -1;
        }
        if (ipver && off <= h->caplen)
            take_segment(h, p, off, ipver, &t0, &first);
    }
    if (rc == PCAP_ERROR) {
        snprintf(err, errlen, "pcap_next_ex %s: %s", file, pcap_geterr(pc));
        return -1;
    }
    if (npkts == 0) {
        snprintf(err, errlen, "pcap-analyse %s: no TCP segments in capture", file);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Analysis                                                            */
/* ------------------------------------------------------------------ */

/* Longest byte stream reassembled per direction; a segment beyond it (or a
 * sequence number far off) is ignored.  The fuzz target lowers it so one
 * input cannot cost seconds of page faults. */
#ifndef MAX_STREAM
#define MAX_STREAM (64u << 20)
#endif

static int64_t rel_off(const struct stream *s, uint32_t seq)
{
    return (int64_t)(int32_t)(seq - s->base);
}

static void build_streams(size_t ci)
{
    struct conn *c = &conns[ci];
    size_t i;
    int e;
    for (e = 0; e < 2; e++) {
        struct stream *s = &c->st[e];
        if (c->have_isn[e]) {
            s->have_base = 1;
            s->base = c->isn[e] + 1;
        }
    }
    for (i = 0; i < npkts; i++) {
        struct pkt *k = &pkts[i];
        struct stream *s;
        int64_t off;
        if ((size_t)k->conn != ci || !k->len)
            continue;
        s = &c->st[k->from0 ? 0 : 1];
        if (!s->have_base) {
            s->have_base = 1;
            s->base = k->seq;
        }
        off = rel_off(s, k->seq);
        if (off < 0 || off + k->len > MAX_STREAM)
            continue;
        if ((size_t)off + k->len > s->len) {
            size_t nl = (size_t)off + k->len;
            s->buf = xrealloc(s->buf, nl);
            s->filled = xrealloc(s->filled, nl);
            memset(s->filled + s->len, 0, nl - s->len);
            s->len = nl;
        }
        {
            size_t j;
            for (j = 0; j < k->len; j++)
                if (!s->filled[off + j]) {
                    s->buf[off + j] = k->data[j];
                    s->filled[off + j] = 1;
                }
        }
    }
}

/* Contiguous filled prefix from offset o. */
static size_t filled_run(const struct stream *s, size_t o)
{
    size_t e = o;
    while (e < s->len && s->filled[e])
        e++;
    return e - o;
}

static void decide_server(size_t ci, int port)
{
    struct conn *c = &conns[ci];
    size_t i;
    if (port > 0) {
        if (c->ep[0].port == port)
            c->server = 0;
        else if (c->ep[1].port == port)
            c->server = 1;
        return;
    }
    if (c->synack_from >= 0) {
        c->server = c->synack_from;
        return;
    }
    /* mid-stream capture: the side whose data starts with HTTP/1. */
    for (i = 0; i < npkts; i++) {
        struct pkt *k = &pkts[i];
        if ((size_t)k->conn == ci && pa_is_response_start(k->data, k->len)) {
            c->server = k->from0 ? 0 : 1;
            return;
        }
    }
}

/* First packet (capture order) from endpoint e of connection ci covering
 * stream byte o. */
static long first_covering(size_t ci, int e, size_t o)
{
    const struct stream *s = &conns[ci].st[e];
    size_t i;
    for (i = 0; i < npkts; i++) {
        const struct pkt *k = &pkts[i];
        int64_t off;
        if ((size_t)k->conn != ci || (k->from0 ? 0 : 1) != e || !k->len)
            continue;
        off = rel_off(s, k->seq);
        if (off >= 0 && (size_t)off <= o && o < (size_t)off + k->len)
            return (long)i;
    }
    return -1;
}

/* First packet from endpoint e after index `after` with ACK covering
 * byte offset `upto` (exclusive) of the other side's stream. */
static long first_ack(size_t ci, int e, long after, size_t upto)
{
    const struct stream *s = &conns[ci].st[!e];
    size_t i;
    for (i = (size_t)(after + 1); i < npkts; i++) {
        const struct pkt *k = &pkts[i];
        if ((size_t)k->conn != ci || (k->from0 ? 0 : 1) != e || !(k->flags & TH_ACK))
            continue;
        if (rel_off(s, k->ack) >= (int64_t)upto)
            return (long)i;
    }
    return -1;
}

static void add_response(const struct response *r)
{
    if (nresps == capresps) {
        capresps = capresps ? capresps * 2 : 64;
        resps = xrealloc(resps, capresps * sizeof *resps);
    }
    resps[nresps++] = *r;
}

/* FIN and RST counts by endpoint. */
static void count_closes(size_t ci)
{
    struct conn *c = &conns[ci];
    for (size_t i = 0; i < npkts; i++)
        if ((size_t)pkts[i].conn == ci) {
            int e = pkts[i].from0 ? 0 : 1;
            c->fin[e] += (pkts[i].flags & TH_FIN) != 0;
            c->rst[e] += (pkts[i].flags & TH_RST) != 0;
        }
}

/* The response whose head [o, o+head) the reader accepted: where its
 * header, body and the client's ACK left, and its class. */
static void add_classified(size_t ci, int idx, size_t o, size_t head, const struct hr_response *hr, size_t run)
{
    struct conn *c = &conns[ci];
    const struct stream *s = &c->st[c->server];
    struct response r;
    memset(&r, 0, sizeof r);
    r.conn = (int)ci + 1;
    r.index = idx;
    r.start = o;
    r.head_end = o + head;
    r.status = hr->status;
    r.body_len = pa_body_wire_len(hr, s->buf + r.head_end, run - head);
    r.i_hdr = first_covering(ci, c->server, r.head_end - 1);
    r.i_body = r.body_len ? first_covering(ci, c->server, r.head_end) : -1;
    r.i_ack = first_ack(ci, !c->server, r.i_hdr, r.head_end);
    int64_t t_h = r.i_hdr >= 0 ? pkts[r.i_hdr].ts : 0;
    int64_t t_b = r.i_body >= 0 ? pkts[r.i_body].ts : 0;
    int64_t t_a = r.i_ack >= 0 ? pkts[r.i_ack].ts : 0;
    r.cls = pa_classify(r.i_hdr, r.i_body, r.i_ack, t_h, t_b, t_a, r.i_body >= 0, r.i_ack >= 0, &r.reason);
    add_response(&r);
    c->responses++;
}

/* Offset of the next "HTTP/1." within [o+1, o+run), or 0 if none. */
static size_t resync(const struct stream *s, size_t o, size_t run)
{
    for (size_t j = o + 1; j + 7 <= o + run; j++)
        if (pa_is_response_start(s->buf + j, run - (j - o)))
            return j;
    return 0;
}

/* Every response in the server's contiguous byte stream, in order. */
static void scan_responses(size_t ci)
{
    static struct hr_response hr; /* big (headers array) */
    const struct stream *s = &conns[ci].st[conns[ci].server];
    size_t o = 0, run;
    int idx = 0;
    while (o < s->len && (run = filled_run(s, o)) > 0) {
        if (!pa_is_response_start(s->buf + o, run)) {
            if (!(o = resync(s, o, run)))
                break;
            continue;
        }
        long long head = hr_parse_head((const char *)s->buf + o, run, 0, 0, &hr);
        if (head == HR_INCOMPLETE)
            break;
        if (head < 0) {
            o++; /* not a response after all: resync past it */
            continue;
        }
        add_classified(ci, ++idx, o, (size_t)head, &hr, run);
        o = resps[nresps - 1].head_end + resps[nresps - 1].body_len;
    }
}

static void analyse_conn(size_t ci)
{
    struct conn *c = &conns[ci];
    size_t o = 0;
    build_streams(ci);
    count_closes(ci);
    if (c->server >= 0) {
        c->requests = hq_count_requests(c->st[!c->server].buf, filled_run(&c->st[!c->server], 0), &o);
        scan_responses(ci);
    }
    /* the ladder needs only the streams' base; free the bytes now so one
     * connection at a time holds stream memory, whatever the capture */
    for (int e = 0; e < 2; e++) {
        free(c->st[e].buf);
        free(c->st[e].filled);
        c->st[e].buf = NULL;
        c->st[e].filled = NULL;
        c->st[e].len = 0;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static void ep_str(const struct endpoint *e, char *out, size_t n)
{
    char a[64];
    if (e->family == 4)
        snprintf(a, sizeof a, "%u.%u.%u.%u", e->addr[0], e->addr[1], e->addr[2], e->addr[3]);
    else {
        size_t i, o = 0;
        for (i = 0; i < 16; i += 2)
            o += (size_t)snprintf(a + o, sizeof a - o, "%s%x", i ? ":" : "", be16(e->addr + i));
    }
    snprintf(out, n, e->family == 6 ? "[%s]:%u" : "%s:%u", a, e->port);
}

struct totals {
    int connections, syns, requests, responses, cls[PA_NCLASSES];
    int fin_server, fin_client, rst_server, rst_client;
    size_t nd;
    int64_t *delays;
};

static void totals(struct totals *t)
{
    size_t i;
    memset(t, 0, sizeof *t);
    t->delays = xrealloc(NULL, (nresps + 1) * sizeof *t->delays);
    for (i = 0; i < npkts; i++)
        if ((pkts[i].flags & (TH_SYN | TH_ACK)) == TH_SYN)
            t->syns++;
    for (i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        t->connections++;
        t->requests += c->requests;
        t->responses += c->responses;
        if (c->server >= 0) {
            t->fin_server += c->fin[c->server];
            t->fin_client += c->fin[!c->server];
            t->rst_server += c->rst[c->server];
            t->rst_client += c->rst[!c->server];
        }
    }
    for (i = 0; i < nresps; i++) {
        t->cls[resps[i].cls]++;
        if (resps[i].i_ack >= 0 && resps[i].i_hdr >= 0)
            t->delays[t->nd++] = pkts[resps[i].i_ack].ts - pkts[resps[i].i_hdr].ts;
    }
    qsort(t->delays, t->nd, sizeof *t->delays, cmp_i64);
}

/* The value, or null when idx < 0 (no such packet). */
static json_t *opt_i64(long idx, int64_t v)
{
    return idx < 0 ? json_null() : json_integer(v);
}

static void json_connections(struct kj_rows *w)
{
    kj_rows_list_begin(w, "connection_list");
    for (size_t i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        char a[80], b[80];
        int se = c->server < 0 ? 1 : c->server;
        json_t *o = json_object();
        ep_str(&c->ep[!se], a, sizeof a);
        ep_str(&c->ep[se], b, sizeof b);
        kj_set(o, "conn", json_integer((json_int_t)i + 1));
        kj_set(o, "client", kj_name(a));
        kj_set(o, "server", kj_name(b));
        kj_set(o, "server_known", json_boolean(c->server >= 0));
        kj_set(o, "syn_seen", json_boolean(c->syn_seen));
        kj_set(o, "requests", json_integer(c->requests));
        kj_set(o, "responses", json_integer(c->responses));
        kj_set(o, "fin_server", json_integer(c->fin[se]));
        kj_set(o, "fin_client", json_integer(c->fin[!se]));
        kj_set(o, "rst_server", json_integer(c->rst[se]));
        kj_set(o, "rst_client", json_integer(c->rst[!se]));
        kj_rows_item(w, o);
    }
    kj_rows_list_end(w);
}

static void json_responses(struct kj_rows *w)
{
    kj_rows_list_begin(w, "per_response");
    for (size_t i = 0; i < nresps; i++) {
        struct response *r = &resps[i];
        int64_t th = r->i_hdr >= 0 ? pkts[r->i_hdr].ts : 0;
        int64_t tb = r->i_body >= 0 ? pkts[r->i_body].ts : 0;
        int64_t ta = r->i_ack >= 0 ? pkts[r->i_ack].ts : 0;
        json_t *o = json_object();
        kj_set(o, "conn", json_integer(r->conn));
        kj_set(o, "index", json_integer(r->index));
        kj_set(o, "status", json_integer(r->status));
        kj_set(o, "class", kj_name(pa_class_name(r->cls)));
        if (r->reason)
            kj_set(o, "reason", kj_name(r->reason));
        kj_set(o, "header_len", json_integer((json_int_t)(r->head_end - r->start)));
        kj_set(o, "body_len", json_integer((json_int_t)r->body_len));
        kj_set(o, "t_header_us", opt_i64(r->i_hdr, th));
        kj_set(o, "t_ack_us", opt_i64(r->i_ack, ta));
        kj_set(o, "t_body_us", opt_i64(r->i_body, tb));
        kj_set(o, "ack_delay_us", opt_i64(r->i_ack >= 0 && r->i_hdr >= 0 ? 0 : -1, ta - th));
        kj_set(o, "body_after_ack_us", opt_i64(r->i_ack >= 0 && r->i_body >= 0 ? 0 : -1, tb - ta));
        kj_rows_item(w, o);
    }
    kj_rows_list_end(w);
}

/* {"n", "min", "p50", "max"} of the header->ACK delays (nulls when none). */
static json_t *json_delays(const struct totals *t)
{
    json_t *o = json_object();
    kj_set(o, "n", json_integer((json_int_t)t->nd));
    kj_set(o, "min", t->nd ? json_integer(t->delays[0]) : json_null());
    kj_set(o, "p50", t->nd ? json_integer(pa_median_sorted(t->delays, t->nd)) : json_null());
    kj_set(o, "max", t->nd ? json_integer(t->delays[t->nd - 1]) : json_null());
    return o;
}

/* Two {"server": , "client": } counts. */
static json_t *json_sides(int server, int client)
{
    json_t *o = json_object();
    kj_set(o, "server", json_integer(server));
    kj_set(o, "client", json_integer(client));
    return o;
}

static void print_json(void)
{
    struct totals t;
    struct kj_rows w;
    char rule[64];
    json_t *cls = json_object();
    totals(&t);
    kj_rows_begin(&w, stdout);
    kj_rows_member(&w, "file", kj_name(prog_file));
    kj_rows_member(&w, "connections", json_integer(t.connections));
    kj_rows_member(&w, "syns", json_integer(t.syns));
    kj_rows_member(&w, "requests", json_integer(t.requests));
    kj_rows_member(&w, "responses", json_integer(t.responses));
    for (int c = 0; c < PA_NCLASSES; c++)
        kj_set(cls, pa_class_name((enum pa_class)c), json_integer(t.cls[c]));
    kj_rows_member(&w, "classes", cls);
    snprintf(rule, sizeof rule, "body_after_ack_us * %d < ack_delay_us", PA_HELD_RATIO);
    kj_rows_member(&w, "held_rule", kj_name(rule));
    kj_rows_member(&w, "fin", json_sides(t.fin_server, t.fin_client));
    kj_rows_member(&w, "rst", json_sides(t.rst_server, t.rst_client));
    kj_rows_member(&w, "ack_delay_us", json_delays(&t));
    json_connections(&w);
    json_responses(&w);
    if (kj_rows_end(&w) != 0)
        die("pcap-analyse: writing the JSON: %s", strerror(errno));
    free(t.delays);
}

static void print_table(void)
{
    struct totals t;
    size_t i;
    totals(&t);
    printf("file: %s\n", prog_file);
    printf("connections %d (SYNs %d), requests %d, responses %d\n", t.connections, t.syns, t.requests, t.responses);
    printf("FIN server %d client %d, RST server %d client %d\n", t.fin_server, t.fin_client, t.rst_server, t.rst_client);
    printf("classes: coalesced %d, sent-before-ack %d, held-until-ack %d, other %d  (held rule: body_after_ack*%d < ack_delay)\n",
           t.cls[0], t.cls[1], t.cls[2], t.cls[3], PA_HELD_RATIO);
    if (t.nd)
        printf("header->ACK delay us: n %zu min %" PRId64 " p50 %" PRId64 " max %" PRId64 "\n", t.nd, t.delays[0],
               pa_median_sorted(t.delays, t.nd), t.delays[t.nd - 1]);
    printf("\n%4s %3s %6s %5s %10s %10s %10s %10s %10s  %s\n", "conn", "#", "hdr", "body", "t_hdr_us", "t_ack_us",
           "t_body_us", "ack_delay", "body-ack", "class");
    for (i = 0; i < nresps; i++) {
        struct response *r = &resps[i];
        char ta[24] = "-", tb[24] = "-", d[24] = "-", g[24] = "-", th[24] = "-";
        if (r->i_hdr >= 0)
            snprintf(th, sizeof th, "%" PRId64, pkts[r->i_hdr].ts);
        if (r->i_ack >= 0)
            snprintf(ta, sizeof ta, "%" PRId64, pkts[r->i_ack].ts);
        if (r->i_body >= 0)
            snprintf(tb, sizeof tb, "%" PRId64, pkts[r->i_body].ts);
        if (r->i_ack >= 0 && r->i_hdr >= 0)
            snprintf(d, sizeof d, "%" PRId64, pkts[r->i_ack].ts - pkts[r->i_hdr].ts);
        if (r->i_ack >= 0 && r->i_body >= 0)
            snprintf(g, sizeof g, "%" PRId64, pkts[r->i_body].ts - pkts[r->i_ack].ts);
        printf("%4d %3d %6zu %5zu %10s %10s %10s %10s %10s  %s%s%s\n", r->conn, r->index, r->head_end - r->start,
               r->body_len, th, ta, tb, d, g, pa_class_name(r->cls), r->reason ? ": " : "",
               r->reason ? r->reason : "");
    }
    free(t.delays);
}

static void flag_str(uint8_t f, char *out)
{
    size_t o = 0;
    if (f & TH_SYN) out[o++] = 'S';
    if (f & TH_FIN) out[o++] = 'F';
    if (f & TH_RST) out[o++] = 'R';
    if (f & TH_PSH) out[o++] = 'P';
    if (f & TH_ACK) out[o++] = '.';
    if (!o) out[o++] = '-';
    out[o] = 0;
}

static void first_line(const unsigned char *d, size_t len, char *out, size_t n)
{
    size_t i = 0;
    while (i < len && i + 1 < n && d[i] != '\r' && d[i] != '\n') {
        out[i] = isprint(d[i]) ? (char)d[i] : '.';
        i++;
    }
    out[i] = 0;
}

/* What a ladder row says about packet i of response r. */
static void ladder_note(const struct response *r, long i, int se, char *note, size_t cap)
{
    const struct pkt *k = &pkts[i];
    int e = k->from0 ? 0 : 1;
    char l[64];
    note[0] = 0;
    if (i == r->i_hdr || (k->len && e != se && i != r->i_ack && i != r->i_body))
        first_line(k->data, k->len, l, sizeof l);
    if (i == r->i_hdr && i == r->i_body)
        snprintf(note, cap, "header+body coalesced (%s)", l);
    else if (i == r->i_hdr)
        snprintf(note, cap, "header (%s)", l);
    else if (i == r->i_ack)
        snprintf(note, cap, "%sACK of header, %" PRId64 "us after it", r->cls == PA_HELD_UNTIL_ACK ? "delayed " : "",
                 k->ts - pkts[r->i_hdr].ts);
    else if (i == r->i_body && r->i_ack >= 0 && r->i_ack < i)
        snprintf(note, cap, "body, released %" PRId64 "us after the ACK", k->ts - pkts[r->i_ack].ts);
    else if (i == r->i_body)
        snprintf(note, cap, "body, sent before the ACK of the header");
    else if (k->len && e != se)
        snprintf(note, cap, "request (%s)", l);
}

/* The packets to show: from the last client data segment before the header
 * segment to the client's ACK of the whole response (or the last of
 * header/ACK/body). */
static void ladder_span(const struct response *r, int se, long *start, long *end)
{
    *start = r->i_hdr;
    for (long i = r->i_hdr - 1; i >= 0; i--)
        if (pkts[i].conn == r->conn - 1 && pkts[i].len && (pkts[i].from0 ? 0 : 1) != se) {
            *start = i;
            break;
        }
    *end = r->i_hdr;
    if (r->i_body > *end)
        *end = r->i_body;
    if (r->i_ack > *end)
        *end = r->i_ack;
    long a = first_ack((size_t)r->conn - 1, !se, *end, r->head_end + r->body_len);
    if (a > *end && a - *end < 64)
        *end = a;
}

static int print_ladder(int n, char *err, size_t errlen)
{
    long start, end;
    if (n < 1 || (size_t)n > nresps) {
        snprintf(err, errlen, "pcap-analyse %s: --ladder %d: capture has %zu responses", prog_file, n, nresps);
        return 1;
    }
    const struct response *r = &resps[n - 1];
    const struct conn *c = &conns[r->conn - 1];
    int se = c->server;
    if (r->i_hdr < 0) {
        snprintf(err, errlen, "pcap-analyse %s: response %d: header segment not found", prog_file, n);
        return 1;
    }
    ladder_span(r, se, &start, &end);
    printf("# response %d: conn %d #%d, class %s%s%s\n", n, r->conn, r->index, pa_class_name(r->cls),
           r->reason ? ": " : "", r->reason ? r->reason : "");
    int64_t prev = pkts[start].ts;
    for (long i = start; i <= end; i++) {
        const struct pkt *k = &pkts[i];
        int e = k->from0 ? 0 : 1;
        char fl[8], rng[48] = "", note[160];
        if (k->conn != r->conn - 1)
            continue;
        flag_str(k->flags, fl);
        if (k->len) {
            int64_t o = rel_off(&c->st[e], k->seq);
            snprintf(rng, sizeof rng, " %" PRId64 ":%" PRId64 "(%u)", o + 1, o + 1 + k->len, k->len);
        }
        ladder_note(r, i, se, note, sizeof note);
        printf("+%" PRId64 ".%06" PRId64 " %s  %s%s", (k->ts - prev) / 1000000, (k->ts - prev) % 1000000,
               e == se ? "S > C" : "C > S", fl, rng);
        if (k->flags & TH_ACK)
            printf(" ack %" PRId64, rel_off(&c->st[!e], k->ack) + 1);
        printf("%s%s\n", note[0] ? "   " : "", note);
        prev = k->ts;
    }
    return 0;
}

#ifndef PA_NO_MAIN
static void usage(FILE *f)
{
    fprintf(f, "usage: pcap-analyse [--port P] [--json] [--ladder N] FILE.pcap\n"
               "  --port P     the server's TCP port (default: the side that sent the SYN-ACK)\n"
               "  --json       JSON output\n"
               "  --ladder N   packet ladder of response N (1-based, capture order)\n"
               "classes: coalesced, sent-before-ack, held-until-ack (body_after_ack*%d < ack_delay), other\n",
            PA_HELD_RATIO);
}

#endif

static void free_all(void)
{
    size_t i;
    for (i = 0; i < npkts; i++)
        free(pkts[i].data);
    for (i = 0; i < nconns; i++) {
        free(conns[i].st[0].buf);
        free(conns[i].st[0].filled);
        free(conns[i].st[1].buf);
        free(conns[i].st[1].filled);
    }
    free(pkts);
    free(conns);
    free(resps);
    pkts = NULL;
    conns = NULL;
    resps = NULL;
    npkts = cappkts = nconns = capconns = nresps = capresps = 0;
}

/* Read, analyse and print one open capture (closes it).  0 ok, 1 bad
 * input, 2 no such response for --ladder (err set for both). */
int pa_run(pcap_t *pc, const char *name, int port, int json, int ladder, char *err, size_t errlen)
{
    int rc = read_capture(pc, name, err, errlen) < 0 ? 1 : 0;
    pcap_close(pc);
    for (size_t i = 0; !rc && i < nconns; i++)
        decide_server(i, port);
    for (size_t i = 0; !rc && i < nconns; i++)
        analyse_conn(i);
    if (!rc && ladder)
        rc = print_ladder(ladder, err, errlen) ? 2 : 0;
    else if (!rc && json)
        print_json();
    else if (!rc)
        print_table();
    free_all();
    return rc;
}

#ifndef PA_NO_MAIN
int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"port", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
        {"ladder", required_argument, 0, 'l'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int port = 0, json = 0, ladder = 0, ch, rc = 0;
    char *end;
    while ((ch = getopt_long(argc, argv, "p:jl:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            errno = 0;
            port = (int)strtol(optarg, &end, 10);
            if (errno || *end || port < 1 || port > 65535) {
                fprintf(stderr, "pcap-analyse: bad --port '%s'\n", optarg);
                return 2;
            }
            break;
        case 'j': json = 1; break;
        case 'l':
            ladder = (int)strtol(optarg, &end, 10);
            if (*end || ladder < 1) {
                fprintf(stderr, "pcap-analyse: bad --ladder '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    prog_file = argv[optind];
    char errbuf[PCAP_ERRBUF_SIZE + 256] = "";
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(prog_file, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
    if (!pc)
        die("pcap_open_offline %s: %s", prog_file, errbuf);
    rc = pa_run(pc, prog_file, port, json, ladder, errbuf, sizeof errbuf);
    if (rc)
        die("%s", errbuf); /* bad input, or no such response: exit 1 */
    return 0;
}

#endif /* PA_NO_MAIN */
#endif /* PA_NO_ANALYSER */
