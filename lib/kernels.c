/* The portable kernels behind the linear layers of few rows, IEEE half
 * precision conversion, and the one place where the CPU-specific kernels
 * (kernels_x86.c) are chosen at run time.  The portable kernels are the
 * reference: every CPU-specific one gives their bits (or, for the
 * zero-skipping column kernel, its own documented order of sums). */
#include "kernels.h"

#include <math.h>
#include <string.h>

/* A kernel for rows of `in` inputs: the vector kernels need a vector's
 * worth of inputs (the location layer's 2 are plain scalar work, where a
 * vector kernel's reductions would dominate). */
static bool x86_kernels(int in) {
#ifdef RAM_X86_KERNELS
    return in >= 8 && ram_cpu_x86_kernels();
#else
    (void)in;
    return false;
#endif
}

/* IEEE 754 binary16, by hand so that the library needs no F16C to be
 * correct (the kernels above use it to be fast). */
uint16_t ram_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf, or NaN (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: Inf */
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or 0), in units of 2^-24 */
        float a;
        memcpy(&a, &ax, sizeof a);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f)); /* 1024 is 2^-14 itself */
    }
    uint32_t h = ((ax >> 23) - 112) << 10 | (ax & 0x7fffffu) >> 13; /* rebias 127 -> 15 */
    const uint32_t rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; /* a carry may reach Inf: right */
    return (uint16_t)(sign | h);
}

float ram_half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t x;
    float f;
    if (e == 0) {
        f = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        memcpy(&x, &f, sizeof x);
        x |= sign;
    } else if (e == 31) {
        x = sign | 0x7f800000u | m << 13;
    } else {
        x = sign | (e + 112) << 23 | m << 13;
    }
    memcpy(&f, &x, sizeof f);
    return f;
}
/* The portable kernel, for float rows or (when `half`) half rows: the same
 * sums in the same order either way.  Inlined into its two callers below, so
 * that `half` is a constant in each. */
__attribute__((always_inline)) static inline void dot_rows_portable(const void *W, int in,
                                                                    const float *x, int rows,
                                                                    const float *b, float *y,
                                                                    bool acc, bool half) {
    for (int r = 0; r < rows; r++) {
        const size_t row = (size_t)r * in;
        float s[8] = {0};
        int c = 0;
#define WEIGHT(i)                                                                                  \
    (half ? ram_half_to_float(((const uint16_t *)W)[row + (i)]) : ((const float *)W)[row + (i)])
        for (; c + 8 <= in; c += 8)
            for (int j = 0; j < 8; j++)
                s[j] += WEIGHT(c + j) * x[c + j];
        float d = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        for (; c < in; c++)
            d += WEIGHT(c) * x[c];
#undef WEIGHT
        ram_finish_row(y, b, r, acc, d);
    }
}

static void dot_rows_generic(const float *W, int in, const float *x, int rows, const float *b,
                             float *y, bool acc) {
    dot_rows_portable(W, in, x, rows, b, y, acc, false);
}

static void dot_rows_half_generic(const uint16_t *W, int in, const float *x, int rows,
                                  const float *b, float *y, bool acc) {
    dot_rows_portable(W, in, x, rows, b, y, acc, true);
}

void ram_dot_rows(const float *W, int in, const float *x, int rows, const float *b, float *y,
                  bool acc) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(in)) {
        ram_x86_dot_rows(W, in, x, rows, b, y, acc);
        return;
    }
    if (in == 2 && x86_kernels(8)) {
        ram_x86_dot_rows_in2(W, x, rows, b, y, acc);
        return;
    }
#endif
    dot_rows_generic(W, in, x, rows, b, y, acc);
}

void ram_linear_forward_half(const float *X, int ldx, int n, int in, const uint16_t *W,
                             const float *b, int out, float *Y, int ldy, bool accumulate) {
    for (int i = 0; i < n; i++) {
        const float *x = X + (size_t)i * ldx;
        float *y = Y + (size_t)i * ldy;
#ifdef RAM_X86_KERNELS
        if (x86_kernels(in)) { /* dot_rows()'s choice: its bits on the rounded weights */
            ram_x86_dot_rows_half(W, in, x, out, b, y, accumulate);
            continue;
        }
#endif
        dot_rows_half_generic(W, in, x, out, b, y, accumulate);
    }
}
int ram_count_nonzeros(const float *x, int in) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(8)) return ram_x86_count_nonzeros(x, in);
#endif
    int nnz = 0;
    for (int c = 0; c < in; c++)
        nnz += x[c] != 0.0f;
    return nnz;
}

void ram_transpose(float *dst, const float *src, int rows, int cols) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(8)) {
        ram_x86_transpose(dst, src, rows, cols);
        return;
    }
#endif
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

bool ram_sparse_kernels(void) {
#ifdef RAM_X86_KERNELS
    return x86_kernels(8);
#else
    return false;
#endif
}

bool ram_linear_forward_sparse(const float *x, int in, int min_zeros, const void *Wt, bool half,
                               int ldt, int r0, int r1, const float *b, float *y, bool accumulate) {
#ifdef RAM_X86_KERNELS
    int nz[RAM_SPARSE_MAX_IN], nnz = 0;
    if (in > RAM_SPARSE_MAX_IN || !x86_kernels(8)) return false;
    nnz = ram_x86_nonzeros(x, in, nz);
    if (nnz > in - min_zeros) return false; /* the caller's dense kernel is faster */
    if (half)
        ram_x86_dot_cols_half(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    else
        ram_x86_dot_cols(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    return true;
#else
    (void)x, (void)in, (void)min_zeros, (void)Wt, (void)half, (void)ldt, (void)r0, (void)r1,
        (void)b, (void)y, (void)accumulate;
    return false;
#endif
}
