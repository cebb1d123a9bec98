/* The glimpse sensor (the paper's "retina", Torch's SpatialGlimpse): around a
 * location, `depth` squares, each `scale` times wider than the last, each
 * average-pooled to patch x patch.  Pixels outside the image read as 0.
 * The soft sensor, which averages the same squares' cells wherever their
 * edges fall, is glimpse_soft.c; the calls below hand it its glimpses. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ram_glimpse_params_init_sized(ram_glimpse_params *p, size_t size) {
    static const ram_glimpse_params d = {
        .struct_size = sizeof d, .patch = 8, .depth = 1, .scale = 2.0f};
    ram_params_fill(p, size, &d, sizeof d);
}

/* Side k of a retina as created: round(patch x scale^k) pixels. */
static double base_side(int patch, float scale, int k) {
    return patch * pow(scale, k);
}

ram_status ram_glimpse_init(struct ram_glimpse *g, const ram_glimpse_params *user) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "glimpse");
    if (s) return s;
    if (p.patch < 1 || p.patch > RAM_MAX_PATCH)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: patch %d not in [1, %d]", p.patch,
                        RAM_MAX_PATCH);
    if (p.depth < 1 || p.depth > RAM_MAX_DEPTH)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: depth %d not in [1, %d]", p.depth,
                        RAM_MAX_DEPTH);
    if (!isfinite(p.scale) || p.scale < 1.0f)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: scale %g must be finite and >= 1",
                        (double)p.scale);
    g->patch = p.patch;
    g->depth = p.depth;
    g->scale = p.scale;
    g->sensor = RAM_SENSOR_HARD; /* ram_glimpse_create_sensor() and models set SOFT */
    g->samples = 0;              /* models set ram_model_params.cell_samples */
    g->contrast = false;         /* models set ram_model_params.contrast */
    for (int k = 0; k < p.depth; k++) {
        double side = base_side(p.patch, p.scale, k);
        if (side > 1 << 20)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: scale %d is %g pixels wide", k,
                            side);
        g->side[k] = (int)lround(side);
        g->span[k] = g->side[k];
    }
    return RAM_OK;
}

void ram_glimpse_zoomed(const struct ram_glimpse *g, float zoom, struct ram_glimpse *out) {
    *out = *g;
    for (int k = 0; k < g->depth; k++) {
        out->span[k] = g->span[k] * zoom;
        double side = floor(out->span[k] + 0.5);
        /* at least a pixel; NaN too, so that the cast is defined */
        if (!(side >= 1.0)) side = 1.0;
        if (side > 1 << 24) side = 1 << 24;
        out->side[k] = (int)side;
    }
}

ram_status ram_glimpse_create(const ram_glimpse_params *p, ram_glimpse **out) {
    if (!out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: out is NULL");
    struct ram_glimpse tmp;
    ram_status s = ram_glimpse_init(&tmp, p);
    if (s) return s;
    ram_glimpse *g = malloc(sizeof *g);
    if (!g) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "glimpse: out of memory");
    *g = tmp;
    *out = g;
    return RAM_OK;
}

ram_status ram_glimpse_set_cell_samples(ram_glimpse *g, int k) {
    if (!g) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_cell_samples: g is NULL");
    if (k < 0 || k > 64)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_cell_samples: %d not in [0, 64]", k);
    if (k && g->sensor != RAM_SENSOR_HARD)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "glimpse_set_cell_samples: for the hard sensor only");
    g->samples = k;
    return RAM_OK;
}

ram_status ram_glimpse_set_contrast(ram_glimpse *g, int on) {
    if (!g) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_contrast: g is NULL");
    if (on != 0 && on != 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_contrast: %d is not 0 or 1", on);
    if (on && g->sensor != RAM_SENSOR_HARD)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_contrast: for the hard sensor only");
    g->contrast = on;
    return RAM_OK;
}

ram_status ram_glimpse_set_zoom(ram_glimpse *g, float zoom) {
    if (!g) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_zoom: g is NULL");
    if (!(zoom >= 1.0f / 64 && zoom <= 16.0f))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_set_zoom: %g not in [1/64, 16]",
                        (double)zoom);
    struct ram_glimpse base = *g;
    for (int k = 0; k < g->depth; k++)
        base.span[k] = base.side[k] = (int)lround(base_side(g->patch, g->scale, k));
    if (zoom == 1.0f)
        *g = base;
    else
        ram_glimpse_zoomed(&base, zoom, g);
    return RAM_OK;
}

