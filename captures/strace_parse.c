/* strace_parse.c - the strace analyser's pure parsing helpers: one line,
 * arguments, string literals, timeouts, fd sets (see strace_analyse.h).
 * Every number is parsed saturating: a 20-digit value is clamped, never
 * undefined behaviour (UBSan found a signed overflow on a 20-digit return
 * value in the previous parser). */
#include "strace_analyse.h"

#include <ctype.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

static const char *skip_sp(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Decimal digits at p (before e), clamped at cap; returns the first
 * non-digit.  *ndigits (may be NULL) counts the digits. */
static const char *st_digits(const char *p, const char *e, int64_t cap, int64_t *out, int *ndigits)
{
    int64_t v = 0;
    int n = 0;
    for (; p < e && *p >= '0' && *p <= '9'; p++, n++)
        v = v > (cap - (*p - '0')) / 10 ? cap : v * 10 + (*p - '0');
    *out = v;
    if (ndigits)
        *ndigits = n;
    return p;
}

/* ".uuuuuu" fraction -> microseconds (first 6 digits; the rest skipped). */
static const char *st_micros(const char *p, const char *e, int64_t *us)
{
    int digits = 0;
    *us = 0;
    if (p >= e || *p != '.')
        return p;
    for (p++; p < e && isdigit((unsigned char)*p); p++)
        if (digits < 6) {
            *us = *us * 10 + (*p - '0');
            digits++;
        }
    while (digits++ < 6)
        *us *= 10;
    return p;
}

#define ST_MAX_SECONDS 1000000000ll /* clamps every time field: no overflow in us */

/* Parse " <0.000123>" at the end; returns µs or -1 and sets *endp to the
 * position of '<' (or e). */
static int64_t parse_dur(const char *s, const char *e, const char **endp)
{
    const char *p = e, *q;
    int64_t sec, us;
    while (p > s && (p[-1] == ' ' || p[-1] == '\r'))
        p--;
    *endp = e;
    if (p == s || p[-1] != '>')
        return -1;
    q = p - 1;
    while (q > s && q[-1] != '<')
        q--;
    if (q == s)
        return -1;
    *endp = q - 1;
    q = st_digits(q, p - 1, ST_MAX_SECONDS, &sec, NULL);
    st_micros(q, p - 1, &us);
    return sec * 1000000 + us;
}

static const char *find_ret_sep(const char *s, const char *e, int depth0)
{
    const char *p;
    int depth = depth0, inq = 0;
    for (p = s; p < e; p++) {
        if (inq) {
            if (*p == '\\' && p + 1 < e)
                p++;
            else if (*p == '"')
                inq = 0;
            continue;
        }
        if (*p == '"')
            inq = 1;
        else if (*p == '(' || *p == '[' || *p == '{')
            depth++;
        else if (*p == ')' || *p == ']' || *p == '}') {
            depth--;
            if (depth < 0 && *p == ')') {   /* ")   = " closing the call */
                const char *r = skip_sp(p + 1, e);
                if (r > p + 1 && r + 1 < e && r[0] == '=' && r[1] == ' ')
                    return p;
                return NULL;
            }
        }
    }
    return NULL;
}

/* pid: "1234 " or "[pid 1234] "; returns the position after it, or NULL. */
static const char *parse_pid(const char *p, const char *e, long *pid)
{
    int64_t v = 0;
    if (e - p > 5 && memcmp(p, "[pid", 4) == 0) {
        p = st_digits(skip_sp(p + 4, e), e, ST_MAX_SECONDS, &v, NULL);
        if (p >= e || *p != ']')
            return NULL;
        *pid = (long)v;
        return skip_sp(p + 1, e);
    }
    const char *q = p;
    while (q < e && isdigit((unsigned char)*q))
        q++;
    if (q > p && q < e && (*q == ' ' || *q == '\t')) { /* a time is followed by ':' or '.' */
        st_digits(p, q, ST_MAX_SECONDS, &v, NULL);
        *pid = (long)v;
        return skip_sp(q, e);
    }
    return p;
}

/* time: HH:MM:SS.uuuuuu (or seconds.uuuuuu for -ttt); NULL if malformed. */
static const char *parse_time(const char *p, const char *e, int64_t *t_us)
{
    int64_t h = 0, m = 0, s = 0, us = 0;
    const char *q = st_digits(p, e, ST_MAX_SECONDS, &h, NULL);
    if (q < e && *q == ':') {
        q = st_digits(q + 1, e, ST_MAX_SECONDS, &m, NULL);
        if (q >= e || *q != ':')
            return NULL;
        q = st_digits(q + 1, e, ST_MAX_SECONDS, &s, NULL);
    } else {
        s = h;
        h = 0;
    }
    q = st_micros(q, e, &us);
    if (q >= e || *q != ' ')
        return NULL;
    /* each field <= 1e9: (1e9*60 + 1e9)*60 + 1e9 < 4e12 s, * 1e6 < 2^63 */
    *t_us = ((h * 60 + m) * 60 + s) * 1000000 + us;
    return skip_sp(q, e);
}

/* A syscall name into out->name; returns the position after it. */
static const char *parse_name(const char *p, const char *e, struct st_line *out)
{
    size_t nl = 0;
    while (p < e && (isalnum((unsigned char)*p) || *p == '_') && nl + 1 < sizeof out->name)
        out->name[nl++] = *p++;
    out->name[nl] = 0;
    return p;
}

/* "name(args" up to ") = " or "<unfinished ...>"; returns the ')' or NULL. */
static const char *parse_call(const char *p, const char *e, struct st_line *out)
{
    static const char unf[] = "<unfinished ...>";
    size_t ul = sizeof unf - 1;
    p = parse_name(p, e, out);
    if (!out->name[0] || p >= e || *p != '(' || isdigit((unsigned char)out->name[0]))
        return NULL;
    p++;
    out->args = p;
    if ((size_t)(e - p) >= ul && memcmp(e - ul, unf, ul) == 0) {
        const char *a = e - ul;
        while (a > p && a[-1] == ' ')
            a--;
        out->args_len = (size_t)(a - p);
        out->kind = ST_UNFINISHED;
        return e;
    }
    out->kind = ST_CALL;
    return find_ret_sep(p, e, 0);
}

/* "<... name resumed>rest) = "; returns the ')' or NULL. */
static const char *parse_resumed(const char *p, const char *e, struct st_line *out)
{
    p = parse_name(p + 5, e, out);
    if (!out->name[0] || e - p < 9 || memcmp(p, " resumed>", 9) != 0)
        return NULL;
    out->kind = ST_RESUMED;
    out->args = p + 9;
    return find_ret_sep(p + 9, e, 0);
}

/* "= ret [detail] [<dur>]" after the call's ')'. */
static enum st_kind parse_ret(const char *p, const char *e, struct st_line *out)
{
    const char *dend;
    out->dur_us = parse_dur(p, e, &dend);
    if (p < dend && *p == '?') {
        out->ret = -1;
        out->ret_known = 0;
        p++;
    } else {
        int neg = p < dend && *p == '-';
        int64_t v = 0;
        p += neg;
        if (p >= dend || !isdigit((unsigned char)*p))
            return out->kind = ST_BAD;
        if (dend - p > 2 && p[0] == '0' && p[1] == 'x') {
            for (p += 2; p < dend && isxdigit((unsigned char)*p); p++)
                ; /* a pointer (mmap, brk): its value is of no use here */
        } else {
            p = st_digits(p, dend, LONG_MAX, &v, NULL);
        }
        out->ret = neg ? -(long)v : (long)v;
        out->ret_known = 1;
    }
    p = skip_sp(p, dend);
    out->detail = p;
    while (dend > p && dend[-1] == ' ')
        dend--;
    out->detail_len = (size_t)(dend - p);
    return out->kind;
}

enum st_kind strace_parse_line(const char *line, size_t len, struct st_line *out)
{
    const char *p = line, *e = line + len, *q;
    memset(out, 0, sizeof *out);
    out->t_us = -1;
    out->dur_us = -1;
    while (e > p && (e[-1] == '\n' || e[-1] == '\r'))
        e--;
    if (!(p = parse_pid(skip_sp(p, e), e, &out->pid)))
        return ST_BAD;
    if (p < e && isdigit((unsigned char)*p) && !(p = parse_time(p, e, &out->t_us)))
        return ST_BAD;
    if (p >= e)
        return ST_BAD;
    if (e - p >= 3 && memcmp(p, "+++", 3) == 0)
        return out->kind = ST_EXIT;
    if (e - p >= 3 && memcmp(p, "---", 3) == 0)
        return out->kind = ST_SIGNAL;
    q = (e - p >= 5 && memcmp(p, "<... ", 5) == 0) ? parse_resumed(p, e, out) : parse_call(p, e, out);
    if (!q)
        return out->kind = ST_BAD;
    if (out->kind == ST_UNFINISHED)
        return ST_UNFINISHED;
    out->args_len = (size_t)(q - out->args);
    /* q points at ')' of ")   = " */
    return parse_ret(skip_sp(q + 1, e) + 2, e, out);
}

int st_split_args(const char *a, size_t n, const char **starts, size_t *lens, int max)
{
    size_t i, s = 0;
    int depth = 0, inq = 0, cnt = 0;
    if (n == 0)
        return 0;
    for (i = 0; i <= n; i++) {
        if (i < n) {
            char c = a[i];
            if (inq) {
                if (c == '\\' && i + 1 < n)
                    i++;
                else if (c == '"')
                    inq = 0;
                continue;
            }
            if (c == '"') {
                inq = 1;
                continue;
            }
            if (c == '(' || c == '[' || c == '{') {
                depth++;
                continue;
            }
            if (c == ')' || c == ']' || c == '}') {
                depth--;
                continue;
            }
            if (c != ',' || depth > 0)
                continue;
        }
        if (cnt < max) {
            size_t b = s, e = i;
            while (b < e && a[b] == ' ')
                b++;
            while (e > b && a[e - 1] == ' ')
                e--;
            starts[cnt] = a + b;
            lens[cnt] = e - b;
        }
        cnt++;
        s = i + 1;
    }
    return cnt;
}

long st_unescape(const char *s, size_t n, unsigned char *out, size_t cap, size_t *used)
{
    size_t i = 1;
    long o = 0;
    if (n == 0 || s[0] != '"')
        return -1;
    while (i < n && s[i] != '"') {
        int c = (unsigned char)s[i];
        if (c == '\\' && i + 1 < n) {
            i++;
            c = (unsigned char)s[i];
            switch (c) {
            case 'n': c = '\n'; i++; break;
            case 'r': c = '\r'; i++; break;
            case 't': c = '\t'; i++; break;
            case 'v': c = '\v'; i++; break;
            case 'f': c = '\f'; i++; break;
            case 'a': c = '\a'; i++; break;
            case 'b': c = '\b'; i++; break;
            case 'e': c = 27; i++; break;
            case 'x': {
                int v = 0, d = 0;
                i++;
                while (i < n && d < 2 && isxdigit((unsigned char)s[i])) {
                    int h = tolower((unsigned char)s[i]);
                    v = v * 16 + (h <= '9' ? h - '0' : h - 'a' + 10);
                    i++;
                    d++;
                }
                c = v;
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    int v = 0, d = 0;
                    while (i < n && d < 3 && s[i] >= '0' && s[i] <= '7') {
                        v = v * 8 + (s[i] - '0');
                        i++;
                        d++;
                    }
                    c = v & 0xff;
                } else {
                    i++;   /* \\ \" \' and unknown: the char itself */
                }
            }
        } else {
            i++;
        }
        if ((size_t)o < cap)
            out[o] = (unsigned char)c;
        o++;
    }
    if (i >= n)
        return -1;   /* unterminated */
    i++;
    if (i + 3 <= n && memcmp(s + i, "...", 3) == 0)
        i += 3;
    if (used)
        *used = i;
    return o;
}

int st_is_name(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0)
            return 1;
    return 0;
}

