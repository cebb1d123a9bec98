/* Inference states: a caller's workspaces for classifying with a shared,
 * read-only model, on its own thread or a team of threads, in float, half
 * or bfloat16 precision. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    float *noise;   /* T x max_batch x ld locations or noise, when sub is used */
    float *zooms;   /* max_batch x T: the last classify call's zoom factors (zoom models) */
    int last_n;     /* that call's image count (0: none yet) */
    /* RAM_PRECISION_HALF and BF16: the parameters rounded to that 16-bit
     * form, as 16-bit numbers (w16) and as the floats they are (wr), made
     * from the weights numbered `version` (0: not made yet).  NULL with
     * FLOAT. */
    ram_precision precision;
    uint16_t *w16;
    float *wr;
    void *rounded_block;
    uint64_t version;
    /* The column-major copies the sparse kernels read: of the rounded
     * 16-bit numbers with HALF or BF16, else of the floats. */
    ram_cols cols;
    ram_split_choice choice;      /* with a team: how small calls use it */
    ram_split_choice stop_choice; /* the same for small stopping calls, timed apart (they
                                 take fewer glimpses an image) */
};

/* A small call's team (the row split) or NULL (the caller alone), as the
 * state's choice says (split_choice.c), and the time it began (negative:
 * the call is not timed). */
static ram_team *small_call_begin(const ram_state *st, const ram_split_choice *c, double *t0) {
    *t0 = -1;
    if (!st->team) return NULL;
    const bool split = ram_split_choice_next(c);
    if (ram_split_choice_timed(c, split)) *t0 = ram_seconds();
    return split ? st->team : NULL;
}

/* After a small call of n images begun by small_call_begin(): its time
 * given to the choice, or the call counted. */
static void small_call_end(const ram_state *st, ram_split_choice *c, const ram_team *used,
                           double t0, int n) {
    if (!st->team) return;
    if (t0 >= 0)
        ram_split_choice_record(c, used != NULL, (ram_seconds() - t0) / n);
    else
        ram_split_choice_count(c);
}

void ram_state_free(ram_state *st) {
    if (!st) return;
    if (st->sub)
        for (int k = 0; k < ram_team_size(st->team); k++)
            ram_ws_release(&st->sub[k]);
    free(st->sub);
    ram_team_free(st->team);
    free(st->rounded_block);
    ram_cols_release(&st->cols);
    free(st->noise);
    free(st->zooms);
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
    if (!s && m->ld == 3 &&
        !(st->zooms = malloc(sizeof(float) * m->p.glimpses * (size_t)max_batch)))
        s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "state_create: out of memory");
    if (!s && threads > 1)
        s = ram_team_create(threads, RAM_ERR_OUT_OF_MEMORY, "state_create", &st->team);
    if (!s) s = ram_cols_init(&st->cols, m);
    if (!s && sliced) {
        /* calloc'ed workspaces are all-NULL, so freeing a half-made set is safe */
        st->sub = calloc((size_t)threads, sizeof *st->sub);
        st->noise = malloc(sizeof(float) * (size_t)m->ld * m->p.glimpses * (size_t)max_batch);
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
    if (precision != RAM_PRECISION_FLOAT && precision != RAM_PRECISION_HALF &&
        precision != RAM_PRECISION_BF16)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_set_precision: unknown precision %d",
                        (int)precision);
    if (precision == RAM_PRECISION_FLOAT) {
        free(st->rounded_block);
        st->rounded_block = NULL;
        st->w16 = NULL;
        st->wr = NULL;
    } else if (!st->rounded_block) {
        /* Both copies on cache lines (64 bytes), as the model's weights are. */
        const size_t np = st->n_params, wr_bytes = (np * sizeof(float) + 63) / 64 * 64;
        void *block = malloc(63 + wr_bytes + np * sizeof(uint16_t));
        if (!block)
            return ram_fail(RAM_ERR_OUT_OF_MEMORY,
                            "state_set_precision: %zu parameters: out of memory", np);
        char *base = ram_align64(block);
        st->rounded_block = block;
        st->wr = (float *)(void *)base;
        st->w16 = (uint16_t *)(void *)(base + wr_bytes);
    }
    st->precision = precision;
    st->version = 0; /* made at the next classify */
    st->cols.version = 0;
    return RAM_OK;
}

