/* reader.h - the request-reading rules of TFPHTTPConnection as pure functions.
 *
 * picohttpparser style: no I/O, no allocation, caller-owned buffers.  The
 * connection module feeds them the bytes of its 4096-byte buffer (FBuffer);
 * unit tests feed them whole inputs and byte by byte.
 */
#ifndef SERVER_MIN_READER_H
#define SERVER_MIN_READER_H

#include <stddef.h>
#include <stdint.h>

/* What one pass of TFPHTTPConnection.ReadString over the buffered bytes does. */
struct reader_chunk {
    size_t consumed;   /* bytes to drop from the front of the buffer */
    int prepend_cr;    /* a CR held back from the previous chunk was data */
    size_t take_from;  /* offset of the bytes that belong to the line */
    size_t take_len;   /* how many */
    int ended;         /* the line is complete (CRLF consumed) */
    int pending_cr;    /* the chunk ended with a CR: check the next byte (CheckLF) */
};

/* One step of ReadString over buf[0..n) (n > 0).  pending_cr says the previous
 * chunk ended with a CR whose LF may start this one.  Only CRLF ends a line: a
 * bare LF is line content, as upstream. */
void reader_scan_line(const char *buf, size_t n, int pending_cr,
                      struct reader_chunk *out);

/* HasIllegalControlChar: a byte below 0x20 other than TAB, LF and CR in
 * buf[0..n).  ReadString applies it to each chunk it takes, so binary input
 * (a TLS ClientHello on a plain port) is refused without waiting for a CRLF
 * that never comes. */
int reader_has_illegal_control_char(const char *buf, size_t n);

/* ParseStartLine's IsValidMethod: a non-empty run of ASCII letters. */
int reader_is_valid_method(const char *method, size_t len);

/* A start line split the way TFPHTTPConnection.ParseStartLine does it. */
struct reader_start_line {
    const char *method;   size_t method_len;
    const char *url;      size_t url_len;
    const char *version;  size_t version_len;  /* "1.1", after "HTTP/" */
};

/* ParseStartLine: words separated by single spaces (two spaces make an empty
 * word, as GetNextWord does).  Returns 0, or 400, in upstream's order: with
 * strict_ascii (StrictASCIIURL) a byte of the line outside printable
 * US-ASCII; a method that is not IsValidMethod (checked in both modes);
 * without strict_ascii a non-printable byte in the third word; a third word
 * present that does not start with "HTTP/". */
int reader_parse_start_line(const char *line, size_t len, int strict_ascii,
                            struct reader_start_line *out);

/* InterPretHeader: "Name: value" -> name and trimmed value.  Returns 0 when
 * the line has no colon (UnknownHeader: ignored), 1 otherwise. */
int reader_split_header(const char *line, size_t len,
                        const char **name, size_t *name_len,
                        const char **value, size_t *value_len);

/* TRequest.ContentLength: StrToIntDef(header, 0) on a 64-bit value.
 * Non-numeric or out-of-range text gives 0; a leading sign is accepted, so a
 * negative length is returned as such (and then means "no body"). */
int64_t reader_content_length(const char *text, size_t len);

/* The per-request keep-alive rule of DoHandleRequest, applied only when
 * KeepConnections is on: version "1.1" -> on, anything else off; then a
 * "Connection: close" turns it off and "Connection: keep-alive" on (the
 * whole value, case-insensitive, as SameText: a list with close in it, or
 * HTTP/1.2, is not seen: B13).  connection may be NULL. */
int reader_keep_alive(const char *version, const char *connection);

/* Case-insensitive equality of a counted string and a C string. */
int reader_same_text(const char *a, size_t alen, const char *b);

#endif
