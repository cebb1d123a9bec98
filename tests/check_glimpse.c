/* The glimpse sensor against a brute-force reference written from the
 * header's description alone, plus exact values and argument checking. */
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

static ram_glimpse *make_glimpse(int patch, int depth, float scale) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    p.patch = patch;
    p.depth = depth;
    p.scale = scale;
    ram_glimpse *g = NULL;
    ck_assert_int_eq(ram_glimpse_create(&p, &g), RAM_OK);
    ck_assert_ptr_nonnull(g);
    return g;
}

/* Start of a square of `side` pixels centred on the continuous coordinate
 * (l + 1) * extent / 2, rounding a half pixel up. */
static long ref_start(double l, int extent, int side) {
    double centre = (l + 1.0) * extent / 2.0;
    return (long)floor(centre - side / 2.0 + 0.5);
}

/* Sample m of n over `len` pixels from `first`, as ram.h's cell_samples
 * says: pixel floor((2m + 1) len / 2n) of them. */
static long ref_sample(long first, long len, int m, int n) {
    return first + (long)floor((2.0 * m + 1.0) * (double)len / (2.0 * n));
}

/* Brute force, one image, written independently of lib/glimpse.c: every
 * output cell walks its pixel rectangle and reads 0 outside the image; with
 * samples = S > 0, a scale wider than S x P reads each cell at its S x S
 * samples (or fewer where the cell is narrower). */
static void ref_glimpse(const float *img, int c, int h, int w, int P, int depth, double scale,
                        int samples, double lx, double ly, double *out) {
    const int S = samples;
    for (int k = 0; k < depth; k++) {
        int side = (int)lround(P * pow(scale, k));
        long x0 = ref_start(lx, w, side), y0 = ref_start(ly, h, side);
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++) {
                    long r0 = y0 + (long)floor((double)i * side / P);
                    long r1 = y0 + (long)floor((double)(i + 1) * side / P);
                    long c0 = x0 + (long)floor((double)j * side / P);
                    long c1 = x0 + (long)floor((double)(j + 1) * side / P);
                    double sum = 0;
                    long count = 0;
                    if (S > 0 && side > S * P) {
                        const int kr = r1 - r0 < S ? (int)(r1 - r0) : S;
                        const int kc = c1 - c0 < S ? (int)(c1 - c0) : S;
                        for (int m = 0; m < kr; m++)
                            for (int q = 0; q < kc; q++) {
                                const long r = ref_sample(r0, r1 - r0, m, kr);
                                const long cc = ref_sample(c0, c1 - c0, q, kc);
                                count++;
                                if (r >= 0 && r < h && cc >= 0 && cc < w)
                                    sum += img[((size_t)ch * h + r) * w + cc];
                            }
                    } else
                        for (long r = r0; r < r1; r++)
                            for (long cc = c0; cc < c1; cc++) {
                                count++;
                                if (r >= 0 && r < h && cc >= 0 && cc < w)
                                    sum += img[((size_t)ch * h + r) * w + cc];
                            }
                    out[(((size_t)ch * depth + k) * P + i) * P + j] = count ? sum / count : 0;
                }
    }
}

/* Extract n glimpses at `locs` (k: cell_samples) and compare every value
 * with the reference. */
static void compare_with_reference_k(int P, int depth, float scale, int k, int c, int h, int w,
                                     const float *locs, int n) {
    ram_glimpse *g = make_glimpse(P, depth, scale);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(g, k), RAM_OK);
    const size_t per = (size_t)c * depth * P * P;
    ck_assert_uint_eq(ram_glimpse_size(g, c), per);
    float *img = random_images(n, c, h, w);
    float *out = malloc(sizeof(float) * per * n);
    double *ref = malloc(sizeof(double) * per);
    ck_assert(out && ref);
    ck_assert_int_eq(ram_glimpse_extract(g, img, n, c, h, w, locs, out, per * n), RAM_OK);
    for (int i = 0; i < n; i++) {
        ref_glimpse(img + (size_t)i * c * h * w, c, h, w, P, depth, scale, k, locs[2 * i],
                    locs[2 * i + 1], ref);
        for (size_t v = 0; v < per; v++)
            ck_assert_msg(fabs(out[i * per + v] - ref[v]) <= 1e-5 * (1 + fabs(ref[v])),
                          "P %d depth %d scale %g image %d at (%g, %g): value %zu is %g, "
                          "reference %g",
                          P, depth, (double)scale, i, (double)locs[2 * i], (double)locs[2 * i + 1],
                          v, (double)out[i * per + v], ref[v]);
    }
    free(img);
    free(out);
    free(ref);
    ram_glimpse_free(g);
}