/* Round the model's parameters into the state's copies, unless they were
 * made from these very weights.  A parameter that rounds to Inf (beyond
 * 65504 in half precision, within a half-unit of FLT_MAX in bfloat16) or is
 * NaN would classify garbage: refused. */
static ram_status refresh_rounded(const ram_model *m, ram_state *st) {
    if (st->precision == RAM_PRECISION_FLOAT || st->version == m->version) return RAM_OK;
    const bool bf16 = st->precision == RAM_PRECISION_BF16;
    for (size_t i = 0; i < m->n_params; i++) {
        const uint16_t h = bf16 ? ram_float_to_bf16(m->w[i]) : ram_float_to_half(m->w[i]);
        const float r = bf16 ? ram_bf16_to_float(h) : ram_half_to_float(h);
        if (!isfinite(r)) {
            st->version = 0;
            return ram_fail(RAM_ERR_NUMERIC,
                            "classify: parameter %zu (%g) is beyond %s precision's range (%s): use "
                            "RAM_PRECISION_FLOAT for this model",
                            i, (double)m->w[i], bf16 ? "bfloat16" : "half",
                            bf16 ? "3.39e38" : "65504");
        }
        st->w16[i] = h;
        st->wr[i] = r;
    }
    st->version = m->version;
    return RAM_OK;
}

/* The state's 16-bit copy for the forward pass (w NULL with FLOAT). */
static ram_w16 state_w16(const ram_state *st) {
    return (ram_w16){st->w16,
                     st->precision == RAM_PRECISION_BF16 ? RAM_WFORM_BF16 : RAM_WFORM_HALF};
}

/* Images [i0, i0 + n) of a call, forwarded in `ws`: check what the glimpses
 * read and copy the results out: every label of each image (seq), or its
 * last. */
