/* A model with the soft sensor: the whole loss's gradient with respect to
 * every weight, backpropagated through the sensor into the locations and
 * through time, against central finite differences (mean locations, and
 * sampled ones through the clamp); the sensor in the model file; and the
 * trainer's soft and hybrid modes, and its label smoothing. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 3, C = 2, IMG_H = 22, IMG_W = 24 };

typedef struct fixture {
    struct ram_model *m;
    ram_ws ws;
    float images[N * C * IMG_H * IMG_W];
    int labels[N];
    float *eps; /* T x N x 2 noise for SAMPLE */
    float std;
    /* NULL, or T x N x 2 coefficients c: the loss is then sum c . mu_t
     * instead of the cross-entropy, a stand-in for REINFORCE's term, whose
     * gradient w.r.t. mu is c */
    const float *coef;
    float smoothing; /* the cross-entropy's target: (1 - e) on the label, e / K on each class */
} fixture;

static uint64_t lcg = 12345;
static float urand(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

/* DRAM's parts, for setup(): none, or these core layers, upper cell and
 * context side. */
typedef struct dram_parts {
    int layers;
    ram_core_type upper;
    int context;
    float zoom_min, zoom_max; /* zoom as an action (0, 0: none) */
    int conv, kernel, stride; /* the convolutional layer (0 channels: none) */
} dram_parts;

static void setup_dram(fixture *f, ram_glimpse_form form, ram_core_type core, ram_loc_bound bound,
                       float range_pixels, dram_parts d) {
    lcg = 12345;
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = C;
    p.height = IMG_H;
    p.width = IMG_W;
    /* Squares of 3 and 6 pixels: cells of one pixel (bilinear samples) and
     * of two (area averages).  Cells of a non-integer width (5/3 pixel)
     * have their edges at several fractions of a pixel, and the sensor's
     * kinks come closer together than the differences below can step over
     * (errors of 1 to 4 % where these are below 1 %): check_soft_glimpse
     * checks the sensor's derivative there. */
    p.glimpse.patch = 3;
    p.glimpse.depth = 2;
    p.glimpse.scale = 2;
    p.sensor = RAM_SENSOR_SOFT;
    p.form = form;
    p.glimpse_hidden = 5;
    p.loc_hidden = 4;
    /* The multiplicative form's g is nonzero where both ReLU factors are,
     * about a quarter of its units: a wider g keeps some alive. */
    p.glimpse_out = form == RAM_GLIMPSE_MULTIPLICATIVE ? 16 : 6;
    p.core_hidden = 7;
    p.core = core;
    p.core_layers = d.layers ? d.layers : 1;
    p.upper_core = d.upper;
    p.context = d.context;
    p.zoom_min = d.zoom_min;
    p.zoom_max = d.zoom_max;
    p.conv_channels = d.conv;
    if (d.conv) p.conv_kernel = d.kernel, p.conv_stride = d.stride;
    p.glimpses = 3;
    p.classes = 4;
    p.bound = bound;
    p.loc_range_pixels = range_pixels;
    p.init_scale = 0.4f;
    /* With the convolutional layer, seed 7 leaves a kink of the sensor or
     * of a ReLU within a difference step of the location network's
     * weights (errors of 1 to 2 % there); 14 none. */
    p.seed = d.conv ? 14 : 7;
    ck_assert_int_eq(ram_model_create(&p, &f->m), RAM_OK);
    ck_assert_int_eq(f->m->sensor.sensor, RAM_SENSOR_SOFT);
    ck_assert_int_eq(ram_ws_init(&f->ws, f->m, N, true), RAM_OK);
    /* Smooth images that fade to 0 at the edges: the loss, piecewise
     * smooth in the weights (the sensor is piecewise bilinear in the
     * location), then bends little where a sample crosses a pixel centre
     * or a cell's edge a pixel edge, and central differences across such a
     * kink stay close to the derivative. */
    const double pi = 3.14159265358979;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < IMG_H; y++)
                for (int x = 0; x < IMG_W; x++) {
                    const double u = (x + 0.5) / IMG_W, v = (y + 0.5) / IMG_H;
                    f->images[((i * C + c) * IMG_H + y) * IMG_W + x] =
                        (float)(sin(pi * u) * sin(pi * v) *
                                (0.6 + 0.4 * sin(2.5 * u * (c + 1) + 3.0 * v + i)));
                }
    for (int i = 0; i < N; i++)
        f->labels[i] = i % p.classes;
    const int T = p.glimpses;
    const int L = f->m->ld;
    f->eps = malloc(sizeof(float) * T * N * L);
    for (int i = 0; i < T * N * L; i++) /* some samples beyond +-1: the clamp holds them */
        f->eps[i] = i % 7 == 3 ? 9.0f : 2 * urand() - 1;
    f->std = 0.3f;
    f->coef = NULL;
    f->smoothing = 0.0f;
}

