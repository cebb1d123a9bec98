/* The recurrent attention model: parameter layout, initialisation, the
 * forward pass over T glimpses and backpropagation through time.  The
 * location policy's sampling noise and the losses live in the trainer and
 * reinforce.c; this file only moves activations and gradients. */
#include "internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void model_defaults(ram_model_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->channels = 1;
    p->height = 28;
    p->width = 28;
    ram_glimpse_params_init(&p->glimpse);
    p->form = RAM_GLIMPSE_ADDITIVE;
    p->glimpse_hidden = 128;
    p->loc_hidden = 128;
    p->glimpse_out = 256;
    p->core_hidden = 256;
    p->core = RAM_CORE_RNN;
    p->glimpses = 6;
    p->classes = 10;
    p->bound = RAM_BOUND_TANH;
    p->loc_std = 0.17f;
    p->loc_range_pixels = 13.0f;
    p->init_scale = 0.1f;
    p->seed = 1;
}

void ram_model_params_init_sized(ram_model_params *p, size_t size) {
    if (!p || size < sizeof(size_t)) return;
    ram_model_params d;
    model_defaults(&d);
    if (size > sizeof d) size = sizeof d; /* a newer caller: we fill what we know */
    d.struct_size = size;
    memcpy(p, &d, size);
}

#define CHECK_RANGE(v, lo, hi)                                                                     \
    if ((v) < (lo) || (v) > (hi))                                                                  \
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: " #v " = %ld not in [%ld, %ld]",         \
                        (long)(v), (long)(lo), (long)(hi));

ram_status ram_model_validate(const ram_model_params *p) {
    CHECK_RANGE(p->channels, 1, 4096);
    CHECK_RANGE(p->height, 1, 65536);
    CHECK_RANGE(p->width, 1, 65536);
    if ((double)p->channels * p->height * p->width > 1e9)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: images of %d x %d x %d are too large",
                        p->channels, p->height, p->width);
    struct ram_glimpse g;
    ram_status s = ram_glimpse_init(&g, &p->glimpse);
    if (s) return s;
    const double rho = (double)p->channels * g.depth * g.patch * g.patch;
    if (rho > 1 << 24)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: a glimpse of %.0f values is too large",
                        rho);
    CHECK_RANGE(p->form, RAM_GLIMPSE_ADDITIVE, RAM_GLIMPSE_CONCAT);
    CHECK_RANGE(p->glimpse_hidden, 1, 65536);
    CHECK_RANGE(p->loc_hidden, 1, 65536);
    CHECK_RANGE(p->glimpse_out, 1, 65536);
    CHECK_RANGE(p->core_hidden, 1, 16384);
    CHECK_RANGE(p->core, RAM_CORE_RNN, RAM_CORE_LSTM);
    CHECK_RANGE(p->glimpses, 1, 64);
    CHECK_RANGE(p->classes, 2, 65536);
    CHECK_RANGE(p->bound, RAM_BOUND_HARDTANH, RAM_BOUND_TANH);
    if (!(p->loc_std >= 1e-4f && p->loc_std <= 10.0f)) /* 1/std^2 must stay finite */
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: loc_std %g not in [1e-4, 10]",
                        (double)p->loc_std);
    if (!(p->loc_range_pixels >= 0.0f && p->loc_range_pixels <= 1e6f))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: loc_range_pixels %g not in [0, 1e6]",
                        (double)p->loc_range_pixels);
    if (!isfinite(p->init_scale) || p->init_scale < 0.0f || p->init_scale > 10.0f)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: init_scale %g not in [0, 10]",
                        (double)p->init_scale);
    return RAM_OK;
}

void ram_model_layout(struct ram_model *m, const ram_model_params *p) {
    m->p = *p;
    ram_glimpse_init(&m->sensor, &p->glimpse);
    m->rho_size = p->channels * m->sensor.depth * m->sensor.patch * m->sensor.patch;
    m->hgl = p->glimpse_hidden + p->loc_hidden;
    m->gates = p->core == RAM_CORE_LSTM ? 4 * p->core_hidden : p->core_hidden;
    m->range_x = p->loc_range_pixels > 0 ? p->loc_range_pixels * 2.0f / p->width : 1.0f;
    m->range_y = p->loc_range_pixels > 0 ? p->loc_range_pixels * 2.0f / p->height : 1.0f;
    const int Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out, H = p->core_hidden,
              K = p->classes;
    const bool concat = p->form == RAM_GLIMPSE_CONCAT;
    const int shape[RAM_T_COUNT][2] = {
        [RAM_T_G1_W] = {Hg, m->rho_size},
        [RAM_T_G1_B] = {Hg, 1},
        [RAM_T_L1_W] = {Hl, 2},
        [RAM_T_L1_B] = {Hl, 1},
        [RAM_T_G2_W] = {G, concat ? m->hgl : Hg},
        [RAM_T_G2_B] = {G, 1},
        [RAM_T_L2_W] = {concat ? 0 : G, Hl},
        [RAM_T_L2_B] = {concat ? 0 : G, 1},
        [RAM_T_CX_W] = {m->gates, G},
        [RAM_T_CH_W] = {m->gates, H},
        [RAM_T_C_B] = {m->gates, 1},
        [RAM_T_LOC_W] = {2, H},
        [RAM_T_LOC_B] = {2, 1},
        [RAM_T_CLS_W] = {K, H},
        [RAM_T_CLS_B] = {K, 1},
    };
    size_t off = 0;
    for (int i = 0; i < RAM_T_COUNT; i++) {
        m->t[i].off = off;
        m->t[i].rows = shape[i][0];
        m->t[i].cols = shape[i][1];
        off += (size_t)shape[i][0] * shape[i][1];
    }
    m->n_params = off;
}

