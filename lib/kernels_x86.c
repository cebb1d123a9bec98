/* The AVX2/FMA/F16C kernels behind the few-row and zero-skipping linear
 * layers, compiled for those instructions function by function (target
 * attributes), so that the rest of the library runs on any x86-64.  kernels.c
 * chooses this set only when the processor has them (ram_cpu_x86_kernels()),
 * and tests/check_kernels.c holds it to the order of sums kernels.h gives
 * (the portable set's, with each lane's products fused). */
#include "kernels.h"

#ifdef RAM_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#define RAM_X86_TARGET "avx2,fma,f16c,popcnt"

/* Eight weights from row w at column c, as floats: float rows as they are,
 * half rows through F16C, bfloat16 rows widened and shifted into a float's
 * upper half (both exact).  `form` is a constant wherever this is inlined,
 * so each kernel below has one kind of load. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline __m256
load8(const void *w, int c, ram_wform form) {
    if (form == RAM_WFORM_HALF)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + c)));
    if (form == RAM_WFORM_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + c))),
            16));
    return _mm256_loadu_ps((const float *)w + c);
}

/* ram_finish_row() for rows r .. r + count - 1 (count <= 8) from d's lanes, as
 * one vector operation per step when all eight rows are there. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
finish_rows8(float *y, const float *b, int r, int count, bool acc, __m256 d) {
    if (count == 8) {
        const __m256 zero = _mm256_setzero_ps();
        const __m256 base =
            _mm256_add_ps(acc ? _mm256_loadu_ps(y + r) : zero, b ? _mm256_loadu_ps(b + r) : zero);
        _mm256_storeu_ps(y + r, _mm256_add_ps(base, d));
        return;
    }
    float lane[8];
    _mm256_storeu_ps(lane, d);
    for (int j = 0; j < count; j++)
        ram_finish_row(y, b, r + j, acc, lane[j]);
}

__attribute__((target(RAM_X86_TARGET), always_inline)) static inline float
weight(const void *w, int c, ram_wform form) {
    if (form == RAM_WFORM_HALF) return _cvtsh_ss(((const uint16_t *)w)[c]);
    if (form == RAM_WFORM_BF16) return ram_bf16_to_float(((const uint16_t *)w)[c]);
    return ((const float *)w)[c];
}

/* Eight rows per pass, one accumulator each: x is loaded once for eight
 * rows (9 loads per 8 FMAs, against 10 for four rows with two accumulators
 * each), eight independent chains cover the FMA latency, and one reduction
 * serves eight rows.  On a Zen 1, whose 256-bit loads take two of its two
 * load slots a cycle, the load count is the bound: batch-1 layers of 64 to
 * 256 inputs ran 12-18 % faster than with four rows (docs/performance.md).
 * Lane j of the result is row j's sum, ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7))
 * over its eight column lanes s, then the columns past the last multiple of
 * 8 one by one: the same operations for every row.  16-bit rows are
 * widened as they are loaded and summed in exactly the float rows' order,
 * so they give the bits a float row of the rounded weights gives.
 * With `eight` false, rows w[0..3] alone (out[0..3]): the same sums, half
 * the work when no more rows are left. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_block(const char *const w[8], const float *x, int in, float out[8], ram_wform form,
          bool eight) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int c = 0;
    for (; c + 8 <= in; c += 8) {
        const __m256 x0 = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(load8(w[0], c, form), x0, a0);
        a1 = _mm256_fmadd_ps(load8(w[1], c, form), x0, a1);
        a2 = _mm256_fmadd_ps(load8(w[2], c, form), x0, a2);
        a3 = _mm256_fmadd_ps(load8(w[3], c, form), x0, a3);
        if (!eight) continue;
        a4 = _mm256_fmadd_ps(load8(w[4], c, form), x0, a4);
        a5 = _mm256_fmadd_ps(load8(w[5], c, form), x0, a5);
        a6 = _mm256_fmadd_ps(load8(w[6], c, form), x0, a6);
        a7 = _mm256_fmadd_ps(load8(w[7], c, form), x0, a7);
    }
    /* Lanes 0-3 of s0 hold rows 0-3's sums of their column lanes 0-3, lanes
     * 4-7 their sums of lanes 4-7; s1 the same for rows 4-7. */
    const __m256 s0 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    if (eight) {
        const __m256 s1 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20),
                                            _mm256_permute2f128_ps(s0, s1, 0x31)));
    } else {
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1)));
    }
    for (; c < in; c++)
        for (int j = 0; j < (eight ? 8 : 4); j++)
            out[j] += weight(w[j], c, form) * x[c];
}

/* The location layer (2 inputs, l = (x, y)), eight rows at a time: the
 * portable kernel's operations, (0 + w0 x0) + w1 x1 with no FMA, so the
 * same bits as the scalar loop it replaces (a tenth of a batch-1 glimpse
 * step went to that loop). */
