/* Every kernel set that can run on this processor (kernels.c's portable
 * one, and the AVX2 or the NEON one where the processor has it) against
 * the order of sums kernels.h gives for it, written out here in scalar C
 * with fmaf() for the fused steps: bit for bit, for every width and row
 * count around the vector sizes, with and without bias and accumulation.
 * So two sets with the same `fused` give the same bits, and a set that
 * sums in another order, or fuses where it should not, fails.  Adam's step
 * likewise against its written-out operations. */
#include "kernels.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Two in three entries zero, as after a ReLU, some of them -0. */
static void relu_like(float *x, int in) {
    for (int c = 0; c < in; c++)
        if (c % 3 != 1) x[c] = c % 4 ? 0.0f : -0.0f;
}

/* One product, one sum, each rounded to float: a float's assignment is
 * what rounds where the compiler evaluates float expressions wider (x87,
 * FLT_EVAL_METHOD 2), as an SSE or NEON instruction rounds each. */
static float mul(float a, float b) {
    const float p = a * b;
    return p;
}

static float add(float a, float b) {
    const float s = a + b;
    return s;
}

/* A row kernel's sum, as kernels.h defines it (the products past the last
 * multiple of 8 unfused: this file is built as ISO C, which contracts
 * nothing). */
static float ref_dot(const float *w, int in, const float *x, bool fused) {
    float s[8] = {0};
    int c = 0;
    for (; c + 8 <= in; c += 8)
        for (int j = 0; j < 8; j++)
            s[j] = fused ? fmaf(w[c + j], x[c + j], s[j]) : add(s[j], mul(w[c + j], x[c + j]));
    float d = add(add(add(s[0], s[1]), add(s[2], s[3])), add(add(s[4], s[5]), add(s[6], s[7])));
    for (; c < in; c++)
        d = add(d, mul(w[c], x[c]));
    return d;
}

static float ref_finish(const float *y0, const float *b, int r, bool acc, float d) {
    return add(add(acc ? y0[r] : 0.0f, b ? b[r] : 0.0f), d);
}

static bool same(float a, float b) {
    return !memcmp(&a, &b, sizeof a);
}

/* W (n entries) rounded to half precision (bf16 false) or bfloat16 in
 * place, the 16-bit numbers into W16: the floats a 16-bit kernel widens to. */
static void round_to(float *W, uint16_t *W16, size_t n, bool bf16) {
    for (size_t i = 0; i < n; i++) {
        W16[i] = bf16 ? ram_float_to_bf16(W[i]) : ram_float_to_half(W[i]);
        W[i] = bf16 ? ram_bf16_to_float(W16[i]) : ram_half_to_float(W16[i]);
    }
}

static int sets(const ram_kernel_set **k) {
    const int n = ram_kernel_sets(k);
    ck_assert_int_ge(n, 1);
    ck_assert_str_eq(k[0]->name, "portable");
    return n;
}

/* The set the library runs is the most capable one that can run here (the
 * last listed) unless RAM_KERNELS names another, and its name is what
 * ram_kernels_name() says.  The sets compiled in that this processor
 * cannot run are said, as every test below skips them. */
START_TEST(test_chosen_set) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const char *missing[RAM_KERNEL_SETS_MAX];
    const int n = sets(k), nmissing = ram_kernel_sets_missing(missing);
    const char *forced = getenv("RAM_KERNELS");
    if (!forced || !*forced) ck_assert_ptr_eq(ram_kernels(), k[n - 1]);
    ck_assert_str_eq(ram_kernels_name(), k[n - 1]->name);
    for (int i = 0; i < n; i++) {
        ck_assert(k[i]->dot_rows && k[i]->dot_rows_half && k[i]->dot_rows_bf16 &&
                  k[i]->dot_rows_in2 && k[i]->nonzeros && k[i]->count_nonzeros && k[i]->transpose);
        ck_assert(!k[i]->dot_cols == !k[i]->dot_cols_half);
        ck_assert(!k[i]->dot_cols == !k[i]->dot_cols_bf16);
        fprintf(stderr, "kernel set %d of %d: %s%s\n", i + 1, n, k[i]->name,
                k[i] == ram_kernels() ? " (chosen)" : "");
    }
    for (int i = 0; i < nmissing; i++)
        fprintf(stderr, "kernel set %s: not tested, this processor cannot run it\n", missing[i]);
}
END_TEST

