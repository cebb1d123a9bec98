/* The trainer: a resumed checkpoint continues exactly as the uninterrupted
 * run, thread counts change only the summation order, failed steps change
 * nothing, evaluation agrees with classification, and the whole model
 * learns where to look on a task that cannot be solved from the centre;
 * gradients averaged in the hook equal the whole batch's. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include <pthread.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t lcg_state;
static uint32_t lcg_u32(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}
static float lcg_uniform(void) {
    return (float)(lcg_u32() >> 8) * (1.0f / 16777216.0f);
}

/* ---- allocation counting: the library's objects are linked into this test
 * with -Wl,--wrap=malloc,calloc,realloc, so every allocation libram makes
 * (not those inside libc, OpenBLAS or Check) passes through here. ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
static long allocations;
void *__wrap_malloc(size_t n) {
    allocations++;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
    allocations++;
    return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
    allocations++;
    return __real_realloc(p, n);
}

/* ---- a small model on synthetic data ---- */

enum { SIDE = 12, IMG = SIDE * SIDE, NDATA = 48, BATCH = 16, NCLASS = 3 };

typedef struct setup {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
} setup;

static int image_side = SIDE; /* another size gives the same tensor shapes */
static ram_baseline_type setup_baseline = RAM_BASELINE_LINEAR;
static float setup_weight_decay = 0.0f;
static float setup_average_decay = 0.0f;
static ram_products setup_products = RAM_PRODUCTS_FLOAT;

