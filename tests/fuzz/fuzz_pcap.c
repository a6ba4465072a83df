/* fuzz_pcap.c - libFuzzer target over the pcap analyser's input path.
 *
 * The input is a capture file.  libpcap reads it from memory
 * (pcap_fopen_offline over fmemopen), then pa_run does what pcap-analyse
 * does with a file: decode every frame (link layer, IPv4/IPv6, TCP),
 * reassemble both byte streams of every connection, parse each response
 * with the common reader, classify it, and render the table, the JSON and
 * the ladder of response 1 (to /dev/null).  A bad capture must end in a
 * one-line error (pa_run returns 1), never a crash, a leak or a hang.
 *
 * stdout goes to /dev/null (stdout_null.c, linked in).
 *
 * Build and run: tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined, -lpcap).
 */
#define PA_NO_MAIN
#define MAX_STREAM (1u << 20) /* 1 MiB per direction: inputs are at most 16 KiB */
#include "../../captures/pcap_analyse.c"

#include <stdint.h>

/* One pass: 0 table, 1 JSON, 2 ladder of response 1. */
static void run_once(const uint8_t *data, size_t size, int mode)
{
    char err[PCAP_ERRBUF_SIZE + 256];
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return;
    pcap_t *pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, err);
    if (!pc) {
        fclose(f);
        return;
    }
    (void)pa_run(pc, "fuzz", mode == 1 ? 8080 : 0, mode == 1, mode == 2, err, sizeof err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen needs a buffer */
    for (int mode = 0; mode < 3; mode++)
        run_once(data, size, mode);
    return 0;
}
