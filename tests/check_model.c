/* Whole-model gradient checks: backpropagation through time against central
 * finite differences, on the classification path and on the REINFORCE path
 * through the core, for every glimpse form, core type and bound. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3, C = 2, IMG_H = 10, IMG_W = 9 };

typedef struct fixture {
    struct ram_model *m;
    ram_ws ws;
    float images[N * C * IMG_H * IMG_W];
    int labels[N * 3]; /* N x objects */
    float *locs;       /* T x N x 2, fixed */
    float *R, *b;      /* T x N returns and baselines, fixed */
    float alpha, std;
} fixture;

static uint64_t lcg = 12345;
static float urand(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

/* The architectures checked: every glimpse form, cell, bound, and DRAM's
 * parts (two core layers with either upper cell, the context network), and
 * the contrast input. */
typedef struct config {
    ram_glimpse_form form;
    ram_core_type core;
    ram_loc_bound bound;
    int layers;               /* core_layers */
    ram_core_type upper_core; /* with 2 layers */
    int context;              /* the context's side, or 0 */
    int objects;              /* labels per image: 2 of 4 glimpses, or 3 of 3 */
    int contrast;             /* cells as contrast magnitudes */
    float zoom;               /* zoom as an action in [1 / zoom, zoom], or 0 */
    int conv, kernel, stride; /* the convolutional layer's channels (0: none), filters */
} config;

static const config configs[] = {
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_HARDTANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0,
     0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 0,
     0, 0},
    /* two layers */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 2, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 2, RAM_CORE_RNN, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_RNN, RAM_BOUND_HARDTANH, 2, RAM_CORE_LSTM, 0, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 2, RAM_CORE_LSTM, 0, 1, 0, 0, 0, 0,
     0},
    /* the context network, on one layer and on two (5 x 5 of a 10 x 9 image;
     * 12 x 12: more cells than pixels) */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 5, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 12, 1, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 2, RAM_CORE_RNN, 5, 1, 0, 0, 0, 0,
     0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_HARDTANH, 2, RAM_CORE_LSTM, 4, 1, 0, 0, 0, 0, 0},
    /* several objects: a label every 2 glimpses of 4, or after each of 3 */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 2, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 3, 0, 0, 0, 0, 0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 2, RAM_CORE_LSTM, 5, 2, 0, 0, 0, 0,
     0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 2, RAM_CORE_LSTM, 4, 3, 0, 0, 0, 0,
     0},
    /* contrast magnitudes in the retina and in the context */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 5, 1, 1, 0, 0, 0, 0},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 2, RAM_CORE_LSTM, 4, 2, 1, 0, 0, 0,
     0},
    /* zoom as an action: a third location output, and the glimpse
     * network's location layer reads it */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 2.0f, 0, 0, 0},
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 2, RAM_CORE_LSTM, 4, 2, 0, 1.5f, 0, 0,
     0},
    /* the convolutional layer on a 5 x 5 patch: 3 x 3 filters at stride 1
     * (3 x 3 positions), and 2 x 2 ones at stride 2 (2 x 2 positions; the
     * last row and column read by none) */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 3, 3, 1},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 1, RAM_CORE_RNN, 0, 1, 0, 0, 2, 2, 2},
    {RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 2, RAM_CORE_LSTM, 4, 2, 1, 0, 3, 2,
     1},
};
enum { N_CONFIGS = sizeof configs / sizeof *configs };

