/* Concurrency and determinism, as ram.h's "Threads" section promises them.
 * Run under ThreadSanitizer by scripts/test.sh (RAM_SANITIZE=thread).
 *  - Many threads classifying with one shared model, each with its own
 *    state (and, for sampled locations, its own policy), get exactly the
 *    serial run's labels, probabilities and locations.
 *  - Independent handles in different threads do not interact: trainers
 *    training different models at once end exactly as when run one by one;
 *    loading the same file from many threads gives identical models; errors
 *    are per thread.
 *  - A state with its own threads (ram_state_create_threads) gives the
 *    1-thread state's bits for batches up to 8, for any thread count, also
 *    when its workers went to sleep between calls.
 *  - Determinism: the same seed and thread count give byte-identical model
 *    and checkpoint files after N steps. */
#define _POSIX_C_SOURCE 200809L
#include <ram/ram.h>

#include <check.h>
#include "check_main.h"
#include "check_scratch.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

enum { SIDE = 16, IMG = SIDE * SIDE, N = 24, K = 4, T = 4, THREADS = 6, REPS = 4 };
static float images[N * IMG];
static int labels[N];
static char dir[64];

static void make_data(void) {
    uint32_t x = 99;
    for (int i = 0; i < N; i++) {
        labels[i] = i % K;
        for (int p = 0; p < IMG; p++) {
            x = x * 1664525u + 1013904223u;
            images[i * IMG + p] =
                (float)(x >> 8) / 16777216.0f * 0.4f + (p % SIDE / 4 == labels[i] ? 0.6f : 0.0f);
        }
    }
}

static void params(ram_model_params *p, uint64_t seed) {
    ram_model_params_init(p);
    p->height = p->width = SIDE;
    p->glimpse.patch = 4;
    p->glimpse.depth = 2;
    p->glimpse_hidden = p->loc_hidden = 16;
    p->glimpse_out = p->core_hidden = 32;
    p->glimpses = T;
    p->classes = K;
    p->core = RAM_CORE_LSTM;
    p->init_scale = 0.3f; /* lively locations: a mix-up would show */
    p->seed = seed;
}

