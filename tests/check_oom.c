/* Out of memory: every allocation libram makes is failed in turn.  For each
 * call below (create, load, train, save, checkpoints, and a whole session
 * chaining them), the k-th allocation fails for k = 1, 2, ... until the call
 * succeeds; every failing run must return RAM_ERR_OUT_OF_MEMORY with a
 * message, free everything it had allocated, leave its out-pointer and the
 * objects and files it was given unchanged.
 *
 * The library's objects are linked into this test with
 * -Wl,--wrap=malloc,calloc,realloc,aligned_alloc,free, so the allocations libram makes
 * (not those inside libc, OpenBLAS or Check) pass through the wrappers below.
 * They only count and fail inside a "window" around the call under test: no
 * ck_assert inside one, since Check is linked statically and allocates too. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include "check_scratch.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void __real_free(void *p);

static bool window;  /* count (and maybe fail) allocations */
static long fail_at; /* fail the fail_at-th allocation in the window (0: none) */
static long counted; /* allocations attempted in the window */
static long live;    /* allocations made in the window minus blocks freed */

static bool fail_now(void) {
    return window && ++counted == fail_at;
}

void *__wrap_malloc(size_t n) {
    if (fail_now()) return NULL;
    void *p = __real_malloc(n);
    if (window && p) live++;
    return p;
}
void *__wrap_calloc(size_t k, size_t n) {
    if (fail_now()) return NULL;
    void *p = __real_calloc(k, n);
    if (window && p) live++;
    return p;
}
void *__wrap_realloc(void *p, size_t n) {
    if (fail_now()) return NULL;
    void *q = __real_realloc(p, n);
    if (window && q && !p) live++;
    return q;
}
void *__wrap_aligned_alloc(size_t align, size_t n) {
    if (fail_now()) return NULL;
    void *p = __real_aligned_alloc(align, n);
    if (window && p) live++;
    return p;
}
void __wrap_free(void *p) {
    if (window && p) live--;
    __real_free(p);
}

/* ---- the sweep ---- */

typedef struct op {
    const char *name;
    ram_status (*run)(void *ctx); /* the call; keeps what it made in ctx */
    void (*release)(void *ctx);   /* frees what a successful run made */
    bool (*unchanged)(void *ctx); /* after a failure: inputs as they were */
    void *ctx;
} op;

static long total_points;

/* Returns the number of allocation points failed (the successful run's count). */
static long sweep(const op *o) {
    for (long k = 1;; k++) {
        ram_clear_error();
        counted = live = 0;
        fail_at = k;
        window = true;
        ram_status s = o->run(o->ctx);
        window = false;
        fail_at = 0;
        if (s == RAM_OK) {
            /* Succeeded because it needs fewer than k allocations. */
            ck_assert_msg(counted < k, "%s: succeeded although allocation %ld failed", o->name, k);
            const long made = live;
            window = true;
            o->release(o->ctx);
            window = false;
            ck_assert_msg(live == 0, "%s: %ld of %ld blocks not released by the free function",
                          o->name, live, made);
            total_points += k - 1;
            printf("oom: %-34s %3ld allocations, each failure handled\n", o->name, k - 1);
            return k - 1;
        }
        ck_assert_msg(s == RAM_ERR_OUT_OF_MEMORY, "%s: allocation %ld failed: status %d (%s)",
                      o->name, k, s, ram_last_error());
        ck_assert_msg(ram_last_error()[0] != '\0', "%s: no message", o->name);
        ck_assert_msg(live == 0, "%s: allocation %ld failed: %ld blocks leaked", o->name, k, live);
        ck_assert_msg(!o->unchanged || o->unchanged(o->ctx),
                      "%s: allocation %ld failed: an input was changed", o->name, k);
    }
}

/* ---- fixtures ---- */

enum { SIDE = 12, IMG = SIDE * SIDE, N = 8, K = 3 };
static float images[N * IMG];
static int labels[N];
static char dir[64];

