/* The kernels behind the linear layers of few rows and the zero-skipping
 * column path, and Adam's element-wise step, as sets of one kind each: the
 * portable set and the dispatch (kernels.c), and the processor-specific
 * sets (kernels_x86.c, kernels_avx512.c, kernels_neon.c), which only
 * kernels.c chooses between.  Internal. */
#ifndef RAM_KERNELS_H
#define RAM_KERNELS_H

#include "internal.h"

/* Every kernel's last step for row r, the base added before the dot product:
 * y[r] = ((acc ? y[r] : 0) + (b ? b[r] : 0)) + d.  The same operations in
 * every kernel, so that kernels agree to the bit. */
static inline void ram_finish_row(float *y, const float *b, int r, bool acc, float d) {
    /* Two statements: where float expressions are evaluated wider (x87),
     * the assignment is what rounds the first sum to float, as SSE does. */
    const float base = (acc ? y[r] : 0.0f) + (b ? b[r] : 0.0f);
    y[r] = base + d;
}

/* One Adam step's constants over a block of weights (optim.c): the
 * gradient's clipping factor, the betas and their complements, the bias
 * corrections 1 / (1 - beta^k), the learning rate, the decoupled decay
 * factor, and the rate at which the moving average follows (with avg). */
typedef struct ram_adam_step {
    float scale, beta1, one_minus_beta1, beta2, one_minus_beta2, c1, c2, eps, lr, decay, avg_rate;
} ram_adam_step;

/* One processor's kernels.  Every set sums a row the same way whichever
 * rows it is computed with, so a row's value does not depend on how a
 * caller splits the rows between threads; the sets differ from each other
 * only where `fused` says (tests/check_kernels.c holds each to that). */
typedef struct ram_kernel_set {
    const char
        *name; /* what ram_kernels_name() reports: "avx512", "avx2+fma", "neon", "portable" */
    /* The row kernels' sums: row r's inputs c + 8k (k = 0, 1, ...) go to
     * lane c of eight, each lane multiplied and added in input order, fused
     * (one rounding, an FMA) when `fused`, else a product then a sum; the
     * lanes then reduce as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), and the
     * inputs past the last multiple of 8 are added one by one, unfused. */
    bool fused;
    /* y[r] = base[r] + W[r] . x for r in [0, rows), base as ram_finish_row();
     * in >= 8 (the vector kernels need a vector's worth of inputs), except
     * in the portable set, which takes any width. */
    void (*dot_rows)(const float *W, int in, const float *x, int rows, const float *b, float *y,
                     bool acc);
    /* The same from half or bfloat16 rows: the bits dot_rows gives on the
     * floats they widen to. */
    void (*dot_rows_half)(const uint16_t *W, int in, const float *x, int rows, const float *b,
                          float *y, bool acc);
    void (*dot_rows_bf16)(const uint16_t *W, int in, const float *x, int rows, const float *b,
                          float *y, bool acc);
    /* Rows of 2 inputs (the location layer): (0 + w0 x0) + w1 x1, unfused,
     * in every set, so the same bits everywhere. */
    void (*dot_rows_in2)(const float *W, const float *x, int rows, const float *b, float *y,
                         bool acc);
    /* Rows [r0, r1) from the column-major Wt (column c's rows at Wt + c *
     * ldt), over the nnz inputs listed in nz (increasing): one FMA chain per
     * row from 0, then ram_finish_row().  NULL in a set without the
     * zero-skipping path (the portable one: a scalar chain was never
     * measured against the row kernels, and fmaf() is a library call on
     * processors without FMA), and then so are the 16-bit ones. */
    void (*dot_cols)(const float *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                     int r1, const float *b, float *y, bool acc);
    void (*dot_cols_half)(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x,
                          int r0, int r1, const float *b, float *y, bool acc);
    void (*dot_cols_bf16)(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x,
                          int r0, int r1, const float *b, float *y, bool acc);
    /* The positions of x's nonzeros (NaN counts, -0 does not) into nz (room
     * for `in`), in increasing order; their count. */
    int (*nonzeros)(const float *x, int in, int *nz);
    int (*count_nonzeros)(const float *x, int in);
    /* dst (cols x rows) = src (rows x cols) transposed, both row-major. */
    void (*transpose)(float *dst, const float *src, int rows, int cols);
    /* Adam over n weights, for each i in this order of operations, none
     * fused, so that every set gives the same bits:
     *   gi = g[i] * scale
     *   m1[i] = beta1 * m1[i] + one_minus_beta1 * gi
     *   m2[i] = beta2 * m2[i] + (one_minus_beta2 * gi) * gi
     *   w[i] = w[i] * decay - (lr * (m1[i] * c1)) / (sqrt(m2[i] * c2) + eps)
     *   avg[i] = avg[i] + avg_rate * (w[i] - avg[i])     (when avg)
     * The vector sets only widen the loop: the update is a pass over every
     * weight and its two moments each step, a few per cent of a training
     * step, and the baseline's four lanes leave the square roots and
     * divisions a quarter of a 512-bit unit's width. */
    void (*adam)(const ram_adam_step *s, float *w, float *m1, float *m2, const float *g, size_t n,
                 float *avg);
} ram_kernel_set;

