/* common/kjson.h - the JSON the kit's C tools write (the probe's --json,
 * the analysers' --json), assembled with jansson (Debian: libjansson-dev).
 * The library builds the values and does all escaping; this file holds the
 * kit's three decisions about them:
 *
 * Strings.  jansson only takes valid UTF-8, but what the tools write is
 * bytes they did not choose: a hostile server's header values, a file
 * name, strace's rendering of a peer.  So:
 *   kj_bytes(s)  every byte becomes the code point of the same number
 *                (ISO-8859-1): lossless for any bytes, and a reader gets them
 *                back with s.encode("latin-1").  The probe has always
 *                written its strings this way (wire bytes are not text).
 *   kj_name(s)   valid UTF-8 is kept as it is (a file name reads as the
 *                user typed it); anything else is written as kj_bytes.
 * Output is pure ASCII either way (JSON_ENSURE_ASCII: \u00XX, \uXXXX), so
 * no consumer's decoder can fail on it.  NUL cannot occur (C strings).
 *
 * Numbers.  kj_fixed(v, d) is the value printf("%.*f", d, v) writes, so a
 * reader parses the same number as it did when the tools printed it by
 * hand; it is dumped with 15 significant digits (DBL_DIG), which gives that
 * number back exactly for every value below 10^(15-d).
 *
 * Layout.  kj_print_line: one compact line (the probe).  kj_rows_*: the
 * analysers' layout, one top-level key per line and the elements of the
 * row lists one per line, which the shell checks (grep/sed on
 * '"conn": 1, "index": 1, ...') and captures/capture.sh rely on. */
#ifndef KIT_COMMON_KJSON_H
#define KIT_COMMON_KJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* NULL gives JSON null. */
json_t *kj_bytes(const char *s);
json_t *kj_name(const char *s);

/* printf("%.*f")'s number, or null when !present or v is not finite. */
json_t *kj_fixed(bool present, double v, int decimals);

/* [v0, v1, ...] */
json_t *kj_ints(const int *v, int n);

/* json_object_set_new / json_array_append_new that die (one line, exit 1)
 * instead of dropping a key when v is NULL or memory runs out. */
void kj_set(json_t *obj, const char *key, json_t *v);
void kj_push(json_t *arr, json_t *v);

/* Write v as one line (no newline) and drop the reference; 0, or -1 on a
 * write error. */
int kj_print_line(FILE *f, json_t *v);

/* The analysers' layout, written as it is made (a 70,000-connection log
 * never holds 70,000 objects):
 *   {                                  kj_rows_begin
 *     "accepts": 1,                    kj_rows_member (drops v)
 *     "connections": [                 kj_rows_list_begin
 *       {"conn": 1, "fd": 5, ...},     kj_rows_item (drops v)
 *       {"conn": 2, "fd": 6, ...}
 *     ]                                kj_rows_list_end
 *   }                                  kj_rows_end: 0, or -1 after a write error */
struct kj_rows {
    FILE *f;
    int members, items, err;
};
void kj_rows_begin(struct kj_rows *w, FILE *f);
void kj_rows_member(struct kj_rows *w, const char *key, json_t *v);
void kj_rows_list_begin(struct kj_rows *w, const char *key);
void kj_rows_item(struct kj_rows *w, json_t *v);
void kj_rows_list_end(struct kj_rows *w);
int kj_rows_end(struct kj_rows *w);

#endif
