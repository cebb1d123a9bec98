/* Network layers: direct references for the forward passes and central
 * finite differences for every backward pass.  The losses are summed in
 * double from the float forward outputs; sizes are small and inputs O(1) so
 * a step of 1e-3 keeps float rounding well under the tolerance. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-3f
#define FD_REL  1e-2
#define FD_ABS  1e-3

static uint32_t lcg_state;
static float lcg_uniform(void) { /* [-1, 1) */
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static float *rnd(size_t n) {
    float *a = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < n; i++)
        a[i] = lcg_uniform();
    return a;
}

static void check_grad(double analytic, double numeric, const char *what, size_t i) {
    double tol = FD_ABS + FD_REL * fmax(fabs(analytic), fabs(numeric));
    ck_assert_msg(fabs(analytic - numeric) <= tol, "%s[%zu]: analytic %.6g, finite difference %.6g",
                  what, i, analytic, numeric);
}

/* ---- linear ---- */

/* The layer under test: Y (n x out, ld ldy) = X W^T + b; loss = sum A .* Y. */
typedef struct lin_case {
    int n, in, out, ldx, ldy;
    float *X, *W, *b, *A, *Y;
} lin_case;

static double lin_loss(lin_case *c) {
    ram_linear_forward(c->X, c->ldx, c->n, c->in, c->W, c->b, c->out, c->Y, c->ldy, false, NULL);
    double L = 0;
    for (int i = 0; i < c->n; i++)
        for (int j = 0; j < c->out; j++)
            L += (double)c->A[(size_t)i * c->ldy + j] * c->Y[(size_t)i * c->ldy + j];
    return L;
}

static void fd_check(float *param, size_t count, const float *grad, lin_case *c, const char *what) {
    for (size_t i = 0; i < count; i++) {
        float keep = param[i];
        param[i] = keep + FD_STEP;
        double lp = lin_loss(c);
        param[i] = keep - FD_STEP;
        double lm = lin_loss(c);
        param[i] = keep;
        check_grad(grad[i], (lp - lm) / (2.0 * FD_STEP), what, i);
    }
}

static void linear_gradcheck(int n, int in, int out, int ldx, int ldy, bool with_bias) {
    lin_case c = {n, in, out, ldx, ldy, NULL, NULL, NULL, NULL, NULL};
    c.X = rnd((size_t)n * ldx);
    c.W = rnd((size_t)out * in);
    c.b = with_bias ? rnd(out) : NULL;
    c.A = rnd((size_t)n * ldy);
    c.Y = rnd((size_t)n * ldy);
    /* Prefilled gradients: backward accumulates into dW and db (and dX when
     * asked), so the result minus the prefill must be the gradient. */
    float *dW0 = rnd((size_t)out * in), *db0 = rnd(out), *dX0 = rnd((size_t)n * ldx);
    float *dW = malloc(sizeof(float) * out * in), *db = malloc(sizeof(float) * out);
    float *dX = malloc(sizeof(float) * n * ldx), *dXacc = malloc(sizeof(float) * n * ldx);
    memcpy(dW, dW0, sizeof(float) * out * in);
    memcpy(db, db0, sizeof(float) * out);
    memcpy(dX, dX0, sizeof(float) * n * ldx);
    memcpy(dXacc, dX0, sizeof(float) * n * ldx);

    lin_loss(&c);
    /* dY = A, which has stride ldy like Y. */
    ram_linear_backward(c.A, ldy, c.X, ldx, n, in, out, c.W, dW, with_bias ? db : NULL, dX, ldx,
                        false, NULL);
    float *dWacc = malloc(sizeof(float) * out * in);
    memcpy(dWacc, dW, sizeof(float) * out * in);
    ram_linear_backward(c.A, ldy, c.X, ldx, n, in, out, c.W, dWacc, NULL, dXacc, ldx, true, NULL);

    float *gW = malloc(sizeof(float) * out * in), *gb = malloc(sizeof(float) * out),
          *gX = malloc(sizeof(float) * n * ldx);
    for (int i = 0; i < out * in; i++)
        gW[i] = dW[i] - dW0[i];
    for (int j = 0; j < out; j++)
        gb[j] = db[j] - db0[j];
    fd_check(c.W, (size_t)out * in, gW, &c, "dW");
    if (with_bias) fd_check(c.b, out, gb, &c, "db");
    /* dX rows are strided; the padding columns must be left alone. */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ldx; k++) {
            size_t at = (size_t)i * ldx + k;
            if (k >= in) {
                ck_assert_float_eq(dX[at], dX0[at]);
                ck_assert_float_eq(dXacc[at], dX0[at]);
                continue;
            }
            gX[at] = dX[at];
            float keep = c.X[at];
            c.X[at] = keep + FD_STEP;
            double lp = lin_loss(&c);
            c.X[at] = keep - FD_STEP;
            double lm = lin_loss(&c);
            c.X[at] = keep;
            check_grad(dX[at], (lp - lm) / (2.0 * FD_STEP), "dX", at);
            /* accumulate_dx adds the same gradient to the prefill. */
            ck_assert_msg(fabsf(dXacc[at] - (dX0[at] + dX[at])) <= 1e-5f,
                          "accumulated dX[%zu] %g != %g + %g", at, (double)dXacc[at],
                          (double)dX0[at], (double)dX[at]);
        }
    /* A second backward accumulates a second copy of dW. */
    for (int i = 0; i < out * in; i++)
        ck_assert_msg(fabsf(dWacc[i] - (dW0[i] + 2 * gW[i])) <= 1e-5f * (1 + fabsf(dWacc[i])),
                      "dW does not accumulate at %d", i);

    free(c.X), free(c.W), free(c.b), free(c.A), free(c.Y);
    free(dW0), free(db0), free(dX0), free(dW), free(db), free(dX), free(dXacc), free(dWacc);
    free(gW), free(gb), free(gX);
}

