/* libram's own products for training: the products of a linear layer,
 * Y = X W^T, dX = dY W and dW += dY^T X, on the shapes a trainer's worker
 * sees (tens to a few hundred rows of 256-wide layers), where OpenBLAS's
 * sgemm, built for large matrices, reaches 70-90 % of what the FMA units
 * can do.  Two formats, both for the avx512 kernel set:
 *
 * - float (the default there): each entry's sum one chain over k in
 *   order, as in sgemm's kernels, so a product agrees with sgemm to float
 *   rounding and does not depend on how the batch is split ("Why training
 *   has its own products" in docs/design-notes.md has the measurements);
 * - bfloat16 (ram_trainer_params.products = RAM_PRODUCTS_BF16, CPUs with
 *   AVX512_BF16): all three with their operands rounded to bfloat16 and
 *   float sums.  One VDPBF16PS does 32 multiply-adds of bfloat16 pairs
 *   into 16 float sums, twice a 512-bit FMA's work; the master weights,
 *   the sums and everything outside the products stay float.
 *
 * B (the result's columns) is packed in blocks of 16 columns, each block
 * the 16 columns' values side by side for every k (for bfloat16, every
 * pair of k's: the form VDPBF16PS reads); bfloat16's A (the result's
 * rows) is packed into rows of pairs, float's is read where it lies.  A
 * weight's two packings (for Y and for dX) are made once per training
 * slice and kept (the weights do not change between the slice's forward
 * and backward passes, and a core's weights serve all T steps); the
 * activations' are made per product.  A product that does not fit (a side
 * under 16, more than the scratch holds) goes to sgemm: the caller sees
 * `false` and calls it.  Buffers hold 32-bit words: a pair of bfloat16 or
 * a float. */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RAM_BF16_X86 1
#endif

/* A weight's packing kept for the slice: W's address, its shape and which
 * product it serves (0: Y = X W^T, 1: dX = dY W). */
typedef struct packed_weight {
    const float *w;
    int rows, cols, kind;
    size_t off; /* into cache, in words */
} packed_weight;

enum { MAX_PACKED = 2 * RAM_T_COUNT }; /* a model's weights, two packings each */

struct ram_gemm {
    bool bf16;           /* the format: pairs of bfloat16, else floats */
    bool on;             /* the current slice trains (evaluation stays with sgemm) */
    uint32_t *a, *b;     /* per-product packings */
    size_t a_cap, b_cap; /* in words */
    uint32_t *cache;     /* the weights' packings */
    size_t cache_cap, cache_used;
    packed_weight packed[MAX_PACKED];
    int n_packed;
};

static size_t pairs_of(int k) {
    return ((size_t)k + 1) / 2;
}

/* Words along a summed dimension of k entries. */
static size_t words_of(bool bf16, int k) {
    return bf16 ? pairs_of(k) : (size_t)k;
}

/* Words a B operand of n columns and k summed entries takes: whole blocks. */
static size_t b_size(bool bf16, int n, int k) {
    return ((size_t)n + 15) / 16 * 16 * words_of(bf16, k);
}

/* Only products with every side at least 16 go to the kernel: the
 * location and classifier layers (2 or 10 outputs) and the location
 * network's first layer (2 inputs) are too thin to gain. */
static bool worth_it(int n, int in, int out) {
    return n >= 16 && in >= 16 && out >= 16;
}

#ifdef RAM_BF16_X86
#define BF16_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512bf16")))

/* The products belong to the avx512 kernel set: RAM_KERNELS naming a
 * narrower one turns them off too (and lets a test see the refusal on a
 * CPU that has them). */
bool ram_bf16_supported(void) {
    return ram_cpu_x86_avx512_bf16() && !strcmp(ram_kernels_name(), "avx512");
}

bool ram_gemm_float_supported(void) {
    return ram_cpu_x86_avx512() && !strcmp(ram_kernels_name(), "avx512");
}

static inline __mmask16 mask_of(int count) {
    return count >= 16 ? (__mmask16)0xffff : count <= 0 ? 0 : (__mmask16)((1u << count) - 1);
}

#define F32_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl")))

/* A row of a tile out, both formats: its two blocks' sums, plus C's values
 * when acc, to the columns there are. */
