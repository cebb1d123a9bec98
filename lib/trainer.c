/* Training: the hybrid loss (cross-entropy + baseline MSE + REINFORCE),
 * data-parallel workers over a batch, gradient clipping, SGD with momentum
 * and Adam, evaluation and checkpoints. */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void trainer_defaults(ram_trainer_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->optimizer = RAM_OPT_ADAM;
    p->lr = 1e-3f;
    p->lr_final = 1e-3f;
    p->decay_steps = 0;
    p->momentum = 0.9f;
    p->nesterov = 0;
    p->beta1 = 0.9f;
    p->beta2 = 0.999f;
    p->eps = 1e-8f;
    p->clip_norm = 5.0f;
    p->max_batch = 128;
    p->threads = 1;
    p->weight_decay = 0.0f;
    p->average_decay = 0.0f;
}

void ram_trainer_params_init_sized(ram_trainer_params *p, size_t size) {
    if (!p || size < sizeof(size_t)) return;
    ram_trainer_params d;
    trainer_defaults(&d);
    if (size > sizeof d) size = sizeof d; /* a newer caller: we fill what we know */
    d.struct_size = size;
    memcpy(p, &d, size);
}

/* What one worker computes on its slice of the batch. */
typedef struct worker {
    ram_ws ws;
    float *gbw;         /* baseline gradient */
    float *b, *R, *dmu; /* T x n baseline, returns; T x n x 2 location gradient */
    int *pred;
    long bad; /* first image of the slice whose glimpse read a NaN/Inf pixel, or -1 */
    double nll, sse, surrogate, correct, reward, baseline; /* sums over the slice */
    long errors;
    int i0, i1; /* the slice [i0, i1) of the current batch */
    struct ram_trainer *owner;
    bool started; /* a thread runs this worker (k > 0) */
    pthread_t thread;
} worker;