static ram_status finish(const ram_model *m, const ram_ws *ws, int i0, int n, int *labels,
                         float *probs, float *locs, float *zooms, bool seq) {
    const int T = m->p.glimpses, K = m->p.classes, S = m->p.objects, from = seq ? 0 : S - 1,
              L = m->ld;
    int step;
    const long bad = ram_ws_bad_glimpse(m, ws, n, &step);
    if (bad >= 0)
        return ram_fail(RAM_ERR_NUMERIC,
                        "classify: glimpse %d of image %ld reads a NaN or Inf pixel", step + 1,
                        i0 + bad);
    for (int i = 0; i < n; i++) {
        const size_t o = (size_t)i0 + i;
        for (int s = from; s < S; s++) {
            const float *pr = ws->probs + ((size_t)s * n + i) * K;
            const size_t at = seq ? o * S + s : o;
            if (labels) labels[at] = ram_argmax(pr, K);
            if (probs) memcpy(probs + at * K, pr, sizeof(float) * K);
        }
        if (locs)
            for (int t = 0; t < T; t++) {
                const float *l = ws->loc + ((size_t)t * n + i) * L;
                locs[(o * T + t) * 2] = l[0] * m->range_x;
                locs[(o * T + t) * 2 + 1] = l[1] * m->range_y;
            }
        if (zooms)
            for (int t = 0; t < T; t++)
                zooms[o * T + t] = ram_model_zoom(m, ws->loc[((size_t)t * n + i) * L + 2]);
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
    ram_images images;
    int n;
    ram_loc_mode mode;
    float std;
} slice_job;

static void forward_slice(void *arg, int k, int nt) {
    const slice_job *j = arg;
    const int T = j->m->p.glimpses;
    int i0, i1;
    ram_split(j->n, k, nt, 1, &i0, &i1);
    const int ni = i1 - i0;
    if (ni <= 0) return;
    ram_ws *ws = &j->st->sub[k];
    const size_t L = (size_t)j->m->ld;
    if (j->mode != RAM_LOC_MEAN) /* this slice's noise or locations, T x ni x ld */
        for (int t = 0; t < T; t++)
            memcpy(ws->aux + (size_t)t * ni * L, j->st->noise + ((size_t)t * j->n + i0) * L,
                   sizeof(float) * L * ni);
    const size_t img = (size_t)j->m->p.channels * j->m->p.height * j->m->p.width;
    ram_model_forward_with(j->m, state_weights(j->st, j->m), state_w16(j->st), &j->st->cols, ws,
                           ram_images_from(j->images, i0, img), ni, j->mode,
                           j->mode == RAM_LOC_MEAN ? NULL : ws->aux, j->std, NULL);
}

/* ram_model_classify_ex() and ram_model_classify_seq() on floats or bytes:
 * `seq` gives a multi-object model's every label rather than its last. */
static ram_status classify(const ram_model *m, ram_state *st, ram_images images, int n,
                           ram_loc_source source, ram_policy *pol, int *labels, float *probs,
                           float *locs, bool seq) {
    if (st) st->last_n = 0; /* set again when the call succeeds */
    if (!m || !st || ram_images_missing(images, 1))
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
    ram_status rs = refresh_rounded(m, st);
    if (rs) return rs;
    const bool by_slice = n > st->ws.max_n; /* only with threads: see ram_state */
    ram_cols_refresh(&st->cols, m, st->w16);
    float *aux = by_slice ? st->noise : st->ws.aux;
    const size_t nl = (size_t)m->p.glimpses * n * m->ld;
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
        double t0;
        ram_team *team = small_call_begin(st, &st->choice, &t0);
        ram_model_forward_with(m, state_weights(st, m), state_w16(st), &st->cols, &st->ws, images,
                               n, mode, mode == RAM_LOC_MEAN ? NULL : aux, std, team);
        small_call_end(st, &st->choice, team, t0, n);
        ram_status s = finish(m, &st->ws, 0, n, labels, probs, locs, st->zooms, seq);
        if (!s) st->last_n = n;
        return s;
    }
    ram_blas_check_threads(ram_team_size(st->team));
    slice_job j = {m, st, images, n, mode, std};
    ram_team_run(st->team, forward_slice, &j);
    const int nt = ram_team_size(st->team);
    for (int k = 0; k < nt; k++) {
        int i0, i1;
        ram_split(n, k, nt, 1, &i0, &i1);
        if (i1 > i0) {
            ram_status s = finish(m, &st->sub[k], i0, i1 - i0, labels, probs, locs, st->zooms, seq);
            if (s) return s;
        }
    }
    st->last_n = n;
    return RAM_OK;
}

ram_status ram_state_zooms(const ram_state *st, int n, float *zooms) {
    if (!st || !zooms) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "state_zooms: NULL argument");
    if (!st->last_n)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "state_zooms: the last call on this state was no successful classify call "
                        "(stopping calls report no locations)");
    if (n != st->last_n)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "state_zooms: n = %d; the last classify call on this state had %d images",
                        n, st->last_n);
    const size_t count = (size_t)n * st->arch.glimpses;
    for (size_t i = 0; i < count; i++)
        zooms[i] = st->zooms ? st->zooms[i] : 1.0f;
    return RAM_OK;
}

ram_status ram_model_classify_seq(const ram_model *m, ram_state *st, const float *images, int n,
                                  ram_loc_source source, ram_policy *pol, int *labels, float *probs,
                                  float *locs) {
    return classify(m, st, ram_images_f32(images), n, source, pol, labels, probs, locs, true);
}

ram_status ram_model_classify(const ram_model *m, ram_state *st, const float *images, int n,
                              int *labels, float *probs, float *locs) {
    return ram_model_classify_ex(m, st, images, n, RAM_LOCS_MEAN, NULL, labels, probs, locs);
}