/* Row kernels, float, half and bfloat16 (on the weights rounded to each),
 * against ref_dot(); every row computed alone too (its value must not
 * depend on the rows beside it). */
START_TEST(test_rows) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const int nsets = sets(k);
    const int ins[] = {1, 3, 7, 8, 9, 13, 16, 31, 64, 130, 256};
    const int outs[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 33, 64, 70};
    lcg_state = 21;
    for (int s = 0; s < nsets; s++)
        for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                for (int mode = 0; mode < 8; mode++) {
                    const int in = ins[a], out = outs[o];
                    const bool acc = mode & 1, bias = mode & 2, bf16 = mode & 4;
                    if (in < 8 && s > 0) continue; /* vector sets take in >= 8 (kernels.h) */
                    float *x = rnd(in), *W = rnd((size_t)out * in), *b = rnd(out), *y0 = rnd(out),
                          *y = malloc(sizeof(float) * out), *yh = malloc(sizeof(float) * out),
                          *one = malloc(sizeof(float) * out);
                    uint16_t *W16 = malloc(sizeof(uint16_t) * out * in);
                    if (a % 2) relu_like(x, in);
                    round_to(W, W16, (size_t)out * in, bf16);
                    const float *bb = bias ? b : NULL;
                    memcpy(y, y0, sizeof(float) * out);
                    memcpy(yh, y0, sizeof(float) * out);
                    memcpy(one, y0, sizeof(float) * out);
                    k[s]->dot_rows(W, in, x, out, bb, y, acc);
                    (bf16 ? k[s]->dot_rows_bf16 : k[s]->dot_rows_half)(W16, in, x, out, bb, yh,
                                                                       acc);
                    for (int r = 0; r < out; r++)
                        k[s]->dot_rows(W + (size_t)r * in, in, x, 1, bb ? bb + r : NULL, one + r,
                                       acc);
                    for (int r = 0; r < out; r++) {
                        const float want = ref_finish(
                            y0, bb, r, acc, ref_dot(W + (size_t)r * in, in, x, k[s]->fused));
                        ck_assert_msg(same(y[r], want) && same(yh[r], want) && same(one[r], want),
                                      "%s: in %d out %d acc %d bias %d row %d: %a (%s %a, "
                                      "alone %a), want %a",
                                      k[s]->name, in, out, acc, bias, r, (double)y[r],
                                      bf16 ? "bf16" : "half", (double)yh[r], (double)one[r],
                                      (double)want);
                    }
                    free(x), free(W), free(b), free(y0), free(y), free(yh), free(one), free(W16);
                }
}
END_TEST

/* The location layer's kernel: (0 + w0 x0) + w1 x1 in every set, so every
 * set gives the same bits; a -0 product must come out +0 (the 0 +). */
START_TEST(test_rows_in2) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const int nsets = sets(k);
    lcg_state = 22;
    for (int s = 0; s < nsets; s++)
        for (int out = 1; out <= 70; out += out < 12 ? 1 : 29)
            for (int mode = 0; mode < 4; mode++) {
                const bool acc = mode & 1, bias = mode & 2;
                float *W = rnd((size_t)out * 2), *b = rnd(out), *y0 = rnd(out),
                      *y = malloc(sizeof(float) * out), x[2] = {lcg_uniform(), lcg_uniform()};
                if (out == 3) { /* both products -0: the sum is +0 */
                    W[0] = -0.0f, W[1] = 0.0f, x[0] = 1.0f, x[1] = -1.0f;
                }
                memcpy(y, y0, sizeof(float) * out);
                k[s]->dot_rows_in2(W, x, out, bias ? b : NULL, y, acc);
                for (int r = 0; r < out; r++) {
                    const float d = add(add(0.0f, mul(W[2 * r], x[0])), mul(W[2 * r + 1], x[1]));
                    const float want = ref_finish(y0, bias ? b : NULL, r, acc, d);
                    ck_assert_msg(same(y[r], want), "%s: out %d acc %d bias %d row %d: %a, want %a",
                                  k[s]->name, out, acc, bias, r, (double)y[r], (double)want);
                }
                free(W), free(b), free(y0), free(y);
            }
}
END_TEST