void ram_glimpse_free(ram_glimpse *g) {
    free(g);
}

size_t ram_glimpse_size(const ram_glimpse *g, int channels) {
    if (!g || channels < 1) return 0;
    return (size_t)channels * g->depth * g->patch * g->patch;
}

/* Top-left pixel of a square of `side` pixels centred on the continuous
 * coordinate (l + 1) * extent / 2.  The clamp keeps far-off locations from
 * overflowing int; such squares read all zeros anyway. */
static long square_start(float l, int extent, int side) {
    double centre = ((double)l + 1.0) * extent * 0.5;
    double start = floor(centre - side * 0.5 + 0.5);
    double lim = (double)extent + 2.0 * side + 2;
    if (!(start >= -lim)) start = -lim; /* also catches NaN: no undefined cast */
    if (!(start <= lim)) start = lim;
    return (long)start;
}

/* byte / 255 for every byte, worked out by the compiler: (float)b / 255.0f,
 * the conversion the tools made before handing over floats, correctly
 * rounded, so that a byte image glimpses the very bits its float image
 * does.  A table rather than a division per pixel read: a load is cheaper. */
#define BYTE_1(b)  ((float)(b) / 255.0f)
#define BYTE_4(b)  BYTE_1(b), BYTE_1((b) + 1), BYTE_1((b) + 2), BYTE_1((b) + 3)
#define BYTE_16(b) BYTE_4(b), BYTE_4((b) + 4), BYTE_4((b) + 8), BYTE_4((b) + 12)
#define BYTE_64(b) BYTE_16(b), BYTE_16((b) + 16), BYTE_16((b) + 32), BYTE_16((b) + 48)
const float ram_byte_value[256] = {BYTE_64(0), BYTE_64(64), BYTE_64(128), BYTE_64(192)};
#undef BYTE_1
#undef BYTE_4
#undef BYTE_16
#undef BYTE_64

bool ram_images_missing(ram_images b, int n) {
    if (b.f || b.u8) return false;
    if (!b.each) return true;
    for (int i = 0; i < n; i++)
        if (!b.each[i]) return true;
    return false;
}

/* The sensor's loops are written once, over pixels read by pixel(); `u8`
 * is a constant wherever they are inlined (always_inline, called with
 * true or false), so each kind of image gets loops of its own, the float
 * ones the very code they were before bytes came in. */
#define INLINE static inline __attribute__((always_inline))

/* Pixel i of a plane of floats or bytes. */
INLINE float pixel(const void *plane, bool u8, size_t i) {
    return u8 ? ram_byte_value[((const uint8_t *)plane)[i]] : ((const float *)plane)[i];
}

/* The pixel at offset i of a plane, as an address. */
INLINE const void *pixel_addr(const void *plane, bool u8, size_t i) {
    return u8 ? (const void *)((const uint8_t *)plane + i)
              : (const void *)((const float *)plane + i);
}

/* The sum of an f x f cell, row by row, from 0: the order of the general
 * loop in ram_glimpse_rows(), so the bits are the same. */
INLINE float cell_sum(const void *cell, bool u8, long w, int f) {
    float sum = 0.0f;
    for (int r = 0; r < f; r++)
        for (int c = 0; c < f; c++)
            sum += pixel(cell, u8, (size_t)r * w + c);
    return sum;
}

/* Images smaller than this (64 KB) stay in cache: no prefetching. */
#define PREFETCH_MIN_BYTES 65536

static bool worth_prefetching(ram_image img, int c, int h, int w) {
    return (size_t)c * h * w * (img.u8 ? 1 : sizeof(float)) >= PREFETCH_MIN_BYTES;
}

/* Asks for the cache lines of rows [r0, r1) x columns [c0, c1) of a plane
 * of width w (already clipped to the image).  A hint: never faults. */