__attribute__((target(RAM_X86_TARGET))) void
ram_x86_dot_rows_in2(const float *W, const float *x, int rows, const float *b, float *y, bool acc) {
    const __m256 x0 = _mm256_set1_ps(x[0]), x1 = _mm256_set1_ps(x[1]), zero = _mm256_setzero_ps();
    for (int r = 0; r < rows; r += 8) {
        /* Rows r..r+7 as (c0, c1) pairs (the last block's copied into
         * zeros); shuffle_ps takes lanes from both 128-bit halves, hence the
         * 64-bit permutation back to row order.  The tail goes through the
         * same vector code, not a scalar line a compiler might contract
         * into an FMA. */
        float pad[16] = {0};
        const bool whole = r + 8 <= rows;
        if (!whole) memcpy(pad, W + 2 * r, sizeof(float) * 2 * (rows - r));
        const float *w = whole ? W + 2 * r : pad;
        const __m256 lo = _mm256_loadu_ps(w), hi = _mm256_loadu_ps(w + 8);
        const __m256 c0 = _mm256_castpd_ps(
            _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xd8));
        const __m256 c1 = _mm256_castpd_ps(
            _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xdd)), 0xd8));
        const __m256 d =
            _mm256_add_ps(_mm256_add_ps(zero, _mm256_mul_ps(c0, x0)), _mm256_mul_ps(c1, x1));
        finish_rows8(y, b, r, whole ? 8 : rows - r, acc, d);
    }
}

/* y[r] for rows [0, rows) of W (in `form`). */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_rows_x86(const void *W, int in, const float *x, int rows, const float *b, float *y, bool acc,
             ram_wform form) {
    const size_t row_bytes = (size_t)in * ram_wform_size(form);
    float d[8] = {0}; /* with four rows, lanes 4-7 are not written: defined, unused */
    for (int r = 0; r < rows; r += 8) {
        /* Past the last row, repeat it: each lane's arithmetic is its own,
         * so row r comes out the same as in a full block. */
        const char *w[8];
        for (int j = 0; j < 8; j++)
            w[j] = (const char *)W + (size_t)(r + j < rows ? r + j : rows - 1) * row_bytes;
        if (r + 4 < rows)
            dot_block(w, x, in, d, form, true);
        else /* four rows or fewer left (the location layer's 2): half the work */
            dot_block(w, x, in, d, form, false);
        finish_rows8(y, b, r, r + 8 <= rows ? 8 : rows - r, acc, _mm256_loadu_ps(d));
    }
}

__attribute__((target(RAM_X86_TARGET))) void ram_x86_dot_rows(const float *W, int in,
                                                              const float *x, int rows,
                                                              const float *b, float *y, bool acc) {
    dot_rows_x86(W, in, x, rows, b, y, acc, RAM_WFORM_FLOAT);
}

__attribute__((target(RAM_X86_TARGET))) void ram_x86_dot_rows_half(const uint16_t *W, int in,
                                                                   const float *x, int rows,
                                                                   const float *b, float *y,
                                                                   bool acc) {
    dot_rows_x86(W, in, x, rows, b, y, acc, RAM_WFORM_HALF);
}

__attribute__((target(RAM_X86_TARGET))) void ram_x86_dot_rows_bf16(const uint16_t *W, int in,
                                                                   const float *x, int rows,
                                                                   const float *b, float *y,
                                                                   bool acc) {
    dot_rows_x86(W, in, x, rows, b, y, acc, RAM_WFORM_BF16);
}

