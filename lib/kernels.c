/* The portable kernels behind the linear layers of few rows, the IEEE half
 * and bfloat16 conversions, and the one place where a processor-specific set
 * of kernels (kernels_x86.c, kernels_neon.c) is chosen at run time.  The
 * portable set is the reference: every other set gives its bits, or its
 * own documented order of sums (kernels.h, `fused`). */
#include "kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
/* A weight of form `form` as a float (exact). */
__attribute__((always_inline)) static inline float portable_weight(const void *W, size_t i,
                                                                   ram_wform form) {
    if (form == RAM_WFORM_HALF) return ram_half_to_float(((const uint16_t *)W)[i]);
    if (form == RAM_WFORM_BF16) return ram_bf16_to_float(((const uint16_t *)W)[i]);
    return ((const float *)W)[i];
}

/* The portable kernel, for rows of any form: the same sums in the same
 * order for each.  Inlined into its callers below, so that `form` is a
 * constant in each. */
__attribute__((always_inline)) static inline void dot_rows_portable(const void *W, int in,
                                                                    const float *x, int rows,
                                                                    const float *b, float *y,
                                                                    bool acc, ram_wform form) {
    for (int r = 0; r < rows; r++) {
        const size_t row = (size_t)r * in;
        float s[8] = {0};
        int c = 0;
#define WEIGHT(i) portable_weight(W, row + (i), form)
        /* Each product and each sum assigned to a float: where the compiler
         * evaluates float expressions wider (x87: i386), an assignment is
         * what rounds (ISO C), so the order of sums keeps its meaning. */
        for (; c + 8 <= in; c += 8)
            for (int j = 0; j < 8; j++) {
                const float p = WEIGHT(c + j) * x[c + j];
                s[j] += p;
            }
        const float s01 = s[0] + s[1], s23 = s[2] + s[3], s45 = s[4] + s[5], s67 = s[6] + s[7];
        const float s03 = s01 + s23, s47 = s45 + s67;
        float d = s03 + s47;
        for (; c < in; c++) {
            const float p = WEIGHT(c) * x[c];
            d += p;
        }
#undef WEIGHT
        ram_finish_row(y, b, r, acc, d);
    }
}

static void dot_rows_generic(const float *W, int in, const float *x, int rows, const float *b,
                             float *y, bool acc) {
    dot_rows_portable(W, in, x, rows, b, y, acc, RAM_WFORM_FLOAT);
}

static void dot_rows_half_generic(const uint16_t *W, int in, const float *x, int rows,
                                  const float *b, float *y, bool acc) {
    dot_rows_portable(W, in, x, rows, b, y, acc, RAM_WFORM_HALF);
}

static void dot_rows_bf16_generic(const uint16_t *W, int in, const float *x, int rows,
                                  const float *b, float *y, bool acc) {
    dot_rows_portable(W, in, x, rows, b, y, acc, RAM_WFORM_BF16);
}

static void dot_rows_in2_generic(const float *W, const float *x, int rows, const float *b, float *y,
                                 bool acc) {
    dot_rows_portable(W, 2, x, rows, b, y, acc, RAM_WFORM_FLOAT);
}

int ram_portable_nonzeros(const float *x, int in, int *nz) {
    int nnz = 0;
    for (int c = 0; c < in; c++) /* no branch on the data: the store is always made */
        nz[nnz] = c, nnz += x[c] != 0.0f;
    return nnz;
}

static int count_nonzeros_generic(const float *x, int in) {
    int nnz = 0;
    for (int c = 0; c < in; c++)
        nnz += x[c] != 0.0f;
    return nnz;
}

void ram_portable_transpose(float *dst, const float *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* Locals and restrict: the loop vectorises (four lanes on the baseline)
 * only once the compiler knows that writing w cannot change the constants. */
void ram_portable_adam(const ram_adam_step *s, float *restrict w, float *restrict m1,
                       float *restrict m2, const float *restrict g, size_t n, float *restrict avg) {
    const float scale = s->scale, b1 = s->beta1, nb1 = s->one_minus_beta1, b2 = s->beta2,
                nb2 = s->one_minus_beta2, c1 = s->c1, c2 = s->c2, eps = s->eps, lr = s->lr,
                decay = s->decay, a = s->avg_rate;
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] * scale;
        m1[i] = b1 * m1[i] + nb1 * gi;
        m2[i] = b2 * m2[i] + nb2 * gi * gi;
        w[i] = w[i] * decay - lr * (m1[i] * c1) / (sqrtf(m2[i] * c2) + eps);
        if (avg) avg[i] += a * (w[i] - avg[i]);
    }
}

static const ram_kernel_set portable = {
    .name = "portable",
    .fused = false,
    .dot_rows = dot_rows_generic,
    .dot_rows_half = dot_rows_half_generic,
    .dot_rows_bf16 = dot_rows_bf16_generic,
    .dot_rows_in2 = dot_rows_in2_generic,
    .dot_cols = NULL,
    .dot_cols_half = NULL,
    .dot_cols_bf16 = NULL,
    .nonzeros = ram_portable_nonzeros,
    .count_nonzeros = count_nonzeros_generic,
    .transpose = ram_portable_transpose,
    .adam = ram_portable_adam,
};

