/* Backpropagation through time over a forward pass's caches: the
 * classifier's and the location network's gradients through the core, the
 * glimpse network and the location network, and with the soft sensor the
 * classifier's through the glimpses into the locations.  The losses that seed it live
 * in the trainer and reinforce.c. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float bound_grad(ram_loc_bound b, float pre, float post) {
    if (b == RAM_BOUND_TANH) return 1.0f - post * post;
    return pre > -1.0f && pre < 1.0f ? 1.0f : 0.0f;
}

#define W(id)  ram_param(m, m->w, id)
#define GW(id) ram_param(m, ws->grad, id)

/* The glimpse network at step t, given ws->dg = dLoss/dg_t: the gradients
 * of its weights.  A hard glimpse is not differentiable in l, and l then
 * carries no gradient; with a soft sensor (images given), dLoss/dl_t,
 * through the location layer and through the sensor, goes to ws->dloc. */
static void glimpse_backward(const struct ram_model *m, ram_ws *ws, int n, int t,
                             const ram_images *images) {
    const ram_model_params *p = &m->p;
    const int D = m->rho_size, HG = m->hgl, Hg = p->glimpse_hidden, Hl = p->loc_hidden,
              G = p->glimpse_out, L = m->ld;
    const float *g = ws->g + (size_t)t * n * G, *hgl = ws->hgl + (size_t)t * n * HG;
    const float *rho = ws->rho + (size_t)t * n * D, *l = ws->loc + (size_t)t * n * L;
    if (p->form == RAM_GLIMPSE_MULTIPLICATIVE) {
        /* g = a (.) b: dL/da = dg (.) b, dL/db = dg (.) a, each through its ReLU. */
        const float *gm = ws->gm + (size_t)t * n * 2 * G;
        for (int i = 0; i < n; i++) {
            const float *a = gm + (size_t)i * 2 * G, *b = a + G, *dgi = ws->dg + (size_t)i * G;
            float *da = ws->dgm + (size_t)i * 2 * G, *db = da + G;
            for (int o = 0; o < G; o++) {
                da[o] = dgi[o] * b[o];
                db[o] = dgi[o] * a[o];
            }
        }
        ram_relu_backward(gm, ws->dgm, n, 2 * G, 2 * G);
        ram_linear_backward(ws->dgm, 2 * G, hgl, HG, n, Hg, G, W(RAM_T_G2_W), GW(RAM_T_G2_W),
                            GW(RAM_T_G2_B), ws->dhgl, HG, false, ws->gemm);
        ram_linear_backward(ws->dgm + G, 2 * G, hgl + Hg, HG, n, Hl, G, W(RAM_T_L2_W),
                            GW(RAM_T_L2_W), GW(RAM_T_L2_B), ws->dhgl + Hg, HG, false, ws->gemm);
    } else if (p->form == RAM_GLIMPSE_CONCAT) {
        ram_relu_backward(g, ws->dg, n, G, G);
        ram_linear_backward(ws->dg, G, hgl, HG, n, HG, G, W(RAM_T_G2_W), GW(RAM_T_G2_W),
                            GW(RAM_T_G2_B), ws->dhgl, HG, false, ws->gemm);
    } else {
        ram_relu_backward(g, ws->dg, n, G, G);
        ram_linear_backward(ws->dg, G, hgl, HG, n, Hg, G, W(RAM_T_G2_W), GW(RAM_T_G2_W),
                            GW(RAM_T_G2_B), ws->dhgl, HG, false, ws->gemm);
        ram_linear_backward(ws->dg, G, hgl + Hg, HG, n, Hl, G, W(RAM_T_L2_W), GW(RAM_T_L2_W),
                            GW(RAM_T_L2_B), ws->dhgl + Hg, HG, false, ws->gemm);
    }
    ram_relu_backward(hgl, ws->dhgl, n, HG, HG);
    const bool soft = images != NULL;
    if (p->conv_channels) {
        /* h_g read the convolutional layer's outputs: through them to its
         * filters and, for the soft sensor, to the glimpse. */
        const int D1 = m->g1_in;
        const float *conv = ws->conv + (size_t)t * n * D1;
        ram_linear_backward(ws->dhgl, HG, conv, D1, n, D1, Hg, W(RAM_T_G1_W), GW(RAM_T_G1_W),
                            GW(RAM_T_G1_B), ws->dconv, D1, false, ws->gemm);
        ram_conv_backward(m, rho, n, conv, ws->dconv, ws->col, ws->grad, soft ? ws->dcol : NULL,
                          soft ? ws->drho : NULL);
    } else {
        ram_linear_backward(ws->dhgl, HG, rho, D, n, D, Hg, W(RAM_T_G1_W), GW(RAM_T_G1_W),
                            GW(RAM_T_G1_B), soft ? ws->drho : NULL, D, false, ws->gemm);
    }
    ram_linear_backward(ws->dhgl + Hg, HG, l, L, n, L, Hl, W(RAM_T_L1_W), GW(RAM_T_L1_W),
                        GW(RAM_T_L1_B), soft ? ws->dloc : NULL, L, false, ws->gemm);
    if (!soft) return;
    /* The sensor saw l scaled to the retina's frame (range_x, range_y), and
     * with zoom its squares times exp(zoom_lo + (z + 1) zoom_half): d log
     * s / dz = zoom_half. */
    const size_t img = (size_t)p->channels * p->height * p->width;
    struct ram_glimpse zoomed;
    for (int i = 0; i < n; i++) {
        const float *li = l + (size_t)L * i;
        float dx, dy, ds;
        ram_glimpse_soft_backward(ram_model_sensor_at(m, li, &zoomed),
                                  ram_images_at(*images, i, img), p->channels, p->height, p->width,
                                  li[0] * m->range_x, li[1] * m->range_y, ws->drho + (size_t)i * D,
                                  &dx, &dy, L == 3 ? &ds : NULL);
        ws->dloc[L * i] += dx * m->range_x;
        ws->dloc[L * i + 1] += dy * m->range_y;
        if (L == 3) ws->dloc[L * i + 2] += ds * m->zoom_half;
    }
}

