/* The AVX-512 kernels: the zero-skipping column kernel and the nonzero
 * finder sixteen lanes wide, beside the AVX2/FMA set's row kernels, whose
 * sums they keep.  Every row of the column kernel is one FMA chain, so a
 * 16-row vector gives each row exactly the bits of the 8-row one: a model
 * classifies to the same bits on an AVX2 and an AVX-512 processor.  The row
 * kernels are the AVX2 set's: their eight column lanes are the order of
 * sums every set shares (kernels.h), and a sixteen-lane version of that
 * order needs two rows in one register, whose loads and shuffles cost what
 * the halved FMA count saves.  Compiled for AVX-512 (F, BW, VL) function by
 * function (target attributes); kernels.c chooses this set only when
 * ram_cpu_x86_avx512() says the processor and the system have them. */
#include "kernels.h"

#ifdef RAM_X86_KERNELS
#include <immintrin.h>

#define RAM_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx2,fma,f16c,popcnt"

/* Sixteen weights from w as floats (halves and bfloat16s widened exactly),
 * the lanes outside `mask` zero and not read. */
__attribute__((target(RAM_AVX512_TARGET), always_inline)) static inline __m512
load16(const void *w, __mmask16 mask, ram_wform form) {
    if (form == RAM_WFORM_HALF) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, w));
    if (form == RAM_WFORM_BF16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, w)), 16));
    return _mm512_maskz_loadu_ps(mask, w);
}

/* ram_finish_row() for the rows of `mask` from r on, from d's lanes: the
 * same two additions, so the same bits. */
__attribute__((target(RAM_AVX512_TARGET), always_inline)) static inline void
finish_rows16(float *y, const float *b, int r, __mmask16 mask, bool acc, __m512 d) {
    const __m512 zero = _mm512_setzero_ps();
    const __m512 base = _mm512_add_ps(acc ? _mm512_maskz_loadu_ps(mask, y + r) : zero,
                                      b ? _mm512_maskz_loadu_ps(mask, b + r) : zero);
    _mm512_mask_storeu_ps(y + r, mask, _mm512_add_ps(base, d));
}

/* Rows [r0, r1) from the column-major Wt over the nnz inputs listed in nz,
 * as kernels.h defines dot_cols: eight vectors of 16 rows per pass over
 * the columns (eight chains cover the FMA latency; the broadcast input
 * serves 128 rows), then single vectors, the last one masked.  A masked
 * lane computes nothing that reaches memory, so the tail rows come out as
 * in a full vector. */
__attribute__((target(RAM_AVX512_TARGET), always_inline)) static inline void
dot_cols_avx512(const void *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
                const float *b, float *y, bool acc, ram_wform form) {
    const size_t size = ram_wform_size(form);
    const __m512 zero = _mm512_setzero_ps();
    const __mmask16 all = 0xffff;
#define COL(k, r) ((const char *)Wt + ((size_t)nz[k] * ldt + (r)) * size)
    int r = r0;
    for (; r + 128 <= r1; r += 128) {
        __m512 a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero,
               a7 = zero;
        for (int k = 0; k < nnz; k++) {
            const char *w = COL(k, r);
            const __m512 xc = _mm512_set1_ps(x[nz[k]]);
            a0 = _mm512_fmadd_ps(load16(w, all, form), xc, a0);
            a1 = _mm512_fmadd_ps(load16(w + 16 * size, all, form), xc, a1);
            a2 = _mm512_fmadd_ps(load16(w + 32 * size, all, form), xc, a2);
            a3 = _mm512_fmadd_ps(load16(w + 48 * size, all, form), xc, a3);
            a4 = _mm512_fmadd_ps(load16(w + 64 * size, all, form), xc, a4);
            a5 = _mm512_fmadd_ps(load16(w + 80 * size, all, form), xc, a5);
            a6 = _mm512_fmadd_ps(load16(w + 96 * size, all, form), xc, a6);
            a7 = _mm512_fmadd_ps(load16(w + 112 * size, all, form), xc, a7);
        }
        finish_rows16(y, b, r, all, acc, a0);
        finish_rows16(y, b, r + 16, all, acc, a1);
        finish_rows16(y, b, r + 32, all, acc, a2);
        finish_rows16(y, b, r + 48, all, acc, a3);
        finish_rows16(y, b, r + 64, all, acc, a4);
        finish_rows16(y, b, r + 80, all, acc, a5);
        finish_rows16(y, b, r + 96, all, acc, a6);
        finish_rows16(y, b, r + 112, all, acc, a7);
    }
    for (; r < r1; r += 16) {
        const __mmask16 mask = r + 16 <= r1 ? all : (__mmask16)((1u << (r1 - r)) - 1);
        __m512 a = zero;
        for (int k = 0; k < nnz; k++)
            a = _mm512_fmadd_ps(load16(COL(k, r), mask, form), _mm512_set1_ps(x[nz[k]]), a);
        finish_rows16(y, b, r, mask, acc, a);
    }
#undef COL
}

__attribute__((target(RAM_AVX512_TARGET))) static void
avx512_dot_cols(const float *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
                const float *b, float *y, bool acc) {
    dot_cols_avx512(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_FLOAT);
}

__attribute__((target(RAM_AVX512_TARGET))) static void
avx512_dot_cols_half(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                     int r1, const float *b, float *y, bool acc) {
    dot_cols_avx512(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_HALF);
}

__attribute__((target(RAM_AVX512_TARGET))) static void
avx512_dot_cols_bf16(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                     int r1, const float *b, float *y, bool acc) {
    dot_cols_avx512(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, RAM_WFORM_BF16);
}

