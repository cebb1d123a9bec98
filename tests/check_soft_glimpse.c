/* The soft glimpse sensor: its values against a reference written from
 * the header's description alone (each cell's average, integrated over the
 * pixels it touches), its location derivative against finite differences
 * (at generic locations, where a sample sits on a pixel centre or a cell's
 * edge on a pixel edge, next to such places, on the image's edge and
 * outside it), the public gradient call, argument checking, and the hard
 * sensor untouched by the choice. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
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

/* A sensor, whose scales are round(patch * scale^k) pixels wide as the
 * header says: the reference below takes the widths from it. */
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
    for (int k = 0; k < depth; k++)
        ck_assert_int_eq(g->side[k], lround(patch * pow(scale, k)));
    return g;
}

/* A soft sensor of the given widths: the only way to cells narrower than a
 * pixel (c < 1), which ram_glimpse_create() never makes (its first scale
 * is patch pixels wide, and scale >= 1). */
static ram_glimpse *make_sides(int patch, int depth, const int *sides) {
    ram_glimpse *g = make_sensor(patch, depth, 1.0f, RAM_SENSOR_SOFT);
    for (int k = 0; k < depth; k++)
        g->span[k] = g->side[k] = sides[k];
    return g;
}

/* Pixel (r, col) of channel ch, 0 outside the image. */
static double pixel(const float *img, int h, int w, int ch, long r, long col) {
    if (r < 0 || r >= h || col < 0 || col >= w) return 0.0;
    return img[((size_t)ch * h + r) * w + col];
}

/* The image's average over the square [x, x + s) x [y, y + s), pixel
 * (r, col) covering [col, col + 1) x [r, r + 1): each pixel it touches
 * times the area they share, over s^2. */
static double box_average(const float *img, int h, int w, int ch, double x, double y, double s) {
    double sum = 0;
    for (long r = (long)floor(y); r < y + s; r++)
        for (long col = (long)floor(x); col < x + s; col++) {
            const double dy = fmin(y + s, r + 1.0) - fmax(y, (double)r);
            const double dx = fmin(x + s, col + 1.0) - fmax(x, (double)col);
            sum += dy * dx * pixel(img, h, w, ch, r, col);
        }
    return sum / (s * s);
}

/* The image at the continuous point (x, y), pixel edges at integers,
 * interpolated bilinearly between the four nearest pixel centres: how the
 * sensor read every cell before it averaged them. */
static double bilinear(const float *img, int h, int w, int ch, double x, double y) {
    const double vx = x - 0.5, vy = y - 0.5;
    const double x0 = floor(vx), y0 = floor(vy), fx = vx - x0, fy = vy - y0;
    const long c0 = (long)x0, r0 = (long)y0;
    return (1 - fy) *
               ((1 - fx) * pixel(img, h, w, ch, r0, c0) + fx * pixel(img, h, w, ch, r0, c0 + 1)) +
           fy * ((1 - fx) * pixel(img, h, w, ch, r0 + 1, c0) +
                 fx * pixel(img, h, w, ch, r0 + 1, c0 + 1));
}

/* Where cell j of scale k of a glimpse centred on pixel coordinate
 * `centre` (edges at integers) begins on its axis, and the side of the
 * square averaged: the cell, c = side / P, or where c < 1 the pixel-wide
 * square centred on it. */
static double cell_start(const ram_glimpse *g, int k, double centre, int j, double *box) {
    const double side = g->span[k], cell = side / g->patch;
    *box = fmax(cell, 1.0);
    return centre - side / 2 + (j + 0.5) * cell - *box / 2;
}

/* The header's description, in double: scale k's square centred on
 * ((lx + 1) w / 2, (ly + 1) h / 2), each of its P x P cells averaged. */