/* The zero-skipping column kernels, where a set has them: one fmaf() chain
 * per row over the nonzero inputs in increasing order, bit for bit, from a
 * column-major copy with a stride above the row count, for row ranges that
 * start and end off the vector blocks; the half and bfloat16 copies give
 * the float kernel's bits on the weights rounded to each. */
START_TEST(test_cols) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const int nsets = sets(k);
    const int ins[] = {8, 13, 64, 130},
              outs[] = {1, 3, 4, 7, 8, 16, 17, 24, 33, 64, 72, 128, 130, 144, 159, 257};
    int tested = 0;
    lcg_state = 23;
    for (int s = 0; s < nsets; s++) {
        if (!k[s]->dot_cols) continue;
        tested++;
        for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                for (int mode = 0; mode < 8; mode++) {
                    const int in = ins[a], out = outs[o], ldt = out + 5;
                    const bool acc = mode & 1, bias = mode & 2, bf16 = mode & 4;
                    float *x = rnd(in), *Wt = rnd((size_t)ldt * in), *b = rnd(out), *y0 = rnd(out),
                          *y = malloc(sizeof(float) * out), *yh = malloc(sizeof(float) * out);
                    uint16_t *Wt16 = malloc(sizeof(uint16_t) * ldt * in);
                    int *nz = malloc(sizeof(int) * in);
                    relu_like(x, in);
                    x[in - 1] = 0.5f; /* a nonzero in the scalar tail of the finder */
                    round_to(Wt, Wt16, (size_t)ldt * in, bf16);
                    const int nnz = k[s]->nonzeros(x, in, nz);
                    const float *bb = bias ? b : NULL;
                    /* all rows, then rows [1, out - 1) and [out / 2, out) apart */
                    const int ranges[3][2] = {{0, out}, {1, out - 1}, {out / 2, out}};
                    for (int g = 0; g < 3; g++) {
                        const int r0 = ranges[g][0], r1 = ranges[g][1];
                        if (r0 >= r1) continue;
                        memcpy(y, y0, sizeof(float) * out);
                        memcpy(yh, y0, sizeof(float) * out);
                        k[s]->dot_cols(Wt, ldt, nz, nnz, x, r0, r1, bb, y, acc);
                        (bf16 ? k[s]->dot_cols_bf16 : k[s]->dot_cols_half)(Wt16, ldt, nz, nnz, x,
                                                                           r0, r1, bb, yh, acc);
                        for (int r = 0; r < out; r++) {
                            float want = y0[r];
                            if (r >= r0 && r < r1) {
                                float d = 0.0f;
                                for (int c = 0; c < in; c++)
                                    if (x[c] != 0.0f) d = fmaf(Wt[(size_t)c * ldt + r], x[c], d);
                                want = ref_finish(y0, bb, r, acc, d);
                            }
                            ck_assert_msg(same(y[r], want) && same(yh[r], want),
                                          "%s: in %d out %d rows [%d, %d) acc %d bias %d row %d: "
                                          "%a (%s %a), want %a",
                                          k[s]->name, in, out, r0, r1, acc, bias, r, (double)y[r],
                                          bf16 ? "bf16" : "half", (double)yh[r], (double)want);
                        }
                    }
                    free(x), free(Wt), free(b), free(y0), free(y), free(yh), free(Wt16), free(nz);
                }
    }
    /* a set has them exactly when the library says the zero-skipping path runs */
    ck_assert_int_eq(ram_kernels()->dot_cols != NULL, ram_sparse_kernels());
    fprintf(stderr, "column kernels compared in %d set(s)\n", tested);
}
END_TEST

