/* fuzz_strace.c - libFuzzer target over the strace analyser's input path.
 *
 * The input is an strace log.  Every line goes through the pure parser
 * (strace_parse_line; for a call: st_split_args, st_call_data under each
 * data-carrying syscall name, st_timeout_ms and st_fdset_next on every
 * argument, st_unescape on string literals), then through the analyser's
 * own line handling (process_line: pending/resumed calls, the (process, fd)
 * table, accepts, discovery of handed-over connections, waits, request
 * counting), and the JSON and table output are rendered to /dev/null.
 *
 * stdout goes to /dev/null (stdout_null.c, linked in).
 *
 * Build and run: tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#define SA_NO_MAIN
#include "../../captures/strace_analyse.c"

#include <stdint.h>

/* one plain and one iov-style decoder, besides the call's own name */
static const char *const data_calls[] = {"sendto", "sendmsg", NULL};

static void fuzz_args(const struct st_line *L)
{
    const char *st[8];
    size_t sl[8], n, pos, used;
    long fd;
    int na = st_split_args(L->args, L->args_len, st, sl, 8);
    for (int i = 0; i < na && i < 8; i++) {
        (void)st_timeout_ms(st[i], sl[i], 0);
        (void)st_timeout_ms(st[i], sl[i], 1);
        for (pos = 0; st_fdset_next(st[i], sl[i], &pos, &fd);)
            ;
        unsigned char out[64];
        if (sl[i] && st[i][0] == '"')
            (void)st_unescape(st[i], sl[i], out, sizeof out, &used);
    }
    free(st_call_data(L->name, L->args, L->args_len, &n));
    for (int k = 0; data_calls[k]; k++)
        free(st_call_data(data_calls[k], L->args, L->args_len, &n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct st_line L;
        if (strace_parse_line(p, len, &L) == ST_CALL)
            fuzz_args(&L);
        if (L.kind != ST_BAD)
            process_line(p, len);
        p += len + (nl != NULL);
    }
    for (size_t i = 0; i < nconns; i++)
        handed_over += handed_over_conn(&conns[i]);
    print_json();
    print_table();
    free_all();
    return 0;
}