static void compare_with_reference(int P, int depth, float scale, int c, int h, int w,
                                   const float *locs, int n) {
    compare_with_reference_k(P, depth, scale, 0, c, h, w, locs, n);
}

/* Locations on the corners, edges, centre, just outside and far outside
 * [-1, 1], followed by random ones in [-1.3, 1.3]. */
#define N_FIXED 18
static const float fixed_locs[N_FIXED * 2] = {
    -1,    -1,    1,     -1,     -1,    1,     1,      1,      0,    0,     -1,     0,
    1,     0,     0,     -1,     0,     1,     -1.2f,  0.3f,   1.4f, -0.7f, 0.2f,   3.0f,
    -2.5f, -2.5f, 0.95f, -0.95f, 0.13f, 0.61f, -0.33f, -0.47f, 1.1f, 1.1f,  -0.05f, 0.05f};

static float *test_locations(int n) {
    ck_assert_int_ge(n, N_FIXED);
    float *locs = malloc(sizeof(float) * 2 * n);
    ck_assert_ptr_nonnull(locs);
    memcpy(locs, fixed_locs, sizeof fixed_locs);
    for (int i = 2 * N_FIXED; i < 2 * n; i++)
        locs[i] = 2.6f * lcg_uniform() - 1.3f;
    return locs;
}

/* ---- against the reference ---- */

START_TEST(test_reference_depth3_scale2) {
    lcg_state = 1;
    float *locs = test_locations(60);
    compare_with_reference(4, 3, 2.0f, 3, 13, 20, locs, 60); /* sides 4, 8, 16 */
    compare_with_reference(3, 3, 2.0f, 1, 20, 13, locs, 60); /* 3, 6, 12 */
    free(locs);
}
END_TEST

/* cell_samples: the wide scales read k x k samples a cell, the others every
 * pixel (the same values as without it); cells narrower than k in one
 * direction read all of it in that direction. */
START_TEST(test_reference_cell_samples) {
    lcg_state = 5;
    float *locs = test_locations(60);
    compare_with_reference_k(4, 4, 3.0f, 2, 3, 50, 70, locs, 60); /* 4, 12, 36, 108; k 2 */
    compare_with_reference_k(3, 3, 2.5f, 3, 1, 40, 33, locs, 60); /* 3, 8 (cells 2-3), 19 */
    compare_with_reference_k(5, 3, 4.0f, 1, 2, 64, 64, locs, 60); /* 5, 20, 80; one sample */
    compare_with_reference_k(4, 2, 2.0f, 2, 1, 20, 20, locs, 60); /* 4, 8: no scale is wider */
    free(locs);
}
END_TEST

/* Bytes and their floats b / 255 glimpse the same bits with cell_samples. */
START_TEST(test_cell_samples_bytes) {
    lcg_state = 9;
    const int c = 3, h = 90, w = 77, n = 20;
    ram_glimpse *g = make_glimpse(4, 4, 3.0f);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(g, 3), RAM_OK);
    const size_t per = ram_glimpse_size(g, c), px = (size_t)c * h * w;
    uint8_t *b = malloc(px);
    float *f = malloc(sizeof(float) * px), *of = malloc(sizeof(float) * per * n),
          *ob = malloc(sizeof(float) * per * n), *locs = test_locations(n);
    ck_assert(b && f && of && ob);
    for (size_t i = 0; i < px; i++) {
        b[i] = (uint8_t)(lcg_uniform() * 256.0f);
        f[i] = (float)b[i] / 255.0f;
    }
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ram_glimpse_extract(g, f, 1, c, h, w, locs + 2 * i, of + i * per, per),
                         RAM_OK);
        ck_assert_int_eq(ram_glimpse_extract_u8(g, b, 1, c, h, w, locs + 2 * i, ob + i * per, per),
                         RAM_OK);
    }
    ck_assert(memcmp(of, ob, sizeof(float) * per * n) == 0);
    free(b);
    free(f);
    free(of);
    free(ob);
    free(locs);
    ram_glimpse_free(g);
}
END_TEST