static ram_model *model(uint64_t seed) {
    ram_model_params p;
    params(&p, seed);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

/* ---- shared model, many classifying threads ---- */

typedef struct result {
    int labels[N];
    float probs[N * K], locs[N * T * 2];
} result;

typedef struct job {
    const ram_model *m;
    ram_loc_source source;
    uint64_t policy_seed; /* SAMPLED/RANDOM: each thread its own policy */
    int batch;            /* images per call (BLAS may round differently per batch size,
                             so each thread is compared with a serial run of its split) */
    result got;
    ram_status status;
} job;

static ram_status classify_all(job *j) {
    ram_state *st = NULL;
    ram_policy *pol = NULL;
    ram_status s = ram_state_create(j->m, j->batch, &st);
    if (!s && j->source != RAM_LOCS_MEAN) {
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        pp.seed = j->policy_seed;
        s = ram_policy_create(&pp, j->m, &pol);
    }
    for (int i = 0; i < N && !s; i += j->batch) {
        int n = N - i < j->batch ? N - i : j->batch;
        s = ram_model_classify_ex(j->m, st, images + i * IMG, n, j->source, pol, j->got.labels + i,
                                  j->got.probs + i * K, NULL);
        /* locations of the whole set, MEAN only (SAMPLED draws per call) */
        if (!s && j->source == RAM_LOCS_MEAN)
            s = ram_model_classify(j->m, st, images + i * IMG, n, NULL, NULL,
                                   j->got.locs + (size_t)i * T * 2);
    }
    ram_policy_free(pol);
    ram_state_free(st);
    return s;
}

static void *classify_thread(void *arg) {
    job *j = arg;
    for (int r = 0; r < REPS && !j->status; r++)
        j->status = classify_all(j);
    return NULL;
}

START_TEST(test_shared_model_classify) {
    make_data();
    ram_set_blas_threads(1);
    ram_model *m = model(3);
    const ram_loc_source sources[2] = {RAM_LOCS_MEAN, RAM_LOCS_SAMPLED};
    for (int src = 0; src < 2; src++) {
        static job serial[THREADS], par[THREADS];
        for (int k = 0; k < THREADS; k++) {
            job j = {.m = m, .source = sources[src], .policy_seed = 100 + k, .batch = 1 + k % 5};
            serial[k] = par[k] = j;
            ck_assert_int_eq(classify_all(&serial[k]), RAM_OK);
        }
        /* The locations are not all alike, so a mix-up would show. */
        if (src == 0)
            ck_assert(
                memcmp(serial[0].got.locs, serial[0].got.locs + T * 2, T * 2 * sizeof(float)));
        pthread_t th[THREADS];
        for (int k = 0; k < THREADS; k++)
            ck_assert_int_eq(pthread_create(&th[k], NULL, classify_thread, &par[k]), 0);
        for (int k = 0; k < THREADS; k++) {
            pthread_join(th[k], NULL);
            ck_assert_int_eq(par[k].status, RAM_OK);
            ck_assert_mem_eq(&par[k].got, &serial[k].got, sizeof(result));
        }
    }
    ram_model_free(m);
}
END_TEST

/* ---- independent trainers at once ---- */

typedef struct train_job {
    uint64_t seed;
    int threads, steps;
    const char *tag;
    unsigned char *file; /* out: the saved model's bytes, malloc'ed */
    size_t len;
    ram_status status;
} train_job;

static void *train_thread(void *arg) {
    train_job *j = arg;
    ram_model_params mp;
    params(&mp, j->seed);
    ram_model *m = NULL;
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = j->seed + 1;
    ram_policy *pol = NULL;
    ram_trainer *t = NULL;
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = N;
    tp.threads = j->threads;
    j->status = ram_model_create(&mp, &m);
    if (!j->status) j->status = ram_policy_create(&pp, m, &pol);
    if (!j->status) j->status = ram_trainer_create(m, pol, &tp, &t);
    for (int s = 0; s < j->steps && !j->status; s++)
        j->status = ram_trainer_train_batch(t, images, labels, N - (s % 3) * 5, NULL);
    char name[128];
    snprintf(name, sizeof name, "%s/%s-%llu.ram", dir, j->tag, (unsigned long long)j->seed);
    if (!j->status) j->status = ram_model_save(m, name);
    FILE *f = j->status ? NULL : fopen(name, "rb");
    if (f) {
        static const size_t cap = 1 << 20;
        j->file = malloc(cap);
        j->len = fread(j->file, 1, cap, f);
        fclose(f);
    }
    unlink(name);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
    return NULL;
}

START_TEST(test_independent_trainers) {
    make_data();
    enum { J = 4 };
    static train_job serial[J], par[J];
    for (int k = 0; k < J; k++) {
        train_job j = {.seed = 10 + k, .threads = 1 + k % 2, .steps = 6};
        serial[k] = par[k] = j;
        serial[k].tag = "serial", par[k].tag = "parallel";
        train_thread(&serial[k]);
        ck_assert_int_eq(serial[k].status, RAM_OK);
    }
    pthread_t th[J];
    for (int k = 0; k < J; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, train_thread, &par[k]), 0);
    for (int k = 0; k < J; k++) {
        pthread_join(th[k], NULL);
        ck_assert_int_eq(par[k].status, RAM_OK);
        ck_assert_uint_gt(par[k].len, 0);
        ck_assert_uint_eq(par[k].len, serial[k].len);
        ck_assert_mem_eq(par[k].file, serial[k].file, par[k].len);
        free(par[k].file);
        free(serial[k].file);
    }
}
END_TEST

/* ---- concurrent loads, per-thread errors ---- */

typedef struct load_job {
    const char *path;
    ram_model *m;
    ram_status status;
    int error_ok;
} load_job;

static void *load_thread(void *arg) {
    load_job *j = arg;
    j->status = ram_model_load(j->path, &j->m);
    /* A failure of our own: the message must be ours, whatever the others do. */
    for (int r = 0; r < 50; r++) {
        char want[64];
        int n = -1 - r;
        ram_state *st;
        if (ram_state_create(j->m, n, &st) != RAM_ERR_INVALID_ARGUMENT) return NULL;
        snprintf(want, sizeof want, "max_batch %d not", n);
        if (!strstr(ram_last_error(), want)) return NULL;
    }
    j->error_ok = 1;
    return NULL;
}

START_TEST(test_concurrent_loads) {
    ram_model *m = model(4);
    char path[128];
    snprintf(path, sizeof path, "%s/shared.ram", dir);
    ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
    enum { J = 6 };
    load_job jobs[J];
    pthread_t th[J];
    for (int k = 0; k < J; k++) {
        jobs[k] = (load_job){.path = path};
        ck_assert_int_eq(pthread_create(&th[k], NULL, load_thread, &jobs[k]), 0);
    }
    ram_state *st;
    ck_assert_int_eq(ram_state_create(m, N, &st), RAM_OK);
    make_data();
    float want[N * K], got[N * K];
    ck_assert_int_eq(ram_model_classify(m, st, images, N, NULL, want, NULL), RAM_OK);
    for (int k = 0; k < J; k++) {
        pthread_join(th[k], NULL);
        ck_assert_int_eq(jobs[k].status, RAM_OK);
        ck_assert(jobs[k].error_ok);
        ck_assert_uint_eq(ram_model_param_count(jobs[k].m), ram_model_param_count(m));
        ck_assert_int_eq(ram_model_classify(jobs[k].m, st, images, N, NULL, got, NULL), RAM_OK);
        ck_assert_mem_eq(got, want, sizeof want);
        ram_model_free(jobs[k].m);
    }
    ram_state_free(st);
    unlink(path);
    ram_model_free(m);
}
END_TEST

