/* Training: the hybrid loss (cross-entropy + baseline MSE + REINFORCE; with
 * a soft sensor, cross-entropy backpropagated into the locations, with or
 * without the REINFORCE terms) over
 * data-parallel workers on the library's thread team, the gradient hook,
 * clipping, and the optimizer step (optim.c) shared out by blocks of
 * weights; evaluation; checkpoints (their format is serialize.c's). */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ram_trainer_params_init_sized(ram_trainer_params *p, size_t size) {
    /* Unnamed fields are zero: no decay, no Nesterov, no weight decay, no average. */
    static const ram_trainer_params d = {.struct_size = sizeof d,
                                         .optimizer = RAM_OPT_ADAM,
                                         .lr = 1e-3f,
                                         .lr_final = 1e-3f,
                                         .momentum = 0.9f,
                                         .beta1 = 0.9f,
                                         .beta2 = 0.999f,
                                         .eps = 1e-8f,
                                         .clip_norm = 5.0f,
                                         .max_batch = 128,
                                         .threads = 1};
    ram_params_fill(p, size, &d, sizeof d);
}

/* What one worker computes on its slice of the batch. */
typedef struct worker {
    ram_ws ws;
    float *gbw;         /* baseline gradient */
    float *b, *R, *dmu; /* T x n baseline, returns; T x n x ld location gradient */
    int *pred;          /* slice x objects */
    long bad;           /* first image of the slice whose glimpse read a NaN/Inf pixel, or -1 */
    bool policy_failed; /* the REINFORCE estimator refused a non-finite mean or baseline */
    /* Sums over the slice; ce: the cross-entropy against the (smoothed) target. */
    double nll, ce, sse, surrogate, correct, reward, baseline;
    long errors, object_errors; /* evaluation: images with a label wrong, labels wrong */
    int i0, i1;                 /* the slice [i0, i1) of the current batch */
} worker;

struct ram_trainer {
    ram_model *m;
    ram_policy *pol;
    ram_trainer_params p;
    int nw;         /* workers: the team's threads (the caller's runs w[0]) */
    ram_team *team; /* NULL with one worker */
    worker *w;
    float *eps; /* max_batch x T x ld, sample-major: independent of the split */
    /* the gradient hook and its flat buffer [model gradient; baseline gradient] */
    ram_gradient_fn hook;
    void *hook_user;
    float *flat;
    ram_optim opt; /* over [model weights, baseline weights]; the average */
    bool avg_in;   /* swap_average() put the average into the model (and the weights into it) */
    ram_rng rng;   /* shuffling */
    /* the batch being processed */
    ram_images images;
    const int *labels;
    int n;
    bool training;
    /* What the workers run: their slices of the batch, or their shares of
     * the optimizer step over the weights (run_share()): summing, the norm
     * and Adam over all weights, on one thread, took about a tenth of a
     * 2-thread MNIST step at batch 128 while the other thread waited. */
    int job;
    float *g;                         /* the summed model gradient (JOB_SUM writes it) */
    size_t n_blocks;                  /* GRAD_BLOCK weights each, the last one shorter */
    double *block_sq;                 /* the squared norm of each block of g */
    float lr, scale, decay, avg_rate; /* JOB_UPDATE's arguments */
    /* The column-major copies the forward pass's sparse kernels read,
     * remade before each batch whose weights changed since the last (a few
     * per cent of a 2-thread step, against the tenth of an epoch that a
     * trained model gains from them: docs/performance.md). */
    ram_cols cols;
};

enum {
    JOB_SLICE,  /* forward (and backward) over the worker's slice of the batch */
    JOB_SUM,    /* g = the workers' gradients summed, and each block's squared norm */
    JOB_NORM,   /* each block's squared norm only (after the gradient hook) */
    JOB_UPDATE, /* the optimizer's update of the weights */
};
/* The norm is summed per block and the blocks in order: its bits depend only
 * on g, not on how the blocks are shared out among the workers. */
#define GRAD_BLOCK 4096

/* ---- one slice ---- */

/* After the slice's forward pass: did a glimpse read a NaN/Inf pixel? */
static bool glimpsed_nonfinite(const ram_model *m, worker *wk, int n) {
    int step;
    const long bad = ram_ws_bad_glimpse(m, &wk->ws, n, &step);
    if (bad >= 0) wk->bad = wk->i0 + bad;
    return bad >= 0;
}

