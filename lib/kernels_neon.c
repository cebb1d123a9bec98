/* The Advanced SIMD (NEON) kernels behind the few-row and zero-skipping
 * linear layers on AArch64, where every processor has these instructions
 * (FMA and the half to float conversion included), so kernels.c chooses
 * this set without asking.  They sum in the order kernels.h gives for a
 * `fused` set, the order of the AVX2 kernels (kernels_x86.c), so the two
 * give the same bits; tests/check_kernels.c holds them to it.  The nonzero
 * finder and the transpose are the portable ones: column copies are made
 * once per weight change, and the finder's scalar loop has no branch to
 * mispredict.  Their speed has not been measured on an AArch64 machine. */
#include "kernels.h"

#ifdef RAM_NEON_KERNELS
#include <arm_neon.h>
#include <math.h>
#include <string.h>

/* Four weights from row w at column c, as floats: float rows as they are,
 * half rows widened, bfloat16 rows shifted into a float's upper half (both
 * exact).  `form` is a constant wherever this is inlined, so each kernel
 * below has one kind of load. */
__attribute__((always_inline)) static inline float32x4_t load4(const void *w, int c,
                                                               ram_wform form) {
    if (form == RAM_WFORM_HALF)
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)w + c)));
    if (form == RAM_WFORM_BF16)
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)w + c), 16));
    return vld1q_f32((const float *)w + c);
}

__attribute__((always_inline)) static inline float weight(const void *w, int c, ram_wform form) {
    if (form == RAM_WFORM_HALF) return ram_half_to_float(((const uint16_t *)w)[c]);
    if (form == RAM_WFORM_BF16) return ram_bf16_to_float(((const uint16_t *)w)[c]);
    return ((const float *)w)[c];
}

/* ram_finish_row() for rows r .. r + count - 1 (count <= 4) from d's lanes:
 * the same two additions, as one vector operation each when all four rows
 * are there. */
__attribute__((always_inline)) static inline void finish_rows4(float *y, const float *b, int r,
                                                               int count, bool acc, float32x4_t d) {
    if (count == 4) {
        const float32x4_t zero = vdupq_n_f32(0.0f);
        const float32x4_t base =
            vaddq_f32(acc ? vld1q_f32(y + r) : zero, b ? vld1q_f32(b + r) : zero);
        vst1q_f32(y + r, vaddq_f32(base, d));
        return;
    }
    float lane[4];
    vst1q_f32(lane, d);
    for (int j = 0; j < count; j++)
        ram_finish_row(y, b, r + j, acc, lane[j]);
}

/* Four rows per pass, each in two accumulators: `lo` holds its column lanes
 * 0-3, `hi` lanes 4-7, so a row's eight lanes are the AVX2 kernel's eight.
 * x is loaded once for the four rows.  The reduction is pairwise adds:
 * vpaddq(lo, hi) = (l0+l1, l2+l3, l4+l5, l6+l7); two more rounds across the
 * rows give ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) in lane j for row j.  Then
 * the columns past the last multiple of 8, one by one, unfused. */
__attribute__((always_inline)) static inline void dot_block4(const char *const w[4], const float *x,
                                                             int in, float out[4], ram_wform form) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    float32x4_t l0 = zero, h0 = zero, l1 = zero, h1 = zero, l2 = zero, h2 = zero, l3 = zero,
                h3 = zero;
    int c = 0;
    for (; c + 8 <= in; c += 8) {
        const float32x4_t xl = vld1q_f32(x + c), xh = vld1q_f32(x + c + 4);
        l0 = vfmaq_f32(l0, load4(w[0], c, form), xl);
        h0 = vfmaq_f32(h0, load4(w[0], c + 4, form), xh);
        l1 = vfmaq_f32(l1, load4(w[1], c, form), xl);
        h1 = vfmaq_f32(h1, load4(w[1], c + 4, form), xh);
        l2 = vfmaq_f32(l2, load4(w[2], c, form), xl);
        h2 = vfmaq_f32(h2, load4(w[2], c + 4, form), xh);
        l3 = vfmaq_f32(l3, load4(w[3], c, form), xl);
        h3 = vfmaq_f32(h3, load4(w[3], c + 4, form), xh);
    }
    const float32x4_t q01 = vpaddq_f32(vpaddq_f32(l0, h0), vpaddq_f32(l1, h1));
    const float32x4_t q23 = vpaddq_f32(vpaddq_f32(l2, h2), vpaddq_f32(l3, h3));
    vst1q_f32(out, vpaddq_f32(q01, q23));
    for (; c < in; c++)
        for (int j = 0; j < 4; j++)
            out[j] += weight(w[j], c, form) * x[c];
}

/* y[r] for rows [0, rows) of W (in `form`). */
__attribute__((always_inline)) static inline void dot_rows_neon(const void *W, int in,
                                                                const float *x, int rows,
                                                                const float *b, float *y, bool acc,
                                                                ram_wform form) {
    const size_t row_bytes = (size_t)in * ram_wform_size(form);
    for (int r = 0; r < rows; r += 4) {
        /* Past the last row, repeat it: each lane's arithmetic is its own,
         * so row r comes out the same as in a full block. */
        const char *w[4];
        for (int j = 0; j < 4; j++)
            w[j] = (const char *)W + (size_t)(r + j < rows ? r + j : rows - 1) * row_bytes;
        float d[4];
        dot_block4(w, x, in, d, form);
        finish_rows4(y, b, r, r + 4 <= rows ? 4 : rows - r, acc, vld1q_f32(d));
    }
}

static void neon_dot_rows(const float *W, int in, const float *x, int rows, const float *b,
                          float *y, bool acc) {
    dot_rows_neon(W, in, x, rows, b, y, acc, RAM_WFORM_FLOAT);
}

