/* The benchmark sets' generator (tools/common/datasets.c, used by the tools, not
 * part of libram): dataset_digit_origin() must report exactly the box that
 * dataset_make() paints the digit into, since ram-eval counts the glimpses
 * that land on the digit with it; dataset_make_uncluttered() must paint the
 * digit alone; and the fixed test sets' placements must never change
 * (ram-data's exports are promised byte for byte).  The two-digit sets
 * (pairs100, sum100): two digits of different labels, their boxes inside
 * the canvas and apart, painted where dataset_digit_boxes() says, in the
 * reading order dataset_digit_labels() gives, the class and the sum the
 * pair's; and the same images from the same arguments. */
#include "datasets.h"

#include <check.h>
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            dataset_make_with(kinds[k], digits, NULL, N_DIGITS, index, ones, seed, with);
            dataset_make_with(kinds[k], digits, NULL, N_DIGITS, index, zeros, seed, without);
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
        dataset_make_uncluttered(DATASET_CLUTTERED100, digits, NULL, N_DIGITS, index, 3, out);
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

START_TEST(test_some_clutter_paints_the_first_pieces) {
    /* ram-train --clutter N: 0 pieces is the uncluttered image, all of them
     * (or -1) the set's, each piece more adds to the image, and the digit
     * stays where it was. */
    const dataset_kind kinds[] = {DATASET_CLUTTERED60, DATASET_CLUTTERED100};
    float *digits = random_digits(N_DIGITS), *ones = malloc(sizeof(float) * D * D);
    float *prev = malloc(sizeof(float) * 100 * 100), *out = malloc(sizeof(float) * 100 * 100);
    float *want = malloc(sizeof(float) * 100 * 100);
    ck_assert(digits && ones && prev && out && want);
    for (int i = 0; i < D * D; i++)
        ones[i] = 1.0f;
    for (int k = 0; k < 2; k++) {
        const int S = dataset_side(kinds[k]), n = S * S, pieces = dataset_pieces(kinds[k]);
        for (int index = 0; index < 10; index++) {
            dataset_make_some(kinds[k], digits, NULL, N_DIGITS, index, NULL, 0, 5, out);
            dataset_make_uncluttered(kinds[k], digits, NULL, N_DIGITS, index, 5, want);
            ck_assert(!memcmp(out, want, sizeof(float) * n));
            for (int p = 1; p <= pieces; p++) {
                memcpy(prev, out, sizeof(float) * n);
                dataset_make_some(kinds[k], digits, NULL, N_DIGITS, index, NULL, p, 5, out);
                int grew = 0;
                for (int i = 0; i < n; i++) {
                    ck_assert(out[i] >= prev[i]);
                    grew |= out[i] > prev[i];
                }
                ck_assert_msg(grew, "piece %d of image %d added nothing", p, index);
            }
            dataset_make(kinds[k], digits, NULL, N_DIGITS, index, 5, want);
            ck_assert(!memcmp(out, want, sizeof(float) * n));
            dataset_make_some(kinds[k], digits, NULL, N_DIGITS, index, NULL, -1, 5, out);
            ck_assert(!memcmp(out, want, sizeof(float) * n));
            dataset_make_with(kinds[k], digits, NULL, N_DIGITS, index, ones, 5, want);
            dataset_make_some(kinds[k], digits, NULL, N_DIGITS, index, ones, pieces, 5, out);
            ck_assert(!memcmp(out, want, sizeof(float) * n));
        }
    }
    free(want);
    free(out);
    free(prev);
    free(ones);
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

/* ---- two-digit sets ------------------------------------------------------------ */

enum { N_PAIR = 200 };

/* Labels 0..9 from an LCG: unevenly spread, as real ones are. */
static void random_labels(int *labels, int n, uint32_t s) {
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        labels[i] = (int)((s >> 16) % 10);
    }
}

/* Digits whose pixels all hold (i + 1) / 256, so that a pixel tells which
 * digit was painted there. */
static float *flat_digits(int n) {
    float *d = malloc(sizeof(float) * (size_t)n * D * D);
    for (int i = 0; d && i < n; i++)
        for (int p = 0; p < D * D; p++)
            d[(size_t)i * D * D + p] = (float)(i + 1) / 256.0f;
    return d;
}