START_TEST(test_reference_fractional_scale) {
    lcg_state = 2;
    float *locs = test_locations(60);
    /* sides 3, 5 (4.5 rounds up), 7 (6.75): P does not divide them, so the
     * cells are unequal and the rounding of the cell edges matters. */
    compare_with_reference(3, 3, 1.5f, 3, 13, 20, locs, 60);
    compare_with_reference(4, 4, 1.5f, 2, 17, 11, locs, 60); /* 4, 6, 9, 14 (13.5) */
    free(locs);
}
END_TEST

START_TEST(test_reference_patch1_and_odd_sizes) {
    lcg_state = 3;
    float *locs = test_locations(40);
    compare_with_reference(1, 3, 2.0f, 3, 13, 20, locs, 40); /* sides 1, 2, 4 */
    compare_with_reference(5, 2, 3.0f, 1, 7, 9, locs, 40);   /* 15 > image: mostly padding */
    compare_with_reference(8, 1, 2.0f, 1, 28, 28, locs, 40); /* the MNIST retina */
    compare_with_reference(2, 2, 1.0f, 2, 1, 1, locs, 40);   /* a 1x1 image */
    free(locs);
}
END_TEST

/* ---- exact values ---- */

START_TEST(test_constant_image_exact) {
    enum { H = 16, W = 16 };
    float img[H * W];
    for (int i = 0; i < H * W; i++)
        img[i] = 1.0f;
    ram_glimpse *g = make_glimpse(2, 3, 2.0f); /* sides 2, 4, 8 */
    float out[3 * 4];

    /* Fully inside: every cell averages ones. */
    const float centre[2] = {0, 0};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, centre, out, 12), RAM_OK);
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(out[i], 1.0f);

    /* Top-left corner: each square is centred on the image corner, so only
     * its bottom-right quarter is inside.  2x2 cells: exactly the (1,1) cell
     * is inside at every scale. */
    const float corner[2] = {-1, -1};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, corner, out, 12), RAM_OK);
    for (int k = 0; k < 3; k++) {
        const float *o = out + 4 * k;
        ck_assert_float_eq(o[0], 0.0f);
        ck_assert_float_eq(o[1], 0.0f);
        ck_assert_float_eq(o[2], 0.0f);
        ck_assert_float_eq(o[3], 1.0f);
    }
    ram_glimpse_free(g);

    /* One cell over a 3x3 square on the corner: start floor(0 - 1.5 + 0.5) =
     * -1, so 2x2 of its 9 pixels are inside. */
    g = make_glimpse(3, 1, 2.0f);
    float o9[9];
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, corner, o9, 9), RAM_OK);
    const float want9[9] = {0, 0, 0, 0, 1, 1, 0, 1, 1};
    for (int i = 0; i < 9; i++)
        ck_assert_float_eq(o9[i], want9[i]);
    ram_glimpse_free(g);

    /* Patch 1 with side 3 (scale 3, second scale): one cell = 4/9. */
    g = make_glimpse(1, 2, 3.0f);
    float o2[2];
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, corner, o2, 2), RAM_OK);
    ck_assert_float_eq(o2[0], 1.0f); /* side 1 at the corner: start 0, pixel (0, 0) */
    ck_assert_float_eq_tol(o2[1], 4.0f / 9.0f, 1e-6f);
    ram_glimpse_free(g);
}
END_TEST