static void ref_soft(const ram_glimpse *g, const float *img, int c, int h, int w, double lx,
                     double ly, double *out) {
    const int P = g->patch, D = g->depth;
    const double cx = (lx + 1) * w / 2, cy = (ly + 1) * h / 2;
    for (int k = 0; k < D; k++)
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++) {
                    double box;
                    const double x = cell_start(g, k, cx, j, &box),
                                 y = cell_start(g, k, cy, i, &box);
                    out[(((size_t)ch * D + k) * P + i) * P + j] =
                        box_average(img, h, w, ch, x, y, box);
                }
}

/* A location whose glimpse centre is pixel coordinate `pos` (edges at
 * integers) on an axis of `extent` pixels. */
static float loc_at(double pos, int extent) {
    return (float)(2.0 * pos / extent - 1.0);
}

/* The sensor against the reference at n locations, and the scales whose
 * cells are a pixel or less wide also against bilinear interpolation at
 * the cells' centres, the reading they kept. */
static void compare_with_reference(ram_glimpse *g, int c, int h, int w, const float *locs, int n) {
    const int P = g->patch, D = g->depth;
    const size_t per = (size_t)c * D * P * P;
    ck_assert_uint_eq(ram_glimpse_size(g, c), per);
    float *img = random_images(n, c, h, w);
    float *out = malloc(sizeof(float) * per * n);
    double *ref = malloc(sizeof(double) * per);
    ck_assert_int_eq(ram_glimpse_extract(g, img, n, c, h, w, locs, out, per * n), RAM_OK);
    for (int i = 0; i < n; i++) {
        const float *im = img + (size_t)i * c * h * w;
        const double lx = locs[2 * i], ly = locs[2 * i + 1];
        ref_soft(g, im, c, h, w, lx, ly, ref);
        for (size_t k = 0; k < per; k++)
            ck_assert_msg(fabs(out[i * per + k] - ref[k]) < 1e-6,
                          "image %d value %zu: %.8f, reference %.8f (loc %g, %g)", i, k,
                          (double)out[i * per + k], ref[k], lx, ly);
        const double cx = (lx + 1) * w / 2, cy = (ly + 1) * h / 2;
        for (int s = 0; s < D; s++) {
            const double side = g->side[s], cell = side / P;
            if (cell > 1) continue;
            for (int ch = 0; ch < c; ch++)
                for (int y = 0; y < P; y++)
                    for (int x = 0; x < P; x++) {
                        const size_t k = (((size_t)ch * D + s) * P + y) * P + x;
                        const double b = bilinear(im, h, w, ch, cx - side / 2 + (x + 0.5) * cell,
                                                  cy - side / 2 + (y + 0.5) * cell);
                        ck_assert_msg(fabs(out[i * per + k] - b) < 2e-6,
                                      "image %d value %zu: %.8f, bilinear %.8f", i, k,
                                      (double)out[i * per + k], b);
                    }
        }
    }
    free(ref);
    free(out);
    free(img);
}

/* ---- values ---- */