INLINE void prefetch_block(const void *plane, bool u8, long w, long r0, long r1, long c0, long c1) {
    for (long r = r0; r < r1; r++) {
        const size_t row = (size_t)r * w;
        const uintptr_t last = (uintptr_t)pixel_addr(plane, u8, row + c1 - 1);
        for (uintptr_t a = (uintptr_t)pixel_addr(plane, u8, row + c0) & ~(uintptr_t)63; a <= last;
             a += 64)
            __builtin_prefetch((const void *)a, 0, 3);
    }
}

/* The widest square of a glimpse at (lx, ly), clipped to the image: its
 * top row y0 (unclipped: cell rows are counted from it) and columns
 * [c0, c1); false if no column is inside. */
static bool widest_square(const struct ram_glimpse *g, int h, int w, float lx, float ly, long *y0,
                          long *c0, long *c1) {
    const int side = g->side[g->depth - 1];
    const long x0 = square_start(lx, w, side);
    *y0 = square_start(ly, h, side);
    *c0 = x0 < 0 ? 0 : x0;
    *c1 = x0 + side > w ? w : x0 + side;
    return *c0 < *c1;
}

/* Rows of cell row i of the widest square from y0, clipped to [0, h). */
static void cell_band(const struct ram_glimpse *g, int h, long y0, int i, long *r0, long *r1) {
    const int P = g->patch, side = g->side[g->depth - 1];
    *r0 = y0 + (long)i * side / P;
    *r1 = y0 + (long)(i + 1) * side / P;
    if (*r0 < 0) *r0 = 0;
    if (*r1 > h) *r1 = h;
}

/* Asks for the cache lines of the widest square's rows [p0, p1) before any
 * is read.  A large image (512x512 is 1 MB a channel) is not in L1 or L2,
 * and the loops below touch its rows one after another, each a miss that
 * waits for the last; prefetching them all first lets the misses overlap.
 * The narrower squares lie inside the widest (their rows mostly in other
 * cells' bands, which the other calls of a threaded state prefetch). */
INLINE void prefetch_square(const struct ram_glimpse *g, const void *px, bool u8, int c, int h,
                            int w, float lx, float ly, int p0, int p1) {
    long y0, c0, c1, r0, r1, unused;
    const ram_image img = {px, u8};
    if (!worth_prefetching(img, c, h, w) || !widest_square(g, h, w, lx, ly, &y0, &c0, &c1)) return;
    cell_band(g, h, y0, p0, &r0, &unused);
    cell_band(g, h, y0, p1 - 1, &unused, &r1);
    for (int ch = 0; ch < c; ch++)
        prefetch_block(pixel_addr(px, u8, (size_t)ch * h * w), u8, w, r0, r1, c0, c1);
}

void ram_glimpse_prefetch(const struct ram_glimpse *g, ram_image img, int c, int h, int w, float lx,
                          float ly, int p0, int p1) {
    if (img.u8)
        prefetch_square(g, img.px, true, c, h, w, lx, ly, p0, p1);
    else
        prefetch_square(g, img.px, false, c, h, w, lx, ly, p0, p1);
}

/* Row i of one scale's patch of one channel into o (P cells): cell (i, j)
 * covers rows [y0 + i*side/P, y0 + (i+1)*side/P) and columns [xb[j],
 * xb[j + 1]): exact average pooling when P divides side, area pooling
 * otherwise; pixels outside the image count as zeros. */