ram_status ram_model_alloc(const ram_model_params *p, struct ram_model **out) {
    ram_status s = ram_model_validate(p);
    if (s) return s;
    ram_blas_check_once();
    struct ram_model *m = calloc(1, sizeof *m);
    if (!m) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "model: out of memory");
    ram_model_layout(m, p);
    /* Weights start on a cache line: batch-1 inference streams every row
     * with 32-byte loads, a third faster aligned (ram_dot_rows() in kernels.c);
     * rows stay aligned whenever the layer widths are multiples of 16. */
    m->w_block = calloc(m->n_params + 16, sizeof(float));
    m->w = ram_align64(m->w_block);
    if (!m->w) {
        size_t n = m->n_params;
        free(m);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "model: %zu parameters: out of memory", n);
    }
    ram_model_touch(m);
    *out = m;
    return RAM_OK;
}

/* The only global that changes: a counter, so that a version names one set
 * of weights in the whole process (a state may be used with several models,
 * and a freed model's address can come back). */
static _Atomic uint64_t weights_clock;

void ram_model_touch(struct ram_model *m) {
    m->version = atomic_fetch_add(&weights_clock, 1) + 1;
}

ram_status ram_model_create(const ram_model_params *user, ram_model **out) {
    if (!out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_create: out is NULL");
    ram_model_params p;
    ram_model_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "model_create");
    if (s) return s;
    struct ram_model *m;
    if ((s = ram_model_alloc(&p, &m))) return s;
    ram_rng rng;
    ram_rng_seed(&rng, p.seed);
    for (size_t i = 0; i < m->n_params; i++)
        m->w[i] = (float)((2 * ram_rng_uniform(&rng) - 1) * p.init_scale);
    if (p.core == RAM_CORE_LSTM) {
        /* A forget-gate bias of 1 keeps the cell's memory early in training
         * (Jozefowicz et al. 2015). */
        float *b = ram_param(m, m->w, RAM_T_C_B) + p.core_hidden;
        for (int j = 0; j < p.core_hidden; j++)
            b[j] = 1.0f;
    }
    *out = m;
    return RAM_OK;
}

void ram_model_free(ram_model *m) {
    if (!m) return;
    free(m->w_block);
    free(m);
}

ram_status ram_model_get_params(const ram_model *m, ram_model_params *p) {
    if (!m || !p) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_get_params: NULL argument");
    if (p->struct_size < sizeof(size_t))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_get_params: struct_size not set");
    size_t n = p->struct_size < sizeof *p ? p->struct_size : sizeof *p;
    memcpy((char *)p + sizeof(size_t), (const char *)&m->p + sizeof(size_t), n - sizeof(size_t));
    return RAM_OK;
}

size_t ram_model_param_count(const ram_model *m) {
    return m ? m->n_params : 0;
}

/* ---- workspaces ---- */

void ram_ws_release(ram_ws *ws) {
    float **bufs[] = {&ws->rho,     &ws->loc, &ws->mupre, &ws->mu,       &ws->hgl,     &ws->g,
                      &ws->gates,   &ws->h,   &ws->c,     &ws->probs,    &ws->aux,     &ws->dh,
                      &ws->dh2,     &ws->dc,  &ws->dc2,   &ws->dgates,   &ws->dg,      &ws->dhgl,
                      &ws->dlogits, &ws->dmu, &ws->grad,  &ws->gather_x, &ws->gather_y};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(ws->gather_at);
    ws->gather_at = NULL;
}

ram_status ram_ws_init(ram_ws *ws, const struct ram_model *m, int max_n, bool train) {
    memset(ws, 0, sizeof *ws);
    ws->max_n = max_n;
    const size_t n = (size_t)max_n, T = m->p.glimpses, H = m->p.core_hidden;
    const bool lstm = m->p.core == RAM_CORE_LSTM;
    const bool gather = max_n > RAM_GEMV_MAX_ROWS && ram_sparse_kernels();
    const int G = m->p.glimpse_out, widest_in = m->hgl > G ? m->hgl : G;
    const size_t gather_in = (size_t)(widest_in > (int)H ? widest_in : (int)H),
                 gather_out = (size_t)(G > m->gates ? G : m->gates);
    struct {
        float **p;
        size_t count;
    } need[] = {
        {&ws->rho, T * n * m->rho_size},
        {&ws->loc, T * n * 2},
        {&ws->mupre, T * n * 2},
        {&ws->mu, T * n * 2},
        {&ws->hgl, T * n * m->hgl},
        {&ws->g, T * n * m->p.glimpse_out},
        {&ws->gates, lstm ? T * n * m->gates : 0},
        {&ws->h, (T + 1) * n * H},
        {&ws->c, lstm ? (T + 1) * n * H : 0},
        {&ws->probs, n * m->p.classes},
        {&ws->aux, T * n * 2},
        {&ws->gather_x, gather ? n * gather_in : 0},
        {&ws->gather_y, gather ? n * gather_out : 0},
        {&ws->dh, train ? n * H : 0},
        {&ws->dh2, train ? n * H : 0},
        {&ws->dc, train && lstm ? n * H : 0},
        {&ws->dc2, train && lstm ? n * H : 0},
        {&ws->dgates, train && lstm ? n * m->gates : 0},
        {&ws->dg, train ? n * m->p.glimpse_out : 0},
        {&ws->dhgl, train ? n * m->hgl : 0},
        {&ws->dlogits, train ? n * m->p.classes : 0},
        {&ws->dmu, train ? n * 2 : 0},
        {&ws->grad, train ? m->n_params : 0},
    };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        if (!need[i].count) continue;
        *need[i].p = calloc(need[i].count, sizeof(float));
        if (!*need[i].p) {
            ram_ws_release(ws);
            return ram_fail(RAM_ERR_OUT_OF_MEMORY, "workspace for batch %d: out of memory", max_n);
        }
    }
    if (gather && !(ws->gather_at = malloc(n * sizeof(int)))) {
        ram_ws_release(ws);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "workspace for batch %d: out of memory", max_n);
    }
    return RAM_OK;
}

/* ---- forward / backward ---- */

static inline float bound_fwd(ram_loc_bound b, float x) {
    if (b == RAM_BOUND_TANH) return tanhf(x);
    return x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
}

