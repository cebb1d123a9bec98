/* The forward pass over T glimpses, on one thread or split over a team:
 * where to look, the glimpse, the glimpse network, the core, and the
 * classifier.  The location policy's sampling noise comes from the caller
 * (trainer, state); this file only moves activations. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float bound_fwd(ram_loc_bound b, float x) {
    if (b == RAM_BOUND_TANH) return tanhf(x);
    return x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
}

static inline float clamp1(float x) {
    return x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
}

/* What every thread of one forward pass reads. */
typedef struct fwd_job {
    const struct ram_model *m;
    const float *w; /* the parameters used: m->w, or a state's rounded copy */
    ram_w16 w16;    /* the same in 16 bits for small batches (w16.w NULL: none) */
    /* Column-major copies (16-bit when w16.w, else floats) of the layers fed
     * by a ReLU, or NULL (none, or no sparse kernels to read them). */
    const ram_cols *cols;
    ram_ws *ws;
    ram_images images; /* floats or bytes */
    const int *rows;   /* stopping: row i is image rows[i] of `images` (NULL: image i) */
    int n;
    ram_loc_mode mode;
    const float *src; /* eps (SAMPLE) or locations (FIXED), T x n x ld */
    float std;
    ram_team *team;
} fwd_job;

/* linear_rows() with the row kernels (or sgemm), into Y's columns from r0. */
static void linear_rows_dense(const fwd_job *j, const float *X, int ldx, int n, int in,
                              enum ram_tensor_id id, enum ram_tensor_id bid, int r0, int r1,
                              float *Y, int ldy, bool acc) {
    const size_t off = j->m->t[id].off + (size_t)r0 * in;
    const float *b = bid < RAM_T_COUNT ? j->w + j->m->t[bid].off + r0 : NULL;
    if (j->w16.w && n <= RAM_GEMV_MAX_ROWS)
        ram_linear_forward_w16(X, ldx, n, in, j->w16.w + off, j->w16.form, b, r1 - r0, Y, ldy, acc);
    else
        ram_linear_forward(X, ldx, n, in, j->w + off, b, r1 - r0, Y, ldy, acc, j->ws->gemm);
}

/* Rows [r0, r1) of linear layer `id` (its weight tensor; bias `bid`, or
 * RAM_T_COUNT for none): W's rows, b's entries, Y's columns.  A small batch
 * reads the 16-bit copy when the job has one.  Layers fed by a
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
    const ram_wform form = j->w16.w ? j->w16.form : RAM_WFORM_FLOAT;
    const char *wt = (const char *)j->cols->data + j->cols->off[id] * ram_wform_size(form);
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
        if (!ram_linear_forward_sparse(x, in, min_zeros, wt, form, rows, r0, r1, b, y, acc))
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
    const int H = m->p.core_hidden, L = m->ld;
    linear_rows(j, h, H, count, H, RAM_T_LOC_W, RAM_T_LOC_B, 0, L, mupre, L, false);
    for (int i = 0; i < L * count; i++) {
        mu[i] = bound_fwd(m->p.bound, mupre[i]);
        l[i] = j->mode == RAM_LOC_MEAN     ? mu[i]
               : j->mode == RAM_LOC_SAMPLE ? clamp1(mu[i] + j->std * src[i])
                                           : src[i];
    }
}

/* Rows [o0, o1) of the glimpse network's second layer, g = relu(...), from
 * the relu'd [h_g; h_l] of the batch.  The multiplicative form keeps its
 * two factors in gm (n x 2G) for the backward pass. */
static void glimpse_net_2(const fwd_job *j, const float *hgl, float *g, float *gm, int o0, int o1) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int n = j->n, HG = m->hgl, Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out;
    if (p->form == RAM_GLIMPSE_MULTIPLICATIVE) {
        linear_rows(j, hgl, HG, n, Hg, RAM_T_G2_W, RAM_T_G2_B, o0, o1, gm, 2 * G, false);
        linear_rows(j, hgl + Hg, HG, n, Hl, RAM_T_L2_W, RAM_T_L2_B, o0, o1, gm + G, 2 * G, false);
        ram_relu_forward(gm + o0, n, o1 - o0, 2 * G);
        ram_relu_forward(gm + G + o0, n, o1 - o0, 2 * G);
        for (int i = 0; i < n; i++) {
            const float *a = gm + (size_t)i * 2 * G, *b = a + G;
            float *gi = g + (size_t)i * G;
            for (int o = o0; o < o1; o++)
                gi[o] = a[o] * b[o];
        }
        return;
    }
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