START_TEST(test_linear_gradients) {
    lcg_state = 11;
    linear_gradcheck(3, 4, 5, 4, 5, true);  /* dense */
    linear_gradcheck(4, 3, 2, 7, 6, true);  /* strided X and Y */
    linear_gradcheck(1, 6, 3, 9, 3, false); /* no bias, single row */
    linear_gradcheck(5, 1, 1, 2, 4, true);  /* 1-wide */
}
END_TEST

/* A threaded state gives each thread a block of a layer's rows and promises
 * the same bits for any thread count: so the batch-1 kernels must give a row
 * the same value whatever rows it is computed with (whole, alone, in blocks
 * of 5 or 13: the 8-row and 4-row passes and their tails), for input widths
 * below, at and above the vector width and the location layer's 2. */
START_TEST(test_linear_rows_independent) {
    lcg_state = 13;
    const int ins[] = {2, 7, 8, 13, 64, 130}, outs[] = {1, 4, 8, 12, 33, 64};
    for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
        for (size_t o = 0; o < sizeof outs / sizeof *outs; o++) {
            const int in = ins[a], out = outs[o];
            float *x = rnd(in), *W = rnd((size_t)out * in), *b = rnd(out), *whole = rnd(out),
                  *part = malloc(sizeof(float) * out);
            ram_linear_forward(x, in, 1, in, W, b, out, whole, out, false, NULL);
            const int blocks[] = {1, 5, 13};
            for (int k = 0; k < 3; k++) {
                for (int r = 0; r < out; r += blocks[k]) {
                    const int rows = r + blocks[k] <= out ? blocks[k] : out - r;
                    ram_linear_forward(x, in, 1, in, W + (size_t)r * in, b + r, rows, part + r, out,
                                       false, NULL);
                }
                ck_assert_msg(!memcmp(whole, part, sizeof(float) * out),
                              "in %d out %d: rows in blocks of %d differ from the whole layer", in,
                              out, blocks[k]);
            }
            free(x), free(W), free(b), free(whole), free(part);
        }
}
END_TEST

/* The sparse-input kernel (batch 1 of a ReLU-fed layer, from the weights'
 * column-major copy): for each row, one FMA chain over the nonzero inputs in
 * increasing order, bit for bit; the same bits whatever rows it is computed
 * with; the half copy gives the float kernel's bits on the rounded weights;
 * and an input with too few zeros is left to the row kernels (false, y
 * untouched). */