/* The classification loss's gradient into ws->dlogits, and its sums: the
 * S labels' cross-entropies (labels: n x S; probs and dlogits S x n x K). */
static void classifier_loss(ram_trainer *t, worker *wk, const int *labels, int n) {
    const int K = t->m->p.classes, S = t->m->p.objects;
    const float N = (float)t->n, e = t->p.label_smoothing;
    const float off = e / (float)K, on = 1.0f - e + off; /* the smoothed target */
    for (int o = 0; o < S; o++)
        for (int i = 0; i < n; i++) {
            const int y = labels[(size_t)i * S + o];
            const float *pr = wk->ws.probs + ((size_t)o * n + i) * K;
            const int best = ram_argmax(pr, K);
            wk->pred[(size_t)i * S + o] = best;
            wk->correct += best == y;
            const double nll = -log(pr[y] > 1e-30f ? pr[y] : 1e-30f);
            wk->nll += nll;
            float *dl = wk->ws.dlogits + ((size_t)o * n + i) * K;
            for (int k = 0; k < K; k++) /* e = 0: targets exactly 1 and 0 */
                dl[k] = (pr[k] - (k == y ? on : off)) / N;
            if (!(e > 0)) { /* the label alone: its cross-entropy is the nll */
                wk->ce += nll;
                continue;
            }
            for (int k = 0; k < K; k++)
                wk->ce -= (k == y ? on : off) * log(pr[k] > 1e-30f ? pr[k] : 1e-30f);
        }
}

/* The returns of image i (R laid out T x n) and its final reward, for S > 1
 * objects: see ram_reward_mode. */
static float object_returns(const ram_trainer *t, const int *pred, const int *labels, int i, int n,
                            float *R) {
    const ram_model_params *p = &t->m->p;
    const int S = p->objects, E = p->emit_every, T = p->glimpses;
    const float gamma = t->pol->p.discount;
    int right = 0;
    for (int o = 0; o < S; o++)
        right += pred[(size_t)i * S + o] == labels[(size_t)i * S + o];
    if (t->pol->p.reward == RAM_REWARD_ALL_CORRECT) {
        const float r = right == S ? 1.0f : 0.0f;
        ram_policy_return_row(t->pol, r, R + i, (size_t)n);
        return r;
    }
    /* Backwards from the last step: R_t = gamma R_{t+1} + the reward of a
     * label emitted after step t. */
    float ret = 0.0f;
    for (int s = T - 1; s >= 0; s--) {
        ret *= gamma;
        if ((s + 1) % E == 0) {
            const int o = (s + 1) / E - 1;
            ret += pred[(size_t)i * S + o] == labels[(size_t)i * S + o] ? 1.0f : 0.0f;
        }
        R[(size_t)s * n + i] = ret;
    }
    return (float)right;
}

/* REINFORCE: the returns (R laid out T x n here), the baseline at each
 * decision, and the location gradient into wk->dmu. */
static void policy_loss(ram_trainer *t, worker *wk, const int *labels, int n) {
    const ram_policy *pol = t->pol;
    const ram_ws *ws = &wk->ws;
    const int T = t->m->p.glimpses, L = t->m->ld;
    const float std = pol->p.std, alpha = pol->p.reward_scale, N = (float)t->n;
    if (t->m->p.objects > 1) {
        for (int i = 0; i < n; i++)
            wk->reward += object_returns(t, wk->pred, labels, i, n, wk->R);
    } else {
        for (int i = 0; i < n; i++) {
            const float r = wk->pred[i] == labels[i] ? 1.0f : 0.0f;
            wk->reward += r;
            ram_policy_return_row(pol, r, wk->R + i, (size_t)n);
        }
    }
    ram_baseline_forward(pol, ram_top_state(t->m, ws), n, wk->b);
    for (int s = 0; s < T; s++) {
        const size_t o = (size_t)s * n;
        if (ram_reinforce_gaussian(ws->loc + L * o, ws->mu + L * o, n, L, std, wk->R + o, wk->b + o,
                                   alpha, N, wk->dmu + L * o))
            wk->policy_failed = true;
        ram_reinforce_gaussian_surrogate(ws->loc + L * o, ws->mu + L * o, n, L, std, wk->R + o,
                                         wk->b + o, alpha, &wk->surrogate);
        for (int i = 0; i < n; i++)
            wk->baseline += wk->b[o + i];
    }
    wk->baseline /= T;
}