INLINE void pool_row(const void *plane, bool u8, int h, int w, const long *xb, int P, int side,
                     long y0, int i, float *o) {
    long r0 = y0 + (long)i * side / P, r1 = y0 + (long)(i + 1) * side / P;
    const long rows = r1 - r0;
    if (r0 < 0) r0 = 0;
    if (r1 > h) r1 = h;
    if (side == P) {
        /* One pixel per cell.  0 + pixel is what the sum below
         * gives (a -0 pixel reads as +0): the same bits. */
        const size_t row = (size_t)(r0 < r1 ? r0 : 0) * w;
        for (int j = 0; j < P; j++)
            o[j] = r0 < r1 && xb[j] >= 0 && xb[j] < w ? 0.0f + pixel(plane, u8, row + xb[j]) : 0.0f;
        return;
    }
    const bool rows_inside = rows > 0 && r0 == r1 - rows;
    for (int j = 0; j < P; j++) {
        const long cols = xb[j + 1] - xb[j];
        if (rows_inside && cols == rows && xb[j] >= 0 && xb[j + 1] <= w) {
            /* A whole f x f cell inside the image (the usual case):
             * the loops below with f known, unrolled. */
            const void *cell = pixel_addr(plane, u8, (size_t)r0 * w + xb[j]);
            float sum;
            switch (rows) {
            case 2:
                sum = cell_sum(cell, u8, w, 2);
                break;
            case 4:
                sum = cell_sum(cell, u8, w, 4);
                break;
            case 8:
                sum = cell_sum(cell, u8, w, 8);
                break;
            default:
                sum = cell_sum(cell, u8, w, (int)rows);
                break;
            }
            o[j] = sum / ((float)rows * (float)cols);
            continue;
        }
        const long c0 = xb[j] < 0 ? 0 : xb[j], c1 = xb[j + 1] > w ? w : xb[j + 1];
        float sum = 0.0f;
        for (long r = r0; r < r1; r++)
            for (long cc = c0; cc < c1; cc++)
                sum += pixel(plane, u8, (size_t)r * w + cc);
        /* The area as a float product of exact factors: the
         * correctly rounded rows * cols, the bits a long product
         * gave, without overflowing a 32-bit long. */
        o[j] = rows > 0 && cols > 0 ? sum / ((float)rows * (float)cols) : 0.0f;
    }
}

/* Row i of a square narrower than the patch (side < P: a zoom below 1
 * makes one), whose cells are less than a pixel wide: each cell reads the
 * pixel under its centre, the one at y0 + floor((2i + 1) side / 2P) and
 * x0 + floor((2j + 1) side / 2P); zeros outside.  (With side = P that is
 * pool_row()'s one pixel per cell.) */
INLINE void point_row(const void *plane, bool u8, int h, int w, long x0, long y0, int P, int side,
                      int i, float *o) {
    const long r = y0 + (2L * i + 1) * side / (2L * P);
    const bool row_in = r >= 0 && r < h;
    for (int j = 0; j < P; j++) {
        const long x = x0 + (2L * j + 1) * side / (2L * P);
        o[j] =
            row_in && x >= 0 && x < w ? 0.0f + pixel(plane, u8, (size_t)r * w + (size_t)x) : 0.0f;
    }
}

/* Row i of a scale whose cells are wider than k pixels, each cell read at
 * the k x k (fewer where the cell is narrower) pixels at the centres of a
 * grid over it (ram_model_params.cell_samples): at most k^2 reads a cell,
 * whatever the cell's size.  Samples outside the image read 0 and count, as
 * pixels outside do in pool_row(). */
INLINE void sampled_row(const void *plane, bool u8, int h, int w, const long *xb, int P, int side,
                        long y0, int i, int k, float *o) {
    const long r0 = y0 + (long)i * side / P, rows = y0 + (long)(i + 1) * side / P - r0;
    const int kr = rows < k ? (int)rows : k;
    long ry[64];
    for (int m = 0; m < kr; m++)
        ry[m] = ram_cell_sample(r0, rows, m, kr);
    for (int j = 0; j < P; j++) {
        const long cols = xb[j + 1] - xb[j];
        const int kc = cols < k ? (int)cols : k;
        float sum = 0.0f;
        for (int m = 0; m < kr; m++) {
            if (ry[m] < 0 || ry[m] >= h) continue;
            const size_t row = (size_t)ry[m] * w;
            for (int n = 0; n < kc; n++) {
                const long x = ram_cell_sample(xb[j], cols, n, kc);
                if (x >= 0 && x < w) sum += pixel(plane, u8, row + (size_t)x);
            }
        }
        o[j] = kr > 0 && kc > 0 ? sum / ((float)kr * (float)kc) : 0.0f;
    }
}

/* Asks for the cache lines of every pixel the sampled scales (cells wider
 * than K pixels) of a glimpse at (lx, ly) will read in rows [p0, p1),
 * before any is read: at 1024 x 1024 nearly each is a miss of its own, and
 * asked for together they overlap rather than wait for one another.  A
 * hint: never faults (pixels outside the image are skipped). */
