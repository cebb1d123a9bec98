/* The recurrent attention model's parameters: defaults and validation, the
 * layout of the weight tensors, initialisation, and the workspaces of a
 * forward and backward pass.  The passes themselves are forward.c and
 * backward.c; inference states are state.c. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <limits.h>
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
    p->loc_range_pixels = -1.0f; /* follow the image: ram_model_create() resolves it */
    p->init_scale = 0.1f;
    p->seed = 1;
    p->core_layers = 1;
    p->upper_core = RAM_CORE_RNN;
    p->context = 0;
    p->objects = 1;
    p->emit_every = 0; /* glimpses / objects: ram_model_create() resolves it */
    p->cell_samples = 0;
    p->contrast = 0;
    p->zoom_min = p->zoom_max = 0.0f; /* no zoom */
    p->conv_channels = 0;             /* no convolutional layer */
    p->conv_kernel = 3;
    p->conv_stride = 1;
}

void ram_model_params_init_sized(ram_model_params *p, size_t size) {
    ram_model_params d;
    model_defaults(&d);
    ram_params_fill(p, size, &d, sizeof d);
}

#define CHECK_RANGE(v, lo, hi)                                                                     \
    if ((v) < (lo) || (v) > (hi))                                                                  \
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model: " #v " = %ld not in [%ld, %ld]",         \
                        (long)(int)(v), (long)(lo), (long)(hi));

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
    CHECK_RANGE(p->form, RAM_GLIMPSE_ADDITIVE, RAM_GLIMPSE_MULTIPLICATIVE);
    CHECK_RANGE(p->glimpse_hidden, 1, 65536);
    CHECK_RANGE(p->loc_hidden, 1, 65536);
    CHECK_RANGE(p->glimpse_out, 1, 65536);
    CHECK_RANGE(p->core_hidden, 1, 16384);
    CHECK_RANGE(p->core, RAM_CORE_RNN, RAM_CORE_LSTM);
    CHECK_RANGE(p->glimpses, 1, 64);
    CHECK_RANGE(p->classes, 2, 65536);
    CHECK_RANGE(p->bound, RAM_BOUND_HARDTANH, RAM_BOUND_TANH);
    CHECK_RANGE(p->sensor, RAM_SENSOR_HARD, RAM_SENSOR_SOFT);
    CHECK_RANGE(p->core_layers, 1, 2);
    CHECK_RANGE(p->upper_core, RAM_CORE_RNN, RAM_CORE_LSTM);
    CHECK_RANGE(p->context, 0, 256);
    CHECK_RANGE(p->objects, 1, 64);
    CHECK_RANGE(p->emit_every, 0, 64);
    CHECK_RANGE(p->cell_samples, 0, 64);
    if (p->cell_samples && p->sensor != RAM_SENSOR_HARD)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: cell_samples %d is for the hard sensor (the soft one averages "
                        "every cell)",
                        p->cell_samples);
    if (p->emit_every ? p->objects * p->emit_every != p->glimpses : p->glimpses % p->objects)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: %d objects, a label every %d glimpses, do not make %d glimpses",
                        p->objects, p->emit_every ? p->emit_every : p->glimpses / p->objects,
                        p->glimpses);
    CHECK_RANGE(p->contrast, 0, 1);
    if (p->contrast && p->sensor != RAM_SENSOR_HARD)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: contrast is for the hard sensor (the soft one's gradient reaches "
                        "the pixel values)");
    CHECK_RANGE(p->conv_channels, 0, 4096);
    if (p->conv_channels) {
        CHECK_RANGE(p->conv_kernel, 1, g.patch);
        CHECK_RANGE(p->conv_stride, 1, g.patch);
        const double q = (g.patch - p->conv_kernel) / p->conv_stride + 1;
        if ((double)p->conv_channels * q * q > 1 << 24 ||
            rho * p->conv_kernel * p->conv_kernel > 1 << 24)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                            "model: a convolutional layer of %d channels, %d x %d filters at "
                            "stride %d on a %d x %d patch is too large",
                            p->conv_channels, p->conv_kernel, p->conv_kernel, p->conv_stride,
                            g.patch, g.patch);
    }
    if ((double)p->channels * p->context * p->context > 1 << 24)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: a context of %d x %d x %d values is too large", p->channels,
                        p->context, p->context);
    const bool zoom = p->zoom_min != 0.0f || p->zoom_max != 0.0f;
    if (zoom && !(p->zoom_min >= 1.0f / 64 && p->zoom_max > p->zoom_min && p->zoom_max <= 16.0f))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: zoom range [%g, %g]: 0 and 0 for none, or 1/64 <= zoom_min < "
                        "zoom_max <= 16",
                        (double)p->zoom_min, (double)p->zoom_max);
    if (zoom && (double)g.side[g.depth - 1] * p->zoom_max > 1 << 20)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model: the widest square zoomed by %g is %g pixels wide",
                        (double)p->zoom_max, (double)g.side[g.depth - 1] * p->zoom_max);
    if (!(p->loc_std >= RAM_LOC_STD_MIN && p->loc_std <= 10.0f)) /* 1/std^2 must stay finite */
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
    m->sensor.sensor = p->sensor;
    m->sensor.samples = p->cell_samples;
    m->sensor.contrast = p->contrast != 0;
    m->rho_size = p->channels * m->sensor.depth * m->sensor.patch * m->sensor.patch;
    m->hgl = p->glimpse_hidden + p->loc_hidden;
    const int planes = p->channels * m->sensor.depth, C = p->conv_channels;
    m->conv_q = C ? (m->sensor.patch - p->conv_kernel) / p->conv_stride + 1 : 0;
    m->conv_in = C ? planes * p->conv_kernel * p->conv_kernel : 0;
    m->g1_in = C ? C * m->conv_q * m->conv_q : m->rho_size;
    m->gates = p->core == RAM_CORE_LSTM ? 4 * p->core_hidden : p->core_hidden;
    m->gates2 = p->core_layers < 2               ? 0
                : p->upper_core == RAM_CORE_LSTM ? 4 * p->core_hidden
                                                 : p->core_hidden;
    m->ctx_in = p->channels * p->context * p->context;
    m->range_x = p->loc_range_pixels > 0 ? p->loc_range_pixels * 2.0f / p->width : 1.0f;
    m->range_y = p->loc_range_pixels > 0 ? p->loc_range_pixels * 2.0f / p->height : 1.0f;
    m->ld = p->zoom_max > 0.0f ? 3 : 2;
    m->zoom_lo = m->ld == 3 ? logf(p->zoom_min) : 0.0f;
    m->zoom_half = m->ld == 3 ? 0.5f * (logf(p->zoom_max) - logf(p->zoom_min)) : 0.0f;
    const int Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out, H = p->core_hidden,
              K = p->classes;
    const bool concat = p->form == RAM_GLIMPSE_CONCAT;
    const int shape[RAM_T_COUNT][2] = {
        [RAM_T_G1_W] = {Hg, m->g1_in},
        [RAM_T_G1_B] = {Hg, 1},
        [RAM_T_L1_W] = {Hl, m->ld},
        [RAM_T_L1_B] = {Hl, 1},
        [RAM_T_G2_W] = {G, concat ? m->hgl : Hg},
        [RAM_T_G2_B] = {G, 1},
        [RAM_T_L2_W] = {concat ? 0 : G, Hl},
        [RAM_T_L2_B] = {concat ? 0 : G, 1},
        [RAM_T_CX_W] = {m->gates, G},
        [RAM_T_CH_W] = {m->gates, H},
        [RAM_T_C_B] = {m->gates, 1},
        [RAM_T_LOC_W] = {m->ld, H},
        [RAM_T_LOC_B] = {m->ld, 1},
        [RAM_T_CLS_W] = {K, H},
        [RAM_T_CLS_B] = {K, 1},
        [RAM_T_UX_W] = {m->gates2, H},
        [RAM_T_UH_W] = {m->gates2, H},
        [RAM_T_U_B] = {m->gates2, 1},
        [RAM_T_CTX_W] = {p->context ? H : 0, m->ctx_in},
        [RAM_T_CTX_B] = {p->context ? H : 0, 1},
        [RAM_T_CONV_W] = {C, m->conv_in},
        [RAM_T_CONV_B] = {C, 1},
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

void ram_model_resolve_emit(ram_model_params *p) {
    if (p->emit_every == 0 && p->objects >= 1 && p->glimpses >= 1 && p->glimpses % p->objects == 0)
        p->emit_every = p->glimpses / p->objects;
}

ram_status ram_model_create(const ram_model_params *user, ram_model **out) {
    if (!out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_create: out is NULL");
    ram_model_params p;
    ram_model_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "model_create");
    if (s) return s;
    /* Negative: half the shorter side less a pixel, so that glimpse centres
     * reach to a pixel of a square image's edges (13 for 28 x 28, the value
     * of Torch's MNIST models).  -Inf and NaN stay for validate to refuse. */
    if (p.loc_range_pixels < 0 && isfinite(p.loc_range_pixels) && p.height > 0 && p.width > 0) {
        const int side = p.height < p.width ? p.height : p.width;
        p.loc_range_pixels = fmaxf(0.0f, 0.5f * (float)side - 1.0f);
    }
    ram_model_resolve_emit(&p);
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
    if (p.core_layers == 2 && p.upper_core == RAM_CORE_LSTM) {
        float *b = ram_param(m, m->w, RAM_T_U_B) + p.core_hidden;
        for (int j = 0; j < p.core_hidden; j++)
            b[j] = 1.0f;
    }
    *out = m;
    return RAM_OK;
}

void ram_model_free(ram_model *m) {
    if (!m) return;
    free(m->w_block);
    free(m->names);
    free(m->names_block);
    free(m);
}

/* ---- what the model knows of its data ---- */

ram_status ram_model_put_names(struct ram_model *m, const char *const *names, const size_t *lens,
                               int count, const char *what) {
    if (!names) {
        free(m->names);
        free(m->names_block);
        m->names = NULL;
        m->names_block = NULL;
        return RAM_OK;
    }
    if (count != m->p.classes)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: %d names for %d classes", what, count,
                        m->p.classes);
    size_t total = 0;
    for (int k = 0; k < count; k++) {
        if (!names[k]) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: name %d is NULL", what, k);
        const size_t len = lens ? lens[k] : strnlen(names[k], RAM_MAX_CLASS_NAME + 1);
        if (len < 1 || len > RAM_MAX_CLASS_NAME || memchr(names[k], 0, len))
            return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                            "%s: name %d is %zu bytes, or holds a NUL byte (1 to %d bytes)", what,
                            k, len, RAM_MAX_CLASS_NAME);
        total += len + 1;
    }
    char **table = malloc(sizeof *table * (size_t)count), *block = malloc(total);
    if (!table || !block) {
        free(table);
        free(block);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    for (int k = 0, at = 0; k < count; k++) {
        const size_t len = lens ? lens[k] : strlen(names[k]); /* checked above */
        table[k] = block + at;
        memcpy(block + at, names[k], len);
        block[at + len] = 0;
        at += (int)len + 1;
    }
    free(m->names);
    free(m->names_block);
    m->names = table;
    m->names_block = block;
    return RAM_OK;
}

