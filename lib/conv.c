/* The glimpse's convolutional layer (ram_model_params.conv_channels): the
 * glimpse's planes (every scale of every channel, all centred on one
 * location) filtered at every position of the patch, as one matrix
 * product.  Each glimpse is unrolled so that a row holds what one position's
 * filters read (planes x k x k values, "im2col"); the product of those
 * rows with the filters is then a linear layer of Q^2 rows an image, and
 * goes through the same sgemm as every other layer.  The unrolled rows are
 * not kept between the passes: the backward pass unrolls the glimpses
 * again, which costs a copy of at most k^2 times the glimpse, little
 * beside the product, where keeping them would cost T times that memory. */
#include "internal.h"

#include <string.h>

/* Glimpse `rho` (planes x P x P) into its Q^2 rows of conv_in values: row
 * (y, x), value (plane, a, b) is rho's plane at (y s + a, x s + b). */
static void unroll(const struct ram_model *m, const float *rho, float *col) {
    const int P = m->sensor.patch, Q = m->conv_q, k = m->p.conv_kernel, s = m->p.conv_stride;
    const int planes = m->conv_in / (k * k);
    for (int y = 0; y < Q; y++)
        for (int x = 0; x < Q; x++) {
            float *row = col + ((size_t)y * Q + x) * m->conv_in;
            for (int c = 0; c < planes; c++)
                for (int a = 0; a < k; a++) {
                    const float *src = rho + ((size_t)c * P + (size_t)(y * s + a)) * P + x * s;
                    memcpy(row + ((size_t)c * k + a) * k, src, sizeof(float) * k);
                }
        }
}

/* The transpose of unroll(): each row's values added back to where they
 * were read from, into drho (zeroed first). */
static void roll(const struct ram_model *m, const float *col, float *drho) {
    const int P = m->sensor.patch, Q = m->conv_q, k = m->p.conv_kernel, s = m->p.conv_stride;
    const int planes = m->conv_in / (k * k);
    memset(drho, 0, sizeof(float) * m->rho_size);
    for (int y = 0; y < Q; y++)
        for (int x = 0; x < Q; x++) {
            const float *row = col + ((size_t)y * Q + x) * m->conv_in;
            for (int c = 0; c < planes; c++)
                for (int a = 0; a < k; a++) {
                    float *dst = drho + ((size_t)c * P + (size_t)(y * s + a)) * P + x * s;
                    const float *v = row + ((size_t)c * k + a) * k;
                    for (int b = 0; b < k; b++)
                        dst[b] += v[b];
                }
        }
}

void ram_conv_forward(const struct ram_model *m, const float *w, const float *rho, int i0, int i1,
                      float *col, float *out) {
    if (i1 <= i0) return;
    const size_t D = (size_t)m->rho_size, QQ = (size_t)m->conv_q * m->conv_q, K = m->conv_in;
    const int C = m->p.conv_channels, rows = (int)((size_t)(i1 - i0) * QQ);
    for (int i = i0; i < i1; i++)
        unroll(m, rho + i * D, col + i * QQ * K);
    /* Q^2 rows an image, C outputs a row: out's n x (Q^2 x C) is the
     * product's (n Q^2) x C.  Float products (no bfloat16: the trainer's
     * packings are sized for its batch, not for Q^2 rows an image). */
    float *y = out + (size_t)i0 * QQ * C;
    ram_linear_forward(col + (size_t)i0 * QQ * K, (int)K, rows, (int)K, w + m->t[RAM_T_CONV_W].off,
                       w + m->t[RAM_T_CONV_B].off, C, y, C, false, NULL);
    ram_relu_forward(y, rows, C, C);
}

void ram_conv_backward(const struct ram_model *m, const float *rho, int n, const float *out,
                       float *dout, float *col, float *grad, float *dcol, float *drho) {
    const size_t D = (size_t)m->rho_size, QQ = (size_t)m->conv_q * m->conv_q, K = m->conv_in;
    const int C = m->p.conv_channels, rows = (int)((size_t)n * QQ);
    ram_relu_backward(out, dout, rows, C, C);
    for (int i = 0; i < n; i++)
        unroll(m, rho + i * D, col + i * QQ * K);
    const bool into = dcol && drho;
    ram_linear_backward(dout, C, col, (int)K, rows, (int)K, C, m->w + m->t[RAM_T_CONV_W].off,
                        grad + m->t[RAM_T_CONV_W].off, grad + m->t[RAM_T_CONV_B].off,
                        into ? dcol : NULL, (int)K, false, NULL);
    if (!into) return;
    for (int i = 0; i < n; i++)
        roll(m, dcol + i * QQ * K, drho + i * D);
}