/* Rows [r0, r1) of a layer from its column-major copy Wt (column c's rows
 * at Wt + c * ldt), summing only the nnz inputs listed in nz (x's nonzeros,
 * in increasing order): a ReLU layer's output is mostly zeros in a trained
 * model (68-85 % for the MNIST models), and a zero input's column need not
 * be read at all.  Each row is one FMA chain over the listed columns in
 * order, so its value does not depend on the rows computed with it; then
 * ram_finish_row(), as in dot_rows. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_cols_x86(const void *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
             const float *b, float *y, bool acc, ram_wform form) {
    const size_t size = ram_wform_size(form);
    const __m256 zero = _mm256_setzero_ps();
#define COL(k, r) ((const char *)Wt + ((size_t)nz[k] * ldt + (r)) * size)
    int r = r0;
    for (; r + 64 <= r1; r += 64) { /* eight vectors of rows per pass over the columns */
        __m256 a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero,
               a7 = zero;
        for (int k = 0; k < nnz; k++) {
            const char *w = COL(k, r);
            const __m256 xc = _mm256_broadcast_ss(x + nz[k]);
            a0 = _mm256_fmadd_ps(load8(w, 0, form), xc, a0);
            a1 = _mm256_fmadd_ps(load8(w, 8, form), xc, a1);
            a2 = _mm256_fmadd_ps(load8(w, 16, form), xc, a2);
            a3 = _mm256_fmadd_ps(load8(w, 24, form), xc, a3);
            a4 = _mm256_fmadd_ps(load8(w, 32, form), xc, a4);
            a5 = _mm256_fmadd_ps(load8(w, 40, form), xc, a5);
            a6 = _mm256_fmadd_ps(load8(w, 48, form), xc, a6);
            a7 = _mm256_fmadd_ps(load8(w, 56, form), xc, a7);
        }
        finish_rows8(y, b, r, 8, acc, a0);
        finish_rows8(y, b, r + 8, 8, acc, a1);
        finish_rows8(y, b, r + 16, 8, acc, a2);
        finish_rows8(y, b, r + 24, 8, acc, a3);
        finish_rows8(y, b, r + 32, 8, acc, a4);
        finish_rows8(y, b, r + 40, 8, acc, a5);
        finish_rows8(y, b, r + 48, 8, acc, a6);
        finish_rows8(y, b, r + 56, 8, acc, a7);
    }
    for (; r + 8 <= r1; r += 8) {
        __m256 a = zero;
        for (int k = 0; k < nnz; k++)
            a = _mm256_fmadd_ps(load8(COL(k, r), 0, form), _mm256_broadcast_ss(x + nz[k]), a);
        finish_rows8(y, b, r, 8, acc, a);
    }
    for (; r < r1; r++) { /* the lanes' arithmetic, one row at a time */
        __m128 a = _mm_setzero_ps();
        for (int k = 0; k < nnz; k++)
            a = _mm_fmadd_ss(_mm_set_ss(weight(COL(k, r), 0, form)), _mm_set_ss(x[nz[k]]), a);
        ram_finish_row(y, b, r, acc, _mm_cvtss_f32(a));
    }
#undef COL
}

__attribute__((target(RAM_X86_TARGET))) static void
x86_dot_cols(const float *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
             const float *b, float *y, bool acc) {
    dot_cols_x86(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_FLOAT);
}

__attribute__((target(RAM_X86_TARGET))) static void
x86_dot_cols_half(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                  int r1, const float *b, float *y, bool acc) {
    dot_cols_x86(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_HALF);
}

__attribute__((target(RAM_X86_TARGET))) static void
x86_dot_cols_bf16(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                  int r1, const float *b, float *y, bool acc) {
    dot_cols_x86(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_BF16);
}

/* Where the nonzeros of a ReLU's output are, eight inputs at a time: one
 * compare gives a mask, and NZ_LUT[mask] holds the positions of its set bits
 * in increasing order, one per byte, which are widened, offset and stored
 * all eight at once; the count then moves on by the mask's popcount.  No
 * branch on the data: the scalar loop it replaces carried each store's
 * address from the previous compare and took as long as the sums it feeds
 * (perf, batch 256, trained MNIST model). */
#define NZ_POPC(m)                                                                                 \
    (((m)&1) + ((m) >> 1 & 1) + ((m) >> 2 & 1) + ((m) >> 3 & 1) + ((m) >> 4 & 1) +                 \
     ((m) >> 5 & 1) + ((m) >> 6 & 1) + ((m) >> 7 & 1))
#define NZ_BIT(m, i) ((m) >> (i)&1 ? (uint64_t)(i) << 8 * NZ_POPC((m) & ((1u << (i)) - 1)) : 0)
#define NZ_ENTRY(m)                                                                                \
    (NZ_BIT(m, 0) | NZ_BIT(m, 1) | NZ_BIT(m, 2) | NZ_BIT(m, 3) | NZ_BIT(m, 4) | NZ_BIT(m, 5) |     \
     NZ_BIT(m, 6) | NZ_BIT(m, 7))
#define NZ_2(m)   NZ_ENTRY(m), NZ_ENTRY((m) + 1)
#define NZ_8(m)   NZ_2(m), NZ_2((m) + 2), NZ_2((m) + 4), NZ_2((m) + 6)
#define NZ_32(m)  NZ_8(m), NZ_8((m) + 8), NZ_8((m) + 16), NZ_8((m) + 24)
#define NZ_128(m) NZ_32(m), NZ_32((m) + 32), NZ_32((m) + 64), NZ_32((m) + 96)
static const uint64_t NZ_LUT[256] = {NZ_128(0u), NZ_128(128u)};

/* The positions of x's nonzeros (NaN counts as nonzero) into nz, which has
 * room for `in` entries; returns their count. */