static void run_slice(ram_trainer *t, worker *wk) {
    const ram_model *m = t->m;
    const ram_policy *pol = t->pol;
    const int n = wk->i1 - wk->i0, T = m->p.glimpses, K = m->p.classes, S = m->p.objects;
    wk->nll = wk->ce = wk->sse = wk->surrogate = wk->correct = wk->reward = wk->baseline = 0;
    wk->errors = wk->object_errors = 0;
    wk->bad = -1;
    wk->policy_failed = false;
    if (n <= 0) { /* more workers than images: contribute nothing */
        if (t->training) {
            memset(wk->ws.grad, 0, sizeof(float) * m->n_params);
            if (pol->n_bw) memset(wk->gbw, 0, sizeof(float) * pol->n_bw);
        }
        return;
    }
    const size_t img = (size_t)m->p.channels * m->p.height * m->p.width;
    const ram_images images = ram_images_from(t->images, wk->i0, img);
    const int *labels = t->labels + (size_t)wk->i0 * S;
    ram_ws *ws = &wk->ws;
    /* The weights changed since the last slice; evaluation stays float. */
    ram_gemm_begin(ws->gemm, t->training);

    if (!t->training) {
        ram_model_forward_with(m, m->w, (ram_w16){0}, &t->cols, ws, images, n, RAM_LOC_MEAN, NULL,
                               0, NULL);
        if (glimpsed_nonfinite(m, wk, n)) return;
        for (int i = 0; i < n; i++) {
            int wrong = 0;
            for (int o = 0; o < S; o++)
                wrong +=
                    ram_argmax(ws->probs + ((size_t)o * n + i) * K, K) != labels[(size_t)i * S + o];
            wk->errors += wrong > 0;
            wk->object_errors += wrong;
        }
        return;
    }

    /* A soft sensor trained by backpropagation alone looks where the
     * policy's mean says: no sampling, no REINFORCE, no baseline. */
    const bool soft = m->p.sensor == RAM_SENSOR_SOFT;
    const bool sampled = !soft || pol->p.soft_training == RAM_SOFT_HYBRID;
    if (sampled) {
        /* Noise for sample i, step s lives at eps[(i * T + s) * ld]. */
        const int L = m->ld;
        for (int s = 0; s < T; s++)
            for (int i = 0; i < n; i++)
                for (int d = 0; d < L; d++)
                    ws->aux[((size_t)s * n + i) * L + d] =
                        t->eps[(((size_t)wk->i0 + i) * T + s) * L + d];
        ram_model_forward_with(m, m->w, (ram_w16){0}, &t->cols, ws, images, n, RAM_LOC_SAMPLE,
                               ws->aux, pol->p.std, NULL);
    } else {
        ram_model_forward_with(m, m->w, (ram_w16){0}, &t->cols, ws, images, n, RAM_LOC_MEAN, NULL,
                               0, NULL);
    }
    if (glimpsed_nonfinite(m, wk, n)) return;
    classifier_loss(t, wk, labels, n);
    if (sampled) {
        policy_loss(t, wk, labels, n);
    } else {
        for (int i = 0; i < n; i++) {
            int right = 0;
            for (int o = 0; o < S; o++)
                right += wk->pred[(size_t)i * S + o] == labels[(size_t)i * S + o];
            wk->reward += t->pol->p.reward == RAM_REWARD_ALL_CORRECT ? right == S : right;
        }
    }
    memset(ws->grad, 0, sizeof(float) * m->n_params);
    if (soft)
        ram_model_backward_images(m, ws, n, images, sampled ? RAM_LOC_SAMPLE : RAM_LOC_MEAN,
                                  sampled ? wk->dmu : NULL, pol->p.detach_core,
                                  pol->p.soft_detach_core);
    else
        ram_model_backward(m, ws, n, wk->dmu, pol->p.detach_core);
    if (pol->n_bw) memset(wk->gbw, 0, sizeof(float) * pol->n_bw);
    if (sampled)
        wk->sse =
            ram_baseline_backward(pol, ram_top_state(m, ws), n, wk->b, wk->R, (float)t->n, wk->gbw);
}

/* ---- the optimizer step's shares ---- */