struct ram_trainer {
    ram_model *m;
    ram_policy *pol;
    ram_trainer_params p;
    int nw;
    worker *w;
    float *eps; /* max_batch x T x 2, sample-major: independent of the split */
    /* the gradient hook and its flat buffer [model gradient; baseline gradient] */
    ram_gradient_fn hook;
    void *hook_user;
    float *flat;
    float *m1, *m2; /* optimizer state over [model weights, baseline weights] */
    float *avg;     /* moving average of the model weights (average_decay > 0), else NULL */
    bool avg_in;    /* swap_average() put avg into the model (and the weights into avg) */
    long step;
    ram_rng rng; /* shuffling */
    /* the batch being processed */
    const float *images;
    const int *labels;
    int n;
    bool training;
    /* worker threads run w[1..nw-1]; the caller's thread runs w[0] */
    bool sync_ready;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    long generation;
    int pending;
    bool quit;
    /* What the workers run: their slices of the batch, or their shares of
     * the optimizer step over the weights (run_share()): summing, the norm
     * and Adam over all weights, on one thread, took about a tenth of a
     * 2-thread MNIST step at batch 128 while the other thread waited. */
    int job;
    float *g;                         /* the summed model gradient (JOB_SUM writes it) */
    size_t n_blocks;                  /* GRAD_BLOCK weights each, the last one shorter */
    double *block_sq;                 /* the squared norm of each block of g */
    float lr, scale, decay, avg_rate; /* JOB_UPDATE's arguments (update()) */
    /* The column-major copies the forward pass's sparse kernels read,
     * remade before each batch whose weights changed since the last: about
     * 0.15 ms for the MNIST model's 196,608 such weights on a Zen 1, 2-3 %
     * of a 2-thread step at batch 64, against the 11 % a trained model's
     * epoch gains from them. */
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

static void run_slice(ram_trainer *t, worker *wk) {
    const ram_model *m = t->m;
    const ram_policy *pol = t->pol;
    const int n = wk->i1 - wk->i0, T = m->p.glimpses, K = m->p.classes;
    wk->nll = wk->sse = wk->surrogate = wk->correct = wk->reward = wk->baseline = 0;
    wk->errors = 0;
    wk->bad = -1;
    if (n <= 0) { /* more workers than images: contribute nothing */
        if (t->training) {
            memset(wk->ws.grad, 0, sizeof(float) * m->n_params);
            if (pol->n_bw) memset(wk->gbw, 0, sizeof(float) * pol->n_bw);
        }
        return;
    }
    const size_t img = (size_t)m->p.channels * m->p.height * m->p.width;
    const float *images = t->images + wk->i0 * img;
    const int *labels = t->labels + wk->i0;
    ram_ws *ws = &wk->ws;

    if (!t->training) {
        ram_model_forward_with(m, m->w, NULL, &t->cols, ws, images, n, RAM_LOC_MEAN, NULL, 0, NULL);
        if (glimpsed_nonfinite(m, wk, n)) return;
        for (int i = 0; i < n; i++)
            wk->errors += ram_argmax(ws->probs + (size_t)i * K, K) != labels[i];
        return;
    }

    /* Noise for sample i, step s lives at eps[(i * T + s) * 2]. */
    for (int s = 0; s < T; s++)
        for (int i = 0; i < n; i++)
            for (int d = 0; d < 2; d++)
                ws->aux[((size_t)s * n + i) * 2 + d] =
                    t->eps[(((size_t)wk->i0 + i) * T + s) * 2 + d];
    const float std = pol->p.std, alpha = pol->p.reward_scale, N = (float)t->n;
    ram_model_forward_with(m, m->w, NULL, &t->cols, ws, images, n, RAM_LOC_SAMPLE, ws->aux, std,
                           NULL);
    if (glimpsed_nonfinite(m, wk, n)) return;

    for (int i = 0; i < n; i++) {
        const float *pr = ws->probs + (size_t)i * K;
        const int best = ram_argmax(pr, K);
        wk->pred[i] = best;
        wk->correct += best == labels[i];
        wk->nll -= log(pr[labels[i]] > 1e-30f ? pr[labels[i]] : 1e-30f);
        float *dl = ws->dlogits + (size_t)i * K;
        for (int k = 0; k < K; k++)
            dl[k] = (pr[k] - (k == labels[i])) / N;
    }
    /* Returns (R laid out T x n here) and the baseline at each decision. */
    for (int i = 0; i < n; i++) {
        float r = wk->pred[i] == labels[i] ? 1.0f : 0.0f;
        wk->reward += r;
        for (int s = T - 1; s >= 0; s--) {
            wk->R[(size_t)s * n + i] = r;
            r *= pol->p.discount;
        }
    }
    ram_baseline_forward(pol, ws->h, n, wk->b);
    for (int s = 0; s < T; s++) {
        const size_t o = (size_t)s * n;
        ram_reinforce_gaussian(ws->loc + 2 * o, ws->mu + 2 * o, n, 2, std, wk->R + o, wk->b + o,
                               alpha, N, wk->dmu + 2 * o);
        for (int i = 0; i < n; i++) {
            const float *l = ws->loc + 2 * (o + i), *mu = ws->mu + 2 * (o + i);
            double logp = 0;
            for (int d = 0; d < 2; d++) {
                double z = (l[d] - mu[d]) / std;
                logp += -0.5 * z * z - log(std) - 0.91893853320467274; /* log sqrt(2 pi) */
            }
            wk->surrogate -= alpha * (wk->R[o + i] - wk->b[o + i]) * logp;
            wk->baseline += wk->b[o + i];
        }
    }
    wk->baseline /= T;
    memset(ws->grad, 0, sizeof(float) * m->n_params);
    ram_model_backward(m, ws, n, wk->dmu, pol->p.detach_core);
    if (pol->n_bw) memset(wk->gbw, 0, sizeof(float) * pol->n_bw);
    wk->sse = ram_baseline_backward(pol, ws->h, n, wk->b, wk->R, N, wk->gbw);
}

/* ---- the optimizer step's shares ---- */

static void update(ram_trainer *t, float *restrict w, const float *restrict g, size_t n, size_t o,
                   float lr, float scale, float decay, float *restrict avg, float a);

/* Four partial sums: a quarter of the dependent additions' latency. */
static double squared_norm(const float *g, size_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)g[i] * g[i];
        s1 += (double)g[i + 1] * g[i + 1];
        s2 += (double)g[i + 2] * g[i + 2];
        s3 += (double)g[i + 3] * g[i + 3];
    }
    for (; i < n; i++)
        s0 += (double)g[i] * g[i];
    return (s0 + s1) + (s2 + s3);
}