/* dLoss/dl_t in ws->dloc into dLoss/dmu_t in place: l = mu (MEAN), l =
 * clamp(mu + std eps, -1, 1) (SAMPLE: 1 where the sample is inside, 0 where
 * the clamp holds it at an edge), or given (FIXED: 0). */
static void location_through_l(const struct ram_model *m, ram_ws *ws, int n, int t,
                               ram_loc_mode mode) {
    const float *l = ws->loc + (size_t)t * n * m->ld;
    for (int i = 0; i < m->ld * n; i++)
        if (mode == RAM_LOC_FIXED || (mode == RAM_LOC_SAMPLE && !(l[i] > -1.0f && l[i] < 1.0f)))
            ws->dloc[i] = 0.0f;
}

/* The location network at step t, mu_t = bound(W h_t + b), given dmu_t:
 * its weights' gradients, and (into_core) dLoss/dh_t added to dh. */
static void location_backward(const struct ram_model *m, ram_ws *ws, int n, int t,
                              const float *dmut, bool into_core, float *dh) {
    const int H = m->p.core_hidden, L = m->ld;
    const float *ht = ram_top_state(m, ws) + (size_t)t * n * H;
    const float *mupre = ws->mupre + (size_t)t * n * L, *mu = ws->mu + (size_t)t * n * L;
    for (int i = 0; i < L * n; i++)
        ws->dmu[i] = dmut[i] * bound_grad(m->p.bound, mupre[i], mu[i]);
    ram_linear_backward(ws->dmu, L, ht, H, n, H, L, W(RAM_T_LOC_W), GW(RAM_T_LOC_W),
                        GW(RAM_T_LOC_B), into_core ? dh : NULL, H, true, ws->gemm);
}

/* The upper core layer at step t, r2_{t+1} = cell(r1_{t+1}, r2_t), given
 * du = dLoss/dr2_{t+1} (and dcu, the cell's): its weights' gradients,
 * dLoss/dr1_{t+1} added to dh, and (when r2_t depends on the weights)
 * dLoss/dr2_t into du2 and the cell's into dcu2. */
static void upper_backward(const struct ram_model *m, ram_ws *ws, int n, int t, float *du,
                           float *dcu, float *dh, float *du2, float *dcu2) {
    const ram_model_params *p = &m->p;
    const int H = p->core_hidden, NG = m->gates2;
    const float *r1 = ws->h + (size_t)(t + 1) * n * H, *ht = ws->h2 + (size_t)t * n * H;
    float *dpre;
    if (p->upper_core == RAM_CORE_LSTM) {
        const float *ct = ws->c2 + (size_t)t * n * H;
        ram_lstm_backward(ws->gates2 + (size_t)t * n * NG, ct, ct + (size_t)n * H, du, dcu,
                          ws->dgates2, dcu2, n, H);
        dpre = ws->dgates2;
    } else {
        ram_relu_backward(ht + (size_t)n * H, du, n, H, H);
        dpre = du;
    }
    ram_linear_backward(dpre, NG, r1, H, n, H, NG, W(RAM_T_UX_W), GW(RAM_T_UX_W), GW(RAM_T_U_B), dh,
                        H, true, ws->gemm);
    if (t > 0 || p->context)
        ram_linear_backward(dpre, NG, ht, H, n, H, NG, W(RAM_T_UH_W), GW(RAM_T_UH_W), NULL, du2, H,
                            false, ws->gemm);
}

/* The context network, given dtop = dLoss/d(top state at t = 0): its
 * weights' gradients (dtop is overwritten). */
static void context_backward(const struct ram_model *m, ram_ws *ws, int n, float *dtop) {
    const int H = m->p.core_hidden, D = m->ctx_in;
    ram_relu_backward(ram_top_state(m, ws), dtop, n, H, H);
    ram_linear_backward(dtop, H, ws->ctx_in, D, n, D, H, W(RAM_T_CTX_W), GW(RAM_T_CTX_W),
                        GW(RAM_T_CTX_B), NULL, D, false, ws->gemm);
}