static const char *const iov_calls[] = {"writev", "readv", "sendmsg", "recvmsg", "pwritev", "preadv", NULL};

unsigned char *st_call_data(const char *name, const char *args, size_t n, size_t *len)
{
    unsigned char *buf = NULL;
    size_t total = 0;
    *len = 0;
    if (st_is_name(name, iov_calls)) {
        /* every iov_base="..." */
        size_t i = 0;
        int found = 0;
        while (i + 10 <= n) {
            if (memcmp(args + i, "iov_base=\"", 10) == 0) {
                size_t used;
                long l = st_unescape(args + i + 9, n - i - 9, NULL, 0, &used);
                if (l < 0)
                    break;
                buf = realloc(buf, total + (size_t)l + 1);
                if (!buf)
                    return NULL;
                st_unescape(args + i + 9, n - i - 9, buf + total, (size_t)l, &used);
                total += (size_t)l;
                i += 9 + used;
                found = 1;
            } else if (args[i] == '"') {
                size_t used;
                if (st_unescape(args + i, n - i, NULL, 0, &used) < 0)
                    break;
                i += used;
            } else {
                i++;
            }
        }
        if (!found)
            return NULL;
    } else {
        const char *st[3];
        size_t sl[3];
        long l;
        size_t used;
        if (st_split_args(args, n, st, sl, 3) < 2 || sl[1] == 0 || st[1][0] != '"')
            return NULL;
        l = st_unescape(st[1], sl[1], NULL, 0, &used);
        if (l < 0)
            return NULL;
        buf = malloc((size_t)l + 1);
        if (!buf)
            return NULL;
        st_unescape(st[1], sl[1], buf, (size_t)l, &used);
        total = (size_t)l;
    }
    *len = total;
    return buf;
}