static void setup(fixture *f, const config *c) {
    /* The same data in every test, whatever ran before it in this process
     * (CK_FORK=no, as under valgrind, runs them all in one). */
    lcg = 12345;
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = C;
    p.height = IMG_H;
    p.width = IMG_W;
    p.glimpse.patch = c->conv ? 5 : 3;
    p.glimpse.depth = 2;
    p.glimpse.scale = 2;
    p.form = c->form;
    p.glimpse_hidden = 5;
    p.loc_hidden = 4;
    p.glimpse_out = 6;
    p.core_hidden = 7;
    p.core = c->core;
    p.core_layers = c->layers;
    p.upper_core = c->upper_core;
    p.context = c->context;
    p.classes = 4;
    p.bound = c->bound;
    p.objects = c->objects;
    p.contrast = c->contrast;
    p.zoom_min = c->zoom > 0 ? 1.0f / c->zoom : 0.0f;
    p.zoom_max = c->zoom;
    p.conv_channels = c->conv;
    if (c->conv) p.conv_kernel = c->kernel, p.conv_stride = c->stride;
    p.glimpses = p.objects == 2 ? 4 : 3;
    p.loc_range_pixels = 0;
    p.init_scale = 0.4f; /* large enough that gradients dwarf float rounding */
    /* With the convolutional layer's ReLU at every position of every
     * glimpse, seed 7 leaves one of them within a difference step of its
     * kink, where a central difference is not the derivative; 11 none. */
    p.seed = c->conv ? 11 : 7;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    f->m = m;
    ck_assert_int_eq(ram_ws_init(&f->ws, m, N, true), RAM_OK);
    for (size_t i = 0; i < sizeof f->images / sizeof *f->images; i++)
        f->images[i] = urand();
    for (int i = 0; i < N * p.objects; i++)
        f->labels[i] = (i * 3 + 1) % p.classes;
    const int T = p.glimpses, L = m->ld;
    ck_assert_int_eq(L, c->zoom > 0 ? 3 : 2);
    f->locs = malloc(sizeof(float) * T * N * L);
    f->R = malloc(sizeof(float) * T * N);
    f->b = malloc(sizeof(float) * T * N);
    for (int i = 0; i < T * N * L; i++)
        f->locs[i] = 1.6f * urand() - 0.8f;
    for (int i = 0; i < T * N; i++) {
        f->R[i] = urand() < 0.5f ? 1.0f : 0.0f;
        f->b[i] = 0.6f * urand();
    }
    f->alpha = 3.0f; /* let the surrogate dominate: a wrong location gradient shows */
    f->std = 0.3f;
}

static void teardown(fixture *f) {
    ram_ws_release(&f->ws);
    ram_model_free(f->m);
    free(f->locs);
    free(f->R);
    free(f->b);
}

/* Loss = mean cross-entropy + (with_reinforce) the REINFORCE surrogate
 * -alpha/N sum_{t,i} (R - b) log N(l | mu, std^2) at the fixed locations. */
static double loss(fixture *f, bool with_reinforce) {
    const struct ram_model *m = f->m;
    const int T = m->p.glimpses, K = m->p.classes, S = m->p.objects;
    ram_model_forward(m, &f->ws, f->images, N, RAM_LOC_FIXED, f->locs, 0);
    double L = 0;
    for (int o = 0; o < S; o++)
        for (int i = 0; i < N; i++)
            L -= log(f->ws.probs[(o * N + i) * K + f->labels[i * S + o]]) / N;
    if (with_reinforce)
        for (int t = 0; t < T; t++)
            for (int i = 0; i < N; i++)
                for (int d = 0; d < m->ld; d++) {
                    size_t k = ((size_t)t * N + i) * m->ld + d;
                    double z = (f->locs[k] - f->ws.mu[k]) / f->std;
                    L += f->alpha * (f->R[t * N + i] - f->b[t * N + i]) * 0.5 * z * z / N;
                }
    return L;
}

/* Analytic gradient into f->ws.grad. */
static void analytic(fixture *f, bool with_reinforce, bool detach) {
    const struct ram_model *m = f->m;
    const int T = m->p.glimpses, K = m->p.classes, S = m->p.objects;
    ram_model_forward(m, &f->ws, f->images, N, RAM_LOC_FIXED, f->locs, 0);
    for (int q = 0; q < S * N; q++) /* q = o * N + i */
        for (int k = 0; k < K; k++)
            f->ws.dlogits[q * K + k] =
                (f->ws.probs[q * K + k] - (k == f->labels[q % N * S + q / N])) / N;
    float *dmu = NULL;
    if (with_reinforce) {
        const int L = m->ld;
        dmu = malloc(sizeof(float) * T * N * L);
        for (int t = 0; t < T; t++)
            ck_assert_int_eq(ram_reinforce_gaussian(f->locs + t * N * L, f->ws.mu + t * N * L, N, L,
                                                    f->std, f->R + t * N, f->b + t * N, f->alpha, N,
                                                    dmu + t * N * L),
                             RAM_OK);
    }
    memset(f->ws.grad, 0, sizeof(float) * m->n_params);
    ram_model_backward(m, &f->ws, N, dmu, detach);
    free(dmu);
}