F32_TARGET static inline void put_row(float *y, __m512 c0, __m512 c1, __mmask16 m0, __mmask16 m1,
                                      bool acc) {
    if (acc) {
        c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, y));
        c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, y + 16));
    }
    _mm512_mask_storeu_ps(y, m0, c0);
    _mm512_mask_storeu_ps(y + 16, m1, c1);
}

/* 32 bf16 of (lo, hi) -> 16 pairs (lo[j], hi[j]). */
BF16_TARGET static inline __m512i interleave(__m512 lo, __m512 hi) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* A from `rows` rows of X (k floats each, stride ld): row r's pairs along k
 * at A + r P, the odd k's partner zero. */
BF16_TARGET static void pack_rows(const float *X, int ld, int rows, int k, uint32_t *A) {
    const size_t P = pairs_of(k);
    for (int r = 0; r < rows; r++) {
        const float *x = X + (size_t)r * ld;
        uint32_t *dst = A + (size_t)r * P;
        for (int k0 = 0; k0 < k; k0 += 32) {
            const int left = k - k0;
            const __m512 lo = _mm512_maskz_loadu_ps(mask_of(left), x + k0);
            const __m512 hi = _mm512_maskz_loadu_ps(mask_of(left - 16), x + k0 + 16);
            const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            _mm512_mask_storeu_epi32(dst + k0 / 2, mask_of((left + 1) / 2), v);
        }
    }
}

/* A = S^T from S (k rows of m floats, stride ld): A's row o holds the pairs
 * (S[2p][o], S[2p+1][o]). */
BF16_TARGET static void pack_cols(const float *S, int ld, int k, int m, uint32_t *A) {
    const size_t P = pairs_of(k);
    const __m512i at =
        _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           _mm512_set1_epi32((int)P));
    for (size_t p = 0; p < P; p++) {
        const float *r0 = S + 2 * p * ld, *r1 = r0 + ld;
        const bool second = 2 * p + 1 < (size_t)k;
        for (int o = 0; o < m; o += 16) {
            const __mmask16 mk = mask_of(m - o);
            const __m512 lo = _mm512_maskz_loadu_ps(mk, r0 + o);
            const __m512 hi = second ? _mm512_maskz_loadu_ps(mk, r1 + o) : _mm512_setzero_ps();
            _mm512_mask_i32scatter_epi32(A + (size_t)o * P + p, mk, at, interleave(lo, hi), 4);
        }
    }
}

/* B from S (k rows of n floats, stride ld): block j's pair p holds
 * (S[2p][16 j + c], S[2p+1][16 j + c]) for its 16 columns c. */
BF16_TARGET static void pack_kn(const float *S, int ld, int k, int n, uint32_t *B) {
    const size_t P = pairs_of(k);
    for (int j = 0; j < (n + 15) / 16; j++) {
        const __mmask16 mk = mask_of(n - 16 * j);
        uint32_t *dst = B + (size_t)j * P * 16;
        for (size_t p = 0; p < P; p++) {
            const float *r0 = S + 2 * p * ld + 16 * j;
            const __m512 lo = _mm512_maskz_loadu_ps(mk, r0);
            const __m512 hi =
                2 * p + 1 < (size_t)k ? _mm512_maskz_loadu_ps(mk, r0 + ld) : _mm512_setzero_ps();
            _mm512_storeu_si512((void *)(dst + p * 16), interleave(lo, hi));
        }
    }
}

/* B from W (n rows of k floats, stride ld), for Y = X W^T: block j's pair p
 * holds (W[16 j + c][2p], W[16 j + c][2p+1]).  Each row's 16 pairs at a
 * time go out as one scatter, a column of the block. */
BF16_TARGET static void pack_nk(const float *W, int ld, int n, int k, uint32_t *B) {
    const size_t P = pairs_of(k);
    const __m512i at = _mm512_slli_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 4);
    for (int j = 0; j < (n + 15) / 16; j++) {
        uint32_t *dst = B + (size_t)j * P * 16;
        for (int c = 0; c < 16; c++) {
            const int row = 16 * j + c;
            for (int k0 = 0; k0 < k; k0 += 32) {
                const int left = row < n ? k - k0 : 0; /* rows past n: zeros */
                const float *w = W + (size_t)(row < n ? row : 0) * ld + k0;
                const __m512 lo = _mm512_maskz_loadu_ps(mask_of(left), w);
                const __m512 hi = _mm512_maskz_loadu_ps(mask_of(left - 16), w + 16);
                const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
                const int count = (k - k0 + 1) / 2;
                _mm512_mask_i32scatter_epi32(dst + (size_t)k0 / 2 * 16 + c, mask_of(count), at, v,
                                             4);
            }
        }
    }
}