/* Worker k's share of the blocks of weights for t->job. */
static void run_share(ram_trainer *t, int k) {
    const size_t np = t->m->n_params;
    const size_t b0 = t->n_blocks * k / t->nw, b1 = t->n_blocks * (k + 1) / t->nw;
    for (size_t b = b0; b < b1; b++) {
        const size_t i0 = b * GRAD_BLOCK, n = np - i0 < GRAD_BLOCK ? np - i0 : GRAD_BLOCK;
        float *restrict g = t->g + i0;
        if (t->job == JOB_UPDATE) {
            ram_optim_update(&t->opt, t->m->w + i0, g, n, i0, t->lr, t->scale, t->decay,
                             t->opt.avg ? t->opt.avg + i0 : NULL, t->avg_rate);
            continue;
        }
        if (t->job == JOB_SUM) { /* in worker order: deterministic for a thread count */
            if (t->g != t->w[0].ws.grad) memcpy(g, t->w[0].ws.grad + i0, sizeof(float) * n);
            for (int w = 1; w < t->nw; w++) {
                const float *restrict h = t->w[w].ws.grad + i0;
                for (size_t i = 0; i < n; i++)
                    g[i] += h[i];
            }
            if (t->hook) continue; /* the hook changes g: JOB_NORM follows it */
        }
        t->block_sq[b] = ram_squared_norm(g, n);
    }
}

static void run_job_share(void *arg, int k, int nt) {
    ram_trainer *t = arg;
    (void)nt; /* == t->nw */
    if (t->job == JOB_SLICE)
        run_slice(t, &t->w[k]);
    else
        run_share(t, k);
}

/* Run `job` on every worker; the caller's thread runs worker 0's share. */
static void run_job(ram_trainer *t, int job) {
    t->job = job;
    ram_team_run(t->team, run_job_share, t);
}

/* Split [0, n) over the workers and run them. */
static void run_all(ram_trainer *t, int n) {
    ram_blas_check_threads(t->nw);
    ram_cols_refresh(&t->cols, t->m, NULL);
    for (int k = 0; k < t->nw; k++) {
        t->w[k].i0 = (int)((long)n * k / t->nw);
        t->w[k].i1 = (int)((long)n * (k + 1) / t->nw);
    }
    run_job(t, JOB_SLICE);
}

/* ---- create / free ---- */

static void release_worker(worker *wk) {
    ram_gemm_free(wk->ws.gemm);
    wk->ws.gemm = NULL;
    ram_ws_release(&wk->ws);
    float *bufs[] = {wk->gbw, wk->b, wk->R, wk->dmu};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    free(wk->pred);
}

void ram_trainer_free(ram_trainer *t) {
    if (!t) return;
    ram_team_free(t->team);
    if (t->w)
        for (int k = 0; k < t->nw; k++)
            release_worker(&t->w[k]);
    ram_optim_release(&t->opt);
    ram_cols_release(&t->cols);
    void *blocks[] = {t->w, t->eps, t->flat, t->block_sq, t};
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++)
        free(blocks[i]);
}

static ram_status check_trainer_params(const ram_model *m, const ram_policy *pol,
                                       const ram_trainer_params *p) {
    ram_status s = ram_optim_validate(p, "trainer_create");
    if (s) return s;
    if (p->max_batch < 1 || p->max_batch > 1 << 16)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: max_batch %d not in [1, 65536]",
                        p->max_batch);
    if (!(p->label_smoothing >= 0 && p->label_smoothing < 1)) /* also false for NaN */
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: label_smoothing %g must be in [0, 1)",
                        (double)p->label_smoothing);
    if (p->products != RAM_PRODUCTS_FLOAT && p->products != RAM_PRODUCTS_BF16)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: products %d unknown",
                        (int)p->products);
    if (p->threads < 1 || p->threads > 256)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: threads %d not in [1, 256]",
                        p->threads);
    if (pol->p.soft_training != RAM_SOFT_BACKPROP && pol->p.soft_training != RAM_SOFT_HYBRID)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: soft_training %d unknown",
                        (int)pol->p.soft_training);
    if (pol->p.steps != m->p.glimpses ||
        (pol->p.baseline == RAM_BASELINE_LINEAR && pol->p.hidden != m->p.core_hidden))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: policy has %d steps / hidden %d, model %d glimpses / "
                        "hidden %d",
                        pol->p.steps, pol->p.hidden, m->p.glimpses, m->p.core_hidden);
    return RAM_OK;
}