static void neon_dot_rows_half(const uint16_t *W, int in, const float *x, int rows, const float *b,
                               float *y, bool acc) {
    dot_rows_neon(W, in, x, rows, b, y, acc, RAM_WFORM_HALF);
}

static void neon_dot_rows_bf16(const uint16_t *W, int in, const float *x, int rows, const float *b,
                               float *y, bool acc) {
    dot_rows_neon(W, in, x, rows, b, y, acc, RAM_WFORM_BF16);
}

/* The location layer (2 inputs), four rows at a time: vld2q splits the
 * rows' (w0, w1) pairs into two vectors; then the portable kernel's
 * operations, (0 + w0 x0) + w1 x1 with no FMA (the 0 + keeps a -0
 * product's sign as the portable loop does).  The last rows go through the
 * same vector code from a zero-padded copy. */
static void neon_dot_rows_in2(const float *W, const float *x, int rows, const float *b, float *y,
                              bool acc) {
    const float32x4_t x0 = vdupq_n_f32(x[0]), x1 = vdupq_n_f32(x[1]), zero = vdupq_n_f32(0.0f);
    for (int r = 0; r < rows; r += 4) {
        float pad[8] = {0};
        const bool whole = r + 4 <= rows;
        if (!whole) memcpy(pad, W + 2 * r, sizeof(float) * 2 * (rows - r));
        const float32x4x2_t c = vld2q_f32(whole ? W + 2 * r : pad);
        const float32x4_t d =
            vaddq_f32(vaddq_f32(zero, vmulq_f32(c.val[0], x0)), vmulq_f32(c.val[1], x1));
        finish_rows4(y, b, r, whole ? 4 : rows - r, acc, d);
    }
}

/* Rows [r0, r1) of a layer from its column-major copy Wt (column c's rows
 * at Wt + c * ldt), summing only the nnz inputs listed in nz: a ReLU layer's
 * output is mostly zeros in a trained model, and a zero input's column need
 * not be read.  Each row is one FMA chain over the listed columns in order
 * (the AVX2 kernel's), so its value does not depend on the rows computed
 * with it; then ram_finish_row(). */
__attribute__((always_inline)) static inline void
dot_cols_neon(const void *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
              const float *b, float *y, bool acc, ram_wform form) {
    const size_t size = ram_wform_size(form);
    const float32x4_t zero = vdupq_n_f32(0.0f);
#define COL(k, r) ((const char *)Wt + ((size_t)nz[k] * ldt + (r)) * size)
    int r = r0;
    for (; r + 32 <= r1; r += 32) { /* eight vectors of rows per pass over the columns */
        float32x4_t a[8];
        for (int j = 0; j < 8; j++)
            a[j] = zero;
        for (int k = 0; k < nnz; k++) {
            const char *w = COL(k, r);
            const float32x4_t xc = vdupq_n_f32(x[nz[k]]);
            for (int j = 0; j < 8; j++)
                a[j] = vfmaq_f32(a[j], load4(w, 4 * j, form), xc);
        }
        for (int j = 0; j < 8; j++)
            finish_rows4(y, b, r + 4 * j, 4, acc, a[j]);
    }
    for (; r + 4 <= r1; r += 4) {
        float32x4_t a = zero;
        for (int k = 0; k < nnz; k++)
            a = vfmaq_f32(a, load4(COL(k, r), 0, form), vdupq_n_f32(x[nz[k]]));
        finish_rows4(y, b, r, 4, acc, a);
    }
    for (; r < r1; r++) { /* the lanes' arithmetic, one row at a time */
        float a = 0.0f;
        for (int k = 0; k < nnz; k++)
            a = fmaf(weight(COL(k, r), 0, form), x[nz[k]], a);
        ram_finish_row(y, b, r, acc, a);
    }
#undef COL
}

static void neon_dot_cols(const float *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                          int r1, const float *b, float *y, bool acc) {
    dot_cols_neon(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_FLOAT);
}

static void neon_dot_cols_half(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x,
                               int r0, int r1, const float *b, float *y, bool acc) {
    dot_cols_neon(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_HALF);
}

static void neon_dot_cols_bf16(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x,
                               int r0, int r1, const float *b, float *y, bool acc) {
    dot_cols_neon(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_BF16);
}

/* How many of x's entries are not zero, four at a time: a lane compares
 * equal to zero for 0 and -0 but not NaN; its complement is all ones, -1,
 * so subtracting it counts the lane. */
static int neon_count_nonzeros(const float *x, int in) {
    uint32x4_t n = vdupq_n_u32(0);
    int c = 0;
    for (; c + 4 <= in; c += 4)
        n = vsubq_u32(n, vmvnq_u32(vceqzq_f32(vld1q_f32(x + c))));
    int nnz = (int)vaddvq_u32(n);
    for (; c < in; c++)
        nnz += x[c] != 0.0f;
    return nnz;
}

const ram_kernel_set ram_kernels_neon = {
    .name = "neon",
    .fused = true,
    .dot_rows = neon_dot_rows,
    .dot_rows_half = neon_dot_rows_half,
    .dot_rows_bf16 = neon_dot_rows_bf16,
    .dot_rows_in2 = neon_dot_rows_in2,
    .dot_cols = neon_dot_cols,
    .dot_cols_half = neon_dot_cols_half,
    .dot_cols_bf16 = neon_dot_cols_bf16,
    .nonzeros = ram_portable_nonzeros,
    .count_nonzeros = neon_count_nonzeros,
    .transpose = ram_portable_transpose,
    .adam = ram_portable_adam,
};

#else
typedef int ram_no_neon_kernels; /* ISO C: a translation unit is not empty */
#endif