/* Worker k's share of the blocks of weights for t->job. */
static void run_share(ram_trainer *t, int k) {
    const size_t np = t->m->n_params;
    const size_t b0 = t->n_blocks * k / t->nw, b1 = t->n_blocks * (k + 1) / t->nw;
    for (size_t b = b0; b < b1; b++) {
        const size_t i0 = b * GRAD_BLOCK, n = np - i0 < GRAD_BLOCK ? np - i0 : GRAD_BLOCK;
        float *restrict g = t->g + i0;
        if (t->job == JOB_UPDATE) {
            update(t, t->m->w + i0, g, n, i0, t->lr, t->scale, t->decay,
                   t->avg ? t->avg + i0 : NULL, t->avg_rate);
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
        t->block_sq[b] = squared_norm(g, n);
    }
}

static void run_job_share(ram_trainer *t, int k) {
    if (t->job == JOB_SLICE)
        run_slice(t, &t->w[k]);
    else
        run_share(t, k);
}

/* ---- worker threads ---- */

static void *worker_loop(void *arg) {
    worker *wk = arg;
    ram_trainer *t = wk->owner;
    long seen = 0;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (t->generation == seen && !t->quit)
            pthread_cond_wait(&t->go, &t->mu);
        if (t->quit) {
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        seen = t->generation;
        pthread_mutex_unlock(&t->mu);
        run_job_share(t, (int)(wk - t->w));
        pthread_mutex_lock(&t->mu);
        if (--t->pending == 0) pthread_cond_signal(&t->done);
        pthread_mutex_unlock(&t->mu);
    }
}

/* Run `job` on every worker; the caller runs worker 0's share. */
static void run_job(ram_trainer *t, int job) {
    t->job = job;
    if (t->nw > 1) {
        pthread_mutex_lock(&t->mu);
        t->pending = t->nw - 1;
        t->generation++;
        pthread_cond_broadcast(&t->go);
        pthread_mutex_unlock(&t->mu);
    }
    run_job_share(t, 0);
    if (t->nw > 1) {
        pthread_mutex_lock(&t->mu);
        while (t->pending > 0)
            pthread_cond_wait(&t->done, &t->mu);
        pthread_mutex_unlock(&t->mu);
    }
}

/* Split [0, n) over the workers and run them. */
static void run_all(ram_trainer *t, int n) {
    ram_cols_refresh(&t->cols, t->m, NULL);
    for (int k = 0; k < t->nw; k++) {
        t->w[k].i0 = (int)((long)n * k / t->nw);
        t->w[k].i1 = (int)((long)n * (k + 1) / t->nw);
    }
    run_job(t, JOB_SLICE);
}

/* ---- create / free ---- */

void ram_trainer_free(ram_trainer *t) {
    if (!t) return;
    if (t->sync_ready) {
        pthread_mutex_lock(&t->mu);
        t->quit = true;
        pthread_cond_broadcast(&t->go);
        pthread_mutex_unlock(&t->mu);
        for (int k = 1; k < t->nw; k++)
            if (t->w[k].started) pthread_join(t->w[k].thread, NULL);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->go);
        pthread_cond_destroy(&t->done);
    }
    if (t->w)
        for (int k = 0; k < t->nw; k++) {
            worker *wk = &t->w[k];
            ram_ws_release(&wk->ws);
            free(wk->gbw);
            free(wk->b);
            free(wk->R);
            free(wk->dmu);
            free(wk->pred);
        }
    free(t->w);
    free(t->eps);
    free(t->flat);
    free(t->m1);
    free(t->m2);
    free(t->avg);
    free(t->block_sq);
    ram_cols_release(&t->cols);
    free(t);
}