START_TEST(test_linear_sparse) {
    if (!ram_sparse_kernels()) return; /* nothing to test without AVX2/FMA */
    lcg_state = 14;
    const int ins[] = {8, 13, 64, 130}, outs[] = {1, 7, 8, 24, 64, 72, 130};
    for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
        for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
            for (int acc = 0; acc < 2; acc++) {
                const int in = ins[a], out = outs[o];
                float *x = rnd(in), *W = rnd((size_t)out * in), *b = rnd(out), *y0 = rnd(out),
                      *Wt = malloc(sizeof(float) * out * in), *y = malloc(sizeof(float) * out),
                      *part = malloc(sizeof(float) * out), *yh = malloc(sizeof(float) * out);
                uint16_t *Wt16 = malloc(sizeof(uint16_t) * out * in);
                for (int c = 0; c < in; c++)
                    if (c % 3 != 1) /* two in three zero, as after a ReLU; some of them -0 */
                        x[c] = c % 4 ? 0.0f : -0.0f;
                for (int r = 0; r < out; r++)
                    for (int c = 0; c < in; c++)
                        Wt[(size_t)c * out + r] = W[(size_t)r * in + c];
                memcpy(y, y0, sizeof(float) * out);
                ck_assert(
                    ram_linear_forward_sparse(x, in, in / 4, Wt, false, out, 0, out, b, y, acc));
                for (int r = 0; r < out; r++) {
                    float s = 0.0f;
                    for (int c = 0; c < in; c++)
                        if (x[c] != 0.0f) s = fmaf(W[(size_t)r * in + c], x[c], s);
                    const float want = ((acc ? y0[r] : 0.0f) + b[r]) + s;
                    ck_assert_msg(!memcmp(&want, &y[r], sizeof want),
                                  "in %d out %d acc %d row %d: %a, want %a", in, out, acc, r,
                                  (double)y[r], (double)want);
                }
                memcpy(part, y0, sizeof(float) * out);
                for (int r = 0; r < out; r += 5)
                    ram_linear_forward_sparse(x, in, in / 4, Wt, false, out, r,
                                              r + 5 < out ? r + 5 : out, b, part, acc);
                ck_assert_msg(!memcmp(y, part, sizeof(float) * out),
                              "in %d out %d: rows in blocks of 5 differ", in, out);
                for (size_t i = 0; i < (size_t)out * in; i++) {
                    Wt16[i] = ram_float_to_half(Wt[i]);
                    Wt[i] = ram_half_to_float(Wt16[i]);
                }
                memcpy(y, y0, sizeof(float) * out);
                memcpy(yh, y0, sizeof(float) * out);
                ck_assert(
                    ram_linear_forward_sparse(x, in, in / 4, Wt, false, out, 0, out, b, y, acc));
                ck_assert(
                    ram_linear_forward_sparse(x, in, in / 4, Wt16, true, out, 0, out, b, yh, acc));
                ck_assert_msg(!memcmp(y, yh, sizeof(float) * out),
                              "in %d out %d: half and float differ", in, out);
                for (int c = 0; c < in; c++) /* dense: the row kernels' job */
                    x[c] = 1.0f + (float)c;
                memcpy(y, y0, sizeof(float) * out);
                ck_assert(
                    !ram_linear_forward_sparse(x, in, in / 4, Wt, false, out, 0, out, b, y, acc));
                ck_assert(!memcmp(y, y0, sizeof(float) * out));
                /* exactly min_zeros zeros (scattered: the nonzero finder works
                 * eight at a time) is sparse enough; one fewer is not */
                const int min_zeros = in * 5 / 8;
                for (int z = 0; z < min_zeros; z++)
                    x[(size_t)z * 7 % in] = 0.0f; /* 7 is prime to every in above */
                ck_assert(
                    ram_linear_forward_sparse(x, in, min_zeros, Wt, false, out, 0, out, b, y, acc));
                ck_assert(!ram_linear_forward_sparse(x, in, min_zeros + 1, Wt, false, out, 0, out,
                                                     b, y, acc));
                free(x), free(W), free(b), free(y0), free(Wt), free(y), free(part), free(yh);
                free(Wt16);
            }
}
END_TEST