START_TEST(test_location_mapping) {
    /* A single bright pixel at (row 2, col 5) of a 6 x 8 image; a 1-pixel
     * glimpse at the pixel's centre sees it, and -1/+1 reach pixel 0 and
     * the last pixel. */
    enum { H = 6, W = 8 };
    float img[H * W] = {0};
    img[2 * W + 5] = 1.0f;
    img[0] = 2.0f;
    img[H * W - 1] = 3.0f;
    ram_glimpse *g = make_glimpse(1, 1, 2.0f);
    float out;
    /* Pixel (r, c) has its centre at x = (c + 0.5) * 2 / W - 1. */
    const float at[2] = {(5 + 0.5f) * 2 / W - 1, (2 + 0.5f) * 2 / H - 1};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, at, &out, 1), RAM_OK);
    ck_assert_float_eq(out, 1.0f);
    const float tl[2] = {-1, -1}, br[2] = {0.999f, 0.999f};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, tl, &out, 1), RAM_OK);
    ck_assert_float_eq(out, 2.0f);
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, br, &out, 1), RAM_OK);
    ck_assert_float_eq(out, 3.0f);
    /* x is columns, y rows: swapping them must miss the pixel. */
    const float swapped[2] = {at[1], at[0]};
    ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 1, H, W, swapped, &out, 1), RAM_OK);
    ck_assert_float_eq(out, 0.0f);
    ram_glimpse_free(g);
}
END_TEST

START_TEST(test_far_outside_reads_zero) {
    lcg_state = 4;
    float *img = random_images(1, 2, 9, 9);
    ram_glimpse *g = make_glimpse(3, 3, 2.0f);
    const float far[][2] = {{1e30f, 0}, {0, -1e30f}, {-3e9f, 4e9f}, {5, 5}, {-FLT_MAX, FLT_MAX}};
    float out[2 * 3 * 9];
    for (size_t f = 0; f < sizeof far / sizeof *far; f++) {
        for (int i = 0; i < 54; i++)
            out[i] = -1;
        ck_assert_int_eq(ram_glimpse_extract(g, img, 1, 2, 9, 9, far[f], out, 54), RAM_OK);
        for (int i = 0; i < 54; i++)
            ck_assert_float_eq(out[i], 0.0f);
    }
    ram_glimpse_free(g);
    free(img);
}
END_TEST

START_TEST(test_batch_layout) {
    /* Image i of a batch must give the same glimpse as alone, at out + i * per. */
    lcg_state = 5;
    enum { N = 4, C = 3, H = 10, W = 12 };
    float *img = random_images(N, C, H, W);
    ram_glimpse *g = make_glimpse(3, 2, 2.0f);
    const size_t per = ram_glimpse_size(g, C);
    const float locs[2 * N] = {-0.5f, 0.2f, 0.9f, -0.9f, 0, 0, 0.3f, 0.7f};
    float *all = malloc(sizeof(float) * per * N), *one = malloc(sizeof(float) * per);
    ck_assert_int_eq(ram_glimpse_extract(g, img, N, C, H, W, locs, all, per * N), RAM_OK);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(
            ram_glimpse_extract(g, img + (size_t)i * C * H * W, 1, C, H, W, locs + 2 * i, one, per),
            RAM_OK);
        ck_assert_mem_eq(one, all + i * per, sizeof(float) * per);
    }
    free(all);
    free(one);
    free(img);
    ram_glimpse_free(g);
}
END_TEST

/* contrast: every cell of the reference glimpse as |v - m| / (4 sqrt(s^2 +
 * 1e-4)), m and s^2 the channel's mean and variance over the pixels at the
 * centres of a grid of min(32, h) x min(32, w) cells, as ram.h says. */
static void ref_contrast(const float *img, int c, int h, int w, int P, int depth, double *out) {
    const int gr = h < 32 ? h : 32, gc = w < 32 ? w : 32;
    for (int ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0;
        for (int m = 0; m < gr; m++)
            for (int q = 0; q < gc; q++)
                sum +=
                    img[((size_t)ch * h + ref_sample(0, h, m, gr)) * w + ref_sample(0, w, q, gc)];
        const double mean = sum / (gr * gc);
        for (int m = 0; m < gr; m++)
            for (int q = 0; q < gc; q++) {
                const double d =
                    img[((size_t)ch * h + ref_sample(0, h, m, gr)) * w + ref_sample(0, w, q, gc)] -
                    mean;
                sq += d * d;
            }
        const double gain = 0.25 / sqrt(sq / (gr * gc) + 1e-4);
        double *o = out + (size_t)ch * depth * P * P;
        for (int v = 0; v < depth * P * P; v++)
            o[v] = fabs(o[v] - mean) * gain;
    }
}