/* Compare ws.grad with central differences over every parameter whose
 * tensor is selected by `which` (NULL: all). Returns the relative error
 * ||a - n|| / (||a|| + ||n||). */
static double compare(fixture *f, bool with_reinforce, const bool *which) {
    struct ram_model *m = f->m;
    float *g = malloc(sizeof(float) * m->n_params);
    memcpy(g, f->ws.grad, sizeof(float) * m->n_params);
    double diff = 0, na = 0, nn = 0;
    const float h = 1e-3f;
    for (int id = 0; id < RAM_T_COUNT; id++) {
        if (which && !which[id]) continue;
        size_t n = (size_t)m->t[id].rows * m->t[id].cols;
        for (size_t j = 0; j < n; j++) {
            size_t k = m->t[id].off + j;
            float w0 = m->w[k];
            m->w[k] = w0 + h;
            double lp = loss(f, with_reinforce);
            m->w[k] = w0 - h;
            double lm = loss(f, with_reinforce);
            m->w[k] = w0;
            double num = (lp - lm) / (2.0 * h);
            diff += (num - g[k]) * (num - g[k]);
            na += (double)g[k] * g[k];
            nn += num * num;
        }
    }
    free(g);
    ck_assert_msg(na > 1e-8, "the analytic gradient is zero: nothing was checked");
    return sqrt(diff) / (sqrt(na) + sqrt(nn));
}

/* The convolutional layer alone, loss = sum c . out for fixed c: its
 * gradient w.r.t. the glimpse (the soft sensor's path to the location) and
 * w.r.t. its filters and biases, against central differences in double
 * (a small layer: float rounding stays far below the tolerance), for
 * filters at stride 1 and at a stride that leaves values unread. */
static double conv_loss(const struct ram_model *m, const float *rho, int n, const float *c,
                        float *col, float *out) {
    ram_conv_forward(m, m->w, rho, 0, n, col, out);
    double L = 0;
    for (size_t k = 0; k < (size_t)n * m->g1_in; k++)
        L += (double)c[k] * out[k];
    return L;
}

