/* ram-bench: libram's speed, next to its peer and its limit, in one run.
 *
 * For each configuration (the paper's MNIST model, translated60,
 * cluttered100, and a 512x512 RGB image seen through the translated60
 * retina) and for 1 and 2 threads it prints:
 *   - training samples/s at batch 32 and 128 (libram's worker threads);
 *   - inference at batch 1 (samples/s and microseconds per image) and at
 *     batch 256 through one state with 1 or 2 threads
 *     (ram_state_create_threads: one caller, each call split between the
 *     threads, like PyTorch's intra-op threads), and at batch 256 with one
 *     1-thread state per caller thread sharing the model;
 *   - the peak resident memory of the configuration;
 *   - the same figures for PyTorch (bench/torch_ram.py, same model, batch and
 *     threads) and the libram/PyTorch ratios;
 *   - the limit: matmul FLOPs per sample divided by cblas_sgemm's measured
 *     throughput, and the fraction of it libram reaches.
 * Then inference cost against image size and against the number of glimpses.
 * The models have random weights and the images are uniform noise, unless
 * --model gives trained weights (for the inference rows of the configuration
 * with its architecture) and --data real MNIST test images (mnist):
 * batch-1 inference skips a ReLU's zeros, and trained models have more.
 *
 * Figures are median (min-max) over --reps timed repetitions after --warmup
 * untimed ones; the paired ratios (two ways timed in alternate rounds) add
 * the median's 95 % confidence interval, so that "not slower" can be read
 * off them.  A benchmark prints; it never asserts.  Each configuration
 * runs in a child process, so that its peak RSS is its own. */
#define _GNU_SOURCE
#include "blas.h"
#include "fma_peak.h"
#include "idx.h"
#include <ram/ram.h>

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- options and output ------------------------------------------------- */

static struct {
    int reps, warmup, json, quick, max_threads;
    double rep_seconds;
    const char *peer;  /* command running bench/torch_ram.py, or NULL */
    int peer_as_is;    /* the peer in the environment as it is, no search for its best setup */
    const char *only;  /* one configuration, or NULL for all */
    const char *model; /* --model: trained weights for inference, or NULL */
    const char *data;  /* --data: MNIST IDX directory for 28x28 images, or NULL */
    double stop;       /* --stop-threshold: the stopping rows' threshold */
    int stop_unit;     /* --stop-unit: the stopping rows by the model's unit, where it has one */
} opt = {5, 1, 0, 0, 2, 0.5, NULL, 0, NULL, NULL, NULL, 0.98, 0};

/* Whether the stopping rows of model m use its stop unit. */
static int by_unit(const ram_model *m) {
    return opt.stop_unit && ram_model_stop_unit(m, NULL, NULL) == RAM_OK;
}

/* Text goes to stdout unless --json, where stdout carries one JSON document. */
static void say(const char *fmt, ...) {
    if (opt.json) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        ram_status s_ = (call);                                                                    \
        if (s_) {                                                                                  \
            fprintf(stderr, "ram-bench: %s: %s\n", #call, ram_last_error());                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ram-bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* ---- statistics: median, min, max of repeated rates ---------------------- */

typedef struct stat3 {
    double median, min, max;
    /* A distribution-free 95 % confidence interval of the median (order
     * statistics of the binomial): lo > hi where the samples are too few
     * (fewer than 6), or nothing was measured (all zero). */
    double lo, hi;
} stat3;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The interval [v[j], v[n-1-j]] of n sorted samples holds the median with
 * probability 1 - 2 P(B <= j), B ~ Binomial(n, 1/2), whatever the samples'
 * distribution; the largest j with 2 P(B <= j) <= 0.05, or -1 if none. */
static int median_ci_rank(int n) {
    double p = ldexp(1.0, -n), cdf = p; /* P(B = 0), P(B <= 0) */
    int j = -1;
    for (int k = 0; k < n / 2 && 2 * cdf <= 0.05; k++) {
        j = k;
        p *= (double)(n - k) / (k + 1); /* P(B = k + 1) */
        cdf += p;
    }
    return j;
}

static bool has_ci(stat3 s) {
    return s.hi > 0 && s.lo <= s.hi;
}

static stat3 summarize(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    stat3 s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1], 1, 0};
    const int j = median_ci_rank(n);
    if (j >= 0) s.lo = v[j], s.hi = v[n - 1 - j];
    return s;
}

/* A paired ratio as text: its median, the median's 95 % interval where
 * there are rounds enough, and the range. */
typedef struct ratio_text {
    char s[80];
} ratio_text;

static ratio_text ratio_str(stat3 r) {
    ratio_text t;
    if (has_ci(r))
        snprintf(t.s, sizeof t.s, "%.3f (95 %% CI %.3f-%.3f; %.3f-%.3f)", r.median, r.lo, r.hi,
                 r.min, r.max);
    else
        snprintf(t.s, sizeof t.s, "%.3f (%.3f-%.3f)", r.median, r.min, r.max);
    return t;
}

/* Runs `work(arg, iters)` --warmup times, then --reps times with `iters`
 * chosen so that one repetition lasts about --rep-seconds; returns the rate
 * in units of `per_iter` per second. */
typedef void (*work_fn)(void *arg, long iters);

static stat3 measure_rate(work_fn work, void *arg, double per_iter) {
    double t0 = now();
    work(arg, 1); /* also the first warm-up: buffers, caches, thread start */
    double one = now() - t0;
    long iters = one > 0 ? (long)(opt.rep_seconds / one) : 1000;
    if (iters < 1) iters = 1;
    for (int w = 1; w < opt.warmup; w++)
        work(arg, iters);
    double v[64];
    for (int r = 0; r < opt.reps; r++) {
        t0 = now();
        work(arg, iters);
        v[r] = iters * per_iter / (now() - t0);
    }
    return summarize(v, opt.reps);
}

/* ---- configurations ------------------------------------------------------ */

/* Images per configuration: the largest batch. */
#define POOL 256

typedef struct config {
    const char *name;
    int channels, size, patch, depth, glimpses;
    const char *what;
} config;

static const config configs[] = {
    {"mnist", 1, 28, 8, 1, 6, "28x28, 8x8 patch, 1 scale, 6 glimpses"},
    {"translated60", 1, 60, 12, 3, 8, "60x60, 12x12 patch, 3 scales, 8 glimpses"},
    {"cluttered100", 1, 100, 12, 4, 8, "100x100, 12x12 patch, 4 scales, 8 glimpses"},
    {"image512", 3, 512, 12, 3, 8, "512x512 RGB, translated60's retina, 8 glimpses"},
};
#define N_CONFIGS (int)(sizeof configs / sizeof configs[0])

static ram_model_params config_params(const config *c) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = c->channels;
    p.height = p.width = c->size;
    p.glimpse.patch = c->patch;
    p.glimpse.depth = c->depth;
    p.glimpses = c->glimpses;
    p.loc_range_pixels = 0; /* the image edge, at any size */
    return p;
}

/* Matmul FLOPs (2 per multiply-add) of one sample, the way the model runs
 * them (lib/model.c): forward; and a training step = forward + weight
 * gradients of every layer + input gradients of every layer whose input
 * needs one (not the glimpse pixels, not the sampled location, not h_t
 * through the location network, which REINFORCE trains alone by default)
 * + the linear baseline.  Element-wise work (ReLU, tanh, LSTM gates, the
 * glimpse pooling, Adam) is left out: it is small and not what sgemm does. */
typedef struct flops {
    double infer, train;
} flops;