INLINE void prefetch_samples(const struct ram_glimpse *g, const void *px, bool u8, int c, int h,
                             int w, float lx, float ly, int p0, int p1) {
    const int P = g->patch, K = g->samples;
    for (int k = 0; k < g->depth; k++) {
        const int side = g->side[k];
        if (side <= (long)K * P) continue;
        const long x0 = square_start(lx, w, side), y0 = square_start(ly, h, side);
        for (int i = p0; i < p1; i++) {
            const long r0 = y0 + (long)i * side / P, rows = y0 + (long)(i + 1) * side / P - r0;
            const int kr = rows < K ? (int)rows : K;
            for (int m = 0; m < kr; m++) {
                const long y = ram_cell_sample(r0, rows, m, kr);
                if (y < 0 || y >= h) continue;
                for (int j = 0; j < P; j++) {
                    const long xa = x0 + (long)j * side / P,
                               cols = x0 + (long)(j + 1) * side / P - xa;
                    const int kc = cols < K ? (int)cols : K;
                    for (int q = 0; q < kc; q++) {
                        const long x = ram_cell_sample(xa, cols, q, kc);
                        if (x < 0 || x >= w) continue;
                        for (int ch = 0; ch < c; ch++)
                            __builtin_prefetch(
                                pixel_addr(px, u8, ((size_t)ch * h + (size_t)y) * w + (size_t)x), 0,
                                3);
                    }
                }
            }
        }
    }
}

/* The hard sensor's rows [p0, p1) of image px (floats or bytes, u8 a
 * constant), and while the widest square's cell rows are summed, the same
 * cell rows of `next`'s widest square at (nx, ny) are asked for (NULL:
 * none). */
INLINE void hard_rows(const struct ram_glimpse *g, const void *px, bool u8, int c, int h, int w,
                      float lx, float ly, float *out, int p0, int p1, const void *next, float nx,
                      float ny) {
    const int P = g->patch, K = g->samples;
    const ram_image img = {px, u8};
    /* A sampled retina reads a few pixels of each row it touches: asking for
     * the whole widest square would read what it skips. */
    if (!K)
        prefetch_square(g, px, u8, c, h, w, lx, ly, p0, p1);
    else if (worth_prefetching(img, c, h, w))
        /* (The next image's samples asked for here as well made a 1024 x
         * 1024 classification slower, 147 -> 159 us: too many at once.) */
        prefetch_samples(g, px, u8, c, h, w, lx, ly, p0, p1);
    long ny0 = 0, nc0 = 0, nc1 = 0;
    const bool ahead = next && !K && worth_prefetching(img, c, h, w) &&
                       widest_square(g, h, w, nx, ny, &ny0, &nc0, &nc1);
    /* Cell j of a row covers columns [xb[j], xb[j + 1]): the same for every
     * row and channel of a scale, so the divisions are done once per scale
     * (they were most of a glimpse's cost at 8x8). */
    long xb[RAM_MAX_PATCH + 1];
    for (int k = 0; k < g->depth; k++) {
        const int side = g->side[k];
        const long x0 = square_start(lx, w, side), y0 = square_start(ly, h, side);
        for (int j = 0; j <= P; j++)
            xb[j] = x0 + (long)j * side / P;
        for (int ch = 0; ch < c; ch++) {
            const void *plane = pixel_addr(px, u8, (size_t)ch * h * w);
            float *o = out + ((size_t)ch * g->depth + k) * P * P;
            for (int i = p0; i < p1; i++) {
                if (ahead && k == g->depth - 1) {
                    /* The next image's misses, a band at a time between
                     * this one's sums rather than all at once before them:
                     * a burst of a window's prefetches fills the miss
                     * buffers and holds up the sums behind it. */
                    long a, b;
                    cell_band(g, h, ny0, i, &a, &b);
                    prefetch_block(pixel_addr(next, u8, (size_t)ch * h * w), u8, w, a, b, nc0, nc1);
                }
                if (side < P) /* cells narrower than a pixel: zoomed in */
                    point_row(plane, u8, h, w, x0, y0, P, side, i, o + i * P);
                else if (K && side > (long)K * P) /* cells wider than K pixels */
                    sampled_row(plane, u8, h, w, xb, P, side, y0, i, K, o + i * P);
                else
                    pool_row(plane, u8, h, w, xb, P, side, y0, i, o + i * P);
            }
        }
    }
}