START_TEST(conv_layer_gradient) {
    static const int shapes[][3] = {{3, 3, 1}, {2, 2, 2}, {2, 1, 1}, {4, 5, 2}};
    const int *sh = shapes[_i];
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = 2;
    p.height = p.width = 12;
    p.glimpse.patch = 5;
    p.glimpse.depth = 2;
    p.conv_channels = sh[0];
    p.conv_kernel = sh[1];
    p.conv_stride = sh[2];
    p.init_scale = 0.5f;
    p.seed = 3;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(m->conv_q, (5 - sh[1]) / sh[2] + 1);
    ck_assert_int_eq(m->g1_in, sh[0] * m->conv_q * m->conv_q);
    enum { NI = 2 };
    const size_t D = (size_t)m->rho_size, O = (size_t)m->g1_in,
                 colsz = (size_t)m->conv_q * m->conv_q * m->conv_in;
    float *rho = malloc(sizeof(float) * NI * D), *c = malloc(sizeof(float) * NI * O);
    float *out = malloc(sizeof(float) * NI * O), *dout = malloc(sizeof(float) * NI * O);
    float *col = malloc(sizeof(float) * NI * colsz), *dcol = malloc(sizeof(float) * NI * colsz);
    float *drho = malloc(sizeof(float) * NI * D), *grad = calloc(m->n_params, sizeof(float));
    lcg = 100; /* a draw with no output within a difference step of zero */
    for (size_t k = 0; k < NI * D; k++)
        rho[k] = urand();
    for (size_t k = 0; k < NI * O; k++)
        c[k] = urand() - 0.5f;
    conv_loss(m, rho, NI, c, col, out);
    memcpy(dout, c, sizeof(float) * NI * O);
    ram_conv_backward(m, rho, NI, out, dout, col, grad, dcol, drho);
    int alive = 0;
    for (size_t k = 0; k < NI * O; k++)
        alive += out[k] > 0;
    ck_assert_msg(alive > 0 && alive < (int)(NI * O), "%d of %zu outputs positive", alive, NI * O);
    const float h = 1e-3f;
    double diff = 0, norm = 0;
    for (size_t k = 0; k < NI * D; k++) { /* the glimpse */
        const float v = rho[k];
        rho[k] = v + h;
        const double lp = conv_loss(m, rho, NI, c, col, out);
        rho[k] = v - h;
        const double lm = conv_loss(m, rho, NI, c, col, out);
        rho[k] = v;
        const double num = (lp - lm) / (2.0 * h);
        diff += (num - drho[k]) * (num - drho[k]);
        norm += num * num;
    }
    for (int id = RAM_T_CONV_W; id <= RAM_T_CONV_B; id++) /* the filters and biases */
        for (size_t j = 0; j < (size_t)m->t[id].rows * m->t[id].cols; j++) {
            float *w = m->w + m->t[id].off + j;
            const float v = *w;
            *w = v + h;
            const double lp = conv_loss(m, rho, NI, c, col, out);
            *w = v - h;
            const double lm = conv_loss(m, rho, NI, c, col, out);
            *w = v;
            const double num = (lp - lm) / (2.0 * h), an = grad[m->t[id].off + j];
            diff += (num - an) * (num - an);
            norm += num * num;
        }
    ck_assert_msg(norm > 1e-4, "no gradient to check");
    ck_assert_msg(sqrt(diff / norm) < 1e-3, "shape %d: relative error %g", _i, sqrt(diff / norm));
    free(rho), free(c), free(out), free(dout), free(col), free(dcol), free(drho), free(grad);
    ram_model_free(m);
}
END_TEST

START_TEST(classification_gradient) {
    fixture f;
    setup(&f, &configs[_i]);
    analytic(&f, false, false);
    double rel = compare(&f, false, NULL);
    ck_assert_msg(rel < 2e-3, "config %d: relative gradient error %g", _i, rel);
    teardown(&f);
}
END_TEST

/* REINFORCE flowing from mu_t back through the core and glimpse networks
 * (Torch's behaviour): the full gradient of cross-entropy + surrogate. */
START_TEST(reinforce_through_core_gradient) {
    fixture f;
    setup(&f, &configs[_i]);
    analytic(&f, true, false);
    double rel = compare(&f, true, NULL);
    ck_assert_msg(rel < 1e-3, "config %d: relative gradient error %g", _i, rel);
    if (configs[_i].layers == 2 || configs[_i].context || configs[_i].conv) {
        /* DRAM's tensors and the convolutional layer's alone: they have a
         * gradient (compare() refuses a zero one), and it is right. */
        bool dram[RAM_T_COUNT] = {0};
        for (int id = RAM_T_V1_COUNT; id < RAM_T_COUNT; id++)
            dram[id] = true;
        analytic(&f, true, false);
        rel = compare(&f, true, dram);
        ck_assert_msg(rel < 1e-3, "config %d: DRAM tensors' gradient error %g", _i, rel);
    }
    teardown(&f);
}
END_TEST

/* Detached: the location network gets the full surrogate gradient, every
 * other tensor exactly the classification gradient. */
