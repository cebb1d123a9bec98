/* The soft glimpse sensor: each scale's square, the one the hard sensor
 * average-pools, is read as patch x patch cells, each value the exact
 * average of the image over its cell, a square of side c = side / patch
 * pixels whose edges lie wherever the location puts them, between pixel
 * edges as well as on them.  A pixel partly inside a cell counts in
 * proportion to the part inside, so the patch is a continuous, piecewise
 * bilinear function of the location and its gradient reaches the location
 * network; the cell's area, not one point of it, is seen, so a coarse
 * scale tells what the hard sensor's does.  A cell of one pixel or less
 * (c <= 1) is read as the average over a pixel-wide square centred on it,
 * which is bilinear interpolation at its centre: four pixels.  Pixels
 * outside the image read as 0, as in the hard sensor.  The cost of a value
 * is that of its cell's pixels, whatever the image's size. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- cells of one pixel or less: bilinear interpolation ---- */

/* One axis of one scale's grid: for sample j, the pixel before it (a0)
 * and after (a0 + 1), their weights, and whether each is inside the image
 * (a pixel outside reads 0 and is never touched). */
typedef struct axis {
    long a0[RAM_MAX_PATCH];
    float f[RAM_MAX_PATCH]; /* weight of a0 + 1; a0's is 1 - f */
    bool in0[RAM_MAX_PATCH], in1[RAM_MAX_PATCH];
} axis;

/* Sample j of P on an axis of `extent` pixels: the centre of cell j of a
 * square of `side` pixels centred on the continuous coordinate
 * (l + 1) * extent / 2 (pixel edges at integers), as a coordinate on pixel
 * centres (pixel k's centre at k).  Computed in double: a float would lose
 * the fraction of a sample far into a wide image. */
static void axis_of(float l, int extent, double side, int P, int lo, int hi, axis *a) {
    const double centre = ((double)l + 1.0) * extent * 0.5, start = centre - side * 0.5;
    for (int j = lo; j < hi; j++) {
        double v = start + (j + 0.5) * side / P - 0.5;
        /* Beyond a pixel outside the image the sample reads only zeros and
         * its derivative is 0 either way: clamp, so that the cast below is
         * defined for any finite location. */
        if (!(v >= -2.0)) v = -2.0;
        if (!(v <= extent + 1.0)) v = extent + 1.0;
        const double v0 = floor(v);
        a->a0[j] = (long)v0;
        a->f[j] = (float)(v - v0);
        a->in0[j] = a->a0[j] >= 0 && a->a0[j] < extent;
        a->in1[j] = a->a0[j] + 1 >= 0 && a->a0[j] + 1 < extent;
    }
}

/* The four pixels around sample (i, j) of a plane: p00 at (y0, x0), p01 at
 * (y0, x0 + 1), p10 at (y0 + 1, x0), p11 at (y0 + 1, x0 + 1); zeros outside. */
typedef struct quad {
    float p00, p01, p10, p11;
} quad;

/* Pixels are floats or bytes (read through ram_byte_value[]).  The loops
 * below are written once: `u8` is a constant wherever they are inlined, so
 * the float loops are the code they were before bytes came in. */
#define INLINE static inline __attribute__((always_inline))

/* Pixel x of a row of floats or bytes. */
INLINE float pixel(const void *row, bool u8, long x) {
    return u8 ? ram_byte_value[((const uint8_t *)row)[x]] : ((const float *)row)[x];
}

/* The pixel `at` pixels from p, as an address. */
INLINE const void *offset(const void *p, bool u8, size_t at) {
    return u8 ? (const void *)((const uint8_t *)p + at) : (const void *)((const float *)p + at);
}