ram_status ram_trainer_create(ram_model *m, ram_policy *pol, const ram_trainer_params *user,
                              ram_trainer **out) {
    if (!m || !pol || !out)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: NULL model, policy or out");
    ram_trainer_params p;
    ram_trainer_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "trainer_create");
    if (s) return s;
    if (p.optimizer != RAM_OPT_SGD && p.optimizer != RAM_OPT_ADAM)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "trainer_create: unknown optimizer %d",
                        (int)p.optimizer);
    if (!isfinite(p.lr) || p.lr < 0 || !isfinite(p.lr_final) || p.lr_final < 0 || p.decay_steps < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: lr %g, lr_final %g must be >= 0, decay_steps >= 0",
                        (double)p.lr, (double)p.lr_final);
    if (!isfinite(p.momentum) || p.momentum < 0 || p.momentum >= 1 || !isfinite(p.beta1) ||
        p.beta1 < 0 || p.beta1 >= 1 || !isfinite(p.beta2) || p.beta2 < 0 || p.beta2 >= 1 ||
        !(p.eps > 0) || !isfinite(p.eps) || !isfinite(p.clip_norm) || p.clip_norm < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: momentum, beta1, beta2 must be in [0, 1), eps finite "
                        "and > 0, clip_norm finite and >= 0");
    /* lr * weight_decay >= 1 would flip or zero every weight at each step. */
    if (!isfinite(p.weight_decay) || p.weight_decay < 0 ||
        (double)fmaxf(p.lr, p.lr_final) * p.weight_decay >= 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: weight_decay %g must be finite, >= 0 and below 1 / lr",
                        (double)p.weight_decay);
    if (!(p.average_decay >= 0 && p.average_decay < 1)) /* also false for NaN */
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: average_decay %g must be in [0, 1)",
                        (double)p.average_decay);
    if (p.max_batch < 1 || p.max_batch > 1 << 16 || p.threads < 1 || p.threads > 256)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: max_batch %d not in [1, 65536] or threads %d not in "
                        "[1, 256]",
                        p.max_batch, p.threads);
    if (pol->p.steps != m->p.glimpses ||
        (pol->p.baseline == RAM_BASELINE_LINEAR && pol->p.hidden != m->p.core_hidden))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "trainer_create: policy has %d steps / hidden %d, model %d glimpses / "
                        "hidden %d",
                        pol->p.steps, pol->p.hidden, m->p.glimpses, m->p.core_hidden);

    ram_trainer *t = calloc(1, sizeof *t);
    if (!t) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    t->m = m;
    t->pol = pol;
    t->p = p;
    t->nw = p.threads < p.max_batch ? p.threads : p.max_batch;
    ram_rng_seed(&t->rng, m->p.seed ^ 0x5deece66dULL);
    const int T = m->p.glimpses;
    const size_t slice = (size_t)(p.max_batch + t->nw - 1) / t->nw, nopt = m->n_params + pol->n_bw;
    t->w = calloc(t->nw, sizeof *t->w);
    t->eps = malloc(sizeof(float) * p.max_batch * T * 2);
    t->m1 = calloc(nopt, sizeof(float));
    t->m2 = calloc(nopt, sizeof(float));
    t->n_blocks = (m->n_params + GRAD_BLOCK - 1) / GRAD_BLOCK;
    t->block_sq = calloc(t->n_blocks, sizeof(double));
    if (!t->w || !t->eps || !t->m1 || !t->m2 || !t->block_sq) goto oom;
    if ((s = ram_cols_init(&t->cols, m))) {
        ram_trainer_free(t);
        return s;
    }
    if (p.average_decay > 0) {
        if (!(t->avg = malloc(sizeof(float) * m->n_params))) goto oom;
        memcpy(t->avg, m->w, sizeof(float) * m->n_params);
    }
    for (int k = 0; k < t->nw; k++) {
        worker *wk = &t->w[k];
        if ((s = ram_ws_init(&wk->ws, m, (int)slice, true))) {
            ram_trainer_free(t);
            return s;
        }
        wk->gbw = calloc(pol->n_bw ? pol->n_bw : 1, sizeof(float));
        wk->b = malloc(sizeof(float) * T * slice);
        wk->R = malloc(sizeof(float) * T * slice);
        wk->dmu = malloc(sizeof(float) * T * slice * 2);
        wk->pred = malloc(sizeof(int) * slice);
        if (!wk->gbw || !wk->b || !wk->R || !wk->dmu || !wk->pred) goto oom;
    }
    if (t->nw > 1) {
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->go, NULL);
        pthread_cond_init(&t->done, NULL);
        t->sync_ready = true;
        for (int k = 1; k < t->nw; k++) {
            worker *wk = &t->w[k];
            wk->owner = t;
            if (pthread_create(&wk->thread, NULL, worker_loop, wk)) {
                ram_trainer_free(t);
                return ram_fail(RAM_ERR_THREAD, "trainer_create: cannot start worker thread %d", k);
            }
            wk->started = true;
        }
    }
    *out = t;
    return RAM_OK;