/* Thread k's shares of the work: images [i0, i1) for the glimpses, and
 * of every layer its rows (outputs): [g0, g1) of h_g, [l0, l1) of h_l,
 * [o0, o1) of g and the core's units [u0, u1). */
typedef struct share {
    int k, nt;
    int i0, i1, g0, g1, l0, l1, o0, o1, u0, u1;
    /* batch 1 on a team with a small first layer (SMALL_G1_FLOATS) */
    bool whole_first;
} share;

/* Step t's slices of the workspace. */
typedef struct step {
    int t;
    float *ht, *hn; /* h_{t-1} (h_0 = 0) and h_t */
    float *top;     /* the state the location network reads: ht, or r2's */
    float *mupre, *mu, *l, *rho, *hgl, *g;
    float *conv;      /* the convolutional layer's outputs, or NULL */
    float *gm;        /* the multiplicative form's factors, or NULL */
    const float *src; /* this step's noise or locations, or NULL */
} step;

static step step_at(const fwd_job *j, int t) {
    const struct ram_model *m = j->m;
    const size_t n = (size_t)j->n, H = (size_t)m->p.core_hidden, L = (size_t)m->ld;
    step s = {.t = t,
              .ht = j->ws->h + t * n * H,
              .mupre = j->ws->mupre + t * n * L,
              .mu = j->ws->mu + t * n * L,
              .l = j->ws->loc + t * n * L,
              .rho = j->ws->rho + t * n * m->rho_size,
              .hgl = j->ws->hgl + t * n * m->hgl,
              .g = j->ws->g + t * n * m->p.glimpse_out,
              .conv = j->ws->conv ? j->ws->conv + t * n * m->g1_in : NULL,
              .gm = j->ws->gm ? j->ws->gm + t * n * 2 * m->p.glimpse_out : NULL,
              .src = j->src ? j->src + t * n * L : NULL};
    s.hn = s.ht + n * H;
    s.top = ram_top_state(m, j->ws) + t * n * H;
    return s;
}

/* Image i's statistics for contrast cells, worked out at the start of the
 * pass (contrast_stats()), or NULL for a retina of pixel values. */
static const float *contrast_of(const fwd_job *j, int i) {
    return j->ws->contrast ? j->ws->contrast + (size_t)i * 2 * j->m->p.channels : NULL;
}

/* Images [i0, i1)'s statistics for contrast cells, once a pass rather than
 * once a glimpse: at 1024 x 1024 their 1,024 reads a channel are cache
 * misses, and were half a classification's time. */
static void contrast_stats(const fwd_job *j, const share *sh) {
    const ram_model_params *p = &j->m->p;
    const size_t img = (size_t)p->channels * p->height * p->width;
    for (int i = sh->i0; i < sh->i1; i++)
        ram_contrast_stats(ram_images_at(j->images, (size_t)i, img), p->channels, p->height,
                           p->width, j->ws->contrast + (size_t)i * 2 * p->channels);
}

/* The image of row i of the batch. */
static size_t image_of(const fwd_job *j, int i) {
    return j->rows ? (size_t)j->rows[i] : (size_t)i;
}

/* Fewer images than threads (batch 1): every thread works out the
 * locations (the same bits; thread 0 keeps them) and extracts its rows of
 * every patch, as one 512x512 RGB glimpse alone outweighs the layers. */