/* The workers' workspaces and buffers, for slices of up to `slice` images. */
static ram_status make_workers(ram_trainer *t, size_t slice) {
    const ram_model *m = t->m;
    const size_t T = (size_t)m->p.glimpses, nbw = t->pol->n_bw;
    for (int k = 0; k < t->nw; k++) {
        worker *wk = &t->w[k];
        ram_status s = ram_ws_init(&wk->ws, m, (int)slice, true);
        if (s) return s;
        /* bfloat16 when asked for; float through libram's own products
         * wherever the avx512 kernel set runs (faster than sgemm at a
         * worker's rows), else sgemm */
        const bool bf16 = t->p.products == RAM_PRODUCTS_BF16;
        if ((bf16 || ram_gemm_float_supported()) &&
            (s = ram_gemm_create(m->t, RAM_T_COUNT, (int)slice, bf16, &wk->ws.gemm)))
            return s;
        wk->gbw = calloc(nbw ? nbw : 1, sizeof(float));
        wk->b = malloc(sizeof(float) * T * slice);
        wk->R = malloc(sizeof(float) * T * slice);
        wk->dmu = malloc(sizeof(float) * T * slice * (size_t)m->ld);
        wk->pred = malloc(sizeof(int) * slice * m->p.objects);
        if (!wk->gbw || !wk->b || !wk->R || !wk->dmu || !wk->pred)
            return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    }
    return RAM_OK;
}

ram_status ram_trainer_create(ram_model *m, ram_policy *pol, const ram_trainer_params *user,
                              ram_trainer **out) {
    if (!m || !pol || !out)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: NULL model, policy or out");
    ram_trainer_params p;
    ram_trainer_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "trainer_create");
    if (s || (s = check_trainer_params(m, pol, &p))) return s;

    ram_trainer *t = calloc(1, sizeof *t);
    if (!t) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    t->m = m;
    t->pol = pol;
    t->p = p;
    t->nw = p.threads < p.max_batch ? p.threads : p.max_batch;
    ram_rng_seed(&t->rng, m->p.seed ^ 0x5deece66dULL);
    const size_t slice = (size_t)(p.max_batch + t->nw - 1) / t->nw;
    t->w = calloc(t->nw, sizeof *t->w);
    t->eps = malloc(sizeof(float) * p.max_batch * m->p.glimpses * (size_t)m->ld);
    t->n_blocks = (m->n_params + GRAD_BLOCK - 1) / GRAD_BLOCK;
    t->block_sq = calloc(t->n_blocks, sizeof(double));
    if (!t->w || !t->eps || !t->block_sq)
        s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    if (!s) s = ram_optim_init(&t->opt, &p, m->n_params + pol->n_bw, m->w, m->n_params);
    if (!s) s = ram_cols_init(&t->cols, m);
    if (!s) s = make_workers(t, slice);
    if (!s && t->nw > 1) s = ram_team_create(t->nw, RAM_ERR_THREAD, "trainer_create", &t->team);
    if (s) {
        ram_trainer_free(t);
        return s;
    }
    *out = t;
    return RAM_OK;
}

/* ---- steps ---- */

static ram_status check_batch(const ram_trainer *t, ram_images images, const int *labels, int n,
                              int max_n, const char *what) {
    if (!t || !labels || ram_images_missing(images, 1))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (n < 1 || n > max_n)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: n = %d not in [1, %d]", what, n, max_n);
    /* n is known good now: every pointer of a list can be looked at. */
    if (ram_images_missing(images, n))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL image pointer", what);
    const int K = t->m->p.classes;
    const long count = (long)n * t->m->p.objects;
    for (long i = 0; i < count; i++)
        if (labels[i] < 0 || labels[i] >= K)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: label[%ld] = %d not in [0, %d)", what, i,
                            labels[i], K);
    return RAM_OK;
}

/* After run_all(): the first image (offset i0 in the caller's array) whose
 * glimpses read a NaN/Inf pixel, as an error, or RAM_OK. */
static ram_status check_glimpses(const ram_trainer *t, long i0, const char *what) {
    for (int k = 0; k < t->nw; k++)
        if (t->w[k].bad >= 0)
            return ram_fail(RAM_ERR_NUMERIC,
                            "%s: a glimpse of image %ld reads a NaN or Inf pixel; weights "
                            "unchanged",
                            what, i0 + t->w[k].bad);
    return RAM_OK;
}

static ram_status refuse_average_in(const char *what) {
    return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                    "%s: the model holds the weights' average; call ram_trainer_swap_average() "
                    "again first",
                    what);
}