START_TEST(test_contrast_reference) {
    lcg_state = 21;
    /* 70 x 45 (with cell samples): a 32 x 32 grid of its pixels; 20 x 9
     * (every pixel of a cell): every pixel is a grid point. */
    const int sizes[2][2] = {{70, 45}, {20, 9}};
    for (int t = 0; t < 2; t++) {
        const int c = 3, h = sizes[t][0], w = sizes[t][1], n = 24, P = 4, depth = 3, K = t ? 0 : 2;
        ram_glimpse *g = make_glimpse(P, depth, 2.5f);
        ck_assert_int_eq(ram_glimpse_set_cell_samples(g, K), RAM_OK);
        ck_assert_int_eq(ram_glimpse_set_contrast(g, 1), RAM_OK);
        const size_t per = ram_glimpse_size(g, c);
        float *img = random_images(n, c, h, w), *out = malloc(sizeof(float) * per * n);
        float *locs = test_locations(n);
        double *ref = malloc(sizeof(double) * per);
        ck_assert(out && ref);
        ck_assert_int_eq(ram_glimpse_extract(g, img, n, c, h, w, locs, out, per * n), RAM_OK);
        for (int i = 0; i < n; i++) {
            const float *im = img + (size_t)i * c * h * w;
            ref_glimpse(im, c, h, w, P, depth, 2.5, K, locs[2 * i], locs[2 * i + 1], ref);
            ref_contrast(im, c, h, w, P, depth, ref);
            for (size_t v = 0; v < per; v++)
                ck_assert_msg(fabs(out[i * per + v] - ref[v]) <= 1e-5 * (1 + fabs(ref[v])),
                              "%d x %d image %d: value %zu is %g, reference %g", h, w, i, v,
                              (double)out[i * per + v], ref[v]);
        }
        free(img);
        free(out);
        free(locs);
        free(ref);
        ram_glimpse_free(g);
    }
}
END_TEST

/* A contrast glimpse does not know light from dark: inside the image (where
 * no pixel reads 0 for being outside), the image 1 - x glimpses what x does
 * (to rounding), while the pixel values differ; bytes glimpse the bits of
 * their floats b / 255. */
START_TEST(test_contrast_invariance_and_bytes) {
    lcg_state = 5;
    const int c = 3, h = 64, w = 80, n = 12;
    ram_glimpse *g = make_glimpse(8, 2, 3.0f);
    ck_assert_int_eq(ram_glimpse_set_contrast(g, 1), RAM_OK);
    const size_t per = ram_glimpse_size(g, c), px = (size_t)c * h * w;
    uint8_t *b = malloc(px);
    float *f = malloc(sizeof(float) * px), *inv = malloc(sizeof(float) * px);
    float *of = malloc(sizeof(float) * per), *ob = malloc(sizeof(float) * per),
          *oi = malloc(sizeof(float) * per), *locs = malloc(sizeof(float) * 2 * n);
    ck_assert(b && f && inv && of && ob && oi && locs);
    for (int i = 0; i < 2 * n; i++) /* 24-pixel squares within 16 pixels of the centre */
        locs[i] = lcg_uniform() - 0.5f;
    for (size_t i = 0; i < px; i++) {
        b[i] = (uint8_t)(lcg_uniform() * 256.0f);
        f[i] = (float)b[i] / 255.0f;
        inv[i] = 1.0f - f[i];
    }
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ram_glimpse_extract(g, f, 1, c, h, w, locs + 2 * i, of, per), RAM_OK);
        ck_assert_int_eq(ram_glimpse_extract_u8(g, b, 1, c, h, w, locs + 2 * i, ob, per), RAM_OK);
        ck_assert_int_eq(ram_glimpse_extract(g, inv, 1, c, h, w, locs + 2 * i, oi, per), RAM_OK);
        ck_assert(memcmp(of, ob, sizeof(float) * per) == 0);
        for (size_t v = 0; v < per; v++)
            ck_assert_float_eq_tol(oi[v], of[v], 1e-5f);
    }
    /* The same sensor without contrast reads the inverted pixels. */
    ck_assert_int_eq(ram_glimpse_set_contrast(g, 0), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(g, f, 1, c, h, w, locs, of, per), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract(g, inv, 1, c, h, w, locs, oi, per), RAM_OK);
    ck_assert(fabsf(of[0] + oi[0] - 1.0f) < 1e-5f);
    free(b);
    free(f);
    free(inv);
    free(of);
    free(ob);
    free(oi);
    free(locs);
    ram_glimpse_free(g);
}
END_TEST