/* x's nonzeros (NaN counts, -0 does not), sixteen inputs at a time: one
 * compare gives the mask, and the positions of its set bits are packed to
 * the front of a vector in the register (the store-to-memory form of the
 * compress is microcoded and slow on some processors) and stored whole. */
__attribute__((target(RAM_AVX512_TARGET))) static int avx512_nonzeros(const float *x, int in,
                                                                      int *nz) {
    const __m512 zero = _mm512_setzero_ps();
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int nnz = 0, c = 0;
    for (; c + 16 <= in; c += 16) { /* stores 16 entries at nnz <= c: inside nz */
        const __mmask16 m = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + c), zero, _CMP_NEQ_UQ);
        const __m512i at = _mm512_add_epi32(lanes, _mm512_set1_epi32(c));
        _mm512_storeu_si512(nz + nnz, _mm512_maskz_compress_epi32(m, at));
        nnz += __builtin_popcount(m);
    }
    for (; c < in; c++)
        nz[nnz] = c, nnz += x[c] != 0.0f;
    return nnz;
}

__attribute__((target(RAM_AVX512_TARGET))) static int avx512_count_nonzeros(const float *x,
                                                                            int in) {
    const __m512 zero = _mm512_setzero_ps();
    int nnz = 0, c = 0;
    for (; c + 16 <= in; c += 16)
        nnz += __builtin_popcount(_mm512_cmp_ps_mask(_mm512_loadu_ps(x + c), zero, _CMP_NEQ_UQ));
    const __mmask16 rest = (__mmask16)((1u << (in - c)) - 1);
    return nnz + __builtin_popcount(_mm512_mask_cmp_ps_mask(
                     rest, _mm512_maskz_loadu_ps(rest, x + c), zero, _CMP_NEQ_UQ));
}

/* One step's constants, broadcast once per call (kept in registers: the
 * stores through w could otherwise alias *s and reload it). */
typedef struct adam_consts {
    __m512 scale, b1, nb1, b2, nb2, c1, c2, eps, lr, decay, a;
} adam_consts;

/* Sixteen weights of Adam (kernels.h's order, nothing fused): a full
 * vector with plain loads and stores, the tail under mask m, whose lanes
 * outside it are computed from zeros and never stored. */
__attribute__((target(RAM_AVX512_TARGET), always_inline)) static inline void
adam16(const adam_consts *k, float *w, float *m1, float *m2, const float *g, float *avg,
       __mmask16 m, bool full) {
#define LOAD(p)     (full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p))
#define STORE(p, v) (full ? _mm512_storeu_ps(p, v) : _mm512_mask_storeu_ps(p, m, v))
    const __m512 gi = _mm512_mul_ps(LOAD(g), k->scale);
    const __m512 u = _mm512_add_ps(_mm512_mul_ps(k->b1, LOAD(m1)), _mm512_mul_ps(k->nb1, gi));
    const __m512 v =
        _mm512_add_ps(_mm512_mul_ps(k->b2, LOAD(m2)), _mm512_mul_ps(_mm512_mul_ps(k->nb2, gi), gi));
    const __m512 step =
        _mm512_div_ps(_mm512_mul_ps(k->lr, _mm512_mul_ps(u, k->c1)),
                      _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(v, k->c2)), k->eps));
    const __m512 wi = _mm512_sub_ps(_mm512_mul_ps(LOAD(w), k->decay), step);
    STORE(m1, u);
    STORE(m2, v);
    STORE(w, wi);
    if (avg) {
        const __m512 ai = LOAD(avg);
        STORE(avg, _mm512_add_ps(ai, _mm512_mul_ps(k->a, _mm512_sub_ps(wi, ai))));
    }
#undef LOAD
#undef STORE
}

/* Adam sixteen weights at a time, the last vector masked. */
__attribute__((target(RAM_AVX512_TARGET))) static void avx512_adam(const ram_adam_step *s, float *w,
                                                                   float *m1, float *m2,
                                                                   const float *g, size_t n,
                                                                   float *avg) {
    const adam_consts k = {_mm512_set1_ps(s->scale),
                           _mm512_set1_ps(s->beta1),
                           _mm512_set1_ps(s->one_minus_beta1),
                           _mm512_set1_ps(s->beta2),
                           _mm512_set1_ps(s->one_minus_beta2),
                           _mm512_set1_ps(s->c1),
                           _mm512_set1_ps(s->c2),
                           _mm512_set1_ps(s->eps),
                           _mm512_set1_ps(s->lr),
                           _mm512_set1_ps(s->decay),
                           _mm512_set1_ps(s->avg_rate)};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        adam16(&k, w + i, m1 + i, m2 + i, g + i, avg ? avg + i : NULL, 0xffff, true);
    if (i < n)
        adam16(&k, w + i, m1 + i, m2 + i, g + i, avg ? avg + i : NULL,
               (__mmask16)((1u << (n - i)) - 1), false);
}

const ram_kernel_set ram_kernels_avx512 = {
    .name = "avx512",
    .fused = true,
    .dot_rows = ram_x86_dot_rows,
    .dot_rows_half = ram_x86_dot_rows_half,
    .dot_rows_bf16 = ram_x86_dot_rows_bf16,
    .dot_rows_in2 = ram_x86_dot_rows_in2,
    .dot_cols = avx512_dot_cols,
    .dot_cols_half = avx512_dot_cols_half,
    .dot_cols_bf16 = avx512_dot_cols_bf16,
    .nonzeros = avx512_nonzeros,
    .count_nonzeros = avx512_count_nonzeros,
    .transpose = ram_x86_transpose,
    .adam = avx512_adam,
};

#else
typedef int ram_no_avx512_kernels; /* ISO C: a translation unit is not empty */
#endif
