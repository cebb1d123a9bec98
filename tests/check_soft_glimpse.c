/* The soft (bilinear) glimpse sensor: its values against a reference
 * written from the header's description alone, its location derivative
 * against finite differences (also where samples sit exactly on pixel
 * centres, on the image's edge and outside it), the public gradient call,
 * argument checking, and the hard sensor untouched by the choice. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static uint32_t lcg_state;
static float lcg_uniform(void) { /* [0, 1) */
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) * (1.0f / 16777216.0f);
}

static float *random_images(int n, int c, int h, int w) {
    size_t count = (size_t)n * c * h * w;
    float *img = malloc(sizeof(float) * count);
    ck_assert_ptr_nonnull(img);
    for (size_t i = 0; i < count; i++)
        img[i] = lcg_uniform();
    return img;
}

static ram_glimpse *make_sensor(int patch, int depth, float scale, ram_sensor sensor) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    p.patch = patch;
    p.depth = depth;
    p.scale = scale;
    ram_glimpse *g = NULL;
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, sensor, &g), RAM_OK);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(ram_glimpse_sensor(g), sensor);
    return g;
}

/* Pixel (r, col) of channel ch, 0 outside the image. */
static double pixel(const float *img, int h, int w, int ch, long r, long col) {
    if (r < 0 || r >= h || col < 0 || col >= w) return 0.0;
    return img[((size_t)ch * h + r) * w + col];
}

/* The image at the continuous point (x, y), pixel edges at integers,
 * interpolated bilinearly between the four nearest pixel centres. */
static double bilinear(const float *img, int h, int w, int ch, double x, double y) {
    const double vx = x - 0.5, vy = y - 0.5;
    const double x0 = floor(vx), y0 = floor(vy), fx = vx - x0, fy = vy - y0;
    const long c0 = (long)x0, r0 = (long)y0;
    return (1 - fy) *
               ((1 - fx) * pixel(img, h, w, ch, r0, c0) + fx * pixel(img, h, w, ch, r0, c0 + 1)) +
           fy * ((1 - fx) * pixel(img, h, w, ch, r0 + 1, c0) +
                 fx * pixel(img, h, w, ch, r0 + 1, c0 + 1));
}

/* The header's description, in double: scale k's square of side
 * round(P scale^k) centred on ((lx + 1) w / 2, (ly + 1) h / 2), read at the
 * centre of each of its P x P cells. */
static void ref_soft(const float *img, int c, int h, int w, int P, int depth, double scale,
                     double lx, double ly, double *out) {
    const double cx = (lx + 1) * w / 2, cy = (ly + 1) * h / 2;
    for (int k = 0; k < depth; k++) {
        const double side = (double)lround(P * pow(scale, k)), cell = side / P;
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++)
                    out[(((size_t)ch * depth + k) * P + i) * P + j] =
                        bilinear(img, h, w, ch, cx - side / 2 + (j + 0.5) * cell,
                                 cy - side / 2 + (i + 0.5) * cell);
    }
}

/* A location whose glimpse centre is pixel coordinate `pos` (edges at
 * integers) on an axis of `extent` pixels. */
static float loc_at(double pos, int extent) {
    return (float)(2.0 * pos / extent - 1.0);
}

static void compare_with_reference(int P, int depth, float scale, int c, int h, int w,
                                   const float *locs, int n) {
    ram_glimpse *g = make_sensor(P, depth, scale, RAM_SENSOR_SOFT);
    const size_t per = (size_t)c * depth * P * P;
    ck_assert_uint_eq(ram_glimpse_size(g, c), per);
    float *img = random_images(n, c, h, w);
    float *out = malloc(sizeof(float) * per * n);
    double *ref = malloc(sizeof(double) * per);
    ck_assert_int_eq(ram_glimpse_extract(g, img, n, c, h, w, locs, out, per * n), RAM_OK);
    for (int i = 0; i < n; i++) {
        ref_soft(img + (size_t)i * c * h * w, c, h, w, P, depth, scale, locs[2 * i],
                 locs[2 * i + 1], ref);
        for (size_t k = 0; k < per; k++)
            ck_assert_msg(fabs(out[i * per + k] - ref[k]) < 2e-6,
                          "image %d value %zu: %.8f, reference %.8f (loc %g, %g)", i, k,
                          (double)out[i * per + k], ref[k], (double)locs[2 * i],
                          (double)locs[2 * i + 1]);
    }
    free(ref);
    free(out);
    free(img);
    ram_glimpse_free(g);
}