oom:
    ram_trainer_free(t);
    return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
}

/* ---- steps ---- */

static ram_status check_batch(const ram_trainer *t, const float *images, const int *labels, int n,
                              int max_n, const char *what) {
    if (!t || !images || !labels)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (n < 1 || n > max_n)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: n = %d not in [1, %d]", what, n, max_n);
    const int K = t->m->p.classes;
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= K)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: label[%d] = %d not in [0, %d)", what, i,
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

static float current_lr(const ram_trainer *t) {
    if (t->p.decay_steps <= 0) return t->p.lr;
    double f = t->step >= t->p.decay_steps ? 1.0 : (double)t->step / t->p.decay_steps;
    return (float)(t->p.lr + (t->p.lr_final - t->p.lr) * f);
}

/* One optimizer update of `n` weights w with gradient g, state offset `o`;
 * `decay` scales w before the step (decoupled weight decay), in the same
 * pass: w * 1 is w, so without decay the bits are those of a plain step.
 * A non-NULL `avg` then moves toward the new w by a fraction `a`, also in
 * the same pass (the moving average, average_rate()). */
static void update(ram_trainer *t, float *restrict w, const float *restrict g, size_t n, size_t o,
                   float lr, float scale, float decay, float *restrict avg, float a) {
    /* Locals and restrict: the loops vectorise only once the compiler knows
     * that writing w cannot change the hyper-parameters. */
    float *restrict m1 = t->m1 + o, *restrict m2 = t->m2 + o;
    const ram_trainer_params *p = &t->p;
    if (p->optimizer == RAM_OPT_SGD) {
        const float mom = p->momentum;
        const bool nesterov = p->nesterov;
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] * scale;
            m1[i] = mom * m1[i] + gi;
            w[i] = w[i] * decay - lr * (nesterov ? gi + mom * m1[i] : m1[i]);
            if (avg) avg[i] += a * (w[i] - avg[i]);
        }
    } else {
        const double k = (double)t->step + 1;
        const float b1 = p->beta1, b2 = p->beta2, eps = p->eps;
        const float c1 = (float)(1.0 / (1.0 - pow(b1, k))), c2 = (float)(1.0 / (1.0 - pow(b2, k)));
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] * scale;
            m1[i] = b1 * m1[i] + (1 - b1) * gi;
            m2[i] = b2 * m2[i] + (1 - b2) * gi * gi;
            w[i] = w[i] * decay - lr * (m1[i] * c1) / (sqrtf(m2[i] * c2) + eps);
            if (avg) avg[i] += a * (w[i] - avg[i]);
        }
    }
}

/* The moving average's step after step k: avg += (1 - d) (w - avg), with
 * TensorFlow's warm-up for d. */
static float average_rate(const ram_trainer *t) {
    const double k = (double)t->step;
    return 1 - fminf(t->p.average_decay, (float)((1 + k) / (10 + k)));
}

static ram_status refuse_average_in(const char *what) {
    return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                    "%s: the model holds the weights' average; call ram_trainer_swap_average() "
                    "again first",
                    what);
}

ram_status ram_trainer_swap_average(ram_trainer *t) {
    if (!t) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "swap_average: trainer is NULL");
    if (!t->avg)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "swap_average: this trainer keeps no average (average_decay = 0)");
    float *restrict avg = t->avg, *restrict w = t->m->w;
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

