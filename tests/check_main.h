/* The main() every Check suite shares: run one suite, exit non-zero if any
 * test failed (CTest reads the exit status). */
#ifndef RAM_TESTS_CHECK_MAIN_H
#define RAM_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static int run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
