/* ram_image_fit(): each fit rule's geometry, the channel conversions and
 * the refusals, against values worked out by hand. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdlib.h>

static ram_model *canvas(int c, int h, int w, ram_fit fit) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = c;
    p.height = h;
    p.width = w;
    p.glimpse.patch = 4;
    p.glimpse_hidden = p.loc_hidden = p.glimpse_out = p.core_hidden = 4;
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_model_set_fit(m, fit), RAM_OK);
    return m;
}

/* Pixel (y, x) of an h x w image: distinct, exactly representable values. */
static float value(int ch, int y, int x) {
    return (float)(ch * 10000 + y * 100 + x + 1);
}

static float *image(int c, int h, int w) {
    float *img = malloc(sizeof(float) * c * h * w);
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                img[((size_t)ch * h + y) * w + x] = value(ch, y, x);
    return img;
}

START_TEST(test_pad) {
    ram_model *m = canvas(1, 8, 10, RAM_FIT_PAD);
    float out[80], *small = image(1, 3, 5), *big = image(1, 11, 13);
    ck_assert_int_eq(ram_image_fit(m, small, 1, 3, 5, out, 80), RAM_OK);
    /* 3 x 5 in 8 x 10: rows 2..4, columns 2..6 (floor of half the margin). */
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 10; x++) {
            const bool in = y >= 2 && y < 5 && x >= 2 && x < 7;
            ck_assert_float_eq(out[y * 10 + x], in ? value(0, y - 2, x - 2) : 0.0f);
        }
    /* 11 x 13 in 8 x 10: its centre, rows 2..9 and columns 2..11 of it. */
    ck_assert_int_eq(ram_image_fit(m, big, 1, 11, 13, out, 80), RAM_OK);
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 10; x++)
            ck_assert_float_eq(out[y * 10 + x], value(0, y + 2, x + 2));
    free(small);
    free(big);
    ram_model_free(m);
}
END_TEST

START_TEST(test_resize) {
    ram_model *m = canvas(1, 6, 6, RAM_FIT_RESIZE);
    float out[36], *same = image(1, 6, 6);
    /* The same size: sample points fall on pixel centres, an exact copy. */
    ck_assert_int_eq(ram_image_fit(m, same, 1, 6, 6, out, 36), RAM_OK);
    for (int i = 0; i < 36; i++)
        ck_assert_float_eq(out[i], same[i]);
    /* A 3 x 3 ramp v = x doubled: centres at x/2 - 1/4, edges repeated. */
    float ramp[9];
    for (int i = 0; i < 9; i++)
        ramp[i] = (float)(i % 3);
    ck_assert_int_eq(ram_image_fit(m, ramp, 1, 3, 3, out, 36), RAM_OK);
    const float want[6] = {0.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.0f};
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 6; x++)
            ck_assert_float_eq_tol(out[y * 6 + x], want[x], 1e-6f);
    /* A constant stays constant, whatever the scale. */
    float flat[35];
    for (int i = 0; i < 35; i++)
        flat[i] = 0.5f;
    ck_assert_int_eq(ram_image_fit(m, flat, 1, 5, 7, out, 36), RAM_OK);
    for (int i = 0; i < 36; i++)
        ck_assert_float_eq_tol(out[i], 0.5f, 1e-7f);
    free(same);
    ram_model_free(m);
}
END_TEST