/* Digits after key (clamped), *ok = 1 if there were any. */
static int64_t num_after(const char *s, size_t n, const char *key, int *ok)
{
    size_t kl = strlen(key);
    int64_t v = 0;
    int nd = 0;
    *ok = 0;
    for (size_t i = 0; i + kl <= n; i++)
        if (memcmp(s + i, key, kl) == 0) {
            st_digits(s + i + kl, s + n, ST_MAX_SECONDS, &v, &nd);
            *ok = nd > 0;
            return v;
        }
    return 0;
}

long st_timeout_ms(const char *s, size_t n, int nsec)
{
    int ok1, ok2, nd;
    int64_t sec, sub;
    if (n == 4 && memcmp(s, "NULL", 4) == 0)
        return -1;
    if (n > 0 && s[0] == '-')
        return -1; /* poll's negative timeout: infinite */
    if (n > 0 && isdigit((unsigned char)s[0])) {
        st_digits(s, s + n, ST_MAX_SECONDS, &sec, NULL);
        return (long)sec;
    }
    if (n < 2 || s[0] != '{')
        return -2;
    sec = num_after(s, n, "tv_sec=", &ok1);
    if (ok1) {
        sub = num_after(s, n, nsec ? "tv_nsec=" : "tv_usec=", &ok2);
        if (!ok2)
            sub = num_after(s, n, nsec ? "tv_usec=" : "tv_nsec=", &ok2), nsec = !nsec;
        if (!ok2)
            return -2;
    } else {
        /* old format {0, 50000} */
        const char *q = st_digits(s + 1, s + n, ST_MAX_SECONDS, &sec, &nd);
        if (nd == 0 || q >= s + n || *q != ',')
            return -2;
        st_digits(skip_sp(q + 1, s + n), s + n, ST_MAX_SECONDS, &sub, NULL);
    }
    return (long)(sec * 1000 + (nsec ? sub / 1000000 : sub / 1000));
}

int st_fdset_next(const char *s, size_t n, size_t *pos, long *fd)
{
    size_t i = *pos;
    if (n == 0 || s[0] != '[')
        return 0;
    while (i < n) {
        /* skip words like events=POLLIN, revents=... */
        if (i + 7 < n && memcmp(s + i, "events=", 7) == 0) {
            while (i < n && s[i] != ',' && s[i] != '}')
                i++;
            continue;
        }
        if (i + 3 < n && memcmp(s + i, "fd=", 3) == 0)
            i += 3;
        if (i < n && isdigit((unsigned char)s[i]) && (i == 0 || !isalnum((unsigned char)s[i - 1]) || s[i - 1] == '=')) {
            int64_t v;
            i = (size_t)(st_digits(s + i, s + n, LONG_MAX, &v, NULL) - s);
            *pos = i;
            *fd = (long)v;
            return 1;
        }
        i++;
    }
    *pos = i;
    return 0;
}

int st_fdset_has(const char *s, size_t n, long fd)
{
    size_t pos = 0;
    long v;
    while (st_fdset_next(s, n, &pos, &v))
        if (v == fd)
            return 1;
    return 0;
}