static inline float bound_grad(ram_loc_bound b, float pre, float post) {
    if (b == RAM_BOUND_TANH) return 1.0f - post * post;
    return pre > -1.0f && pre < 1.0f ? 1.0f : 0.0f;
}

static inline float clamp1(float x) {
    return x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
}

/* The column-major copies of a state (ram_state): for each layer whose
 * input is a ReLU's output, its offset in the copy, or RAM_NO_COLS. */
#define RAM_NO_COLS SIZE_MAX

ram_status ram_cols_init(ram_cols *c, const struct ram_model *m) {
    memset(c, 0, sizeof *c);
    if (!ram_sparse_kernels()) return RAM_OK;
    size_t total = 0;
    for (int id = 0; id < RAM_T_COUNT; id++) {
        const bool relu_fed = id == RAM_T_G2_W || id == RAM_T_L2_W || id == RAM_T_CX_W ||
                              (id == RAM_T_CH_W && m->p.core == RAM_CORE_RNN);
        const size_t count = (size_t)m->t[id].rows * m->t[id].cols;
        c->off[id] = relu_fed && count ? total : RAM_NO_COLS;
        if (relu_fed) total += (count + 15) / 16 * 16; /* each from a 64-byte line (floats) */
    }
    /* Floats, so that the same block holds halves after a switch to HALF. */
    c->block = malloc(63 + total * sizeof(float));
    c->data = ram_align64(c->block);
    return c->data ? RAM_OK : ram_fail(RAM_ERR_OUT_OF_MEMORY, "column copy: out of memory");
}

void ram_cols_release(ram_cols *c) {
    free(c->block);
    memset(c, 0, sizeof *c);
}

/* dst (cols x rows) = src (rows x cols) transposed, in tiles of 16 x 16
 * (HALF's copies, made once per weight change; the floats, which a trainer
 * remakes every step, go through ram_transpose()). */
static void transpose_halves(uint16_t *dst, const uint16_t *src, int rows, int cols) {
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
            transpose_halves((uint16_t *)c->data + c->off[id], w16 + m->t[id].off, rows, cols);
        else
            ram_transpose((float *)c->data + c->off[id], m->w + m->t[id].off, rows, cols);
    }
    c->version = m->version;
}

/* One forward pass, as thread k of nt.  The glimpses are split by image and
 * every layer by output rows, with a barrier after each layer that the next
 * one reads: four per glimpse (two at batch 1 with a small first layer:
 * SMALL_G1_FLOATS below).  With nt = 1 (the trainer's case) each layer
 * is one call, as it always was. */
typedef struct fwd_job {
    const struct ram_model *m;
    const float *w;      /* the parameters used: m->w, or a state's rounded copy */
    const uint16_t *w16; /* the same in half precision for small batches, or NULL */
    /* Column-major copies (halves when w16, else floats) of the layers fed
     * by a ReLU, or NULL (none, or no sparse kernels to read them). */
    const ram_cols *cols;
    ram_ws *ws;
    const float *images;
    int n;
    ram_loc_mode mode;
    const float *src; /* eps (SAMPLE) or locations (FIXED), T x n x 2 */
    float std;
    ram_team *team;
} fwd_job;

/* Part k of nt of [0, total), cut at multiples of `align` (16 floats, one
 * cache line, so that threads do not write the same lines). */
static void split(int total, int k, int nt, int align, int *a, int *b) {
    *a = k == 0 ? 0 : (int)((long)total * k / nt / align * align);
    *b = k == nt - 1 ? total : (int)((long)total * (k + 1) / nt / align * align);
}

/* linear_rows() with the row kernels (or sgemm), into Y's columns from r0. */
static void linear_rows_dense(const fwd_job *j, const float *X, int ldx, int n, int in,
                              enum ram_tensor_id id, enum ram_tensor_id bid, int r0, int r1,
                              float *Y, int ldy, bool acc) {
    const size_t off = j->m->t[id].off + (size_t)r0 * in;
    const float *b = bid < RAM_T_COUNT ? j->w + j->m->t[bid].off + r0 : NULL;
    if (j->w16 && n <= RAM_GEMV_MAX_ROWS)
        ram_linear_forward_half(X, ldx, n, in, j->w16 + off, b, r1 - r0, Y, ldy, acc);
    else
        ram_linear_forward(X, ldx, n, in, j->w + off, b, r1 - r0, Y, ldy, acc);
}

/* Rows [r0, r1) of linear layer `id` (its weight tensor; bias `bid`, or
 * RAM_T_COUNT for none): W's rows, b's entries, Y's columns.  A small batch
 * reads the half-precision copy when the job has one.  Layers fed by a
 * ReLU read the column-major copy, when the job has one, for each image
 * whose input has zeros enough: a quarter in a small batch, where the
 * alternative is the row kernels reading all of W for one image; 5/8 in a
 * large one, where it is one sgemm for the images too dense for it, which
 * are gathered for it, or for all of them when fewer than a quarter have
 * zeros enough (a fresh model's half zeros: then gathering costs more than
 * the few sparse images save).  (Batch 256 on a Zen 1, every image through the
 * column kernel: 1.14x sgemm's time with the half zeros of random weights,
 * 0.56x with the 68-85 % of a trained MNIST model; sgemm reuses each weight
 * it loads for many images, the column kernel for one.) */