START_TEST(test_reference_values) {
    lcg_state = 1;
    /* Inside, on the edges, straddling them, outside, on pixel centres;
     * then random ones, inside and out. */
    enum { fixed = 10, n = 40 };
    float locs[2 * n] = {0.0f, 0.0f,  0.13f, -0.41f, -1.0f, 1.0f,  0.97f,  -0.99f, -1.3f,  0.2f,
                         2.5f, -3.0f, 0.1f,  0.1f,   -0.6f, 0.75f, 0.333f, 0.666f, -0.05f, 0.95f};
    for (int i = 2 * fixed; i < 2 * n; i++)
        locs[i] = 2.6f * lcg_uniform() - 1.3f;
    const struct {
        int P, depth;
        float scale;
        int c, h, w;
    } shapes[] = {
        {3, 1, 2.0f, 1, 7, 9},          /* one pixel per cell */
        {4, 3, 2.0f, 2, 11, 10},        /* 1, 2, 4 pixels per cell */
        {3, 3, 1.7f, 1, 9, 12},         /* 1, 5/3, 3 */
        {12, 2, 40.0f / 12, 1, 46, 50}, /* a 12-cell patch on a 40-pixel square */
        {1, 2, 3.0f, 3, 5, 5},          /* one cell */
        {5, 2, 2.0f, 1, 1, 1},          /* a 1 x 1 image */
        {4, 2, 250.0f, 1, 5, 1100},     /* rows of cells wider than the sensor sums at once */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        ram_glimpse *g =
            make_sensor(shapes[s].P, shapes[s].depth, shapes[s].scale, RAM_SENSOR_SOFT);
        compare_with_reference(g, shapes[s].c, shapes[s].h, shapes[s].w, locs, n);
        ram_glimpse_free(g);
    }
    /* Cells narrower than a pixel: 0.4 and 0.6 of one. */
    ram_glimpse *g = make_sides(5, 2, (const int[]){2, 3});
    compare_with_reference(g, 2, 8, 9, locs, n);
    ram_glimpse_free(g);
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

/* Cells of 1, 2 and 4 pixels whose edges are on pixel edges: every scale
 * reads what the hard sensor reads, the average of each cell's pixels (to
 * rounding), inside the image and partly outside it. */
START_TEST(test_whole_pixel_cells_are_means) {
    lcg_state = 3;
    enum { P = 4, D = 3, h = 20, w = 24, per = D * P * P };
    ram_glimpse *soft = make_sensor(P, D, 2.0f, RAM_SENSOR_SOFT);
    ram_glimpse *hard = make_sensor(P, D, 2.0f, RAM_SENSOR_HARD);
    float *img = random_images(1, 1, h, w);
    float a[per], b[per];
    const int centres[][2] = {{12, 10}, {8, 9}, {3, 17}, {22, 1}};
    for (size_t s = 0; s < sizeof centres / sizeof *centres; s++) {
        const float loc[2] = {loc_at(centres[s][0], w), loc_at(centres[s][1], h)};
        ck_assert_int_eq(ram_glimpse_extract(soft, img, 1, 1, h, w, loc, a, per), RAM_OK);
        ck_assert_int_eq(ram_glimpse_extract(hard, img, 1, 1, h, w, loc, b, per), RAM_OK);
        for (int k = 0; k < per; k++)
            ck_assert_msg(fabsf(a[k] - b[k]) < 1e-6f, "centre %d, %d value %d: %g vs %g",
                          centres[s][0], centres[s][1], k, (double)a[k], (double)b[k]);
    }
    free(img);
    ram_glimpse_free(soft);
    ram_glimpse_free(hard);
}
END_TEST

/* What a coarse cell sees: any one of its 64 pixels lit alone gives 1/64,
 * wherever it is in the cell (a sample at the cell's centre saw only the
 * four pixels around it); a quarter of a pixel's shift takes a quarter of
 * the edge pixels' weight away. */
START_TEST(test_cell_sees_every_pixel) {
    enum { P = 2, h = 32, w = 32, per = P * P };
    ram_glimpse *g = make_sides(P, 1, (const int[]){16}); /* 8 x 8 cells */
    static float img[h * w];
    float out[per];
    const float centre[2] = {loc_at(16.0, w), loc_at(16.0, h)}; /* the square 8..24 */
    for (int y = 8; y < 16; y++)
        for (int x = 8; x < 16; x++) {
            memset(img, 0, sizeof img);
            img[y * w + x] = 1.0f;
            ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, h, w, centre, out, per), RAM_OK);
            ck_assert_float_eq(out[0], 1.0f / 64);
            ck_assert_float_eq(out[1], 0.0f);
            ck_assert_float_eq(out[2], 0.0f);
            ck_assert_float_eq(out[3], 0.0f);
            /* The square at 8.25..24.25: a pixel of column 8 is 3/4 inside
             * the first cell, one of column 16 a quarter, the rest whole. */
            const float moved[2] = {loc_at(16.25, w), centre[1]};
            ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, h, w, moved, out, per), RAM_OK);
            const float part = x == 8 ? 0.75f : 1.0f;
            ck_assert_float_eq(out[0], part / 64);
        }
    ram_glimpse_free(g);
}
END_TEST