/* Both backward passes: images NULL for the hard sensor's. */
static void backward_pass(const struct ram_model *m, ram_ws *ws, int n, const float *dmu,
                          bool detach_core, bool detach_soft, const ram_images *images,
                          ram_loc_mode mode) {
    const ram_model_params *p = &m->p;
    const int T = p->glimpses, H = p->core_hidden, G = p->glimpse_out, K = p->classes,
              NG = m->gates;
    const bool lstm = p->core == RAM_CORE_LSTM, two = p->core_layers == 2;
    /* The top layer's h_0 is a function of the weights only with a context. */
    const bool top0 = p->context > 0;
    float *dh = ws->dh, *dh2 = ws->dh2, *dc = ws->dc, *dc2 = ws->dc2;
    float *du = ws->du, *du2 = ws->du2, *dcu = ws->dcu, *dcu2 = ws->dcu2;
    /* ws->dlogits: S x n x K, label s from h after glimpse (s + 1) K; the
     * last label's is that of h_T. */
    const int S = p->objects, E = p->emit_every;
    ram_linear_backward(ws->dlogits + (size_t)(S - 1) * n * K, K, ws->h + (size_t)T * n * H, H, n,
                        H, K, W(RAM_T_CLS_W), GW(RAM_T_CLS_W), GW(RAM_T_CLS_B), dh, H, false,
                        ws->gemm);
    if (lstm) memset(dc, 0, sizeof(float) * n * H);
    if (two) memset(du, 0, sizeof(float) * n * H); /* nothing reads r2_T */
    if (two && p->upper_core == RAM_CORE_LSTM) memset(dcu, 0, sizeof(float) * n * H);
    for (int t = T - 1; t >= 0; t--) {
        if (two) {
            upper_backward(m, ws, n, t, du, dcu, dh, du2, dcu2);
            float *tmp = dcu;
            dcu = dcu2;
            dcu2 = tmp;
        }
        /* Here dh = dLoss/dh_{t+1}: through the core into dg and dh2. */
        const float *ht = ws->h + (size_t)t * n * H, *hn = ht + (size_t)n * H;
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
        ram_linear_backward(dpre, NG, ws->g + (size_t)t * n * G, G, n, G, NG, W(RAM_T_CX_W),
                            GW(RAM_T_CX_W), GW(RAM_T_C_B), ws->dg, G, false, ws->gemm);
        if (t > 0 || (top0 && !two))
            ram_linear_backward(dpre, NG, ht, H, n, H, NG, W(RAM_T_CH_W), GW(RAM_T_CH_W), NULL, dh2,
                                H, false, ws->gemm);
        if (t > 0 && t % E == 0) /* label t / E - 1 came from h_t: t > 0 wrote dh2 above */
            ram_linear_backward(ws->dlogits + (size_t)(t / E - 1) * n * K, K, ht, H, n, H, K,
                                W(RAM_T_CLS_W), GW(RAM_T_CLS_W), GW(RAM_T_CLS_B), dh2, H, true,
                                ws->gemm);
        glimpse_backward(m, ws, n, t, images);
        /* The location network reads the top layer: dLoss/d(its state at t). */
        float *dtop = two ? du2 : dh2;
        const bool top_t = t > 0 || top0;
        if (dmu)
            location_backward(m, ws, n, t, dmu + (size_t)t * n * m->ld, top_t && !detach_core,
                              dtop);
        if (images && mode != RAM_LOC_FIXED) {
            /* The backpropagated location term, into the core at every step
             * but the first (h_0 = 0 is no function of the weights), unless
             * it is to train the location network alone. */
            location_through_l(m, ws, n, t, mode);
            location_backward(m, ws, n, t, ws->dloc, top_t && !detach_soft, dtop);
        }
        float *tmp = dh;
        dh = dh2;
        dh2 = tmp;
        if (two) {
            tmp = du;
            du = du2;
            du2 = tmp;
        }
    }
    if (top0) context_backward(m, ws, n, two ? du : dh);
}

void ram_model_backward(const struct ram_model *m, ram_ws *ws, int n, const float *dmu,
                        bool detach_core) {
    backward_pass(m, ws, n, dmu, detach_core, false, NULL, RAM_LOC_FIXED);
}

void ram_model_backward_soft(const struct ram_model *m, ram_ws *ws, int n, const float *images,
                             ram_loc_mode mode, const float *dmu, bool detach_core,
                             bool detach_soft) {
    const ram_images b = ram_images_f32(images);
    backward_pass(m, ws, n, dmu, detach_core, detach_soft, &b, mode);
}

void ram_model_backward_images(const struct ram_model *m, ram_ws *ws, int n, ram_images images,
                               ram_loc_mode mode, const float *dmu, bool detach_core,
                               bool detach_soft) {
    backward_pass(m, ws, n, dmu, detach_core, detach_soft, &images, mode);
}
#undef W
#undef GW