static void linear_rows(const fwd_job *j, const float *X, int ldx, int n, int in,
                        enum ram_tensor_id id, enum ram_tensor_id bid, int r0, int r1, float *Y,
                        int ldy, bool acc) {
    if (r1 <= r0) return;
    const bool small = n <= RAM_GEMV_MAX_ROWS;
    if (!j->cols || j->cols->off[id] == RAM_NO_COLS || in > RAM_SPARSE_MAX_IN ||
        (!small && !j->ws->gather_at)) {
        linear_rows_dense(j, X, ldx, n, in, id, bid, r0, r1, Y + r0, ldy, acc);
        return;
    }
    const bool half = j->w16 != NULL;
    const char *wt = (const char *)j->cols->data + j->cols->off[id] * (half ? 2 : 4);
    const float *b = bid < RAM_T_COUNT ? j->w + j->m->t[bid].off : NULL;
    const int min_zeros = small ? in / 4 : in * 5 / 8, rows = j->m->t[id].rows, width = r1 - r0;
    int dense = 0, *at = j->ws->gather_at;
    if (!small) {
        /* Which images are too dense, before any work: if most are, the
         * whole call is one sgemm. */
        for (int i = 0; i < n; i++)
            if (ram_count_nonzeros(X + (size_t)i * ldx, in) > in - min_zeros) at[dense++] = i;
        if (n - dense < (n + 3) / 4) {
            linear_rows_dense(j, X, ldx, n, in, id, bid, r0, r1, Y + r0, ldy, acc);
            return;
        }
    }
    for (int i = 0, next = 0; i < n; i++) {
        const float *x = X + (size_t)i * ldx;
        float *y = Y + (size_t)i * ldy;
        if (!small && next < dense && at[next] == i) { /* gathered below */
            next++;
            continue;
        }
        if (!ram_linear_forward_sparse(x, in, min_zeros, wt, half, rows, r0, r1, b, y, acc))
            linear_rows_dense(j, x, ldx, 1, in, id, bid, r0, r1, y + r0, ldy, acc);
    }
    if (dense > 0) {
        float *gx = j->ws->gather_x, *gy = j->ws->gather_y;
        for (int k = 0; k < dense; k++) {
            memcpy(gx + (size_t)k * in, X + (size_t)at[k] * ldx, sizeof(float) * in);
            if (acc)
                memcpy(gy + (size_t)k * width, Y + (size_t)at[k] * ldy + r0, sizeof(float) * width);
        }
        linear_rows_dense(j, gx, in, dense, in, id, bid, r0, r1, gy, width, acc);
        for (int k = 0; k < dense; k++)
            memcpy(Y + (size_t)at[k] * ldy + r0, gy + (size_t)k * width, sizeof(float) * width);
    }
}

/* Where `count` images look next: mu_t from their h_{t-1} rows through the
 * location network and its bound, then l_t (the mean, a sample around it,
 * or the given location); src holds these images' noise or locations. */
static void locate(const fwd_job *j, const float *h, int count, const float *src, float *mupre,
                   float *mu, float *l) {
    const struct ram_model *m = j->m;
    const int H = m->p.core_hidden;
    linear_rows(j, h, H, count, H, RAM_T_LOC_W, RAM_T_LOC_B, 0, 2, mupre, 2, false);
    for (int i = 0; i < 2 * count; i++) {
        mu[i] = bound_fwd(m->p.bound, mupre[i]);
        l[i] = j->mode == RAM_LOC_MEAN     ? mu[i]
               : j->mode == RAM_LOC_SAMPLE ? clamp1(mu[i] + j->std * src[i])
                                           : src[i];
    }
}

/* Rows [o0, o1) of the glimpse network's second layer, g = relu(...), from
 * the relu'd [h_g; h_l] of the batch. */
static void glimpse_net_2(const fwd_job *j, const float *hgl, float *g, int o0, int o1) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int n = j->n, HG = m->hgl, Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out;
    if (p->form == RAM_GLIMPSE_CONCAT) {
        linear_rows(j, hgl, HG, n, HG, RAM_T_G2_W, RAM_T_G2_B, o0, o1, g, G, false);
    } else {
        linear_rows(j, hgl, HG, n, Hg, RAM_T_G2_W, RAM_T_G2_B, o0, o1, g, G, false);
        linear_rows(j, hgl + Hg, HG, n, Hl, RAM_T_L2_W, RAM_T_L2_B, o0, o1, g, G, true);
    }
    ram_relu_forward(g + o0, n, o1 - o0, G);
}

/* Batch 1 on a team, with a first glimpse layer this small or smaller
 * (floats of W_g1, of the glimpse, of [h_g; h_l]): each thread computes the
 * whole first layer itself rather than its share.  The paper's MNIST model
 * (an 8x8 glimpse into 128 units: 8,192 weights) qualifies; a 12x12x3
 * retina's 55,296 would cost each thread more than the barriers it saves. */
#define SMALL_G1_FLOATS  16384
#define SMALL_RHO_FLOATS 256
#define SMALL_HGL_FLOATS 1024