/* C (m x n, stride ldc) = A B, plus C when acc.  Tiles of 8 rows x 32
 * columns: sixteen accumulators, two B loads and eight broadcast A pairs
 * for sixteen VDPBF16PS per k pair.  An odd last block computes a second
 * block it does not store (B's first again): simpler than a third tile,
 * and the layers' widths are multiples of 32 or large. */
BF16_TARGET static void product(const uint32_t *A, const uint32_t *B, int m, int n, size_t P,
                                float *C, int ldc, bool acc) {
    const int blocks = (n + 15) / 16;
    for (int j = 0; j < blocks; j += 2) {
        const bool two = j + 1 < blocks;
        const __mmask16 m0 = mask_of(n - 16 * j), m1 = two ? mask_of(n - 16 * (j + 1)) : 0;
        const __m512i *b0 = (const __m512i *)(B + (size_t)j * P * 16);
        const __m512i *b1 = two ? b0 + P : b0;
        float *cj = C + 16 * j;
        int r = 0;
        for (; r + 8 <= m; r += 8) {
            __m512 c[8][2];
            for (int i = 0; i < 8; i++)
                c[i][0] = c[i][1] = _mm512_setzero_ps();
            const uint32_t *a = A + (size_t)r * P;
            for (size_t p = 0; p < P; p++) {
                const __m512bh w0 = (__m512bh)_mm512_loadu_si512(b0 + p);
                const __m512bh w1 = (__m512bh)_mm512_loadu_si512(b1 + p);
                /* written out: as a loop over the rows, gcc kept c[][] in memory */
#define ROW(i)                                                                                     \
    do {                                                                                           \
        const __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)(i)*P + p]);                 \
        c[i][0] = _mm512_dpbf16_ps(c[i][0], x, w0);                                                \
        c[i][1] = _mm512_dpbf16_ps(c[i][1], x, w1);                                                \
    } while (0)
                ROW(0);
                ROW(1);
                ROW(2);
                ROW(3);
                ROW(4);
                ROW(5);
                ROW(6);
                ROW(7);
#undef ROW
            }
            for (int i = 0; i < 8; i++)
                put_row(cj + (size_t)(r + i) * ldc, c[i][0], c[i][1], m0, m1, acc);
        }
        for (; r < m; r++) { /* the last rows, one at a time */
            __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
            const uint32_t *a = A + (size_t)r * P;
            for (size_t p = 0; p < P; p++) {
                const __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[p]);
                c0 = _mm512_dpbf16_ps(c0, x, (__m512bh)_mm512_loadu_si512(b0 + p));
                c1 = _mm512_dpbf16_ps(c1, x, (__m512bh)_mm512_loadu_si512(b1 + p));
            }
            put_row(cj + (size_t)r * ldc, c0, c1, m0, m1, acc);
        }
    }
}

/* dst's 16 rows (stride 16) = the transpose of r's 16 rows of 16: pairs,
 * then quads within 128-bit lanes, then the lanes. */
F32_TARGET static void transpose16(__m512 r[16], float *dst) {
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8)
        for (int q = 0; q < 4; q++) {
            t[i + q] = _mm512_shuffle_f32x4(u[i + q], u[i + 4 + q], 0x88);
            t[i + 4 + q] = _mm512_shuffle_f32x4(u[i + q], u[i + 4 + q], 0xDD);
        }
    for (int q = 0; q < 8; q++) {
        _mm512_store_ps(dst + q * 16, _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88));
        _mm512_store_ps(dst + (8 + q) * 16, _mm512_shuffle_f32x4(t[q], t[8 + q], 0xDD));
    }
}