ram_status ram_model_classify_ex(const ram_model *m, ram_state *st, const float *images, int n,
                                 ram_loc_source source, ram_policy *pol, int *labels, float *probs,
                                 float *locs) {
    return classify(m, st, ram_images_f32(images), n, source, pol, labels, probs, locs, false);
}

ram_status ram_model_classify_ex_u8(const ram_model *m, ram_state *st, const uint8_t *images, int n,
                                    ram_loc_source source, ram_policy *pol, int *labels,
                                    float *probs, float *locs) {
    const ram_images b = {NULL, images, NULL};
    return classify(m, st, b, n, source, pol, labels, probs, locs, false);
}

ram_status ram_model_classify_u8(const ram_model *m, ram_state *st, const uint8_t *images, int n,
                                 int *labels, float *probs, float *locs) {
    return ram_model_classify_ex_u8(m, st, images, n, RAM_LOCS_MEAN, NULL, labels, probs, locs);
}

/* ---- stopping when sure ---- */

/* Each thread stops the images of its slice in its own workspace. */
typedef struct stop_job {
    const ram_model *m;
    ram_state *st;
    ram_images images;
    int n;
    ram_stop_rule rule;
    int *steps;
    long bad[RAM_STATE_MAX_THREADS]; /* each slice's first bad image, or -1 */
    int bad_step[RAM_STATE_MAX_THREADS];
} stop_job;

static void stop_slice(void *arg, int k, int nt) {
    stop_job *j = arg;
    int i0, i1;
    ram_split(j->n, k, nt, 1, &i0, &i1);
    j->bad[k] = -1;
    if (i1 <= i0) return;
    const ram_model_params *p = &j->m->p;
    const size_t img = (size_t)p->channels * p->height * p->width;
    ram_stop_rule rule = j->rule;
    if (rule.record) rule.record += (size_t)i0 * p->glimpses * p->classes;
    const long bad =
        ram_model_forward_stop(j->m, state_weights(j->st, j->m), state_w16(j->st), &j->st->cols,
                               &j->st->sub[k], ram_images_from(j->images, i0, img), i1 - i0, &rule,
                               j->steps ? j->steps + i0 : NULL, &j->bad_step[k], NULL);
    j->bad[k] = bad < 0 ? -1 : i0 + bad;
}

/* Images [i0, i0 + n) of a stopping call, their results in ws->probs. */
static void finish_stop(const ram_model *m, const ram_ws *ws, int i0, int n, int *labels,
                        float *probs) {
    const int K = m->p.classes;
    for (int i = 0; i < n; i++) {
        const float *pr = ws->probs + (size_t)i * K;
        if (labels) labels[i0 + i] = ram_argmax(pr, K);
        if (probs) memcpy(probs + ((size_t)i0 + i) * K, pr, sizeof(float) * K);
    }
}

/* A stopping pass (ram_model_forward_stop()) by `rule`, for the public
 * function `what`. */
