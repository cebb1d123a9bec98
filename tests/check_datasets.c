/* The benchmark sets' generator (tools/common/datasets.c, used by the tools, not
 * part of libram): dataset_digit_origin() must report exactly the box that
 * dataset_make() paints the digit into, since ram-eval counts the glimpses
 * that land on the digit with it; dataset_make_uncluttered() must paint the
 * digit alone; and the fixed test sets' placements must never change
 * (ram-data's exports are promised byte for byte). */
#include "datasets.h"

#include <check.h>
#include "check_main.h"
#include <stdlib.h>

enum { N_DIGITS = 50, D = 28 };

/* Random "digits" (n x 28 x 28 in [0, 1]), for clutter to be cut from. */
static float *random_digits(int n) {
    float *d = malloc(sizeof(float) * (size_t)n * D * D);
    uint32_t s = 12345;
    for (int i = 0; d && i < n * D * D; i++) {
        s = s * 1664525u + 1013904223u;
        d[i] = (float)(s >> 8) / 16777216.0f;
    }
    return d;
}

START_TEST(test_origin_is_where_the_digit_is_painted) {
    const dataset_kind kinds[] = {DATASET_TRANSLATED60, DATASET_CLUTTERED60, DATASET_CLUTTERED100};
    float *digits = random_digits(N_DIGITS);
    float ones[D * D], zeros[D * D] = {0};
    for (int i = 0; i < D * D; i++)
        ones[i] = 1.0f;
    float *with = malloc(sizeof(float) * 100 * 100), *without = malloc(sizeof(float) * 100 * 100);
    ck_assert(digits && with && without);
    for (int k = 0; k < 3; k++) {
        const int S = dataset_side(kinds[k]);
        for (int index = 0; index < 40; index++) {
            const uint64_t seed = 7 + (uint64_t)index % 3;
            int x0, y0;
            dataset_digit_origin(kinds[k], N_DIGITS, index, seed, &x0, &y0);
            ck_assert(x0 >= 0 && x0 <= S - D && y0 >= 0 && y0 <= S - D);
            /* A digit of ones against no digit, with the same clutter: the
             * two differ exactly inside the box, except where clutter alone
             * already reached 1. */
            dataset_make_with(kinds[k], digits, N_DIGITS, index, ones, seed, with);
            dataset_make_with(kinds[k], digits, N_DIGITS, index, zeros, seed, without);
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    const int in = x >= x0 && x < x0 + D && y >= y0 && y < y0 + D, p = y * S + x;
                    if (in)
                        ck_assert(with[p] == 1.0f); /* clipped: the ones were added here */
                    else
                        ck_assert(with[p] == without[p]);
                }
        }
    }
    free(with);
    free(without);
    free(digits);
}
END_TEST

START_TEST(test_uncluttered_is_the_digit_alone) {
    /* ram-eval --no-clutter: the digit in its box, nothing else. */
    float *digits = random_digits(N_DIGITS), *out = malloc(sizeof(float) * 100 * 100);
    ck_assert(digits && out);
    for (int index = 0; index < 20; index++) {
        int x0, y0;
        dataset_digit_origin(DATASET_CLUTTERED100, N_DIGITS, index, 3, &x0, &y0);
        dataset_make_uncluttered(DATASET_CLUTTERED100, digits, N_DIGITS, index, 3, out);
        for (int y = 0; y < 100; y++)
            for (int x = 0; x < 100; x++) {
                const int in = x >= x0 && x < x0 + D && y >= y0 && y < y0 + D;
                const float want = in ? digits[(size_t)index * D * D + (y - y0) * D + x - x0] : 0;
                ck_assert(out[y * 100 + x] == want);
            }
    }
    free(out);
    free(digits);
}
END_TEST

START_TEST(test_mnist_origin_is_zero) {
    int x = -1, y = -1;
    dataset_digit_origin(DATASET_MNIST, 10000, 5, DATASET_TEST_SEED, &x, &y);
    ck_assert_int_eq(x, 0);
    ck_assert_int_eq(y, 0);
}
END_TEST

START_TEST(test_test_set_placement_is_pinned) {
    /* The first test images' digit positions, as every committed model was
     * evaluated on (translated60's agree with the digits' ink in ram-data's
     * export): a change to the generator would change the test sets. */
    static const struct {
        dataset_kind kind;
        int x[3], y[3];
    } pinned[] = {
        {DATASET_TRANSLATED60, {17, 27, 4}, {22, 3, 22}},
        {DATASET_CLUTTERED60, {6, 13, 8}, {18, 11, 21}},
        {DATASET_CLUTTERED100, {68, 27, 64}, {40, 53, 60}},
    };
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++) {
            int x, y;
            dataset_digit_origin(pinned[k].kind, 10000, i, DATASET_TEST_SEED, &x, &y);
            ck_assert_int_eq(x, pinned[k].x[i]);
            ck_assert_int_eq(y, pinned[k].y[i]);
        }
}
END_TEST

int main(void) {
    Suite *s = suite_create("datasets");
    TCase *tc = tcase_create("placement");
    tcase_add_test(tc, test_origin_is_where_the_digit_is_painted);
    tcase_add_test(tc, test_uncluttered_is_the_digit_alone);
    tcase_add_test(tc, test_mnist_origin_is_zero);
    tcase_add_test(tc, test_test_set_placement_is_pinned);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