static void forward_part(void *arg, int k, int nt) {
    const fwd_job *j = arg;
    const struct ram_model *m = j->m;
    ram_ws *ws = j->ws;
    const int n = j->n;
    const ram_model_params *p = &m->p;
    const int T = p->glimpses, H = p->core_hidden, D = m->rho_size, HG = m->hgl,
              Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out, K = p->classes,
              NG = m->gates;
    const size_t img_size = (size_t)p->channels * p->height * p->width;
    const bool lstm = p->core == RAM_CORE_LSTM;
    int i0, i1, g0, g1, l0, l1, o0, o1, u0, u1;
    split(n, k, nt, 1, &i0, &i1);
    split(Hg, k, nt, 16, &g0, &g1);
    split(Hl, k, nt, 16, &l0, &l1);
    split(G, k, nt, 16, &o0, &o1);
    split(H, k, nt, 16, &u0, &u1);
    const int ni = i1 - i0;
    const bool whole_first = nt > 1 && n == 1 && D <= SMALL_RHO_FLOATS && HG <= SMALL_HGL_FLOATS &&
                             (long)D * Hg <= SMALL_G1_FLOATS;

    memset(ws->h + (size_t)i0 * H, 0, sizeof(float) * ni * H);
    if (lstm) memset(ws->c + (size_t)i0 * H, 0, sizeof(float) * ni * H);
    if (n < nt) ram_team_barrier(j->team); /* below, every thread reads every h_0 */
    for (int t = 0; t < T; t++) {
        float *ht = ws->h + (size_t)t * n * H, *hn = ht + (size_t)n * H;
        float *mupre = ws->mupre + (size_t)t * n * 2, *mu = ws->mu + (size_t)t * n * 2;
        float *l = ws->loc + (size_t)t * n * 2;
        float *rho = ws->rho + (size_t)t * n * D, *hgl = ws->hgl + (size_t)t * n * HG;
        float *g = ws->g + (size_t)t * n * G;

        /* Where to look: mu_t from h_{t-1} (h_0 = 0), then l_t; the glimpse.
         * Fewer images than threads (batch 1): every thread works out the
         * locations (the same bits; thread 0 keeps them) and extracts its
         * rows of every patch, as one 512x512 RGB glimpse alone outweighs
         * the layers. */
        const float *src = j->src ? j->src + (size_t)t * n * 2 : NULL;
        if (n < nt && n <= RAM_GEMV_MAX_ROWS) {
            float own[3][2 * RAM_GEMV_MAX_ROWS]; /* threads k > 0: the same bits, kept here */
            float *where = k == 0 ? l : own[2];
            locate(j, ht, n, src, k == 0 ? mupre : own[0], k == 0 ? mu : own[1], where);
            if (whole_first) {
                /* A small first layer: every thread also extracts the whole
                 * glimpse and computes the whole [h_g; h_l] (thread 0 into
                 * the workspace), two barriers fewer per glimpse. */
                float mine[SMALL_RHO_FLOATS + SMALL_HGL_FLOATS];
                float *r = k == 0 ? rho : mine, *hg = k == 0 ? hgl : mine + SMALL_RHO_FLOATS;
                ram_glimpse_one(&m->sensor, j->images, p->channels, p->height, p->width,
                                where[0] * m->range_x, where[1] * m->range_y, r);
                linear_rows(j, r, D, 1, D, RAM_T_G1_W, RAM_T_G1_B, 0, Hg, hg, HG, false);
                linear_rows(j, where, 2, 1, 2, RAM_T_L1_W, RAM_T_L1_B, 0, Hl, hg + Hg, HG, false);
                ram_relu_forward(hg, 1, HG, HG);
                glimpse_net_2(j, hg, g, o0, o1);
            } else {
                int p0, p1;
                split(m->sensor.patch, k, nt, 1, &p0, &p1);
                for (int i = 0; p1 > p0 && i < n; i++)
                    ram_glimpse_rows(&m->sensor, j->images + i * img_size, p->channels, p->height,
                                     p->width, where[2 * i] * m->range_x,
                                     where[2 * i + 1] * m->range_y, rho + (size_t)i * D, p0, p1);
            }
        } else if (ni > 0) {
            locate(j, ht + (size_t)i0 * H, ni, src ? src + 2 * i0 : NULL, mupre + 2 * i0,
                   mu + 2 * i0, l + 2 * i0);
            for (int i = i0; i < i1; i++) {
                /* The next image's window is on its way while this one is
                 * summed (a 512x512 image's window is not in cache). */
                const bool more = i + 1 < i1;
                ram_glimpse_one_ahead(
                    &m->sensor, j->images + i * img_size, p->channels, p->height, p->width,
                    l[2 * i] * m->range_x, l[2 * i + 1] * m->range_y, rho + (size_t)i * D,
                    more ? j->images + (i + 1) * img_size : NULL,
                    more ? l[2 * i + 2] * m->range_x : 0, more ? l[2 * i + 3] * m->range_y : 0);
            }
        }
        if (!whole_first) {
            ram_team_barrier(j->team);

            /* Glimpse network: [h_g; h_l] side by side in one buffer so the
             * CONCAT form is a single GEMM over it. */
            linear_rows(j, rho, D, n, D, RAM_T_G1_W, RAM_T_G1_B, g0, g1, hgl, HG, false);
            linear_rows(j, l, 2, n, 2, RAM_T_L1_W, RAM_T_L1_B, l0, l1, hgl + Hg, HG, false);
            if (nt == 1) {
                ram_relu_forward(hgl, n, HG, HG);
            } else {
                ram_relu_forward(hgl + g0, n, g1 - g0, HG);
                ram_relu_forward(hgl + Hg + l0, n, l1 - l0, HG);
            }
            ram_team_barrier(j->team);
            glimpse_net_2(j, hgl, g, o0, o1);
        }
        ram_team_barrier(j->team);

        /* Core: units [u0, u1), i.e. those rows of each of the LSTM's four
         * gate blocks, so that the cell update needs no other thread's rows. */
        float *pre = lstm ? ws->gates + (size_t)t * n * NG : hn;
        const int blocks = NG / H, whole = u0 == 0 && u1 == H;
        for (int q = 0; q < (whole ? 1 : blocks); q++) {
            const int r0 = whole ? 0 : q * H + u0, r1 = whole ? NG : q * H + u1;
            linear_rows(j, g, G, n, G, RAM_T_CX_W, RAM_T_C_B, r0, r1, pre, NG, false);
            if (t > 0) /* h_0 = 0 contributes nothing */
                linear_rows(j, ht, H, n, H, RAM_T_CH_W, RAM_T_COUNT, r0, r1, pre, NG, true);
        }
        if (lstm) {
            float *ct = ws->c + (size_t)t * n * H;
            ram_lstm_forward_units(pre, ct, ct + (size_t)n * H, hn, n, H, u0, u1);
        } else {
            ram_relu_forward(hn + u0, n, u1 - u0, H);
        }
        ram_team_barrier(j->team);
    }
    if (k != 0) return;
    /* Classifier on h_T; logits are turned into probabilities in place. */
    const float *hT = ws->h + (size_t)T * n * H;
    linear_rows(j, hT, H, n, H, RAM_T_CLS_W, RAM_T_CLS_B, 0, K, ws->probs, K, false);
    ram_softmax(ws->probs, ws->probs, n, K);
}

void ram_model_forward_team(const struct ram_model *m, ram_ws *ws, const float *images, int n,
                            ram_loc_mode mode, const float *eps_or_locs, float std,
                            ram_team *team) {
    ram_model_forward_with(m, m->w, NULL, NULL, ws, images, n, mode, eps_or_locs, std, team);
}