/* B from W (n rows of k floats, stride ld), for Y = X W^T: block j's row p
 * holds W[16 j + c][p] for its 16 columns c (zeros past n), transposed 16
 * by 16 in registers (written one float at a time, the packing took as
 * long as a 32-row product). */
F32_TARGET static void pack_nk_f32(const float *W, int ld, int n, int k, float *B) {
    for (int j = 0; j < (n + 15) / 16; j++) {
        float *dst = B + (size_t)j * k * 16;
        const int rows = n - 16 * j < 16 ? n - 16 * j : 16;
        const float *w = W + (size_t)16 * j * ld;
        int p = 0;
        for (; p + 16 <= k; p += 16) {
            __m512 r[16];
            for (int c = 0; c < 16; c++)
                r[c] = c < rows ? _mm512_loadu_ps(w + (size_t)c * ld + p) : _mm512_setzero_ps();
            transpose16(r, dst + (size_t)p * 16);
        }
        for (; p < k; p++) /* the last k's */
            for (int c = 0; c < 16; c++)
                dst[(size_t)p * 16 + c] = c < rows ? w[(size_t)c * ld + p] : 0.0f;
    }
}

/* B from S (k rows of n floats, stride ld): block j's row p holds
 * S[p][16 j + c] (zeros past n). */
F32_TARGET static void pack_kn_f32(const float *S, int ld, int k, int n, float *B) {
    for (int j = 0; j < (n + 15) / 16; j++) {
        const __mmask16 mk = mask_of(n - 16 * j);
        float *dst = B + (size_t)j * k * 16;
        for (int p = 0; p < k; p++)
            _mm512_store_ps(dst + (size_t)p * 16,
                            _mm512_maskz_loadu_ps(mk, S + (size_t)p * ld + 16 * j));
    }
}

/* C (m x n, stride ldc) = A B, plus C when acc.  A's entry (i, p) at
 * A[i ra + p ka] (a matrix or its transpose, read where it lies); B packed
 * by pack_nk_f32() or pack_kn_f32().  Tiles of 8 rows x 32 columns:
 * sixteen accumulators, two B loads and eight broadcast A values for
 * sixteen FMAs per k, each entry's sum one chain over k in order.  As in
 * product(), an odd last block computes a second block it does not
 * store. */
F32_TARGET static void product_f32(const float *A, size_t ra, size_t ka, const float *B, int m,
                                   int n, int k, float *C, int ldc, bool acc) {
    const int blocks = (n + 15) / 16;
    for (int j = 0; j < blocks; j += 2) {
        const bool two = j + 1 < blocks;
        const __mmask16 m0 = mask_of(n - 16 * j), m1 = two ? mask_of(n - 16 * (j + 1)) : 0;
        const float *b0 = B + (size_t)j * k * 16;
        const float *b1 = two ? b0 + (size_t)k * 16 : b0;
        float *cj = C + 16 * j;
        int r = 0;
        for (; r + 8 <= m; r += 8) {
            __m512 c[8][2];
            for (int i = 0; i < 8; i++)
                c[i][0] = c[i][1] = _mm512_setzero_ps();
            const float *a = A + (size_t)r * ra;
            for (int p = 0; p < k; p++) {
                const __m512 w0 = _mm512_load_ps(b0 + (size_t)p * 16);
                const __m512 w1 = _mm512_load_ps(b1 + (size_t)p * 16);
                const float *ap = a + (size_t)p * ka;
#define ROW(i)                                                                                     \
    do {                                                                                           \
        const __m512 x = _mm512_set1_ps(ap[(size_t)(i)*ra]);                                       \
        c[i][0] = _mm512_fmadd_ps(x, w0, c[i][0]);                                                 \
        c[i][1] = _mm512_fmadd_ps(x, w1, c[i][1]);                                                 \
    } while (0)
                ROW(0);
                ROW(1);
                ROW(2);
                ROW(3);
                ROW(4);
                ROW(5);
                ROW(6);
                ROW(7);
#undef ROW
            }
            for (int i = 0; i < 8; i++)
                put_row(cj + (size_t)(r + i) * ldc, c[i][0], c[i][1], m0, m1, acc);
        }
        for (; r < m; r++) { /* the last rows, one at a time */
            __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
            const float *a = A + (size_t)r * ra;
            for (int p = 0; p < k; p++) {
                const __m512 x = _mm512_set1_ps(a[(size_t)p * ka]);
                c0 = _mm512_fmadd_ps(x, _mm512_load_ps(b0 + (size_t)p * 16), c0);
                c1 = _mm512_fmadd_ps(x, _mm512_load_ps(b1 + (size_t)p * 16), c1);
            }
            put_row(cj + (size_t)r * ldc, c0, c1, m0, m1, acc);
        }
    }
}