static void setup(fixture *f, ram_glimpse_form form, ram_core_type core, ram_loc_bound bound,
                  float range_pixels) {
    setup_dram(f, form, core, bound, range_pixels, (dram_parts){1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0});
}

static void teardown(fixture *f) {
    ram_ws_release(&f->ws);
    ram_model_free(f->m);
    free(f->eps);
}

/* Mean cross-entropy with locations from `mode` (MEAN or SAMPLE). */
static double loss(fixture *f, ram_loc_mode mode) {
    const int K = f->m->p.classes;
    ram_model_forward(f->m, &f->ws, f->images, N, mode, f->eps, f->std);
    double L = 0;
    if (f->coef) {
        for (int k = 0; k < f->m->p.glimpses * N * f->m->ld; k++)
            L += (double)f->coef[k] * f->ws.mu[k];
        return L;
    }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++) {
            const double target = (k == f->labels[i] ? 1.0 - f->smoothing : 0.0) + f->smoothing / K;
            L -= target * log(f->ws.probs[i * K + k]) / N;
        }
    return L;
}

static void analytic(fixture *f, ram_loc_mode mode) {
    const struct ram_model *m = f->m;
    const int K = m->p.classes;
    ram_model_forward(m, &f->ws, f->images, N, mode, f->eps, f->std);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++)
            f->ws.dlogits[i * K + k] =
                f->coef ? 0.0f : (f->ws.probs[i * K + k] - (k == f->labels[i])) / N;
    memset(f->ws.grad, 0, sizeof(float) * m->n_params);
    ram_model_backward_soft(m, &f->ws, N, f->images, mode, f->coef, false, false);
}

static double central(fixture *f, size_t k, float h, ram_loc_mode mode) {
    float *w = f->m->w;
    const float w0 = w[k];
    w[k] = w0 + h;
    const double lp = loss(f, mode);
    w[k] = w0 - h;
    const double lm = loss(f, mode);
    w[k] = w0;
    return (lp - lm) / (2.0 * h);
}

/* ||analytic - numeric|| / (||analytic|| + ||numeric||) over the tensors
 * `which` selects (NULL: all); *norm gets ||analytic|| over them.  The loss
 * has kinks (ReLUs, and the sensor wherever a sample crosses a pixel
 * centre or a cell's edge a pixel edge), where a central difference is not
 * the derivative: a weight whose differences over h and 2h disagree has a
 * kink within reach and is left out, and at most 1 in 20 may be. */
static double compare(fixture *f, ram_loc_mode mode, const bool *which, double *norm) {
    struct ram_model *m = f->m;
    float *g = malloc(sizeof(float) * m->n_params);
    memcpy(g, f->ws.grad, sizeof(float) * m->n_params);
    double diff = 0, na = 0, nn = 0;
    const float h = 1e-3f;
    size_t count = 0, kinked = 0;
    for (int id = 0; id < RAM_T_COUNT; id++) {
        if (which && !which[id]) continue;
        const size_t n = (size_t)m->t[id].rows * m->t[id].cols;
        for (size_t j = 0; j < n; j++) {
            const size_t k = m->t[id].off + j;
            const double num = central(f, k, h, mode), wide = central(f, k, 2 * h, mode);
            count++;
            if (fabs(num - wide) > 0.02 * fabs(num) + 2e-4) {
                kinked++;
                continue;
            }
            diff += (num - g[k]) * (num - g[k]);
            na += (double)g[k] * g[k];
            nn += num * num;
        }
    }
    free(g);
    ck_assert_msg(kinked * 20 <= count || kinked <= 1, "%zu of %zu weights near a kink", kinked,
                  count);
    *norm = sqrt(na);
    return sqrt(diff) / (sqrt(na) + sqrt(nn) + 1e-30);
}