void ram_model_forward_with(const struct ram_model *m, const float *w, const uint16_t *w16,
                            const ram_cols *cols, ram_ws *ws, const float *images, int n,
                            ram_loc_mode mode, const float *eps_or_locs, float std,
                            ram_team *team) {
    fwd_job j = {m,           w,   w16, cols && cols->data ? cols : NULL, ws, images, n, mode,
                 eps_or_locs, std, team};
    ram_team_run(team, forward_part, &j);
}

void ram_model_forward(const struct ram_model *m, ram_ws *ws, const float *images, int n,
                       ram_loc_mode mode, const float *eps_or_locs, float std) {
    ram_model_forward_team(m, ws, images, n, mode, eps_or_locs, std, NULL);
}

void ram_model_backward(const struct ram_model *m, ram_ws *ws, int n, const float *dmu,
                        bool detach_core) {
    const ram_model_params *p = &m->p;
    const int T = p->glimpses, H = p->core_hidden, D = m->rho_size, HG = m->hgl,
              Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out, K = p->classes,
              NG = m->gates;
    const bool lstm = p->core == RAM_CORE_LSTM;
    float *w = m->w, *gw = ws->grad;
#define W(id)  ram_param(m, w, id)
#define GW(id) ram_param(m, gw, id)

    float *dh = ws->dh, *dh2 = ws->dh2, *dc = ws->dc, *dc2 = ws->dc2;
    ram_linear_backward(ws->dlogits, K, ws->h + (size_t)T * n * H, H, n, H, K, W(RAM_T_CLS_W),
                        GW(RAM_T_CLS_W), GW(RAM_T_CLS_B), dh, H, false);
    if (lstm) memset(dc, 0, sizeof(float) * n * H);
    for (int t = T - 1; t >= 0; t--) {
        /* Here dh = dLoss/dh_{t+1}. */
        const float *ht = ws->h + (size_t)t * n * H, *hn = ht + (size_t)n * H;
        const float *g = ws->g + (size_t)t * n * G, *hgl = ws->hgl + (size_t)t * n * HG;
        const float *rho = ws->rho + (size_t)t * n * D, *l = ws->loc + (size_t)t * n * 2;
        float *dpre;
        if (lstm) {
            const float *ct = ws->c + (size_t)t * n * H;
            ram_lstm_backward(ws->gates + (size_t)t * n * NG, ct, ct + (size_t)n * H, dh, dc,
                              ws->dgates, dc2, n, H);
            float *tmp = dc;
            dc = dc2;
            dc2 = tmp;
            dpre = ws->dgates;
        } else {
            ram_relu_backward(hn, dh, n, H, H);
            dpre = dh;
        }
        ram_linear_backward(dpre, NG, g, G, n, G, NG, W(RAM_T_CX_W), GW(RAM_T_CX_W), GW(RAM_T_C_B),
                            ws->dg, G, false);
        if (t > 0)
            ram_linear_backward(dpre, NG, ht, H, n, H, NG, W(RAM_T_CH_W), GW(RAM_T_CH_W), NULL, dh2,
                                H, false);

        ram_relu_backward(g, ws->dg, n, G, G);
        if (p->form == RAM_GLIMPSE_CONCAT) {
            ram_linear_backward(ws->dg, G, hgl, HG, n, HG, G, W(RAM_T_G2_W), GW(RAM_T_G2_W),
                                GW(RAM_T_G2_B), ws->dhgl, HG, false);
        } else {
            ram_linear_backward(ws->dg, G, hgl, HG, n, Hg, G, W(RAM_T_G2_W), GW(RAM_T_G2_W),
                                GW(RAM_T_G2_B), ws->dhgl, HG, false);
            ram_linear_backward(ws->dg, G, hgl + Hg, HG, n, Hl, G, W(RAM_T_L2_W), GW(RAM_T_L2_W),
                                GW(RAM_T_L2_B), ws->dhgl + Hg, HG, false);
        }
        ram_relu_backward(hgl, ws->dhgl, n, HG, HG);
        /* The glimpse is not differentiable in l, and l carries no gradient. */
        ram_linear_backward(ws->dhgl, HG, rho, D, n, D, Hg, W(RAM_T_G1_W), GW(RAM_T_G1_W),
                            GW(RAM_T_G1_B), NULL, 0, false);
        ram_linear_backward(ws->dhgl + Hg, HG, l, 2, n, 2, Hl, W(RAM_T_L1_W), GW(RAM_T_L1_W),
                            GW(RAM_T_L1_B), NULL, 0, false);

        /* Location network at step t: mu_t = bound(W h_t + b). */
        if (dmu) {
            const float *dmut = dmu + (size_t)t * n * 2;
            const float *mupre = ws->mupre + (size_t)t * n * 2, *mu = ws->mu + (size_t)t * n * 2;
            for (int i = 0; i < 2 * n; i++)
                ws->dmu[i] = dmut[i] * bound_grad(p->bound, mupre[i], mu[i]);
            bool into_core = t > 0 && !detach_core;
            ram_linear_backward(ws->dmu, 2, ht, H, n, H, 2, W(RAM_T_LOC_W), GW(RAM_T_LOC_W),
                                GW(RAM_T_LOC_B), into_core ? dh2 : NULL, H, true);
        }
        float *tmp = dh;
        dh = dh2;
        dh2 = tmp;
    }
#undef W
#undef GW
}

/* ---- inference ---- */

/* A state with threads has two ways to use them (ram_state_create_threads):
 * up to ROW_SPLIT_MAX images, every layer's rows are split between the
 * threads (batch 1 is latency-bound, and each thread keeps its share of the
 * weights in its core's cache); above, each thread runs whole images, its
 * slice of the batch, in a workspace of its own (sgemm then has rows enough,
 * and the threads never wait for each other). */
#define ROW_SPLIT_MAX RAM_GEMV_MAX_ROWS