static void make_setup(setup *s, int threads, ram_optimizer opt, ram_core_type core) {
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = image_side;
    mp.glimpse.patch = 4;
    mp.glimpse.depth = 2;
    mp.glimpse_hidden = mp.loc_hidden = 8;
    mp.glimpse_out = mp.core_hidden = 16;
    mp.glimpses = 3;
    mp.classes = NCLASS;
    mp.core = core;
    mp.seed = 5;
    ck_assert_int_eq(ram_model_create(&mp, &s->m), RAM_OK);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = 6;
    pp.baseline = setup_baseline;
    ck_assert_int_eq(ram_policy_create(&pp, s->m, &s->pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.optimizer = opt;
    tp.lr = opt == RAM_OPT_SGD ? 0.05f : 3e-3f;
    tp.lr_final = tp.lr / 10;
    tp.decay_steps = 12; /* the lr depends on the restored step count */
    tp.nesterov = 1;
    tp.max_batch = BATCH;
    tp.threads = threads;
    tp.weight_decay = setup_weight_decay;
    tp.average_decay = setup_average_decay;
    tp.products = setup_products;
    ck_assert_int_eq(ram_trainer_create(s->m, s->pol, &tp, &s->t), RAM_OK);
}

static void free_setup(setup *s) {
    ram_trainer_free(s->t);
    ram_policy_free(s->pol);
    ram_model_free(s->m);
    memset(s, 0, sizeof *s);
}

/* Images whose class is the brightest third of the image, plus noise. */
static float data[NDATA * IMG];
static int labels[NDATA];

static void make_data(void) {
    lcg_state = 77;
    for (int i = 0; i < NDATA; i++) {
        labels[i] = (int)(lcg_u32() % NCLASS);
        for (int p = 0; p < IMG; p++) {
            int col = p % SIDE;
            data[i * IMG + p] = 0.3f * lcg_uniform() + (col / 4 == labels[i] ? 0.7f : 0.0f);
        }
    }
}

/* One epoch-style step: shuffle with the trainer's RNG, train on the first
 * BATCH of the permutation, as a real training loop would. */
static void train_steps(setup *s, int steps) {
    static float batch[BATCH * IMG];
    int perm[NDATA], y[BATCH];
    for (int k = 0; k < steps; k++) {
        ck_assert_int_eq(ram_trainer_shuffle(s->t, perm, NDATA), RAM_OK);
        for (int i = 0; i < BATCH; i++) {
            memcpy(batch + i * IMG, data + perm[i] * IMG, sizeof(float) * IMG);
            y[i] = labels[perm[i]];
        }
        ram_train_stats st;
        ck_assert_int_eq(ram_trainer_train_batch(s->t, batch, y, BATCH, &st), RAM_OK);
        ck_assert(isfinite(st.loss));
    }
}

/* ---- (a) checkpoint resume ---- */

START_TEST(test_resume_equals_uninterrupted) {
    const int threads = 1 + _i % 2;
    const ram_optimizer opt = _i / 2 % 2 ? RAM_OPT_ADAM : RAM_OPT_SGD;
    const ram_core_type core = _i / 4 ? RAM_CORE_LSTM : RAM_CORE_RNN;
    make_data();
    char path[64];
    snprintf(path, sizeof path, "check_trainer-%d-%ld.ckpt", _i, (long)getpid());

    setup a;
    make_setup(&a, threads, opt, core);
    float *w0 = malloc(sizeof(float) * a.m->n_params);
    memcpy(w0, a.m->w, sizeof(float) * a.m->n_params);
    train_steps(&a, 10);
    ck_assert_int_eq(ram_trainer_steps(a.t), 10);
    int next_a[NDATA];
    ck_assert_int_eq(ram_trainer_shuffle(a.t, next_a, NDATA), RAM_OK);

    setup b;
    make_setup(&b, threads, opt, core);
    train_steps(&b, 5);
    const long epoch = 5;
    ck_assert_int_eq(ram_trainer_save_checkpoint(b.t, path, &epoch, sizeof epoch), RAM_OK);
    free_setup(&b);

    make_setup(&b, threads, opt, core);
    long got = 0;
    size_t got_len = 0;
    ck_assert_int_eq(ram_trainer_load_checkpoint(b.t, path, &got, sizeof got, &got_len), RAM_OK);
    ck_assert_int_eq(got, 5);
    ck_assert_uint_eq(got_len, sizeof got);
    ck_assert_int_eq(ram_trainer_steps(b.t), 5);
    train_steps(&b, 5);
    ck_assert_int_eq(ram_trainer_steps(b.t), 10);
    int next_b[NDATA];
    ck_assert_int_eq(ram_trainer_shuffle(b.t, next_b, NDATA), RAM_OK);

    ck_assert_uint_eq(a.m->n_params, b.m->n_params);
    ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * a.m->n_params);
    ck_assert_uint_eq(a.pol->n_bw, b.pol->n_bw);
    ck_assert_mem_eq(a.pol->bw, b.pol->bw, sizeof(float) * a.pol->n_bw);
    ck_assert_mem_eq(next_a, next_b, sizeof next_a);
    /* ...and the run did train: otherwise equality would prove nothing. */
    ck_assert_mem_ne(a.m->w, w0, sizeof(float) * a.m->n_params);
    double moved = 0;
    for (size_t i = 0; i < a.m->n_params; i++)
        moved = fmax(moved, fabs(a.m->w[i] - w0[i]));
    ck_assert_double_gt(moved, 1e-3);

    free(w0);
    free_setup(&a);
    free_setup(&b);
    unlink(path);
}
END_TEST

START_TEST(test_checkpoint_mismatch) {
    /* A checkpoint from another optimizer or architecture is refused and
     * changes nothing. */
    make_data();
    char path[64];
    snprintf(path, sizeof path, "check_trainer-mm-%ld.ckpt", (long)getpid());
    setup a, b;
    make_setup(&a, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    train_steps(&a, 2);
    ck_assert_int_eq(ram_trainer_save_checkpoint(a.t, path, NULL, 0), RAM_OK);
    make_setup(&b, 1, RAM_OPT_ADAM, RAM_CORE_RNN);
    float *w = malloc(sizeof(float) * b.m->n_params);
    memcpy(w, b.m->w, sizeof(float) * b.m->n_params);
    ck_assert_int_eq(ram_trainer_load_checkpoint(b.t, path, NULL, 0, NULL), RAM_ERR_MISMATCH);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_mem_eq(b.m->w, w, sizeof(float) * b.m->n_params);
    ck_assert_int_eq(ram_trainer_steps(b.t), 0);
    free_setup(&b);
    make_setup(&b, 1, RAM_OPT_SGD, RAM_CORE_LSTM);
    ck_assert_int_eq(ram_trainer_load_checkpoint(b.t, path, NULL, 0, NULL), RAM_ERR_MISMATCH);
    ck_assert_int_eq(ram_trainer_steps(b.t), 0);
    free_setup(&b);
    /* Same tensors, other image size: still another architecture. */
    image_side = SIDE + 4;
    make_setup(&b, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    image_side = SIDE;
    ck_assert_uint_eq(b.m->n_params, a.m->n_params);
    ck_assert_int_eq(ram_trainer_load_checkpoint(b.t, path, NULL, 0, NULL), RAM_ERR_MISMATCH);
    ck_assert_int_eq(ram_trainer_steps(b.t), 0);
    free(w);
    free_setup(&a);
    free_setup(&b);
    unlink(path);
}
END_TEST

/* ---- (b) threads ---- */

static float *weights_after(int threads, ram_optimizer opt, int steps, size_t *n) {
    setup s;
    make_setup(&s, threads, opt, RAM_CORE_RNN);
    train_steps(&s, steps);
    *n = s.m->n_params;
    float *w = malloc(sizeof(float) * (*n + s.pol->n_bw));
    memcpy(w, s.m->w, sizeof(float) * *n);
    memcpy(w + *n, s.pol->bw, sizeof(float) * s.pol->n_bw);
    *n += s.pol->n_bw;
    free_setup(&s);
    return w;
}

START_TEST(test_threads_agree) {
    make_data();
    size_t n;
    setup s;
    make_setup(&s, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    const size_t np = s.m->n_params;
    float *w0 = malloc(sizeof(float) * np);
    memcpy(w0, s.m->w, sizeof(float) * np);
    free_setup(&s);

    /* Same sampled noise for any split: only the order of the float sums
     * differs, so the weights agree to rounding. */
    const ram_optimizer opts[2] = {RAM_OPT_SGD, RAM_OPT_ADAM};
    for (int o = 0; o < 2; o++) {
        float *w1 = weights_after(1, opts[o], 4, &n), *w2 = weights_after(2, opts[o], 4, &n),
              *w3 = weights_after(3, opts[o], 4, &n), *w2b = weights_after(2, opts[o], 4, &n);
        double wmax = 0, d12 = 0, d13 = 0, moved = 0;
        for (size_t i = 0; i < n; i++) {
            wmax = fmax(wmax, fabs(w1[i]));
            d12 = fmax(d12, fabs(w1[i] - w2[i]));
            d13 = fmax(d13, fabs(w1[i] - w3[i]));
        }
        for (size_t i = 0; i < np; i++)
            moved = fmax(moved, fabs(w1[i] - w0[i]));
        ck_assert_msg(d12 <= 1e-4 * wmax && d13 <= 1e-4 * wmax,
                      "optimizer %d: threads differ by %g / %g (max |w| %g)", o, d12, d13, wmax);
        ck_assert_msg(moved > 100 * fmax(d12, 1e-7), "optimizer %d: weights moved only %g", o,
                      moved);
        /* A given thread count is deterministic. */
        ck_assert_mem_eq(w2, w2b, sizeof(float) * n);
        free(w1), free(w2), free(w3), free(w2b);
    }
    free(w0);
}
END_TEST

/* bfloat16 products: refused where the CPU cannot run them (and an
 * unknown format everywhere); where it can, deterministic, really used
 * (the weights differ from the float products' in their low bits) and
 * close to the float training after a few steps. */
START_TEST(test_bf16_products) {
    make_data();
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = SIDE;
    mp.glimpse.patch = 4;
    mp.classes = NCLASS;
    ram_model *m = NULL;
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_model_create(&mp, &m), RAM_OK);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ck_assert_int_eq(tp.products, RAM_PRODUCTS_FLOAT);
    ram_trainer *t = NULL;
    tp.products = (ram_products)7;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(t);
    tp.products = RAM_PRODUCTS_BF16;
    if (!ram_bf16_products_supported()) {
        ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(t);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "AVX512_BF16"));
        printf("check_trainer: bf16 products: this CPU has no AVX512_BF16, training skipped\n");
    }
    ram_policy_free(pol);
    ram_model_free(m);
    if (!ram_bf16_products_supported()) return;

    size_t n;
    /* one thread: the batch of 16 stays whole, wide enough for the kernel */
    float *w_float = weights_after(1, RAM_OPT_ADAM, 4, &n);
    setup_products = RAM_PRODUCTS_BF16;
    float *w_bf16 = weights_after(1, RAM_OPT_ADAM, 4, &n);
    float *again = weights_after(1, RAM_OPT_ADAM, 4, &n);
    setup_products = RAM_PRODUCTS_FLOAT;
    ck_assert_mem_eq(w_bf16, again, sizeof(float) * n);
    double wmax = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        wmax = fmax(wmax, fabs(w_float[i]));
        d = fmax(d, fabs(w_float[i] - w_bf16[i]));
    }
    ck_assert_msg(d > 0, "bf16 products gave the float products' weights");
    ck_assert_msg(d <= 2e-2 * wmax, "bf16 products moved the weights %g from float's (max |w| %g)",
                  d, wmax);
    free(w_float), free(w_bf16), free(again);
}
END_TEST