INLINE quad quad_at(const void *plane, bool u8, long w, const axis *ax, const axis *ay, int i,
                    int j) {
    const long y0 = ay->a0[i], x0 = ax->a0[j];
    const void *r0 = offset(plane, u8, (size_t)(ay->in0[i] ? y0 : 0) * w);
    const void *r1 = offset(plane, u8, (size_t)(ay->in1[i] ? y0 + 1 : 0) * w);
    quad q;
    q.p00 = ay->in0[i] && ax->in0[j] ? pixel(r0, u8, x0) : 0.0f;
    q.p01 = ay->in0[i] && ax->in1[j] ? pixel(r0, u8, x0 + 1) : 0.0f;
    q.p10 = ay->in1[i] && ax->in0[j] ? pixel(r1, u8, x0) : 0.0f;
    q.p11 = ay->in1[i] && ax->in1[j] ? pixel(r1, u8, x0 + 1) : 0.0f;
    return q;
}

INLINE float quad_value(quad q, float fx, float fy) {
    const float top = q.p00 + fx * (q.p01 - q.p00);
    const float bottom = q.p10 + fx * (q.p11 - q.p10);
    return top + fy * (bottom - top);
}

/* d value / d x and d value / d y in pixels: at a sample exactly on a pixel
 * centre (a fraction of 0) the one from the right, that of the bilinear
 * piece the sample's pixel pair starts (the function has a kink there;
 * either side would do for descent). */
INLINE float quad_dx(quad q, float fy) {
    return (1.0f - fy) * (q.p01 - q.p00) + fy * (q.p11 - q.p10);
}

INLINE float quad_dy(quad q, float fx) {
    return (1.0f - fx) * (q.p10 - q.p00) + fx * (q.p11 - q.p01);
}

/* ---- cells wider than a pixel: area averages ---- */

/* One axis of one scale's cells, for c > 1: cell j spans [a, b) (edges at
 * integers), which covers pixel p0 = floor(a) by wf = p0 + 1 - a, pixels
 * p0 + 1 .. p1 - 1 wholly and pixel p1 = p0 + n by wl = b - p1 (p1 the last
 * pixel b enters, so wl > 0).  The value's derivative with respect to a is
 * that of the pixels under its two edges: the pixel b is in, p1, or p1 + 1
 * where b is on a pixel edge (`edge`: the derivative from the right), less
 * p0. */
typedef struct boxes {
    long p0[RAM_MAX_PATCH];
    int n[RAM_MAX_PATCH];
    float wf[RAM_MAX_PATCH], wl[RAM_MAX_PATCH];
    bool edge[RAM_MAX_PATCH];
} boxes;

/* Cells j in [lo, hi) of P on an axis of `extent` pixels: cell j of a
 * square of `side` pixels centred on (l + 1) * extent / 2, in double as
 * axis_of(). */
static void boxes_of(float l, int extent, double side, int P, int lo, int hi, boxes *bx) {
    const double centre = ((double)l + 1.0) * extent * 0.5, start = centre - side * 0.5;
    const double c = (double)side / P;
    /* Each cell's far edge is the next one's near edge: one division a
     * cell, and edges that a whole multiple of side / P puts on pixel
     * edges are exactly there. */
    double next = start + (double)lo * side / P;
    for (int j = lo; j < hi; j++) {
        double a = next, b = start + (double)(j + 1) * side / P;
        next = b;
        /* A cell beyond a pixel outside the image reads only zeros and its
         * derivative is 0 either way: clamp, so that the casts below are
         * defined for any finite location. */
        if (!(a >= -c - 2.0)) {
            a = -c - 2.0;
            b = -2.0;
        }
        if (!(a <= extent + 1.0)) {
            a = extent + 1.0;
            b = a + c;
        }
        const double p0 = floor(a), p1 = ceil(b) - 1.0;
        bx->p0[j] = (long)p0;
        bx->n[j] = (int)(p1 - p0);
        bx->wf[j] = (float)(p0 + 1.0 - a);
        bx->wl[j] = (float)(b - p1);
        bx->edge[j] = p1 + 1.0 == b;
    }
}

/* Columns summed at a time: a cell row's columns are taken in pieces of
 * this many, so that any width of square needs only this much stack. */