ram_status ram_trainer_train_batch(ram_trainer *t, const float *images, const int *labels, int n,
                                   ram_train_stats *stats) {
    ram_status s = check_batch(t, images, labels, n, t ? t->p.max_batch : 0, "train_batch");
    if (s) return s;
    if (t->avg_in) return refuse_average_in("train_batch");
    const int T = t->m->p.glimpses;
    const ram_rng rng_before = t->pol->rng; /* a failed step must change nothing */
    for (size_t i = 0; i < (size_t)n * T * 2; i++)
        t->eps[i] = (float)ram_rng_normal(&t->pol->rng);
    t->images = images;
    t->labels = labels;
    t->n = n;
    t->training = true;
    run_all(t, n);
    if ((s = check_glimpses(t, 0, "train_batch"))) {
        t->pol->rng = rng_before;
        return s;
    }

    /* Sum the slices in a fixed order: deterministic for a thread count.
     * With a hook the sum is made in its flat buffer (worker 0's gradient
     * copied there first: the same bits), and the update reads it there.
     * The workers sum the model's gradient, each over its share of the
     * weights; the baseline's few weights are summed here. */
    const size_t np = t->m->n_params, nb = t->pol->n_bw;
    float *g = t->hook ? t->flat : t->w[0].ws.grad, *gb = t->hook ? t->flat + np : t->w[0].gbw;
    t->g = g;
    run_job(t, JOB_SUM);
    if (t->hook && nb) memcpy(gb, t->w[0].gbw, sizeof(float) * nb);
    double nll = 0, sse = 0, sur = 0, correct = 0, reward = 0, base = 0;
    for (int k = 0; k < t->nw; k++) {
        worker *wk = &t->w[k];
        if (k > 0)
            for (size_t i = 0; i < nb; i++)
                gb[i] += wk->gbw[i];
        nll += wk->nll;
        sse += wk->sse;
        sur += wk->surrogate;
        correct += wk->correct;
        reward += wk->reward;
        base += wk->baseline;
    }
    if (t->hook) {
        /* One flat buffer, so that an allreduce is one call. */
        ram_status hs = t->hook(t->flat, np + nb, t->hook_user);
        if (hs != RAM_OK) {
            t->pol->rng = rng_before;
            return ram_fail(hs,
                            "train_batch: the gradient hook failed (status %d) at step %ld; "
                            "weights unchanged",
                            (int)hs, t->step);
        }
        run_job(t, JOB_NORM);
    }
    double sq = 0;
    for (size_t b = 0; b < t->n_blocks; b++)
        sq += t->block_sq[b];
    for (size_t i = 0; i < nb; i++)
        sq += (double)gb[i] * gb[i];
    const double norm = sqrt(sq);
    if (!isfinite(norm) || !isfinite(nll)) {
        t->pol->rng = rng_before;
        return ram_fail(RAM_ERR_NUMERIC,
                        "train_batch: non-finite loss or gradient at step %ld; weights unchanged "
                        "(lower the learning rate, or raise the location std)",
                        t->step);
    }
    float scale = 1.0f;
    if (t->p.clip_norm > 0 && norm > t->p.clip_norm) scale = (float)(t->p.clip_norm / norm);
    const float lr = current_lr(t);
    /* The gradient was taken at the weights before the decay: AdamW's order. */
    t->lr = lr;
    t->scale = scale;
    t->decay = 1.0f - lr * t->p.weight_decay;
    t->avg_rate = t->avg ? average_rate(t) : 0.0f;
    run_job(t, JOB_UPDATE);
    if (nb) update(t, t->pol->bw, gb, nb, np, lr, scale, 1.0f, NULL, 0.0f);
    ram_model_touch(t->m);
    t->step++;
    if (stats) {
        stats->nll = (float)(nll / n);
        stats->baseline_mse =
            t->pol->p.baseline == RAM_BASELINE_NONE ? 0.0f : (float)(sse / ((double)n * T));
        stats->reinforce = (float)(sur / n);
        stats->loss = stats->nll + stats->baseline_mse + stats->reinforce;
        stats->accuracy = (float)(correct / n);
        stats->reward = (float)(reward / n);
        stats->baseline = (float)(base / n);
        stats->grad_norm = (float)norm;
        stats->lr = lr;
    }
    return RAM_OK;
}

ram_status ram_trainer_evaluate(ram_trainer *t, const float *images, const int *labels, int n,
                                double *error) {
    if (!error) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "evaluate: error is NULL");
    ram_status s = check_batch(t, images, labels, n, 1 << 30, "evaluate");
    if (s) return s;
    const size_t img = (size_t)t->m->p.channels * t->m->p.height * t->m->p.width;
    long errors = 0;
    for (int i0 = 0; i0 < n; i0 += t->p.max_batch) {
        int b = n - i0 < t->p.max_batch ? n - i0 : t->p.max_batch;
        t->images = images + i0 * img;
        t->labels = labels + i0;
        t->n = b;
        t->training = false;
        run_all(t, b);
        if ((s = check_glimpses(t, i0, "evaluate"))) return s;
        for (int k = 0; k < t->nw; k++)
            errors += t->w[k].errors;
    }
    *error = (double)errors / n;
    return RAM_OK;
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
    return t ? t->step : 0;
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