ram_status ram_trainer_swap_average(ram_trainer *t) {
    if (!t) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "swap_average: trainer is NULL");
    if (!t->opt.avg)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "swap_average: this trainer keeps no average (average_decay = 0)");
    float *restrict avg = t->opt.avg, *restrict w = t->m->w;
    for (size_t i = 0; i < t->m->n_params; i++) {
        const float x = w[i];
        w[i] = avg[i];
        avg[i] = x;
    }
    t->avg_in = !t->avg_in;
    ram_model_touch(t->m);
    return RAM_OK;
}

int ram_trainer_average_in(const ram_trainer *t) {
    return t && t->avg_in;
}

/* The batch's losses, summed over the workers. */
typedef struct sums {
    double nll, ce, sse, sur, correct, reward, base;
} sums;

/* The gradient summed over the workers (the model's in t->g by JOB_SUM,
 * the baseline's few weights here into gb), and the losses. */
static sums sum_workers(ram_trainer *t, float *gb) {
    const size_t nb = t->pol->n_bw;
    run_job(t, JOB_SUM);
    if (t->hook && nb) memcpy(gb, t->w[0].gbw, sizeof(float) * nb);
    sums s = {0};
    for (int k = 0; k < t->nw; k++) {
        worker *wk = &t->w[k];
        if (k > 0)
            for (size_t i = 0; i < nb; i++)
                gb[i] += wk->gbw[i];
        s.nll += wk->nll;
        s.ce += wk->ce;
        s.sse += wk->sse;
        s.sur += wk->surrogate;
        s.correct += wk->correct;
        s.reward += wk->reward;
        s.base += wk->baseline;
    }
    return s;
}

/* Clip, then the optimizer's update of the model (by the workers) and the
 * baseline; `norm` is the gradient's. */
static void apply_update(ram_trainer *t, const float *gb, double norm, float lr) {
    float scale = 1.0f;
    if (t->p.clip_norm > 0 && norm > t->p.clip_norm) scale = (float)(t->p.clip_norm / norm);
    /* The gradient was taken at the weights before the decay: AdamW's order. */
    t->lr = lr;
    t->scale = scale;
    t->decay = 1.0f - lr * t->p.weight_decay;
    t->avg_rate = t->opt.avg ? ram_optim_average_rate(&t->opt) : 0.0f;
    run_job(t, JOB_UPDATE);
    const size_t nb = t->pol->n_bw;
    if (nb)
        ram_optim_update(&t->opt, t->pol->bw, gb, nb, t->m->n_params, lr, scale, 1.0f, NULL, 0.0f);
    ram_model_touch(t->m);
    t->m->has_stop = false; /* fitted to the weights before this step */
    t->opt.step++;
}

static void fill_stats(const ram_trainer *t, const sums *s, int n, double norm, float lr,
                       ram_train_stats *stats) {
    const int T = t->m->p.glimpses;
    stats->nll = (float)(s->nll / n);
    stats->baseline_mse =
        t->pol->p.baseline == RAM_BASELINE_NONE ? 0.0f : (float)(s->sse / ((double)n * T));
    stats->reinforce = (float)(s->sur / n);
    stats->loss = (float)(s->ce / n) + stats->baseline_mse + stats->reinforce;
    stats->accuracy = (float)(s->correct / ((double)n * t->m->p.objects));
    stats->reward = (float)(s->reward / n);
    stats->baseline = (float)(s->base / n);
    stats->grad_norm = (float)norm;
    stats->lr = lr;
}

/* A model of several objects takes its labels through the _seq functions,
 * whose array is S times longer: one label per image would be misread. */
static ram_status refuse_objects(const ram_trainer *t, const char *what) {
    return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                    "%s: the model has %d objects per image: use the _seq functions with n x %d "
                    "labels",
                    what, t->m->p.objects, t->m->p.objects);
}

/* ram_trainer_train_batch() and _seq() on floats or bytes (`what`: the
 * caller's name; `seq`: labels n x objects, else one per image). */