enum { SPAN = 512 };

/* The columns of a row of cells that are inside the image, [*x0, *x1):
 * from the first cell's first pixel to the pixel under the last cell's far
 * edge, which its derivative reads. */
static void cell_columns(const boxes *bx, int P, long w, long *x0, long *x1) {
    const long first = bx->p0[0], last = bx->p0[P - 1] + bx->n[P - 1] + bx->edge[P - 1];
    *x0 = first < 0 ? 0 : first;
    *x1 = last + 1 < w ? last + 1 : w;
}

/* Row y of a plane of width w and height h (NULL outside). */
INLINE const void *row_at(const void *plane, bool u8, long w, long h, long y) {
    return y >= 0 && y < h ? offset(plane, u8, (size_t)y * w) : NULL;
}

/* cs[x - x0] for the columns x in [x0, x1) (inside the image): the
 * column's pixels in cell row i, times the part of each row inside it
 * (wf, 1, ..., 1, wl). */
INLINE void column_sums(const void *plane, bool u8, long w, long h, const boxes *by, int i, long x0,
                        long x1, float *cs) {
    const long p0 = by->p0[i], p1 = p0 + by->n[i], n = x1 - x0;
    const long y0 = p0 + 1 < 0 ? 0 : p0 + 1, y1 = p1 < h ? p1 : h;
    const void *first = row_at(plane, u8, w, h, p0), *last = row_at(plane, u8, w, h, p1);
    const float wf = by->wf[i], wl = by->wl[i];
    for (long x = 0; x < n; x++)
        cs[x] = first ? wf * pixel(first, u8, x0 + x) : 0.0f;
    for (long y = y0; y < y1; y++) {
        const void *row = offset(plane, u8, (size_t)y * w);
        for (long x = 0; x < n; x++)
            cs[x] += pixel(row, u8, x0 + x);
    }
    if (last)
        for (long x = 0; x < n; x++)
            cs[x] += wl * pixel(last, u8, x0 + x);
}

/* Cell j's share of v, whose entries are the columns [x0, x1): those of
 * its columns among them, times the part of each inside it. */
INLINE float cell_part(const boxes *bx, int j, const float *v, long x0, long x1) {
    const long p0 = bx->p0[j], p1 = p0 + bx->n[j];
    const long lo = p0 + 1 > x0 ? p0 + 1 : x0, hi = p1 < x1 ? p1 : x1;
    float mid = 0.0f;
    for (long x = lo; x < hi; x++)
        mid += v[x - x0];
    const float first = p0 >= x0 && p0 < x1 ? bx->wf[j] * v[p0 - x0] : 0.0f;
    const float last = p1 >= x0 && p1 < x1 ? bx->wl[j] * v[p1 - x0] : 0.0f;
    return first + mid + last;
}

/* Row i of a scale's patch (P values into o): each cell's pixels times
 * the area of each inside it, times 1 / c^2 (inv_area).  Summed by
 * columns first, so that a row of pixels is read once for the whole row
 * of cells, in order. */
INLINE void area_row(const void *plane, bool u8, long w, long h, const boxes *bx, const boxes *by,
                     int P, float inv_area, int i, float *o) {
    long X0, X1;
    cell_columns(bx, P, w, &X0, &X1);
    float cs[SPAN];
    for (int j = 0; j < P; j++)
        o[j] = 0.0f;
    for (long x0 = X0; x0 < X1; x0 += SPAN) {
        const long x1 = X1 - x0 < SPAN ? X1 : x0 + SPAN;
        column_sums(plane, u8, w, h, by, i, x0, x1, cs);
        for (int j = 0; j < P; j++)
            o[j] += cell_part(bx, j, cs, x0, x1);
    }
    for (int j = 0; j < P; j++)
        o[j] *= inv_area;
}

/* Where edge or sample j of P sits in a square of side 1 centred on 0:
 * how fast it moves as the side grows, per pixel of side.  The near edge
 * of cell j is at j / P - 1/2, the far one at (j + 1) / P - 1/2, a sample
 * at (j + 1/2) / P - 1/2. */