/* ---- values ---- */

START_TEST(test_reference_values) {
    lcg_state = 1;
    /* Inside, on the edges, straddling them, outside, on pixel centres. */
    const float locs[] = {0.0f, 0.0f,  0.13f, -0.41f, -1.0f, 1.0f,  0.97f,  -0.99f, -1.3f,  0.2f,
                          2.5f, -3.0f, 0.1f,  0.1f,   -0.6f, 0.75f, 0.333f, 0.666f, -0.05f, 0.95f};
    const int n = sizeof locs / sizeof *locs / 2;
    compare_with_reference(3, 1, 2.0f, 1, 7, 9, locs, n);   /* one pixel per cell */
    compare_with_reference(4, 3, 2.0f, 2, 11, 10, locs, n); /* 4, 8, 16 wide */
    compare_with_reference(3, 3, 1.7f, 1, 9, 12, locs, n);  /* non-integer cells */
    compare_with_reference(1, 2, 3.0f, 3, 5, 5, locs, n);   /* one sample */
    compare_with_reference(5, 2, 2.0f, 1, 1, 1, locs, n);   /* a 1 x 1 image */
}
END_TEST

/* With one pixel per cell and samples on pixel centres the soft glimpse is
 * the hard one, bit for bit (a fraction of 0 leaves the pixel as it is). */
START_TEST(test_aligned_equals_hard) {
    lcg_state = 2;
    /* Sides of powers of 2: the locations below are exact floats. */
    const int P = 4, h = 8, w = 16, c = 2;
    ram_glimpse *soft = make_sensor(P, 1, 2.0f, RAM_SENSOR_SOFT);
    ram_glimpse *hard = make_sensor(P, 1, 2.0f, RAM_SENSOR_HARD);
    float *img = random_images(1, c, h, w);
    const size_t per = ram_glimpse_size(soft, c);
    float a[2 * 4 * 4], b[2 * 4 * 4];
    /* Square starts (x0, y0) from well inside to partly outside. */
    const int starts[][2] = {{3, 3}, {0, 0}, {12, 4}, {-2, 5}, {14, -3}};
    for (size_t s = 0; s < sizeof starts / sizeof *starts; s++) {
        const float loc[2] = {loc_at(starts[s][0] + P / 2.0, w), loc_at(starts[s][1] + P / 2.0, h)};
        ck_assert_int_eq(ram_glimpse_extract(soft, img, 1, c, h, w, loc, a, per), RAM_OK);
        ck_assert_int_eq(ram_glimpse_extract(hard, img, 1, c, h, w, loc, b, per), RAM_OK);
        ck_assert_msg(memcmp(a, b, sizeof(float) * per) == 0, "start %d, %d: soft != hard",
                      starts[s][0], starts[s][1]);
    }
    free(img);
    ram_glimpse_free(soft);
    ram_glimpse_free(hard);
}
END_TEST

/* A 2x2 cell on pixel edges: the sample at its centre is its mean, as
 * the hard sensor's average (to rounding). */
START_TEST(test_two_by_two_cells_are_means) {
    lcg_state = 3;
    const int P = 3, h = 12, w = 12;
    ram_glimpse *soft = make_sensor(P, 2, 2.0f, RAM_SENSOR_SOFT);
    ram_glimpse *hard = make_sensor(P, 2, 2.0f, RAM_SENSOR_HARD);
    float *img = random_images(1, 1, h, w);
    float a[2 * 9], b[2 * 9];
    const float loc[2] = {loc_at(6.0, w), loc_at(6.0, h)}; /* the 6-wide square at 3..9 */
    ck_assert_int_eq(ram_glimpse_extract(soft, img, 1, 1, h, w, loc, a, 18), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(hard, img, 1, 1, h, w, loc, b, 18), RAM_OK);
    for (int k = 9; k < 18; k++) /* the second scale */
        ck_assert_msg(fabsf(a[k] - b[k]) < 1e-6f, "value %d: %g vs %g", k, (double)a[k],
                      (double)b[k]);
    free(img);
    ram_glimpse_free(soft);
    ram_glimpse_free(hard);
}
END_TEST