/* ---- the location derivative ---- */

/* How far the glimpse centre, at `l` on an axis of `extent` pixels, can
 * move toward + (right) and - (left) before an edge of a square the
 * sensor averages (as ref_soft() places them) crosses a pixel edge, where
 * the patch bends; over a shorter step a one-sided difference is the
 * derivative.  An edge on a pixel edge leaves no room on the left: there
 * the derivative is the one from the right. */
static void room(const ram_glimpse *g, int extent, double l, double *right, double *left) {
    const double centre = (l + 1) * extent / 2;
    *right = *left = 1.0;
    for (int k = 0; k < g->depth; k++)
        for (int j = 0; j < g->patch; j++) {
            double box;
            const double e0 = cell_start(g, k, centre, j, &box);
            const double edges[2] = {e0, e0 + box};
            for (int t = 0; t < 2; t++) {
                double f = edges[t] - floor(edges[t]);
                if (f > 1 - 1e-9 || f < 1e-9) f = 0; /* on a pixel edge, to rounding */
                *right = fmin(*right, 1 - f);
                *left = fmin(*left, f);
            }
        }
}

/* Every value's derivative (jacobian) along each axis against one-sided
 * differences over a step that crosses no kink, toward the side with more
 * room (+ at a kink, the derivative's own convention there): of the
 * reference, in double, over a short step, and of the sensor itself over
 * the longest step the room allows; and the public call against the
 * jacobian contracted with a random dout. */
static void check_derivative(const ram_glimpse *g, int c, int h, int w, float lx, float ly) {
    const size_t per = ram_glimpse_size(g, c);
    float *img = random_images(1, c, h, w);
    float *jx = malloc(sizeof(float) * per), *jy = malloc(sizeof(float) * per);
    float *f0 = malloc(sizeof(float) * per), *f1 = malloc(sizeof(float) * per),
          *dout = malloc(sizeof(float) * per);
    double *r0 = malloc(sizeof(double) * per), *r1 = malloc(sizeof(double) * per);
    ram_glimpse_soft_jacobian(g, img, c, h, w, lx, ly, jx, jy);
    const float loc0[2] = {lx, ly};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, c, h, w, loc0, f0, per), RAM_OK);
    ref_soft(g, img, c, h, w, lx, ly, r0);
    for (int axis = 0; axis < 2; axis++) {
        const int extent = axis ? h : w;
        const float *jac = axis ? jy : jx;
        double right, left;
        room(g, extent, loc0[axis], &right, &left);
        const double dir = right >= left || right >= 1.0 / 64 ? 1.0 : -1.0;
        const double space = dir > 0 ? right : left;
        ck_assert_msg(space >= 1.0 / 1024, "loc (%g, %g) axis %d: kinks on both sides", (double)lx,
                      (double)ly, axis);
        /* Pixels to location units. */
        const double unit = 2.0 / extent;
        double at[2] = {lx, ly};
        at[axis] += dir * fmin(space / 4, 1e-3) * unit;
        ref_soft(g, img, c, h, w, at[0], at[1], r1);
        const double href = at[axis] - loc0[axis];
        float loc1[2] = {lx, ly};
        loc1[axis] = (float)(loc0[axis] + dir * fmin(space / 2, 1.0 / 256) * unit);
        const double step = (double)loc1[axis] - loc0[axis];
        ck_assert(fabs(step) > 0 && fabs(step) < space * unit);
        ck_assert_int_eq(ram_glimpse_extract(g, img, 1, c, h, w, loc1, f1, per), RAM_OK);
        for (size_t k = 0; k < per; k++) {
            const double exact = (r1[k] - r0[k]) / href, numeric = (f1[k] - (double)f0[k]) / step;
            /* The sensor's difference has its values' rounding over the step. */
            const double noise = FLT_EPSILON * (fabs(f0[k]) + fabs(f1[k])) / fabs(step);
            ck_assert_msg(fabs(exact - jac[k]) < 2e-5 * (1 + fabs(exact)) &&
                              fabs(numeric - jac[k]) < 2e-3 * (1 + fabs(numeric)) + noise,
                          "loc (%g, %g) axis %d value %zu: derivative %g, reference %g, sensor %g",
                          (double)lx, (double)ly, axis, k, (double)jac[k], exact, numeric);
        }
    }
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
    free(f1);
    free(r0);
    free(r1);
    free(dout);
    free(img);
}