static inline float edge_rate(int j, int P) {
    return (float)j / (float)P - 0.5f;
}

static inline float sample_rate(int j, int P) {
    return ((float)j + 0.5f) / (float)P - 0.5f;
}

/* The derivatives of row i's sums (before 1 / c^2) with respect to the
 * cells' x and y edges (each cell moves as a whole): what a cell's far edge
 * takes in less what its near edge lets go, the pixels under the edge
 * weighted as in the sum; from the right where an edge is on a pixel edge.
 * Along x, the column sums at the two edge columns; along y, the cell's
 * share of the difference of the two edge rows.
 *
 * With ds (not NULL), from the same column sums and edge pixels, the
 * values' derivative with respect to log s, s the factor of the square's
 * side (span), before 1 / c^2: each edge moves by span times its rate
 * (edge_rate()), so each edge's share counts in proportion, and the area
 * 1 / c^2 shrinks as s^-2, which adds -2 x the sum. */
INLINE void area_row_derivative(const void *plane, bool u8, long w, long h, const boxes *bx,
                                const boxes *by, int P, int i, float *dx, float *dy, double span,
                                float *ds) {
    long X0, X1;
    cell_columns(bx, P, w, &X0, &X1);
    const long near = by->p0[i], far = near + by->n[i] + by->edge[i];
    const void *r0 = row_at(plane, u8, w, h, near), *r1 = row_at(plane, u8, w, h, far);
    const float a_y = edge_rate(i, P), b_y = edge_rate(i + 1, P);
    float cs[SPAN], diff[SPAN], top[SPAN], bottom[SPAN], sums[RAM_MAX_PATCH];
    for (int j = 0; j < P; j++)
        dx[j] = dy[j] = sums[j] = 0.0f;
    if (ds)
        for (int j = 0; j < P; j++)
            ds[j] = 0.0f;
    for (long x0 = X0; x0 < X1; x0 += SPAN) {
        const long x1 = X1 - x0 < SPAN ? X1 : x0 + SPAN;
        column_sums(plane, u8, w, h, by, i, x0, x1, cs);
        for (long x = 0; x < x1 - x0; x++) {
            top[x] = r0 ? pixel(r0, u8, x0 + x) : 0.0f;
            bottom[x] = r1 ? pixel(r1, u8, x0 + x) : 0.0f;
            diff[x] = bottom[x] - top[x];
        }
        for (int j = 0; j < P; j++) {
            const long e0 = bx->p0[j], e1 = e0 + bx->n[j] + bx->edge[j];
            const float far_x = e1 >= x0 && e1 < x1 ? cs[e1 - x0] : 0.0f,
                        near_x = e0 >= x0 && e0 < x1 ? cs[e0 - x0] : 0.0f;
            dx[j] += far_x - near_x;
            dy[j] += cell_part(bx, j, diff, x0, x1);
            if (!ds) continue;
            ds[j] += edge_rate(j + 1, P) * far_x - edge_rate(j, P) * near_x +
                     b_y * cell_part(bx, j, bottom, x0, x1) - a_y * cell_part(bx, j, top, x0, x1);
            sums[j] += cell_part(bx, j, cs, x0, x1);
        }
    }
    if (ds)
        for (int j = 0; j < P; j++)
            ds[j] = (float)span * ds[j] - 2.0f * sums[j];
}

/* ---- the sensor ---- */

/* Scale k's grid of a glimpse at (lx, ly) (the image's frame): rows
 * [p0, p1) of the y axis, every column of the x axis; true for area
 * averages (boxes), false for bilinear samples (points). */
typedef struct grid {
    union {
        struct {
            axis x, y;
        } points;
        struct {
            boxes x, y;
        } boxes;
    } u;
    float inv_area; /* 1 / c^2, for area averages */
} grid;