static flops count_flops(const ram_model_params *p) {
    double D = (double)p->channels * p->glimpse.depth * p->glimpse.patch * p->glimpse.patch;
    double Hg = p->glimpse_hidden, Hl = p->loc_hidden, G = p->glimpse_out, H = p->core_hidden;
    double gates = p->core == RAM_CORE_LSTM ? 4 : 1, T = p->glimpses, K = p->classes;
    const double L = p->zoom_max > 0 ? 3 : 2; /* floats of a location: (x, y) or (x, y, zoom) */
    double g1 = D * Hg, l1 = L * Hl, g2 = (Hg + Hl) * G, core = (G + H) * gates * H, loc = H * L,
           base = H, cls = H * K;
    double step = g1 + l1 + g2 + core + loc;
    flops f;
    f.infer = 2 * (T * step + cls);
    double fwd_w = T * (step + base) + cls; /* forward, with the baseline */
    double dx = T * (g2 + core) + cls;      /* input gradients needed */
    f.train = 2 * (fwd_w + fwd_w /* weight gradients */ + dx);
    return f;
}

/* ---- cblas_sgemm throughput: the limit ----------------------------------- */

typedef struct gemm_job {
    int m, n, k;
    float *a, *b, *c;
} gemm_job;

static void gemm_work(void *arg, long iters) {
    gemm_job *g = arg;
    for (long i = 0; i < iters; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->m, g->n, g->k, 1.0f, g->a, g->k,
                    g->b, g->k, 0.0f, g->c, g->n);
}

/* GFLOP/s of C = A B^T (the layout ram_linear_forward uses), BLAS threads = t. */
static stat3 sgemm_gflops(int m, int n, int k, int threads) {
    ram_set_blas_threads(threads);
    gemm_job g = {m,
                  n,
                  k,
                  xmalloc(sizeof(float) * m * k),
                  xmalloc(sizeof(float) * n * k),
                  xmalloc(sizeof(float) * m * n)};
    for (long i = 0; i < (long)m * k; i++)
        g.a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)n * k; i++)
        g.b[i] = (float)(i % 5) * 0.1f;
    stat3 s = measure_rate(gemm_work, &g, 2.0 * m * n * k * 1e-9);
    free(g.a);
    free(g.b);
    free(g.c);
    ram_set_blas_threads(1);
    return s;
}

/* ---- libram measurements --------------------------------------------------- */

static float *make_images(size_t n, const ram_model_params *p, unsigned seed) {
    size_t count = n * p->channels * p->height * p->width;
    float *x = xmalloc(sizeof(float) * count);
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65535.0f;
    }
    return x;
}

typedef struct train_job {
    ram_trainer *t;
    const float *x;
    const int *y;
    int batch;
} train_job;

static void train_work(void *arg, long iters) {
    train_job *j = arg;
    for (long i = 0; i < iters; i++)
        CHECK(ram_trainer_train_batch(j->t, j->x, j->y, j->batch, NULL));
}

static stat3 bench_train(const ram_model_params *p, const float *x, const int *y, int batch,
                         int threads, ram_products products) {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
    ram_policy_params pp;
    ram_trainer_params tp;
    ram_policy_params_init(&pp);
    ram_trainer_params_init(&tp);
    pp.std = 0.15f; /* the peer's std (cost does not depend on it) */
    tp.max_batch = batch;
    tp.threads = threads;
    tp.products = products;
    CHECK(ram_model_create(p, &m));
    CHECK(ram_policy_create(&pp, m, &pol));
    CHECK(ram_trainer_create(m, pol, &tp, &t));
    train_job j = {t, x, y, batch};
    stat3 s = measure_rate(train_work, &j, batch);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
    return s;
}

/* Inference.  Either one state with `threads` threads (ram_state_create_threads):
 * one caller, each call's layers split between the threads, which is what a
 * latency-bound user does and what PyTorch's intra-op threads do; or
 * `threads` caller threads, each with its own 1-thread state, classifying
 * batches of `batch` images with one shared model (throughput). */
typedef struct infer_thread {
    const ram_model *m;
    ram_state *st;
    const float *x;
    int *labels;
    int batch;
    long iters;
    size_t image; /* floats per image */
    int pool;     /* images at x */
    float stop;   /* >= 0: ram_model_classify_stop at this threshold */
} infer_thread;

/* A batch of 1 takes the pool's images in turn: what a batch-1 call costs
 * depends on the image (its zeros), so not always the same one.  Larger
 * batches classify the first `batch` images. */
static void *infer_thread_main(void *arg) {
    infer_thread *it = arg;
    for (long i = 0; i < it->iters; i++) {
        const float *x = it->batch == 1 ? it->x + (size_t)(i % it->pool) * it->image : it->x;
        if (it->stop >= 0 && by_unit(it->m))
            CHECK(
                ram_model_classify_stop_unit(it->m, it->st, x, it->batch, it->labels, NULL, NULL));
        else if (it->stop >= 0)
            CHECK(ram_model_classify_stop(it->m, it->st, x, it->batch, it->stop, it->labels, NULL,
                                          NULL));
        else
            CHECK(ram_model_classify(it->m, it->st, x, it->batch, it->labels, NULL, NULL));
    }
    return NULL;
}

typedef struct infer_job {
    infer_thread th[8];
    int threads; /* caller threads */
} infer_job;

static void infer_work(void *arg, long iters) {
    infer_job *j = arg;
    pthread_t tid[8];
    for (int k = 0; k < j->threads; k++) {
        j->th[k].iters = iters;
        if (k > 0) pthread_create(&tid[k], NULL, infer_thread_main, &j->th[k]);
    }
    infer_thread_main(&j->th[0]);
    for (int k = 1; k < j->threads; k++)
        pthread_join(tid[k], NULL);
}

/* x holds `pool` >= batch images. */
static stat3 bench_infer_stop(const ram_model *m, const float *x, int pool, int batch, int threads,
                              int state_per_thread, ram_precision precision, float stop) {
    const int callers = state_per_thread ? threads : 1;
    infer_job j = {.threads = callers};
    ram_model_params p;
    ram_model_params_init(&p);
    CHECK(ram_model_get_params(m, &p));
    for (int k = 0; k < callers; k++) {
        CHECK(ram_state_create_threads(m, batch, state_per_thread ? 1 : threads, &j.th[k].st));
        CHECK(ram_state_set_precision(j.th[k].st, precision));
        j.th[k] = (infer_thread){m,
                                 j.th[k].st,
                                 x,
                                 xmalloc(sizeof(int) * batch),
                                 batch,
                                 0,
                                 (size_t)p.channels * p.height * p.width,
                                 pool,
                                 stop};
    }
    stat3 s = measure_rate(infer_work, &j, (double)batch * callers);
    for (int k = 0; k < callers; k++) {
        ram_state_free(j.th[k].st);
        free(j.th[k].labels);
    }
    return s;
}

static stat3 bench_infer(const ram_model *m, const float *x, int pool, int batch, int threads,
                         int state_per_thread, ram_precision precision) {
    return bench_infer_stop(m, x, pool, batch, threads, state_per_thread, precision, -1.0f);
}

/* Two ways of the same work timed alternately: `call(arg, k)` does one
 * call of way k.  Each way's calls per round are set from `calibrate` calls
 * so that a round lasts a repetition (--rep-seconds); then --warmup rounds
 * and 2 x --reps + 1 timed ones, the order swapped every round, and what
 * is summarised is each round's ratio of time per call, way 1 over way 0,
 * so that drift between rounds hits both sides. */