/* ---- arguments ---- */

START_TEST(test_invalid_arguments) {
    ram_glimpse *g = make_glimpse(2, 2, 2.0f);
    float img[2 * 3 * 4 * 5] = {0};
    float locs[4] = {0, 0, 0.5f, -0.5f};
    float out[2 * 3 * 8];
    const size_t cap = 2 * 3 * 8;
    ck_assert_uint_eq(ram_glimpse_size(g, 3), 24);
    ck_assert_uint_eq(ram_glimpse_size(NULL, 3), 0);
    ck_assert_uint_eq(ram_glimpse_size(g, 0), 0);

    ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, locs, out, cap), RAM_OK);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(NULL, 2), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(g, -1), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(g, 65), RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse_params gp;
    ram_glimpse_params_init(&gp);
    ram_glimpse *soft = NULL;
    ck_assert_int_eq(ram_glimpse_create_sensor(&gp, RAM_SENSOR_SOFT, &soft), RAM_OK);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(soft, 2), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_cell_samples(soft, 0), RAM_OK);
    ck_assert_int_eq(ram_glimpse_set_contrast(soft, 1), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_contrast(soft, 0), RAM_OK);
    ck_assert_int_eq(ram_glimpse_set_contrast(NULL, 1), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_contrast(g, 2), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_set_contrast(g, -1), RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse_free(soft);
    ram_clear_error();
    ck_assert_int_eq(ram_glimpse_extract(NULL, img, 2, 3, 4, 5, locs, out, cap),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_glimpse_extract(g, NULL, 2, 3, 4, 5, locs, out, cap),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, NULL, out, cap),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, locs, NULL, cap),
                     RAM_ERR_INVALID_ARGUMENT);
    const int bad_shapes[][4] = {{0, 3, 4, 5}, {-1, 3, 4, 5}, {2, 0, 4, 5},
                                 {2, 3, 0, 5}, {2, 3, 4, 0},  {2, 3, -4, 5}};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof *bad_shapes; i++) {
        const int *s = bad_shapes[i];
        ram_clear_error();
        ck_assert_int_eq(ram_glimpse_extract(g, img, s[0], s[1], s[2], s[3], locs, out, cap),
                         RAM_ERR_INVALID_ARGUMENT);
        ck_assert_str_ne(ram_last_error(), "");
    }

    /* One float short, and short by a whole image: nothing may be written. */
    for (size_t i = 0; i < cap; i++)
        out[i] = 42.0f;
    ram_clear_error();
    ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, locs, out, cap - 1),
                     RAM_ERR_BUFFER_TOO_SMALL);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, locs, out, 0),
                     RAM_ERR_BUFFER_TOO_SMALL);
    for (size_t i = 0; i < cap; i++)
        ck_assert_float_eq(out[i], 42.0f);

    /* A non-finite coordinate anywhere in the batch. */
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++)
        for (int pos = 0; pos < 4; pos++) {
            float l[4] = {0, 0, 0.5f, -0.5f};
            l[pos] = bad[b];
            ram_clear_error();
            ck_assert_int_eq(ram_glimpse_extract(g, img, 2, 3, 4, 5, l, out, cap), RAM_ERR_NUMERIC);
            ck_assert_str_ne(ram_last_error(), "");
        }
    ram_glimpse_free(g);
    ram_glimpse_free(NULL);
}
END_TEST