/* The nonzero finder and counter (-0 is zero, NaN is not) and the
 * transpose, against their definitions, in every set. */
START_TEST(test_nonzeros_transpose) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const int nsets = sets(k);
    lcg_state = 24;
    for (int s = 0; s < nsets; s++) {
        for (int in = 0; in <= 70; in++) {
            float x[70];
            int want[70], nwant = 0, nz[70];
            for (int c = 0; c < in; c++) {
                const int kind = (int)((lcg_uniform() + 1.0f) * 2.0f); /* 0..3 */
                x[c] = kind == 0 ? 0.0f : kind == 1 ? -0.0f : kind == 2 ? NAN : 1.0f + (float)c;
                if (kind >= 2) want[nwant++] = c;
            }
            ck_assert_int_eq(k[s]->count_nonzeros(x, in), nwant);
            ck_assert_int_eq(k[s]->nonzeros(x, in, nz), nwant);
            ck_assert(!memcmp(nz, want, sizeof(int) * nwant));
        }
        const int sizes[] = {1, 3, 8, 13, 16, 130};
        for (int a = 0; a < 6; a++)
            for (int c = 0; c < 6; c++) {
                const int rows = sizes[a], cols = sizes[c];
                float *src = rnd((size_t)rows * cols), *dst = malloc(sizeof(float) * rows * cols);
                k[s]->transpose(dst, src, rows, cols);
                for (int r = 0; r < rows; r++)
                    for (int j = 0; j < cols; j++)
                        ck_assert_msg(same(dst[(size_t)j * rows + r], src[(size_t)r * cols + j]),
                                      "%s: %d x %d: (%d, %d) misplaced", k[s]->name, rows, cols, r,
                                      j);
                free(src), free(dst);
            }
    }
}
END_TEST

/* Adam's step as kernels.h writes it, one rounding per operation. */
static void ref_adam(const ram_adam_step *s, float *w, float *m1, float *m2, const float *g,
                     size_t n, float *avg) {
    for (size_t i = 0; i < n; i++) {
        const float gi = mul(g[i], s->scale);
        m1[i] = add(mul(s->beta1, m1[i]), mul(s->one_minus_beta1, gi));
        m2[i] = add(mul(s->beta2, m2[i]), mul(mul(s->one_minus_beta2, gi), gi));
        const float den = add(sqrtf(mul(m2[i], s->c2)), s->eps);
        const float q = mul(s->lr, mul(m1[i], s->c1)) / den;
        w[i] = mul(w[i], s->decay) - q;
        if (avg) avg[i] = add(avg[i], mul(s->avg_rate, w[i] - avg[i]));
    }
}

/* Adam's step: every set the reference's bits, at every length around
 * the vector widths and their tails, with and without the average, with
 * clipping and decay factors that are not 1, over several steps so that
 * the moments are not zero. */
