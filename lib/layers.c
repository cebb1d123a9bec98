/* Network layers on whole batches: linear layers through cblas_sgemm, ReLU,
 * the LSTM cell's pointwise part and softmax.  Rows are batch items. */
#include "internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* Up to this many rows, a linear layer runs as row-by-row sgemv (see below). */
#ifndef RAM_GEMV_MAX_ROWS
#define RAM_GEMV_MAX_ROWS 8
#endif

void ram_linear_forward(const float *X, int ldx, int n, int in, const float *W, const float *b,
                        int out, float *Y, int ldy, bool accumulate) {
    float beta = 0.0f;
    if (b) {
        for (int i = 0; i < n; i++) {
            float *y = Y + (size_t)i * ldy;
            if (accumulate)
                for (int j = 0; j < out; j++)
                    y[j] += b[j];
            else
                memcpy(y, b, sizeof(float) * out);
        }
        beta = 1.0f;
    } else if (accumulate) {
        beta = 1.0f;
    }
    /* A handful of rows (batch-1 inference): sgemm repacks all of W into its
     * panel layout on every call, 62% of a batch-1 classify (callgrind);
     * sgemv streams W once per row without packing.  Instructions per
     * classify, sgemm vs sgemv: 5.4x fewer at 1 row, 1.3x fewer at 8, equal
     * at 16 (docs/performance.md). */
    if (n <= RAM_GEMV_MAX_ROWS) {
        for (int i = 0; i < n; i++)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, W, in, X + (size_t)i * ldx, 1,
                        beta, Y + (size_t)i * ldy, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, X, ldx, W, in, beta, Y,
                ldy);
}

void ram_linear_backward(const float *dY, int ldy, const float *X, int ldx, int n, int in, int out,
                         const float *W, float *dW, float *db, float *dX, int lddx,
                         bool accumulate_dx) {
    /* dW (out x in) += dY^T (out x n) X (n x in) */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dY, ldy, X, ldx, 1.0f,
                dW, in);
    if (db)
        for (int i = 0; i < n; i++) {
            const float *d = dY + (size_t)i * ldy;
            for (int j = 0; j < out; j++)
                db[j] += d[j];
        }
    if (dX)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dY, ldy, W, in,
                    accumulate_dx ? 1.0f : 0.0f, dX, lddx);
}

/* Both ReLU loops are written as branch-free selects so that they vectorise:
 * with a conditional store they took a fifth of the training time. */
void ram_relu_forward(float *Y, int n, int cols, int ld) {
    for (int i = 0; i < n; i++) {
        float *restrict y = Y + (size_t)i * ld;
        for (int j = 0; j < cols; j++)
            y[j] = y[j] > 0.0f ? y[j] : 0.0f;
    }
}

void ram_relu_backward(const float *Y, float *dY, int n, int cols, int ld) {
    for (int i = 0; i < n; i++) {
        const float *restrict y = Y + (size_t)i * ld;
        float *restrict d = dY + (size_t)i * ld;
        for (int j = 0; j < cols; j++)
            d[j] = y[j] > 0.0f ? d[j] : 0.0f;
    }
}

static inline float sigmoid(float x) {
    return 1.0f / (1.0f + expf(-x));
}

void ram_lstm_forward(float *gates, const float *c_prev, float *c, float *h, int n, int H) {
    for (int r = 0; r < n; r++) {
        float *gi = gates + (size_t)r * 4 * H, *gf = gi + H, *gg = gf + H, *go = gg + H;
        const float *cp = c_prev + (size_t)r * H;
        float *cr = c + (size_t)r * H, *hr = h + (size_t)r * H;
        for (int j = 0; j < H; j++) {
            gi[j] = sigmoid(gi[j]);
            gf[j] = sigmoid(gf[j]);
            gg[j] = tanhf(gg[j]);
            go[j] = sigmoid(go[j]);
            cr[j] = gf[j] * cp[j] + gi[j] * gg[j];
            hr[j] = go[j] * tanhf(cr[j]);
        }
    }
}

void ram_lstm_backward(const float *gates, const float *c_prev, const float *c, const float *dh,
                       const float *dc, float *dgates, float *dc_prev, int n, int H) {
    for (int r = 0; r < n; r++) {
        const float *gi = gates + (size_t)r * 4 * H, *gf = gi + H, *gg = gf + H, *go = gg + H;
        float *di = dgates + (size_t)r * 4 * H, *df = di + H, *dg = df + H, *dout = dg + H;
        const float *cp = c_prev + (size_t)r * H, *cr = c + (size_t)r * H;
        const float *dhr = dh + (size_t)r * H, *dcr = dc + (size_t)r * H;
        float *dcp = dc_prev + (size_t)r * H;
        for (int j = 0; j < H; j++) {
            float tc = tanhf(cr[j]);
            float dct = dcr[j] + dhr[j] * go[j] * (1.0f - tc * tc);
            dout[j] = dhr[j] * tc * go[j] * (1.0f - go[j]);
            di[j] = dct * gg[j] * gi[j] * (1.0f - gi[j]);
            df[j] = dct * cp[j] * gf[j] * (1.0f - gf[j]);
            dg[j] = dct * gi[j] * (1.0f - gg[j] * gg[j]);
            dcp[j] = dct * gf[j];
        }
    }
}

void ram_softmax(const float *logits, float *probs, int n, int k) {
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        float *p = probs + (size_t)i * k, mx = z[0], sum = 0.0f;
        for (int j = 1; j < k; j++)
            mx = z[j] > mx ? z[j] : mx;
        for (int j = 0; j < k; j++)
            sum += (p[j] = expf(z[j] - mx));
        for (int j = 0; j < k; j++)
            p[j] /= sum;
    }
}