/* check_derivative() with a sensor made for it. */
static void check_derivative_of(int P, int depth, float scale, int c, int h, int w, float lx,
                                float ly) {
    ram_glimpse *g = make_sensor(P, depth, scale, RAM_SENSOR_SOFT);
    check_derivative(g, c, h, w, lx, ly);
    ram_glimpse_free(g);
}

/* Random locations, most of them inside, some squares partly outside:
 * cells of 1, 2 and 4 pixels, of 5/3 and 3, of 10/3 (a 12-cell patch on a
 * 40-pixel square), and of less than one. */
START_TEST(test_derivative_generic) {
    lcg_state = 4;
    ram_glimpse *narrow = make_sides(5, 2, (const int[]){2, 3});
    for (int i = 0; i < 12; i++) {
        const float lx = 2.2f * lcg_uniform() - 1.1f, ly = 2.2f * lcg_uniform() - 1.1f;
        check_derivative_of(4, 3, 2.0f, 2, 10, 12, lx, ly);
        check_derivative_of(3, 1, 1.0f, 1, 10, 12, lx, ly);
        check_derivative_of(3, 3, 1.7f, 1, 11, 9, lx, ly);
        check_derivative_of(3, 2, 1.7f, 2, 22, 24, lx, ly);
        check_derivative_of(12, 2, 40.0f / 12, 1, 46, 50, lx, ly);
        check_derivative(narrow, 1, 7, 9, lx, ly);
    }
    /* Cells of 250 pixels: a row of them is wider than the sensor sums at
     * once. */
    for (int i = 0; i < 3; i++)
        check_derivative_of(4, 2, 250.0f, 1, 5, 1100, 2.2f * lcg_uniform() - 1.1f,
                            2.2f * lcg_uniform() - 1.1f);
    ram_glimpse_free(narrow);
}
END_TEST

/* On the kinks, where the derivative is the one toward +x, +y, and a
 * little to either side of them. */
START_TEST(test_derivative_at_kinks) {
    lcg_state = 5;
    /* Centre on a pixel edge: with one pixel per cell, every sample is on a
     * pixel centre; with 2 and 4 per cell, cell edges are on pixel edges. */
    check_derivative_of(4, 1, 2.0f, 1, 10, 12, loc_at(6.0, 12), loc_at(5.0, 10));
    check_derivative_of(4, 3, 2.0f, 2, 10, 12, loc_at(6.0, 12), loc_at(5.0, 10));
    /* Centre on a pixel centre: the 3-wide square's samples on centres, the
     * 6-wide square's cell edges on pixel centres, not on kinks. */
    check_derivative_of(3, 2, 2.0f, 1, 9, 9, loc_at(4.5, 9), loc_at(4.5, 9));
    /* 40 pixels in 12 cells on a 64 x 32 image (the locations exact floats):
     * centred on (30, 16), every third cell edge of the 40-pixel square and
     * every sample of the 12-pixel one are on pixel edges and centres; then
     * 1/128 pixel before and after, and 1/1000 (not exact) before. */
    const double offsets[] = {0.0, -1.0 / 128, 1.0 / 128, -1e-3};
    ram_glimpse *narrow = make_sides(5, 2, (const int[]){2, 3});
    for (size_t a = 0; a < sizeof offsets / sizeof *offsets; a++)
        for (size_t b = 0; b < sizeof offsets / sizeof *offsets; b++) {
            const float lx = loc_at(30.0 + offsets[a], 64), ly = loc_at(16.0 + offsets[b], 32);
            check_derivative_of(12, 2, 40.0f / 12, 1, 32, 64, lx, ly);
            check_derivative_of(4, 3, 2.0f, 1, 32, 64, lx, ly);
            /* Cells of 0.4 and 0.6 pixel: samples on pixel centres at 30.5, 29.5 */
            check_derivative(narrow, 1, 32, 64, loc_at(30.0 + offsets[a], 64),
                             loc_at(17.0 + offsets[b], 32));
        }
    ram_glimpse_free(narrow);
}
END_TEST

