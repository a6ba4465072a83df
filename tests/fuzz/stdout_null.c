/* stdout_null.c - LLVMFuzzerInitialize for the analyser targets
 * (fuzz_pcap.c, fuzz_strace.c), linked into each: the analysers render
 * their table and JSON to stdout on every input, which is sent to /dev/null
 * once, before the first, so that the fuzzer's own log stays readable. */
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!freopen("/dev/null", "w", stdout))
        abort();
    return 0;
}