/* A batch smaller than the thread count leaves some workers without images:
 * they must contribute nothing (not a stale gradient from the last step). */
START_TEST(test_tiny_batch_with_threads) {
    make_data();
    setup a, b;
    make_setup(&a, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    make_setup(&b, 3, RAM_OPT_SGD, RAM_CORE_RNN);
    for (int n = BATCH; n >= 1; n = n > 2 ? n / 2 : n - 1) {
        ck_assert_int_eq(ram_trainer_train_batch(a.t, data, labels, n, NULL), RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch(b.t, data, labels, n, NULL), RAM_OK);
    }
    double wmax = 0, d = 0;
    for (size_t i = 0; i < a.m->n_params; i++) {
        wmax = fmax(wmax, fabs(a.m->w[i]));
        d = fmax(d, fabs(a.m->w[i] - b.m->w[i]));
    }
    ck_assert_msg(d <= 1e-4 * wmax, "1 and 3 threads differ by %g (max |w| %g)", d, wmax);
    free_setup(&a);
    free_setup(&b);
}
END_TEST

/* The per-step paths allocate nothing: training steps (with worker threads),
 * evaluation and classification only use workspaces sized at creation. */
START_TEST(test_steps_allocate_nothing) {
    make_data();
    setup s;
    make_setup(&s, 2, RAM_OPT_ADAM, RAM_CORE_LSTM);
    ram_state *st, *half; /* half: rounds the weights again after every step */
    ck_assert_int_eq(ram_state_create(s.m, BATCH, &st), RAM_OK);
    ck_assert_int_eq(ram_state_create(s.m, BATCH, &half), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(half, RAM_PRECISION_HALF), RAM_OK);
    int pred[BATCH];
    double err;
    train_steps(&s, 1); /* anything lazy happens here, not later */
    /* No ck_assert inside the window: Check is linked statically here and
     * allocates too. */
    int bad = 0;
    const long before = allocations;
    for (int k = 0; k < 3; k++) {
        bad |= ram_trainer_train_batch(s.t, data, labels, BATCH, NULL);
        bad |= ram_trainer_train_batch(s.t, data, labels, 3, NULL);
        bad |= ram_trainer_evaluate(s.t, data, labels, NDATA, &err);
        bad |= ram_model_classify(s.m, st, data, BATCH, pred, NULL, NULL);
        bad |= ram_model_classify(s.m, half, data, 1, pred, NULL, NULL);
        bad |= ram_model_classify(s.m, half, data, BATCH, pred, NULL, NULL);
    }
    const long made = allocations - before;
    ck_assert_int_eq(bad, RAM_OK);
    ck_assert_int_eq(made, 0);
    /* and the counter works: creating a state allocates */
    ram_state *st2;
    const long before2 = allocations;
    ram_status created = ram_state_create(s.m, 4, &st2);
    const long made2 = allocations - before2;
    ck_assert_int_eq(created, RAM_OK);
    ck_assert_int_gt(made2, 0);
    ram_state_free(st2);
    ram_state_free(half);
    ram_state_free(st);
    free_setup(&s);
}
END_TEST

/* ---- (d) failed steps and evaluation ---- */

START_TEST(test_failed_step_changes_nothing) {
    make_data();
    setup a, b;
    make_setup(&a, 2, RAM_OPT_ADAM, RAM_CORE_LSTM);
    make_setup(&b, 2, RAM_OPT_ADAM, RAM_CORE_LSTM);
    train_steps(&a, 2);
    train_steps(&b, 2);

    /* A NaN (or infinite) pixel in a's batch: refused before anything moves. */
    static float bad[BATCH * IMG];
    memcpy(bad, data, sizeof bad);
    const size_t np = a.m->n_params;
    float *w = malloc(sizeof(float) * np);
    memcpy(w, a.m->w, sizeof(float) * np);
    const float poison[2] = {NAN, -INFINITY};
    for (int k = 0; k < 2; k++) {
        bad[5 * IMG + 17 + k] = poison[k];
        ram_clear_error();
        ck_assert_int_eq(ram_trainer_train_batch(a.t, bad, labels, BATCH, NULL), RAM_ERR_NUMERIC);
        ck_assert_str_ne(ram_last_error(), "");
        bad[5 * IMG + 17 + k] = 0.5f;
    }
    ck_assert_mem_eq(a.m->w, w, sizeof(float) * np);
    ck_assert_int_eq(ram_trainer_steps(a.t), 2);

    /* The refusals consumed no randomness and touched no optimizer state:
     * from here a and b (which never failed) stay identical. */
    train_steps(&a, 3);
    train_steps(&b, 3);
    ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * np);
    ck_assert_mem_eq(a.pol->bw, b.pol->bw, sizeof(float) * a.pol->n_bw);

    /* A diverged model (an infinite classifier bias gives a NaN loss): the
     * update is skipped, and the weights, baseline, step count and the
     * policy's RNG (whose noise the step had drawn) are as they were. */
    float *cls_b = ram_param(a.m, a.m->w, RAM_T_CLS_B);
    cls_b[0] = INFINITY;
    memcpy(w, a.m->w, sizeof(float) * np);
    float *bw = malloc(sizeof(float) * a.pol->n_bw);
    memcpy(bw, a.pol->bw, sizeof(float) * a.pol->n_bw);
    const ram_rng rng = a.pol->rng;
    ram_clear_error();
    ck_assert_int_eq(ram_trainer_train_batch(a.t, data, labels, BATCH, NULL), RAM_ERR_NUMERIC);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_mem_eq(a.m->w, w, sizeof(float) * np);
    ck_assert_mem_eq(a.pol->bw, bw, sizeof(float) * a.pol->n_bw);
    ck_assert_int_eq(ram_trainer_steps(a.t), 5);
    ck_assert_mem_eq(&a.pol->rng, &rng, sizeof rng);
    free(bw);
    free(w);
    free_setup(&a);
    free_setup(&b);
}
END_TEST