/* W's packing of `kind`, in the format, for this slice: found, or made
 * into the cache (or, when the cache is full, into the per-product
 * buffer). */
static const uint32_t *packed(ram_gemm *s, const float *W, int rows, int cols, int kind) {
    for (int i = 0; i < s->n_packed; i++) {
        const packed_weight *e = &s->packed[i];
        if (e->w == W && e->rows == rows && e->cols == cols && e->kind == kind)
            return s->cache + e->off;
    }
    /* kind 0: B = W^T (n = rows, k = cols); kind 1: B = W (k = rows, n = cols) */
    const size_t need = kind == 0 ? b_size(s->bf16, rows, cols) : b_size(s->bf16, cols, rows);
    uint32_t *dst = s->b;
    if (s->n_packed < MAX_PACKED && s->cache_used + need <= s->cache_cap) {
        dst = s->cache + s->cache_used;
        s->packed[s->n_packed++] = (packed_weight){W, rows, cols, kind, s->cache_used};
        s->cache_used += need;
    }
    if (s->bf16 && kind == 0)
        pack_nk(W, cols, rows, cols, dst);
    else if (s->bf16)
        pack_kn(W, cols, rows, cols, dst);
    else if (kind == 0)
        pack_nk_f32(W, cols, rows, cols, (float *)dst);
    else
        pack_kn_f32(W, cols, rows, cols, (float *)dst);
    return dst;
}

/* C (+)= A B with B the weight W (out x in): kind 0, Y = X W^T (A: n x in,
 * C: n x out); kind 1, dX = dY W (A: n x out, C: n x in). */
static bool weight_product(ram_gemm *s, const float *A, int lda, int n, int in, int out,
                           const float *W, int kind, float *C, int ldc, bool acc) {
    const int k = kind == 0 ? in : out, width = kind == 0 ? out : in;
    if (!s || !s->on || !worth_it(n, in, out) || (s->bf16 && (size_t)n * pairs_of(k) > s->a_cap) ||
        b_size(s->bf16, width, k) > s->b_cap)
        return false;
    const uint32_t *B = packed(s, W, out, in, kind);
    if (s->bf16) {
        pack_rows(A, lda, n, k, s->a);
        product(s->a, B, n, width, pairs_of(k), C, ldc, acc);
    } else {
        product_f32(A, (size_t)lda, 1, (const float *)B, n, width, k, C, ldc, acc);
    }
    return true;
}

bool ram_gemm_forward(ram_gemm *s, const float *X, int ldx, int n, int in, const float *W, int out,
                      float *Y, int ldy, bool acc) {
    return weight_product(s, X, ldx, n, in, out, W, 0, Y, ldy, acc);
}

bool ram_gemm_backward_dx(ram_gemm *s, const float *dY, int ldy, int n, int in, int out,
                          const float *W, float *dX, int lddx, bool acc) {
    return weight_product(s, dY, ldy, n, in, out, W, 1, dX, lddx, acc);
}

/* Float packs X as B's blocks (read where it lies, its rows a layer's
 * width apart, the tiles' loads missed the caches: in training that took
 * 1.2x the time) and reads dY^T's rows, dY's columns, where they lie. */
bool ram_gemm_backward_dw(ram_gemm *s, const float *dY, int ldy, const float *X, int ldx, int n,
                          int in, int out, float *dW) {
    if (!s || !s->on || !worth_it(n, in, out)) return false;
    if (!s->bf16) {
        if (b_size(false, in, n) > s->b_cap) return false;
        pack_kn_f32(X, ldx, n, in, (float *)s->b);
        product_f32(dY, 1, (size_t)ldy, (const float *)s->b, out, in, n, dW, in, true);
        return true;
    }
    if ((size_t)out * pairs_of(n) > s->a_cap || b_size(true, in, n) > s->b_cap) return false;
    pack_cols(dY, ldy, n, out, s->a);
    pack_kn(X, ldx, n, in, s->b);
    product(s->a, s->b, out, in, pairs_of(n), dW, in, true);
    return true;
}
#else
bool ram_bf16_supported(void) {
    return false;
}