/* ---- checkpoints ---- */

static void put_rng(ram_buf *b, const ram_rng *r) {
    for (int i = 0; i < 4; i++)
        ram_buf_u64(b, r->s[i]);
    uint64_t bits;
    memcpy(&bits, &r->spare, 8);
    ram_buf_u64(b, bits);
    ram_buf_u32(b, (uint32_t)r->has_spare);
}

/* False for a state no generator can be in: xoshiro's all-zero state only
 * ever yields zeros (and ram_rng_normal would then loop for ever), and a
 * non-finite spare normal would become a NaN location. */
static bool get_rng(ram_reader *rd, ram_rng *r) {
    uint64_t any = 0;
    for (int i = 0; i < 4; i++)
        any |= r->s[i] = ram_rd_u64(rd);
    uint64_t bits = ram_rd_u64(rd);
    memcpy(&r->spare, &bits, 8);
    r->has_spare = ram_rd_u32(rd) != 0;
    return any != 0 && isfinite(r->spare);
}

static bool all_finite(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

ram_status ram_trainer_save_checkpoint(const ram_trainer *t, const char *path, const void *user,
                                       size_t user_len) {
    if (!t || !path || (!user && user_len))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "save_checkpoint: NULL argument");
    if (t->avg_in) return refuse_average_in("save_checkpoint");
    const ram_policy *pol = t->pol;
    const size_t nopt = t->m->n_params + pol->n_bw;
    ram_buf file = {0}, c = {0};
    ram_file_begin(&file);
    ram_model_serialize(t->m, &file);

    ram_buf_u32(&c, (uint32_t)pol->p.baseline);
    ram_buf_u64(&c, pol->n_bw);
    ram_buf_floats(&c, pol->bw, pol->n_bw);
    put_rng(&c, &pol->rng);
    ram_file_chunk(&file, RAM_TAG('P', 'L', 'C', 'Y'), &c);

    c.len = 0;
    ram_buf_u32(&c, (uint32_t)t->p.optimizer);
    ram_buf_u64(&c, (uint64_t)t->step);
    put_rng(&c, &t->rng);
    ram_buf_u64(&c, nopt);
    ram_buf_floats(&c, t->m1, nopt);
    ram_buf_floats(&c, t->m2, nopt);
    ram_file_chunk(&file, RAM_TAG('O', 'P', 'T', 'M'), &c);

    if (t->avg) {
        c.len = 0;
        ram_buf_u64(&c, t->m->n_params);
        ram_buf_floats(&c, t->avg, t->m->n_params);
        ram_file_chunk(&file, RAM_TAG('A', 'V', 'R', 'G'), &c);
    }

    c.len = 0;
    ram_buf_bytes(&c, user, user_len);
    ram_file_chunk(&file, RAM_TAG('U', 'S', 'E', 'R'), &c);
    free(c.data);
    return ram_file_finish_and_write(&file, path);
}

/* Parse a verified checkpoint image and, only if all of it fits this trainer,
 * commit it.  `name` names the source in messages. */