/* The column copies' helpers: ram_transpose() (8 x 8 vector tiles and the
 * edges around them) against the definition, and ram_count_nonzeros()
 * (eight at a time) with -0 counted as zero and NaN as nonzero. */
START_TEST(test_transpose_and_count) {
    lcg_state = 15;
    const int sizes[] = {1, 3, 8, 13, 16, 24, 130, 256};
    const int ns = sizeof sizes / sizeof *sizes;
    for (int a = 0; a < ns; a++)
        for (int c = 0; c < ns; c++) {
            const int rows = sizes[a], cols = sizes[c];
            float *src = rnd((size_t)rows * cols), *dst = malloc(sizeof(float) * rows * cols);
            ram_transpose(dst, src, rows, cols);
            for (int r = 0; r < rows; r++)
                for (int k = 0; k < cols; k++)
                    ck_assert_msg(!memcmp(&dst[(size_t)k * rows + r], &src[(size_t)r * cols + k],
                                          sizeof(float)),
                                  "%d x %d: element (%d, %d) misplaced", rows, cols, r, k);
            free(src), free(dst);
        }
    for (int in = 0; in <= 40; in++) {
        float x[40];
        int want = 0;
        for (int k = 0; k < in; k++) {
            const int kind = (int)((lcg_uniform() + 1.0f) * 2.0f); /* 0..3 */
            x[k] = kind == 0 ? 0.0f : kind == 1 ? -0.0f : kind == 2 ? NAN : 1.0f + (float)k;
            want += kind >= 2;
        }
        ck_assert_int_eq(ram_count_nonzeros(x, in), want);
    }
}
END_TEST

START_TEST(test_linear_forward_reference) {
    lcg_state = 12;
    enum { N = 4, IN = 5, OUT = 3, LDX = 8, LDY = 6 };
    float *X = rnd(N * LDX), *W = rnd(OUT * IN), *b = rnd(OUT), *Y0 = rnd(N * LDY);
    float Y[N * LDY], Yacc[N * LDY], Ynob[N * LDY], Yaccnob[N * LDY];
    memcpy(Y, Y0, sizeof Y);
    memcpy(Yacc, Y0, sizeof Y);
    memcpy(Ynob, Y0, sizeof Y);
    memcpy(Yaccnob, Y0, sizeof Y);
    ram_linear_forward(X, LDX, N, IN, W, b, OUT, Y, LDY, false, NULL);
    ram_linear_forward(X, LDX, N, IN, W, b, OUT, Yacc, LDY, true, NULL);
    ram_linear_forward(X, LDX, N, IN, W, NULL, OUT, Ynob, LDY, false, NULL);
    ram_linear_forward(X, LDX, N, IN, W, NULL, OUT, Yaccnob, LDY, true, NULL);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LDY; j++) {
            size_t at = (size_t)i * LDY + j;
            if (j >= OUT) { /* padding between rows: untouched */
                ck_assert_float_eq(Y[at], Y0[at]);
                ck_assert_float_eq(Yacc[at], Y0[at]);
                ck_assert_float_eq(Ynob[at], Y0[at]);
                ck_assert_float_eq(Yaccnob[at], Y0[at]);
                continue;
            }
            double xw = 0;
            for (int k = 0; k < IN; k++)
                xw += (double)X[i * LDX + k] * W[j * IN + k];
            ck_assert_double_eq_tol(Y[at], xw + b[j], 1e-5);
            ck_assert_double_eq_tol(Yacc[at], Y0[at] + xw + b[j], 1e-5);
            ck_assert_double_eq_tol(Ynob[at], xw, 1e-5);
            ck_assert_double_eq_tol(Yaccnob[at], Y0[at] + xw, 1e-5);
        }
    free(X), free(W), free(b), free(Y0);
}
END_TEST

/* ---- libram's own training products (gemm.c) ---- */

static bool rounding; /* the format under test rounds its operands to bfloat16 */

static double bf(float x) {
    return rounding ? ram_bf16_to_float(ram_float_to_bf16(x)) : x;
}

/* |got - want| within float summation's error of the (bf16-rounded)
 * operands' exact product (sum of |a| |b| over the k terms). */
static void check_bf16(float got, double want, double mag, const char *what, int i, int j) {
    ck_assert_msg(fabs(got - want) <= 1e-5 * (mag + 1), "%s[%d][%d]: %.7g, want %.7g", what, i, j,
                  got, want);
}