/* ---- the zoom derivative ---- */

/* The derivative of every value with respect to log s, s the factor of the
 * squares' sides, at a zoomed sensor: against central differences of the
 * reference in double (at random zooms and locations no kink lies within
 * the step), and the contracted form ram_glimpse_soft_backward() gives
 * against the jacobian contracted with a random dout. */
static void check_zoom_derivative(int P, int depth, float scale, int c, int h, int w, float zoom,
                                  float lx, float ly) {
    ram_glimpse *base = make_sensor(P, depth, scale, RAM_SENSOR_SOFT);
    struct ram_glimpse g, up, down;
    ram_glimpse_zoomed(base, zoom, &g);
    const size_t per = ram_glimpse_size(&g, c);
    float *img = random_images(1, c, h, w);
    float *js = malloc(sizeof(float) * per), *dout = malloc(sizeof(float) * per);
    double *rp = malloc(sizeof(double) * per), *rm = malloc(sizeof(double) * per);
    ram_glimpse_soft_jacobian_zoom(&g, img, c, h, w, lx, ly, js);
    const double step = 1e-6;
    up = down = g;
    for (int k = 0; k < depth; k++) {
        up.span[k] = g.span[k] * exp(step);
        down.span[k] = g.span[k] * exp(-step);
    }
    ref_soft(&up, img, c, h, w, lx, ly, rp);
    ref_soft(&down, img, c, h, w, lx, ly, rm);
    double contracted = 0;
    for (size_t k = 0; k < per; k++) {
        const double exact = (rp[k] - rm[k]) / (2 * step);
        ck_assert_msg(fabs(exact - js[k]) < 1e-4 * (1 + fabs(exact)),
                      "patch %d depth %d zoom %g loc (%g, %g) value %zu: derivative %g, "
                      "reference %g",
                      P, depth, (double)zoom, (double)lx, (double)ly, k, (double)js[k], exact);
        dout[k] = 2 * lcg_uniform() - 1;
        contracted += (double)dout[k] * js[k];
    }
    float dx, dy, ds = NAN;
    ram_glimpse_soft_backward(&g, ram_image_f32(img), c, h, w, lx, ly, dout, &dx, &dy, &ds);
    ck_assert_msg(fabs(ds - contracted) < 1e-4 * (1 + fabs(contracted)),
                  "backward %g, jacobian contracted %g", (double)ds, contracted);
    free(js);
    free(dout);
    free(rp);
    free(rm);
    free(img);
    ram_glimpse_free(base);
}

/* Zooms that make cells of less than a pixel, of one, and of several (and
 * of a fraction more), squares inside and partly outside the image. */
START_TEST(test_zoom_derivative) {
    lcg_state = 9;
    for (int i = 0; i < 12; i++) {
        const float lx = 2.2f * lcg_uniform() - 1.1f, ly = 2.2f * lcg_uniform() - 1.1f;
        const float zoom = (float)exp(2.0 * lcg_uniform() - 1.0); /* 1/e .. e */
        check_zoom_derivative(4, 3, 2.0f, 2, 10, 12, zoom, lx, ly);
        check_zoom_derivative(3, 2, 1.7f, 1, 22, 24, zoom, lx, ly);
        check_zoom_derivative(12, 2, 40.0f / 12, 1, 46, 50, zoom, lx, ly);
    }
}
END_TEST

/* The public zoom: the sides of a zoomed sensor, rounded for the hard one,
 * exact for the soft one; 1 restores the sensor as created. */