START_TEST(reinforce_detached_gradient) {
    fixture f;
    setup(&f, &configs[_i]);
    bool loc[RAM_T_COUNT] = {0}, rest[RAM_T_COUNT];
    loc[RAM_T_LOC_W] = loc[RAM_T_LOC_B] = true;
    for (int i = 0; i < RAM_T_COUNT; i++)
        rest[i] = !loc[i];
    analytic(&f, true, true);
    double rel_loc = compare(&f, true, loc);
    ck_assert_msg(rel_loc < 1e-3, "config %d: location net error %g", _i, rel_loc);
    analytic(&f, true, true);
    double rel_rest = compare(&f, false, rest);
    ck_assert_msg(rel_rest < 2e-3, "config %d: rest error %g", _i, rel_rest);
    /* and the detached gradient really differs from the full one */
    analytic(&f, true, true);
    float *det = malloc(sizeof(float) * f.m->n_params);
    memcpy(det, f.ws.grad, sizeof(float) * f.m->n_params);
    analytic(&f, true, false);
    double d = 0;
    for (size_t k = 0; k < f.m->n_params; k++)
        d += fabs(det[k] - f.ws.grad[k]);
    ck_assert_msg(d > 1e-4, "detaching changed nothing (%g)", d);
    free(det);
    teardown(&f);
}
END_TEST

/* Sampling mode is mean + std * noise, clamped; mean mode equals sampling
 * with zero noise. */
START_TEST(sample_mode_locations) {
    fixture f;
    setup(&f, &configs[0]);
    const int T = f.m->p.glimpses;
    float *eps = calloc((size_t)T * N * 2, sizeof(float));
    ram_model_forward(f.m, &f.ws, f.images, N, RAM_LOC_MEAN, NULL, 0);
    float p_mean[N * 4];
    memcpy(p_mean, f.ws.probs, sizeof p_mean);
    ram_model_forward(f.m, &f.ws, f.images, N, RAM_LOC_SAMPLE, eps, 0.5f);
    ck_assert_mem_eq(p_mean, f.ws.probs, sizeof p_mean);
    for (int i = 0; i < T * N * 2; i++)
        eps[i] = i % 2 ? 9.0f : -0.1f;
    ram_model_forward(f.m, &f.ws, f.images, N, RAM_LOC_SAMPLE, eps, 0.5f);
    for (int i = 0; i < T * N * 2; i++) {
        float want = f.ws.mu[i] + 0.5f * eps[i];
        want = want > 1 ? 1 : want < -1 ? -1 : want;
        ck_assert_float_eq_tol(f.ws.loc[i], want, 1e-6);
    }
    free(eps);
    teardown(&f);
}
END_TEST

/* Large-batch inference with the sparse kernels (lib/model.c, linear_rows):
 * each image of a call of more than 8 goes through the column kernel when
 * its ReLU layer's input is at least 5/8 zeros and through one sgemm with
 * the others otherwise.  The model below has negative biases, so that dark
 * images leave (almost) only zeros and bright ones about half: a batch
 * takes both ways, in the same layer.  Each image's probabilities and
 * locations must then agree with the plain forward pass (sgemm
 * throughout) to within float rounding, whatever the other images in the
 * call and the state's thread count.  With a convolutional layer (loop 1)
 * h_g is fed by its ReLU too: dark glimpses leave its outputs all zero. */