/* The three products of a linear layer through ram_gemm_*, on shapes with
 * every edge (rows not a multiple of 8, columns not of 16 or 32, an odd
 * summed dimension, strides wider than the rows), against a double
 * product of the operands, for bfloat16 rounded: its kernels must round
 * each operand once, to nearest even, and sum in float.  The packings of
 * W are kept between calls (ram_gemm_begin() forgets them); a second
 * weight of the same shape must not be served the first one's.  Each
 * format runs where the CPU and kernel set do. */
static void own_products(bool bf16) {
    rounding = bf16;
    static const int shapes[][3] = {{37, 45, 50}, {64, 256, 256}, {16, 16, 16}, {19, 33, 17}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        const int n = shapes[sh][0], in = shapes[sh][1], out = shapes[sh][2];
        const int ldx = in + 3, ldy = out + 5;
        lcg_state = 40 + (uint32_t)sh;
        float *X = rnd((size_t)n * ldx), *W = rnd((size_t)out * in), *W2 = rnd((size_t)out * in);
        float *dY = rnd((size_t)n * ldy), *Y = rnd((size_t)n * ldy),
              *Y0 = malloc(sizeof(float) * n * ldy);
        float *dX = rnd((size_t)n * ldx), *dX0 = malloc(sizeof(float) * n * ldx);
        float *dW = rnd((size_t)out * in), *dW0 = malloc(sizeof(float) * out * in);
        ck_assert_ptr_nonnull(Y0);
        ck_assert_ptr_nonnull(dX0);
        ck_assert_ptr_nonnull(dW0);
        memcpy(Y0, Y, sizeof(float) * n * ldy);
        memcpy(dX0, dX, sizeof(float) * n * ldx);
        memcpy(dW0, dW, sizeof(float) * out * in);
        const ram_tensor_info t = {0, out, in};
        ram_gemm *s = NULL;
        ck_assert_int_eq(ram_gemm_create(&t, 1, n, bf16, &s), RAM_OK);
        ck_assert(!ram_gemm_forward(s, X, ldx, n, in, W, out, Y, ldy, false)); /* off */
        ram_gemm_begin(s, true);
        for (int pass = 0; pass < 2; pass++) { /* the second from the kept packings */
            const bool acc = pass == 1;
            const float *w = W;
            ck_assert(ram_gemm_forward(s, X, ldx, n, in, w, out, Y, ldy, acc));
            ck_assert(ram_gemm_backward_dx(s, dY, ldy, n, in, out, w, dX, ldx, acc));
            for (int i = 0; i < n; i++)
                for (int o = 0; o < ldy; o++) {
                    const size_t at = (size_t)i * ldy + o;
                    if (o >= out) { /* between rows: untouched */
                        ck_assert_float_eq(Y[at], Y0[at]);
                        continue;
                    }
                    double want = acc ? Y0[at] : 0, mag = acc ? fabs(Y0[at]) : 0;
                    for (int k = 0; k < in; k++) {
                        want += bf(X[(size_t)i * ldx + k]) * bf(w[(size_t)o * in + k]);
                        mag += fabs(X[(size_t)i * ldx + k] * w[(size_t)o * in + k]);
                    }
                    check_bf16(Y[at], want, mag, "Y", i, o);
                }
            for (int i = 0; i < n; i++)
                for (int k = 0; k < ldx; k++) {
                    const size_t at = (size_t)i * ldx + k;
                    if (k >= in) {
                        ck_assert_float_eq(dX[at], dX0[at]);
                        continue;
                    }
                    double want = acc ? dX0[at] : 0, mag = acc ? fabs(dX0[at]) : 0;
                    for (int o = 0; o < out; o++) {
                        want += bf(dY[(size_t)i * ldy + o]) * bf(w[(size_t)o * in + k]);
                        mag += fabs(dY[(size_t)i * ldy + o] * w[(size_t)o * in + k]);
                    }
                    check_bf16(dX[at], want, mag, "dX", i, k);
                }
            /* the results of this pass are the next one's starting values */
            memcpy(Y0, Y, sizeof(float) * n * ldy);
            memcpy(dX0, dX, sizeof(float) * n * ldx);
        }
        /* another weight of the same shape: its own packing */
        ck_assert(ram_gemm_forward(s, X, ldx, n, in, W2, out, Y, ldy, false));
        for (int o = 0; o < out; o++) {
            double want = 0, mag = 0;
            for (int k = 0; k < in; k++) {
                want += bf(X[k]) * bf(W2[(size_t)o * in + k]);
                mag += fabs(X[k] * W2[(size_t)o * in + k]);
            }
            check_bf16(Y[o], want, mag, "Y (W2)", 0, o);
        }
        ck_assert(ram_gemm_backward_dw(s, dY, ldy, X, ldx, n, in, out, dW));
        for (int o = 0; o < out; o++)
            for (int k = 0; k < in; k++) {
                double want = dW0[(size_t)o * in + k], mag = fabs(want);
                for (int i = 0; i < n; i++) {
                    want += bf(dY[(size_t)i * ldy + o]) * bf(X[(size_t)i * ldx + k]);
                    mag += fabs(dY[(size_t)i * ldy + o] * X[(size_t)i * ldx + k]);
                }
                check_bf16(dW[(size_t)o * in + k], want, mag, "dW", o, k);
            }
        /* too thin for the kernel: left to sgemm */
        ck_assert(!ram_gemm_forward(s, X, ldx, n, in, W, 10, Y, ldy, false));
        ck_assert(!ram_gemm_forward(s, X, ldx, 8, in, W, out, Y, ldy, false));
        ram_gemm_free(s);
        free(X), free(W), free(W2), free(dY), free(Y), free(Y0), free(dX), free(dX0), free(dW),
            free(dW0);
    }
}

