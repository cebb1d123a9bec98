/* The bad-input matrix: NULL handles and pointers, zero and negative sizes,
 * sizes whose products overflow, NaN and Inf values, labels out of range,
 * images and states of the wrong shape, model files and checkpoints of
 * another architecture or trainer, hostile checkpoint contents, and training
 * steps that go non-finite.  Every case must return its documented status
 * with a fresh message, leave out-pointers untouched, and change nothing
 * (weights, optimizer and RNG state, step count, files).  Each test prints
 * how many cases of its kind it ran (docs/reliability.md counts them). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include "check_scratch.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

static int cases;

/* Plant a known message, make the call, require `status` and a new message. */
#define EXPECT(call, status)                                                                       \
    do {                                                                                           \
        ram_fail(RAM_ERR_THREAD, "marker");                                                        \
        ram_status got_ = (call);                                                                  \
        ck_assert_msg(got_ == (status), "%s returned %d (%s), expected %d", #call, got_,           \
                      ram_last_error(), (status));                                                 \
        ck_assert_msg(ram_last_error()[0] && strcmp(ram_last_error(), "marker") != 0,              \
                      "%s left no message of its own", #call);                                     \
        cases++;                                                                                   \
    } while (0)

static void report(const char *kind) {
    printf("badinput: %-48s %3d cases, all refused as documented\n", kind, cases);
    cases = 0;
}

enum { SIDE = 12, IMG = SIDE * SIDE, N = 6, K = 3 };
static float images[N * IMG];
static int labels[N];
static char dir[64];

static void params(ram_model_params *p) {
    ram_model_params_init(p);
    p->height = p->width = SIDE;
    p->glimpse.patch = 4;
    p->glimpse.depth = 2;
    p->glimpse_hidden = p->loc_hidden = 8;
    p->glimpse_out = p->core_hidden = 16;
    p->glimpses = 3;
    p->classes = K;
}

typedef struct fix {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
    ram_state *st;
} fix;

static void make_fix(fix *f, const ram_model_params *mp, ram_optimizer opt,
                     ram_baseline_type baseline) {
    for (int i = 0; i < N * IMG; i++)
        images[i] = (float)((i * 29) % 97) / 96.0f;
    for (int i = 0; i < N; i++)
        labels[i] = i % K;
    ck_assert_int_eq(ram_model_create(mp, &f->m), RAM_OK);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.baseline = baseline;
    ck_assert_int_eq(ram_policy_create(&pp, f->m, &f->pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.optimizer = opt;
    tp.max_batch = N;
    tp.threads = 2;
    tp.average_decay = 0.5f; /* so that failed calls are seen to leave the average too */
    ck_assert_int_eq(ram_trainer_create(f->m, f->pol, &tp, &f->t), RAM_OK);
    ck_assert_int_eq(ram_state_create(f->m, N, &f->st), RAM_OK);
}

static void default_fix(fix *f) {
    ram_model_params mp;
    params(&mp);
    make_fix(f, &mp, RAM_OPT_ADAM, RAM_BASELINE_LINEAR);
}

static void free_fix(fix *f) {
    ram_state_free(f->st);
    ram_trainer_free(f->t);
    ram_policy_free(f->pol);
    ram_model_free(f->m);
}

/* Everything a failed call must not have changed. */
typedef struct snapshot {
    float *w, *bw, *avg;
    size_t nw, nbw;
    ram_rng rng;
    long steps;
} snapshot;

static snapshot take(const fix *f) {
    snapshot s = {.nw = f->m->n_params, .nbw = f->pol->n_bw, .rng = f->pol->rng};
    s.w = malloc(sizeof(float) * s.nw);
    s.bw = malloc(sizeof(float) * (s.nbw + 1));
    memcpy(s.w, f->m->w, sizeof(float) * s.nw);
    if (s.nbw) memcpy(s.bw, f->pol->bw, sizeof(float) * s.nbw);
    s.steps = ram_trainer_steps(f->t);
    s.avg = malloc(sizeof(float) * s.nw);
    ck_assert_int_eq(ram_trainer_swap_average(f->t), RAM_OK);
    memcpy(s.avg, f->m->w, sizeof(float) * s.nw);
    ck_assert_int_eq(ram_trainer_swap_average(f->t), RAM_OK);
    return s;
}

static void same_as(const fix *f, snapshot *s) {
    ck_assert_mem_eq(f->m->w, s->w, sizeof(float) * s->nw);
    if (s->nbw) ck_assert_mem_eq(f->pol->bw, s->bw, sizeof(float) * s->nbw);
    ck_assert_mem_eq(f->pol->rng.s, s->rng.s, sizeof s->rng.s);
    ck_assert_mem_eq(&f->pol->rng.spare, &s->rng.spare, sizeof s->rng.spare);
    ck_assert_int_eq(f->pol->rng.has_spare, s->rng.has_spare);
    ck_assert_int_eq(ram_trainer_steps(f->t), s->steps);
    ck_assert_int_eq(ram_trainer_swap_average(f->t), RAM_OK);
    ck_assert_mem_eq(f->m->w, s->avg, sizeof(float) * s->nw);
    ck_assert_int_eq(ram_trainer_swap_average(f->t), RAM_OK);
    free(s->w);
    free(s->bw);
    free(s->avg);
}

static const char *path(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static unsigned char *slurp(const char *p, size_t *len) {
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc(*len);
    ck_assert_uint_eq(fread(d, 1, *len, f), *len);
    fclose(f);
    return d;
}

/* ---- NULL handles and pointers ---- */

START_TEST(test_null) {
    fix f;
    default_fix(&f);
    ram_model_params mp;
    params(&mp);
    ram_glimpse *g = NULL, *const g0 = (ram_glimpse *)&mp;
    ram_model *m = NULL, *const m0 = (ram_model *)&mp;
    ram_state *st = NULL;
    ram_policy *pol = NULL, *const p0 = (ram_policy *)&mp;
    ram_trainer *t = NULL, *const t0 = (ram_trainer *)&mp;
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    float out[4096], x[4] = {0}, R[2] = {1, 0}, dmu[4];
    int pred[N], perm[4], xi[2] = {0, 1};
    double err;
    g = g0;
    EXPECT(ram_glimpse_create(NULL, &g), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_glimpse_create(&mp.glimpse, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(g, g0);
    ck_assert_int_eq(ram_glimpse_create(&mp.glimpse, &g), RAM_OK);
    EXPECT(ram_glimpse_extract(NULL, images, 1, 1, SIDE, SIDE, x, out, 4096),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_glimpse_extract(g, NULL, 1, 1, SIDE, SIDE, x, out, 4096), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_glimpse_extract(g, images, 1, 1, SIDE, SIDE, NULL, out, 4096),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_glimpse_extract(g, images, 1, 1, SIDE, SIDE, x, NULL, 4096),
           RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse_free(g);
    m = m0;
    EXPECT(ram_model_create(NULL, &m), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_create(&mp, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_get_params(NULL, &mp), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_get_params(f.m, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_state_create(NULL, 1, &st), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_state_create(f.m, 1, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify(NULL, f.st, images, 1, pred, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify(f.m, NULL, images, 1, pred, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify(f.m, f.st, NULL, 1, pred, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify_ex(NULL, f.st, images, 1, RAM_LOCS_MEAN, NULL, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify_ex(f.m, NULL, images, 1, RAM_LOCS_MEAN, NULL, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify_ex(f.m, f.st, NULL, 1, RAM_LOCS_MEAN, NULL, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify_ex(f.m, f.st, images, 1, RAM_LOCS_SAMPLED, NULL, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_classify_ex(f.m, f.st, images, 1, RAM_LOCS_RANDOM, NULL, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_save(NULL, path("x")), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_save(f.m, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_load(NULL, &m), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_load(path("x"), NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_load_memory(NULL, 16, &m), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_load_memory(out, 16, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_model_load_memory(NULL, 0, &m), RAM_ERR_FORMAT); /* an empty file */
    ck_assert_ptr_eq(m, m0);
    pol = p0;
    EXPECT(ram_policy_create(NULL, f.m, &pol), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_create(&pp, f.m, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_create(&pp, NULL, &pol), RAM_ERR_INVALID_ARGUMENT); /* nothing to fill from */
    ck_assert_ptr_eq(pol, p0);
    EXPECT(ram_policy_sample(NULL, x, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_sample(f.pol, NULL, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_sample(f.pol, x, 1, NULL), RAM_ERR_INVALID_ARGUMENT);
    for (int k = 0; k < 4; k++) {
        const float *a = k == 0 ? NULL : x, *b = k == 1 ? NULL : x, *r = k == 2 ? NULL : R;
        float *o = k == 3 ? NULL : dmu;
        EXPECT(ram_reinforce_gaussian(a, b, 1, 2, 0.1f, r, NULL, 1, 1, o),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_reinforce_bernoulli(a, b, 1, 2, r, NULL, 1, 1, o), RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_reinforce_categorical(k == 0 ? NULL : xi, b, 1, 2, r, NULL, 1, 1, o),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_policy_returns(k == 0 ? NULL : f.pol, k == 1 ? NULL : xi, k == 2 ? NULL : xi, 1,
                                  k == 3 ? NULL : dmu),
               RAM_ERR_INVALID_ARGUMENT);
    }
    t = t0;
    EXPECT(ram_trainer_create(NULL, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_create(f.m, NULL, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_create(f.m, f.pol, NULL, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_create(f.m, f.pol, &tp, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(t, t0);
    snapshot s = take(&f);
    EXPECT(ram_trainer_train_batch(NULL, images, labels, N, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_train_batch(f.t, NULL, labels, N, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_train_batch(f.t, images, NULL, N, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_evaluate(NULL, images, labels, N, &err), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_evaluate(f.t, NULL, labels, N, &err), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_evaluate(f.t, images, NULL, N, &err), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_evaluate(f.t, images, labels, N, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_shuffle(NULL, perm, 4), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_shuffle(f.t, NULL, 4), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_save_checkpoint(NULL, path("c"), NULL, 0), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_save_checkpoint(f.t, NULL, NULL, 0), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_save_checkpoint(f.t, path("c"), NULL, 3), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(access(path("c"), F_OK), -1);
    ck_assert_int_eq(ram_trainer_save_checkpoint(f.t, path("c"), NULL, 0), RAM_OK);
    EXPECT(ram_trainer_load_checkpoint(NULL, path("c"), NULL, 0, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint(f.t, NULL, NULL, 0, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint(f.t, path("c"), NULL, 8, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint_memory(NULL, out, 16, NULL, 0, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint_memory(f.t, NULL, 16, NULL, 0, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint_memory(f.t, out, 16, NULL, 8, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_load_checkpoint_memory(f.t, NULL, 0, NULL, 0, NULL), RAM_ERR_FORMAT);
    EXPECT(ram_trainer_swap_average(NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_average_in(NULL), 0);
    same_as(&f, &s);
    /* NULL is a valid "nothing" for these. */
    ram_glimpse_free(NULL);
    ram_model_free(NULL);
    ram_state_free(NULL);
    ram_policy_free(NULL);
    ram_trainer_free(NULL);
    ram_policy_seed(NULL, 1);
    ck_assert_uint_eq(ram_model_param_count(NULL), 0);
    ck_assert_uint_eq(ram_glimpse_size(NULL, 1), 0);
    ck_assert_int_eq(ram_trainer_steps(NULL), 0);
    report("NULL handles and pointers");
    free_fix(&f);
}
END_TEST

/* ---- zero and negative sizes ---- */

START_TEST(test_sizes) {
    fix f;
    default_fix(&f);
    snapshot s = take(&f);
    int pred[N], perm[4];
    float out[4096], x[4] = {0}, R[2] = {1, 0}, dmu[4];
    int xi[2] = {0, 1};
    double err;
    const int bad_n[] = {0, -1, INT_MIN};
    for (int k = 0; k < 3; k++) {
        const int n = bad_n[k];
        EXPECT(ram_model_classify(f.m, f.st, images, n, pred, NULL, NULL),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_model_classify_ex(f.m, f.st, images, n, RAM_LOCS_CENTER, NULL, pred, NULL, NULL),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_trainer_train_batch(f.t, images, labels, n, NULL), RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_trainer_evaluate(f.t, images, labels, n, &err), RAM_ERR_INVALID_ARGUMENT);
        ram_state *st = NULL;
        EXPECT(ram_state_create(f.m, n, &st), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(st);
    }
    /* Too large: more than the state or trainer was made for. */
    EXPECT(ram_model_classify(f.m, f.st, images, N + 1, pred, NULL, NULL),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_train_batch(f.t, images, labels, N + 1, NULL), RAM_ERR_INVALID_ARGUMENT);
    ram_state *st = NULL;
    EXPECT(ram_state_create(f.m, (1 << 20) + 1, &st), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_trainer_shuffle(f.t, perm, -1), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_sample(f.pol, x, -1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_policy_returns(f.pol, xi, xi, -1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_gaussian(x, x, -1, 2, 0.1f, R, NULL, 1, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_gaussian(x, x, 1, 0, 0.1f, R, NULL, 1, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_gaussian(x, x, 1, 2, 0.0f, R, NULL, 1, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_gaussian(x, x, 1, 2, 0.1f, R, NULL, 1, 0, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_gaussian(x, x, 1, 2, 0.1f, R, NULL, 1, -1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_bernoulli(x, x, 1, -2, R, NULL, 1, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_reinforce_categorical(xi, x, -1, 2, R, NULL, 1, 1, dmu), RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse *g;
    ram_glimpse_params gp;
    ram_glimpse_params_init(&gp);
    ck_assert_int_eq(ram_glimpse_create(&gp, &g), RAM_OK);
    const int dims[4][4] = {{0, 1, 8, 8}, {1, 0, 8, 8}, {1, 1, 0, 8}, {1, 1, 8, 0}};
    for (int k = 0; k < 4; k++) {
        EXPECT(ram_glimpse_extract(g, images, dims[k][0], dims[k][1], dims[k][2], dims[k][3], x,
                                   out, 4096),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_glimpse_extract(g, images, -dims[k][0] - 1 + 2 * (dims[k][0] == 0) - 1,
                                   -dims[k][1], -dims[k][2], -dims[k][3], x, out, 4096),
               RAM_ERR_INVALID_ARGUMENT);
    }
    EXPECT(ram_glimpse_extract(g, images, 1, 1, 8, 8, x, out, 63), RAM_ERR_BUFFER_TOO_SMALL);
    EXPECT(ram_glimpse_extract(g, images, 2, 1, 8, 8, x, out, 127), RAM_ERR_BUFFER_TOO_SMALL);
    ram_glimpse_free(g);

    /* Every size field of the model, 0 and -1; the glimpse sensor's too. */
    for (int field = 0; field < 11; field++)
        for (int v = 0; v >= -1; v--) {
            ram_model_params mp;
            params(&mp);
            int *fields[11] = {&mp.channels,      &mp.height,        &mp.width,
                               &mp.glimpse.patch, &mp.glimpse.depth, &mp.glimpse_hidden,
                               &mp.loc_hidden,    &mp.glimpse_out,   &mp.core_hidden,
                               &mp.glimpses,      &mp.classes};
            *fields[field] = v;
            ram_model *m = NULL;
            EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(m);
            if (field == 3 || field == 4) {
                EXPECT(ram_glimpse_create(&mp.glimpse, &g), RAM_ERR_INVALID_ARGUMENT);
            }
        }
    ram_model_params mp;
    params(&mp);
    mp.classes = 1; /* one class is no classification */
    ram_model *m = NULL;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    /* struct_size 0 (params never initialised) on each params struct. */
    params(&mp);
    mp.struct_size = 0;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    params(&mp);
    mp.glimpse.struct_size = 0;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.struct_size = 0;
    ram_policy *pol = NULL;
    EXPECT(ram_policy_create(&pp, f.m, &pol), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_params_init(&pp);
    pp.hidden = -1;
    pp.steps = -3;
    EXPECT(ram_policy_create(&pp, NULL, &pol), RAM_ERR_INVALID_ARGUMENT);
    ram_trainer_params tp;
    ram_trainer *t = NULL;
    for (int k = 0; k < 8; k++) {
        ram_trainer_params_init(&tp);
        switch (k) {
        case 0:
            tp.max_batch = 0;
            break;
        case 1:
            tp.max_batch = -1;
            break;
        case 2:
            tp.max_batch = (1 << 16) + 1;
            break;
        case 3:
            tp.threads = 0;
            break;
        case 4:
            tp.threads = -1;
            break;
        case 5:
            tp.threads = 257;
            break;
        case 6:
            tp.decay_steps = -1;
            break;
        case 7:
            tp.struct_size = 0;
            break;
        }
        EXPECT(ram_trainer_create(f.m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(t);
    }
    /* The message names the value that is wrong, not one that is fine. */
    ram_trainer_params_init(&tp);
    tp.max_batch = 100000;
    tp.threads = 2;
    EXPECT(ram_trainer_create(f.m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "max_batch 100000"));
    ck_assert_ptr_null(strstr(ram_last_error(), "threads"));
    ram_trainer_params_init(&tp);
    tp.threads = 300;
    EXPECT(ram_trainer_create(f.m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "threads 300"));
    ck_assert_ptr_null(strstr(ram_last_error(), "max_batch"));
    same_as(&f, &s);
    report("zero, negative and too-large sizes");
    free_fix(&f);
}
END_TEST

/* ---- sizes whose products overflow ---- */

START_TEST(test_overflow) {
    ram_model_params mp;
    ram_model *m = NULL;
    const int shapes[][3] = {
        {4096, 65536, 65536}, /* 2^40 values per image */
        {1, 65536, 65536},    /* 2^32: past int and the 1e9 limit */
        {4096, 512, 512},     /* 2^30 */
        {2, 32768, 32768},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        params(&mp);
        mp.channels = shapes[k][0], mp.height = shapes[k][1], mp.width = shapes[k][2];
        EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    }
    /* A glimpse of channels * depth * patch^2 values past 2^24. */
    params(&mp);
    mp.channels = 4096, mp.glimpse.patch = 1024, mp.glimpse.depth = 16;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    params(&mp);
    mp.channels = 64, mp.glimpse.patch = 1024;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    /* Scales whose width patch * scale^k passes 2^20 pixels (or int). */
    params(&mp);
    mp.glimpse.patch = 1024, mp.glimpse.depth = 16, mp.glimpse.scale = 2;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    params(&mp);
    mp.glimpse.depth = 16, mp.glimpse.scale = 1e30f;
    EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse *g = NULL;
    EXPECT(ram_glimpse_create(&mp.glimpse, &g), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(m);
    ck_assert_ptr_null(g);
    /* glimpse_extract: image arrays larger than any address space. */
    ram_glimpse_params gp;
    ram_glimpse_params_init(&gp);
    ck_assert_int_eq(ram_glimpse_create(&gp, &g), RAM_OK);
    float loc[2] = {0, 0}, out[64];
    EXPECT(ram_glimpse_extract(g, images, INT_MAX, INT_MAX, INT_MAX, INT_MAX, loc, out, 64),
           RAM_ERR_INVALID_ARGUMENT);
    EXPECT(ram_glimpse_extract(g, images, 1, 1 << 21, 1 << 21, 1 << 21, loc, out, SIZE_MAX),
           RAM_ERR_INVALID_ARGUMENT);
    /* ...and glimpses whose total size passes size_t (where a 32-bit size_t
     * cannot even hold the INT_MAX x INT_MAX images, they are the wrong
     * shape first). */
    EXPECT(ram_glimpse_extract(g, images, INT_MAX, INT_MAX, 1, 1, loc, out, SIZE_MAX),
           SIZE_MAX > UINT32_MAX ? RAM_ERR_BUFFER_TOO_SMALL : RAM_ERR_INVALID_ARGUMENT);
    ram_glimpse_free(g);
    report("sizes whose products overflow");
}
END_TEST

/* ---- NaN and Inf ---- */

START_TEST(test_nonfinite_values) {
    fix f;
    default_fix(&f);
    snapshot s = take(&f);
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    int pred[N];
    double err;
    for (int b = 0; b < 3; b++) {
        /* The centre, where the first glimpse looks: classify sees it. */
        float keep = images[2 * IMG + 6 * SIDE + 6];
        images[2 * IMG + 6 * SIDE + 6] = bad[b];
        pred[0] = -5;
        EXPECT(ram_model_classify(f.m, f.st, images, N, pred, NULL, NULL), RAM_ERR_NUMERIC);
        EXPECT(ram_model_classify_ex(f.m, f.st, images, N, RAM_LOCS_CENTER, NULL, pred, NULL, NULL),
               RAM_ERR_NUMERIC);
        /* Training and evaluation check what the glimpses read too (the
         * first glimpse, from h_0 = 0, is the same for every image). */
        EXPECT(ram_trainer_train_batch(f.t, images, labels, N, NULL), RAM_ERR_NUMERIC);
        EXPECT(ram_trainer_evaluate(f.t, images, labels, N, &err), RAM_ERR_NUMERIC);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "image 2 "));
        images[2 * IMG + 6 * SIDE + 6] = keep;
        ram_glimpse *g;
        ram_glimpse_params gp;
        ram_glimpse_params_init(&gp);
        ck_assert_int_eq(ram_glimpse_create(&gp, &g), RAM_OK);
        float loc[2] = {0.1f, bad[b]}, out[64], mu[2] = {bad[b], 0}, l[2];
        EXPECT(ram_glimpse_extract(g, images, 1, 1, SIDE, SIDE, loc, out, 64), RAM_ERR_NUMERIC);
        EXPECT(ram_policy_sample(f.pol, mu, 1, l), RAM_ERR_NUMERIC);
        ram_glimpse_free(g);
        float p[2] = {0.5f, bad[b]}, x[2] = {1, 0}, R[1] = {1}, dp[2];
        EXPECT(ram_reinforce_bernoulli(x, p, 1, 2, R, NULL, 1, 1, dp), RAM_ERR_NUMERIC);
        int xi[1] = {1};
        if (b == 0)
            EXPECT(ram_reinforce_categorical(xi, p, 1, 2, R, NULL, 1, 1, dp), RAM_ERR_NUMERIC);
        EXPECT(ram_reinforce_gaussian(x, x, 1, 2, bad[b], R, NULL, 1, 1, dp),
               RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_reinforce_gaussian(x, x, 1, 2, 0.1f, R, NULL, 1, bad[b], dp),
               RAM_ERR_INVALID_ARGUMENT);

        /* Parameters. */
        for (int field = 0; field < 5; field++) {
            ram_model_params mp;
            params(&mp);
            float *fields[5] = {&mp.loc_std, &mp.loc_range_pixels, &mp.init_scale,
                                &mp.glimpse.scale, &mp.loc_std};
            *fields[field] = field == 4 ? -bad[b] : bad[b];
            if (field == 4 && b == 0) continue;
            ram_model *m = NULL;
            EXPECT(ram_model_create(&mp, &m), RAM_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(m);
        }
        for (int field = 0; field < 10; field++) {
            ram_trainer_params tp;
            ram_trainer_params_init(&tp);
            float *fields[10] = {
                &tp.lr,  &tp.lr_final,  &tp.momentum,     &tp.beta1,         &tp.beta2,
                &tp.eps, &tp.clip_norm, &tp.weight_decay, &tp.average_decay, &tp.label_smoothing};
            *fields[field] = bad[b];
            ram_trainer *t = NULL;
            EXPECT(ram_trainer_create(f.m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(t);
        }
        for (int field = 0; field < 3; field++) {
            ram_policy_params pp;
            ram_policy_params_init(&pp);
            float *fields[3] = {&pp.std, &pp.reward_scale, &pp.discount};
            *fields[field] = bad[b];
            if (field == 0 && b == 2) continue; /* std <= 0 means "the model's" */
            ram_policy *pol = NULL;
            EXPECT(ram_policy_create(&pp, f.m, &pol), RAM_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(pol);
        }
    }
    ck_assert_int_eq(pred[0], -5);
    same_as(&f, &s);
    report("NaN and Inf pixels, locations and parameters");
    free_fix(&f);
}
END_TEST

/* ---- labels out of range ---- */

START_TEST(test_labels) {
    fix f;
    default_fix(&f);
    snapshot s = take(&f);
    const int bad[] = {-1, K, K + 1, INT_MAX, INT_MIN};
    double err = -1;
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++)
        for (int at = 0; at < N; at += N - 1) { /* first and last of the batch */
            const int keep = labels[at];
            labels[at] = bad[b];
            EXPECT(ram_trainer_train_batch(f.t, images, labels, N, NULL), RAM_ERR_INVALID_ARGUMENT);
            EXPECT(ram_trainer_evaluate(f.t, images, labels, N, &err), RAM_ERR_INVALID_ARGUMENT);
            labels[at] = keep;
        }
    ck_assert(err == -1);
    float p[4] = {0.5f, 0.5f, 0.5f, 0.5f}, R[2] = {1, 1}, dp[4];
    int x[2] = {0, 2};
    EXPECT(ram_reinforce_categorical(x, p, 2, 2, R, NULL, 1, 1, dp), RAM_ERR_INVALID_ARGUMENT);
    x[1] = -1;
    EXPECT(ram_reinforce_categorical(x, p, 2, 2, R, NULL, 1, 1, dp), RAM_ERR_INVALID_ARGUMENT);
    same_as(&f, &s);
    report("labels out of range");
    free_fix(&f);
}
END_TEST

/* ---- the wrong shape for the model ---- */

START_TEST(test_wrong_shape) {
    /* ram_model_classify takes images of the model's shape by contract (the
     * library cannot see a buffer's size); what it can see is a workspace, a
     * policy or a trainer made for another shape. */
    fix f;
    default_fix(&f);
    int pred[N];
    for (int k = 0; k < 6; k++) {
        ram_model_params mp;
        params(&mp);
        switch (k) {
        case 0:
            mp.height = mp.width = SIDE + 4;
            break; /* same tensors, other image */
        case 1:
            mp.channels = 3;
            break;
        case 2:
            mp.glimpses = 4;
            break;
        case 3:
            mp.core_hidden = 17;
            break;
        case 4:
            mp.classes = K + 1;
            break;
        case 5:
            mp.glimpse.patch = 2;
            break;
        }
        ram_model *m;
        ck_assert_int_eq(ram_model_create(&mp, &m), RAM_OK);
        EXPECT(ram_model_classify(m, f.st, images, 1, pred, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
        EXPECT(ram_model_classify_ex(m, f.st, images, 1, RAM_LOCS_CENTER, NULL, pred, NULL, NULL),
               RAM_ERR_INVALID_ARGUMENT);
        if (k == 2 || k == 3) { /* a policy for another number of steps or hidden size */
            ram_trainer_params tp;
            ram_trainer_params_init(&tp);
            ram_trainer *t = NULL;
            EXPECT(ram_trainer_create(m, f.pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_null(t);
        }
        ram_model_free(m);
    }
    /* A glimpse of 3-channel images needs 3 times the buffer. */
    ram_glimpse *g;
    ram_glimpse_params gp;
    ram_glimpse_params_init(&gp);
    ck_assert_int_eq(ram_glimpse_create(&gp, &g), RAM_OK);
    float loc[2] = {0, 0}, out[3 * 64];
    EXPECT(ram_glimpse_extract(g, images, 1, 3, 8, 6, loc, out, 3 * 64 - 1),
           RAM_ERR_BUFFER_TOO_SMALL);
    ram_glimpse_free(g);
    report("workspaces, policies, buffers of the wrong shape");
    free_fix(&f);
}
END_TEST

/* ---- files for another architecture, checkpoints from another model ---- */

START_TEST(test_other_files) {
    fix f;
    default_fix(&f);
    ck_assert_int_eq(ram_trainer_train_batch(f.t, images, labels, N, NULL), RAM_OK);
    snapshot s = take(&f);
    size_t cap = 0, len = 0;
    /* Checkpoints of other architectures. */
    for (int k = 0; k < 10; k++) {
        ram_model_params mp;
        params(&mp);
        ram_optimizer opt = RAM_OPT_ADAM;
        ram_baseline_type bt = RAM_BASELINE_LINEAR;
        switch (k) {
        case 0:
            mp.height = mp.width = SIDE + 4;
            break;
        case 1:
            mp.channels = 2;
            break;
        case 2:
            mp.core = RAM_CORE_LSTM;
            break;
        case 3:
            mp.form = RAM_GLIMPSE_CONCAT;
            break;
        case 4:
            mp.glimpses = 4;
            break;
        case 5:
            mp.classes = K + 1;
            break;
        case 6:
            mp.glimpse_hidden = 9;
            break;
        case 7:
            mp.bound = RAM_BOUND_HARDTANH;
            break;
        case 8:
            opt = RAM_OPT_SGD;
            break; /* another trainer */
        case 9:
            bt = RAM_BASELINE_SCALAR;
            break; /* another policy */
        }
        fix o;
        make_fix(&o, &mp, opt, bt);
        ck_assert_int_eq(ram_trainer_save_checkpoint(o.t, path("other.ckpt"), "u", 1), RAM_OK);
        ck_assert_int_eq(ram_model_save(o.m, path("other.ram")), RAM_OK);
        char user[4] = "abc";
        size_t ulen = 99;
        EXPECT(ram_trainer_load_checkpoint(f.t, path("other.ckpt"), user, sizeof user, &ulen),
               RAM_ERR_MISMATCH);
        unsigned char *bytes = slurp(path("other.ckpt"), &len);
        EXPECT(ram_trainer_load_checkpoint_memory(f.t, bytes, len, user, sizeof user, &ulen),
               RAM_ERR_MISMATCH);
        free(bytes);
        ck_assert_str_eq(user, "abc");
        ck_assert_uint_eq(ulen, 99);
        /* A model file (no trainer state) is not a checkpoint. */
        EXPECT(ram_trainer_load_checkpoint(f.t, path("other.ram"), NULL, 0, NULL), RAM_ERR_FORMAT);
        /* A model of another architecture loads, but will not run on a
         * workspace made for this one. */
        if (k < 8) {
            ram_model *m = NULL;
            ck_assert_int_eq(ram_model_load(path("other.ram"), &m), RAM_OK);
            int pred[1];
            EXPECT(ram_model_classify(m, f.st, images, 1, pred, NULL, NULL),
                   RAM_ERR_INVALID_ARGUMENT);
            ram_model_free(m);
        }
        free_fix(&o);
    }
    (void)cap;
    same_as(&f, &s);
    report("model files and checkpoints of another model");
    free_fix(&f);
}
END_TEST

/* A checkpoint of this trainer with one value replaced (and the CRC redone):
 * states no trainer can be in are refused as FORMAT, nothing changed.
 * Before this was checked, an all-zero RNG state made the next step loop for
 * ever in the normal sampler, and NaN optimizer state gave NaN weights one
 * step later. */
START_TEST(test_impossible_checkpoint_state) {
    fix f;
    default_fix(&f);
    ck_assert_int_eq(ram_trainer_train_batch(f.t, images, labels, N, NULL), RAM_OK);
    ck_assert_int_eq(ram_trainer_save_checkpoint(f.t, path("good.ckpt"), NULL, 0), RAM_OK);
    size_t len;
    unsigned char *good = slurp(path("good.ckpt"), &len);
    ck_assert_int_eq(ram_trainer_train_batch(f.t, images, labels, N, NULL), RAM_OK);
    snapshot s = take(&f);
    ram_reader pc, oc, ac;
    ck_assert(ram_file_find(good, len, RAM_TAG('P', 'L', 'C', 'Y'), &pc));
    ck_assert(ram_file_find(good, len, RAM_TAG('O', 'P', 'T', 'M'), &oc));
    ck_assert(ram_file_find(good, len, RAM_TAG('A', 'V', 'R', 'G'), &ac));
    const size_t avg = (size_t)(ac.p - good);
    const uint64_t one = 1;
    const size_t pol_rng = (size_t)(pc.p - good) + 4 + 8 + 4 * f.pol->n_bw;
    const size_t opt_rng = (size_t)(oc.p - good) + 4 + 8;
    const size_t m1 = opt_rng + 44 + 8, m2 = m1 + 4 * (f.m->n_params + f.pol->n_bw);
    const uint64_t nan64 = 0x7ff8000000000000ULL, huge_step = 0x8000000000000000ULL;
    const uint32_t nan32 = 0x7fc00000u, inf32 = 0x7f800000u, neg32 = 0xbf800000u;
    /* Each edit writes the n low bytes of v, least significant first, as
     * the file holds them on any host (0 for the runs of zeros). */
    const struct {
        size_t at, n;
        uint64_t v;
        const char *what;
    } edits[] = {
        {pol_rng, 32, 0, "policy RNG all zero"},
        {opt_rng, 32, 0, "trainer RNG all zero"},
        {opt_rng - 8, 8, huge_step, "step count above LONG_MAX"},
        {pol_rng + 32, 8, nan64, "policy spare normal NaN"},
        {(size_t)(pc.p - good) + 12, 4, nan32, "baseline weight NaN"},
        {(size_t)(pc.p - good) + 16, 4, inf32, "baseline weight Inf"},
        {m1 + 40, 4, nan32, "Adam first moment NaN"},
        {m1, 4, inf32, "Adam first moment Inf"},
        {m2 + 8, 4, neg32, "Adam second moment negative"},
        {m2 + 12, 4, nan32, "Adam second moment NaN"},
        {avg + 8 + 4 * 3, 4, nan32, "weight average NaN"},
        {avg + 8, 4, inf32, "weight average Inf"},
        {avg, 8, one, "weight average of the wrong length"},
    };
    for (size_t e = 0; e < sizeof edits / sizeof *edits; e++) {
        unsigned char *bad = malloc(len);
        memcpy(bad, good, len);
        for (size_t i = 0; i < edits[e].n; i++)
            bad[edits[e].at + i] = i < 8 ? (unsigned char)(edits[e].v >> 8 * i) : 0;
        uint32_t crc = ram_crc32(bad, len - 20);
        for (int i = 0; i < 4; i++)
            bad[len - 4 + i] = (unsigned char)(crc >> 8 * i);
        EXPECT(ram_trainer_load_checkpoint_memory(f.t, bad, len, NULL, 0, NULL), RAM_ERR_FORMAT);
        FILE *out = fopen(path("bad.ckpt"), "wb");
        fwrite(bad, 1, len, out);
        fclose(out);
        EXPECT(ram_trainer_load_checkpoint(f.t, path("bad.ckpt"), NULL, 0, NULL), RAM_ERR_FORMAT);
        free(bad);
    }
    /* The unedited file still loads (the offsets above were right). */
    ck_assert_int_eq(ram_trainer_load_checkpoint_memory(f.t, good, len, NULL, 0, NULL), RAM_OK);
    ck_assert_int_eq(ram_trainer_steps(f.t), 1);
    s.steps = 1;
    free(good);
    report("impossible states in a checkpoint");
    free(s.w);
    free(s.bw);
    free(s.avg);
    free_fix(&f);
}
END_TEST

/* ---- training steps that go non-finite ---- */

START_TEST(test_nonfinite_step) {
    /* Three ways a step can diverge (NaN loss; finite loss but an infinite
     * gradient; an overflowing recurrent state); each time the step is refused with
     * RAM_ERR_NUMERIC, and the trainer goes on exactly as a twin that never
     * tried it (weights, baseline, optimizer moments, RNG, step count). */
    for (int k = 0; k < 3; k++) {
        fix a, b;
        default_fix(&a);
        default_fix(&b);
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(ram_trainer_train_batch(a.t, images, labels, N, NULL), RAM_OK);
            ck_assert_int_eq(ram_trainer_train_batch(b.t, images, labels, N, NULL), RAM_OK);
        }
        float *w = a.m->w;
        size_t off = 0, n = 0;
        float v = 0;
        switch (k) {
        case 0: /* an infinite classifier bias: the loss is NaN */
            off = a.m->t[RAM_T_CLS_B].off, n = 1, v = INFINITY;
            break;
        case 1: /* huge baseline weights: a finite NLL, but the baseline and
                 * its gradient overflow */
            w = a.pol->bw, off = 0, n = a.pol->n_bw, v = 3e38f;
            break;
        case 2: /* huge core weights: the state overflows */
            off = a.m->t[RAM_T_CH_W].off, n = 16 * 16, v = 1e30f;
            break;
        }
        float *keep = malloc(sizeof(float) * n);
        memcpy(keep, w + off, sizeof(float) * n);
        for (size_t i = 0; i < n; i++)
            w[off + i] = i % 2 ? -v : v;
        snapshot s = take(&a);
        ram_train_stats st;
        ram_fail(RAM_ERR_THREAD, "marker");
        ram_status got = ram_trainer_train_batch(a.t, images, labels, N, &st);
        ck_assert_msg(got == RAM_ERR_NUMERIC, "case %d: status %d, loss %g", k, got,
                      (double)st.loss);
        ck_assert_str_ne(ram_last_error(), "marker");
        cases++;
        same_as(&a, &s);
        memcpy(w + off, keep, sizeof(float) * n);
        free(keep);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(ram_trainer_train_batch(a.t, images, labels, N, NULL), RAM_OK);
            ck_assert_int_eq(ram_trainer_train_batch(b.t, images, labels, N, NULL), RAM_OK);
        }
        ck_assert_mem_eq(a.m->w, b.m->w, sizeof(float) * a.m->n_params);
        ck_assert_mem_eq(a.pol->bw, b.pol->bw, sizeof(float) * a.pol->n_bw);
        free_fix(&a);
        free_fix(&b);
    }
    report("training steps with a non-finite loss/gradient");
}
END_TEST

static Suite *badinput_suite(void) {
    Suite *s = suite_create("badinput");
    TCase *tc = tcase_create("matrix");
    tcase_add_test(tc, test_null);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_overflow);
    tcase_add_test(tc, test_nonfinite_values);
    tcase_add_test(tc, test_labels);
    tcase_add_test(tc, test_wrong_shape);
    tcase_add_test(tc, test_other_files);
    tcase_add_test(tc, test_impossible_checkpoint_state);
    tcase_add_test(tc, test_nonfinite_step);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    snprintf(dir, sizeof dir, "check_badinput.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    int rc = run_suite(badinput_suite());
    remove_dir(dir);
    return rc;
}