int ram_kernel_sets(const ram_kernel_set **sets) {
    int n = 0;
    sets[n++] = &portable;
#ifdef RAM_X86_KERNELS
    if (ram_cpu_x86_kernels()) sets[n++] = &ram_kernels_x86;
    if (ram_cpu_x86_avx512()) sets[n++] = &ram_kernels_avx512;
#endif
#ifdef RAM_NEON_KERNELS
    sets[n++] = &ram_kernels_neon;
#endif
    return n;
}

int ram_kernel_sets_missing(const char **missing) {
    int n = 0;
#ifdef RAM_X86_KERNELS
    if (!ram_cpu_x86_kernels()) missing[n++] = ram_kernels_x86.name;
    if (!ram_cpu_x86_avx512()) missing[n++] = ram_kernels_avx512.name;
#endif
    (void)missing;
    return n;
}

/* The most capable set, or the one RAM_KERNELS names among those that can
 * run here (another name is ignored, with a warning: a program must not
 * stop because of a tuning variable).  Asked once; the race on the first
 * calls is benign, every thread finding the same set. */
static const ram_kernel_set *choose(void) {
    const ram_kernel_set *sets[RAM_KERNEL_SETS_MAX];
    const int n = ram_kernel_sets(sets);
    const char *want = getenv("RAM_KERNELS");
    if (!want || !*want) return sets[n - 1];
    for (int i = 0; i < n; i++)
        if (!strcmp(want, sets[i]->name)) return sets[i];
    ram_log(RAM_LOG_WARN, "RAM_KERNELS=%s: not a kernel set this processor runs; using %s", want,
            sets[n - 1]->name);
    return sets[n - 1];
}

const ram_kernel_set *ram_kernels(void) {
    static const ram_kernel_set *_Atomic chosen;
    const ram_kernel_set *k = atomic_load_explicit(&chosen, memory_order_acquire);
    if (!k) {
        k = choose();
        atomic_store_explicit(&chosen, k, memory_order_release);
    }
    return k;
}

const char *ram_kernels_name(void) {
    return ram_kernels()->name;
}

void ram_dot_rows(const float *W, int in, const float *x, int rows, const float *b, float *y,
                  bool acc) {
    const ram_kernel_set *k = ram_kernels();
    if (in >= 8)
        k->dot_rows(W, in, x, rows, b, y, acc);
    else if (in == 2)
        k->dot_rows_in2(W, x, rows, b, y, acc);
    else
        dot_rows_generic(W, in, x, rows, b, y, acc);
}

void ram_linear_forward_w16(const float *X, int ldx, int n, int in, const uint16_t *W,
                            ram_wform form, const float *b, int out, float *Y, int ldy,
                            bool accumulate) {
    const ram_kernel_set *k = ram_kernels();
    const bool bf16 = form == RAM_WFORM_BF16;
    for (int i = 0; i < n; i++) {
        const float *x = X + (size_t)i * ldx;
        float *y = Y + (size_t)i * ldy;
        if (in >= 8) /* ram_dot_rows()'s choice: its bits on the widened weights */
            (bf16 ? k->dot_rows_bf16 : k->dot_rows_half)(W, in, x, out, b, y, accumulate);
        else
            (bf16 ? dot_rows_bf16_generic : dot_rows_half_generic)(W, in, x, out, b, y, accumulate);
    }
}

void ram_adam(const ram_adam_step *s, float *w, float *m1, float *m2, const float *g, size_t n,
              float *avg) {
    ram_kernels()->adam(s, w, m1, m2, g, n, avg);
}

int ram_count_nonzeros(const float *x, int in) {
    return ram_kernels()->count_nonzeros(x, in);
}

void ram_transpose(float *dst, const float *src, int rows, int cols) {
    ram_kernels()->transpose(dst, src, rows, cols);
}

bool ram_sparse_kernels(void) {
    return ram_kernels()->dot_cols != NULL;
}

bool ram_linear_forward_sparse(const float *x, int in, int min_zeros, const void *Wt,
                               ram_wform form, int ldt, int r0, int r1, const float *b, float *y,
                               bool accumulate) {
    const ram_kernel_set *k = ram_kernels();
    int nz[RAM_SPARSE_MAX_IN];
    if (in > RAM_SPARSE_MAX_IN || !k->dot_cols) return false;
    const int nnz = k->nonzeros(x, in, nz);
    if (nnz > in - min_zeros) return false; /* the caller's dense kernel is faster */
    if (form == RAM_WFORM_HALF)
        k->dot_cols_half(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    else if (form == RAM_WFORM_BF16)
        k->dot_cols_bf16(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    else
        k->dot_cols(Wt, ldt, nz, nnz, x, r0, r1, b, y, accumulate);
    return true;
}