START_TEST(test_pair_partner_has_another_label) {
    int labels[N_PAIR];
    random_labels(labels, N_PAIR, 99);
    for (uint64_t seed = 1; seed < 4; seed++)
        for (int index = 0; index < N_PAIR; index++) {
            const int other = dataset_partner(DATASET_PAIRS100, labels, N_PAIR, index, seed);
            ck_assert(other >= 0 && other < N_PAIR && other != index);
            ck_assert_int_ne(labels[other], labels[index]);
            /* the same partner for sum100: the same images */
            ck_assert_int_eq(dataset_partner(DATASET_SUM100, labels, N_PAIR, index, seed), other);
        }
    ck_assert_int_eq(dataset_partner(DATASET_CLUTTERED100, labels, N_PAIR, 0, 1), -1);
}
END_TEST

START_TEST(test_pair_partner_is_drawn_not_fixed) {
    /* From (seed, index): another seed gives another partner now and then
     * (training pairs change every epoch). */
    int labels[N_PAIR], changed = 0;
    random_labels(labels, N_PAIR, 5);
    for (int index = 0; index < N_PAIR; index++)
        changed += dataset_partner(DATASET_PAIRS100, labels, N_PAIR, index, 1) !=
                   dataset_partner(DATASET_PAIRS100, labels, N_PAIR, index, 2);
    ck_assert_int_gt(changed, N_PAIR / 2);
}
END_TEST

START_TEST(test_pair_partner_fallback_and_refusal) {
    /* A pool of one label but one digit: that digit is every other one's
     * partner, found by the draws or by the scan after them. */
    enum { N = 1000, ODD = 617 };
    static int labels[N];
    for (int i = 0; i < N; i++)
        labels[i] = 3;
    labels[ODD] = 7;
    for (int index = 0; index < 50; index++)
        ck_assert_int_eq(dataset_partner(DATASET_PAIRS100, labels, N, index, 11), ODD);
    const int o = dataset_partner(DATASET_PAIRS100, labels, N, ODD, 11);
    ck_assert(o >= 0 && o < N && o != ODD);
    ck_assert_int_eq(dataset_check_labels("check", DATASET_PAIRS100, labels, N, "pool"), 0);
    /* One label only: no partner, and the tools refuse such a pool. */
    labels[ODD] = 3;
    ck_assert_int_eq(dataset_partner(DATASET_PAIRS100, labels, N, 0, 11), -1);
    ck_assert_int_eq(dataset_label(DATASET_PAIRS100, labels, N, 0, 11), -1);
    int d[2];
    ck_assert_int_eq(dataset_digit_labels(DATASET_SUM100, labels, N, 0, 11, d), -1);
    ck_assert_int_eq(dataset_check_labels("check", DATASET_PAIRS100, labels, N, "pool"), -1);
    ck_assert_int_eq(dataset_check_labels("check", DATASET_SUM100, labels, 0, "pool"), -1);
    ck_assert_int_eq(dataset_check_labels("check", DATASET_CLUTTERED100, labels, N, "pool"), 0);
    labels[ODD] = 10; /* not a digit */
    ck_assert_int_eq(dataset_check_labels("check", DATASET_SUM100, labels, N, "pool"), -1);
}
END_TEST

START_TEST(test_pair_boxes_inside_apart_and_in_reading_order) {
    int swapped = 0, total = 0, left = 72, right = 0, top = 72, bottom = 0;
    for (uint64_t seed = 1; seed < 6; seed++)
        for (int index = 0; index < N_PAIR; index++) {
            int x[2], y[2], x0, y0;
            ck_assert_int_eq(dataset_digit_boxes(DATASET_PAIRS100, N_PAIR, index, seed, x, y), 2);
            for (int b = 0; b < 2; b++) {
                ck_assert(x[b] >= 0 && x[b] <= 100 - D && y[b] >= 0 && y[b] <= 100 - D);
                left = x[b] < left ? x[b] : left;
                right = x[b] > right ? x[b] : right;
                top = y[b] < top ? y[b] : top;
                bottom = y[b] > bottom ? y[b] : bottom;
            }
            ck_assert(abs(x[0] - x[1]) >= D || abs(y[0] - y[1]) >= D); /* apart */
            ck_assert(x[0] < x[1] || (x[0] == x[1] && y[0] < y[1]));   /* reading order */
            /* digit `index` is one of the two, and sum100's are the same */
            dataset_digit_origin(DATASET_PAIRS100, N_PAIR, index, seed, &x0, &y0);
            ck_assert((x0 == x[0] && y0 == y[0]) || (x0 == x[1] && y0 == y[1]));
            swapped += x0 != x[0] || y0 != y[0];
            total++;
            int xs[2], ys[2];
            dataset_digit_boxes(DATASET_SUM100, N_PAIR, index, seed, xs, ys);
            ck_assert(xs[0] == x[0] && xs[1] == x[1] && ys[0] == y[0] && ys[1] == y[1]);
        }
    /* Either digit comes first, and the boxes reach the canvas's edges. */
    ck_assert(swapped > total / 4 && swapped < 3 * total / 4);
    ck_assert(left <= 2 && right >= 70 && top <= 2 && bottom >= 70);
    /* One-digit sets: one box, dataset_digit_origin's. */
    int x[2], y[2], x0, y0;
    ck_assert_int_eq(dataset_digit_boxes(DATASET_CLUTTERED60, N_PAIR, 3, 9, x, y), 1);
    dataset_digit_origin(DATASET_CLUTTERED60, N_PAIR, 3, 9, &x0, &y0);
    ck_assert(x[0] == x0 && y[0] == y0);
}
END_TEST