typedef void (*way_fn)(void *arg, int k);

static stat3 alternate_ratio(way_fn call, void *arg, int calibrate) {
    long iters[2];
    for (int k = 0; k < 2; k++) {
        double t0 = now();
        for (int i = 0; i < calibrate; i++)
            call(arg, k);
        double one = (now() - t0) / calibrate;
        iters[k] = one > 0 ? (long)(opt.rep_seconds / one) : 1000;
        if (iters[k] < 1) iters[k] = 1;
    }
    const int rounds = 2 * opt.reps + 1;
    double v[2 * 64 + 1], per_call[2];
    for (int r = -opt.warmup; r < rounds; r++) { /* negative rounds: warm-up */
        for (int o = 0; o < 2; o++) {
            const int k = (r + o) & 1;
            double t0 = now();
            for (long i = 0; i < iters[k]; i++)
                call(arg, k);
            per_call[k] = (now() - t0) / (double)iters[k];
        }
        if (r >= 0) v[r] = per_call[1] / per_call[0];
    }
    return summarize(v, rounds);
}

/* Two threads against one at batch 1, paired.  The rows above time each
 * thread count on its own, minutes apart (the training and the peer's rows
 * come between), so that the machine's drift can put either ahead; on a
 * shared VM it moved batch-1 calls from 11 to 17 us between runs.  Here a
 * 1-thread and a 2-thread state of the same model classify the pool's
 * images one at a time, as infer_thread_main() does, timed alternately
 * (alternate_ratio()): the ratio is 2 threads over 1, below 1 where the
 * second thread helps.  The 2-thread state's first calls include its own
 * choice of whether to split (ram_state_create_threads).  With `threads`
 * 1, both states have one thread: the null pair. */
typedef struct threads_pair {
    const ram_model *m;
    ram_state *st[2]; /* 1 and 2 threads */
    const float *x;
    size_t image;
    int pool;
    long next[2]; /* each state's next image of the pool */
} threads_pair;

static void classify_one(void *arg, int k) {
    threads_pair *tp = arg;
    int label;
    CHECK(ram_model_classify(tp->m, tp->st[k],
                             tp->x + (size_t)(tp->next[k]++ % tp->pool) * tp->image, 1, &label,
                             NULL, NULL));
}

static stat3 threads_ratio(const ram_model *m, const float *x, int pool, ram_precision precision,
                           int threads) {
    ram_model_params p;
    ram_model_params_init(&p);
    CHECK(ram_model_get_params(m, &p));
    threads_pair tp = {m, {NULL, NULL}, x, (size_t)p.channels * p.height * p.width, pool, {0, 0}};
    for (int k = 0; k < 2; k++) {
        CHECK(ram_state_create_threads(m, 1, k ? threads : 1, &tp.st[k]));
        CHECK(ram_state_set_precision(tp.st[k], precision));
    }
    /* 64 calls to calibrate: the 2-thread state's first choice is made in them */
    stat3 s = alternate_ratio(classify_one, &tp, 64);
    for (int k = 0; k < 2; k++)
        ram_state_free(tp.st[k]);
    return s;
}

/* The glimpses the pool's images take on average when they stop at the
 * threshold. */
static double mean_glimpses(const ram_model *m, const float *x, int pool, float stop) {
    ram_state *st;
    int *steps = xmalloc(sizeof(int) * pool);
    CHECK(ram_state_create(m, pool, &st));
    if (by_unit(m))
        CHECK(ram_model_classify_stop_unit(m, st, x, pool, NULL, NULL, steps));
    else
        CHECK(ram_model_classify_stop(m, st, x, pool, stop, NULL, NULL, steps));
    long total = 0;
    for (int i = 0; i < pool; i++)
        total += steps[i];
    ram_state_free(st);
    free(steps);
    return (double)total / pool;
}

/* ---- the PyTorch peer ------------------------------------------------------ */

typedef struct peer_result {
    int ok;
    char version[32];
    char setup[1024];
    char picked[512]; /* which setup gave each figure (the search for the peer's best) */
    stat3 train32, train128, infer1, infer256;
    stat3 train128_bf16; /* RAM_PRODUCTS_BF16, where the CPU has it; else zeros */
} peer_result;

/* Finds "key": {"median": x, "min": y, "max": z} in the peer's JSON. */
static int json_stat(const char *js, const char *key, stat3 *s) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(js, pat);
    if (!p) return 0;
    const char *med = strstr(p, "\"median\""), *mn = strstr(p, "\"min\""),
               *mx = strstr(p, "\"max\"");
    if (!med || !mn || !mx) return 0;
    return sscanf(strchr(med, ':') + 1, "%lf", &s->median) == 1 &&
           sscanf(strchr(mn, ':') + 1, "%lf", &s->min) == 1 &&
           sscanf(strchr(mx, ':') + 1, "%lf", &s->max) == 1;
}

static void json_string(const char *js, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(js, pat);
    out[0] = 0;
    if (!p) return;
    p += strlen(pat);
    size_t i = 0;
    for (; *p && *p != '"' && i + 1 < cap; p++)
        out[i++] = *p == '\\' && p[1] ? *++p : *p;
    out[i] = 0;
}

/* One run of the peer in the environment `env` (an `env` command's
 * arguments, "" for the environment as it is). */
static peer_result run_peer_once(const config *c, int threads, const char *env) {
    peer_result r = {0};
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s%s%s%s --config %s --threads %d --reps %d --warmup %d%s --json",
             *env ? "env " : "", env, *env ? " " : "", opt.peer, c->name, threads, opt.reps,
             opt.warmup, opt.quick ? " --quick" : "");
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    if (!f) return r;
    static char js[1 << 16];
    size_t n = fread(js, 1, sizeof js - 1, f);
    js[n] = 0;
    int status = pclose(f);
    if (status != 0) {
        fprintf(stderr, "ram-bench: the peer failed (%s)\n", cmd);
        return r;
    }
    r.ok = json_stat(js, "train_b32", &r.train32) && json_stat(js, "train_b128", &r.train128) &&
           json_stat(js, "infer_b1", &r.infer1) && json_stat(js, "infer_b256", &r.infer256);
    json_string(js, "torch_version", r.version, sizeof r.version);
    json_string(js, "setup", r.setup, sizeof r.setup);
    return r;
}

/* The peer at its best: PyTorch's speed depends on the OpenBLAS build it
 * loads (pthreads, or OpenMP sharing PyTorch's own pool) and on the kernels
 * OpenBLAS picks (OPENBLAS_CORETYPE), and a ratio against a weakened peer
 * is not a ratio.  Unless --peer-as-is, every build this machine has is
 * tried with OpenBLAS's own choice of kernels and with each core type fit
 * for the CPU, the environment's preset cleared, and each figure is the
 * fastest setup's; `setup` says which setup gave which figure. */