ram_status ram_model_set_class_names(ram_model *m, const char *const *names, int count) {
    if (!m) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_class_names: model is NULL");
    return ram_model_put_names(m, names, NULL, count, "model_set_class_names");
}

const char *ram_model_class_name(const ram_model *m, int k) {
    if (!m || !m->names || k < 0 || k >= m->p.classes) return NULL;
    return m->names[k];
}

ram_status ram_model_set_fit(ram_model *m, ram_fit fit) {
    if (!m) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_fit: model is NULL");
    if (fit < RAM_FIT_PAD || fit > RAM_FIT_CROP)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_fit: unknown fit rule %d", (int)fit);
    m->fit = fit;
    return RAM_OK;
}

ram_fit ram_model_fit(const ram_model *m) {
    return m ? m->fit : RAM_FIT_PAD;
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

/* A new model of parameters p with m's weights, class names and fit rule
 * (not its stop unit), for the copies that change what no weight's shape
 * depends on.  `what` names the caller in messages. */
static ram_status model_copy_as(const ram_model *m, const ram_model_params *p, const char *what,
                                ram_model **out) {
    ram_model *copy;
    ram_status s = ram_model_create(p, &copy); /* checks the new parameters */
    if (s) return s;
    /* The tensors' shapes come from the widths alone (ram_model_alloc), so
     * the weights are the same floats in the same places. */
    if (copy->n_params != m->n_params) {
        ram_model_free(copy);
        return ram_fail(RAM_ERR_MISMATCH, "%s: %zu weights, not %zu", what, copy->n_params,
                        m->n_params);
    }
    memcpy(copy->w, m->w, m->n_params * sizeof *m->w);
    copy->fit = m->fit;
    if (m->names &&
        (s = ram_model_put_names(copy, (const char *const *)m->names, NULL, m->p.classes, what))) {
        ram_model_free(copy);
        return s;
    }
    *out = copy;
    return RAM_OK;
}

ram_status ram_model_with_glimpses(const ram_model *m, int glimpses, int emit_every,
                                   ram_model **out) {
    if (!m || !out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_with_glimpses: NULL argument");
    *out = NULL;
    ram_model_params p = m->p;
    p.glimpses = glimpses;
    p.emit_every = emit_every;
    return model_copy_as(m, &p, "model_with_glimpses", out);
}

ram_status ram_model_with_sensor(const ram_model *m, ram_sensor sensor, ram_model **out) {
    if (!m || !out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_with_sensor: NULL argument");
    *out = NULL;
    ram_model_params p = m->p;
    p.sensor = sensor; /* ram_model_create() refuses a soft one with cell_samples or contrast */
    return model_copy_as(m, &p, "model_with_sensor", out);
}

/* ---- workspaces ---- */

void ram_ws_release(ram_ws *ws) {
    float **bufs[] = {
        &ws->rho,      &ws->loc,        &ws->mupre, &ws->mu,       &ws->hgl,      &ws->g,
        &ws->gates,    &ws->h,          &ws->c,     &ws->probs,    &ws->aux,      &ws->dh,
        &ws->dh2,      &ws->dc,         &ws->dc2,   &ws->dgates,   &ws->dg,       &ws->dhgl,
        &ws->dlogits,  &ws->dmu,        &ws->grad,  &ws->gather_x, &ws->gather_y, &ws->drho,
        &ws->dloc,     &ws->gm,         &ws->dgm,   &ws->h2,       &ws->c2,       &ws->gates2,
        &ws->du,       &ws->du2,        &ws->dcu,   &ws->dcu2,     &ws->dgates2,  &ws->ctx_in,
        &ws->contrast, &ws->halt_probs, &ws->conv,  &ws->col,      &ws->dconv,    &ws->dcol};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(ws->gather_at);
    ws->gather_at = NULL;
    free(ws->halt_rows);
    ws->halt_rows = NULL;
}

ram_status ram_ws_init(ram_ws *ws, const struct ram_model *m, int max_n, bool train) {
    memset(ws, 0, sizeof *ws);
    ws->max_n = max_n;
    const size_t n = (size_t)max_n, T = m->p.glimpses, H = m->p.core_hidden, L = (size_t)m->ld;
    const bool lstm = m->p.core == RAM_CORE_LSTM;
    const bool gather = max_n > RAM_GEMV_MAX_ROWS && ram_sparse_kernels();
    const bool soft = train && m->p.sensor == RAM_SENSOR_SOFT;
    const bool mul = m->p.form == RAM_GLIMPSE_MULTIPLICATIVE;
    const bool two = m->p.core_layers == 2, lstm2 = two && m->p.upper_core == RAM_CORE_LSTM;
    const bool conv = m->p.conv_channels > 0;
    const size_t col = (size_t)m->conv_q * m->conv_q * m->conv_in;
    /* The layer's product has Q^2 rows an image, counted in an int. */
    if (conv && n * m->conv_q * m->conv_q > INT_MAX)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "workspace for batch %d: %d x %d positions of the convolutional layer "
                        "an image make too many rows for one product",
                        max_n, m->conv_q, m->conv_q);
    const int G = m->p.glimpse_out, widest_in = m->hgl > G ? m->hgl : G;
    size_t gather_in = (size_t)(widest_in > (int)H ? widest_in : (int)H),
           gather_out = (size_t)(G > m->gates ? G : m->gates);
    if (conv) { /* h_g reads the layer's ReLU: a column-copied layer too (lib/columns.c) */
        if ((size_t)m->g1_in > gather_in) gather_in = (size_t)m->g1_in;
        if ((size_t)m->p.glimpse_hidden > gather_out) gather_out = (size_t)m->p.glimpse_hidden;
    }
    struct {
        float **p;
        size_t count;
    } need[] = {
        {&ws->rho, T * n * m->rho_size},
        {&ws->loc, T * n * L},
        {&ws->mupre, T * n * L},
        {&ws->mu, T * n * L},
        {&ws->hgl, T * n * m->hgl},
        {&ws->g, T * n * m->p.glimpse_out},
        {&ws->gates, lstm ? T * n * m->gates : 0},
        {&ws->h, (T + 1) * n * H},
        {&ws->c, lstm ? (T + 1) * n * H : 0},
        {&ws->probs, n * m->p.classes * m->p.objects},
        {&ws->aux, T * n * L},
        {&ws->gather_x, gather ? n * gather_in : 0},
        {&ws->gather_y, gather ? n * gather_out : 0},
        {&ws->dh, train ? n * H : 0},
        {&ws->dh2, train ? n * H : 0},
        {&ws->dc, train && lstm ? n * H : 0},
        {&ws->dc2, train && lstm ? n * H : 0},
        {&ws->dgates, train && lstm ? n * m->gates : 0},
        {&ws->dg, train ? n * m->p.glimpse_out : 0},
        {&ws->dhgl, train ? n * m->hgl : 0},
        {&ws->dlogits, train ? n * m->p.classes * m->p.objects : 0},
        {&ws->dmu, train ? n * L : 0},
        {&ws->grad, train ? m->n_params : 0},
        /* the soft sensor's backward pass: dLoss/drho and dLoss/dl of a step */
        {&ws->drho, soft ? n * m->rho_size : 0},
        {&ws->dloc, soft ? n * L : 0},
        /* the multiplicative glimpse form's two factors, and their gradients */
        {&ws->gm, mul ? T * n * 2 * m->p.glimpse_out : 0},
        {&ws->dgm, train && mul ? n * 2 * m->p.glimpse_out : 0},
        /* the core's upper layer (r2): states, cells, gates, and their gradients */
        {&ws->h2, two ? (T + 1) * n * H : 0},
        {&ws->c2, lstm2 ? (T + 1) * n * H : 0},
        {&ws->gates2, lstm2 ? T * n * m->gates2 : 0},
        {&ws->du, train && two ? n * H : 0},
        {&ws->du2, train && two ? n * H : 0},
        {&ws->dcu, train && lstm2 ? n * H : 0},
        {&ws->dcu2, train && lstm2 ? n * H : 0},
        {&ws->dgates2, train && lstm2 ? n * m->gates2 : 0},
        /* the context network's pooled images */
        {&ws->ctx_in, n * m->ctx_in},
        /* contrast cells: each image's statistics, read once a pass */
        {&ws->contrast, m->p.contrast ? n * 2 * (size_t)m->p.channels : 0},
        /* the convolutional layer: outputs, one step's unrolled glimpses,
         * their gradients */
        {&ws->conv, conv ? T * n * m->g1_in : 0},
        {&ws->col, conv ? n * col : 0},
        {&ws->dconv, train && conv ? n * m->g1_in : 0},
        {&ws->dcol, soft && conv ? n * col : 0},
        /* stopping: inference only */
        {&ws->halt_probs, train ? 0 : n * m->p.classes},
    };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        if (!need[i].count) continue;
        *need[i].p = calloc(need[i].count, sizeof(float));
        if (!*need[i].p) {
            ram_ws_release(ws);
            return ram_fail(RAM_ERR_OUT_OF_MEMORY, "workspace for batch %d: out of memory", max_n);
        }
    }
    if ((gather && !(ws->gather_at = malloc(n * sizeof(int)))) ||
        (!train && !(ws->halt_rows = malloc(2 * n * sizeof(int))))) {
        ram_ws_release(ws);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "workspace for batch %d: out of memory", max_n);
    }
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
           a->loc_range_pixels == b->loc_range_pixels && a->sensor == b->sensor &&
           a->core_layers == b->core_layers &&
           (a->core_layers < 2 || a->upper_core == b->upper_core) && a->context == b->context &&
           a->objects == b->objects && a->emit_every == b->emit_every &&
           a->cell_samples == b->cell_samples && a->contrast == b->contrast &&
           a->zoom_min == b->zoom_min && a->zoom_max == b->zoom_max &&
           a->conv_channels == b->conv_channels &&
           (!a->conv_channels ||
            (a->conv_kernel == b->conv_kernel && a->conv_stride == b->conv_stride));
}
