/* The context network's view of the whole image: average pooling to a
 * small square, one pass over the pixels.  Everything after it (one fully
 * connected layer, forward.c and backward.c) costs the same for any image
 * size. */
#include "internal.h"

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

/* One image's pixels as floats (f) or as bytes (u8, each the float
 * ram_byte_value[] gives: the same sums, so the same bits, either way). */
void ram_context_pool(ram_images b, int c, int h, int w, int s, float *out) {
    const float *f = b.f;
    const uint8_t *u8 = b.u8 ? b.u8 : b.each ? b.each[0] : NULL;
    for (int ch = 0; ch < c; ch++) {
        const size_t plane = (size_t)ch * h * w;
        for (int i = 0; i < s; i++) {
            int r0, r1;
            cell_span(i, s, h, &r0, &r1);
            for (int j = 0; j < s; j++) {
                int c0, c1;
                cell_span(j, s, w, &c0, &c1);
                double sum = 0;
                for (int r = r0; r < r1; r++)
                    for (int q = c0; q < c1; q++)
                        sum += f ? f[plane + (size_t)r * w + q]
                                 : ram_byte_value[u8[plane + (size_t)r * w + q]];
                out[((size_t)ch * s + i) * s + j] = (float)(sum / ((double)(r1 - r0) * (c1 - c0)));
            }
        }
    }
}