static ram_status load_checkpoint(ram_trainer *t, const unsigned char *data, size_t len,
                                  const char *name, void *user, size_t user_cap, size_t *user_len) {
    ram_status s;
    struct ram_model *m = NULL;
    float *m1 = NULL, *m2 = NULL, *bw = NULL, *avg = NULL;
    ram_policy *pol = t->pol;
    const size_t nopt = t->m->n_params + pol->n_bw;
    ram_reader pc, oc, uc;
    if ((s = ram_model_deserialize(data, len, &m))) goto done;
    if (!ram_file_find(data, len, RAM_TAG('P', 'L', 'C', 'Y'), &pc) ||
        !ram_file_find(data, len, RAM_TAG('O', 'P', 'T', 'M'), &oc) ||
        !ram_file_find(data, len, RAM_TAG('U', 'S', 'E', 'R'), &uc)) {
        s = ram_fail(RAM_ERR_FORMAT, "%s: a model file, not a checkpoint", name);
        goto done;
    }
    if (!ram_model_same_arch(&m->p, &t->m->p) || m->n_params != t->m->n_params) {
        s = ram_fail(RAM_ERR_MISMATCH,
                     "%s: the checkpoint's architecture differs from the trainer's", name);
        goto done;
    }
    uint32_t btype = ram_rd_u32(&pc);
    uint64_t nbw = ram_rd_u64(&pc);
    if (pc.bad || btype != (uint32_t)pol->p.baseline || nbw != pol->n_bw) {
        s = ram_fail(RAM_ERR_MISMATCH, "%s: the checkpoint's baseline differs from the policy's",
                     name);
        goto done;
    }
    bw = malloc(sizeof(float) * (nbw + 1));
    m1 = malloc(sizeof(float) * nopt);
    m2 = malloc(sizeof(float) * nopt);
    if (!bw || !m1 || !m2) {
        s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "load_checkpoint: out of memory");
        goto done;
    }
    ram_rng prng, trng;
    ram_rd_floats(&pc, bw, nbw);
    bool rng_ok = get_rng(&pc, &prng);
    uint32_t opt = ram_rd_u32(&oc);
    uint64_t step = ram_rd_u64(&oc);
    rng_ok &= get_rng(&oc, &trng);
    uint64_t n = ram_rd_u64(&oc);
    if (pc.bad || oc.bad || step > (uint64_t)LONG_MAX) { /* no trainer takes that many steps */
        s = ram_fail(RAM_ERR_FORMAT, "%s: the checkpoint's policy or optimizer state is damaged",
                     name);
        goto done;
    }
    if (n != nopt || opt != (uint32_t)t->p.optimizer) {
        s = ram_fail(RAM_ERR_MISMATCH,
                     "%s: the checkpoint's policy or optimizer state does not fit this trainer",
                     name);
        goto done;
    }
    if (!ram_rd_floats(&oc, m1, nopt) || !ram_rd_floats(&oc, m2, nopt)) {
        s = ram_fail(RAM_ERR_FORMAT, "%s: optimizer state is short", name);
        goto done;
    }
    /* What ram_model_deserialize checks for the weights, for the rest of the
     * state: a NaN here would only surface steps later as a diverged run. */
    bool m2_ok = true;
    for (size_t i = 0; i < nopt; i++)
        m2_ok &= m2[i] >= 0; /* Adam's second moment; SGD keeps zeros; false for NaN */
    if (!rng_ok || !all_finite(bw, nbw) || !all_finite(m1, nopt) || !m2_ok ||
        !all_finite(m2, nopt)) {
        s = ram_fail(RAM_ERR_FORMAT,
                     "%s: impossible random-number state, or non-finite baseline or optimizer "
                     "values",
                     name);
        goto done;
    }
    if (t->avg) { /* the file's average, or one that starts from its weights */
        ram_reader ac;
        if (!(avg = malloc(sizeof(float) * m->n_params))) {
            s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "load_checkpoint: out of memory");
            goto done;
        }
        if (ram_file_find(data, len, RAM_TAG('A', 'V', 'R', 'G'), &ac)) {
            const uint64_t na = ram_rd_u64(&ac);
            if (ac.bad || na != m->n_params || !ram_rd_floats(&ac, avg, m->n_params) ||
                !all_finite(avg, m->n_params)) {
                s = ram_fail(RAM_ERR_FORMAT,
                             "%s: the weights' average is short, of the wrong size or not "
                             "finite",
                             name);
                goto done;
            }
        } else {
            memcpy(avg, m->w, sizeof(float) * m->n_params);
        }
    }
    /* Everything checked: commit. */
    memcpy(t->m->w, m->w, sizeof(float) * m->n_params);
    ram_model_touch(t->m);
    if (avg) memcpy(t->avg, avg, sizeof(float) * m->n_params);
    if (nbw) memcpy(pol->bw, bw, sizeof(float) * nbw);
    pol->rng = prng;
    t->rng = trng;
    t->step = (long)step;
    memcpy(t->m1, m1, sizeof(float) * nopt);
    memcpy(t->m2, m2, sizeof(float) * nopt);
    if (user_len) *user_len = uc.len;
    if (user) memcpy(user, uc.p, uc.len < user_cap ? uc.len : user_cap);
done:
    ram_model_free(m);
    free(bw);
    free(m1);
    free(m2);
    free(avg);
    return s;
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
    s = load_checkpoint(t, data, len, path, user, user_cap, user_len);
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
    return load_checkpoint(t, data, size, name, user, user_cap, user_len);
}