static ram_status classify_stop(const ram_model *m, ram_state *st, ram_images images, int n,
                                const ram_stop_rule *rule, int *labels, float *probs, int *steps,
                                const char *what) {
    if (st) st->last_n = 0; /* no locations to report */
    if (!m || !st || ram_images_missing(images, 1))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL model, state or images", what);
    if (n < 1 || n > st->max_batch)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: n = %d not in [1, %d] (state size)", what, n,
                        st->max_batch);
    if (!ram_model_same_arch(&st->arch, &m->p) || st->n_params != m->n_params)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: state made for another architecture", what);
    if (!(rule->threshold >= 0.0f && rule->threshold <= 1.0f))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: threshold %g not in [0, 1]", what,
                        (double)rule->threshold);
    if (m->p.objects != 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: a model of %d objects emits a label every %d glimpses; "
                        "stopping is for one label",
                        what, m->p.objects, m->p.emit_every);
    ram_status rs = refresh_rounded(m, st);
    if (rs) return rs;
    ram_cols_refresh(&st->cols, m, st->w16);
    if (n <= st->ws.max_n) {
        int step = 0;
        double t0;
        ram_team *team = small_call_begin(st, &st->stop_choice, &t0);
        const long bad = ram_model_forward_stop(m, state_weights(st, m), state_w16(st), &st->cols,
                                                &st->ws, images, n, rule, steps, &step, team);
        small_call_end(st, &st->stop_choice, team, t0, n);
        if (bad >= 0)
            return ram_fail(RAM_ERR_NUMERIC, "%s: glimpse %d of image %ld reads a NaN or Inf pixel",
                            what, step + 1, bad);
        finish_stop(m, &st->ws, 0, n, labels, probs);
        return RAM_OK;
    }
    ram_blas_check_threads(ram_team_size(st->team));
    stop_job j = {.m = m, .st = st, .images = images, .n = n, .rule = *rule, .steps = steps};
    ram_team_run(st->team, stop_slice, &j);
    const int nt = ram_team_size(st->team);
    for (int k = 0; k < nt; k++)
        if (j.bad[k] >= 0)
            return ram_fail(RAM_ERR_NUMERIC, "%s: glimpse %d of image %ld reads a NaN or Inf pixel",
                            what, j.bad_step[k] + 1, j.bad[k]);
    for (int k = 0; k < nt; k++) {
        int i0, i1;
        ram_split(n, k, nt, 1, &i0, &i1);
        if (i1 > i0) finish_stop(m, &st->sub[k], i0, i1 - i0, labels, probs);
    }
    return RAM_OK;
}

ram_status ram_model_classify_stop(const ram_model *m, ram_state *st, const float *images, int n,
                                   float threshold, int *labels, float *probs, int *steps) {
    const ram_stop_rule rule = {.threshold = threshold};
    return classify_stop(m, st, ram_images_f32(images), n, &rule, labels, probs, steps,
                         "classify_stop");
}

ram_status ram_model_classify_stop_u8(const ram_model *m, ram_state *st, const uint8_t *images,
                                      int n, float threshold, int *labels, float *probs,
                                      int *steps) {
    const ram_images b = {NULL, images, NULL};
    const ram_stop_rule rule = {.threshold = threshold};
    return classify_stop(m, st, b, n, &rule, labels, probs, steps, "classify_stop");
}

/* The model's stop unit as a rule, or INVALID_ARGUMENT. */
static ram_status unit_rule(const ram_model *m, ram_stop_rule *rule, const char *what) {
    if (!m) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL model", what);
    if (!m->has_stop)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: the model has no stop unit (ram_model_fit_stop(); ram-train "
                        "--stop-cost)",
                        what);
    *rule = (ram_stop_rule){.unit = m->stop_w};
    return RAM_OK;
}

ram_status ram_model_classify_stop_unit(const ram_model *m, ram_state *st, const float *images,
                                        int n, int *labels, float *probs, int *steps) {
    ram_stop_rule rule;
    ram_status s = unit_rule(m, &rule, "classify_stop_unit");
    if (s) return s;
    return classify_stop(m, st, ram_images_f32(images), n, &rule, labels, probs, steps,
                         "classify_stop_unit");
}

ram_status ram_model_classify_stop_unit_u8(const ram_model *m, ram_state *st, const uint8_t *images,
                                           int n, int *labels, float *probs, int *steps) {
    ram_stop_rule rule;
    ram_status s = unit_rule(m, &rule, "classify_stop_unit");
    if (s) return s;
    const ram_images b = {NULL, images, NULL};
    return classify_stop(m, st, b, n, &rule, labels, probs, steps, "classify_stop_unit");
}

ram_status ram_model_step_probs(const ram_model *m, ram_state *st, const float *images, int n,
                                float *probs) {
    if (!probs) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "step_probs: NULL probs");
    const ram_stop_rule rule = {.record = probs};
    return classify_stop(m, st, ram_images_f32(images), n, &rule, NULL, NULL, NULL, "step_probs");
}