START_TEST(test_letterbox_and_crop) {
    ram_model *lb = canvas(1, 8, 8, RAM_FIT_LETTERBOX), *cr = canvas(1, 8, 8, RAM_FIT_CROP);
    float wide[4 * 8], out[64];
    for (int i = 0; i < 32; i++)
        wide[i] = 1.0f;
    /* 4 x 8 letterboxed into 8 x 8: scale 1, rows 2..5 covered. */
    ck_assert_int_eq(ram_image_fit(lb, wide, 1, 4, 8, out, 64), RAM_OK);
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            ck_assert_float_eq(out[y * 8 + x], y >= 2 && y < 6 ? 1.0f : 0.0f);
    /* Cropped: scale 2 to cover, 8 x 16 of which the centre 8 x 8. */
    ck_assert_int_eq(ram_image_fit(cr, wide, 1, 4, 8, out, 64), RAM_OK);
    for (int i = 0; i < 64; i++)
        ck_assert_float_eq_tol(out[i], 1.0f, 1e-7f);
    /* And its columns are the middle half of the image's: a ramp v = x
     * (0..7) doubled from 16 columns, the centre 8 of them: x/2 + 1.75. */
    for (int i = 0; i < 32; i++)
        wide[i] = (float)(i % 8);
    ck_assert_int_eq(ram_image_fit(cr, wide, 1, 4, 8, out, 64), RAM_OK);
    for (int x = 0; x < 8; x++)
        ck_assert_float_eq_tol(out[3 * 8 + x], 0.5f * x + 1.75f, 1e-6f);
    ram_model_free(lb);
    ram_model_free(cr);
}
END_TEST

START_TEST(test_channels) {
    float rgba[4 * 4], out[3 * 4];
    for (int i = 0; i < 16; i++)
        rgba[i] = (float)(i / 4 + 1) * 0.1f; /* R 0.1, G 0.2, B 0.3, A 0.4 */
    ram_model *grey = canvas(1, 2, 2, RAM_FIT_PAD), *rgb = canvas(3, 2, 2, RAM_FIT_PAD);
    ck_assert_int_eq(ram_image_fit(grey, rgba, 3, 2, 2, out, 12), RAM_OK);
    ck_assert_float_eq_tol(out[0], 0.299f * 0.1f + 0.587f * 0.2f + 0.114f * 0.3f, 1e-7f);
    ck_assert_int_eq(ram_image_fit(grey, rgba, 4, 2, 2, out, 12), RAM_OK); /* alpha dropped */
    ck_assert_float_eq_tol(out[3], 0.299f * 0.1f + 0.587f * 0.2f + 0.114f * 0.3f, 1e-7f);
    ck_assert_int_eq(ram_image_fit(rgb, rgba, 4, 2, 2, out, 12), RAM_OK);
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(out[i], rgba[i]);
    ck_assert_int_eq(ram_image_fit(rgb, rgba, 1, 2, 2, out, 12), RAM_OK); /* grey repeated */
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(out[i], 0.1f);
    ck_assert_int_eq(ram_image_fit(rgb, rgba, 2, 2, 2, out, 12), RAM_OK); /* grey + alpha */
    ck_assert_float_eq(out[8], 0.1f);
    ck_assert_int_eq(ram_image_fit(rgb, rgba, 5, 2, 2, out, 12), RAM_ERR_INVALID_ARGUMENT);
    ram_model *two = canvas(2, 2, 2, RAM_FIT_PAD);
    ck_assert_int_eq(ram_image_fit(two, rgba, 3, 2, 2, out, 12), RAM_ERR_INVALID_ARGUMENT);
    ram_model_free(two);
    ram_model_free(grey);
    ram_model_free(rgb);
}
END_TEST

START_TEST(test_refusals) {
    ram_model *m = canvas(1, 4, 4, RAM_FIT_RESIZE);
    float img[16] = {0}, out[16];
    ck_assert_int_eq(ram_image_fit(NULL, img, 1, 4, 4, out, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, NULL, 1, 4, 4, out, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, img, 1, 4, 4, NULL, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, img, 1, 0, 4, out, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, img, 0, 4, 4, out, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, img, 1, 100000, 100000, out, 16), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_image_fit(m, img, 1, 4, 4, out, 15), RAM_ERR_BUFFER_TOO_SMALL);
    ram_model_free(m);
}
END_TEST

static Suite *fit_suite(void) {
    Suite *s = suite_create("fit");
    TCase *tc = tcase_create("fit");
    tcase_add_test(tc, test_pad);
    tcase_add_test(tc, test_resize);
    tcase_add_test(tc, test_letterbox_and_crop);
    tcase_add_test(tc, test_channels);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return run_suite(fit_suite());
}