START_TEST(batch_sparse_path) {
    enum { BN = 24, SIDE = 12, BK = 5 };
    const int conv = _i ? 4 : 0;
    ram_model_params p;
    ram_model_params_init(&p);
    p.height = p.width = SIDE;
    p.glimpse.patch = 4;
    p.glimpse.depth = 2;
    p.glimpse_hidden = 24;
    p.loc_hidden = 16;
    p.glimpse_out = 40;
    p.core_hidden = 48;
    p.core = RAM_CORE_RNN;
    p.glimpses = 3;
    p.classes = BK;
    p.init_scale = 0.5f;
    p.seed = 3;
    p.conv_channels = conv;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    const enum ram_tensor_id biases[] = {RAM_T_G1_B, RAM_T_G2_B, RAM_T_L2_B, RAM_T_C_B,
                                         RAM_T_CONV_B};
    for (size_t k = 0; k < sizeof biases / sizeof *biases - !conv; k++) {
        float *b = ram_param(m, m->w, biases[k]);
        for (int r = 0; r < m->t[biases[k]].rows * m->t[biases[k]].cols; r++)
            b[r] = k == 0 ? 0.0f : -0.2f; /* h_g: all zeros for a dark glimpse, half else */
    }
    ram_model_touch(m);
    static float img[BN * SIDE * SIDE];
    lcg = 77;
    for (int i = 0; i < BN; i++) /* every third image dark */
        for (int q = 0; q < SIDE * SIDE; q++)
            img[i * SIDE * SIDE + q] = (i % 3 ? 3.0f : 0.0f) * urand();

    /* The reference, and what it shows: both kinds of image in one layer. */
    ram_ws ws;
    ck_assert_int_eq(ram_ws_init(&ws, m, BN, false), RAM_OK);
    ram_model_forward(m, &ws, img, BN, RAM_LOC_MEAN, NULL, 0);
    const int T = p.glimpses;
    /* G2's input, [h_g; h_l], or with the layer G1's, its outputs */
    const int HG = conv ? m->g1_in : m->hgl;
    const float *fed = conv ? ws.conv : ws.hgl;
    int sparse = 0, dense = 0;
    for (int i = 0; i < BN; i++) {
        int zeros = 0;
        for (int c = 0; c < HG; c++)
            zeros += fed[(size_t)(T - 1) * BN * HG + (size_t)i * HG + c] == 0.0f;
        if (zeros >= HG * 5 / 8)
            sparse++;
        else
            dense++;
    }
    ck_assert_msg(sparse >= 4 && dense >= 4, "%s of the last glimpse: %d images sparse, %d not",
                  conv ? "the convolutional layer's outputs" : "[h_g; h_l]", sparse, dense);

    /* One state of one thread and one of two (each thread half of the
     * batch), whole batches and others: the last 12 images, then 12 in
     * reverse order.  sgemm may round a row differently in another batch,
     * so the check is against the reference within float rounding; a
     * mixed-up gather or scatter would be far off. */
    float got[BN * BK], gloc[BN * 3 * 2];
    static float rev[BN * SIDE * SIDE];
    int order[BN];
    for (int i = 0; i < BN; i++) {
        order[i] = BN - 1 - i;
        memcpy(rev + (size_t)i * SIDE * SIDE, img + (size_t)order[i] * SIDE * SIDE,
               sizeof(float) * SIDE * SIDE);
    }
    ram_state *states[2];
    ck_assert_int_eq(ram_state_create(m, BN, &states[0]), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(m, BN, 2, &states[1]), RAM_OK);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 3; c++) {
            const int n = c == 0 ? BN : BN / 2, first = c == 1 ? BN / 2 : 0;
            const float *x = (c == 2 ? rev : img) + (size_t)first * SIDE * SIDE;
            ck_assert_int_eq(ram_model_classify(m, states[k], x, n, NULL, got, gloc), RAM_OK);
            for (int i = 0; i < n; i++) {
                const int r = c == 2 ? order[i] : first + i; /* the image's row in ws */
                for (int q = 0; q < BK; q++)
                    ck_assert_msg(fabsf(got[i * BK + q] - ws.probs[r * BK + q]) < 1e-5f,
                                  "%d threads, case %d, image %d: probability %g, want %g", k + 1,
                                  c, r, (double)got[i * BK + q], (double)ws.probs[r * BK + q]);
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < 2; d++) {
                        const float want =
                            ws.loc[((size_t)t * BN + r) * 2 + d] * (d ? m->range_y : m->range_x);
                        ck_assert_float_eq_tol(gloc[(i * T + t) * 2 + d], want, 1e-4f);
                    }
            }
        }
    ram_state_free(states[1]);
    ram_state_free(states[0]);
    ram_ws_release(&ws);
    ram_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("gradients");
    tcase_add_loop_test(tc, conv_layer_gradient, 0, 4);
    tcase_add_loop_test(tc, classification_gradient, 0, N_CONFIGS);
    tcase_add_loop_test(tc, reinforce_through_core_gradient, 0, N_CONFIGS);
    tcase_add_loop_test(tc, reinforce_detached_gradient, 0, N_CONFIGS);
    tcase_add_test(tc, sample_mode_locations);
    tcase_add_loop_test(tc, batch_sparse_path, 0, 2);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