/* ---- the location derivative ---- */

/* Every value's derivative (jacobian) against the one-sided difference
 * toward +x and +y over a step small enough that no kink lies inside it,
 * the derivative's own convention at kinks; and the public call against
 * the jacobian contracted with a random dout. */
static void check_derivative(int P, int depth, float scale, int c, int h, int w, float lx,
                             float ly) {
    ram_glimpse *g = make_sensor(P, depth, scale, RAM_SENSOR_SOFT);
    const size_t per = ram_glimpse_size(g, c);
    float *img = random_images(1, c, h, w);
    float *jx = malloc(sizeof(float) * per), *jy = malloc(sizeof(float) * per);
    float *f0 = malloc(sizeof(float) * per), *fx = malloc(sizeof(float) * per),
          *fy = malloc(sizeof(float) * per), *dout = malloc(sizeof(float) * per);
    ram_glimpse_soft_jacobian(g, img, c, h, w, lx, ly, jx, jy);
    /* 1/256 of a pixel: every sample here is a multiple of 1/64 pixel from
     * a pixel centre or on one, so no kink is crossed. */
    const float hx = 2.0f / 256.0f / (float)w, hy = 2.0f / 256.0f / (float)h;
    const float loc0[2] = {lx, ly}, locx[2] = {lx + hx, ly}, locy[2] = {lx, ly + hy};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, c, h, w, loc0, f0, per), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, c, h, w, locx, fx, per), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, c, h, w, locy, fy, per), RAM_OK);
    const double sx = (double)locx[0] - lx, sy = (double)locy[1] - ly;
    double worst = 0, norm = 0;
    for (size_t k = 0; k < per; k++) {
        const double nx = (fx[k] - (double)f0[k]) / sx, ny = (fy[k] - (double)f0[k]) / sy;
        const double ex = fabs(nx - jx[k]), ey = fabs(ny - jy[k]);
        worst = fmax(worst, fmax(ex, ey));
        norm = fmax(norm, fmax(fabs(nx), fabs(ny)));
        ck_assert_msg(ex < 2e-3 * (1 + fabs(nx)) && ey < 2e-3 * (1 + fabs(ny)),
                      "loc (%g, %g) value %zu: d/dx %g vs %g, d/dy %g vs %g", (double)lx,
                      (double)ly, k, (double)jx[k], nx, (double)jy[k], ny);
    }
    (void)worst;
    (void)norm;
    double ex = 0, ey = 0;
    for (size_t k = 0; k < per; k++) {
        dout[k] = 2 * lcg_uniform() - 1;
        ex += (double)dout[k] * jx[k];
        ey += (double)dout[k] * jy[k];
    }
    float dl[2] = {NAN, NAN};
    ck_assert_int_eq(ram_glimpse_backward_location(g, img, 1, c, h, w, loc0, dout, per, dl),
                     RAM_OK);
    ck_assert_msg(fabs(dl[0] - ex) < 1e-4 * (1 + fabs(ex)) &&
                      fabs(dl[1] - ey) < 1e-4 * (1 + fabs(ey)),
                  "backward_location (%g, %g), jacobian contracted (%g, %g)", (double)dl[0],
                  (double)dl[1], ex, ey);
    free(jx);
    free(jy);
    free(f0);
    free(fx);
    free(fy);
    free(dout);
    free(img);
    ram_glimpse_free(g);
}

/* Locations on a grid of 1/64 pixel (so that the step above crosses no
 * kink), at fractions away from pixel centres. */
START_TEST(test_derivative_generic) {
    lcg_state = 4;
    const double at[][2] = {{5.0 + 9 / 64.0, 4.0 + 23 / 64.0},
                            {2.0 + 41 / 64.0, 7.0 + 3 / 64.0},
                            {8.0 + 1 / 64.0, 1.0 + 63 / 64.0}};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        check_derivative(4, 3, 2.0f, 2, 10, 12, loc_at(at[i][0], 12), loc_at(at[i][1], 10));
        check_derivative(3, 1, 1.0f, 1, 10, 12, loc_at(at[i][0], 12), loc_at(at[i][1], 10));
    }
}
END_TEST

