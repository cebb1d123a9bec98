/* Network layers on whole batches: linear layers through cblas_sgemm, ReLU,
 * the LSTM cell's pointwise part and softmax.  Rows are batch items. */
#include "internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* y[r] = base[r] + W[r] . x for r in [0, rows), base[r] = (acc ? y[r] : 0) +
 * (b ? b[r] : 0).  Batch-1 inference is this: W streamed once, nothing to
 * reuse, so sgemm's packing is pure overhead (it was 62% of a batch-1
 * classify, callgrind) and OpenBLAS's sgemv leaves a third of the L2
 * bandwidth unused (4.6 us against 3.4 for a cached 256 x 256 matrix here).
 * Every row is summed in the same order whichever rows it is computed with,
 * so a row's value does not depend on how a caller splits the rows between
 * threads: results are the same bits for any thread count. */
/* Every kernel's last step for row r, the base added before the dot product:
 * the same operations in every kernel, so that kernels agree to the bit. */
static inline void finish_row(float *y, const float *b, int r, bool acc, float d) {
    y[r] = ((acc ? y[r] : 0.0f) + (b ? b[r] : 0.0f)) + d;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#define RAM_X86_KERNELS 1

#define RAM_X86_TARGET "avx2,fma,f16c,popcnt"

/* Eight weights from row w at column c, as floats: float rows as they are,
 * half rows through F16C (exact).  `half` is a constant wherever this is
 * inlined, so each kernel below has one kind of load. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline __m256
load8(const void *w, int c, bool half) {
    if (half) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + c)));
    return _mm256_loadu_ps((const float *)w + c);
}

/* finish_row() for rows r .. r + count - 1 (count <= 8) from d's lanes, as
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
        finish_row(y, b, r + j, acc, lane[j]);
}

__attribute__((target(RAM_X86_TARGET), always_inline)) static inline float
weight(const void *w, int c, bool half) {
    return half ? _cvtsh_ss(((const uint16_t *)w)[c]) : ((const float *)w)[c];
}

/* Eight rows per pass, one accumulator each: x is loaded once for eight
 * rows (9 loads per 8 FMAs, against 10 for four rows with two accumulators
 * each), eight independent chains cover the FMA latency, and one reduction
 * serves eight rows.  On a Zen 1, whose 256-bit loads take two of its two
 * load slots a cycle, the load count is the bound: batch-1 layers of 64 to
 * 256 inputs ran 12-18 % faster than with four rows (docs/performance.md).
 * Lane j of the result is row j's sum, ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7))
 * over its eight column lanes s, then the columns past the last multiple of
 * 8 one by one: the same operations for every row.  Half rows are
 * converted as they are loaded and summed in exactly the float rows' order,
 * so a half row gives the bits a float row of the rounded weights gives.
 * With `eight` false, rows w[0..3] alone (out[0..3]): the same sums, half
 * the work when no more rows are left. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_block(const char *const w[8], const float *x, int in, float out[8], bool half, bool eight) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int c = 0;
    for (; c + 8 <= in; c += 8) {
        const __m256 x0 = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(load8(w[0], c, half), x0, a0);
        a1 = _mm256_fmadd_ps(load8(w[1], c, half), x0, a1);
        a2 = _mm256_fmadd_ps(load8(w[2], c, half), x0, a2);
        a3 = _mm256_fmadd_ps(load8(w[3], c, half), x0, a3);
        if (!eight) continue;
        a4 = _mm256_fmadd_ps(load8(w[4], c, half), x0, a4);
        a5 = _mm256_fmadd_ps(load8(w[5], c, half), x0, a5);
        a6 = _mm256_fmadd_ps(load8(w[6], c, half), x0, a6);
        a7 = _mm256_fmadd_ps(load8(w[7], c, half), x0, a7);
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
            out[j] += weight(w[j], c, half) * x[c];
}

/* The location layer (2 inputs, l = (x, y)), eight rows at a time: the
 * portable kernel's operations, (0 + w0 x0) + w1 x1 with no FMA, so the
 * same bits as the scalar loop it replaces (a tenth of a batch-1 glimpse
 * step went to that loop). */
__attribute__((target(RAM_X86_TARGET))) static void
dot_rows_in2_avx2(const float *W, const float *x, int rows, const float *b, float *y, bool acc) {
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

/* y[r] for rows [0, rows) of W (floats, or halves when `half`). */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_rows_x86(const void *W, int in, const float *x, int rows, const float *b, float *y, bool acc,
             bool half) {
    const size_t row_bytes = (size_t)in * (half ? sizeof(uint16_t) : sizeof(float));
    float d[8] = {0}; /* with four rows, lanes 4-7 are not written: defined, unused */
    for (int r = 0; r < rows; r += 8) {
        /* Past the last row, repeat it: each lane's arithmetic is its own,
         * so row r comes out the same as in a full block. */
        const char *w[8];
        for (int j = 0; j < 8; j++)
            w[j] = (const char *)W + (size_t)(r + j < rows ? r + j : rows - 1) * row_bytes;
        if (r + 4 < rows)
            dot_block(w, x, in, d, half, true);
        else /* four rows or fewer left (the location layer's 2): half the work */
            dot_block(w, x, in, d, half, false);
        finish_rows8(y, b, r, r + 8 <= rows ? 8 : rows - r, acc, _mm256_loadu_ps(d));
    }
}

__attribute__((target(RAM_X86_TARGET))) static void dot_rows_avx2(const float *W, int in,
                                                                  const float *x, int rows,
                                                                  const float *b, float *y,
                                                                  bool acc) {
    dot_rows_x86(W, in, x, rows, b, y, acc, false);
}

__attribute__((target(RAM_X86_TARGET))) static void dot_rows_half_f16c(const uint16_t *W, int in,
                                                                       const float *x, int rows,
                                                                       const float *b, float *y,
                                                                       bool acc) {
    dot_rows_x86(W, in, x, rows, b, y, acc, true);
}

/* Rows [r0, r1) of a layer from its column-major copy Wt (column c's rows
 * at Wt + c * ldt), summing only the nnz inputs listed in nz (x's nonzeros,
 * in increasing order): a ReLU layer's output is mostly zeros in a trained
 * model (68-85 % for the MNIST models), and a zero input's column need not
 * be read at all.  Each row is one FMA chain over the listed columns in
 * order, so its value does not depend on the rows computed with it; then
 * finish_row(), as in dot_rows. */
__attribute__((target(RAM_X86_TARGET), always_inline)) static inline void
dot_cols_x86(const void *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
             const float *b, float *y, bool acc, bool half) {
    const size_t size = half ? sizeof(uint16_t) : sizeof(float);
    const __m256 zero = _mm256_setzero_ps();
#define COL(k, r) ((const char *)Wt + ((size_t)nz[k] * ldt + (r)) * size)
    int r = r0;
    for (; r + 64 <= r1; r += 64) { /* eight vectors of rows per pass over the columns */
        __m256 a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero,
               a7 = zero;
        for (int k = 0; k < nnz; k++) {
            const char *w = COL(k, r);
            const __m256 xc = _mm256_broadcast_ss(x + nz[k]);
            a0 = _mm256_fmadd_ps(load8(w, 0, half), xc, a0);
            a1 = _mm256_fmadd_ps(load8(w, 8, half), xc, a1);
            a2 = _mm256_fmadd_ps(load8(w, 16, half), xc, a2);
            a3 = _mm256_fmadd_ps(load8(w, 24, half), xc, a3);
            a4 = _mm256_fmadd_ps(load8(w, 32, half), xc, a4);
            a5 = _mm256_fmadd_ps(load8(w, 40, half), xc, a5);
            a6 = _mm256_fmadd_ps(load8(w, 48, half), xc, a6);
            a7 = _mm256_fmadd_ps(load8(w, 56, half), xc, a7);
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
            a = _mm256_fmadd_ps(load8(COL(k, r), 0, half), _mm256_broadcast_ss(x + nz[k]), a);
        finish_rows8(y, b, r, 8, acc, a);
    }
    for (; r < r1; r++) { /* the lanes' arithmetic, one row at a time */
        __m128 a = _mm_setzero_ps();
        for (int k = 0; k < nnz; k++)
            a = _mm_fmadd_ss(_mm_set_ss(weight(COL(k, r), 0, half)), _mm_set_ss(x[nz[k]]), a);
        finish_row(y, b, r, acc, _mm_cvtss_f32(a));
    }
#undef COL
}

__attribute__((target(RAM_X86_TARGET))) static void
dot_cols_avx2(const float *Wt, int ldt, const int *nz, int nnz, const float *x, int r0, int r1,
              const float *b, float *y, bool acc) {
    dot_cols_x86(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, false);
}

__attribute__((target(RAM_X86_TARGET))) static void
dot_cols_half_f16c(const uint16_t *Wt, int ldt, const int *nz, int nnz, const float *x, int r0,
                   int r1, const float *b, float *y, bool acc) {
    dot_cols_x86(Wt, ldt, nz, nnz, x, r0, r1, b, y, acc, true);
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
__attribute__((target(RAM_X86_TARGET))) static int nonzeros_avx2(const float *x, int in, int *nz) {
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
__attribute__((target(RAM_X86_TARGET))) static int count_nonzeros_avx2(const float *x, int in) {
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

__attribute__((target(RAM_X86_TARGET))) static void transpose_avx2(float *dst, const float *src,
                                                                   int rows, int cols) {
    const int r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int r = 0; r < r8; r += 8)
        for (int c = 0; c < c8; c += 8)
            transpose8x8(dst + (size_t)c * rows + r, rows, src + (size_t)r * cols + c, cols);
    for (int r = 0; r < rows; r++) /* the edges */
        for (int c = r < r8 ? c8 : 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* F16C, from CPUID leaf 1 (clang 14's __builtin_cpu_supports does not know
 * it), asked once: CPUID traps to the hypervisor in a VM, microseconds.  The
 * race on the first calls is benign: every thread stores the same value. */
static bool has_f16c(void) {
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a, b, c, d;
        k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

/* Both kernels need the same features (every AVX2 processor has F16C),
 * so a float layer and a half layer always take the same kind of kernel. */
static bool x86_kernels(int in) {
    /* Bit tests of a table libgcc fills at start-up: cheap per call.  Rows
     * shorter than a vector (the location layer's 2 inputs) are plain
     * scalar work, and the vector kernel's reductions would dominate. */
    return in >= 8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("popcnt") && has_f16c();
}
#endif

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
        finish_row(y, b, r, acc, d);
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

static void dot_rows(const float *W, int in, const float *x, int rows, const float *b, float *y,
                     bool acc) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(in)) {
        dot_rows_avx2(W, in, x, rows, b, y, acc);
        return;
    }
    if (in == 2 && x86_kernels(8)) {
        dot_rows_in2_avx2(W, x, rows, b, y, acc);
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
            dot_rows_half_f16c(W, in, x, out, b, y, accumulate);
            continue;
        }
#endif
        dot_rows_half_generic(W, in, x, out, b, y, accumulate);
    }
}

void ram_linear_forward(const float *X, int ldx, int n, int in, const float *W, const float *b,
                        int out, float *Y, int ldy, bool accumulate) {
    if (n <= RAM_GEMV_MAX_ROWS) {
        for (int i = 0; i < n; i++)
            dot_rows(W, in, X + (size_t)i * ldx, out, b, Y + (size_t)i * ldy, accumulate);
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, X, ldx, W, in, beta, Y,
                ldy);
}

void ram_linear_backward(const float *dY, int ldy, const float *X, int ldx, int n, int in, int out,
                         const float *W, float *dW, float *db, float *dX, int lddx,
                         bool accumulate_dx) {
    ram_blas_prepare_thread();
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

int ram_count_nonzeros(const float *x, int in) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(8)) return count_nonzeros_avx2(x, in);
#endif
    int nnz = 0;
    for (int c = 0; c < in; c++)
        nnz += x[c] != 0.0f;
    return nnz;
}

void ram_transpose(float *dst, const float *src, int rows, int cols) {
#ifdef RAM_X86_KERNELS
    if (x86_kernels(8)) {
        transpose_avx2(dst, src, rows, cols);
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
    nnz = nonzeros_avx2(x, in, nz);
    if (nnz > in - min_zeros) return false; /* the caller's dense kernel is faster */
    if (half)
        dot_cols_half_f16c(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    else
        dot_cols_avx2(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    return true;
#else
    (void)x, (void)in, (void)min_zeros, (void)Wt, (void)half, (void)ldt, (void)r0, (void)r1,
        (void)b, (void)y, (void)accumulate;
    return false;
#endif
}