START_TEST(test_adam) {
    const ram_kernel_set *k[RAM_KERNEL_SETS_MAX];
    const int nsets = sets(k);
    lcg_state = 25;
    const size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000};
    for (int s = 0; s < nsets; s++)
        for (int l = 0; l < 12; l++)
            for (int with_avg = 0; with_avg < 2; with_avg++) {
                const size_t n = lengths[l];
                float *w[2], *m1[2], *m2[2], *avg[2];
                float *w0 = rnd(n + 1), *g = rnd(n + 1), *a0 = rnd(n + 1);
                for (int v = 0; v < 2; v++) {
                    w[v] = malloc(sizeof(float) * (n + 1));
                    m1[v] = calloc(n + 1, sizeof(float));
                    m2[v] = calloc(n + 1, sizeof(float));
                    avg[v] = malloc(sizeof(float) * (n + 1));
                    memcpy(w[v], w0, sizeof(float) * (n + 1));
                    memcpy(avg[v], a0, sizeof(float) * (n + 1));
                }
                for (int step = 1; step <= 3; step++) {
                    const ram_adam_step st = {.scale = 0.7f,
                                              .beta1 = 0.9f,
                                              .one_minus_beta1 = 1 - 0.9f,
                                              .beta2 = 0.999f,
                                              .one_minus_beta2 = 1 - 0.999f,
                                              .c1 = 1.0f / (1.0f - powf(0.9f, (float)step)),
                                              .c2 = 1.0f / (1.0f - powf(0.999f, (float)step)),
                                              .eps = 1e-8f,
                                              .lr = 1e-3f,
                                              .decay = 0.99999f,
                                              .avg_rate = 0.01f};
                    ref_adam(&st, w[0], m1[0], m2[0], g, n, with_avg ? avg[0] : NULL);
                    k[s]->adam(&st, w[1], m1[1], m2[1], g, n, with_avg ? avg[1] : NULL);
                    for (size_t i = 0; i < n; i++)
                        g[i] = -0.5f * g[i] + 0.01f;
                }
                /* The element past n is a guard: no set may write it. */
                for (size_t i = 0; i <= n; i++) {
                    ck_assert_msg(same(w[1][i], w[0][i]) && same(m1[1][i], m1[0][i]) &&
                                      same(m2[1][i], m2[0][i]) && same(avg[1][i], avg[0][i]),
                                  "%s: n %zu, avg %d: weight %zu differs", k[s]->name, n, with_avg,
                                  i);
                    if (i == n)
                        ck_assert(same(w[1][i], w0[i]) && same(m1[1][i], 0.0f) &&
                                  same(avg[1][i], a0[i]));
                }
                if (n > 0) ck_assert(!same(w[1][0], w0[0])); /* the step moved the weights */
                for (int v = 0; v < 2; v++)
                    free(w[v]), free(m1[v]), free(m2[v]), free(avg[v]);
                free(w0), free(g), free(a0);
            }
}
END_TEST

/* Which OpenBLAS kernels the BLAS check calls too old for the CPU: those
 * before AVX2 on any AVX2 CPU, the AVX2 ones on an AVX-512 CPU, none on a
 * CPU without AVX2 (cpu_avx as ram_cpu_x86_avx(): 0, 1 AVX2, 2 AVX-512). */
START_TEST(test_blas_core_is_slow) {
    ck_assert_int_eq(ram_blas_core_is_slow("Prescott", 1), 1);
    ck_assert_int_eq(ram_blas_core_is_slow("Prescott", 2), 1);
    ck_assert_int_eq(ram_blas_core_is_slow("Prescott", 0), 0);
    ck_assert_int_eq(ram_blas_core_is_slow("Haswell", 1), 0);
    ck_assert_int_eq(ram_blas_core_is_slow("Haswell", 2), 1);
    ck_assert_int_eq(ram_blas_core_is_slow("Zen", 2), 1);
    ck_assert_int_eq(ram_blas_core_is_slow("Zen", 1), 0);
    ck_assert_int_eq(ram_blas_core_is_slow("SkylakeX", 2), 0);
    ck_assert_int_eq(ram_blas_core_is_slow("Cooperlake", 2), 0);
    ck_assert_int_eq(ram_blas_core_is_slow(NULL, 2), 0);
}
END_TEST

static Suite *kernels_suite(void) {
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("sets");
    tcase_add_test(tc, test_chosen_set);
    tcase_add_test(tc, test_blas_core_is_slow);
    tcase_add_test(tc, test_rows);
    tcase_add_test(tc, test_rows_in2);
    tcase_add_test(tc, test_cols);
    tcase_add_test(tc, test_nonzeros_transpose);
    tcase_add_test(tc, test_adam);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return run_suite(kernels_suite());
}