static void look_together(const fwd_job *j, const share *sh, const step *s) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int n = j->n, D = m->rho_size, HG = m->hgl, Hg = p->glimpse_hidden, Hl = p->loc_hidden,
              k = sh->k, L = m->ld;
    const size_t img_size = (size_t)p->channels * p->height * p->width;
    float own[3][3 * RAM_GEMV_MAX_ROWS]; /* threads k > 0: the same bits, kept here */
    float *where = k == 0 ? s->l : own[2];
    struct ram_glimpse zoomed;
    locate(j, s->top, n, s->src, k == 0 ? s->mupre : own[0], k == 0 ? s->mu : own[1], where);
    if (sh->whole_first) {
        /* A small first layer: every thread also extracts the whole
         * glimpse and computes the whole [h_g; h_l] (thread 0 into the
         * workspace), two barriers fewer per glimpse. */
        float mine[SMALL_RHO_FLOATS + SMALL_HGL_FLOATS];
        float *r = k == 0 ? s->rho : mine, *hg = k == 0 ? s->hgl : mine + SMALL_RHO_FLOATS;
        ram_glimpse_one(ram_model_sensor_at(m, where, &zoomed),
                        ram_images_at(j->images, image_of(j, 0), img_size), p->channels, p->height,
                        p->width, where[0] * m->range_x, where[1] * m->range_y, contrast_of(j, 0),
                        r);
        linear_rows(j, r, D, 1, D, RAM_T_G1_W, RAM_T_G1_B, 0, Hg, hg, HG, false);
        linear_rows(j, where, L, 1, L, RAM_T_L1_W, RAM_T_L1_B, 0, Hl, hg + Hg, HG, false);
        ram_relu_forward(hg, 1, HG, HG);
        glimpse_net_2(j, hg, s->g, s->gm, sh->o0, sh->o1);
        return;
    }
    int p0, p1;
    ram_split(m->sensor.patch, k, sh->nt, 1, &p0, &p1);
    for (int i = 0; p1 > p0 && i < n; i++)
        ram_glimpse_rows(ram_model_sensor_at(m, where + L * i, &zoomed),
                         ram_images_at(j->images, image_of(j, i), img_size), p->channels, p->height,
                         p->width, where[L * i] * m->range_x, where[L * i + 1] * m->range_y,
                         contrast_of(j, i), s->rho + (size_t)i * D, p0, p1);
}

/* Images [i0, i1): their locations and glimpses. */
static void look_apart(const fwd_job *j, const share *sh, const step *s) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int i0 = sh->i0, i1 = sh->i1, H = p->core_hidden, D = m->rho_size, L = m->ld;
    const size_t img_size = (size_t)p->channels * p->height * p->width;
    float *l = s->l;
    locate(j, s->top + (size_t)i0 * H, i1 - i0, s->src ? s->src + L * i0 : NULL, s->mupre + L * i0,
           s->mu + L * i0, l + L * i0);
    if (L == 3) {
        /* Each glimpse zoomed its own way: no look ahead. */
        struct ram_glimpse zoomed;
        for (int i = i0; i < i1; i++)
            ram_glimpse_one(ram_model_sensor_at(m, l + L * i, &zoomed),
                            ram_images_at(j->images, image_of(j, i), img_size), p->channels,
                            p->height, p->width, l[L * i] * m->range_x, l[L * i + 1] * m->range_y,
                            contrast_of(j, i), s->rho + (size_t)i * D);
        return;
    }
    for (int i = i0; i < i1; i++) {
        /* The next image's window is on its way while this one is summed
         * (a 512x512 image's window is not in cache). */
        const bool more = i + 1 < i1;
        const ram_image next =
            more ? ram_images_at(j->images, image_of(j, i + 1), img_size) : (ram_image){0};
        ram_glimpse_one_ahead(&m->sensor, ram_images_at(j->images, image_of(j, i), img_size),
                              p->channels, p->height, p->width, l[2 * i] * m->range_x,
                              l[2 * i + 1] * m->range_y, contrast_of(j, i), s->rho + (size_t)i * D,
                              next, more ? l[2 * i + 2] * m->range_x : 0,
                              more ? l[2 * i + 3] * m->range_y : 0);
    }
}

/* The glimpse network on the batch's glimpses (or on the convolutional
 * layer's outputs), this thread's rows: [h_g; h_l] side by side in one
 * buffer, so that the CONCAT form is a single GEMM over it, then g. */