/* The set this processor runs: the most capable one it can (the last of
 * ram_kernel_sets()), or the one the environment's RAM_KERNELS names if
 * it can run here (for comparing sets on one machine).  Chosen on the
 * first call, then one load. */
RAM_HIDDEN const ram_kernel_set *ram_kernels(void);

/* Every set that can run here, the portable one first and the most capable
 * last, into sets (room for RAM_KERNEL_SETS_MAX); their count.  For the
 * tests, which compare them.  Those compiled in that this processor cannot
 * run are named in `missing` (room for RAM_KERNEL_SETS_MAX, may be NULL)
 * and counted in *nmissing, so that a test can say what it skipped. */
#define RAM_KERNEL_SETS_MAX 4
RAM_HIDDEN int ram_kernel_sets(const ram_kernel_set **sets);
RAM_HIDDEN int ram_kernel_sets_missing(const char **missing);

/* y[r] = base[r] + W[r] . x for r in [0, rows) with the chosen set (its
 * dot_rows for in >= 8, dot_rows_in2 for 2, the portable loop otherwise).
 * Batch-1 inference is this: W streamed once, nothing to reuse, so sgemm's
 * packing is pure overhead (it was 62 % of a batch-1 classify, callgrind)
 * and OpenBLAS's sgemv leaves part of the memory bandwidth unused. */
RAM_HIDDEN void ram_dot_rows(const float *W, int in, const float *x, int rows, const float *b,
                             float *y, bool acc);
/* Adam's step over n weights with the chosen set (`adam` above). */
RAM_HIDDEN void ram_adam(const ram_adam_step *s, float *w, float *m1, float *m2, const float *g,
                         size_t n, float *avg);

/* The portable set's functions that others reuse where a vector version
 * would not pay (the NEON set's nonzero finder and transpose). */
RAM_HIDDEN int ram_portable_nonzeros(const float *x, int in, int *nz);
RAM_HIDDEN void ram_portable_transpose(float *dst, const float *src, int rows, int cols);
RAM_HIDDEN void ram_portable_adam(const ram_adam_step *s, float *w, float *m1, float *m2,
                                  const float *g, size_t n, float *avg);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RAM_X86_KERNELS 1
/* AVX2 + FMA + F16C + POPCNT (kernels_x86.c); only when ram_cpu_x86_kernels(). */
RAM_HIDDEN extern const ram_kernel_set ram_kernels_x86;
/* AVX-512 F/BW/VL (kernels_avx512.c): the AVX2 set's sums, the column
 * kernel and nonzero finder twice as wide; only when ram_cpu_x86_avx512(). */
RAM_HIDDEN extern const ram_kernel_set ram_kernels_avx512;
/* The AVX2 set's kernels that the AVX-512 set shares. */
RAM_HIDDEN void ram_x86_dot_rows(const float *W, int in, const float *x, int rows, const float *b,
                                 float *y, bool acc);
RAM_HIDDEN void ram_x86_dot_rows_half(const uint16_t *W, int in, const float *x, int rows,
                                      const float *b, float *y, bool acc);
RAM_HIDDEN void ram_x86_dot_rows_bf16(const uint16_t *W, int in, const float *x, int rows,
                                      const float *b, float *y, bool acc);
RAM_HIDDEN void ram_x86_dot_rows_in2(const float *W, const float *x, int rows, const float *b,
                                     float *y, bool acc);
RAM_HIDDEN void ram_x86_transpose(float *dst, const float *src, int rows, int cols);
#endif

#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__GNUC__) || defined(__clang__))
#define RAM_NEON_KERNELS 1
/* Advanced SIMD (kernels_neon.c): part of every AArch64 processor, so no
 * run-time check. */
RAM_HIDDEN extern const ram_kernel_set ram_kernels_neon;
#endif

#endif
