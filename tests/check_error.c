/* Errors: the thread-local message, status strings, and the versioned
 * params copy every *_create() relies on. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_fail_formats_and_returns) {
    ram_clear_error();
    ck_assert_str_eq(ram_last_error(), "");
    ck_assert_int_eq(ram_fail(RAM_ERR_IO, "file %s: %d", "x.ram", 7), RAM_ERR_IO);
    ck_assert_str_eq(ram_last_error(), "file x.ram: 7");
    /* An over-long message is cut, never overflows. */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ram_fail(RAM_ERR_FORMAT, "%s", big);
    ck_assert_uint_lt(strlen(ram_last_error()), sizeof big - 1);
    ck_assert_uint_gt(strlen(ram_last_error()), 100);
}
END_TEST

static void *other_thread(void *arg) {
    (void)arg;
    ram_fail(RAM_ERR_NUMERIC, "from another thread");
    return NULL;
}

START_TEST(test_message_is_per_thread) {
    ram_fail(RAM_ERR_IO, "mine");
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
    pthread_join(th, NULL);
    ck_assert_str_eq(ram_last_error(), "mine");
}
END_TEST

typedef struct v2 { /* a params struct as a newer version would have it */
    size_t struct_size;
    int a, b;
} v2;

START_TEST(test_copy_params_versions) {
    v2 dst = {0, 1, 2}, user = {sizeof(size_t) + sizeof(int), 10, 99};
    /* An older caller knew only `a`: b keeps its default. */
    ck_assert_int_eq(ram_copy_params(&dst, sizeof dst, &user, "t"), RAM_OK);
    ck_assert_int_eq(dst.a, 10);
    ck_assert_int_eq(dst.b, 2);
    ck_assert_uint_eq(dst.struct_size, sizeof dst);
    /* A newer caller's extra fields are ignored, not read past. */
    struct {
        v2 base;
        int extra;
    } newer = {{sizeof newer, 5, 6}, 7};
    ck_assert_int_eq(ram_copy_params(&dst, sizeof dst, &newer, "t"), RAM_OK);
    ck_assert_int_eq(dst.b, 6);
    /* Uninitialised or NULL params are refused with a message. */
    v2 bad = {0, 1, 1};
    ck_assert_int_eq(ram_copy_params(&dst, sizeof dst, &bad, "t"), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "params_init"));
    ck_assert_int_eq(ram_copy_params(&dst, sizeof dst, NULL, "t"), RAM_ERR_INVALID_ARGUMENT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("error");
    tcase_add_test(tc, test_fail_formats_and_returns);
    tcase_add_test(tc, test_message_is_per_thread);
    tcase_add_test(tc, test_copy_params_versions);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