#ifndef RAM_MULTIARCH
#define RAM_MULTIARCH ""
#endif
static peer_result run_peer(const config *c, int threads) {
    peer_result best = {0};
    if (!opt.peer) return best;
    if (opt.peer_as_is) return run_peer_once(c, threads, "");
    const char *builds[2][2] = {{"pthreads", ""}, {"OpenMP", "openblas-openmp"}};
    const char *fit = ram_blas_coretype();
    const char *cores[3] = {NULL, fit,
                            fit && strcmp(fit, "HASWELL") && strcmp(fit, "ZEN") ? "HASWELL" : NULL};
    char labels[4][96] = {{0}};
    for (int b = 0; b < 2; b++) {
        char dir[256] = "";
        if (*builds[b][1]) {
            snprintf(dir, sizeof dir, "/usr/lib/%s/%s/libopenblas.so.0", RAM_MULTIARCH,
                     builds[b][1]);
            if (!*RAM_MULTIARCH || access(dir, R_OK)) continue; /* not installed */
            *strrchr(dir, '/') = 0;
        }
        for (int k = 0; k < 3; k++) {
            if (k > 0 && !cores[k]) continue;
            char env[512], label[96];
            snprintf(env, sizeof env, "-u OPENBLAS_CORETYPE%s%s%s%s",
                     *dir ? " LD_LIBRARY_PATH=" : "", dir, cores[k] ? " OPENBLAS_CORETYPE=" : "",
                     cores[k] ? cores[k] : "");
            snprintf(label, sizeof label, "%s OpenBLAS, %s kernels", builds[b][0],
                     cores[k] ? cores[k] : "its own choice of");
            const peer_result r = run_peer_once(c, threads, env);
            if (!r.ok) continue;
            if (!best.ok) {
                best = r;
                for (int i = 0; i < 4; i++)
                    snprintf(labels[i], sizeof labels[i], "%s", label);
                continue;
            }
            stat3 *mine[4] = {&best.train32, &best.train128, &best.infer1, &best.infer256};
            const stat3 theirs[4] = {r.train32, r.train128, r.infer1, r.infer256};
            for (int i = 0; i < 4; i++)
                if (theirs[i].median > mine[i]->median) {
                    *mine[i] = theirs[i];
                    snprintf(labels[i], sizeof labels[i], "%s", label);
                }
        }
    }
    if (best.ok)
        snprintf(best.picked, sizeof best.picked, "train b32: %s; b128: %s; infer b1: %s; b256: %s",
                 labels[0], labels[1], labels[2], labels[3]);
    return best;
}

/* ---- one configuration (in a child process) -------------------------------- */

typedef struct row {
    stat3 train32, train128, infer1, infer256;
    stat3 train128_bf16;              /* RAM_PRODUCTS_BF16, where the CPU has it; else zeros */
    stat3 infer1_half;                /* ram_state_set_precision(HALF) */
    stat3 infer1_bf16;                /* ram_state_set_precision(BF16) */
    stat3 infer256_states;            /* a 1-thread state per caller thread */
    stat3 infer1_stop, infer256_stop; /* ram_model_classify_stop at opt.stop */
} row;

static void print_stat_json(const char *key, stat3 s, int last) {
    printf("\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g", key, s.median, s.min, s.max);
    if (has_ci(s)) printf(", \"ci95\": [%.6g, %.6g]", s.lo, s.hi);
    printf("}%s", last ? "" : ", ");
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* kB on Linux */
}

/* The widest FMA peak measured (GFLOP/s, 1 and 2 threads; 0: none), and
 * its width's name: the processor's own limit, beside sgemm's. */
static double fma_limit[2];
static const char *fma_limit_width = "";