static ram_status train_batch(ram_trainer *t, ram_images images, const int *labels, int n,
                              ram_train_stats *stats, bool seq, const char *what) {
    if (!seq && t && t->m->p.objects > 1) return refuse_objects(t, what);
    ram_status s = check_batch(t, images, labels, n, t ? t->p.max_batch : 0, what);
    if (s) return s;
    if (t->avg_in) return refuse_average_in(what);
    const int T = t->m->p.glimpses;
    const ram_rng rng_before = t->pol->rng; /* a failed step must change nothing */
    for (size_t i = 0; i < (size_t)n * T * t->m->ld; i++)
        t->eps[i] = (float)ram_rng_normal(&t->pol->rng);
    t->images = images;
    t->labels = labels;
    t->n = n;
    t->training = true;
    run_all(t, n);
    if ((s = check_glimpses(t, 0, what))) {
        t->pol->rng = rng_before;
        return s;
    }
    /* Sum the slices in a fixed order: deterministic for a thread count.
     * With a hook the sum is made in its flat buffer (worker 0's gradient
     * copied there first: the same bits), and the update reads it there. */
    const size_t np = t->m->n_params, nb = t->pol->n_bw;
    float *gb = t->hook ? t->flat + np : t->w[0].gbw;
    t->g = t->hook ? t->flat : t->w[0].ws.grad;
    for (int k = 0; k < t->nw; k++)
        if (t->w[k].policy_failed) {
            t->pol->rng = rng_before;
            return ram_fail(RAM_ERR_NUMERIC,
                            "%s: non-finite location mean or baseline at step %ld; "
                            "weights unchanged (lower the learning rate)",
                            what, t->opt.step);
        }
    const sums sum = sum_workers(t, gb);
    if (t->hook) {
        /* One flat buffer, so that an allreduce is one call. */
        ram_status hs = t->hook(t->flat, np + nb, t->hook_user);
        if (hs != RAM_OK) {
            t->pol->rng = rng_before;
            return ram_fail(hs,
                            "%s: the gradient hook failed (status %d) at step %ld; "
                            "weights unchanged",
                            what, (int)hs, t->opt.step);
        }
        run_job(t, JOB_NORM);
    }
    double sq = 0;
    for (size_t b = 0; b < t->n_blocks; b++)
        sq += t->block_sq[b];
    for (size_t i = 0; i < nb; i++)
        sq += (double)gb[i] * gb[i];
    const double norm = sqrt(sq);
    if (!isfinite(norm) || !isfinite(sum.nll)) {
        t->pol->rng = rng_before;
        return ram_fail(RAM_ERR_NUMERIC,
                        "%s: non-finite loss or gradient at step %ld; weights unchanged "
                        "(lower the learning rate, or raise the location std)",
                        what, t->opt.step);
    }
    const float lr = ram_optim_lr(&t->opt);
    apply_update(t, gb, norm, lr);
    if (stats) fill_stats(t, &sum, n, norm, lr, stats);
    return RAM_OK;
}

ram_status ram_trainer_train_batch(ram_trainer *t, const float *images, const int *labels, int n,
                                   ram_train_stats *stats) {
    return train_batch(t, ram_images_f32(images), labels, n, stats, false, "train_batch");
}

ram_status ram_trainer_train_batch_seq(ram_trainer *t, const float *images, const int *labels,
                                       int n, ram_train_stats *stats) {
    return train_batch(t, ram_images_f32(images), labels, n, stats, true, "train_batch_seq");
}

ram_status ram_trainer_train_batch_u8(ram_trainer *t, const uint8_t *images, const int *labels,
                                      int n, ram_train_stats *stats) {
    const ram_images b = {NULL, images, NULL};
    return train_batch(t, b, labels, n, stats, false, "train_batch_u8");
}

ram_status ram_trainer_train_batch_u8_ptrs(ram_trainer *t, const uint8_t *const *images,
                                           const int *labels, int n, ram_train_stats *stats) {
    const ram_images b = {NULL, NULL, images};
    return train_batch(t, b, labels, n, stats, false, "train_batch_u8_ptrs");
}

/* ram_trainer_evaluate() and _seq() on floats or bytes (`seq`: labels n x
 * objects and object_error, else one label per image and error alone). */
static ram_status evaluate(ram_trainer *t, ram_images images, const int *labels, int n,
                           double *error, double *object_error, bool seq, const char *what) {
    if (seq && !error && !object_error)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: error and object_error are NULL", what);
    if (!seq && !error) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: error is NULL", what);
    if (!seq && t && t->m->p.objects > 1) return refuse_objects(t, what);
    ram_status s = check_batch(t, images, labels, n, 1 << 30, what);
    if (s) return s;
    const size_t img = (size_t)t->m->p.channels * t->m->p.height * t->m->p.width;
    const int S = t->m->p.objects;
    long errors = 0, object_errors = 0;
    for (int i0 = 0; i0 < n; i0 += t->p.max_batch) {
        int b = n - i0 < t->p.max_batch ? n - i0 : t->p.max_batch;
        t->images = ram_images_from(images, i0, img);
        t->labels = labels + (size_t)i0 * S;
        t->n = b;
        t->training = false;
        run_all(t, b);
        if ((s = check_glimpses(t, i0, what))) return s;
        for (int k = 0; k < t->nw; k++) {
            errors += t->w[k].errors;
            object_errors += t->w[k].object_errors;
        }
    }
    if (error) *error = (double)errors / n;
    if (object_error) *object_error = (double)object_errors / ((double)n * S);
    return RAM_OK;
}