/* ---- the gradient hook (the reduction point of data-parallel training) ---- */

typedef struct hook_count {
    int calls;
    size_t count;
} hook_count;

static ram_status counting_hook(float *grad, size_t count, void *user) {
    hook_count *h = user;
    h->calls++;
    h->count = count;
    (void)grad;
    return RAM_OK;
}

static ram_status failing_hook(float *grad, size_t count, void *user) {
    (void)grad, (void)count, (void)user;
    return RAM_ERR_IO;
}

/* Two "ranks" in two threads, each with its own trainer and half of every
 * batch, average their gradients in the hook as MPI_Allreduce(SUM) / 2
 * would: the same sum, in the same order, on both. */
enum { RANKS = 2 };
typedef struct fake_world {
    pthread_barrier_t bar;
    float *slot[RANKS];
} fake_world;
typedef struct fake_rank {
    fake_world *world;
    int rank, steps;
    setup s;
    float *batches; /* steps x BATCH images */
    int *labels;
} fake_rank;

static ram_status allreduce_mean(float *grad, size_t count, void *user) {
    fake_rank *r = user;
    fake_world *w = r->world;
    memcpy(w->slot[r->rank], grad, sizeof(float) * count);
    pthread_barrier_wait(&w->bar);
    for (size_t i = 0; i < count; i++) {
        float sum = 0;
        for (int k = 0; k < RANKS; k++)
            sum += w->slot[k][i];
        grad[i] = sum / RANKS;
    }
    pthread_barrier_wait(&w->bar); /* nobody overwrites a slot still being read */
    return RAM_OK;
}

static void *fake_rank_main(void *arg) {
    fake_rank *r = arg;
    const int b = BATCH / RANKS;
    for (int k = 0; k < r->steps; k++)
        if (ram_trainer_train_batch(r->s.t, r->batches + ((size_t)k * BATCH + r->rank * b) * IMG,
                                    r->labels + k * BATCH + r->rank * b, b, NULL) != RAM_OK)
            return (void *)1;
    return NULL;
}

/* Decoupled weight decay: one step from the same start with and without it
 * ends apart by exactly the decay of the starting weights, lr * wd * w0
 * (the gradient is taken before the decay, so the optimizer's step is the
 * same), for Adam and SGD; the baseline's weights are not decayed; values
 * that would flip the weights are refused. */
