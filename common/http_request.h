/* common/http_request.h - counting HTTP/1.x request heads in a client byte
 * stream (what the capture analysers need to tell "2 requests arrived in
 * one segment/read" from one).  Prefix hq_.  Pure, over caller buffers.
 *
 *     size_t off = 0;
 *     n += hq_count_requests(buf, len, &off);   // again later with more bytes
 *
 * A request is a start line "METHOD SP ..." (METHOD = 1..16 of A-Z) up to an
 * empty line (CRLF CRLF), plus a Content-Length body when announced.  It is
 * counted once its head and body are complete; *off then moves past it, so
 * the call can be repeated as the stream grows.  Blank lines between
 * requests are skipped.  Anything else stops the count (not a request). */
#ifndef KIT_COMMON_HTTP_REQUEST_H
#define KIT_COMMON_HTTP_REQUEST_H

#include <stddef.h>

int hq_count_requests(const unsigned char *buf, size_t len, size_t *off);

/* 1 if buf starts with "METHOD SP". */
int hq_is_request_start(const unsigned char *buf, size_t len);

/* Offset just past the CRLFCRLF ending the head at buf, or 0. */
size_t hq_head_end(const unsigned char *buf, size_t len);

/* Content-Length of the head [buf, buf+len): its value, 0 if absent, -1 if
 * malformed or above 2^40 (the count then stops: framing is unknown). */
long long hq_content_length(const unsigned char *buf, size_t len);

#endif