struct ram_state {
    ram_model_params arch;
    size_t n_params;
    int max_batch;
    ram_ws ws;      /* 1 thread: max_batch images; more: up to ROW_SPLIT_MAX */
    ram_team *team; /* NULL: the caller's thread alone */
    ram_ws *sub;    /* one per team thread, for batches above ROW_SPLIT_MAX (or NULL) */
    float *noise;   /* T x max_batch x 2 locations or noise, when sub is used */
    /* RAM_PRECISION_HALF: the parameters rounded to half precision, as
     * halves (w16) and as the floats they are (wr), made from the weights
     * numbered `version` (0: not made yet).  NULL with FLOAT. */
    ram_precision precision;
    uint16_t *w16;
    float *wr;
    void *half_block;
    uint64_t version;
    /* The column-major copies the sparse kernels read: of the rounded
     * halves with HALF, else of the floats. */
    ram_cols cols;
};

void ram_state_free(ram_state *st) {
    if (!st) return;
    if (st->sub)
        for (int k = 0; k < ram_team_size(st->team); k++)
            ram_ws_release(&st->sub[k]);
    free(st->sub);
    ram_team_free(st->team);
    free(st->half_block);
    ram_cols_release(&st->cols);
    free(st->noise);
    ram_ws_release(&st->ws);
    free(st);
}

ram_status ram_state_create_threads(const ram_model *m, int max_batch, int threads,
                                    ram_state **out) {
    if (!m || !out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_create: NULL argument");
    if (max_batch < 1 || max_batch > 1 << 20)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_create: max_batch %d not in [1, 2^20]",
                        max_batch);
    if (threads < 1 || threads > RAM_STATE_MAX_THREADS)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_create: threads %d not in [1, %d]",
                        threads, RAM_STATE_MAX_THREADS);
    ram_state *st = calloc(1, sizeof *st);
    if (!st) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "state_create: out of memory");
    st->arch = m->p;
    st->n_params = m->n_params;
    st->max_batch = max_batch;
    const bool sliced = threads > 1 && max_batch > ROW_SPLIT_MAX;
    ram_status s = ram_ws_init(&st->ws, m, sliced ? ROW_SPLIT_MAX : max_batch, false);
    if (!s && threads > 1) s = ram_team_create(threads, &st->team);
    if (!s) s = ram_cols_init(&st->cols, m);
    if (!s && sliced) {
        /* calloc'ed workspaces are all-NULL, so freeing a half-made set is safe */
        st->sub = calloc((size_t)threads, sizeof *st->sub);
        st->noise = malloc(sizeof(float) * 2 * m->p.glimpses * (size_t)max_batch);
        if (!st->sub || !st->noise)
            s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "state_create: out of memory");
        for (int k = 0; !s && k < threads; k++)
            s = ram_ws_init(&st->sub[k], m, (max_batch + threads - 1) / threads, false);
    }
    if (s) {
        ram_state_free(st);
        return s;
    }
    *out = st;
    return RAM_OK;
}

ram_status ram_state_create(const ram_model *m, int max_batch, ram_state **out) {
    return ram_state_create_threads(m, max_batch, 1, out);
}

ram_status ram_state_set_precision(ram_state *st, ram_precision precision) {
    if (!st) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_set_precision: state is NULL");
    if (precision != RAM_PRECISION_FLOAT && precision != RAM_PRECISION_HALF)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_set_precision: unknown precision %d",
                        (int)precision);
    if (precision == RAM_PRECISION_FLOAT) {
        free(st->half_block);
        st->half_block = NULL;
        st->w16 = NULL;
        st->wr = NULL;
    } else if (!st->half_block) {
        /* Both copies on cache lines (64 bytes), as the model's weights are. */
        const size_t np = st->n_params, wr_bytes = (np * sizeof(float) + 63) / 64 * 64;
        void *block = malloc(63 + wr_bytes + np * sizeof(uint16_t));
        if (!block)
            return ram_fail(RAM_ERR_OUT_OF_MEMORY,
                            "state_set_precision: %zu parameters: out of memory", np);
        char *base = ram_align64(block);
        st->half_block = block;
        st->wr = (float *)(void *)base;
        st->w16 = (uint16_t *)(void *)(base + wr_bytes);
    }
    st->precision = precision;
    st->version = 0; /* made at the next classify */
    st->cols.version = 0;
    return RAM_OK;
}

/* Round the model's parameters into the state's copies, unless they were
 * made from these very weights. */
static ram_status refresh_half(const ram_model *m, ram_state *st) {
    if (st->version == m->version) return RAM_OK;
    for (size_t i = 0; i < m->n_params; i++) {
        const uint16_t h = ram_float_to_half(m->w[i]);
        if ((h & 0x7c00u) == 0x7c00u) {
            st->version = 0;
            return ram_fail(RAM_ERR_NUMERIC,
                            "classify: parameter %zu (%g) is beyond half precision's range "
                            "(65504): use RAM_PRECISION_FLOAT for this model",
                            i, (double)m->w[i]);
        }
        st->w16[i] = h;
        st->wr[i] = ram_half_to_float(h);
    }
    st->version = m->version;
    return RAM_OK;
}

bool ram_model_same_arch(const ram_model_params *a, const ram_model_params *b) {
    return a->channels == b->channels && a->height == b->height && a->width == b->width &&
           a->glimpse.patch == b->glimpse.patch && a->glimpse.depth == b->glimpse.depth &&
           a->glimpse.scale == b->glimpse.scale && a->form == b->form &&
           a->glimpse_hidden == b->glimpse_hidden && a->loc_hidden == b->loc_hidden &&
           a->glimpse_out == b->glimpse_out && a->core_hidden == b->core_hidden &&
           a->core == b->core && a->glimpses == b->glimpses && a->classes == b->classes &&
           a->bound == b->bound && a->loc_std == b->loc_std &&
           a->loc_range_pixels == b->loc_range_pixels;
}