/* Samples exactly on pixel centres (the kinks) and square edges on pixel
 * edges: the derivative is the one toward +x, +y. */
START_TEST(test_derivative_on_pixel_centres) {
    lcg_state = 5;
    /* Centre on a pixel edge: with one pixel per cell, every sample is on a
     * pixel centre; with 2 per cell, cell edges are on pixel edges. */
    check_derivative(4, 1, 2.0f, 1, 10, 12, loc_at(6.0, 12), loc_at(5.0, 10));
    check_derivative(4, 3, 2.0f, 2, 10, 12, loc_at(6.0, 12), loc_at(5.0, 10));
    /* Centre on a pixel centre: the 3-wide square's samples on centres. */
    check_derivative(3, 2, 2.0f, 1, 9, 9, loc_at(4.5, 9), loc_at(4.5, 9));
}
END_TEST

/* On the image's edges, partly outside and wholly outside (derivative 0). */
START_TEST(test_derivative_outside) {
    lcg_state = 6;
    check_derivative(4, 2, 2.0f, 1, 10, 12, -1.0f, 1.0f);
    check_derivative(4, 2, 2.0f, 1, 10, 12, loc_at(-1.0 + 5 / 64.0, 12), loc_at(10.5, 10));
    check_derivative(3, 1, 2.0f, 1, 10, 12, loc_at(0.0, 12), loc_at(0.0, 10));
    /* Wholly outside: zeros, and no gradient. */
    ram_glimpse *g = make_sensor(3, 2, 2.0f, RAM_SENSOR_SOFT);
    float *img = random_images(1, 1, 10, 12);
    float jx[18], jy[18], out[18];
    const float far[] = {-3.0f, 0.0f, 0.2f, 4.0f, 1e30f, -1e30f};
    for (int i = 0; i < 3; i++) {
        ram_glimpse_soft_jacobian(g, img, 1, 10, 12, far[2 * i], far[2 * i + 1], jx, jy);
        ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, 10, 12, far + 2 * i, out, 18), RAM_OK);
        for (int k = 0; k < 18; k++) {
            ck_assert_float_eq(out[k], 0.0f);
            ck_assert_float_eq(jx[k], 0.0f);
            ck_assert_float_eq(jy[k], 0.0f);
        }
    }
    free(img);
    ram_glimpse_free(g);
}
END_TEST

/* The public call over a batch: image i's gradient from its own glimpse. */
START_TEST(test_backward_batch) {
    lcg_state = 7;
    enum { n = 3, c = 2, h = 9, w = 8, P = 3, D = 2 };
    ram_glimpse *g = make_sensor(P, D, 2.0f, RAM_SENSOR_SOFT);
    const size_t per = ram_glimpse_size(g, c);
    float *img = random_images(n, c, h, w), dout[n * c * D * P * P];
    for (size_t k = 0; k < n * per; k++)
        dout[k] = lcg_uniform() - 0.5f;
    const float locs[2 * n] = {0.1f, -0.2f, 0.7f, 0.3f, -0.9f, 0.05f};
    float dl[2 * n];
    ck_assert_int_eq(ram_glimpse_backward_location(g, img, n, c, h, w, locs, dout, n * per, dl),
                     RAM_OK);
    for (int i = 0; i < n; i++) {
        float one[2];
        ck_assert_int_eq(ram_glimpse_backward_location(g, img + (size_t)i * c * h * w, 1, c, h, w,
                                                       locs + 2 * i, dout + i * per, per, one),
                         RAM_OK);
        ck_assert_float_eq(one[0], dl[2 * i]);
        ck_assert_float_eq(one[1], dl[2 * i + 1]);
    }
    free(img);
    ram_glimpse_free(g);
}
END_TEST

/* ---- arguments ---- */