static void make_params(ram_model_params *mp, ram_core_type core, ram_glimpse_form form) {
    ram_model_params_init(mp);
    mp->height = mp->width = SIDE;
    mp->glimpse.patch = 4;
    mp->glimpse.depth = 2;
    mp->glimpse_hidden = mp->loc_hidden = 8;
    mp->glimpse_out = mp->core_hidden = 16;
    mp->glimpses = 3;
    mp->classes = K;
    mp->core = core;
    mp->form = form;
}

typedef struct ctx {
    ram_model_params mp;
    ram_policy_params pp;
    ram_trainer_params tp;
    ram_model *m, *made_m;
    ram_policy *pol, *made_pol;
    ram_trainer *t, *made_t;
    ram_state *made_st;
    ram_glimpse *made_g;
    char path[128];
    unsigned char *before; /* file bytes or weights before the call */
    size_t before_len;
    float *avg_before;   /* the trainer's weight average before the call */
    unsigned char *file; /* a checkpoint's bytes, for the in-memory loader */
    size_t file_len;
    ram_state *st; /* for classify */
    long steps;
    double err;
} ctx;

/* The fixture's model has DRAM's parts (test_oom_dram): their buffers are
 * allocations too. */
static bool with_dram;

static void fixture(ctx *c, int threads) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N * IMG; i++)
        images[i] = (float)((i * 37) % 101) / 100.0f;
    for (int i = 0; i < N; i++)
        labels[i] = i % K;
    make_params(&c->mp, RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    if (with_dram) {
        c->mp.form = RAM_GLIMPSE_MULTIPLICATIVE;
        c->mp.core_layers = 2;
        c->mp.upper_core = RAM_CORE_LSTM;
        c->mp.context = 4;
    }
    ram_policy_params_init(&c->pp);
    ram_trainer_params_init(&c->tp);
    c->tp.max_batch = N;
    c->tp.threads = threads;
    c->tp.average_decay = 0.9f; /* its buffers are allocations too */
    ck_assert_int_eq(ram_model_create(&c->mp, &c->m), RAM_OK);
    ck_assert_int_eq(ram_policy_create(&c->pp, c->m, &c->pol), RAM_OK);
    ck_assert_int_eq(ram_trainer_create(c->m, c->pol, &c->tp, &c->t), RAM_OK);
    ck_assert_int_eq(ram_trainer_train_batch(c->t, images, labels, N, NULL), RAM_OK);
    snprintf(c->path, sizeof c->path, "%s/file", dir);
}

static void unfixture(ctx *c) {
    ram_trainer_free(c->t);
    ram_policy_free(c->pol);
    ram_model_free(c->m);
    free(c->before);
    free(c->avg_before);
    unlink(c->path);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *d = malloc(*len);
    memcpy(d, buf, *len);
    return d;
}

/* No temporary file left next to the target. */
static bool no_temps(void) {
    DIR *d = opendir(dir);
    bool clean = true;
    struct dirent *e;
    while (d && (e = readdir(d)))
        clean &= strstr(e->d_name, ".tmp-") == NULL;
    if (d) closedir(d);
    return clean;
}

static bool file_unchanged(void *p) {
    ctx *c = p;
    FILE *f = fopen(c->path, "rb");
    if (!f) return false;
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return no_temps() && n == c->before_len && memcmp(buf, c->before, n) == 0;
}

static bool no_temps_ctx(void *p) {
    (void)p;
    return no_temps();
}

/* Remember the trainer's weights and their average (trainer_unchanged). */
static void keep_trainer(ctx *c) {
    const size_t n = sizeof(float) * c->m->n_params;
    c->steps = ram_trainer_steps(c->t);
    if (!c->before) c->before = malloc(n);
    if (!c->avg_before) c->avg_before = malloc(n);
    ck_assert(c->before && c->avg_before);
    memcpy(c->before, c->m->w, n);
    ck_assert_int_eq(ram_trainer_swap_average(c->t), RAM_OK);
    memcpy(c->avg_before, c->m->w, n);
    ck_assert_int_eq(ram_trainer_swap_average(c->t), RAM_OK);
}