ram_status ram_trainer_evaluate(ram_trainer *t, const float *images, const int *labels, int n,
                                double *error) {
    return evaluate(t, ram_images_f32(images), labels, n, error, NULL, false, "evaluate");
}

ram_status ram_trainer_evaluate_seq(ram_trainer *t, const float *images, const int *labels, int n,
                                    double *error, double *object_error) {
    return evaluate(t, ram_images_f32(images), labels, n, error, object_error, true,
                    "evaluate_seq");
}

ram_status ram_trainer_evaluate_u8(ram_trainer *t, const uint8_t *images, const int *labels, int n,
                                   double *error) {
    const ram_images b = {NULL, images, NULL};
    return evaluate(t, b, labels, n, error, NULL, false, "evaluate_u8");
}

ram_status ram_trainer_evaluate_u8_ptrs(ram_trainer *t, const uint8_t *const *images,
                                        const int *labels, int n, double *error) {
    const ram_images b = {NULL, NULL, images};
    return evaluate(t, b, labels, n, error, NULL, false, "evaluate_u8_ptrs");
}

size_t ram_trainer_gradient_size(const ram_trainer *t) {
    return t ? t->m->n_params + t->pol->n_bw : 0;
}

ram_status ram_trainer_set_gradient_hook(ram_trainer *t, ram_gradient_fn fn, void *user) {
    if (!t) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "set_gradient_hook: trainer is NULL");
    if (fn && !t->flat) {
        t->flat = malloc(sizeof(float) * ram_trainer_gradient_size(t));
        if (!t->flat) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "set_gradient_hook: out of memory");
    }
    t->hook = fn;
    t->hook_user = user;
    return RAM_OK;
}

long ram_trainer_steps(const ram_trainer *t) {
    return t ? t->opt.step : 0;
}

ram_status ram_trainer_shuffle(ram_trainer *t, int *perm, int n) {
    if (!t || !perm || n < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_shuffle: NULL argument or n < 0");
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)(ram_rng_u64(&t->rng) % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    return RAM_OK;
}

/* ---- checkpoints (the format: serialize.c) ---- */

static ram_checkpoint checkpoint_of(const ram_trainer *t) {
    return (ram_checkpoint){t->m, t->pol, (ram_optim *)&t->opt, (ram_rng *)&t->rng};
}

ram_status ram_trainer_save_checkpoint(const ram_trainer *t, const char *path, const void *user,
                                       size_t user_len) {
    if (!t || !path || (!user && user_len))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "save_checkpoint: NULL argument");
    if (t->avg_in) return refuse_average_in("save_checkpoint");
    const ram_checkpoint c = checkpoint_of(t);
    return ram_checkpoint_save(&c, path, user, user_len);
}

ram_status ram_trainer_load_checkpoint(ram_trainer *t, const char *path, void *user,
                                       size_t user_cap, size_t *user_len) {
    if (!t || !path || (!user && user_cap))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "load_checkpoint: NULL argument");
    if (t->avg_in) return refuse_average_in("load_checkpoint");
    unsigned char *data;
    size_t len;
    ram_status s = ram_file_read(path, &data, &len);
    if (s) return s;
    const ram_checkpoint c = checkpoint_of(t);
    s = ram_checkpoint_load(&c, data, len, path, user, user_cap, user_len);
    free(data);
    return s;
}

ram_status ram_trainer_load_checkpoint_memory(ram_trainer *t, const void *data, size_t size,
                                              void *user, size_t user_cap, size_t *user_len) {
    if (!t || (!data && size) || (!user && user_cap))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "load_checkpoint_memory: NULL argument");
    if (t->avg_in) return refuse_average_in("load_checkpoint_memory");
    const char *name = "checkpoint (in memory)";
    ram_status s = ram_file_verify(data, size, name);
    if (s) return s;
    const ram_checkpoint c = checkpoint_of(t);
    return ram_checkpoint_load(&c, data, size, name, user, user_cap, user_len);
}
