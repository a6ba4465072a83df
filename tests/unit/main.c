/* main.c - the unit test runner: every suite, CUnit's basic interface in
 * verbose mode (its summary lines are what CI reads).
 *
 *   unit                  run every suite
 *   unit SUITE [TEST]     run one suite (or one test of it)
 *
 * The exit status is the number of failed assertions
 * (CU_get_number_of_failures), clamped to 255 so that 256 failures cannot
 * wrap to a successful exit; 255 also when the registry cannot be built. */
#include <signal.h>
#include <stdio.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "unit.h"

int main(int argc, char **argv)
{
    int (*registrations[])(void) = {
        unit_register_reader,       unit_register_request,
        unit_register_response,     unit_register_connection,
        unit_register_httpserver,   unit_register_conn_handlers,
        unit_register_options,      unit_register_ssockets,
        unit_register_threadpool,   unit_register_stream,
    };
    unsigned failures;
    size_t i;

    /* Every server write uses MSG_NOSIGNAL; this only keeps a peer-side
     * write to a closed socket from killing the whole run. */
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("unit tests: KIT_FIXED B1=%d B2=%d B3=%d B4=%d B5=%d B6=%d B7=%d B8=%d\n",
           KIT_FIXED_B1, KIT_FIXED_B2, KIT_FIXED_B3, KIT_FIXED_B4,
           KIT_FIXED_B5, KIT_FIXED_B6, KIT_FIXED_B7, KIT_FIXED_B8);
    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "unit: %s\n", CU_get_error_msg());
        return 255;
    }
    for (i = 0; i < sizeof registrations / sizeof registrations[0]; i++)
        if (registrations[i]() != 0) {
            fprintf(stderr, "unit: registering suite %zu: %s\n", i,
                    CU_get_error_msg());
            CU_cleanup_registry();
            return 255;
        }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (argc > 1) {
        CU_pSuite suite = CU_get_suite(argv[1]);

        if (!suite) {
            fprintf(stderr, "unit: no suite '%s'\n", argv[1]);
            CU_cleanup_registry();
            return 255;
        }
        if (argc > 2) {
            CU_pTest test = CU_get_test(suite, argv[2]);

            if (!test) {
                fprintf(stderr, "unit: no test '%s' in suite '%s'\n", argv[2],
                        argv[1]);
                CU_cleanup_registry();
                return 255;
            }
            CU_basic_run_test(suite, test);
        } else {
            CU_basic_run_suite(suite);
        }
    } else {
        CU_basic_run_tests();
    }
    failures = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures > 255 ? 255 : (int)failures;
}