static void glimpse_net(const fwd_job *j, const share *sh, const step *s) {
    const struct ram_model *m = j->m;
    const int n = j->n, D = m->g1_in, HG = m->hgl, Hg = m->p.glimpse_hidden;
    linear_rows(j, s->conv ? s->conv : s->rho, D, n, D, RAM_T_G1_W, RAM_T_G1_B, sh->g0, sh->g1,
                s->hgl, HG, false);
    linear_rows(j, s->l, m->ld, n, m->ld, RAM_T_L1_W, RAM_T_L1_B, sh->l0, sh->l1, s->hgl + Hg, HG,
                false);
    if (sh->nt == 1) {
        ram_relu_forward(s->hgl, n, HG, HG);
    } else {
        ram_relu_forward(s->hgl + sh->g0, n, sh->g1 - sh->g0, HG);
        ram_relu_forward(s->hgl + Hg + sh->l0, n, sh->l1 - sh->l0, HG);
    }
    ram_team_barrier(j->team);
    glimpse_net_2(j, s->hgl, s->g, s->gm, sh->o0, sh->o1);
}

/* The core, units [u0, u1): those rows of each of the LSTM's four gate
 * blocks, so that the cell update needs no other thread's rows.  The lower
 * (or only) layer reads g_t; the upper one (upper) reads the lower one's
 * new state. */
static void core_step(const fwd_job *j, const share *sh, const step *s, bool upper) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int n = j->n, H = p->core_hidden, G = p->glimpse_out;
    const int NG = upper ? m->gates2 : m->gates, in = upper ? H : G;
    const int u0 = sh->u0, u1 = sh->u1;
    const bool lstm = (upper ? p->upper_core : p->core) == RAM_CORE_LSTM;
    const float *x = upper ? s->hn : s->g;
    const float *ht = upper ? s->top : s->ht;
    float *hn = upper ? s->top + (size_t)n * H : s->hn;
    float *pre = !lstm   ? hn
                 : upper ? j->ws->gates2 + (size_t)s->t * n * NG
                         : j->ws->gates + (size_t)s->t * n * NG;
    const enum ram_tensor_id wx = upper ? RAM_T_UX_W : RAM_T_CX_W,
                             wh = upper ? RAM_T_UH_W : RAM_T_CH_W,
                             b = upper ? RAM_T_U_B : RAM_T_C_B;
    /* h_0 = 0 contributes nothing, unless the context network made it */
    const bool recurrent = s->t > 0 || (p->context && (upper || p->core_layers == 1));
    const int blocks = NG / H, whole = u0 == 0 && u1 == H;
    for (int q = 0; q < (whole ? 1 : blocks); q++) {
        const int r0 = whole ? 0 : q * H + u0, r1 = whole ? NG : q * H + u1;
        linear_rows(j, x, in, n, in, wx, b, r0, r1, pre, NG, false);
        if (recurrent) linear_rows(j, ht, H, n, H, wh, RAM_T_COUNT, r0, r1, pre, NG, true);
    }
    if (lstm) {
        float *ct = (upper ? j->ws->c2 : j->ws->c) + (size_t)s->t * n * H;
        ram_lstm_forward_units(pre, ct, ct + (size_t)n * H, hn, n, H, u0, u1);
    } else {
        ram_relu_forward(hn + u0, n, u1 - u0, H);
    }
}

/* The context network: images [i0, i1) pooled, then units [u0, u1) of the
 * initial top state, ReLU(W pooled + b), for every image. */
static void context_net(const fwd_job *j, const share *sh) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    const int n = j->n, H = p->core_hidden, D = m->ctx_in;
    const size_t img = (size_t)p->channels * p->height * p->width;
    for (int i = sh->i0; i < sh->i1; i++)
        ram_context_pool(ram_images_from(j->images, (size_t)i, img), p->channels, p->height,
                         p->width, p->context, p->cell_samples, contrast_of(j, i),
                         j->ws->ctx_in + (size_t)i * D);
    ram_team_barrier(j->team);
    float *top = ram_top_state(m, j->ws);
    linear_rows(j, j->ws->ctx_in, D, n, D, RAM_T_CTX_W, RAM_T_CTX_B, sh->u0, sh->u1, top, H, false);
    ram_relu_forward(top + sh->u0, n, sh->u1 - sh->u0, H);
}

