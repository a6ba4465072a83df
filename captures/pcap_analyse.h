/* pcap_analyse.h - pure helpers of the pcap analyser (testable without libpcap I/O).
 *
 * The analyser reads a capture, reassembles each TCP connection's two byte
 * streams and, for every HTTP response, finds the header segment (the one
 * carrying the end of the header block), the client's first ACK covering
 * it and the body segment (first segment carrying a body byte), then
 * classifies the response (see pa_classify()).
 */
#ifndef PCAP_ANALYSE_H
#define PCAP_ANALYSE_H

#include <stddef.h>
#include <stdint.h>

/* Classes, in the order they are reported. */
enum pa_class {
    PA_COALESCED = 0,      /* header end and the first body byte in one segment */
    PA_SENT_BEFORE_ACK,    /* body segment left before the ACK of the header    */
    PA_HELD_UNTIL_ACK,     /* body left right after a (relatively) late ACK     */
    PA_OTHER,              /* anything else, with a reason                      */
    PA_NCLASSES
};

const char *pa_class_name(enum pa_class c);

/* Decision rule for held-until-ack, relative (no fixed millisecond cut-off):
 * the body left after the client's ACK of the header segment, and the gap
 * ACK->body is less than a tenth of the gap header->ACK:
 *     body_after_ack_us * PA_HELD_RATIO < ack_delay_us
 * When the ACK itself was immediate (quick ACK), the two gaps are of the
 * same order and the response is "other" (reason: ack not delayed). */
#define PA_HELD_RATIO 10

/* Inputs in capture order: idx_* are packet indexes (order on the wire as
 * seen by the capture point, which breaks equal-timestamp ties), t_* are
 * µs. has_ack / has_body say whether the ACK / body segment exists.
 * Returns the class and, for PA_OTHER, points *reason at a static string. */
enum pa_class pa_classify(long idx_hdr, long idx_body, long idx_ack,
                          int64_t t_hdr, int64_t t_body, int64_t t_ack,
                          int has_body, int has_ack, const char **reason);

/* 1 if buf starts with "HTTP/1." (where to resync in a server stream).
 * Heads and bodies are parsed by common/http_response.h, request heads
 * counted by common/http_request.h. */
int pa_is_response_start(const unsigned char *buf, size_t len);

struct hr_response;
/* Body bytes on the wire after head h (chunk framing included), as far as
 * p[0..avail) holds them; a Content-Length body counts in full even when the
 * capture ends early, and an unfinished chunked body counts 0. */
size_t pa_body_wire_len(const struct hr_response *h, const unsigned char *p, size_t avail);

struct pcap;
/* Read, analyse and print (table, --json, or --ladder N) one open capture,
 * closing it: 0 ok, 1 bad input (one line in err), 2 no response N. */
int pa_run(struct pcap *pc, const char *name, int port, int json, int ladder, char *err, size_t errlen);

/* Median of n sorted values (mean of the two middle ones when n is even). */
int64_t pa_median_sorted(const int64_t *v, size_t n);

#endif