/* ---- determinism: byte-identical files ---- */

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

/* Train `steps` steps from seed 7 with `threads` threads; save the model and
 * a checkpoint under the name `tag`. */
static void run_and_save(int threads, ram_optimizer opt, int steps, const char *tag) {
    ram_model *m = model(7);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.optimizer = opt;
    tp.max_batch = 16;
    tp.threads = threads;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    int perm[N], y[16];
    static float batch[16 * IMG];
    for (int s = 0; s < steps; s++) {
        ck_assert_int_eq(ram_trainer_shuffle(t, perm, N), RAM_OK);
        for (int i = 0; i < 16; i++) {
            memcpy(batch + i * IMG, images + perm[i] * IMG, sizeof(float) * IMG);
            y[i] = labels[perm[i]];
        }
        ck_assert_int_eq(ram_trainer_train_batch(t, batch, y, 16, NULL), RAM_OK);
    }
    char p[128];
    snprintf(p, sizeof p, "%s/%s.ram", dir, tag);
    ck_assert_int_eq(ram_model_save(m, p), RAM_OK);
    snprintf(p, sizeof p, "%s/%s.ckpt", dir, tag);
    ck_assert_int_eq(ram_trainer_save_checkpoint(t, p, NULL, 0), RAM_OK);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}

static int same_files(const char *a, const char *b, const char *ext) {
    char pa[128], pb[128];
    snprintf(pa, sizeof pa, "%s/%s.%s", dir, a, ext);
    snprintf(pb, sizeof pb, "%s/%s.%s", dir, b, ext);
    size_t na, nb;
    unsigned char *da = slurp(pa, &na), *db = slurp(pb, &nb);
    int same = na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    unlink(pa);
    unlink(pb);
    return same;
}

START_TEST(test_deterministic_files) {
    make_data();
    const int threads[3] = {1, 2, 3};
    const ram_optimizer opts[2] = {RAM_OPT_SGD, RAM_OPT_ADAM};
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < 3; k++) {
            run_and_save(threads[k], opts[o], 12, "a");
            run_and_save(threads[k], opts[o], 12, "b");
            ck_assert_msg(same_files("a", "b", "ram"), "%d threads, optimizer %d: models differ",
                          threads[k], o);
            /* rewritten by same_files' unlink: redo for the checkpoint */
            run_and_save(threads[k], opts[o], 12, "a");
            run_and_save(threads[k], opts[o], 12, "b");
            ck_assert_msg(same_files("a", "b", "ckpt"),
                          "%d threads, optimizer %d: checkpoints differ", threads[k], o);
        }
    /* ...and the files do depend on the training (not a constant). */
    run_and_save(1, RAM_OPT_ADAM, 12, "a");
    run_and_save(1, RAM_OPT_ADAM, 13, "b");
    ck_assert(!same_files("a", "b", "ram"));
}
END_TEST

/* ---- one state, several threads per call ---- */