static const struct {
    ram_glimpse_form form;
    ram_core_type core;
    ram_loc_bound bound;
    float range; /* loc_range_pixels: 0 (the image's edge) or another frame */
    dram_parts dram;
} configs[] = {
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 0.0f, {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_RNN, RAM_BOUND_TANH, 7.0f, {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_ADDITIVE,
     RAM_CORE_LSTM,
     RAM_BOUND_TANH,
     0.0f,
     {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_CONCAT,
     RAM_CORE_LSTM,
     RAM_BOUND_HARDTANH,
     7.0f,
     {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_ADDITIVE,
     RAM_CORE_RNN,
     RAM_BOUND_HARDTANH,
     0.0f,
     {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_MULTIPLICATIVE,
     RAM_CORE_LSTM,
     RAM_BOUND_TANH,
     7.0f,
     {1, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    /* DRAM's core and context: the locations, and so the loss, depend on them */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 7.0f, {2, RAM_CORE_RNN, 0, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_ADDITIVE,
     RAM_CORE_LSTM,
     RAM_BOUND_TANH,
     7.0f,
     {2, RAM_CORE_LSTM, 4, 0, 0, 0, 0, 0}},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_RNN, RAM_BOUND_TANH, 0.0f, {1, RAM_CORE_RNN, 5, 0, 0, 0, 0, 0}},
    /* zoom as an action: the gradient reaches z through the sensor's
     * squares (a 3-pixel square zoomed to 1.5..6: samples and cells both) */
    {RAM_GLIMPSE_ADDITIVE,
     RAM_CORE_RNN,
     RAM_BOUND_TANH,
     0.0f,
     {1, RAM_CORE_RNN, 0, 0.5f, 2.0f, 0, 0, 0}},
    {RAM_GLIMPSE_CONCAT,
     RAM_CORE_LSTM,
     RAM_BOUND_HARDTANH,
     7.0f,
     {2, RAM_CORE_LSTM, 4, 0.7f, 1.6f, 0, 0, 0}},
    /* the convolutional layer: the gradient reaches the glimpse, and so
     * the location, through its filters (2 x 2 at stride 1 on the 3 x 3
     * patch: every value read by one to four positions) */
    {RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 0.0f, {1, RAM_CORE_RNN, 0, 0, 0, 3, 2, 1}},
    {RAM_GLIMPSE_CONCAT, RAM_CORE_LSTM, RAM_BOUND_TANH, 7.0f, {1, RAM_CORE_RNN, 0, 0, 0, 4, 2, 1}},
};
enum { N_CONFIGS = sizeof configs / sizeof *configs };

/* The loss is then a function of the weights alone (deterministic
 * locations): its whole gradient, the location network's and the core's
 * through the sensor included. */
START_TEST(mean_locations_gradient) {
    fixture f;
    setup_dram(&f, configs[_i].form, configs[_i].core, configs[_i].bound, configs[_i].range,
               configs[_i].dram);
    analytic(&f, RAM_LOC_MEAN);
    double norm;
    const double rel = compare(&f, RAM_LOC_MEAN, NULL, &norm);
    ck_assert_msg(rel < 2e-3, "config %d: relative gradient error %g", _i, rel);
    /* The location network has a gradient of its own, and it is right:
     * the part the hard sensor cannot give. */
    bool loc[RAM_T_COUNT] = {0};
    loc[RAM_T_LOC_W] = loc[RAM_T_LOC_B] = true;
    analytic(&f, RAM_LOC_MEAN);
    const double rel_loc = compare(&f, RAM_LOC_MEAN, loc, &norm);
    ck_assert_msg(norm > 1e-3, "config %d: location network gradient only %g", _i, norm);
    ck_assert_msg(rel_loc < 1e-2, "config %d: location network error %g", _i, rel_loc);
    teardown(&f);
}
END_TEST

/* Sampled locations at fixed noise: the same through the clamp (no
 * gradient where a sample is held at +-1). */
START_TEST(sampled_locations_gradient) {
    fixture f;
    setup_dram(&f, configs[_i].form, configs[_i].core, configs[_i].bound, configs[_i].range,
               configs[_i].dram);
    analytic(&f, RAM_LOC_SAMPLE);
    int held = 0;
    for (int k = 0; k < f.m->p.glimpses * N * f.m->ld; k++)
        held += f.ws.loc[k] == 1.0f || f.ws.loc[k] == -1.0f;
    ck_assert_msg(held > 0, "no sample at the clamp: that path is not checked");
    double norm;
    const double rel = compare(&f, RAM_LOC_SAMPLE, NULL, &norm);
    ck_assert_msg(rel < 2e-3, "config %d: relative gradient error %g", _i, rel);
    teardown(&f);
}
END_TEST

/* A loss on the location means (REINFORCE's term, which a trainer seeds
 * as dmu): its gradient through the core, which through time reaches the
 * earlier glimpses, and so the earlier locations through the sensor. */
START_TEST(mean_term_gradient) {
    fixture f;
    setup_dram(&f, configs[_i].form, configs[_i].core, configs[_i].bound, configs[_i].range,
               configs[_i].dram);
    const int T = f.m->p.glimpses;
    const int L = f.m->ld;
    float *c = malloc(sizeof(float) * T * N * L);
    for (int i = 0; i < T * N * L; i++)
        c[i] = urand() - 0.5f;
    f.coef = c;
    analytic(&f, RAM_LOC_SAMPLE);
    double norm;
    const double rel = compare(&f, RAM_LOC_SAMPLE, NULL, &norm);
    ck_assert_msg(rel < 2e-3, "config %d: relative gradient error %g", _i, rel);
    free(c);
    teardown(&f);
}
END_TEST

/* soft_detach_core: the backpropagated location term stops at the location
 * network.  So every other weight's gradient is that of the loss with the
 * locations held where the policy put them (RAM_LOC_FIXED); and the
 * location network's is what REINFORCE's detached path gives for a seed of
 * dL/dl_t, each location's own effect on the loss with the others held,
 * taken here by central differences on the held locations. */
START_TEST(detached_gradient) {
    fixture f;
    setup_dram(&f, configs[_i].form, configs[_i].core, configs[_i].bound, configs[_i].range,
               configs[_i].dram);
    struct ram_model *m = f.m;
    const int T = m->p.glimpses, L = m->ld, K = m->p.classes;
    const size_t nl = (size_t)T * N * L, np = m->n_params;
    float *held = malloc(sizeof(float) * nl), *dl = malloc(sizeof(float) * nl);
    float *detached = malloc(sizeof(float) * np), *noise = f.eps;
    ram_model_forward(m, &f.ws, f.images, N, RAM_LOC_MEAN, NULL, 0);
    memcpy(held, f.ws.loc, sizeof(float) * nl);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++)
            f.ws.dlogits[i * K + k] = (f.ws.probs[i * K + k] - (k == f.labels[i])) / N;
    memset(f.ws.grad, 0, sizeof(float) * np);
    ram_model_backward_soft(m, &f.ws, N, f.images, RAM_LOC_MEAN, NULL, false, true);
    memcpy(detached, f.ws.grad, sizeof(float) * np);

    /* every weight but the location network's: the loss at held locations */
    f.eps = held;
    bool rest[RAM_T_COUNT];
    for (int id = 0; id < RAM_T_COUNT; id++)
        rest[id] = id != RAM_T_LOC_W && id != RAM_T_LOC_B;
    ram_model_forward(m, &f.ws, f.images, N, RAM_LOC_FIXED, held, 0);
    memcpy(f.ws.grad, detached, sizeof(float) * np);
    double norm;
    const double rel = compare(&f, RAM_LOC_FIXED, rest, &norm);
    ck_assert_msg(rel < 2e-3, "config %d: relative gradient error %g", _i, rel);

    /* the location network's: dL/dl_t by differences on the held locations,
     * then seeded as REINFORCE's detached term is */
    size_t kinked = 0;
    for (size_t k = 0; k < nl; k++) {
        const float l0 = held[k];
        double d[2];
        for (int w = 0; w < 2; w++) {
            const float h = 1e-3f * (float)(w + 1);
            held[k] = l0 + h;
            const double lp = loss(&f, RAM_LOC_FIXED);
            held[k] = l0 - h;
            const double lm = loss(&f, RAM_LOC_FIXED);
            d[w] = (lp - lm) / (2.0 * h);
        }
        held[k] = l0;
        dl[k] = (float)d[0];
        kinked += fabs(d[0] - d[1]) > 0.02 * fabs(d[0]) + 2e-4;
    }
    ck_assert_msg(kinked * 10 <= nl, "config %d: %zu of %zu locations near a kink", _i, kinked, nl);
    ram_model_forward(m, &f.ws, f.images, N, RAM_LOC_MEAN, NULL, 0);
    memset(f.ws.dlogits, 0, sizeof(float) * N * K);
    memset(f.ws.grad, 0, sizeof(float) * np);
    ram_model_backward_soft(m, &f.ws, N, f.images, RAM_LOC_FIXED, dl, true, false);
    double diff = 0, na = 0, nr = 0;
    const int loc_ids[2] = {RAM_T_LOC_W, RAM_T_LOC_B};
    for (int q = 0; q < 2; q++) {
        const int id = loc_ids[q];
        const size_t n = (size_t)m->t[id].rows * m->t[id].cols;
        for (size_t j = 0; j < n; j++) {
            const size_t k = m->t[id].off + j;
            const double a = detached[k], r = f.ws.grad[k];
            diff += (a - r) * (a - r);
            na += a * a;
            nr += r * r;
        }
    }
    ck_assert_msg(na > 1e-8, "config %d: no location network gradient", _i);
    const double rel_loc = sqrt(diff) / (sqrt(na) + sqrt(nr));
    /* a location whose two differences disagree has a kink within reach,
     * and its difference is not its derivative: a looser bound then */
    ck_assert_msg(rel_loc < (kinked ? 5e-2 : 1e-2),
                  "config %d: location network error %g (%zu of "
                  "%zu locations near a kink)",
                  _i, rel_loc, kinked, nl);
    /* ... which differs from the undetached one: the test can tell them apart */
    f.eps = noise;
    analytic(&f, RAM_LOC_MEAN);
    diff = 0;
    for (size_t k = 0; k < np; k++)
        diff += ((double)f.ws.grad[k] - detached[k]) * ((double)f.ws.grad[k] - detached[k]);
    ck_assert_msg(sqrt(diff) > 1e-3 * sqrt(na), "config %d: detaching changed nothing", _i);
    free(held);
    free(dl);
    free(detached);
    teardown(&f);
}
END_TEST

/* Both seeds together give the sum of their gradients (the hybrid mode's
 * two terms in one pass). */
START_TEST(hybrid_is_the_sum) {
    fixture f;
    setup(&f, RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 0.0f);
    const struct ram_model *m = f.m;
    const int T = m->p.glimpses, K = m->p.classes;
    float *dmu = malloc(sizeof(float) * T * N * 2), *dl = malloc(sizeof(float) * N * K);
    for (int i = 0; i < T * N * 2; i++)
        dmu[i] = urand() - 0.5f;
    const size_t np = m->n_params;
    double *sum = calloc(np, sizeof(double)), *scale = calloc(np, sizeof(double));
    analytic(&f, RAM_LOC_SAMPLE); /* the forward pass, and the cross-entropy's dlogits */
    memcpy(dl, f.ws.dlogits, sizeof(float) * N * K);
    for (int part = 0; part < 3; part++) {
        memcpy(f.ws.dlogits, dl, sizeof(float) * N * K);
        if (part == 1) memset(f.ws.dlogits, 0, sizeof(float) * N * K);
        memset(f.ws.grad, 0, sizeof(float) * np);
        ram_model_backward_soft(m, &f.ws, N, f.images, RAM_LOC_SAMPLE, part ? dmu : NULL, false,
                                false);
        for (size_t k = 0; k < np; k++) {
            sum[k] += part < 2 ? f.ws.grad[k] : -f.ws.grad[k];
            scale[k] += fabs(f.ws.grad[k]);
        }
    }
    for (size_t k = 0; k < np; k++)
        ck_assert_msg(fabs(sum[k]) < 1e-5 * (1 + scale[k]),
                      "weight %zu: hybrid differs from the sum by %g (of %g)", k, sum[k], scale[k]);
    free(sum);
    free(scale);
    free(dmu);
    free(dl);
    teardown(&f);
}
END_TEST

/* ---- the model file ---- */

static ram_model *small_model(ram_sensor sensor) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.height = p.width = 12;
    p.glimpse.patch = 4;
    p.glimpse.depth = 2;
    p.glimpse_hidden = p.loc_hidden = 8;
    p.glimpse_out = p.core_hidden = 16;
    p.glimpses = 3;
    p.classes = 3;
    p.sensor = sensor;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

static unsigned char *file_bytes(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    ck_assert_uint_eq(fread(b, 1, *len, fp), *len);
    fclose(fp);
    return b;
}

static unsigned char *find_tag(unsigned char *b, size_t len, const char *tag) {
    for (size_t i = 16; i + 4 <= len; i++)
        if (memcmp(b + i, tag, 4) == 0) return b + i;
    return NULL;
}

START_TEST(file_keeps_the_sensor) {
    char path[64];
    snprintf(path, sizeof path, "soft-model-%ld.ram", (long)getpid());
    ram_model *hard = small_model(RAM_SENSOR_HARD), *soft = small_model(RAM_SENSOR_SOFT);
    size_t len;
    /* A hard model's file has no SENS chunk: the file it was before. */
    ck_assert_int_eq(ram_model_save(hard, path), RAM_OK);
    unsigned char *b = file_bytes(path, &len);
    ck_assert_ptr_null(find_tag(b, len, "SENS"));
    free(b);
    ck_assert_int_eq(ram_model_save(soft, path), RAM_OK);
    ram_model *back;
    ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
    ram_model_params p;
    ram_model_params_init(&p);
    ck_assert_int_eq(ram_model_get_params(back, &p), RAM_OK);
    ck_assert_int_eq(p.sensor, RAM_SENSOR_SOFT);
    /* The loaded model looks and classifies as the saved one. */
    static float img[2 * 144];
    for (int i = 0; i < 2 * 144; i++)
        img[i] = urand();
    float pa[6], pb[6], la[12], lb[12];
    ram_state *sa, *sb;
    ck_assert_int_eq(ram_state_create(soft, 2, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, 2, &sb), RAM_OK);
    ck_assert_int_eq(ram_model_classify(soft, sa, img, 2, NULL, pa, la), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, sb, img, 2, NULL, pb, lb), RAM_OK);
    ck_assert_mem_eq(pa, pb, sizeof pa);
    ck_assert_mem_eq(la, lb, sizeof la);
    /* ... and differs from the same weights seen by the hard sensor. */
    float ph[6];
    memcpy(hard->w, soft->w, sizeof(float) * soft->n_params);
    ram_model_touch(hard);
    ram_state *sh;
    ck_assert_int_eq(ram_state_create(hard, 2, &sh), RAM_OK);
    ck_assert_int_eq(ram_model_classify(hard, sh, img, 2, NULL, ph, NULL), RAM_OK);
    ck_assert(memcmp(pa, ph, sizeof pa) != 0);
    ram_state_free(sa);
    ram_state_free(sb);
    ram_state_free(sh);
    ram_model_free(back);

    /* An unknown sensor, or a chunk of the wrong length, is a bad file. */
    b = file_bytes(path, &len);
    unsigned char *tag = find_tag(b, len, "SENS");
    ck_assert_ptr_nonnull(tag);
    tag[16] = 2; /* the u32 after tag, reserved and length */
    const uint32_t crc = ram_crc32(b, len - 20);
    for (int k = 0; k < 4; k++)
        b[len - 4 + k] = (unsigned char)(crc >> (8 * k));
    ck_assert_int_eq(ram_model_load_memory(b, len, &back), RAM_ERR_FORMAT);
    ck_assert(strstr(ram_last_error(), "SENS") != NULL);
    free(b);
    unlink(path);

    /* A model of an unknown sensor is refused at creation. */
    ram_model_params q;
    ram_model_params_init(&q);
    q.sensor = (ram_sensor)5;
    ck_assert_int_eq(ram_model_create(&q, &back), RAM_ERR_INVALID_ARGUMENT);
    /* A caller built before the field existed gets the hard sensor. */
    ram_model_params old;
    ram_model_params_init_sized(&old, offsetof(ram_model_params, sensor));
    old.sensor = (ram_sensor)7; /* beyond its struct_size: never read */
    ck_assert_int_eq(ram_model_create(&old, &back), RAM_OK);
    ck_assert_int_eq(back->p.sensor, RAM_SENSOR_HARD);
    ram_model_free(back);
    ram_model_free(hard);
    ram_model_free(soft);
}
END_TEST

/* A checkpoint of a soft model does not load into a hard trainer. */
START_TEST(checkpoint_sensor_mismatch) {
    char path[64];
    snprintf(path, sizeof path, "soft-ckpt-%ld.ram", (long)getpid());
    ram_model *soft = small_model(RAM_SENSOR_SOFT), *hard = small_model(RAM_SENSOR_HARD);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *ps, *ph;
    ck_assert_int_eq(ram_policy_create(&pp, soft, &ps), RAM_OK);
    ck_assert_int_eq(ram_policy_create(&pp, hard, &ph), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 4;
    ram_trainer *ts, *th;
    ck_assert_int_eq(ram_trainer_create(soft, ps, &tp, &ts), RAM_OK);
    ck_assert_int_eq(ram_trainer_create(hard, ph, &tp, &th), RAM_OK);
    ck_assert_int_eq(ram_trainer_save_checkpoint(ts, path, NULL, 0), RAM_OK);
    ck_assert_int_eq(ram_trainer_load_checkpoint(th, path, NULL, 0, NULL), RAM_ERR_MISMATCH);
    ck_assert_int_eq(ram_trainer_load_checkpoint(ts, path, NULL, 0, NULL), RAM_OK);
    unlink(path);
    ram_trainer_free(ts);
    ram_trainer_free(th);
    ram_policy_free(ps);
    ram_policy_free(ph);
    ram_model_free(soft);
    ram_model_free(hard);
}
END_TEST

/* ---- the trainer ---- */

/* A bright 3x3 square in one of the corners of a 12x12 image; the class
 * is the corner.  Returns the summed nll of the first and last steps. */
static void train_corners(ram_soft_training mode, int threads, int steps, double *first,
                          double *last, float *out_w) {
    ram_model *m = small_model(RAM_SENSOR_SOFT);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.soft_training = mode;
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 16;
    tp.threads = threads;
    tp.lr = 3e-3f;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    static float img[16 * 144];
    int labels[16];
    lcg = 99;
    *first = *last = 0;
    for (int s = 0; s < steps; s++) {
        memset(img, 0, sizeof img);
        for (int i = 0; i < 16; i++) {
            const int cls = (int)(urand() * 3), y = cls == 2 ? 8 : 1, x = cls == 1 ? 8 : 1;
            labels[i] = cls;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++)
                    img[i * 144 + (y + dy) * 12 + x + dx] = 1.0f;
        }
        ram_train_stats st;
        ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, 16, &st), RAM_OK);
        if (mode == RAM_SOFT_BACKPROP) {
            ck_assert_float_eq(st.reinforce, 0.0f);
            ck_assert_float_eq(st.baseline_mse, 0.0f);
        }
        if (s < 10) *first += st.nll;
        if (s >= steps - 10) *last += st.nll;
    }
    if (out_w) memcpy(out_w, m->w, sizeof(float) * m->n_params);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}

START_TEST(soft_training_learns) {
    double first, last;
    train_corners(RAM_SOFT_BACKPROP, 1, 150, &first, &last, NULL);
    ck_assert_msg(last < 0.5 * first, "backprop: nll %g over the first 10 steps, %g the last",
                  first, last);
    train_corners(RAM_SOFT_HYBRID, 1, 150, &first, &last, NULL);
    ck_assert_msg(last < 0.5 * first, "hybrid: nll %g over the first 10 steps, %g the last", first,
                  last);
}
END_TEST

/* The same weights from 1 and 2 worker threads to float rounding (their
 * sums are taken in another grouping), and the same bits from two runs. */
START_TEST(soft_training_threads) {
    ram_model *m = small_model(RAM_SENSOR_SOFT);
    const size_t np = m->n_params;
    ram_model_free(m);
    float *a = malloc(sizeof(float) * np), *b = malloc(sizeof(float) * np),
          *c = malloc(sizeof(float) * np);
    double f, l;
    train_corners(RAM_SOFT_BACKPROP, 1, 5, &f, &l, a);
    train_corners(RAM_SOFT_BACKPROP, 1, 5, &f, &l, b);
    ck_assert_mem_eq(a, b, sizeof(float) * np);
    train_corners(RAM_SOFT_BACKPROP, 2, 5, &f, &l, c);
    for (size_t k = 0; k < np; k++)
        ck_assert_msg(fabsf(a[k] - c[k]) < 1e-4f, "weight %zu: %g with 1 thread, %g with 2", k,
                      (double)a[k], (double)c[k]);
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(trainer_refuses_unknown_mode) {
    ram_model *m = small_model(RAM_SENSOR_SOFT);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ck_assert_int_eq(pp.soft_training, RAM_SOFT_BACKPROP);
    pp.soft_training = (ram_soft_training)2;
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ram_trainer *t = NULL;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    ck_assert(strstr(ram_last_error(), "soft_training") != NULL);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

static ram_status keep_gradient(float *grad, size_t count, void *user) {
    memcpy(user, grad, sizeof(float) * count);
    return RAM_ERR_IO; /* the step then changes nothing */
}

/* The trainer's label smoothing: its gradient (taken by a hook, the step
 * then refused) against central differences of the smoothed cross-entropy,
 * the reported losses, and the refused values.  A soft model trained by
 * backpropagation alone makes the gradient the loss's own. */
START_TEST(label_smoothing_gradient) {
    fixture f;
    setup(&f, RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 0.0f);
    f.smoothing = 0.3f;
    const size_t np = f.m->n_params;
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, f.m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ck_assert_float_eq(tp.label_smoothing, 0.0f);
    tp.max_batch = N;
    tp.clip_norm = 0;
    tp.label_smoothing = f.smoothing;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(f.m, pol, &tp, &t), RAM_OK);
    float *g = malloc(sizeof(float) * ram_trainer_gradient_size(t));
    ck_assert_int_eq(ram_trainer_set_gradient_hook(t, keep_gradient, g), RAM_OK);
    ck_assert_int_eq(ram_trainer_train_batch(t, f.images, f.labels, N, NULL), RAM_ERR_IO);
    memcpy(f.ws.grad, g, sizeof(float) * np);
    double norm;
    const double rel = compare(&f, RAM_LOC_MEAN, NULL, &norm);
    ck_assert_msg(rel < 2e-3, "smoothed: relative gradient error %g", rel);
    /* The same gradient is far from the label's own: the check can fail. */
    f.smoothing = 0.0f;
    memcpy(f.ws.grad, g, sizeof(float) * np);
    ck_assert_double_gt(compare(&f, RAM_LOC_MEAN, NULL, &norm), 0.05);

    /* Reported: nll the label's cross-entropy, loss the smoothed one. */
    const double plain = loss(&f, RAM_LOC_MEAN);
    f.smoothing = tp.label_smoothing;
    const double smoothed = loss(&f, RAM_LOC_MEAN);
    ck_assert_int_eq(ram_trainer_set_gradient_hook(t, NULL, NULL), RAM_OK);
    ram_train_stats st;
    ck_assert_int_eq(ram_trainer_train_batch(t, f.images, f.labels, N, &st), RAM_OK);
    ck_assert_double_eq_tol(st.nll, plain, 1e-5);
    ck_assert_double_eq_tol(st.loss, smoothed, 1e-5);
    ck_assert_double_gt(fabs(smoothed - plain), 1e-3);
    ram_trainer_free(t);

    const float bad[] = {-0.1f, 1.0f, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tp.label_smoothing = bad[i];
        t = NULL;
        ck_assert_int_eq(ram_trainer_create(f.m, pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(t);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "label_smoothing"));
    }
    free(g);
    ram_policy_free(pol);
    teardown(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("soft_model");
    TCase *grad = tcase_create("gradient");
    tcase_set_timeout(grad, 300);
    tcase_add_loop_test(grad, mean_locations_gradient, 0, N_CONFIGS);
    tcase_add_loop_test(grad, sampled_locations_gradient, 0, N_CONFIGS);
    tcase_add_loop_test(grad, mean_term_gradient, 0, N_CONFIGS);
    tcase_add_loop_test(grad, detached_gradient, 0, N_CONFIGS);
    tcase_add_test(grad, hybrid_is_the_sum);
    tcase_add_test(grad, label_smoothing_gradient);
    suite_add_tcase(s, grad);
    TCase *file = tcase_create("file");
    tcase_add_test(file, file_keeps_the_sensor);
    tcase_add_test(file, checkpoint_sensor_mismatch);
    suite_add_tcase(s, file);
    TCase *train = tcase_create("trainer");
    tcase_set_timeout(train, 300);
    tcase_add_test(train, soft_training_learns);
    tcase_add_test(train, soft_training_threads);
    tcase_add_test(train, trainer_refuses_unknown_mode);
    suite_add_tcase(s, train);
    return run_suite(s);
}
