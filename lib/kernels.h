/* The kernels behind the linear layers of few rows and the zero-skipping
 * column path: the portable ones and the dispatch (kernels.c), and the
 * CPU-specific ones (kernels_x86.c), which only kernels.c calls.  Internal. */
#ifndef RAM_KERNELS_H
#define RAM_KERNELS_H

#include "internal.h"

/* Every kernel's last step for row r, the base added before the dot product:
 * y[r] = ((acc ? y[r] : 0) + (b ? b[r] : 0)) + d.  The same operations in
 * every kernel, so that kernels agree to the bit. */
static inline void ram_finish_row(float *y, const float *b, int r, bool acc, float d) {
    y[r] = ((acc ? y[r] : 0.0f) + (b ? b[r] : 0.0f)) + d;
}

/* y[r] = base[r] + W[r] . x for r in [0, rows), base as ram_finish_row():
 * the fastest kernel this processor has.  Batch-1 inference is this: W
 * streamed once, nothing to reuse, so sgemm's packing is pure overhead (it
 * was 62 % of a batch-1 classify, callgrind) and OpenBLAS's sgemv leaves
 * part of the memory bandwidth unused.  Every row is summed in the same
 * order whichever rows it is computed with, so a row's value does not
 * depend on how a caller splits the rows between threads. */
RAM_HIDDEN void ram_dot_rows(const float *W, int in, const float *x, int rows, const float *b,
                             float *y, bool acc);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RAM_X86_KERNELS 1
/* AVX2 + FMA + F16C + POPCNT (kernels_x86.c); only when ram_cpu_x86_kernels()
 * and in >= 8.  Row kernels: ram_dot_rows()'s bits, from float or half rows. */
RAM_HIDDEN void ram_x86_dot_rows(const float *W, int in, const float *x, int rows, const float *b,
                                 float *y, bool acc);
RAM_HIDDEN void ram_x86_dot_rows_half(const uint16_t *W, int in, const float *x, int rows,
                                      const float *b, float *y, bool acc);
/* Rows of 2 inputs (the location layer), as the portable loop sums them. */
RAM_HIDDEN void ram_x86_dot_rows_in2(const float *W, const float *x, int rows, const float *b,
                                     float *y, bool acc);
/* Rows [r0, r1) from the column-major Wt (column c's rows at Wt + c * ldt),
 * over the nnz inputs listed in nz (increasing): one FMA chain per row. */
RAM_HIDDEN void ram_x86_dot_cols(const float *Wt, int ldt, const int *nz, int nnz, const float *x,
                                 int r0, int r1, const float *b, float *y, bool acc);
RAM_HIDDEN void ram_x86_dot_cols_half(const uint16_t *Wt, int ldt, const int *nz, int nnz,
                                      const float *x, int r0, int r1, const float *b, float *y,
                                      bool acc);
/* The positions of x's nonzeros (NaN counts) into nz (room for `in`); their count. */
RAM_HIDDEN int ram_x86_nonzeros(const float *x, int in, int *nz);
RAM_HIDDEN int ram_x86_count_nonzeros(const float *x, int in);
RAM_HIDDEN void ram_x86_transpose(float *dst, const float *src, int rows, int cols);
#endif

#endif