static void threaded_state_case(ram_core_type core, ram_glimpse_form form, int hidden,
                                int glimpse_hidden) {
    ram_model_params p;
    params(&p, 11);
    p.core = core;
    p.form = form;
    p.glimpse_hidden = glimpse_hidden;
    p.loc_hidden = 40;
    p.glimpse_out = 64;
    p.core_hidden = hidden;
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ram_state *one = NULL;
    ck_assert_int_eq(ram_state_create_threads(m, N, 1, &one), RAM_OK);
    static result want, got;
    for (int threads = 2; threads <= 4; threads++) {
        ram_state *st = NULL;
        ck_assert_int_eq(ram_state_create_threads(m, N, threads, &st), RAM_OK);
        const int batches[] = {1, 5, 8, N};
        for (int b = 0; b < 4; b++) {
            const int n = batches[b];
            for (int rep = 0; rep < 3; rep++) {
                /* The last repetition comes after the workers went to sleep. */
                if (rep == 2) nanosleep(&(struct timespec){0, 2000000}, NULL);
                const int off = rep * 3 % (N - n + 1);
                ck_assert_int_eq(ram_model_classify(m, one, images + off * IMG, n, want.labels,
                                                    want.probs, want.locs),
                                 RAM_OK);
                ck_assert_int_eq(ram_model_classify(m, st, images + off * IMG, n, got.labels,
                                                    got.probs, got.locs),
                                 RAM_OK);
                ck_assert_mem_eq(got.labels, want.labels, sizeof(int) * n);
                if (n <= 8) {
                    ck_assert_mem_eq(got.probs, want.probs, sizeof(float) * n * K);
                    ck_assert_mem_eq(got.locs, want.locs, sizeof(float) * n * T * 2);
                } else { /* sgemm on column blocks: the last bit may differ */
                    for (int i = 0; i < n * K; i++)
                        ck_assert_float_eq_tol(got.probs[i], want.probs[i], 1e-5f);
                    for (int i = 0; i < n * T * 2; i++)
                        ck_assert_float_eq_tol(got.locs[i], want.locs[i], 1e-5f);
                }
            }
        }
        /* Sampled locations: the same noise from the same policy seed. */
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        pp.seed = 5;
        ram_policy *pa = NULL, *pb = NULL;
        ck_assert_int_eq(ram_policy_create(&pp, m, &pa), RAM_OK);
        ck_assert_int_eq(ram_policy_create(&pp, m, &pb), RAM_OK);
        ck_assert_int_eq(ram_model_classify_ex(m, one, images, 4, RAM_LOCS_SAMPLED, pa, want.labels,
                                               want.probs, want.locs),
                         RAM_OK);
        ck_assert_int_eq(ram_model_classify_ex(m, st, images, 4, RAM_LOCS_SAMPLED, pb, got.labels,
                                               got.probs, got.locs),
                         RAM_OK);
        ck_assert_mem_eq(got.probs, want.probs, sizeof(float) * 4 * K);
        ck_assert_mem_eq(got.locs, want.locs, sizeof(float) * 4 * T * 2);
        /* One image: fewer images than threads (the first layer whole or split). */
        ck_assert_int_eq(ram_model_classify_ex(m, one, images + 5 * IMG, 1, RAM_LOCS_SAMPLED, pa,
                                               want.labels, want.probs, want.locs),
                         RAM_OK);
        ck_assert_int_eq(ram_model_classify_ex(m, st, images + 5 * IMG, 1, RAM_LOCS_SAMPLED, pb,
                                               got.labels, got.probs, got.locs),
                         RAM_OK);
        ck_assert_mem_eq(got.probs, want.probs, sizeof(float) * K);
        ck_assert_mem_eq(got.locs, want.locs, sizeof(float) * T * 2);
        ram_policy_free(pa);
        ram_policy_free(pb);
        ram_state_free(st);
    }
    ram_state_free(one);
    ram_model_free(m);
}

START_TEST(test_threaded_state) {
    threaded_state_case(RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE, 32, 24);
    threaded_state_case(RAM_CORE_RNN, RAM_GLIMPSE_CONCAT, 48, 24);
    threaded_state_case(RAM_CORE_LSTM, RAM_GLIMPSE_CONCAT, 20, 24); /* rows not in lines of 16 */
    /* At batch 1 the cases above have every thread compute the whole first
     * glimpse layer (lib/model.c, SMALL_G1_FLOATS); a first layer of
     * 32 x 520 weights is split by rows like the others. */
    threaded_state_case(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE, 32, 520);
}
END_TEST

START_TEST(test_threaded_state_bad_args) {
    ram_model *m = model(3);
    ram_state *st = (ram_state *)1;
    ck_assert_int_eq(ram_state_create_threads(m, 4, 0, &st), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(st, (ram_state *)1);
    ck_assert_int_eq(ram_state_create_threads(m, 4, RAM_STATE_MAX_THREADS + 1, &st),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_state_create_threads(NULL, 4, 2, &st), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_state_create_threads(m, 0, 2, &st), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_state_create_threads(m, 4, 2, NULL), RAM_ERR_INVALID_ARGUMENT);
    /* Created and freed at once, never used: the workers must still quit. */
    ck_assert_int_eq(ram_state_create_threads(m, 4, RAM_STATE_MAX_THREADS, &st), RAM_OK);
    ram_state_free(st);
    ram_model_free(m);
}
END_TEST

static Suite *threads_suite(void) {
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("concurrency");
    tcase_set_timeout(tc, 600); /* ThreadSanitizer is slow */
    tcase_add_test(tc, test_shared_model_classify);
    tcase_add_test(tc, test_independent_trainers);
    tcase_add_test(tc, test_concurrent_loads);
    tcase_add_test(tc, test_threaded_state);
    tcase_add_test(tc, test_threaded_state_bad_args);
    suite_add_tcase(s, tc);
    TCase *det = tcase_create("determinism");
    tcase_set_timeout(det, 600);
    tcase_add_test(det, test_deterministic_files);
    suite_add_tcase(s, det);
    return s;
}

int main(void) {
    snprintf(dir, sizeof dir, "check_threads.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    int rc = run_suite(threads_suite());
    remove_dir(dir);
    return rc;
}
