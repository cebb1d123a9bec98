/* The soft glimpse sensor (a Spatial Transformer's sampler on a fixed-size
 * grid): each scale's square, the one the hard sensor average-pools, is read
 * by bilinear interpolation at the centres of its patch x patch cells, so
 * that the patch is a continuous, piecewise-bilinear function of the
 * location and its gradient reaches the location network.  Pixels outside
 * the image read as 0, as in the hard sensor.  The cost is 4 reads per
 * patch value, whatever the image's size and the scale's width. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
static void axis_of(float l, int extent, int side, int P, int lo, int hi, axis *a) {
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

/* The grid of scale k of a glimpse at (lx, ly) (the image's frame): rows
 * [p0, p1) of ay, every column of ax. */
static void grid_of(const struct ram_glimpse *g, int k, int h, int w, float lx, float ly, int p0,
                    int p1, axis *ax, axis *ay) {
    axis_of(lx, w, g->side[k], g->patch, 0, g->patch, ax);
    axis_of(ly, h, g->side[k], g->patch, p0, p1, ay);
}

INLINE void soft_rows(const struct ram_glimpse *g, const void *img, bool u8, int c, int h, int w,
                      float lx, float ly, float *out, int p0, int p1) {
    const int P = g->patch;
    axis ax, ay;
    for (int k = 0; k < g->depth; k++) {
        grid_of(g, k, h, w, lx, ly, p0, p1, &ax, &ay);
        for (int ch = 0; ch < c; ch++) {
            const void *plane = offset(img, u8, (size_t)ch * h * w);
            float *o = out + ((size_t)ch * g->depth + k) * P * P;
            for (int i = p0; i < p1; i++) {
                const float fy = ay.f[i];
                for (int j = 0; j < P; j++) {
                    const quad q = quad_at(plane, u8, w, &ax, &ay, i, j);
                    const float fx = ax.f[j];
                    const float top = q.p00 + fx * (q.p01 - q.p00);
                    const float bottom = q.p10 + fx * (q.p11 - q.p10);
                    o[i * P + j] = top + fy * (bottom - top);
                }
            }
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

/* The derivative of each patch value with respect to the location, at a
 * sample exactly on a pixel centre (a fraction of 0), is the one from the
 * right: that of the bilinear piece the sample's pixel pair starts (the
 * function has a kink there; either side would do for descent). */
void ram_glimpse_soft_jacobian(const struct ram_glimpse *g, const float *img, int c, int h, int w,
                               float lx, float ly, float *jx, float *jy) {
    const int P = g->patch;
    /* d sample / d l: the grid moves with the centre, (l + 1) * extent / 2. */
    const float sx = 0.5f * (float)w, sy = 0.5f * (float)h;
    axis ax, ay;
    for (int k = 0; k < g->depth; k++) {
        grid_of(g, k, h, w, lx, ly, 0, P, &ax, &ay);
        for (int ch = 0; ch < c; ch++) {
            const float *plane = img + (size_t)ch * h * w;
            const size_t o = ((size_t)ch * g->depth + k) * P * P;
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++) {
                    const quad q = quad_at(plane, false, w, &ax, &ay, i, j);
                    const float fx = ax.f[j], fy = ay.f[i];
                    const float dx = (1.0f - fy) * (q.p01 - q.p00) + fy * (q.p11 - q.p10);
                    const float dy = (1.0f - fx) * (q.p10 - q.p00) + fx * (q.p11 - q.p01);
                    jx[o + i * P + j] = sx * dx;
                    jy[o + i * P + j] = sy * dy;
                }
        }
    }
}

INLINE void soft_backward(const struct ram_glimpse *g, const void *img, bool u8, int c, int h,
                          int w, float lx, float ly, const float *dout, float *dlx, float *dly) {
    const int P = g->patch;
    axis ax, ay;
    float sum_x = 0.0f, sum_y = 0.0f;
    for (int k = 0; k < g->depth; k++) {
        grid_of(g, k, h, w, lx, ly, 0, P, &ax, &ay);
        for (int ch = 0; ch < c; ch++) {
            const void *plane = offset(img, u8, (size_t)ch * h * w);
            const float *d = dout + ((size_t)ch * g->depth + k) * P * P;
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++) {
                    const float dv = d[i * P + j];
                    if (dv == 0.0f) continue; /* a ReLU's zeros upstream: nothing to add */
                    const quad q = quad_at(plane, u8, w, &ax, &ay, i, j);
                    const float fx = ax.f[j], fy = ay.f[i];
                    sum_x += dv * ((1.0f - fy) * (q.p01 - q.p00) + fy * (q.p11 - q.p10));
                    sum_y += dv * ((1.0f - fx) * (q.p10 - q.p00) + fx * (q.p11 - q.p01));
                }
        }
    }
    *dlx = 0.5f * (float)w * sum_x;
    *dly = 0.5f * (float)h * sum_y;
}

__attribute__((noinline)) static void soft_backward_u8(const struct ram_glimpse *g,
                                                       const uint8_t *img, int c, int h, int w,
                                                       float lx, float ly, const float *dout,
                                                       float *dlx, float *dly) {
    soft_backward(g, img, true, c, h, w, lx, ly, dout, dlx, dly);
}

void ram_glimpse_soft_backward(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                               float lx, float ly, const float *dout, float *dlx, float *dly) {
    if (img.u8)
        soft_backward_u8(g, img.px, c, h, w, lx, ly, dout, dlx, dly);
    else
        soft_backward(g, img.px, false, c, h, w, lx, ly, dout, dlx, dly);
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
                                  locs[2 * i + 1], dout + i * per, &dlocs[2 * i],
                                  &dlocs[2 * i + 1]);
    return RAM_OK;
}