static bool grid_of(const struct ram_glimpse *g, int k, int h, int w, float lx, float ly, int p0,
                    int p1, grid *gr) {
    const int P = g->patch;
    const double side = g->span[k];
    if (side <= P) {
        axis_of(lx, w, side, P, 0, P, &gr->u.points.x);
        axis_of(ly, h, side, P, p0, p1, &gr->u.points.y);
        return false;
    }
    boxes_of(lx, w, side, P, 0, P, &gr->u.boxes.x);
    boxes_of(ly, h, side, P, p0, p1, &gr->u.boxes.y);
    gr->inv_area = (float)((double)P * P / (side * side));
    return true;
}

INLINE void soft_rows(const struct ram_glimpse *g, const void *img, bool u8, int c, int h, int w,
                      float lx, float ly, float *out, int p0, int p1) {
    const int P = g->patch;
    grid gr;
    for (int k = 0; k < g->depth; k++) {
        const bool area = grid_of(g, k, h, w, lx, ly, p0, p1, &gr);
        for (int ch = 0; ch < c; ch++) {
            const void *plane = offset(img, u8, (size_t)ch * h * w);
            float *o = out + ((size_t)ch * g->depth + k) * P * P;
            if (area) {
                for (int i = p0; i < p1; i++)
                    area_row(plane, u8, w, h, &gr.u.boxes.x, &gr.u.boxes.y, P, gr.inv_area, i,
                             o + i * P);
                continue;
            }
            const axis *ax = &gr.u.points.x, *ay = &gr.u.points.y;
            for (int i = p0; i < p1; i++)
                for (int j = 0; j < P; j++)
                    o[i * P + j] =
                        quad_value(quad_at(plane, u8, w, ax, ay, i, j), ax->f[j], ay->f[i]);
        }
    }
}

/* Bytes in a function of their own; floats inline below, where they were
 * before bytes came in. */
__attribute__((noinline)) static void soft_rows_u8(const struct ram_glimpse *g, const uint8_t *img,
                                                   int c, int h, int w, float lx, float ly,
                                                   float *out, int p0, int p1) {
    soft_rows(g, img, true, c, h, w, lx, ly, out, p0, p1);
}

void ram_glimpse_soft_rows(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                           float lx, float ly, float *out, int p0, int p1) {
    if (img.u8)
        soft_rows_u8(g, img.px, c, h, w, lx, ly, out, p0, p1);
    else
        soft_rows(g, img.px, false, c, h, w, lx, ly, out, p0, p1);
}

/* The derivative of each patch value with respect to the location is the
 * one from the right where a sample is on a pixel centre or a cell's edge
 * on a pixel edge (kinks of the function; either side would do for
 * descent). */
void ram_glimpse_soft_jacobian(const struct ram_glimpse *g, const float *img, int c, int h, int w,
                               float lx, float ly, float *jx, float *jy) {
    const int P = g->patch;
    /* d edge / d l: the grid moves with the centre, (l + 1) * extent / 2. */
    const float sx = 0.5f * (float)w, sy = 0.5f * (float)h;
    grid gr;
    float dx[RAM_MAX_PATCH], dy[RAM_MAX_PATCH];
    for (int k = 0; k < g->depth; k++) {
        const bool area = grid_of(g, k, h, w, lx, ly, 0, P, &gr);
        for (int ch = 0; ch < c; ch++) {
            const float *plane = img + (size_t)ch * h * w;
            const size_t o = ((size_t)ch * g->depth + k) * P * P;
            for (int i = 0; i < P; i++) {
                if (area) {
                    area_row_derivative(plane, false, w, h, &gr.u.boxes.x, &gr.u.boxes.y, P, i, dx,
                                        dy, 0.0, NULL);
                    for (int j = 0; j < P; j++) {
                        jx[o + i * P + j] = sx * (gr.inv_area * dx[j]);
                        jy[o + i * P + j] = sy * (gr.inv_area * dy[j]);
                    }
                    continue;
                }
                const axis *ax = &gr.u.points.x, *ay = &gr.u.points.y;
                for (int j = 0; j < P; j++) {
                    const quad q = quad_at(plane, false, w, ax, ay, i, j);
                    jx[o + i * P + j] = sx * quad_dx(q, ay->f[i]);
                    jy[o + i * P + j] = sy * quad_dy(q, ax->f[j]);
                }
            }
        }
    }
}