START_TEST(test_set_zoom) {
    ram_glimpse *hard = make_sensor(8, 3, 2.0f, RAM_SENSOR_HARD);
    ram_glimpse *soft = make_sensor(8, 3, 2.0f, RAM_SENSOR_SOFT);
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, 1.3f), RAM_OK);
    ck_assert_int_eq(ram_glimpse_set_zoom(soft, 1.3f), RAM_OK);
    const int want[3] = {10, 21, 42}; /* round(8 x 1.3), round(16 x 1.3), round(32 x 1.3) */
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(hard->side[k], want[k]);
        ck_assert(fabs(soft->span[k] - 8 * pow(2, k) * 1.3) < 1e-5);
    }
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, 0.02f), RAM_OK);
    ck_assert_int_eq(hard->side[0], 1); /* at least a pixel */
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, 1.0f), RAM_OK);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(hard->side[k], 8 << k);
    /* Zoomed in below the patch: an 8-cell patch on a 4-pixel square, each
     * cell the pixel under its centre (never a cell of zeros). */
    {
        static float img[16 * 16];
        for (int i = 0; i < 16 * 16; i++)
            img[i] = (float)(i + 1);
        ck_assert_int_eq(ram_glimpse_set_zoom(hard, 0.5f), RAM_OK);
        ck_assert_int_eq(hard->side[0], 4);
        float out[3 * 64];
        const float centre[2] = {0.0f, 0.0f}; /* pixel 8: the square is 6..10 */
        ck_assert_int_eq(ram_glimpse_extract(hard, img, 1, 1, 16, 16, centre, out, 3 * 64), RAM_OK);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++)
                ck_assert_float_eq(out[i * 8 + j], img[(6 + i / 2) * 16 + 6 + j / 2]);
        ck_assert_int_eq(ram_glimpse_set_zoom(hard, 1.0f), RAM_OK);
    }
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, 0.0f), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, NAN), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_zoom(hard, 17.0f), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_zoom(NULL, 1.0f), RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse_free(hard);
    ram_glimpse_free(soft);
}
END_TEST

/* On the image's edges, partly outside and wholly outside (derivative 0). */
START_TEST(test_derivative_outside) {
    lcg_state = 6;
    check_derivative_of(4, 2, 2.0f, 1, 10, 12, -1.0f, 1.0f);
    check_derivative_of(4, 2, 2.0f, 1, 10, 12, loc_at(-1.0 + 5 / 64.0, 12), loc_at(10.5, 10));
    check_derivative_of(3, 1, 2.0f, 1, 10, 12, loc_at(0.0, 12), loc_at(0.0, 10));
    /* The 40-pixel square over the left and bottom edges, its cell edges
     * on the image's edges and off them. */
    check_derivative_of(12, 2, 40.0f / 12, 1, 32, 64, loc_at(20.0, 64), loc_at(32.0, 32));
    check_derivative_of(12, 2, 40.0f / 12, 1, 32, 64, loc_at(3.0 + 1 / 64.0, 64),
                        loc_at(30.0 - 1 / 32.0, 32));
    check_derivative_of(12, 2, 40.0f / 12, 1, 32, 64, loc_at(-19.0, 64), loc_at(51.5, 32));
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
    tcase_add_test(values, test_whole_pixel_cells_are_means);
    tcase_add_test(values, test_cell_sees_every_pixel);
    suite_add_tcase(s, values);
    TCase *grad = tcase_create("derivative");
    tcase_add_test(grad, test_derivative_generic);
    tcase_add_test(grad, test_derivative_at_kinks);
    tcase_add_test(grad, test_derivative_outside);
    tcase_add_test(grad, test_backward_batch);
    tcase_add_test(grad, test_zoom_derivative);
    tcase_add_test(grad, test_set_zoom);
    suite_add_tcase(s, grad);
    TCase *args = tcase_create("arguments");
    tcase_add_test(args, test_refusals);
    tcase_add_test(args, test_hard_unchanged);
    suite_add_tcase(s, args);
    return run_suite(s);
}