static void run_config(const config *c, stat3 peak1, stat3 peak2, int first) {
    ram_model_params p = config_params(c);
    flops f = count_flops(&p);
    /* One pool of images for the largest batch; inference threads share it
     * read-only, as they share the model. */
    float *x = make_images(POOL, &p, 7);
    int *y = xmalloc(sizeof(int) * POOL);
    for (int i = 0; i < POOL; i++)
        y[i] = i % p.classes;
    const char *images = "uniform noise", *weights = "random";
    if (opt.data && p.channels == 1 && p.height == 28 && p.width == 28) {
        float *t10k;
        int *labels, n = 0, h = 0, w = 0;
        char err[256];
        if (idx_load_mnist(opt.data, "t10k", &t10k, &labels, &n, &h, &w, err, sizeof err)) {
            fprintf(stderr, "ram-bench: --data %s: %s\n", opt.data, err);
            exit(1);
        }
        if (n < POOL || h != 28 || w != 28) {
            fprintf(stderr, "ram-bench: --data %s: %d images of %dx%d, not %d of 28x28\n", opt.data,
                    n, h, w, POOL);
            exit(1);
        }
        memcpy(x, t10k, sizeof(float) * POOL * 28 * 28);
        memcpy(y, labels, sizeof(int) * POOL);
        free(t10k);
        free(labels);
        images = "the first 256 MNIST test images";
    }
    ram_model *m;
    CHECK(ram_model_create(&p, &m));
    if (opt.model) {
        /* Trained weights for the inference rows, if the file's model is this
         * configuration's network (its location range may differ: the cost
         * does not depend on it). */
        ram_model *trained;
        ram_model_params q;
        ram_model_params_init(&q);
        CHECK(ram_model_load(opt.model, &trained));
        CHECK(ram_model_get_params(trained, &q));
        if (q.channels == p.channels && q.height == p.height && q.width == p.width &&
            q.glimpse.patch == p.glimpse.patch && q.glimpse.depth == p.glimpse.depth &&
            q.glimpse.scale == p.glimpse.scale && q.glimpses == p.glimpses &&
            q.glimpse_hidden == p.glimpse_hidden && q.loc_hidden == p.loc_hidden &&
            q.glimpse_out == p.glimpse_out && q.core_hidden == p.core_hidden && q.core == p.core &&
            q.classes == p.classes && q.zoom_max == p.zoom_max) {
            ram_model_free(m);
            m = trained;
            weights = opt.model;
        } else {
            ram_model_free(trained);
        }
    }

    say("\n== %s: %s; %.2f MFLOP per training sample, %.2f per inference\n", c->name, c->what,
        f.train * 1e-6, f.infer * 1e-6);
    say("   images: %s; inference weights: %s\n", images, weights);
    say("   %-26s %22s %22s %10s\n", "", "1 thread", "2 threads", "2t / 1t");

    row lr[2];
    peer_result pr[2];
    for (int t = 1; t <= opt.max_threads; t++) {
        lr[t - 1].train32 = bench_train(&p, x, y, 32, t, RAM_PRODUCTS_FLOAT);
        lr[t - 1].train128 = bench_train(&p, x, y, 128, t, RAM_PRODUCTS_FLOAT);
        lr[t - 1].train128_bf16 = ram_bf16_products_supported()
                                      ? bench_train(&p, x, y, 128, t, RAM_PRODUCTS_BF16)
                                      : (stat3){0};
        lr[t - 1].infer1 = bench_infer(m, x, POOL, 1, t, 0, RAM_PRECISION_FLOAT);
        lr[t - 1].infer1_half = bench_infer(m, x, POOL, 1, t, 0, RAM_PRECISION_HALF);
        lr[t - 1].infer1_bf16 = bench_infer(m, x, POOL, 1, t, 0, RAM_PRECISION_BF16);
        lr[t - 1].infer256 = bench_infer(m, x, POOL, 256, t, 0, RAM_PRECISION_FLOAT);
        lr[t - 1].infer256_states = bench_infer(m, x, POOL, 256, t, 1, RAM_PRECISION_FLOAT);
        lr[t - 1].infer1_stop =
            bench_infer_stop(m, x, POOL, 1, t, 0, RAM_PRECISION_FLOAT, (float)opt.stop);
        lr[t - 1].infer256_stop =
            bench_infer_stop(m, x, POOL, 256, t, 0, RAM_PRECISION_FLOAT, (float)opt.stop);
        pr[t - 1] = run_peer(c, t);
    }
    const ram_precision precisions[3] = {RAM_PRECISION_FLOAT, RAM_PRECISION_HALF,
                                         RAM_PRECISION_BF16};
    stat3 two_over_one[3] = {{0}}, null_pair = {0};
    for (int k = 0; k < 3 && opt.max_threads > 1; k++)
        two_over_one[k] = threads_ratio(m, x, POOL, precisions[k], 2);
    /* The method's own resolution: two one-thread states, alike but for
     * where their buffers lie, timed the same way.  What their ratio
     * strays from 1 by, two threads against one cannot be told apart by. */
    if (opt.max_threads > 1) null_pair = threads_ratio(m, x, POOL, RAM_PRECISION_FLOAT, 1);
    double rss = peak_rss_mb();

#define ROW(label, field, unit)                                                                    \
    do {                                                                                           \
        char a[2][40];                                                                             \
        for (int t = 0; t < opt.max_threads; t++)                                                  \
            snprintf(a[t], sizeof a[t], "%.0f (%.0f-%.0f)", lr[t].field.median, lr[t].field.min,   \
                     lr[t].field.max);                                                             \
        say("   %-26s %22s %22s", label, a[0], opt.max_threads > 1 ? a[1] : "");                   \
        if (opt.max_threads > 1) say(" %9.2fx", lr[1].field.median / lr[0].field.median);          \
        say("  %s\n", unit);                                                                       \
    } while (0)
    ROW("train, batch 32", train32, "samples/s");
    ROW("train, batch 128", train128, "samples/s");
    if (ram_bf16_products_supported())
        ROW("train, b128, bf16 products", train128_bf16, "samples/s");
    else
        say("   %-26s not measured: this CPU has no AVX512_BF16\n", "train, b128, bf16 products");
    ROW("infer, batch 1", infer1, "samples/s");
    say("   %-26s %22.1f %22.1f %10s  us/image\n", "infer, batch 1 latency",
        1e6 / lr[0].infer1.median, opt.max_threads > 1 ? 1e6 / lr[1].infer1.median : 0.0, "");
    ROW("infer, batch 1, half", infer1_half, "samples/s");
    say("   %-26s %22.1f %22.1f %10s  us/image (weights in half precision)\n",
        "infer, batch 1 half lat.", 1e6 / lr[0].infer1_half.median,
        opt.max_threads > 1 ? 1e6 / lr[1].infer1_half.median : 0.0, "");
    ROW("infer, batch 1, bf16", infer1_bf16, "samples/s");
    say("   %-26s %22.1f %22.1f %10s  us/image (weights in bfloat16)\n", "infer, batch 1 bf16 lat.",
        1e6 / lr[0].infer1_bf16.median, opt.max_threads > 1 ? 1e6 / lr[1].infer1_bf16.median : 0.0,
        "");
    ROW("infer, batch 256", infer256, "samples/s");
    ROW("infer, b256, state/thread", infer256_states, "samples/s");
    const double stop_glimpses = mean_glimpses(m, x, POOL, (float)opt.stop);
    char stop_label[2][40];
    if (by_unit(m)) {
        snprintf(stop_label[0], sizeof stop_label[0], "infer, b1, stop unit");
        snprintf(stop_label[1], sizeof stop_label[1], "infer, b256, stop unit");
    } else {
        snprintf(stop_label[0], sizeof stop_label[0], "infer, b1, stop at %g", opt.stop);
        snprintf(stop_label[1], sizeof stop_label[1], "infer, b256, stop at %g", opt.stop);
    }
    ROW(stop_label[0], infer1_stop, "samples/s");
    say("   %-26s %22.1f %22.1f %10s  us/image\n", "infer, b1 stop latency",
        1e6 / lr[0].infer1_stop.median, opt.max_threads > 1 ? 1e6 / lr[1].infer1_stop.median : 0.0,
        "");
    ROW(stop_label[1], infer256_stop, "samples/s");
    say("   %-26s %.2f of %d glimpses per image on average (%s)\n", "stopping", stop_glimpses,
        p.glimpses, by_unit(m) ? "ram_model_classify_stop_unit" : "ram_model_classify_stop");
    say("   %-26s %22.0f MB (the whole configuration, inputs included)\n", "peak RSS", rss);

    /* The limit: FLOPs at large-square sgemm speed with as many BLAS threads. */
    stat3 peak[2] = {peak1, peak2};
    say("   limit (sgemm %5.0f/%5.0f GFLOP/s): train %6.0f / %6.0f samples/s; libram reaches "
        "%3.0f%% / %3.0f%% at batch 128\n",
        peak[0].median, peak[1].median, peak[0].median * 1e9 / f.train,
        peak[1].median * 1e9 / f.train,
        100 * lr[0].train128.median / (peak[0].median * 1e9 / f.train),
        opt.max_threads > 1 ? 100 * lr[1].train128.median / (peak[1].median * 1e9 / f.train) : 0);
    if (ram_bf16_products_supported())
        say("   %-26s with bf16 products (the same FLOPs counted): %3.0f%% / %3.0f%% of that "
            "limit at batch 128\n",
            "", 100 * lr[0].train128_bf16.median / (peak[0].median * 1e9 / f.train),
            opt.max_threads > 1
                ? 100 * lr[1].train128_bf16.median / (peak[1].median * 1e9 / f.train)
                : 0);
    say("   %-26s infer batch 1: %.1f us/image at 1 thread (%.0f%% of the sgemm limit %.1f us)\n",
        "", 1e6 / lr[0].infer1.median,
        100 * (f.infer / (peak[0].median * 1e9)) / (1 / lr[0].infer1.median),
        f.infer / (peak[0].median * 1e9) * 1e6);
    if (fma_limit[0] > 0)
        say("   FMA peak (%s, %.0f/%.0f GFLOP/s): train at batch 128 uses %.0f%% / %.0f%%; "
            "infer batch 1 %.0f%% (1 thread)\n",
            fma_limit_width, fma_limit[0], fma_limit[1],
            100 * lr[0].train128.median * f.train / (fma_limit[0] * 1e9),
            opt.max_threads > 1 ? 100 * lr[1].train128.median * f.train / (fma_limit[1] * 1e9) : 0,
            100 * lr[0].infer1.median * f.infer / (fma_limit[0] * 1e9));

    for (int t = 0; t < opt.max_threads && opt.peer; t++) {
        if (!pr[t].ok) {
            say("   PyTorch, %d thread%s: not measured (peer failed)\n", t + 1, t ? "s" : "");
            continue;
        }
        say("   PyTorch %s, %d thread%s: train b32 %.0f, b128 %.0f; infer b1 %.0f (%.0f us), "
            "b256 %.0f samples/s\n",
            pr[t].version, t + 1, t ? "s" : "", pr[t].train32.median, pr[t].train128.median,
            pr[t].infer1.median, 1e6 / pr[t].infer1.median, pr[t].infer256.median);
        say("   libram / PyTorch, %d thread%s: train b32 %.2fx, b128 %.2fx; infer b1 %.2fx (half "
            "%.2fx, bf16 %.2fx), b256 %.2fx\n",
            t + 1, t ? "s" : "", lr[t].train32.median / pr[t].train32.median,
            lr[t].train128.median / pr[t].train128.median,
            lr[t].infer1.median / pr[t].infer1.median,
            lr[t].infer1_half.median / pr[t].infer1.median,
            lr[t].infer1_bf16.median / pr[t].infer1.median,
            lr[t].infer256.median / pr[t].infer256.median);
    }
    if (opt.max_threads > 1)
        say("   infer, batch 1, 2t / 1t timed alternately (%d rounds): float %s, half %s, bf16 "
            "%s; 1t / 1t, float %s\n",
            2 * opt.reps + 1, ratio_str(two_over_one[0]).s, ratio_str(two_over_one[1]).s,
            ratio_str(two_over_one[2]).s, ratio_str(null_pair).s);
    if (opt.peer && pr[0].ok) say("   PyTorch setup: %s\n", pr[0].setup);
    for (int t = 0; t < opt.max_threads && opt.peer; t++)
        if (pr[t].ok && *pr[t].picked)
            say("   PyTorch's fastest setups, %d thread%s: %s\n", t + 1, t ? "s" : "",
                pr[t].picked);

    if (opt.json) {
        printf("%s{\"config\": \"%s\", \"what\": \"%s\", \"images\": \"%s\", "
               "\"inference_weights\": \"%s\", \"train_mflop\": %.4f, \"infer_mflop\": "
               "%.4f, \"peak_rss_mb\": %.1f, \"stop_threshold\": %g, \"stop_unit\": %s, "
               "\"stop_mean_glimpses\": %.4f, ",
               first ? "" : ", ", c->name, c->what, images, weights, f.train * 1e-6, f.infer * 1e-6,
               rss, opt.stop, by_unit(m) ? "true" : "false", stop_glimpses);
        if (opt.max_threads > 1) { /* time per image, 2 threads over 1, paired */
            printf("\"threads_ratio_b1\": {");
            print_stat_json("float", two_over_one[0], 0);
            print_stat_json("half", two_over_one[1], 0);
            print_stat_json("bf16", two_over_one[2], 0);
            print_stat_json("one_over_one_float", null_pair, 1);
            printf("}, ");
        }
        printf("\"threads\": [");
        for (int t = 0; t < opt.max_threads; t++) {
            double lim = peak[t].median * 1e9 / f.train;
            printf("%s{\"threads\": %d, \"libram\": {", t ? ", " : "", t + 1);
            print_stat_json("train_b32", lr[t].train32, 0);
            print_stat_json("train_b128", lr[t].train128, 0);
            print_stat_json("train_b128_bf16_products", lr[t].train128_bf16, 0);
            print_stat_json("infer_b1", lr[t].infer1, 0);
            print_stat_json("infer_b1_half", lr[t].infer1_half, 0);
            print_stat_json("infer_b1_bf16", lr[t].infer1_bf16, 0);
            print_stat_json("infer_b256", lr[t].infer256, 0);
            print_stat_json("infer_b256_state_per_thread", lr[t].infer256_states, 0);
            print_stat_json("infer_b1_stop", lr[t].infer1_stop, 0);
            print_stat_json("infer_b256_stop", lr[t].infer256_stop, 0);
            printf("\"infer_b1_stop_us\": %.3f, ", 1e6 / lr[t].infer1_stop.median);
            printf("\"infer_b1_us\": %.3f, \"infer_b1_half_us\": %.3f, \"infer_b1_bf16_us\": "
                   "%.3f}, \"train_limit\": %.1f, "
                   "\"fraction_of_limit_b128\": %.4f, \"fraction_of_limit_b128_bf16_products\": "
                   "%.4f, \"fraction_of_fma_peak_b128\": %.4f, "
                   "\"fraction_of_fma_peak_infer_b1\": %.4f",
                   1e6 / lr[t].infer1.median, 1e6 / lr[t].infer1_half.median,
                   1e6 / lr[t].infer1_bf16.median, lim, lr[t].train128.median / lim,
                   lr[t].train128_bf16.median / lim,
                   fma_limit[t] > 0 ? lr[t].train128.median * f.train / (fma_limit[t] * 1e9) : 0,
                   fma_limit[t] > 0 ? lr[t].infer1.median * f.infer / (fma_limit[t] * 1e9) : 0);
            if (opt.peer && pr[t].ok) {
                printf(", \"pytorch_setups\": \"%s\", \"pytorch\": {",
                       *pr[t].picked ? pr[t].picked : "the environment as it is");
                print_stat_json("train_b32", pr[t].train32, 0);
                print_stat_json("train_b128", pr[t].train128, 0);
                print_stat_json("infer_b1", pr[t].infer1, 0);
                print_stat_json("infer_b256", pr[t].infer256, 1);
                printf("}, \"ratio\": {\"train_b32\": %.3f, \"train_b128\": %.3f, \"infer_b1\": "
                       "%.3f, \"infer_b1_half\": %.3f, \"infer_b1_bf16\": %.3f, \"infer_b256\": "
                       "%.3f}",
                       lr[t].train32.median / pr[t].train32.median,
                       lr[t].train128.median / pr[t].train128.median,
                       lr[t].infer1.median / pr[t].infer1.median,
                       lr[t].infer1_half.median / pr[t].infer1.median,
                       lr[t].infer1_bf16.median / pr[t].infer1.median,
                       lr[t].infer256.median / pr[t].infer256.median);
            }
            printf("}");
        }
        printf("]}");
        fflush(stdout);
    }
    ram_model_free(m);
    free(x);
    free(y);
}