void ram_glimpse_soft_jacobian_zoom(const struct ram_glimpse *g, const float *img, int c, int h,
                                    int w, float lx, float ly, float *js) {
    const int P = g->patch;
    grid gr;
    float dx[RAM_MAX_PATCH], dy[RAM_MAX_PATCH], ds[RAM_MAX_PATCH];
    for (int k = 0; k < g->depth; k++) {
        const bool area = grid_of(g, k, h, w, lx, ly, 0, P, &gr);
        const double span = g->span[k];
        for (int ch = 0; ch < c; ch++) {
            const float *plane = img + (size_t)ch * h * w;
            float *o = js + ((size_t)ch * g->depth + k) * P * P;
            for (int i = 0; i < P; i++) {
                if (area) {
                    area_row_derivative(plane, false, w, h, &gr.u.boxes.x, &gr.u.boxes.y, P, i, dx,
                                        dy, span, ds);
                    for (int j = 0; j < P; j++)
                        o[i * P + j] = gr.inv_area * ds[j];
                    continue;
                }
                const axis *ax = &gr.u.points.x, *ay = &gr.u.points.y;
                for (int j = 0; j < P; j++) {
                    const quad q = quad_at(plane, false, w, ax, ay, i, j);
                    o[i * P + j] = (float)span * (sample_rate(j, P) * quad_dx(q, ay->f[i]) +
                                                  sample_rate(i, P) * quad_dy(q, ax->f[j]));
                }
            }
        }
    }
}

/* Whether a row of dout is all zeros (a ReLU's upstream): nothing to add. */
static bool all_zero(const float *d, int n) {
    for (int j = 0; j < n; j++)
        if (d[j] != 0.0f) return false;
    return true;
}

INLINE void soft_backward(const struct ram_glimpse *g, const void *img, bool u8, int c, int h,
                          int w, float lx, float ly, const float *dout, float *dlx, float *dly,
                          float *dls) {
    const int P = g->patch;
    grid gr;
    float dx[RAM_MAX_PATCH], dy[RAM_MAX_PATCH], ds[RAM_MAX_PATCH];
    float sum_x = 0.0f, sum_y = 0.0f, sum_s = 0.0f;
    for (int k = 0; k < g->depth; k++) {
        const bool area = grid_of(g, k, h, w, lx, ly, 0, P, &gr);
        /* An area scale's derivatives share its 1 / c^2: applied once. */
        float area_x = 0.0f, area_y = 0.0f, area_s = 0.0f, point_s = 0.0f;
        for (int ch = 0; ch < c; ch++) {
            const void *plane = offset(img, u8, (size_t)ch * h * w);
            const float *d = dout + ((size_t)ch * g->depth + k) * P * P;
            for (int i = 0; i < P; i++) {
                if (area) {
                    if (all_zero(d + i * P, P)) continue;
                    area_row_derivative(plane, u8, w, h, &gr.u.boxes.x, &gr.u.boxes.y, P, i, dx, dy,
                                        g->span[k], dls ? ds : NULL);
                    for (int j = 0; j < P; j++) {
                        area_x += d[i * P + j] * dx[j];
                        area_y += d[i * P + j] * dy[j];
                        if (dls) area_s += d[i * P + j] * ds[j];
                    }
                    continue;
                }
                const axis *ax = &gr.u.points.x, *ay = &gr.u.points.y;
                for (int j = 0; j < P; j++) {
                    const float dv = d[i * P + j];
                    if (dv == 0.0f) continue; /* a ReLU's zeros upstream: nothing to add */
                    const quad q = quad_at(plane, u8, w, ax, ay, i, j);
                    const float qx = quad_dx(q, ay->f[i]), qy = quad_dy(q, ax->f[j]);
                    sum_x += dv * qx;
                    sum_y += dv * qy;
                    point_s += dv * (sample_rate(j, P) * qx + sample_rate(i, P) * qy);
                }
            }
        }
        if (area) {
            sum_x += gr.inv_area * area_x;
            sum_y += gr.inv_area * area_y;
            sum_s += gr.inv_area * area_s;
        } else {
            sum_s += (float)g->span[k] * point_s;
        }
    }
    *dlx = 0.5f * (float)w * sum_x;
    *dly = 0.5f * (float)h * sum_y;
    if (dls) *dls = sum_s;
}