static share share_of(const fwd_job *j, int k, int nt) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    share sh = {.k = k, .nt = nt};
    ram_split(j->n, k, nt, 1, &sh.i0, &sh.i1);
    ram_split(p->glimpse_hidden, k, nt, 16, &sh.g0, &sh.g1);
    ram_split(p->loc_hidden, k, nt, 16, &sh.l0, &sh.l1);
    ram_split(p->glimpse_out, k, nt, 16, &sh.o0, &sh.o1);
    ram_split(p->core_hidden, k, nt, 16, &sh.u0, &sh.u1);
    const int D = m->rho_size;
    sh.whole_first = nt > 1 && j->n == 1 && !p->conv_channels && D <= SMALL_RHO_FLOATS &&
                     m->hgl <= SMALL_HGL_FLOATS && (long)D * p->glimpse_hidden <= SMALL_G1_FLOATS;
    return sh;
}

/* The start of a pass, thread sh->k's part: its images' initial states
 * zeroed, their contrast statistics, and the context network; then the
 * barriers after which every thread may read every image's h_0. */
static void start_pass(const fwd_job *j, const share *sh) {
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    ram_ws *ws = j->ws;
    const size_t H = (size_t)p->core_hidden, rows = (size_t)(sh->i1 - sh->i0) * H;
    const bool two = p->core_layers == 2;
    memset(ws->h + sh->i0 * H, 0, sizeof(float) * rows);
    if (p->core == RAM_CORE_LSTM) memset(ws->c + sh->i0 * H, 0, sizeof(float) * rows);
    if (two) memset(ws->h2 + sh->i0 * H, 0, sizeof(float) * rows);
    if (two && p->upper_core == RAM_CORE_LSTM) memset(ws->c2 + sh->i0 * H, 0, sizeof(float) * rows);
    if (ws->contrast) contrast_stats(j, sh); /* read after the barriers below */
    if (p->context) {
        ram_team_barrier(j->team); /* the context's rows overwrite every image's top h_0 */
        context_net(j, sh);
        ram_team_barrier(j->team);
    } else if (j->n < sh->nt) {
        ram_team_barrier(j->team); /* below, every thread reads every h_0 */
    }
}

/* One glimpse of the pass for j->n images, thread sh->k's part: the
 * locations and glimpses, the glimpse network and the core, with a barrier
 * after each layer that the next one reads. */
static void glimpse_step(const fwd_job *j, const share *sh, const step *s) {
    const bool together = j->n < sh->nt && j->n <= RAM_GEMV_MAX_ROWS;
    if (together)
        look_together(j, sh, s);
    else if (sh->i1 > sh->i0)
        look_apart(j, sh, s);
    /* The convolutional layer on this thread's images: at once when it
     * extracted them, after the other threads' rows when they shared them. */
    const bool conv = s->conv != NULL;
    if (conv && !together)
        ram_conv_forward(j->m, j->w, s->rho, sh->i0, sh->i1, j->ws->col, s->conv);
    if (!sh->whole_first) {
        ram_team_barrier(j->team);
        if (conv && together) {
            ram_conv_forward(j->m, j->w, s->rho, sh->i0, sh->i1, j->ws->col, s->conv);
            ram_team_barrier(j->team);
        }
        glimpse_net(j, sh, s);
    }
    ram_team_barrier(j->team);
    core_step(j, sh, s, false);
    ram_team_barrier(j->team);
    if (j->m->p.core_layers == 2) {
        core_step(j, sh, s, true);
        ram_team_barrier(j->team);
    }
}

/* One forward pass, as thread k of nt: the glimpses split by image and
 * every layer by output rows, with a barrier after each layer that the next
 * one reads: four per glimpse (two at batch 1 with a small first layer).
 * With nt = 1 (the trainer's case) each layer is one call. */