/* ---- scaling: cost against image size and glimpse count -------------------- */

static double infer_us(const ram_model_params *p, int batch) {
    ram_model *m;
    CHECK(ram_model_create(p, &m));
    float *x = make_images(batch, p, 3);
    stat3 s = bench_infer(m, x, batch, batch, 1, 0, RAM_PRECISION_FLOAT);
    free(x);
    ram_model_free(m);
    return 1e6 / s.median;
}

static void run_scaling(void) {
    const int sizes[] = {28, 60, 100, 256, 512};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    say("\n== scaling: inference, 1 thread, 12x12 patch, 3 scales (translated60's retina)\n");
    say("   %-10s %8s %16s %16s\n", "image", "glimpses", "batch 1 us/img", "batch 256 us/img");
    if (opt.json) printf("], \"scaling_size\": [");
    for (int i = 0; i < ns; i++) {
        ram_model_params p = config_params(&configs[1]);
        p.height = p.width = sizes[i];
        double b1 = infer_us(&p, 1), b256 = infer_us(&p, 256);
        say("   %3dx%-6d %8d %16.1f %16.1f\n", sizes[i], sizes[i], p.glimpses, b1, b256);
        if (opt.json)
            printf("%s{\"size\": %d, \"glimpses\": %d, \"b1_us\": %.3f, \"b256_us\": %.3f}",
                   i ? ", " : "", sizes[i], p.glimpses, b1, b256);
    }
    const int gl[] = {1, 2, 4, 6, 8, 12, 16};
    const int ng = (int)(sizeof gl / sizeof gl[0]);
    say("\n   60x60 image, glimpses from 1 to 16:\n");
    if (opt.json) printf("], \"scaling_glimpses\": [");
    for (int i = 0; i < ng; i++) {
        ram_model_params p = config_params(&configs[1]);
        p.glimpses = gl[i];
        double b1 = infer_us(&p, 1), b256 = infer_us(&p, 256);
        say("   %3dx%-6d %8d %16.1f %16.1f\n", 60, 60, gl[i], b1, b256);
        if (opt.json)
            printf("%s{\"size\": 60, \"glimpses\": %d, \"b1_us\": %.3f, \"b256_us\": %.3f}",
                   i ? ", " : "", gl[i], b1, b256);
    }
}

/* 512x512 against 60x60, paired.  The scaling table measures each size on
 * its own, and on this noisy VM two measurements of the same case can differ
 * by 20 %, more than the 10 % in question.  Here the two sizes (the same
 * network: translated60's retina, 8 glimpses, 1 channel) are timed
 * alternately (alternate_ratio()), so drift hits both sides.  With `bytes`, the images are 8-bit
 * (ram_model_classify_u8), as decoded pictures are: a quarter of the memory a glimpse's window
 * spans. */
