/* The column-major copies of the layers fed by a ReLU, which the
 * zero-skipping kernels read (ram_linear_forward_sparse()): a trained
 * model's ReLUs leave most of their outputs zero (68-85 % for the MNIST
 * models), and a zero input's column need not be read at all.  A state
 * keeps one copy (of its rounded 16-bit weights at a reduced precision), a
 * trainer another, remade whenever the weights change. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

ram_status ram_cols_init(ram_cols *c, const struct ram_model *m) {
    memset(c, 0, sizeof *c);
    if (!ram_sparse_kernels()) return RAM_OK;
    size_t total = 0;
    for (int id = 0; id < RAM_T_COUNT; id++) {
        /* h_g reads the glimpse itself, or the convolutional layer's ReLU
         * (70 % zeros on the trained cluttered60 model). */
        const bool relu_fed = id == RAM_T_G2_W || id == RAM_T_L2_W || id == RAM_T_CX_W ||
                              (id == RAM_T_CH_W && m->p.core == RAM_CORE_RNN) ||
                              (id == RAM_T_G1_W && m->p.conv_channels > 0);
        const size_t count = (size_t)m->t[id].rows * m->t[id].cols;
        c->off[id] = relu_fed && count ? total : RAM_NO_COLS;
        if (relu_fed) total += (count + 15) / 16 * 16; /* each from a 64-byte line (floats) */
    }
    /* Floats, so that the same block holds 16-bit numbers after a switch of
     * precision. */
    c->block = malloc(63 + total * sizeof(float));
    c->data = ram_align64(c->block);
    return c->data ? RAM_OK : ram_fail(RAM_ERR_OUT_OF_MEMORY, "column copy: out of memory");
}

void ram_cols_release(ram_cols *c) {
    free(c->block);
    memset(c, 0, sizeof *c);
}

/* dst (cols x rows) = src (rows x cols) transposed, in tiles of 16 x 16
 * (the 16-bit copies, made once per weight change; the floats, which a
 * trainer remakes every step, go through ram_transpose()). */
static void transpose_16(uint16_t *dst, const uint16_t *src, int rows, int cols) {
    for (int r0 = 0; r0 < rows; r0 += 16)
        for (int c0 = 0; c0 < cols; c0 += 16)
            for (int c = c0; c < c0 + 16 && c < cols; c++)
                for (int r = r0; r < r0 + 16 && r < rows; r++)
                    dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

void ram_cols_refresh(ram_cols *c, const struct ram_model *m, const uint16_t *w16) {
    if (!c->data || c->version == m->version) return;
    for (int id = 0; id < RAM_T_COUNT; id++) {
        if (c->off[id] == RAM_NO_COLS) continue;
        const int rows = m->t[id].rows, cols = m->t[id].cols;
        if (w16)
            transpose_16((uint16_t *)c->data + c->off[id], w16 + m->t[id].off, rows, cols);
        else
            ram_transpose((float *)c->data + c->off[id], m->w + m->t[id].off, rows, cols);
    }
    c->version = m->version;
}