START_TEST(test_own_products) {
    if (ram_gemm_float_supported())
        own_products(false);
    else
        printf("check_layers: float products: the kernel set is %s, not avx512, skipped\n",
               ram_kernels_name());
    if (ram_bf16_supported())
        own_products(true);
    else
        printf("check_layers: bf16 products: need AVX512_BF16 and the avx512 kernel set (here %s), "
               "skipped\n",
               ram_kernels_name());
}
END_TEST

/* ---- ReLU ---- */

START_TEST(test_relu) {
    lcg_state = 13;
    enum { N = 3, C = 5, LD = 7 };
    float *X = rnd(N * LD), *A = rnd(N * LD);
    /* Keep inputs away from the kink so finite differences are valid. */
    for (int i = 0; i < N * LD; i++)
        if (fabsf(X[i]) < 0.05f) X[i] = X[i] < 0 ? -0.3f : 0.3f;
    float Y[N * LD], dY[N * LD];
    memcpy(Y, X, sizeof Y);
    ram_relu_forward(Y, N, C, LD);
    memcpy(dY, A, sizeof dY);
    ram_relu_backward(Y, dY, N, C, LD);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LD; j++) {
            size_t at = (size_t)i * LD + j;
            if (j >= C) {
                ck_assert_float_eq(Y[at], X[at]);
                ck_assert_float_eq(dY[at], A[at]);
                continue;
            }
            ck_assert_float_eq(Y[at], X[at] > 0 ? X[at] : 0.0f);
            /* loss = sum A .* relu(X) */
            float y1 = X[at] + FD_STEP, y0 = X[at] - FD_STEP;
            double num = A[at] * ((y1 > 0 ? y1 : 0) - (y0 > 0 ? y0 : 0)) / (2.0 * FD_STEP);
            check_grad(dY[at], num, "relu", at);
        }
    /* Exactly zero counts as inactive. */
    float z = 0.0f, dz = 1.0f;
    ram_relu_backward(&z, &dz, 1, 1, 1);
    ck_assert_float_eq(dz, 0.0f);
    free(X), free(A);
}
END_TEST

/* ---- LSTM cell ---- */

typedef struct lstm_case {
    int n, H;
    float *pre, *cp, *a, *bc; /* pre-activations, c_prev, loss weights on h and c */
    float *gates, *c, *h;     /* scratch */
} lstm_case;