START_TEST(test_weight_decay) {
    make_data();
    const float wd = 0.5f;
    for (int o = 0; o < 2; o++) {
        const ram_optimizer opt = o ? RAM_OPT_SGD : RAM_OPT_ADAM;
        const float lr = opt == RAM_OPT_SGD ? 0.05f : 3e-3f; /* make_setup's, at step 0 */
        setup a, b;
        make_setup(&a, 2, opt, RAM_CORE_LSTM);
        setup_weight_decay = wd;
        make_setup(&b, 2, opt, RAM_CORE_LSTM);
        setup_weight_decay = 0.0f;
        const size_t np = a.m->n_params;
        float *w0 = malloc(sizeof(float) * np);
        ck_assert_ptr_nonnull(w0);
        memcpy(w0, a.m->w, sizeof(float) * np);
        train_steps(&a, 1);
        train_steps(&b, 1);
        double off = 0, decayed = 0;
        for (size_t i = 0; i < np; i++) {
            const double expect = (double)a.m->w[i] - (double)lr * wd * w0[i];
            off = fmax(off, fabs(b.m->w[i] - expect));
            decayed = fmax(decayed, fabs(b.m->w[i] - a.m->w[i]));
        }
        ck_assert_msg(off < 1e-7, "decay off by %g", off);
        ck_assert_msg(decayed > 1e-4, "decay invisible (%g)", decayed);
        ck_assert_mem_eq(a.pol->bw, b.pol->bw, sizeof(float) * a.pol->n_bw);
        free(w0);
        free_setup(&a);
        free_setup(&b);
    }
    setup f;
    make_setup(&f, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ram_trainer *t = NULL;
    const float lrs[3][2] = {{0.1f, 0.1f}, {0.1f, 0.1f}, {1e-3f, 0.2f}};
    const float wds[3] = {-1e-3f, 10.0f, 5.0f}; /* < 0; lr * wd = 1; lr_final * wd = 1 */
    for (int c = 0; c < 3; c++) {
        tp.lr = lrs[c][0];
        tp.lr_final = lrs[c][1];
        tp.weight_decay = wds[c];
        ck_assert_int_eq(ram_trainer_create(f.m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(t);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "weight_decay"));
    }
    free_setup(&f);
}
END_TEST

/* The moving average of the weights: training is the same with and without
 * it (bits); swap_average() puts avg_k = avg_{k-1} + (1 - d_k)(w_k - avg_{k-1}),
 * d_k = min(decay, (1 + k) / (10 + k)), into the model (computed here in
 * double from the weights after each step) and the second swap restores the
 * trained weights bit for bit; with the average in, training and
 * checkpoints are refused; a checkpoint carries the average, and one
 * without it starts the average from its weights. */
START_TEST(test_weight_average) {
    make_data();
    char path[64], plain[64];
    snprintf(path, sizeof path, "check_trainer-avg-%ld.ckpt", (long)getpid());
    snprintf(plain, sizeof plain, "check_trainer-avg0-%ld.ckpt", (long)getpid());
    const float decay = 0.6f;
    setup a, b;
    make_setup(&a, 2, RAM_OPT_ADAM, RAM_CORE_RNN);
    setup_average_decay = decay;
    make_setup(&b, 2, RAM_OPT_ADAM, RAM_CORE_RNN);
    setup_average_decay = 0.0f;
    const size_t np = b.m->n_params;
    double *ref = malloc(sizeof(double) * np);
    float *w = malloc(sizeof(float) * np);
    ck_assert(ref && w);
    for (size_t i = 0; i < np; i++)
        ref[i] = b.m->w[i];
    for (int k = 0; k < 20; k++) { /* (1 + k) / (10 + k) passes 0.6 at k = 13: both branches */
        train_steps(&a, 1);
        train_steps(&b, 1);
        const double d = fmin(decay, (1.0 + k) / (10.0 + k));
        for (size_t i = 0; i < np; i++)
            ref[i] += (1 - d) * (b.m->w[i] - ref[i]);
    }
    ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * np);
    memcpy(w, b.m->w, sizeof(float) * np);
    ck_assert_int_eq(ram_trainer_average_in(b.t), 0);
    ck_assert_int_eq(ram_trainer_swap_average(b.t), RAM_OK);
    ck_assert_int_eq(ram_trainer_average_in(b.t), 1);
    double off = 0, apart = 0;
    for (size_t i = 0; i < np; i++) {
        off = fmax(off, fabs(b.m->w[i] - ref[i]));
        apart = fmax(apart, fabs(b.m->w[i] - w[i]));
    }
    ck_assert_msg(off < 1e-6, "average off by %g", off);
    ck_assert_msg(apart > 1e-4, "the average equals the weights (%g): nothing tested", apart);
    float *avg = malloc(sizeof(float) * np);
    ck_assert_ptr_nonnull(avg);
    memcpy(avg, b.m->w, sizeof(float) * np);
    /* With the average in: evaluating works, training and checkpoints do not. */
    double err;
    ck_assert_int_eq(ram_trainer_evaluate(b.t, data, labels, NDATA, &err), RAM_OK);
    ck_assert_int_eq(ram_trainer_train_batch(b.t, data, labels, BATCH, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "swap_average"));
    ck_assert_int_eq(ram_trainer_save_checkpoint(b.t, path, NULL, 0), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(ram_trainer_save_checkpoint(a.t, plain, NULL, 0), RAM_OK);
    ck_assert_int_eq(ram_trainer_load_checkpoint(b.t, plain, NULL, 0, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_mem_eq(b.m->w, avg, sizeof(float) * np);
    ck_assert_int_eq(ram_trainer_swap_average(b.t), RAM_OK);
    ck_assert_mem_eq(b.m->w, w, sizeof(float) * np);

    /* The checkpoint carries the average... */
    ck_assert_int_eq(ram_trainer_save_checkpoint(b.t, path, NULL, 0), RAM_OK);
    setup c;
    setup_average_decay = decay;
    make_setup(&c, 1, RAM_OPT_ADAM, RAM_CORE_RNN);
    ck_assert_int_eq(ram_trainer_load_checkpoint(c.t, path, NULL, 0, NULL), RAM_OK);
    ck_assert_mem_eq(c.m->w, w, sizeof(float) * np);
    ck_assert_int_eq(ram_trainer_swap_average(c.t), RAM_OK);
    ck_assert_mem_eq(c.m->w, avg, sizeof(float) * np);
    ck_assert_int_eq(ram_trainer_swap_average(c.t), RAM_OK);
    /* ...one without it starts the average from its weights. */
    ck_assert_int_eq(ram_trainer_load_checkpoint(c.t, plain, NULL, 0, NULL), RAM_OK);
    ck_assert_int_eq(ram_trainer_swap_average(c.t), RAM_OK);
    ck_assert_mem_eq(c.m->w, w, sizeof(float) * np);
    free_setup(&c);
    setup_average_decay = 0.0f;

    /* Off: no swapping; out of [0, 1): refused. */
    ck_assert_int_eq(ram_trainer_swap_average(a.t), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_swap_average(NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_average_in(NULL), 0);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ram_trainer *t = NULL;
    const float bad[3] = {-0.1f, 1.0f, NAN};
    for (int i = 0; i < 3; i++) {
        tp.average_decay = bad[i];
        ck_assert_int_eq(ram_trainer_create(a.m, a.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(t);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "average_decay"));
    }
    free(ref);
    free(w);
    free(avg);
    free_setup(&a);
    free_setup(&b);
    unlink(path);
    unlink(plain);
}
END_TEST

START_TEST(test_gradient_hook) {
    make_data();
    /* An identity hook changes nothing, is called once per step, sees it all:
     * with 1, 2 and 3 workers (the sum into the hook's buffer differs), and
     * without a baseline (no baseline part in the buffer). */
    setup a, b;
    const struct {
        int threads;
        ram_baseline_type baseline;
    } cases[] = {{1, RAM_BASELINE_NONE},
                 {1, RAM_BASELINE_LINEAR},
                 {3, RAM_BASELINE_LINEAR},
                 {2, RAM_BASELINE_LINEAR}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int threads = cases[c].threads;
        setup_baseline = cases[c].baseline;
        make_setup(&a, threads, RAM_OPT_ADAM, RAM_CORE_LSTM);
        make_setup(&b, threads, RAM_OPT_ADAM, RAM_CORE_LSTM);
        setup_baseline = RAM_BASELINE_LINEAR;
        hook_count hc = {0, 0};
        ck_assert_int_eq(ram_trainer_set_gradient_hook(a.t, counting_hook, &hc), RAM_OK);
        train_steps(&a, 3);
        train_steps(&b, 3);
        ck_assert_int_eq(hc.calls, 3);
        ck_assert_uint_eq(hc.count, ram_trainer_gradient_size(a.t));
        ck_assert_uint_eq(hc.count, a.m->n_params + a.pol->n_bw);
        ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * a.m->n_params);
        if (a.pol->n_bw) /* no baseline: no weights, bw is NULL */
            ck_assert_mem_eq(a.pol->bw, b.pol->bw, sizeof(float) * a.pol->n_bw);
        if (c + 1 < sizeof cases / sizeof *cases) { /* the last pair is used below */
            free_setup(&a);
            free_setup(&b);
        }
    }
    /* A failing hook fails the step and changes nothing. */
    ck_assert_int_eq(ram_trainer_set_gradient_hook(a.t, failing_hook, NULL), RAM_OK);
    int y[BATCH];
    memcpy(y, labels, sizeof y);
    ck_assert_int_eq(ram_trainer_train_batch(a.t, data, y, BATCH, NULL), RAM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "gradient hook"));
    ck_assert_int_eq(ram_trainer_set_gradient_hook(a.t, NULL, NULL), RAM_OK);
    train_steps(&a, 2);
    train_steps(&b, 2);
    ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * a.m->n_params);
    ck_assert_int_eq(ram_trainer_set_gradient_hook(NULL, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_uint_eq(ram_trainer_gradient_size(NULL), 0);
    free_setup(&a);
    free_setup(&b);

    /* Averaging: RANKS trainers with BATCH / RANKS images each end where one
     * trainer with the whole BATCH ends.  Location noise comes from each
     * rank's own stream, so it is taken out (smallest std, no REINFORCE
     * term); SGD keeps rounding differences from being amplified. */
    enum { STEPS = 5 };
    static float batches[STEPS * BATCH * IMG];
    static int ys[STEPS * BATCH];
    for (int k = 0; k < STEPS * BATCH; k++) {
        memcpy(batches + (size_t)k * IMG, data + (size_t)(k * 7 % NDATA) * IMG,
               sizeof(float) * IMG);
        ys[k] = labels[k * 7 % NDATA];
    }
    fake_world world;
    pthread_barrier_init(&world.bar, NULL, RANKS);
    fake_rank ranks[RANKS];
    setup ref;
    setup *all[RANKS + 1] = {&ranks[0].s, &ranks[1].s, &ref};
    for (int k = 0; k <= RANKS; k++) {
        make_setup(all[k], 1, RAM_OPT_SGD, RAM_CORE_LSTM);
        ram_policy_free(all[k]->pol);
        ram_trainer_free(all[k]->t);
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        pp.std = 1e-4f;
        pp.reward_scale = 0.0f;
        pp.seed = 100 + k; /* a stream per rank */
        ck_assert_int_eq(ram_policy_create(&pp, all[k]->m, &all[k]->pol), RAM_OK);
        ram_trainer_params tp;
        ram_trainer_params_init(&tp);
        tp.optimizer = RAM_OPT_SGD;
        tp.lr = 0.05f;
        tp.max_batch = BATCH;
        ck_assert_int_eq(ram_trainer_create(all[k]->m, all[k]->pol, &tp, &all[k]->t), RAM_OK);
    }
    pthread_t th[RANKS];
    for (int k = 0; k < RANKS; k++) {
        world.slot[k] = malloc(sizeof(float) * ram_trainer_gradient_size(ref.t));
        ranks[k] = (fake_rank){&world, k, STEPS, ranks[k].s, batches, ys};
        ck_assert_int_eq(ram_trainer_set_gradient_hook(ranks[k].s.t, allreduce_mean, &ranks[k]),
                         RAM_OK);
        ck_assert_int_eq(pthread_create(&th[k], NULL, fake_rank_main, &ranks[k]), 0);
    }
    for (int k = 0; k < STEPS; k++)
        ck_assert_int_eq(ram_trainer_train_batch(ref.t, batches + (size_t)k * BATCH * IMG,
                                                 ys + k * BATCH, BATCH, NULL),
                         RAM_OK);
    for (int k = 0; k < RANKS; k++) {
        void *ret;
        pthread_join(th[k], &ret);
        ck_assert_ptr_null(ret);
    }
    const size_t np = ref.m->n_params;
    /* The ranks hold the very same model... */
    ck_assert_mem_eq(ranks[0].s.m->w, ranks[1].s.m->w, sizeof(float) * np);
    /* ...which is the whole-batch model up to float rounding, and has moved. */
    double maxdiff = 0, moved = 0;
    ram_model *fresh;
    ram_model_params mp;
    mp.struct_size = sizeof mp;
    ram_model_get_params(ref.m, &mp);
    ck_assert_int_eq(ram_model_create(&mp, &fresh), RAM_OK);
    for (size_t i = 0; i < np; i++) {
        maxdiff = fmax(maxdiff, fabs(ranks[0].s.m->w[i] - ref.m->w[i]));
        moved = fmax(moved, fabs(ref.m->w[i] - fresh->w[i]));
    }
    ram_model_free(fresh);
    ck_assert_double_lt(maxdiff, 1e-5);
    ck_assert_double_gt(moved, 1e-3);
    for (int k = 0; k <= RANKS; k++)
        free_setup(all[k]);
    for (int k = 0; k < RANKS; k++)
        free(world.slot[k]);
    pthread_barrier_destroy(&world.bar);
}
END_TEST

START_TEST(test_evaluate_matches_classify) {
    make_data();
    setup s;
    make_setup(&s, 2, RAM_OPT_ADAM, RAM_CORE_RNN);
    train_steps(&s, 8);
    /* NDATA = 48 images, max_batch 16: evaluate splits into 3 batches over 2
     * threads; classify sees them all at once. */
    ram_state *st;
    ck_assert_int_eq(ram_state_create(s.m, NDATA, &st), RAM_OK);
    int pred[NDATA];
    ck_assert_int_eq(ram_model_classify(s.m, st, data, NDATA, pred, NULL, NULL), RAM_OK);
    int wrong = 0;
    for (int i = 0; i < NDATA; i++)
        wrong += pred[i] != labels[i];
    double err = -1;
    ck_assert_int_eq(ram_trainer_evaluate(s.t, data, labels, NDATA, &err), RAM_OK);
    ck_assert_double_eq(err, wrong / (double)NDATA);
    /* Labels that disagree with the predictions change the error. */
    int flipped[NDATA];
    for (int i = 0; i < NDATA; i++)
        flipped[i] = (pred[i] + (i < 10)) % NCLASS;
    ck_assert_int_eq(ram_trainer_evaluate(s.t, data, flipped, NDATA, &err), RAM_OK);
    ck_assert_double_eq(err, 10.0 / NDATA);
    /* Evaluation does not train. */
    ck_assert_int_eq(ram_trainer_steps(s.t), 8);
    ram_state_free(st);
    free_setup(&s);
}
END_TEST

START_TEST(test_stats_and_schedule) {
    make_data();
    setup s;
    make_setup(&s, 1, RAM_OPT_SGD, RAM_CORE_RNN); /* lr 0.05 -> 0.005 over 12 steps */
    ram_train_stats st;
    for (int k = 0; k < 14; k++) {
        ck_assert_int_eq(ram_trainer_train_batch(s.t, data, labels, BATCH, &st), RAM_OK);
        const double want_lr = k >= 12 ? 0.005 : 0.05 + (0.005 - 0.05) * k / 12.0;
        ck_assert_double_eq_tol(st.lr, want_lr, 1e-6);
        ck_assert_double_eq_tol(st.loss, st.nll + st.baseline_mse + st.reinforce, 1e-5);
        ck_assert(st.accuracy >= 0 && st.accuracy <= 1);
        ck_assert_float_eq(st.reward, st.accuracy); /* discount 1: reward = correct */
        ck_assert(st.nll > 0 && st.grad_norm > 0 && st.baseline_mse >= 0);
    }
    free_setup(&s);
}
END_TEST

/* ---- (c) learning where to look ---- */

/* 32 x 32 images.  The class is one of four 5 x 5 shapes drawn in the
 * top-left corner (centre pixel 8, 8, jittered by up to 2 pixels); the other
 * three corners hold decoys, random shapes of random class.  An 8 x 8
 * glimpse at the centre sees none of them and one in a wrong corner sees a
 * decoy, so both give chance (0.25): the policy must learn, from the reward
 * alone, which corner to look at.  (A variant where a cue at the centre says
 * which corner holds the shape needs a policy conditioned on what the first
 * glimpse saw; with this model size it did not learn that reliably within
 * seconds: the first glimpse, driven by the shared location bias, settles on
 * one fixed corner first, and from there the second is too far away for the
 * policy noise to explore.) */
enum { LS = 32, LIMG = LS * LS, LCLASS = 4, LBATCH = 32, LSTEPS = 2000, LTEST = 1000 };

static const char *const shapes[LCLASS][5] = {
    {"..#..", "..#..", "#####", "..#..", "..#.."}, /* cross */
    {"#####", "#...#", "#...#", "#...#", "#####"}, /* hollow square */
    {"#....", ".#...", "..#..", "...#.", "....#"}, /* diagonal */
    {".....", ".....", "#####", "#####", "....."}, /* bar */
};

static void draw_shape(float *img, int cls, int cy, int cx) {
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++)
            if (shapes[cls][r][c] == '#') img[(cy - 2 + r) * LS + cx - 2 + c] = 1.0f;
}

static void corner_image(float *img, int *label) {
    memset(img, 0, sizeof(float) * LIMG);
    *label = (int)(lcg_u32() % LCLASS);
    for (int corner = 0; corner < 4; corner++) {
        int cls = corner == 0 ? *label : (int)(lcg_u32() % LCLASS);
        int cy = (corner / 2 ? LS - 8 : 8) + (int)(lcg_u32() % 5) - 2;
        int cx = (corner % 2 ? LS - 8 : 8) + (int)(lcg_u32() % 5) - 2;
        draw_shape(img, cls, cy, cx);
    }
}

START_TEST(test_learns_where_to_look) {
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = LS;
    mp.glimpse.patch = 8;
    mp.glimpse_hidden = mp.loc_hidden = 32;
    mp.glimpse_out = mp.core_hidden = 64;
    mp.glimpses = 2;
    mp.classes = LCLASS;
    mp.loc_std = 0.2f;
    mp.loc_range_pixels = 0; /* +-1 is the image edge: every corner is reachable */
    mp.seed = 3;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&mp, &m), RAM_OK);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = 13;
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.lr = tp.lr_final = 3e-3f;
    tp.max_batch = LBATCH;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);

    static float batch[LBATCH * LIMG];
    int y[LBATCH];
    lcg_state = 2024;
    for (int step = 0; step < LSTEPS; step++) {
        for (int i = 0; i < LBATCH; i++)
            corner_image(batch + i * LIMG, &y[i]);
        ck_assert_int_eq(ram_trainer_train_batch(t, batch, y, LBATCH, NULL), RAM_OK);
    }

    /* Fresh test images; the mean policy against looking at the centre. */
    float *test = malloc(sizeof(float) * LTEST * LIMG), *locs = malloc(sizeof(float) * LTEST * 4);
    int labels_t[LTEST], pred[LTEST];
    lcg_state = 99;
    for (int i = 0; i < LTEST; i++)
        corner_image(test + i * LIMG, &labels_t[i]);
    ram_state *st;
    ck_assert_int_eq(ram_state_create(m, LTEST, &st), RAM_OK);
    ck_assert_int_eq(ram_model_classify(m, st, test, LTEST, pred, NULL, locs), RAM_OK);
    int learned = 0, centre = 0;
    double x1 = 0, y1 = 0;
    for (int i = 0; i < LTEST; i++) {
        learned += pred[i] == labels_t[i];
        x1 += locs[4 * i] / LTEST;
        y1 += locs[4 * i + 1] / LTEST;
    }
    ck_assert_int_eq(
        ram_model_classify_ex(m, st, test, LTEST, RAM_LOCS_CENTER, NULL, pred, NULL, NULL), RAM_OK);
    for (int i = 0; i < LTEST; i++)
        centre += pred[i] == labels_t[i];
    const double acc = learned / (double)LTEST, acc_centre = centre / (double)LTEST;
    ck_assert_msg(acc >= 0.85 && acc - acc_centre >= 0.3,
                  "learned policy %.3f, centre %.3f (first glimpse at %.2f, %.2f)", acc, acc_centre,
                  x1, y1);
    /* It looks where the answer is: the top-left corner (x, y < 0). */
    ck_assert_msg(x1 < -0.25 && y1 < -0.25, "first glimpse at %.2f, %.2f", x1, y1);

    free(test), free(locs);
    ram_state_free(st);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