START_TEST(test_pair_painted_in_its_boxes_in_reading_order) {
    int labels[N_PAIR];
    random_labels(labels, N_PAIR, 17);
    float *digits = flat_digits(N_PAIR), *out = malloc(sizeof(float) * 100 * 100),
          *again = malloc(sizeof(float) * 100 * 100);
    ck_assert(digits && out && again);
    for (uint64_t seed = 1; seed < 3; seed++)
        for (int index = 0; index < N_PAIR; index++) {
            int x[2], y[2], d[2];
            dataset_make(DATASET_PAIRS100, digits, labels, N_PAIR, index, seed, out);
            dataset_digit_boxes(DATASET_PAIRS100, N_PAIR, index, seed, x, y);
            ck_assert_int_eq(dataset_digit_labels(DATASET_PAIRS100, labels, N_PAIR, index, seed, d),
                             2);
            /* Which digit each box holds, by its pixel value. */
            int which[2];
            for (int b = 0; b < 2; b++) {
                which[b] = (int)(out[y[b] * 100 + x[b]] * 256.0f + 0.5f) - 1;
                ck_assert(which[b] >= 0 && which[b] < N_PAIR);
                ck_assert_int_eq(labels[which[b]], d[b]); /* reading order */
            }
            ck_assert(which[0] == index || which[1] == index);
            ck_assert_int_eq(which[0] + which[1] - index,
                             dataset_partner(DATASET_PAIRS100, labels, N_PAIR, index, seed));
            ck_assert_int_ne(d[0], d[1]);
            /* Every pixel: its box's digit, or 0 outside both (counted, not
             * asserted pixel by pixel: the sanitizer build is slow). */
            int bad = 0;
            for (int py = 0; py < 100; py++)
                for (int px = 0; px < 100; px++) {
                    float want = 0.0f;
                    for (int b = 0; b < 2; b++)
                        if (px >= x[b] && px < x[b] + D && py >= y[b] && py < y[b] + D)
                            want = (float)(which[b] + 1) / 256.0f;
                    bad += out[py * 100 + px] != want;
                }
            ck_assert_int_eq(bad, 0);
            /* The class and the sum are the pair's; sum100's image is the same,
             * and the same arguments give the same image. */
            ck_assert_int_eq(dataset_label(DATASET_PAIRS100, labels, N_PAIR, index, seed),
                             dataset_pair_class(d[0], d[1]));
            ck_assert_int_eq(dataset_label(DATASET_SUM100, labels, N_PAIR, index, seed),
                             d[0] + d[1]);
            dataset_make(DATASET_SUM100, digits, labels, N_PAIR, index, seed, again);
            ck_assert(!memcmp(out, again, sizeof(float) * 100 * 100));
            dataset_image(DATASET_PAIRS100, digits, labels, D * D, N_PAIR, index, seed, again);
            ck_assert(!memcmp(out, again, sizeof(float) * 100 * 100));
            dataset_make_uncluttered(DATASET_PAIRS100, digits, labels, N_PAIR, index, seed, again);
            ck_assert(!memcmp(out, again, sizeof(float) * 100 * 100));
        }
    free(again);
    free(out);
    free(digits);
}
END_TEST