START_TEST(test_refusals) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    ram_glimpse *g = (ram_glimpse *)0x1;
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, (ram_sensor)2, &g), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(g, (ram_glimpse *)0x1);
    ck_assert(strstr(ram_last_error(), "sensor") != NULL);
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, (ram_sensor)-1, &g), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, RAM_SENSOR_SOFT, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    p.patch = 0;
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, RAM_SENSOR_SOFT, &g), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_sensor(NULL), RAM_SENSOR_HARD);

    ram_glimpse *soft = make_sensor(2, 1, 2.0f, RAM_SENSOR_SOFT);
    ram_glimpse *hard = make_sensor(2, 1, 2.0f, RAM_SENSOR_HARD);
    float img[16] = {0}, dout[8] = {0}, dl[4] = {7, 7, 7, 7}, loc[4] = {0, 0, 0, 0};
    ck_assert_int_eq(ram_glimpse_backward_location(hard, img, 1, 1, 4, 4, loc, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert(strstr(ram_last_error(), "hard") != NULL);
    ck_assert_int_eq(ram_glimpse_backward_location(NULL, img, 1, 1, 4, 4, loc, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, NULL, 1, 1, 4, 4, loc, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 1, 1, 4, 4, NULL, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 1, 1, 4, 4, loc, NULL, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 1, 1, 4, 4, loc, dout, 4, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 0, 1, 4, 4, loc, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 1, 1, 0, 4, loc, dout, 4, dl),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 2, 1, 2, 4, loc, dout, 7, dl),
                     RAM_ERR_BUFFER_TOO_SMALL);
    loc[1] = NAN;
    ck_assert_int_eq(ram_glimpse_backward_location(soft, img, 1, 1, 4, 4, loc, dout, 4, dl),
                     RAM_ERR_NUMERIC);
    float out[4];
    ck_assert_int_eq(ram_glimpse_extract(soft, img, 1, 1, 4, 4, loc, out, 4), RAM_ERR_NUMERIC);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(dl[i], 7.0f); /* nothing written on failure */
    ram_glimpse_free(soft);
    ram_glimpse_free(hard);
}
END_TEST

/* ram_glimpse_create() and ram_glimpse_create_sensor(HARD) are the same
 * sensor: the same bits, wherever it looks. */
START_TEST(test_hard_unchanged) {
    lcg_state = 8;
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    p.patch = 5;
    p.depth = 3;
    p.scale = 1.5f;
    ram_glimpse *a, *b;
    ck_assert_int_eq(ram_glimpse_create(&p, &a), RAM_OK);
    ck_assert_int_eq(ram_glimpse_sensor(a), RAM_SENSOR_HARD);
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, RAM_SENSOR_HARD, &b), RAM_OK);
    enum { n = 20, c = 2, h = 17, w = 13 };
    float *img = random_images(n, c, h, w), locs[2 * n];
    for (int i = 0; i < 2 * n; i++)
        locs[i] = 3 * lcg_uniform() - 1.5f;
    const size_t per = ram_glimpse_size(a, c);
    float *x = malloc(sizeof(float) * n * per), *y = malloc(sizeof(float) * n * per);
    ck_assert_int_eq(ram_glimpse_extract(a, img, n, c, h, w, locs, x, n * per), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(b, img, n, c, h, w, locs, y, n * per), RAM_OK);
    ck_assert(memcmp(x, y, sizeof(float) * n * per) == 0);
    free(x);
    free(y);
    free(img);
    ram_glimpse_free(a);
    ram_glimpse_free(b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("soft_glimpse");
    TCase *values = tcase_create("values");
    tcase_add_test(values, test_reference_values);
    tcase_add_test(values, test_aligned_equals_hard);
    tcase_add_test(values, test_two_by_two_cells_are_means);
    suite_add_tcase(s, values);
    TCase *grad = tcase_create("derivative");
    tcase_add_test(grad, test_derivative_generic);
    tcase_add_test(grad, test_derivative_on_pixel_centres);
    tcase_add_test(grad, test_derivative_outside);
    tcase_add_test(grad, test_backward_batch);
    suite_add_tcase(s, grad);
    TCase *args = tcase_create("arguments");
    tcase_add_test(args, test_refusals);
    tcase_add_test(args, test_hard_unchanged);
    suite_add_tcase(s, args);
    return run_suite(s);
}