typedef struct sizes_pair {
    ram_model *m[2];
    ram_state *st[2];
    float *x[2];
    uint8_t *x8[2]; /* `bytes`: the images as 8-bit, x NULL */
    int *labels;
    int batch;
} sizes_pair;

static void classify_batch(void *arg, int k) {
    sizes_pair *sp = arg;
    CHECK(sp->x8[k] ? ram_model_classify_u8(sp->m[k], sp->st[k], sp->x8[k], sp->batch, sp->labels,
                                            NULL, NULL)
                    : ram_model_classify(sp->m[k], sp->st[k], sp->x[k], sp->batch, sp->labels, NULL,
                                         NULL));
}

static stat3 size_ratio(int batch, bool bytes) {
    const int sizes[2] = {60, 512};
    sizes_pair sp = {.labels = xmalloc(sizeof(int) * batch), .batch = batch};
    for (int k = 0; k < 2; k++) {
        ram_model_params p = config_params(&configs[1]);
        p.height = p.width = sizes[k];
        CHECK(ram_model_create(&p, &sp.m[k]));
        CHECK(ram_state_create_threads(sp.m[k], batch, 1, &sp.st[k]));
        sp.x[k] = make_images((size_t)batch, &p, 3);
        if (bytes) {
            const size_t count = (size_t)batch * p.height * p.width;
            sp.x8[k] = xmalloc(count);
            for (size_t i = 0; i < count; i++)
                sp.x8[k][i] = (uint8_t)(sp.x[k][i] * 255.0f + 0.5f);
            free(sp.x[k]);
            sp.x[k] = NULL;
        }
    }
    stat3 s = alternate_ratio(classify_batch, &sp, 1);
    for (int k = 0; k < 2; k++) {
        ram_state_free(sp.st[k]);
        ram_model_free(sp.m[k]);
        free(sp.x[k]);
        free(sp.x8[k]);
    }
    free(sp.labels);
    return s;
}

static void run_size_ratio(void) {
    stat3 b1 = size_ratio(1, false), b256 = size_ratio(256, false);
    stat3 b1u8 = size_ratio(1, true), b256u8 = size_ratio(256, true);
    say("\n   512x512 / 60x60, same network, timed alternately (%d rounds), 1 thread:\n"
        "   float images: batch 1 %s, batch 256 %s\n"
        "   8-bit images: batch 1 %s, batch 256 %s\n",
        2 * opt.reps + 1, ratio_str(b1).s, ratio_str(b256).s, ratio_str(b1u8).s,
        ratio_str(b256u8).s);
    if (opt.json) {
        printf("], \"size_ratio_512_60\": {");
        print_stat_json("b1", b1, 0);
        print_stat_json("b256", b256, 0);
        print_stat_json("b1_u8", b1u8, 0);
        print_stat_json("b256_u8", b256u8, 1);
        printf("}");
    }
}

/* ---- BLAS report ------------------------------------------------------------ */

/* OpenBLAS picks its kernels at load time from the CPU it recognises; an
 * unrecognised CPU falls back to old SSE kernels, several times slower.
 * libram's own check (ram_blas_info) says which kernels run and whether the
 * CPU could do better; ram-bench deliberately does not re-execute itself
 * with OPENBLAS_CORETYPE as the tools do, so that it measures what a program
 * linking libram gets. */
static void blas_report(char *info_out, size_t cap, int *slow) {
    ram_set_log_callback(NULL, NULL); /* reported below instead */
    const char *info = ram_blas_info(slow);
    snprintf(info_out, cap, "%s", info);
    const char *core = ram_blas_coretype();
    say("BLAS: %s; libram's kernels: %s; OpenBLAS core fit for this CPU: %s\n", info,
        ram_kernels_name(), core ? core : "none known");
    if (*slow)
        say("WARNING: these BLAS kernels are older than the CPU: set OPENBLAS_CORETYPE=%s "
            "(docs/performance.md)\n",
            core ? core : "?");
}

/* ---- the machine while we ran ------------------------------------------------- */

/* On a shared VM the host takes CPU time away from the guest ("steal"), and
 * other processes may be running (a training run in the background): the
 * figures of such a run are lower.  So the run says how much of each there
 * was, from /proc/stat's first line and this process's own CPU time. */
typedef struct cpu_ticks {
    unsigned long long busy, steal, total;
} cpu_ticks;

static int read_cpu_ticks(cpu_ticks *c) {
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f) fclose(f);
    if (n < 8) return 0;
    c->busy = v[0] + v[1] + v[2] + v[5] + v[6]; /* user nice system irq softirq */
    c->steal = v[7];
    c->total = c->busy + v[3] + v[4] + v[7]; /* + idle iowait steal */
    return 1;
}

/* CPU seconds of this process and of the children it waited for (the
 * configurations and the PyTorch peer). */
static double own_cpu_seconds(void) {
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
           kids.ru_stime.tv_sec +
           1e-6 * (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
                   kids.ru_stime.tv_usec);
}

static double clamp_pct(double x) {
    return x < 0 ? 0 : x > 100 ? 100 : x;
}

/* t0: /proc/stat at the start, or NULL if it could not be read. */
static void report_machine_load(const cpu_ticks *t0, double own0) {
    cpu_ticks t1;
    const double hz = (double)sysconf(_SC_CLK_TCK);
    if (!t0 || !read_cpu_ticks(&t1) || t1.total <= t0->total || hz <= 0) {
        if (opt.json) printf(", \"machine_load\": null");
        return;
    }
    /* Differences as doubles, clamped to [0, 100]: some kernels and
     * hypervisors let the steal counter go backwards, and ticks round. */
    const double total = (double)t1.total - (double)t0->total;
    const double steal = clamp_pct(100.0 * ((double)t1.steal - (double)t0->steal) / total);
    const double other = clamp_pct(
        100.0 * ((double)t1.busy - (double)t0->busy - (own_cpu_seconds() - own0) * hz) / total);
    say("\nthe machine during this run: steal %.1f %% of the CPUs' time (taken by the host for "
        "other guests), other processes %.1f %%; either makes every figure lower\n",
        steal, other);
    if (opt.json)
        printf(", \"machine_load\": {\"steal_pct\": %.2f, \"other_processes_pct\": %.2f}", steal,
               other);
}

/* ---- main --------------------------------------------------------------------- */

static void usage(FILE *to, int status) {
    fprintf(to, "usage: ram-bench [--reps N (5)] [--warmup N (1)] [--quick] [--json]\n"
                "                 [--config mnist|translated60|cluttered100|image512]\n"
                "                 [--threads 1|2] [--peer CMD | --no-peer] [--peer-as-is]\n"
                "                 [--no-scaling] [--model FILE] [--data DIR] [--stop-threshold P]\n"
                "                 [--stop-unit]\n"
                "  --peer CMD   the PyTorch peer (default: python3 bench/torch_ram.py next to the\n"
                "               source, if python3 can import torch)\n"
                "  --peer-as-is run the peer once, in this environment, instead of trying each\n"
                "               OpenBLAS build (pthreads, OpenMP) and core type fit for the CPU\n"
                "               and keeping the fastest per figure\n"
                "  --model FILE trained weights for the inference rows of the configuration\n"
                "               with that network (models/mnist-6glimpses.ram: mnist); random\n"
                "               otherwise (training always starts from random weights)\n"
                "  --data DIR   the first 256 MNIST test images (DIR/t10k-*-ubyte) for the\n"
                "               28x28 configuration instead of uniform noise\n"
                "  --stop-threshold P  the stopping rows: each image stops at the first glimpse\n"
                "               after which its top class has probability P or more\n"
                "               (ram_model_classify_stop; default 0.98, the threshold\n"
                "               bench/stop_curve.py chooses on validation for\n"
                "               models/mnist-6glimpses.ram)\n"
                "  --stop-unit  the stopping rows by the stop unit of the --model\n"
                "               (ram_model_classify_stop_unit; e.g.\n"
                "               models/mnist-6glimpses-stop.ram), the threshold elsewhere\n");
    exit(status);
}