START_TEST(test_pair_classes) {
    int seen[45] = {0};
    for (int a = 0; a < 10; a++)
        for (int b = 0; b < 10; b++) {
            const int k = dataset_pair_class(a, b);
            if (a == b) {
                ck_assert_int_eq(k, -1);
                continue;
            }
            ck_assert(k >= 0 && k < 45);
            ck_assert_int_eq(dataset_pair_class(b, a), k); /* unordered */
            seen[k]++;
            int lo, hi;
            ck_assert_int_eq(dataset_pair_digits(k, &lo, &hi), 0);
            ck_assert_int_eq(lo, a < b ? a : b);
            ck_assert_int_eq(hi, a < b ? b : a);
            char want[8];
            snprintf(want, sizeof want, "%d-%d", lo, hi);
            ck_assert_str_eq(dataset_class_name(DATASET_PAIRS100, k), want);
        }
    for (int k = 0; k < 45; k++) {
        ck_assert_int_eq(seen[k], 2); /* (a, b) and (b, a) */
        if (k)                        /* byte order is class order: an image folder keeps it */
            ck_assert(strcmp(dataset_class_name(DATASET_PAIRS100, k - 1),
                             dataset_class_name(DATASET_PAIRS100, k)) < 0);
    }
    int a, b;
    ck_assert_int_eq(dataset_pair_digits(45, &a, &b), -1);
    ck_assert_int_eq(dataset_pair_digits(-1, &a, &b), -1);
    ck_assert_int_eq(dataset_pair_class(0, 10), -1);
    ck_assert_int_eq(dataset_pair_class(-1, 3), -1);
    ck_assert_ptr_null(dataset_class_name(DATASET_PAIRS100, 45));
    ck_assert_str_eq(dataset_class_name(DATASET_SUM100, 3), "3");
    ck_assert_str_eq(dataset_class_name(DATASET_SUM100, 18), "18");
    ck_assert_ptr_null(dataset_class_name(DATASET_SUM100, 19));
    ck_assert_ptr_null(dataset_class_name(DATASET_CLUTTERED100, 3));
    ck_assert_ptr_null(dataset_class_name(DATASET_MNIST, 3));
    ck_assert_int_eq(dataset_classes(DATASET_PAIRS100), 45);
    ck_assert_int_eq(dataset_classes(DATASET_SUM100), 19);
    ck_assert_int_eq(dataset_classes(DATASET_CLUTTERED100), 10);
    ck_assert_int_eq(dataset_objects(DATASET_SUM100), 2);
    ck_assert_int_eq(dataset_objects(DATASET_MNIST), 1);
    dataset_kind k;
    ck_assert_int_eq(dataset_parse("pairs100", &k), 0);
    ck_assert_int_eq(k, DATASET_PAIRS100);
    ck_assert_int_eq(dataset_parse("sum100", &k), 0);
    ck_assert_int_eq(k, DATASET_SUM100);
}
END_TEST

START_TEST(test_pair_test_set_placement_is_pinned) {
    /* The first test images' boxes in reading order (x1, y1, x2, y2): a
     * change to the generator would change the test set. */
    static const int pinned[3][4] = {{5, 58, 9, 30}, {46, 51, 60, 16}, {30, 46, 61, 39}};
    for (int i = 0; i < 3; i++) {
        int x[2], y[2];
        dataset_digit_boxes(DATASET_PAIRS100, 10000, i, DATASET_TEST_SEED, x, y);
        ck_assert_int_eq(x[0], pinned[i][0]);
        ck_assert_int_eq(y[0], pinned[i][1]);
        ck_assert_int_eq(x[1], pinned[i][2]);
        ck_assert_int_eq(y[1], pinned[i][3]);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("datasets");
    TCase *tc = tcase_create("placement");
    tcase_add_test(tc, test_origin_is_where_the_digit_is_painted);
    tcase_add_test(tc, test_uncluttered_is_the_digit_alone);
    tcase_add_test(tc, test_some_clutter_paints_the_first_pieces);
    tcase_add_test(tc, test_mnist_origin_is_zero);
    tcase_add_test(tc, test_test_set_placement_is_pinned);
    suite_add_tcase(s, tc);
    TCase *two = tcase_create("two digits");
    tcase_add_test(two, test_pair_partner_has_another_label);
    tcase_add_test(two, test_pair_partner_is_drawn_not_fixed);
    tcase_add_test(two, test_pair_partner_fallback_and_refusal);
    tcase_add_test(two, test_pair_boxes_inside_apart_and_in_reading_order);
    tcase_add_test(two, test_pair_painted_in_its_boxes_in_reading_order);
    tcase_add_test(two, test_pair_classes);
    tcase_add_test(two, test_pair_test_set_placement_is_pinned);
    suite_add_tcase(s, two);
    return run_suite(s);
}
