/* common/kjson.c - see kjson.h. */
#include "kjson.h"

#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Flags every fragment is dumped with: ASCII only, reals as kjson.h says,
 * and scalars allowed (the rows writer dumps one value at a time). */
#define KJ_FLAGS (JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY)

json_t *kj_bytes(const char *s)
{
    if (!s)
        return json_null();
    size_t n = strlen(s), o = 0;
    char *u = xrealloc(NULL, 2 * n + 1);
    /* ISO-8859-1 to UTF-8: U+0080..U+00FF take two bytes. */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x80) {
            u[o++] = (char)*p;
        } else {
            u[o++] = (char)(0xc0 | (*p >> 6));
            u[o++] = (char)(0x80 | (*p & 0x3f));
        }
    }
    json_t *v = json_stringn(u, o);
    free(u);
    return v;
}

json_t *kj_name(const char *s)
{
    json_t *v = s ? json_string(s) : json_null(); /* NULL: not UTF-8 */
    return v ? v : kj_bytes(s);
}

json_t *kj_fixed(bool present, double v, int decimals)
{
    /* %f of any finite double fits: DBL_MAX has 309 integer digits. */
    char b[400];
    if (!present || !isfinite(v))
        return json_null();
    snprintf(b, sizeof b, "%.*f", decimals, v);
    return json_real(strtod(b, NULL));
}

json_t *kj_ints(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        kj_push(a, json_integer(v[i]));
    return a;
}

/* Keys are the tools' own ASCII literals: not re-validated. */
void kj_set(json_t *obj, const char *key, json_t *v)
{
    if (!obj || !v || json_object_set_new_nocheck(obj, key, v) != 0)
        die("json: cannot store \"%s\" (out of memory?)", key);
}

void kj_push(json_t *arr, json_t *v)
{
    if (!arr || !v || json_array_append_new(arr, v) != 0)
        die("json: cannot append to an array (out of memory?)");
}

int kj_print_line(FILE *f, json_t *v)
{
    int rc = json_dumpf(v, f, KJ_FLAGS | JSON_COMPACT);
    json_decref(v);
    return rc;
}

/* The rows writer: every fragment through json_dumpf, the line breaks
 * and indentation here.  A write error is remembered for kj_rows_end. */
static void rows_dump(struct kj_rows *w, json_t *v)
{
    if (json_dumpf(v, w->f, KJ_FLAGS) != 0)
        w->err = 1;
    json_decref(v);
}

static void rows_puts(struct kj_rows *w, const char *s)
{
    if (fputs(s, w->f) < 0)
        w->err = 1;
}

static void rows_key(struct kj_rows *w, const char *key)
{
    rows_puts(w, w->members++ ? ",\n  " : "{\n  ");
    rows_dump(w, json_string(key));
    rows_puts(w, ": ");
}

void kj_rows_begin(struct kj_rows *w, FILE *f)
{
    *w = (struct kj_rows){.f = f};
}

void kj_rows_member(struct kj_rows *w, const char *key, json_t *v)
{
    if (!v)
        die("json: cannot make \"%s\" (out of memory?)", key);
    rows_key(w, key);
    rows_dump(w, v);
}

void kj_rows_list_begin(struct kj_rows *w, const char *key)
{
    rows_key(w, key);
    rows_puts(w, "[");
    w->items = 0;
}

void kj_rows_item(struct kj_rows *w, json_t *v)
{
    if (!v)
        die("json: cannot make a row (out of memory?)");
    rows_puts(w, w->items++ ? ",\n    " : "\n    ");
    rows_dump(w, v);
}

void kj_rows_list_end(struct kj_rows *w)
{
    rows_puts(w, "\n  ]");
}

int kj_rows_end(struct kj_rows *w)
{
    rows_puts(w, w->members ? "\n}\n" : "{\n}\n");
    return w->err ? -1 : 0;
}