static bool trainer_unchanged(void *p) {
    ctx *c = p;
    const size_t n = sizeof(float) * c->m->n_params;
    if (ram_trainer_steps(c->t) != c->steps || memcmp(c->m->w, c->before, n) != 0) return false;
    bool same = ram_trainer_swap_average(c->t) == RAM_OK && memcmp(c->m->w, c->avg_before, n) == 0;
    return ram_trainer_swap_average(c->t) == RAM_OK && same;
}

static bool made_nothing(void *p) {
    ctx *c = p;
    return !c->made_m && !c->made_pol && !c->made_t && !c->made_st && !c->made_g;
}

/* ---- the calls ---- */

static ram_status run_glimpse_create(void *p) {
    ctx *c = p;
    return ram_glimpse_create(&c->mp.glimpse, &c->made_g);
}
static ram_status run_model_create(void *p) {
    ctx *c = p;
    return ram_model_create(&c->mp, &c->made_m);
}
static ram_status run_state_create(void *p) {
    ctx *c = p;
    return ram_state_create(c->m, N, &c->made_st);
}
static ram_status run_state_create_threads(void *p) {
    ctx *c = p; /* 3 threads, and a batch large enough for per-thread workspaces */
    return ram_state_create_threads(c->m, 2 * N, 3, &c->made_st);
}
static ram_status run_policy_create(void *p) {
    ctx *c = p;
    return ram_policy_create(&c->pp, c->m, &c->made_pol);
}
static ram_status run_trainer_create(void *p) {
    ctx *c = p;
    return ram_trainer_create(c->m, c->pol, &c->tp, &c->made_t);
}
static ram_status run_model_load(void *p) {
    ctx *c = p;
    return ram_model_load(c->path, &c->made_m);
}
static ram_status run_model_load_memory(void *p) {
    ctx *c = p;
    return ram_model_load_memory(c->before, c->before_len, &c->made_m);
}
static void release_made(void *p) {
    ctx *c = p;
    ram_glimpse_free(c->made_g);
    ram_model_free(c->made_m);
    ram_state_free(c->made_st);
    ram_trainer_free(c->made_t); /* before the policy it borrows */
    ram_policy_free(c->made_pol);
    c->made_g = NULL, c->made_m = NULL, c->made_st = NULL, c->made_t = NULL, c->made_pol = NULL;
}
static void release_nothing(void *p) {
    (void)p;
}

static ram_status run_model_save(void *p) {
    ctx *c = p;
    return ram_model_save(c->m, c->path);
}
static ram_status run_save_checkpoint(void *p) {
    ctx *c = p;
    return ram_trainer_save_checkpoint(c->t, c->path, "user", 4);
}
static ram_status run_load_checkpoint(void *p) {
    ctx *c = p;
    return ram_trainer_load_checkpoint(c->t, c->path, NULL, 0, NULL);
}
static ram_status run_load_checkpoint_memory(void *p) {
    ctx *c = p;
    return ram_trainer_load_checkpoint_memory(c->t, c->file, c->file_len, NULL, 0, NULL);
}
static ram_status run_train(void *p) {
    ctx *c = p;
    ram_status s = ram_trainer_train_batch(c->t, images, labels, N, NULL);
    if (!s) s = ram_trainer_evaluate(c->t, images, labels, N, &c->err);
    return s;
}
static ram_status run_classify(void *p) {
    ctx *c = p;
    int pred[N];
    return ram_model_classify(c->m, c->st, images, N, pred, NULL, NULL);
}

/* A whole session as a client writes it: create, train, save the model and a
 * checkpoint, load both back into new objects, free everything; the first
 * failure is returned after everything made so far is freed. */