__attribute__((noinline)) static void soft_backward_u8(const struct ram_glimpse *g,
                                                       const uint8_t *img, int c, int h, int w,
                                                       float lx, float ly, const float *dout,
                                                       float *dlx, float *dly, float *dls) {
    soft_backward(g, img, true, c, h, w, lx, ly, dout, dlx, dly, dls);
}

void ram_glimpse_soft_backward(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                               float lx, float ly, const float *dout, float *dlx, float *dly,
                               float *dls) {
    if (img.u8)
        soft_backward_u8(g, img.px, c, h, w, lx, ly, dout, dlx, dly, dls);
    else
        soft_backward(g, img.px, false, c, h, w, lx, ly, dout, dlx, dly, dls);
}

ram_status ram_glimpse_create_sensor(const ram_glimpse_params *p, ram_sensor sensor,
                                     ram_glimpse **out) {
    if (!out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: out is NULL");
    if (sensor != RAM_SENSOR_HARD && sensor != RAM_SENSOR_SOFT)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse: unknown sensor %d", (int)sensor);
    ram_glimpse *g;
    ram_status s = ram_glimpse_create(p, &g);
    if (s) return s;
    g->sensor = sensor;
    *out = g;
    return RAM_OK;
}

ram_sensor ram_glimpse_sensor(const ram_glimpse *g) {
    return g ? g->sensor : RAM_SENSOR_HARD;
}

ram_status ram_glimpse_backward_location(const ram_glimpse *g, const float *images, int n, int c,
                                         int h, int w, const float *locs, const float *dout,
                                         size_t dout_len, float *dlocs) {
    if (!g || !images || !locs || !dout || !dlocs)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "glimpse_backward_location: NULL argument");
    if (g->sensor != RAM_SENSOR_SOFT)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "glimpse_backward_location: the hard sensor is not differentiable in the "
                        "location (create the sensor with RAM_SENSOR_SOFT)");
    if (n < 1 || c < 1 || h < 1 || w < 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "glimpse_backward_location: shape %d x %d x %d x %d has a dimension < 1", n,
                        c, h, w);
    if ((double)n * c * h * w > (double)(SIZE_MAX / sizeof(float)))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "glimpse_backward_location: %d x %d x %d x %d pixels cannot be in memory",
                        n, c, h, w);
    const size_t per = ram_glimpse_size(g, c);
    if (dout_len / per < (size_t)n)
        return ram_fail(RAM_ERR_BUFFER_TOO_SMALL,
                        "glimpse_backward_location: dout holds %zu floats, %zu x %d needed",
                        dout_len, per, n);
    for (size_t i = 0; i < 2 * (size_t)n; i++)
        if (!isfinite(locs[i]))
            return ram_fail(RAM_ERR_NUMERIC,
                            "glimpse_backward_location: location %zu is not finite", i / 2);
    const size_t img_size = (size_t)c * h * w;
    for (int i = 0; i < n; i++)
        ram_glimpse_soft_backward(g, ram_image_f32(images + i * img_size), c, h, w, locs[2 * i],
                                  locs[2 * i + 1], dout + i * per, &dlocs[2 * i], &dlocs[2 * i + 1],
                                  NULL);
    return RAM_OK;
}