bool ram_gemm_float_supported(void) {
    return false;
}

bool ram_gemm_forward(ram_gemm *s, const float *X, int ldx, int n, int in, const float *W, int out,
                      float *Y, int ldy, bool acc) {
    (void)s, (void)X, (void)ldx, (void)n, (void)in, (void)W, (void)out, (void)Y, (void)ldy,
        (void)acc;
    return false;
}

bool ram_gemm_backward_dx(ram_gemm *s, const float *dY, int ldy, int n, int in, int out,
                          const float *W, float *dX, int lddx, bool acc) {
    (void)s, (void)dY, (void)ldy, (void)n, (void)in, (void)out, (void)W, (void)dX, (void)lddx,
        (void)acc;
    return false;
}

bool ram_gemm_backward_dw(ram_gemm *s, const float *dY, int ldy, const float *X, int ldx, int n,
                          int in, int out, float *dW) {
    (void)s, (void)dY, (void)ldy, (void)X, (void)ldx, (void)n, (void)in, (void)out, (void)dW;
    return false;
}
#endif

int ram_bf16_products_supported(void) {
    return ram_bf16_supported();
}

/* Sized from the weight tensors: the per-product buffers for the widest of
 * the products of any of them at max_n rows (float's A is not packed, nor
 * is its dW done here), the cache for both packings of each. */
ram_status ram_gemm_create(const ram_tensor_info *t, int count, int max_n, bool bf16,
                           ram_gemm **out) {
    *out = NULL;
    if (bf16 && !ram_bf16_supported())
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: bfloat16 products need a CPU with AVX512_BF16 and the "
                        "avx512 kernel set; here the CPU %s it and the kernels are %s (use "
                        "RAM_PRODUCTS_FLOAT)",
                        ram_cpu_x86_avx512_bf16() ? "has" : "lacks", ram_kernels_name());
    if (!bf16 && !ram_gemm_float_supported())
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: libram's float products need the avx512 kernel set "
                        "(here: %s)",
                        ram_kernels_name());
    ram_gemm *s = calloc(1, sizeof *s);
    if (!s) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    s->bf16 = bf16;
    for (int id = 0; id < count; id++) {
        const int rows = t[id].rows, cols = t[id].cols;
        if (cols <= 1 || !worth_it(max_n, cols, rows)) continue; /* biases, thin layers */
        const size_t a[] = {(size_t)max_n * pairs_of(cols), (size_t)max_n * pairs_of(rows),
                            (size_t)rows * pairs_of(max_n)};
        const size_t b[] = {b_size(bf16, rows, cols), b_size(bf16, cols, rows),
                            b_size(bf16, cols, max_n)};
        for (int i = 0; i < 3; i++) {
            if (bf16 && a[i] > s->a_cap) s->a_cap = a[i];
            if (b[i] > s->b_cap) s->b_cap = b[i];
        }
        s->cache_cap += b[0] + b[1];
    }
    /* 64-byte multiples for aligned_alloc; at least one line each */
    const size_t line = 16;
    s->a_cap = (s->a_cap + line) / line * line;
    s->b_cap = (s->b_cap + line) / line * line;
    s->cache_cap = (s->cache_cap + line) / line * line;
    s->a = aligned_alloc(64, s->a_cap * sizeof(uint32_t));
    s->b = aligned_alloc(64, s->b_cap * sizeof(uint32_t));
    s->cache = aligned_alloc(64, s->cache_cap * sizeof(uint32_t));
    if (!s->a || !s->b || !s->cache) {
        ram_gemm_free(s);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    }
    *out = s;
    return RAM_OK;
}

void ram_gemm_free(ram_gemm *s) {
    if (!s) return;
    free(s->a);
    free(s->b);
    free(s->cache);
    free(s);
}

void ram_gemm_begin(ram_gemm *s, bool on) {
    if (!s) return;
    s->on = on;
    s->n_packed = 0;
    s->cache_used = 0;
}