static ram_status run_session(void *p) {
    ctx *c = p;
    ram_model *m = NULL, *m2 = NULL;
    ram_policy *pol = NULL, *pol2 = NULL;
    ram_trainer *t = NULL, *t2 = NULL;
    ram_state *st = NULL;
    char model_path[160];
    snprintf(model_path, sizeof model_path, "%s.ram", c->path);
    int pred[N];
    ram_status s;
    if ((s = ram_model_create(&c->mp, &m)) || (s = ram_policy_create(&c->pp, m, &pol)) ||
        (s = ram_trainer_create(m, pol, &c->tp, &t)) ||
        (s = ram_trainer_train_batch(t, images, labels, N, NULL)) ||
        (s = ram_trainer_train_batch(t, images, labels, N / 2, NULL)) ||
        (s = ram_model_save(m, model_path)) ||
        (s = ram_trainer_save_checkpoint(t, c->path, NULL, 0)) ||
        (s = ram_model_load(model_path, &m2)) || (s = ram_state_create(m2, N, &st)) ||
        (s = ram_model_classify(m2, st, images, N, pred, NULL, NULL)) ||
        (s = ram_policy_create(&c->pp, m2, &pol2)) ||
        (s = ram_trainer_create(m2, pol2, &c->tp, &t2)) ||
        (s = ram_trainer_load_checkpoint(t2, c->path, NULL, 0, NULL))) {
        /* the first failure: clean up below */
    }
    ram_state_free(st);
    ram_trainer_free(t2);
    ram_policy_free(pol2);
    ram_model_free(m2);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
    unlink(model_path);
    return s;
}

/* ---- tests ---- */

