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

/* HTTP helpers on raw byte ranges (not NUL-terminated). */

/* Offset just past the CRLFCRLF ending the head that starts at buf, or 0 if
 * it is not complete within len. */
size_t pa_head_end(const unsigned char *buf, size_t len);

/* Value of the Content-Length header in the head [buf, buf+len), or -1 if
 * absent or malformed. Header names are matched case-insensitively. */
long pa_content_length(const unsigned char *buf, size_t len);

/* 1 if the head has "Transfer-Encoding: ... chunked". */
int pa_is_chunked(const unsigned char *buf, size_t len);

/* Length of a chunked body starting at buf (up to and including the final
 * CRLF after the 0-size chunk and any trailers), or 0 if incomplete. */
size_t pa_chunked_len(const unsigned char *buf, size_t len);

/* 1 if buf starts with "HTTP/1." */
int pa_is_response_start(const unsigned char *buf, size_t len);

/* 1 if buf starts with a request line: TOKEN SP (token = A-Z letters). */
int pa_is_request_start(const unsigned char *buf, size_t len);

/* Status code of the response head at buf, or -1. */
int pa_status_code(const unsigned char *buf, size_t len);

/* Count the request heads in a client byte stream (pipelined requests in
 * one segment count individually; bodies announced by Content-Length are
 * skipped). *consumed receives the number of bytes parsed. */
int pa_count_requests(const unsigned char *buf, size_t len, size_t *consumed);

/* Median of n sorted values (mean of the two middle ones when n is even). */
int64_t pa_median_sorted(const int64_t *v, size_t n);

#endif