static double lstm_loss(lstm_case *k) {
    const size_t nh = (size_t)k->n * k->H;
    memcpy(k->gates, k->pre, sizeof(float) * 4 * nh);
    ram_lstm_forward(k->gates, k->cp, k->c, k->h, k->n, k->H);
    double L = 0;
    for (size_t i = 0; i < nh; i++)
        L += (double)k->a[i] * k->h[i] + (double)k->bc[i] * k->c[i];
    return L;
}

static double sigm(double x) {
    return 1 / (1 + exp(-x));
}

START_TEST(test_lstm) {
    lcg_state = 14;
    enum { N = 3, H = 4 };
    lstm_case k = {N,          H,          rnd(4 * N * H), rnd(N * H),
                   rnd(N * H), rnd(N * H), rnd(4 * N * H), rnd(N * H),
                   rnd(N * H)};
    for (int i = 0; i < 4 * N * H; i++)
        k.pre[i] *= 2; /* pre-activations in [-2, 2) */
    lstm_loss(&k);

    /* Forward against the textbook cell: gates ordered [i f g o]. */
    for (int r = 0; r < N; r++)
        for (int j = 0; j < H; j++) {
            const float *p = k.pre + (size_t)r * 4 * H;
            double i = sigm(p[j]), f = sigm(p[H + j]), g = tanh(p[2 * H + j]),
                   o = sigm(p[3 * H + j]);
            double c = f * k.cp[r * H + j] + i * g, h = o * tanh(c);
            ck_assert_double_eq_tol(k.c[r * H + j], c, 1e-5);
            ck_assert_double_eq_tol(k.h[r * H + j], h, 1e-5);
            ck_assert_double_eq_tol(k.gates[r * 4 * H + j], i, 1e-6);
            ck_assert_double_eq_tol(k.gates[r * 4 * H + 2 * H + j], g, 1e-6);
        }

    float *dgates = malloc(sizeof(float) * 4 * N * H), *dcp = malloc(sizeof(float) * N * H);
    ram_lstm_backward(k.gates, k.cp, k.c, k.a, k.bc, dgates, dcp, N, H);
    for (int i = 0; i < 4 * N * H; i++) {
        float keep = k.pre[i];
        k.pre[i] = keep + FD_STEP;
        double lp = lstm_loss(&k);
        k.pre[i] = keep - FD_STEP;
        double lm = lstm_loss(&k);
        k.pre[i] = keep;
        check_grad(dgates[i], (lp - lm) / (2.0 * FD_STEP), "dgates", i);
    }
    for (int i = 0; i < N * H; i++) {
        float keep = k.cp[i];
        k.cp[i] = keep + FD_STEP;
        double lp = lstm_loss(&k);
        k.cp[i] = keep - FD_STEP;
        double lm = lstm_loss(&k);
        k.cp[i] = keep;
        check_grad(dcp[i], (lp - lm) / (2.0 * FD_STEP), "dc_prev", i);
    }
    free(k.pre), free(k.cp), free(k.a), free(k.bc), free(k.gates), free(k.c), free(k.h);
    free(dgates), free(dcp);
}
END_TEST

/* ---- the LSTM's tanh and logistic function ---- */

/* Against tanh() and the logistic function in double on a fine grid and at
 * the edges: the error bounds of internal.h (measured there over every
 * finite float by tests/tanh_error.c; the grid's worst is lower), the
 * range, oddness, tiny arguments and NaN.  Failures are counted in the
 * loop and asserted once: a passing ck_assert costs a write to Check's
 * pipe, too much 200,000 times under valgrind. */