START_TEST(test_oom_create) {
    ctx c;
    fixture(&c, 1);
    const op ops[] = {
        {"glimpse_create", run_glimpse_create, release_made, made_nothing, &c},
        {"model_create (LSTM, additive)", run_model_create, release_made, made_nothing, &c},
        {"state_create", run_state_create, release_made, made_nothing, &c},
        {"state_create_threads (3)", run_state_create_threads, release_made, made_nothing, &c},
        {"policy_create", run_policy_create, release_made, made_nothing, &c},
        {"trainer_create (1 thread)", run_trainer_create, release_made, made_nothing, &c},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        ck_assert_int_gt(sweep(&ops[i]), 0);
    make_params(&c.mp, RAM_CORE_RNN, RAM_GLIMPSE_CONCAT);
    const op rnn = {"model_create (RNN, concat)", run_model_create, release_made, made_nothing, &c};
    ck_assert_int_gt(sweep(&rnn), 0);
    unfixture(&c);

    fixture(&c, 3);
    const op threads = {"trainer_create (3 threads)", run_trainer_create, release_made,
                        made_nothing, &c};
    ck_assert_int_gt(sweep(&threads), 0);
    unfixture(&c);
}
END_TEST

START_TEST(test_oom_files) {
    ctx c;
    fixture(&c, 2);
    /* Saving over an existing file: on failure it is intact, no temp file. */
    ck_assert_int_eq(ram_model_save(c.m, c.path), RAM_OK);
    c.before = slurp(c.path, &c.before_len);
    const op save = {"model_save", run_model_save, release_nothing, file_unchanged, &c};
    ck_assert_int_gt(sweep(&save), 0);
    const op load = {"model_load", run_model_load, release_made, made_nothing, &c};
    ck_assert_int_gt(sweep(&load), 0);
    const op loadm = {"model_load_memory", run_model_load_memory, release_made, made_nothing, &c};
    ck_assert_int_gt(sweep(&loadm), 0);

    ck_assert_int_eq(ram_trainer_save_checkpoint(c.t, c.path, "user", 4), RAM_OK);
    free(c.before);
    c.before = slurp(c.path, &c.before_len);
    const op csave = {"trainer_save_checkpoint", run_save_checkpoint, release_nothing,
                      file_unchanged, &c};
    ck_assert_int_gt(sweep(&csave), 0);

    /* Loading a checkpoint: on failure the trainer is as it was. */
    c.file = c.before;
    c.file_len = c.before_len;
    ck_assert_int_eq(ram_trainer_train_batch(c.t, images, labels, N, NULL), RAM_OK);
    c.before = NULL;
    keep_trainer(&c);
    const op cload = {"trainer_load_checkpoint", run_load_checkpoint, release_nothing,
                      trainer_unchanged, &c};
    ck_assert_int_gt(sweep(&cload), 0);
    /* The sweep's last run succeeded: back to the state before it. */
    ck_assert_int_eq(ram_trainer_steps(c.t), c.steps - 1);
    ck_assert_int_eq(ram_trainer_train_batch(c.t, images, labels, N, NULL), RAM_OK);
    keep_trainer(&c);
    const op cloadm = {"trainer_load_checkpoint_memory", run_load_checkpoint_memory,
                       release_nothing, trainer_unchanged, &c};
    ck_assert_int_gt(sweep(&cloadm), 0);
    free(c.file);
    unfixture(&c);
}
END_TEST

START_TEST(test_oom_steps) {
    /* Training, evaluation and classification allocate nothing: the first
     * run already succeeds with every allocation failing. */
    ctx c;
    fixture(&c, 2);
    const op train = {"train_batch + evaluate (2 threads)", run_train, release_nothing, NULL, &c};
    ck_assert_int_eq(sweep(&train), 0);
    ck_assert_int_eq(ram_state_create(c.m, N, &c.st), RAM_OK);
    const op classify = {"model_classify", run_classify, release_nothing, NULL, &c};
    ck_assert_int_eq(sweep(&classify), 0);
    ram_state_free(c.st);
    unfixture(&c);
}
END_TEST

START_TEST(test_oom_session) {
    ctx c;
    fixture(&c, 2);
    const op session = {"session (create..train..save..load)", run_session, release_nothing,
                        no_temps_ctx, &c};
    ck_assert_int_gt(sweep(&session), 10);
    unfixture(&c);
}
END_TEST

/* DRAM's model: creating, loading and a whole session fail cleanly at
 * every allocation, and steps allocate nothing. */
START_TEST(test_oom_dram) {
    with_dram = true;
    ctx c;
    fixture(&c, 2);
    const op ops[] = {
        {"model_create (DRAM)", run_model_create, release_made, made_nothing, &c},
        {"state_create (DRAM)", run_state_create, release_made, made_nothing, &c},
        {"state_create_threads (DRAM)", run_state_create_threads, release_made, made_nothing, &c},
        {"trainer_create (DRAM)", run_trainer_create, release_made, made_nothing, &c},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        ck_assert_int_gt(sweep(&ops[i]), 0);
    ck_assert_int_eq(ram_model_save(c.m, c.path), RAM_OK);
    const op load = {"model_load (DRAM)", run_model_load, release_made, made_nothing, &c};
    ck_assert_int_gt(sweep(&load), 0);
    const op train = {"train_batch + evaluate (DRAM)", run_train, release_nothing, NULL, &c};
    ck_assert_int_eq(sweep(&train), 0);
    const op session = {"session (DRAM)", run_session, release_nothing, no_temps_ctx, &c};
    ck_assert_int_gt(sweep(&session), 10);
    unfixture(&c);
    with_dram = false;
}
END_TEST

static Suite *oom_suite(void) {
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_oom_create);
    tcase_add_test(tc, test_oom_files);
    tcase_add_test(tc, test_oom_steps);
    tcase_add_test(tc, test_oom_session);
    tcase_add_test(tc, test_oom_dram);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    snprintf(dir, sizeof dir, "check_oom.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    int rc = run_suite(oom_suite());
    remove_dir(dir);
    return rc;
}
