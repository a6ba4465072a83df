/* reader.c - see reader.h.  Each function names the upstream routine whose
 * rule it restates; the code is ours. */
#include "reader.h"

#include <ctype.h>
#include <string.h>

/* First CRLF in buf[from..n), or n when there is none. */
static size_t reader_find_crlf(const char *buf, size_t from, size_t n)
{
    size_t i;

    for (i = from; i + 1 < n; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n')
            return i;
    return n;
}

void reader_scan_line(const char *buf, size_t n, int pending_cr,
                      struct reader_chunk *out)
{
    size_t from = 0, crlf;

    memset(out, 0, sizeof *out);
    if (pending_cr) {
        /* ReadString's CheckLF: an LF right after the held-back CR ends the
         * line; anything else makes that CR part of the line. */
        if (buf[0] == '\n') {
            out->consumed = 1;
            out->ended = 1;
            return;
        }
        out->prepend_cr = 1;
    }
    crlf = reader_find_crlf(buf, from, n);
    if (crlf < n) {
        out->take_from = from;
        out->take_len = crlf - from;
        out->consumed = crlf + 2;
        out->ended = 1;
        return;
    }
    /* No CRLF: everything is line content, except a trailing CR that may be
     * the first half of a CRLF split across two reads. */
    out->take_from = from;
    out->consumed = n;
    if (buf[n - 1] == '\r') {
        out->take_len = n - 1 - from;
        out->pending_cr = 1;
    } else {
        out->take_len = n - from;
    }
}

/* GetNextWord: up to the next single space; the space is consumed. */
static const char *reader_next_word(const char **p, const char *end,
                                    size_t *len)
{
    const char *start = *p, *sp = memchr(start, ' ', (size_t)(end - start));

    if (!sp)
        sp = end;
    *len = (size_t)(sp - start);
    *p = sp < end ? sp + 1 : end;
    return start;
}

int reader_has_illegal_control_char(const char *buf, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];

        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
            return 1;
    }
    return 0;
}

/* IsPrintableAscii: space to tilde only. */
static int reader_is_printable_ascii(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

int reader_is_valid_method(const char *method, size_t len)
{
    size_t i;

    if (len == 0)
        return 0;
    for (i = 0; i < len; i++)
        if (!((method[i] >= 'A' && method[i] <= 'Z') ||
              (method[i] >= 'a' && method[i] <= 'z')))
            return 0;
    return 1;
}

int reader_parse_start_line(const char *line, size_t len, int strict_ascii,
                            struct reader_start_line *out)
{
    const char *p = line, *end = line + len, *proto;
    size_t proto_len;

    memset(out, 0, sizeof *out);
    if (strict_ascii && !reader_is_printable_ascii(line, len))
        return 400;
    out->method = reader_next_word(&p, end, &out->method_len);
    if (!reader_is_valid_method(out->method, out->method_len))
        return 400;
    out->url = reader_next_word(&p, end, &out->url_len);
    proto = reader_next_word(&p, end, &proto_len);
    /* Non-strict mode did not check the URL; the version word still must be
     * printable. */
    if (!strict_ascii && proto_len > 0 &&
        !reader_is_printable_ascii(proto, proto_len))
        return 400;
    if (proto_len == 0) {
        out->version = proto;
        return 0;
    }
    if (proto_len < 5 || memcmp(proto, "HTTP/", 5) != 0)
        return 400;
    /* The version is the rest of the word after "HTTP/", trimmed. */
    proto += 5;
    proto_len -= 5;
    while (proto_len && isspace((unsigned char)*proto)) {
        proto++;
        proto_len--;
    }
    while (proto_len && isspace((unsigned char)proto[proto_len - 1]))
        proto_len--;
    out->version = proto;
    out->version_len = proto_len;
    return 0;
}

/* Pascal's Trim: drop bytes <= ' ' at both ends. */
static void reader_trim(const char **s, size_t *len)
{
    while (*len && (unsigned char)**s <= ' ') {
        (*s)++;
        (*len)--;
    }
    while (*len && (unsigned char)(*s)[*len - 1] <= ' ')
        (*len)--;
}

int reader_split_header(const char *line, size_t len,
                        const char **name, size_t *name_len,
                        const char **value, size_t *value_len)
{
    const char *colon = memchr(line, ':', len);

    if (!colon)
        return 0;
    *name = line;
    *name_len = (size_t)(colon - line);
    *value = colon + 1;
    *value_len = len - *name_len - 1;
    reader_trim(value, value_len);
    return 1;
}

int64_t reader_content_length(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    uint64_t v = 0;
    int neg = 0;

    /* StrToInt accepts surrounding blanks and a sign, and nothing else. */
    reader_trim(&p, &len);
    end = p + len;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (p == end)
        return 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
            return 0; /* out of range: StrToIntDef falls back to 0 */
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return neg ? -(int64_t)v : (int64_t)v;
}

int reader_same_text(const char *a, size_t alen, const char *b)
{
    size_t i;

    if (strlen(b) != alen)
        return 0;
    for (i = 0; i < alen; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
    return 1;
}

int reader_keep_alive(const char *version, const char *connection)
{
    int keep = strcmp(version, "1.1") == 0;

    if (connection) {
        if (reader_same_text(connection, strlen(connection), "close"))
            keep = 0;
        else if (reader_same_text(connection, strlen(connection), "keep-alive"))
            keep = 1;
    }
    return keep;
}