static void hard_rows_f32(const struct ram_glimpse *g, const float *px, int c, int h, int w,
                          float lx, float ly, float *out, int p0, int p1, const float *next,
                          float nx, float ny) {
    hard_rows(g, px, false, c, h, w, lx, ly, out, p0, p1, next, nx, ny);
}

static void hard_rows_u8(const struct ram_glimpse *g, const uint8_t *px, int c, int h, int w,
                         float lx, float ly, float *out, int p0, int p1, const uint8_t *next,
                         float nx, float ny) {
    hard_rows(g, px, true, c, h, w, lx, ly, out, p0, p1, next, nx, ny);
}

/* The image's statistics for ram_model_params.contrast, channel ch: the
 * mean of the pixels at the centres of a grid of (at most) CONTRAST_GRID x
 * CONTRAST_GRID cells over the image, and 1 / (4 sqrt(variance + 1e-4)) of
 * the same pixels.  A fixed number of reads, whatever the image's size, as
 * the sensor's own; in doubles, so bytes and their floats agree bit for bit. */
#define CONTRAST_GRID 32

static void channel_stats(ram_image img, int ch, int h, int w, float *shift, float *gain) {
    const int gr = h < CONTRAST_GRID ? h : CONTRAST_GRID,
              gc = w < CONTRAST_GRID ? w : CONTRAST_GRID;
    const void *plane = img.u8 ? pixel_addr(img.px, true, (size_t)ch * h * w)
                               : pixel_addr(img.px, false, (size_t)ch * h * w);
    double sum = 0, sq = 0;
    for (int pass = 0; pass < 2; pass++) {
        const double mean = sum / ((double)gr * gc);
        for (int m = 0; m < gr; m++) {
            const size_t row = (size_t)ram_cell_sample(0, h, m, gr) * w;
            for (int n = 0; n < gc; n++) {
                const size_t at = row + (size_t)ram_cell_sample(0, w, n, gc);
                const double v = img.u8 ? pixel(plane, true, at) : pixel(plane, false, at);
                if (pass == 0)
                    sum += v;
                else
                    sq += (v - mean) * (v - mean);
            }
        }
    }
    const double n = (double)gr * gc;
    *shift = (float)(sum / n);
    *gain = (float)(0.25 / sqrt(sq / n + 1e-4));
}

void ram_contrast_stats(ram_image img, int c, int h, int w, float *stats) {
    /* A large image's grid pixels are a miss each: asked for together first. */
    if (worth_prefetching(img, c, h, w)) {
        const int gr = h < CONTRAST_GRID ? h : CONTRAST_GRID,
                  gc = w < CONTRAST_GRID ? w : CONTRAST_GRID;
        for (int ch = 0; ch < c; ch++)
            for (int m = 0; m < gr; m++) {
                const size_t row = ((size_t)ch * h + (size_t)ram_cell_sample(0, h, m, gr)) * w;
                for (int n = 0; n < gc; n++)
                    __builtin_prefetch(
                        pixel_addr(img.px, img.u8, row + (size_t)ram_cell_sample(0, w, n, gc)), 0,
                        3);
            }
    }
    for (int ch = 0; ch < c; ch++)
        channel_stats(img, ch, h, w, &stats[2 * ch], &stats[2 * ch + 1]);
}

/* Rows [p0, p1) of every scale's patch of channel ch, already pooled, as
 * contrast magnitudes |v - shift| x gain (from stats, or worked out here). */
static void contrast_rows(const struct ram_glimpse *g, ram_image img, int ch, int h, int w,
                          const float *stats, float *out, int p0, int p1) {
    const int P = g->patch;
    float shift, gain;
    if (stats) {
        shift = stats[2 * ch];
        gain = stats[2 * ch + 1];
    } else {
        channel_stats(img, ch, h, w, &shift, &gain);
    }
    for (int k = 0; k < g->depth; k++) {
        float *o = out + ((size_t)ch * g->depth + k) * P * P;
        for (int q = p0 * P; q < p1 * P; q++)
            o[q] = fabsf(o[q] - shift) * gain;
    }
}