static char blas_warning[512];
static void keep_warning(ram_log_level level, const char *message, void *user) {
    (void)user;
    if (level == RAM_LOG_WARN && strstr(message, "threads of its own"))
        snprintf(blas_warning, sizeof blas_warning, "%s", message);
}

/* OpenBLAS with threads of its own inside a multi-threaded trainer's
 * workers: the trainer says so, once, naming the remedy; with one BLAS
 * thread, or one worker, nothing is said.  (The warning is once a process:
 * under CK_FORK=no, valgrind's mode, an earlier test may have drawn it.) */
START_TEST(test_blas_threads_warning) {
    int slow;
    if (strncmp(ram_blas_info(&slow), "OpenBLAS", 8) != 0) return; /* another CBLAS: no threads */
    const char *fork = getenv("CK_FORK");
    const bool fresh = !(fork && !strcmp(fork, "no"));
    make_data();
    ram_set_log_callback(keep_warning, NULL);
    setup a, b;
    ram_set_blas_threads(1);
    make_setup(&b, 2, RAM_OPT_SGD, RAM_CORE_RNN);
    ck_assert_int_eq(ram_trainer_train_batch(b.t, data, labels, BATCH, NULL), RAM_OK);
    ck_assert_str_eq(blas_warning, "");
    ram_set_blas_threads(2);
    make_setup(&a, 1, RAM_OPT_SGD, RAM_CORE_RNN);
    ck_assert_int_eq(ram_trainer_train_batch(a.t, data, labels, BATCH, NULL), RAM_OK);
    ck_assert_str_eq(blas_warning, "");
    ck_assert_int_eq(ram_trainer_train_batch(b.t, data, labels, BATCH, NULL), RAM_OK);
    if (fresh) {
        ck_assert_ptr_nonnull(strstr(blas_warning, "ram_set_blas_threads(1)"));
        blas_warning[0] = '\0';
        ck_assert_int_eq(ram_trainer_train_batch(b.t, data, labels, BATCH, NULL), RAM_OK);
        ck_assert_str_eq(blas_warning, ""); /* once */
    }
    ram_set_blas_threads(1);
    ram_set_log_callback(NULL, NULL);
    free_setup(&a);
    free_setup(&b);
}
END_TEST

