/* The context network's view of the whole image: average pooling to a
 * small square, one pass over the pixels (or, with cell_samples, a fixed
 * number of them a cell).  Everything after it (one fully connected layer,
 * forward.c and backward.c) costs the same for any image size. */
#include "internal.h"

#include <math.h>

/* Rows (or columns) [*a, *b) of a side of n pixels that cell k of s covers:
 * [k n / s, (k + 1) n / s), or where that is empty (n < s) the pixel under
 * the cell's centre. */
static void cell_span(int k, int s, int n, int *a, int *b) {
    *a = (int)((long)k * n / s);
    *b = (int)((long)(k + 1) * n / s);
    if (*b <= *a) {
        *a = (int)(((long)2 * k + 1) * n / (2L * s));
        if (*a > n - 1) *a = n - 1;
        *b = *a + 1;
    }
}

/* The sum of a cell of bytes, each read as ram_byte_value[], in four
 * running sums instead of one: the single chain of dependent additions was
 * most of a large image's training step.  Every ram_byte_value[] is a
 * multiple of 2^-31 below 1, so while a cell has at most 2^22 pixels every
 * partial sum needs at most 53 bits and is exact in a double: the order of
 * the additions cannot change the result, which is the one-chain sum bit for
 * bit (the caller keeps one chain for larger cells). */
static double cell_sum_u8(const uint8_t *plane, int w, int r0, int r1, int c0, int c1) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = plane + (size_t)r * w;
        int q = c0;
        for (; q + 4 <= c1; q += 4) {
            a0 += ram_byte_value[row[q]];
            a1 += ram_byte_value[row[q + 1]];
            a2 += ram_byte_value[row[q + 2]];
            a3 += ram_byte_value[row[q + 3]];
        }
        for (; q < c1; q++)
            a0 += ram_byte_value[row[q]];
    }
    return (a0 + a1) + (a2 + a3);
}

#define EXACT_CELL (1L << 22) /* pixels of a cell whose byte sums are exact (above) */

/* The mean of the k x k pixels (fewer where the cell is narrower) at the
 * centres of a grid over rows [r0, r1) and columns [c0, c1): the context's
 * cell read as the hard sensor reads a wide cell (cell_samples). */
static double cell_sampled(const float *f, const uint8_t *u8, int w, int r0, int r1, int c0, int c1,
                           int k) {
    const int rows = r1 - r0, cols = c1 - c0;
    const int kr = rows < k ? rows : k, kc = cols < k ? cols : k;
    double sum = 0;
    for (int m = 0; m < kr; m++) {
        const size_t row = (size_t)ram_cell_sample(r0, rows, m, kr) * w;
        for (int n = 0; n < kc; n++) {
            const size_t at = row + (size_t)ram_cell_sample(c0, cols, n, kc);
            sum += f ? f[at] : ram_byte_value[u8[at]];
        }
    }
    return sum / ((double)kr * kc);
}

/* One image's pixels as floats (f) or as bytes (u8, each the float
 * ram_byte_value[] gives: the same sums, so the same bits, either way);
 * k: cell_samples (0: every pixel); stats: the image's ram_contrast_stats()
 * for contrast cells (each cell as the retina's contrast magnitude), or
 * NULL. */
void ram_context_pool(ram_images b, int c, int h, int w, int s, int k, const float *stats,
                      float *out) {
    const float *f = b.f;
    const uint8_t *u8 = b.u8 ? b.u8 : b.each ? b.each[0] : NULL;
    for (int ch = 0; ch < c; ch++) {
        const size_t plane = (size_t)ch * h * w;
        const bool contrast = stats != NULL;
        const float shift = contrast ? stats[2 * ch] : 0.0f,
                    gain = contrast ? stats[2 * ch + 1] : 1.0f;
        for (int i = 0; i < s; i++) {
            int r0, r1;
            cell_span(i, s, h, &r0, &r1);
            for (int j = 0; j < s; j++) {
                int c0, c1;
                cell_span(j, s, w, &c0, &c1);
                float *o = &out[((size_t)ch * s + i) * s + j];
                if (k && (r1 - r0 > k || c1 - c0 > k)) {
                    *o = (float)cell_sampled(f ? f + plane : NULL, f ? NULL : u8 + plane, w, r0, r1,
                                             c0, c1, k);
                    if (contrast) *o = fabsf(*o - shift) * gain;
                    continue;
                }
                double sum = 0;
                if (!f && (long)(r1 - r0) * (c1 - c0) <= EXACT_CELL)
                    sum = cell_sum_u8(u8 + plane, w, r0, r1, c0, c1);
                else
                    for (int r = r0; r < r1; r++)
                        for (int q = c0; q < c1; q++)
                            sum += f ? f[plane + (size_t)r * w + q]
                                     : ram_byte_value[u8[plane + (size_t)r * w + q]];
                *o = (float)(sum / ((double)(r1 - r0) * (c1 - c0)));
                if (contrast) *o = fabsf(*o - shift) * gain;
            }
        }
    }
}