START_TEST(test_fast_tanh_sigmoid) {
    double worst_t = 0, worst_s = 0;
    long out_of_range = 0, not_odd = 0;
    for (int i = -100000; i <= 100000; i++) {
        const float x = (float)i * 2e-4f; /* [-20, 20] */
        const float t = ram_tanh(x), sg = ram_sigmoid(x);
        worst_t = fmax(worst_t, fabs((double)t - tanh((double)x)));
        worst_s = fmax(worst_s, fabs((double)sg - 1 / (1 + exp(-(double)x))));
        out_of_range += !(t >= -1.0f && t <= 1.0f) + !(sg >= 0.0f && sg <= 1.0f);
        not_odd += ram_tanh(-x) != -t;
    }
    ck_assert_msg(worst_t <= 4.1e-7, "tanh: max abs error %g", worst_t);
    ck_assert_msg(worst_s <= 2.3e-7, "sigmoid: max abs error %g", worst_s);
    ck_assert_int_eq(out_of_range, 0);
    ck_assert_int_eq(not_odd, 0);
    const float tiny[] = {0.0f, -0.0f, 1e-30f, -3e-4f, 1.4e-45f};
    for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++)
        ck_assert(ram_tanh(tiny[i]) == tiny[i]); /* x itself below 4e-4 */
    ck_assert(signbit(ram_tanh(-0.0f)));
    ck_assert_float_eq(ram_tanh(INFINITY), 1.0f);
    ck_assert_float_eq(ram_tanh(-INFINITY), -1.0f);
    ck_assert_float_eq(ram_tanh(1e30f), 1.0f);
    ck_assert_float_eq(ram_sigmoid(0.0f), 0.5f);
    ck_assert(isnan(ram_tanh(NAN)) && isnan(ram_sigmoid(NAN)));
}
END_TEST

/* ---- softmax + cross-entropy ---- */

static double xent(const float *z, int K, int y) {
    float p[16];
    ram_softmax(z, p, 1, K);
    return -log((double)p[y]);
}

START_TEST(test_softmax_xent) {
    lcg_state = 15;
    enum { N = 4, K = 5 };
    float *z = rnd(N * K), p[N * K];
    for (int i = 0; i < N * K; i++)
        z[i] *= 3;
    ram_softmax(z, p, N, K);
    for (int i = 0; i < N; i++) {
        const int y = i % K;
        /* The maximum is taken in float and widened once (the same value:
         * every float is a double).  Taken in double over widened floats,
         * a max reduction of a constant trip count, it made Debian's gcc
         * 12.2 for aarch64 fail at -O2 with "internal compiler error: in
         * vect_transform_reduction, at tree-vect-loop.cc:7457" (the loop
         * vectoriser's handling of an fmax reduction fed by a float to
         * double conversion); the float form vectorises cleanly. */
        float zmaxf = z[i * K];
        for (int j = 1; j < K; j++)
            zmaxf = fmaxf(zmaxf, z[i * K + j]);
        double sum = 0, zmax = zmaxf;
        for (int j = 0; j < K; j++)
            sum += exp(z[i * K + j] - zmax);
        for (int j = 0; j < K; j++) {
            ck_assert_double_eq_tol(p[i * K + j], exp(z[i * K + j] - zmax) / sum, 1e-6);
            /* The trainer's gradient of -log p_y w.r.t. the logits. */
            double analytic = p[i * K + j] - (j == y);
            float keep = z[i * K + j];
            z[i * K + j] = keep + FD_STEP;
            double lp = xent(z + i * K, K, y);
            z[i * K + j] = keep - FD_STEP;
            double lm = xent(z + i * K, K, y);
            z[i * K + j] = keep;
            check_grad(analytic, (lp - lm) / (2.0 * FD_STEP), "dlogits", (size_t)i * K + j);
        }
    }
    /* In place (the model does this) and with huge logits: no overflow. */
    float big[3] = {1000.0f, 999.0f, -1000.0f};
    ram_softmax(big, big, 1, 3);
    ck_assert(isfinite(big[0]) && isfinite(big[1]));
    ck_assert_double_eq_tol(big[0], 1 / (1 + exp(-1.0)), 1e-6);
    ck_assert_double_eq_tol(big[0] + big[1] + big[2], 1.0, 1e-6);
    ck_assert_float_eq(big[2], 0.0f);
    free(z);
}
END_TEST

static Suite *layers_suite(void) {
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("gradients");
    tcase_add_test(tc, test_linear_gradients);
    tcase_add_test(tc, test_linear_forward_reference);
    tcase_add_test(tc, test_own_products);
    tcase_add_test(tc, test_linear_rows_independent);
    tcase_add_test(tc, test_linear_sparse);
    tcase_add_test(tc, test_transpose_and_count);
    tcase_add_test(tc, test_relu);
    tcase_add_test(tc, test_lstm);
    tcase_add_test(tc, test_fast_tanh_sigmoid);
    tcase_add_test(tc, test_softmax_xent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return run_suite(layers_suite());
}