static void forward_part(void *arg, int k, int nt) {
    const fwd_job *j = arg;
    const struct ram_model *m = j->m;
    ram_ws *ws = j->ws;
    const int n = j->n, H = m->p.core_hidden, K = m->p.classes;
    const share sh = share_of(j, k, nt);

    start_pass(j, &sh);
    for (int t = 0; t < m->p.glimpses; t++) {
        const step s = step_at(j, t);
        glimpse_step(j, &sh, &s);
    }
    if (k != 0) return;
    /* Classifier on h_T (label s of S: on h after glimpse (s + 1) K); logits
     * are turned into probabilities in place. */
    for (int o = 0; o < m->p.objects; o++) {
        const float *hT = ws->h + (size_t)(o + 1) * m->p.emit_every * n * H;
        float *pr = ws->probs + (size_t)o * n * K;
        linear_rows(j, hT, H, n, H, RAM_T_CLS_W, RAM_T_CLS_B, 0, K, pr, K, false);
        ram_softmax(pr, pr, n, K);
    }
}

void ram_model_forward_team(const struct ram_model *m, ram_ws *ws, const float *images, int n,
                            ram_loc_mode mode, const float *eps_or_locs, float std,
                            ram_team *team) {
    ram_model_forward_with(m, m->w, (ram_w16){0}, NULL, ws, ram_images_f32(images), n, mode,
                           eps_or_locs, std, team);
}

void ram_model_forward_with(const struct ram_model *m, const float *w, ram_w16 w16,
                            const ram_cols *cols, ram_ws *ws, ram_images images, int n,
                            ram_loc_mode mode, const float *eps_or_locs, float std,
                            ram_team *team) {
    fwd_job j = {m,           w,   w16, cols && cols->data ? cols : NULL, ws, images, NULL, n, mode,
                 eps_or_locs, std, team};
    ram_team_run(team, forward_part, &j);
}

void ram_model_forward(const struct ram_model *m, ram_ws *ws, const float *images, int n,
                       ram_loc_mode mode, const float *eps_or_locs, float std) {
    ram_model_forward_team(m, ws, images, n, mode, eps_or_locs, std, NULL);
}

long ram_ws_bad_glimpse(const struct ram_model *m, const ram_ws *ws, int n, int *step) {
    /* The context's pooled image sums every pixel it reads (all of them
     * unless cell_samples): a NaN among them shows. */
    const size_t C = (size_t)m->ctx_in;
    for (size_t i = 0; i < (size_t)n * C; i++)
        if (!isfinite(ws->ctx_in[i])) {
            *step = 0;
            return (long)(i / C);
        }
    const size_t D = (size_t)m->rho_size, count = (size_t)m->p.glimpses * n * D;
    for (size_t i = 0; i < count; i++)
        if (!isfinite(ws->rho[i])) {
            *step = (int)(i / ((size_t)n * D));
            return (long)(i / D % n);
        }
    return -1;
}

/* Rows `keep[0..kept)` of a step's n rows of `width` floats at `a` (slot
 * `slot` of an array laid out T x n x width) moved, in order, to the same
 * slot laid out for `kept` rows.  Every destination lies at or before its
 * source, and before every source still to be moved. */
static void keep_rows(float *a, int slot, int n, int width, const int *keep, int kept) {
    if (!a) return;
    const size_t w = (size_t)width;
    for (int r = 0; r < kept; r++)
        memmove(a + ((size_t)slot * kept + r) * w, a + ((size_t)slot * n + keep[r]) * w,
                sizeof(float) * w);
}

/* What the threads of one stopping pass share.  Thread 0 alone writes
 * `live`, `bad` and job.n/job.rows, between barriers; the others read them
 * after the next one. */
typedef struct stop_job {
    fwd_job j;
    ram_stop_rule rule;
    int *steps;
    int live; /* images still glimpsing */
    long bad; /* the first image whose glimpse read a NaN or Inf pixel, or -1 */
    int bad_step;
} stop_job;

/* A stopping pass as thread k of nt: the forward pass's split of every
 * layer (forward_part()), then after each glimpse thread 0 alone runs the
 * classifier on the live images, retires the sure ones and gathers the rest
 * to the front, while the others wait at the barrier. */