static Suite *trainer_suite(void) {
    Suite *s = suite_create("trainer");
    TCase *ck = tcase_create("checkpoint");
    /* {1, 2 threads} x {SGD, Adam} x {RNN, LSTM} */
    tcase_add_loop_test(ck, test_resume_equals_uninterrupted, 0, 8);
    tcase_add_test(ck, test_checkpoint_mismatch);
    suite_add_tcase(s, ck);
    TCase *th = tcase_create("steps");
    tcase_add_test(th, test_threads_agree);
    tcase_add_test(th, test_tiny_batch_with_threads);
    tcase_add_test(th, test_bf16_products);
    tcase_add_test(th, test_steps_allocate_nothing);
    tcase_add_test(th, test_failed_step_changes_nothing);
    tcase_add_test(th, test_evaluate_matches_classify);
    tcase_add_test(th, test_gradient_hook);
    tcase_add_test(th, test_weight_decay);
    tcase_add_test(th, test_weight_average);
    tcase_add_test(th, test_stats_and_schedule);
    tcase_add_test(th, test_blas_threads_warning);
    suite_add_tcase(s, th);
    TCase *learn = tcase_create("learning");
    /* Hundreds of steps of the paths the other tests take a few of: left
     * out of scripts/test.sh's valgrind pass, where it alone took 7 min. */
    tcase_set_tags(learn, "long");
    tcase_add_test(learn, test_learns_where_to_look);
    suite_add_tcase(s, learn);
    return s;
}

int main(void) {
    return run_suite(trainer_suite());
}