/* ram_glimpse_rows() with `next` (of img's kind; px NULL: none). */
static void glimpse_rows(const struct ram_glimpse *g, ram_image img, int c, int h, int w, float lx,
                         float ly, const float *stats, float *out, int p0, int p1, ram_image next,
                         float nx, float ny) {
    if (g->sensor == RAM_SENSOR_SOFT) { /* glimpse_soft.c */
        ram_glimpse_soft_rows(g, img, c, h, w, lx, ly, out, p0, p1);
        return;
    }
    if (img.u8)
        hard_rows_u8(g, img.px, c, h, w, lx, ly, out, p0, p1, next.px, nx, ny);
    else
        hard_rows_f32(g, img.px, c, h, w, lx, ly, out, p0, p1, next.px, nx, ny);
    if (g->contrast)
        for (int ch = 0; ch < c; ch++)
            contrast_rows(g, img, ch, h, w, stats, out, p0, p1);
}

static const ram_image no_image = {NULL, false};

void ram_glimpse_one(const struct ram_glimpse *g, ram_image img, int c, int h, int w, float lx,
                     float ly, const float *stats, float *out) {
    glimpse_rows(g, img, c, h, w, lx, ly, stats, out, 0, g->patch, no_image, 0, 0);
}

void ram_glimpse_one_ahead(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                           float lx, float ly, const float *stats, float *out, ram_image next,
                           float nx, float ny) {
    glimpse_rows(g, img, c, h, w, lx, ly, stats, out, 0, g->patch, next, nx, ny);
}

void ram_glimpse_rows(const struct ram_glimpse *g, ram_image img, int c, int h, int w, float lx,
                      float ly, const float *stats, float *out, int p0, int p1) {
    glimpse_rows(g, img, c, h, w, lx, ly, stats, out, p0, p1, no_image, 0, 0);
}

/* ram_glimpse_extract() and its byte twin: checks, then each image. */
static ram_status extract(const ram_glimpse *g, ram_images images, int n, int c, int h, int w,
                          const float *locs, float *out, size_t out_len, const char *what) {
    if (!g || ram_images_missing(images, 1) || !locs || !out)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (n < 1 || c < 1 || h < 1 || w < 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: shape %d x %d x %d x %d has a dimension < 1",
                        what, n, c, h, w);
    /* No array of more elements than the address space holds can exist: a
     * shape whose product overflows is a wrong shape (and would make the
     * offsets below wrap). */
    if ((double)n * c * h * w > (double)(SIZE_MAX / sizeof(float)))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: %d x %d x %d x %d pixels cannot be in memory", what, n, c, h, w);
    size_t per = ram_glimpse_size(g, c);
    if (out_len / per < (size_t)n)
        return ram_fail(RAM_ERR_BUFFER_TOO_SMALL, "%s: out holds %zu floats, %zu x %d needed", what,
                        out_len, per, n);
    for (size_t i = 0; i < 2 * (size_t)n; i++)
        if (!isfinite(locs[i]))
            return ram_fail(RAM_ERR_NUMERIC, "%s: location %zu is not finite", what, i / 2);
    const size_t img_size = (size_t)c * h * w;
    for (int i = 0; i < n; i++)
        ram_glimpse_one(g, ram_images_at(images, i, img_size), c, h, w, locs[2 * i],
                        locs[2 * i + 1], NULL, out + i * per);
    return RAM_OK;
}

ram_status ram_glimpse_extract(const ram_glimpse *g, const float *images, int n, int c, int h,
                               int w, const float *locs, float *out, size_t out_len) {
    return extract(g, ram_images_f32(images), n, c, h, w, locs, out, out_len, "glimpse_extract");
}

ram_status ram_glimpse_extract_u8(const ram_glimpse *g, const uint8_t *images, int n, int c, int h,
                                  int w, const float *locs, float *out, size_t out_len) {
    const ram_images b = {NULL, images, NULL};
    return extract(g, b, n, c, h, w, locs, out, out_len, "glimpse_extract_u8");
}