static void stop_part(void *arg, int k, int nt) {
    stop_job *sj = arg;
    fwd_job *j = &sj->j;
    const struct ram_model *m = j->m;
    const ram_model_params *p = &m->p;
    ram_ws *ws = j->ws;
    const int T = p->glimpses, H = p->core_hidden, K = p->classes, D = m->rho_size;
    const bool two = p->core_layers == 2, lstm = p->core == RAM_CORE_LSTM,
               lstm2 = two && p->upper_core == RAM_CORE_LSTM;
    /* rows: each live row's image; keep: scratch (j->n is still the whole
     * call's count here) */
    int *rows = ws->halt_rows, *keep = ws->halt_rows + j->n;
    float *pr = ws->halt_probs;
    const share first = share_of(j, k, nt);
    start_pass(j, &first);
    for (int t = 0; t < T && sj->live > 0 && sj->bad < 0; t++) {
        const int live = sj->live;
        const share sh = share_of(j, k, nt);
        const step s = step_at(j, t);
        glimpse_step(j, &sh, &s);
        if (k == 0) {
            /* A NaN or Inf pixel poisons its cell (ram_ws_bad_glimpse()):
             * thread 0's glimpses are whole by now. */
            for (size_t v = 0; v < (size_t)live * D; v++)
                if (!isfinite(s.rho[v])) {
                    sj->bad_step = t;
                    sj->bad = rows[v / D];
                    break;
                }
            linear_rows(j, s.hn, H, live, H, RAM_T_CLS_W, RAM_T_CLS_B, 0, K, pr, K, false);
            ram_softmax(pr, pr, live, K);
            const ram_stop_rule *rule = &sj->rule;
            int kept = 0;
            for (int r = 0; r < live; r++) {
                const float *q = pr + (size_t)r * K;
                if (rule->record)
                    memcpy(rule->record + ((size_t)rows[r] * T + t) * K, q, sizeof(float) * K);
                const bool stop =
                    t == T - 1 || (rule->record ? false
                                   : rule->unit ? ram_stop_logit(rule->unit, q, K, t) > 0.0f
                                                : q[ram_argmax(q, K)] >= rule->threshold);
                if (stop) {
                    memcpy(ws->probs + (size_t)rows[r] * K, q, sizeof(float) * K);
                    if (sj->steps) sj->steps[rows[r]] = t + 1;
                } else {
                    keep[kept++] = r;
                }
            }
            if (kept < live && t < T - 1) {
                /* The finished images leave: the state the next step
                 * reads, h_t (and c_t, and the upper layer's), their
                 * statistics and their image numbers, gathered to the
                 * front. */
                keep_rows(ws->h, t + 1, live, H, keep, kept);
                keep_rows(lstm ? ws->c : NULL, t + 1, live, H, keep, kept);
                keep_rows(two ? ws->h2 : NULL, t + 1, live, H, keep, kept);
                keep_rows(lstm2 ? ws->c2 : NULL, t + 1, live, H, keep, kept);
                keep_rows(ws->contrast, 0, live, 2 * p->channels, keep, kept);
                for (int r = 0; r < kept; r++)
                    rows[r] = rows[keep[r]];
                sj->live = kept;
                j->n = kept;
            }
        }
        ram_team_barrier(j->team);
    }
}

long ram_model_forward_stop(const struct ram_model *m, const float *w, ram_w16 w16,
                            const ram_cols *cols, ram_ws *ws, ram_images images, int n,
                            const ram_stop_rule *rule, int *steps, int *bad_step, ram_team *team) {
    stop_job sj = {.j = {m, w, w16, cols && cols->data ? cols : NULL, ws, images, ws->halt_rows, n,
                         RAM_LOC_MEAN, NULL, 0, team},
                   .rule = *rule,
                   .steps = steps,
                   .live = n,
                   .bad = -1};
    for (int i = 0; i < n; i++)
        ws->halt_rows[i] = i;
    ram_team_run(team, stop_part, &sj);
    *bad_step = sj.bad_step;
    return sj.bad;
}