int main(int argc, char **argv) {
    int scaling = 1, no_peer = 0;
    const char *peer = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--reps") && more)
            opt.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && more)
            opt.warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--quick"))
            opt.quick = 1;
        else if (!strcmp(a, "--json"))
            opt.json = 1;
        else if (!strcmp(a, "--config") && more)
            opt.only = argv[++i];
        else if (!strcmp(a, "--threads") && more)
            opt.max_threads = atoi(argv[++i]);
        else if (!strcmp(a, "--peer") && more)
            peer = argv[++i];
        else if (!strcmp(a, "--no-peer"))
            no_peer = 1;
        else if (!strcmp(a, "--peer-as-is"))
            opt.peer_as_is = 1;
        else if (!strcmp(a, "--no-scaling"))
            scaling = 0;
        else if (!strcmp(a, "--model") && more)
            opt.model = argv[++i];
        else if (!strcmp(a, "--data") && more)
            opt.data = argv[++i];
        else if (!strcmp(a, "--stop-threshold") && more) {
            char *end;
            opt.stop = strtod(argv[++i], &end);
            if (*end || !(opt.stop >= 0 && opt.stop <= 1)) {
                fprintf(stderr, "ram-bench: --stop-threshold %s: a number in [0, 1]\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--stop-unit"))
            opt.stop_unit = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            usage(stdout, 0);
        else
            usage(stderr, 2);
    }
    if (opt.reps < 1 || opt.reps > 64 || opt.warmup < 1 || opt.max_threads < 1 ||
        opt.max_threads > 2)
        usage(stderr, 2);
    if (opt.quick) opt.rep_seconds = 0.15;
    static char peer_cmd[1024];
    if (!no_peer) {
        if (peer) {
            opt.peer = peer;
        } else if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0) {
            snprintf(peer_cmd, sizeof peer_cmd, "/usr/bin/python3 %s/bench/torch_ram.py",
                     RAM_SOURCE_DIR);
            opt.peer = peer_cmd;
        } else {
            fprintf(stderr, "ram-bench: no python3 with torch (Debian: python3-torch): "
                            "PyTorch not measured\n");
        }
    }

    cpu_ticks ticks0;
    const int have_ticks = read_cpu_ticks(&ticks0);
    const double own0 = own_cpu_seconds();
    ram_set_blas_threads(1); /* libram's own threads do the splitting */
    char blas[256];
    int slow_blas = 0;
    if (opt.json) printf("{\"libram\": \"%s\", ", ram_version_string());
    say("libram %s ram-bench: median (min-max) of %d repetitions of ~%.2f s after %d warm-up\n",
        ram_version_string(), opt.reps, opt.rep_seconds, opt.warmup);
    blas_report(blas, sizeof blas, &slow_blas);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    say("machine: %ld CPUs online\n", cpus);

    /* The limit, measured once: sgemm at a large square shape and at the
     * shapes the MNIST model runs (batch x 256 x 256). */
    stat3 big[2], m128[2], m1[2];
    double fma_peak[FMA_WIDTHS][2] = {{0}};
    int widest = -1;
    for (int t = 1; t <= opt.max_threads; t++) {
        big[t - 1] = sgemm_gflops(2048, 2048, 2048, t);
        m128[t - 1] = sgemm_gflops(128, 256, 256, t);
        m1[t - 1] = sgemm_gflops(1, 256, 256, t);
    }
    say("\nsgemm GFLOP/s (C = A B^T)     1 thread          2 threads\n");
    say("   2048x2048x2048          %7.1f (%.0f-%.0f) %7.1f (%.0f-%.0f)\n", big[0].median,
        big[0].min, big[0].max, opt.max_threads > 1 ? big[1].median : 0,
        opt.max_threads > 1 ? big[1].min : 0, opt.max_threads > 1 ? big[1].max : 0);
    say("   128x256x256 (batch 128) %7.1f             %7.1f\n", m128[0].median,
        opt.max_threads > 1 ? m128[1].median : 0);
    say("   1x256x256   (batch 1)   %7.1f             %7.1f\n", m1[0].median,
        opt.max_threads > 1 ? m1[1].median : 0);
    /* The processor's own limit: its FMA pipes at each vector width. */
    say("FMA peak GFLOP/s (registers only)\n");
    for (int w = 0; w < FMA_WIDTHS; w++) {
        for (int t = 1; t <= opt.max_threads; t++)
            fma_peak[w][t - 1] = fma_peak_gflops(w, t, 5, 0.05);
        if (fma_width_supported(w))
            say("   %-24s %7.1f             %7.1f\n", fma_width_name(w), fma_peak[w][0],
                opt.max_threads > 1 ? fma_peak[w][1] : 0);
        else
            say("   %-24s not run on this processor\n", fma_width_name(w));
        if (fma_peak[w][0] > 0) widest = w;
    }
    if (widest >= 0) {
        fma_limit[0] = fma_peak[widest][0];
        fma_limit[1] = opt.max_threads > 1 ? fma_peak[widest][1] : fma_peak[widest][0];
        fma_limit_width = fma_width_name(widest);
    }
    if (opt.json) {
        printf("\"blas\": \"%s\", \"blas_slow\": %d, \"kernels\": \"%s\", \"cpus\": %ld, "
               "\"sgemm_gflops\": {",
               blas, slow_blas, ram_kernels_name(), cpus);
        for (int t = 0; t < opt.max_threads; t++)
            printf("%s\"%d\": {\"2048\": %.2f, \"128x256x256\": %.2f, \"1x256x256\": %.2f}",
                   t ? ", " : "", t + 1, big[t].median, m128[t].median, m1[t].median);
        printf("}, \"fma_peak_gflops\": {");
        for (int t = 0; t < opt.max_threads; t++) {
            printf("%s\"%d\": {", t ? ", " : "", t + 1);
            for (int w = 0; w < FMA_WIDTHS; w++)
                printf("%s\"%s\": %.2f", w ? ", " : "", fma_width_name(w), fma_peak[w][t]);
            printf("}");
        }
        printf("}, \"configs\": [");
    }

    int first = 1;
    for (int i = 0; i < N_CONFIGS; i++) {
        if (opt.only && strcmp(opt.only, configs[i].name)) continue;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("ram-bench: fork");
            return 1;
        }
        if (pid == 0) {
            run_config(&configs[i], big[0], opt.max_threads > 1 ? big[1] : big[0], first);
            fflush(stdout);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "ram-bench: configuration %s failed\n", configs[i].name);
            return 1;
        }
        first = 0;
    }
    if (scaling) {
        run_scaling();
        run_size_ratio();
    } else if (opt.json) {
        printf("], \"scaling_size\": [], \"scaling_glimpses\": []");
    }
    report_machine_load(have_ticks ? &ticks0 : NULL, own0);
    if (opt.json) printf("}\n");
    return 0;
}