long ram_ws_bad_glimpse(const struct ram_model *m, const ram_ws *ws, int n, int *step) {
    const size_t D = (size_t)m->rho_size, count = (size_t)m->p.glimpses * n * D;
    for (size_t i = 0; i < count; i++)
        if (!isfinite(ws->rho[i])) {
            *step = (int)(i / ((size_t)n * D));
            return (long)(i / D % n);
        }
    return -1;
}

/* Images [i0, i0 + n) of a call, forwarded in `ws`: check what the glimpses
 * read and copy the results out. */
static ram_status finish(const ram_model *m, const ram_ws *ws, int i0, int n, int *labels,
                         float *probs, float *locs) {
    const int T = m->p.glimpses, K = m->p.classes;
    int step;
    const long bad = ram_ws_bad_glimpse(m, ws, n, &step);
    if (bad >= 0)
        return ram_fail(RAM_ERR_NUMERIC,
                        "classify: glimpse %d of image %ld reads a NaN or Inf pixel", step + 1,
                        i0 + bad);
    for (int i = 0; i < n; i++) {
        const float *pr = ws->probs + (size_t)i * K;
        const size_t o = (size_t)i0 + i;
        if (labels) labels[o] = ram_argmax(pr, K);
        if (probs) memcpy(probs + o * K, pr, sizeof(float) * K);
        if (locs)
            for (int t = 0; t < T; t++) {
                const float *l = ws->loc + ((size_t)t * n + i) * 2;
                locs[(o * T + t) * 2] = l[0] * m->range_x;
                locs[(o * T + t) * 2 + 1] = l[1] * m->range_y;
            }
    }
    return RAM_OK;
}

/* The parameters a state classifies with: its rounded copy, or the model's. */
static const float *state_weights(const ram_state *st, const ram_model *m) {
    return st->wr ? st->wr : m->w;
}

/* Each thread forwards its slice of the batch in its own workspace. */
typedef struct slice_job {
    const ram_model *m;
    ram_state *st;
    const float *images;
    int n;
    ram_loc_mode mode;
    float std;
} slice_job;

static void forward_slice(void *arg, int k, int nt) {
    const slice_job *j = arg;
    const int T = j->m->p.glimpses;
    int i0, i1;
    split(j->n, k, nt, 1, &i0, &i1);
    const int ni = i1 - i0;
    if (ni <= 0) return;
    ram_ws *ws = &j->st->sub[k];
    if (j->mode != RAM_LOC_MEAN) /* this slice's noise or locations, T x ni x 2 */
        for (int t = 0; t < T; t++)
            memcpy(ws->aux + (size_t)t * ni * 2, j->st->noise + ((size_t)t * j->n + i0) * 2,
                   sizeof(float) * 2 * ni);
    const size_t img = (size_t)j->m->p.channels * j->m->p.height * j->m->p.width;
    ram_model_forward_with(j->m, state_weights(j->st, j->m), j->st->w16, &j->st->cols, ws,
                           j->images + i0 * img, ni, j->mode,
                           j->mode == RAM_LOC_MEAN ? NULL : ws->aux, j->std, NULL);
}

ram_status ram_model_classify_ex(const ram_model *m, ram_state *st, const float *images, int n,
                                 ram_loc_source source, ram_policy *pol, int *labels, float *probs,
                                 float *locs) {
    if (!m || !st || !images)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "classify: NULL model, state or images");
    if (n < 1 || n > st->max_batch)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "classify: n = %d not in [1, %d] (state size)", n,
                        st->max_batch);
    if (!ram_model_same_arch(&st->arch, &m->p) || st->n_params != m->n_params)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "classify: state made for another architecture");
    if ((source == RAM_LOCS_SAMPLED || source == RAM_LOCS_RANDOM) && !pol)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "classify: this location source needs a policy");
    if (source < RAM_LOCS_MEAN || source > RAM_LOCS_CENTER)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "classify: unknown location source %d",
                        (int)source);
    if (st->precision == RAM_PRECISION_HALF) {
        ram_status s = refresh_half(m, st);
        if (s) return s;
    }
    const bool by_slice = n > st->ws.max_n; /* only with threads: see ram_state */
    ram_cols_refresh(&st->cols, m, st->w16);
    float *aux = by_slice ? st->noise : st->ws.aux;
    const size_t nl = (size_t)m->p.glimpses * n * 2;
    ram_loc_mode mode = RAM_LOC_FIXED;
    float std = 0;
    switch (source) {
    case RAM_LOCS_MEAN:
        mode = RAM_LOC_MEAN;
        break;
    case RAM_LOCS_SAMPLED:
        for (size_t i = 0; i < nl; i++)
            aux[i] = (float)ram_rng_normal(&pol->rng);
        mode = RAM_LOC_SAMPLE;
        std = pol->p.std;
        break;
    case RAM_LOCS_RANDOM:
        for (size_t i = 0; i < nl; i++)
            aux[i] = (float)(2 * ram_rng_uniform(&pol->rng) - 1);
        break;
    case RAM_LOCS_CENTER:
        memset(aux, 0, sizeof(float) * nl);
        break;
    }
    if (!by_slice) {
        ram_model_forward_with(m, state_weights(st, m), st->w16, &st->cols, &st->ws, images, n,
                               mode, mode == RAM_LOC_MEAN ? NULL : aux, std, st->team);
        return finish(m, &st->ws, 0, n, labels, probs, locs);
    }
    slice_job j = {m, st, images, n, mode, std};
    ram_team_run(st->team, forward_slice, &j);
    const int nt = ram_team_size(st->team);
    for (int k = 0; k < nt; k++) {
        int i0, i1;
        split(n, k, nt, 1, &i0, &i1);
        if (i1 > i0) {
            ram_status s = finish(m, &st->sub[k], i0, i1 - i0, labels, probs, locs);
            if (s) return s;
        }
    }
    return RAM_OK;
}

ram_status ram_model_classify(const ram_model *m, ram_state *st, const float *images, int n,
                              int *labels, float *probs, float *locs) {
    return ram_model_classify_ex(m, st, images, n, RAM_LOCS_MEAN, NULL, labels, probs, locs);
}
