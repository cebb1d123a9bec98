/* Network layers on whole batches: linear layers through cblas_sgemm (or,
 * for a few rows, the kernels of kernels.c; in training, libram's own
 * products of gemm.c where they run), ReLU, the LSTM cell's pointwise part
 * and softmax.  Rows are batch items. */
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void ram_linear_forward(const float *X, int ldx, int n, int in, const float *W, const float *b,
                        int out, float *Y, int ldy, bool accumulate, ram_gemm *gemm) {
    if (n <= RAM_GEMV_MAX_ROWS) {
        for (int i = 0; i < n; i++)
            ram_dot_rows(W, in, X + (size_t)i * ldx, out, b, Y + (size_t)i * ldy, accumulate);
        return;
    }
    ram_blas_prepare_thread();
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
    if (ram_gemm_forward(gemm, X, ldx, n, in, W, out, Y, ldy, beta != 0.0f)) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, X, ldx, W, in, beta, Y,
                ldy);
}

void ram_linear_backward(const float *dY, int ldy, const float *X, int ldx, int n, int in, int out,
                         const float *W, float *dW, float *db, float *dX, int lddx,
                         bool accumulate_dx, ram_gemm *gemm) {
    ram_blas_prepare_thread();
    /* dW (out x in) += dY^T (out x n) X (n x in) */
    if (!ram_gemm_backward_dw(gemm, dY, ldy, X, ldx, n, in, out, dW))
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dY, ldy, X, ldx,
                    1.0f, dW, in);
    if (db)
        for (int i = 0; i < n; i++) {
            const float *d = dY + (size_t)i * ldy;
            for (int j = 0; j < out; j++)
                db[j] += d[j];
        }
    if (dX && !ram_gemm_backward_dx(gemm, dY, ldy, n, in, out, W, dX, lddx, accumulate_dx))
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

/* One row's cell update, units [0, n) of pointers already offset; separate
 * restrict parameters, because GCC vectorises only when it knows that the
 * four gate blocks (one array) do not overlap. */
static void lstm_row_forward(float *restrict gi, float *restrict gf, float *restrict gg,
                             float *restrict go, const float *restrict cp, float *restrict c,
                             float *restrict h, int n) {
    for (int j = 0; j < n; j++) {
        gi[j] = ram_sigmoid(gi[j]);
        gf[j] = ram_sigmoid(gf[j]);
        gg[j] = ram_tanh(gg[j]);
        go[j] = ram_sigmoid(go[j]);
        c[j] = gf[j] * cp[j] + gi[j] * gg[j];
        h[j] = go[j] * ram_tanh(c[j]);
    }
}

void ram_lstm_forward(float *gates, const float *c_prev, float *c, float *h, int n, int H) {
    ram_lstm_forward_units(gates, c_prev, c, h, n, H, 0, H);
}

void ram_lstm_forward_units(float *gates, const float *c_prev, float *c, float *h, int n, int H,
                            int u0, int u1) {
    for (int r = 0; r < n; r++) {
        float *gi = gates + (size_t)r * 4 * H + u0;
        const size_t o = (size_t)r * H + u0;
        lstm_row_forward(gi, gi + H, gi + 2 * H, gi + 3 * H, c_prev + o, c + o, h + o, u1 - u0);
    }
}

static void lstm_row_backward(const float *restrict gi, const float *restrict gf,
                              const float *restrict gg, const float *restrict go,
                              const float *restrict cp, const float *restrict c,
                              const float *restrict dh, const float *restrict dc,
                              float *restrict di, float *restrict df, float *restrict dg,
                              float *restrict dout, float *restrict dcp, int n) {
    for (int j = 0; j < n; j++) {
        float tc = ram_tanh(c[j]);
        float dct = dc[j] + dh[j] * go[j] * (1.0f - tc * tc);
        dout[j] = dh[j] * tc * go[j] * (1.0f - go[j]);
        di[j] = dct * gg[j] * gi[j] * (1.0f - gi[j]);
        df[j] = dct * cp[j] * gf[j] * (1.0f - gf[j]);
        dg[j] = dct * gi[j] * (1.0f - gg[j] * gg[j]);
        dcp[j] = dct * gf[j];
    }
}

void ram_lstm_backward(const float *gates, const float *c_prev, const float *c, const float *dh,
                       const float *dc, float *dgates, float *dc_prev, int n, int H) {
    for (int r = 0; r < n; r++) {
        const float *gi = gates + (size_t)r * 4 * H;
        float *di = dgates + (size_t)r * 4 * H;
        const size_t o = (size_t)r * H;
        lstm_row_backward(gi, gi + H, gi + 2 * H, gi + 3 * H, c_prev + o, c + o, dh + o, dc + o, di,
                          di + H, di + 2 * H, di + 3 * H, dc_prev + o, H);
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