START_TEST(test_params) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    ck_assert_uint_eq(p.struct_size, sizeof p);
    ck_assert_int_eq(p.patch, 8);
    ck_assert_int_eq(p.depth, 1);
    ck_assert_float_eq(p.scale, 2.0f);
    ram_glimpse_params_init(NULL); /* must not crash */

    ram_glimpse *g = (ram_glimpse *)&p; /* sentinel: must stay untouched on failure */
    ram_glimpse *const sentinel = g;
    ram_clear_error();
    ck_assert_int_eq(ram_glimpse_create(NULL, &g), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_glimpse_create(&p, NULL), RAM_ERR_INVALID_ARGUMENT);

    /* struct_size 0 or shorter than the field itself: not a params struct. */
    const size_t small[] = {0, 1, sizeof(size_t) - 1};
    for (size_t i = 0; i < 3; i++) {
        ram_glimpse_params q;
        ram_glimpse_params_init(&q);
        q.struct_size = small[i];
        ram_clear_error();
        ck_assert_int_eq(ram_glimpse_create(&q, &g), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_str_ne(ram_last_error(), "");
        ck_assert_ptr_eq(g, sentinel);
    }

    /* Out-of-range values. */
    struct {
        int patch, depth;
        float scale;
    } bad[] = {{0, 1, 2},    {-3, 1, 2},  {1025, 1, 2},     {8, 0, 2},    {8, 17, 2},
               {8, 2, 0.5f}, {8, 2, NAN}, {8, 2, INFINITY}, {8, 16, 1000}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ram_glimpse_params q;
        ram_glimpse_params_init(&q);
        q.patch = bad[i].patch;
        q.depth = bad[i].depth;
        q.scale = bad[i].scale;
        ram_clear_error();
        ck_assert_msg(ram_glimpse_create(&q, &g) == RAM_ERR_INVALID_ARGUMENT,
                      "patch %d depth %d scale %g accepted", q.patch, q.depth, (double)q.scale);
        ck_assert_str_ne(ram_last_error(), "");
        ck_assert_ptr_eq(g, sentinel);
    }

    /* An "old caller" that only knew `patch`: the rest must be defaults,
     * whatever garbage follows in memory. */
    ram_glimpse_params old;
    memset(&old, 0xff, sizeof old);
    old.struct_size = offsetof(ram_glimpse_params, patch) + sizeof old.patch;
    old.patch = 3;
    ck_assert_int_eq(ram_glimpse_create(&old, &g), RAM_OK);
    ck_assert_int_eq(g->patch, 3);
    ck_assert_int_eq(g->depth, 1);
    ck_assert_float_eq(g->scale, 2.0f);
    ck_assert_uint_eq(ram_glimpse_size(g, 2), 18);
    ram_glimpse_free(g);

    /* A "newer caller" with a bigger struct: the known prefix is used. */
    struct {
        ram_glimpse_params p;
        int future_field;
    } newer;
    memset(&newer, 0, sizeof newer);
    ram_glimpse_params_init(&newer.p);
    newer.p.struct_size = sizeof newer;
    newer.p.patch = 5;
    newer.p.depth = 2;
    newer.future_field = 123;
    ck_assert_int_eq(ram_glimpse_create(&newer.p, &g), RAM_OK);
    ck_assert_int_eq(g->patch, 5);
    ck_assert_int_eq(g->depth, 2);
    ck_assert_int_eq(g->side[1], 10);
    ram_glimpse_free(g);
}
END_TEST

static Suite *glimpse_suite(void) {
    Suite *s = suite_create("glimpse");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, test_reference_depth3_scale2);
    tcase_add_test(ref, test_reference_fractional_scale);
    tcase_add_test(ref, test_reference_cell_samples);
    tcase_add_test(ref, test_cell_samples_bytes);
    tcase_add_test(ref, test_contrast_reference);
    tcase_add_test(ref, test_contrast_invariance_and_bytes);
    tcase_add_test(ref, test_reference_patch1_and_odd_sizes);
    suite_add_tcase(s, ref);
    TCase *exact = tcase_create("exact");
    tcase_add_test(exact, test_constant_image_exact);
    tcase_add_test(exact, test_location_mapping);
    tcase_add_test(exact, test_far_outside_reads_zero);
    tcase_add_test(exact, test_batch_layout);
    suite_add_tcase(s, exact);
    TCase *args = tcase_create("arguments");
    tcase_add_test(args, test_invalid_arguments);
    tcase_add_test(args, test_params);
    suite_add_tcase(s, args);
    return s;
}

int main(void) {
    return run_suite(glimpse_suite());
}