__attribute__((target(RAM_X86_TARGET))) static int x86_nonzeros(const float *x, int in, int *nz) {
    const __m256 zero = _mm256_setzero_ps();
    int nnz = 0, c = 0;
    for (; c + 8 <= in; c += 8) { /* stores 8 entries at nnz <= c: inside nz */
        const unsigned m =
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + c), zero, _CMP_NEQ_UQ));
        const __m256i at = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&NZ_LUT[m]));
        _mm256_storeu_si256((__m256i *)(nz + nnz), _mm256_add_epi32(at, _mm256_set1_epi32(c)));
        nnz += __builtin_popcount(m);
    }
    for (; c < in; c++)
        nz[nnz] = c, nnz += x[c] != 0.0f;
    return nnz;
}

/* How many of x's entries are not zero (NaN counts), eight at a time. */
__attribute__((target(RAM_X86_TARGET))) static int x86_count_nonzeros(const float *x, int in) {
    const __m256 zero = _mm256_setzero_ps();
    int nnz = 0, c = 0;
    for (; c + 8 <= in; c += 8)
        nnz += __builtin_popcount(
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + c), zero, _CMP_NEQ_UQ)));
    for (; c < in; c++)
        nnz += x[c] != 0.0f;
    return nnz;
}

/* dst (8 rows of ldd) = the 8 x 8 block at src (8 rows of lds), transposed. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
transpose8x8(float *dst, int ldd, const float *src, int lds) {
    __m256 r[8], t[8];
    for (int k = 0; k < 8; k++)
        r[k] = _mm256_loadu_ps(src + (size_t)k * lds);
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) { /* rows k..k+3's pairs into 4-element columns */
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; k++) { /* the two 4-row halves' 128-bit lanes side by side */
        _mm256_storeu_ps(dst + (size_t)k * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(k + 4) * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
    }
}

__attribute__((target(RAM_X86_TARGET))) void ram_x86_transpose(float *dst, const float *src,
                                                               int rows, int cols) {
    const int r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int r = 0; r < r8; r += 8)
        for (int c = 0; c < c8; c += 8)
            transpose8x8(dst + (size_t)c * rows + r, rows, src + (size_t)r * cols + c, cols);
    for (int r = 0; r < rows; r++) /* the edges */
        for (int c = r < r8 ? c8 : 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* Adam eight weights at a time (kernels.h's order, nothing fused); the
 * weights past the last multiple of eight through the portable loop, whose
 * bits are the same. */
__attribute__((target(RAM_X86_TARGET))) static void x86_adam(const ram_adam_step *s, float *w,
                                                             float *m1, float *m2, const float *g,
                                                             size_t n, float *avg) {
    const __m256 scale = _mm256_set1_ps(s->scale), b1 = _mm256_set1_ps(s->beta1),
                 nb1 = _mm256_set1_ps(s->one_minus_beta1), b2 = _mm256_set1_ps(s->beta2),
                 nb2 = _mm256_set1_ps(s->one_minus_beta2), c1 = _mm256_set1_ps(s->c1),
                 c2 = _mm256_set1_ps(s->c2), eps = _mm256_set1_ps(s->eps),
                 lr = _mm256_set1_ps(s->lr), decay = _mm256_set1_ps(s->decay),
                 a = _mm256_set1_ps(s->avg_rate);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), scale);
        const __m256 u =
            _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m1 + i)), _mm256_mul_ps(nb1, gi));
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(m2 + i)),
                                       _mm256_mul_ps(_mm256_mul_ps(nb2, gi), gi));
        const __m256 step = _mm256_div_ps(_mm256_mul_ps(lr, _mm256_mul_ps(u, c1)),
                                          _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(v, c2)), eps));
        const __m256 wi = _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i), decay), step);
        _mm256_storeu_ps(m1 + i, u);
        _mm256_storeu_ps(m2 + i, v);
        _mm256_storeu_ps(w + i, wi);
        if (avg) {
            const __m256 ai = _mm256_loadu_ps(avg + i);
            _mm256_storeu_ps(avg + i, _mm256_add_ps(ai, _mm256_mul_ps(a, _mm256_sub_ps(wi, ai))));
        }
    }
    if (i < n) ram_portable_adam(s, w + i, m1 + i, m2 + i, g + i, n - i, avg ? avg + i : NULL);
}

const ram_kernel_set ram_kernels_x86 = {
    .name = "avx2+fma",
    .fused = true,
    .dot_rows = ram_x86_dot_rows,
    .dot_rows_half = ram_x86_dot_rows_half,
    .dot_rows_bf16 = ram_x86_dot_rows_bf16,
    .dot_rows_in2 = ram_x86_dot_rows_in2,
    .dot_cols = x86_dot_cols,
    .dot_cols_half = x86_dot_cols_half,
    .dot_cols_bf16 = x86_dot_cols_bf16,
    .nonzeros = x86_nonzeros,
    .count_nonzeros = x86_count_nonzeros,
    .transpose = ram_x86_transpose,
    .adam = x86_adam,
};

#else
typedef int ram_no_x86_kernels; /* ISO C: a translation unit is not empty */
#endif
