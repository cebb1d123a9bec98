/* The public contract as a caller sees it: only <ram/ram.h>, linked against
 * the shared library alone.  Versions, status strings, misuse answered with
 * a status and a message, params from older callers, and classification
 * from several threads on one shared model. */
#include <ram/ram.h>

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t lcg_state;
static float lcg_uniform(void) {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) * (1.0f / 16777216.0f);
}

static float *random_images(int n, size_t per_image) {
    float *img = malloc(sizeof(float) * n * per_image);
    ck_assert_ptr_nonnull(img);
    for (size_t i = 0; i < n * per_image; i++)
        img[i] = lcg_uniform();
    return img;
}

/* Every failure must leave its own message.  The last error persists until
 * the next failure, so first plant a known one from an unrelated function
 * and then require a different, non-empty message. */
static char marker[512];

static void plant_marker(void) {
    float out;
    ram_reinforce_bernoulli(NULL, NULL, 0, 1, NULL, NULL, 1, 1, &out);
    snprintf(marker, sizeof marker, "%s", ram_last_error());
    ck_assert_str_ne(marker, "");
}

static int fresh_message(void) {
    return ram_last_error()[0] != '\0' && strcmp(ram_last_error(), marker) != 0;
}

#define EXPECT_FAIL(call, status)                                                                  \
    do {                                                                                           \
        plant_marker();                                                                            \
        ram_status got_ = (call);                                                                  \
        ck_assert_msg(got_ == (status), "%s returned %d (%s), expected %d", #call, got_,           \
                      ram_last_error(), (status));                                                 \
        ck_assert_msg(fresh_message(), "%s left no message of its own", #call);                    \
    } while (0)

static void small_params(ram_model_params *p) {
    ram_model_params_init(p);
    p->height = p->width = 12;
    p->glimpse.patch = 4;
    p->glimpse_hidden = p->loc_hidden = 8;
    p->glimpse_out = p->core_hidden = 16;
    p->glimpses = 3;
    p->classes = 4;
}

static ram_model *small_model(void) {
    ram_model_params p;
    small_params(&p);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

/* ---- version and status ---- */

START_TEST(test_version) {
    ck_assert_uint_eq(ram_version_number(), RAM_VERSION_NUMBER);
    ck_assert_str_eq(ram_version_string(), RAM_VERSION_STRING);
    ck_assert_uint_eq(RAM_VERSION_NUMBER,
                      RAM_VERSION_MAJOR * 10000 + RAM_VERSION_MINOR * 100 + RAM_VERSION_PATCH);
    char s[32];
    snprintf(s, sizeof s, "%d.%d.%d", RAM_VERSION_MAJOR, RAM_VERSION_MINOR, RAM_VERSION_PATCH);
    ck_assert_str_eq(ram_version_string(), s);
}
END_TEST

START_TEST(test_status_strings) {
    /* The values are ABI: pinned here. */
    ck_assert_int_eq(RAM_OK, 0);
    ck_assert_int_eq(RAM_ERR_INVALID_ARGUMENT, 1);
    ck_assert_int_eq(RAM_ERR_OUT_OF_MEMORY, 2);
    ck_assert_int_eq(RAM_ERR_IO, 3);
    ck_assert_int_eq(RAM_ERR_FORMAT, 4);
    ck_assert_int_eq(RAM_ERR_VERSION, 5);
    ck_assert_int_eq(RAM_ERR_CORRUPT, 6);
    ck_assert_int_eq(RAM_ERR_NUMERIC, 7);
    ck_assert_int_eq(RAM_ERR_MISMATCH, 8);
    ck_assert_int_eq(RAM_ERR_BUFFER_TOO_SMALL, 9);
    ck_assert_int_eq(RAM_ERR_THREAD, 10);
    const char *unknown = ram_status_string((ram_status)11);
    ck_assert_str_eq(unknown, "unknown status");
    ck_assert_str_eq(ram_status_string((ram_status)-1), "unknown status");
    ck_assert_str_eq(ram_status_string((ram_status)1000), "unknown status");
    for (int a = 0; a <= RAM_ERR_THREAD; a++) {
        const char *sa = ram_status_string((ram_status)a);
        ck_assert_ptr_nonnull(sa);
        ck_assert_msg(sa[0] != '\0', "status %d has an empty string", a);
        ck_assert_str_ne(sa, unknown);
        for (int b = 0; b < a; b++)
            ck_assert_str_ne(sa, ram_status_string((ram_status)b));
    }
}
END_TEST

START_TEST(test_free_null) {
    ram_glimpse_free(NULL);
    ram_model_free(NULL);
    ram_state_free(NULL);
    ram_policy_free(NULL);
    ram_trainer_free(NULL);
    ram_glimpse_params_init(NULL);
    ram_model_params_init(NULL);
    ram_policy_params_init(NULL);
    ram_trainer_params_init(NULL);
    ram_policy_seed(NULL, 3);
    ck_assert_uint_eq(ram_model_param_count(NULL), 0);
    ck_assert_int_eq(ram_trainer_steps(NULL), 0);
    ram_set_blas_threads(1);
}
END_TEST

static void *read_error_in_thread(void *arg) {
    *(const char **)arg = strlen(ram_last_error()) ? "non-empty" : "";
    return NULL;
}

START_TEST(test_last_error_is_per_thread) {
    ram_model *out = NULL;
    ck_assert_int_eq(ram_model_create(NULL, &out), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    const char *seen = "unset";
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, read_error_in_thread, &seen), 0);
    pthread_join(th, NULL);
    ck_assert_str_eq(seen, "");
    ck_assert_str_ne(ram_last_error(), ""); /* still ours */
}
END_TEST

/* ---- misuse ---- */

START_TEST(test_model_misuse) {
    ram_model_params p;
    ram_model *sentinel = (ram_model *)&p, *m = sentinel;
    EXPECT_FAIL(ram_model_create(NULL, &m), RAM_ERR_INVALID_ARGUMENT);
    ram_model_params_init(&p);
    EXPECT_FAIL(ram_model_create(&p, NULL), RAM_ERR_INVALID_ARGUMENT);
    p.struct_size = 0;
    EXPECT_FAIL(ram_model_create(&p, &m), RAM_ERR_INVALID_ARGUMENT);

    /* One bad field at a time, everything else the defaults. */
    for (int k = 0; k < 12; k++) {
        ram_model_params_init(&p);
        const char *what = "";
        switch (k) {
        case 0:
            p.glimpses = 0, what = "glimpses 0";
            break;
        case 1:
            p.classes = 1, what = "classes 1";
            break;
        case 2:
            p.loc_std = NAN, what = "loc_std NaN";
            break;
        case 3:
            p.loc_std = 0, what = "loc_std 0";
            break;
        case 4:
            p.height = 0, what = "height 0";
            break;
        case 5:
            p.channels = -1, what = "channels -1";
            break;
        case 6:
            p.glimpses = 65, what = "glimpses 65";
            break;
        case 7:
            p.core = (ram_core_type)2, what = "core 2";
            break;
        case 8:
            p.glimpse.patch = 0, what = "patch 0";
            break;
        case 9:
            p.glimpse.struct_size = 0, what = "glimpse struct_size 0";
            break;
        case 10:
            p.init_scale = INFINITY, what = "init_scale inf";
            break;
        case 11:
            p.core_hidden = 0, what = "core_hidden 0";
            break;
        }
        plant_marker();
        ram_status s = ram_model_create(&p, &m);
        ck_assert_msg(s == RAM_ERR_INVALID_ARGUMENT, "%s: status %d", what, s);
        ck_assert_msg(fresh_message(), "%s: no message", what);
        ck_assert_ptr_eq(m, sentinel);
    }

    m = small_model();
    EXPECT_FAIL(ram_model_get_params(m, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_get_params(NULL, &p), RAM_ERR_INVALID_ARGUMENT);
    p.struct_size = 0;
    EXPECT_FAIL(ram_model_get_params(m, &p), RAM_ERR_INVALID_ARGUMENT);
    ram_state *st = (ram_state *)&p;
    EXPECT_FAIL(ram_state_create(m, 0, &st), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_state_create(NULL, 4, &st), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_state_create(m, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(st, (ram_state *)&p);
    ram_model_free(m);
}
END_TEST

START_TEST(test_classify_misuse) {
    ram_model *m = small_model();
    ram_state *st = NULL;
    ck_assert_int_eq(ram_state_create(m, 4, &st), RAM_OK);
    lcg_state = 3;
    float *img = random_images(5, 144);
    int labels[5];
    float probs[5 * 4], locs[5 * 3 * 2];
    ck_assert_int_eq(ram_model_classify(m, st, img, 4, labels, probs, locs), RAM_OK);
    ck_assert_int_eq(ram_model_classify(m, st, img, 4, NULL, NULL, NULL), RAM_OK);
    EXPECT_FAIL(ram_model_classify(m, st, img, 0, labels, probs, locs), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify(m, st, img, -2, labels, probs, locs), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify(m, st, img, 5, labels, probs, locs), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify(NULL, st, img, 1, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify(m, NULL, img, 1, labels, probs, locs), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify(m, st, NULL, 1, labels, probs, locs), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify_ex(m, st, img, 1, RAM_LOCS_SAMPLED, NULL, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify_ex(m, st, img, 1, RAM_LOCS_RANDOM, NULL, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_classify_ex(m, st, img, 1, (ram_loc_source)9, NULL, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);

    /* A non-finite pixel where the first glimpse looks (the centre), the
     * outputs left alone. */
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        img[3 * 144 + 77] = bad[b];
        labels[0] = -7;
        EXPECT_FAIL(ram_model_classify(m, st, img, 4, labels, probs, locs), RAM_ERR_NUMERIC);
        ck_assert_int_eq(labels[0], -7);
    }
    img[3 * 144 + 77] = 0.5f;

    /* CENTER looks at (0, 0) every time. */
    ck_assert_int_eq(
        ram_model_classify_ex(m, st, img, 4, RAM_LOCS_CENTER, NULL, labels, probs, locs), RAM_OK);
    for (int i = 0; i < 4 * 3 * 2; i++)
        ck_assert_float_eq(locs[i], 0.0f);

    /* A state made for another architecture. */
    ram_model_params p;
    small_params(&p);
    p.core_hidden = 17;
    ram_model *other = NULL;
    ck_assert_int_eq(ram_model_create(&p, &other), RAM_OK);
    EXPECT_FAIL(ram_model_classify(other, st, img, 1, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);
    ram_model_free(other);
    small_params(&p);
    p.glimpses = 4;
    ck_assert_int_eq(ram_model_create(&p, &other), RAM_OK);
    EXPECT_FAIL(ram_model_classify(other, st, img, 1, labels, probs, locs),
                RAM_ERR_INVALID_ARGUMENT);
    ram_model_free(other);
    /* Same architecture, other weights: fine (a state borrows nothing). */
    small_params(&p);
    p.seed = 99;
    ck_assert_int_eq(ram_model_create(&p, &other), RAM_OK);
    ck_assert_int_eq(ram_model_classify(other, st, img, 2, labels, probs, locs), RAM_OK);
    ram_model_free(other);

    free(img);
    ram_state_free(st);
    ram_model_free(m);
}
END_TEST

START_TEST(test_trainer_misuse) {
    ram_model *m = small_model();
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol = NULL, *bad_pol = NULL;
    EXPECT_FAIL(ram_policy_create(NULL, m, &pol), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_policy_create(&pp, m, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);

    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 8;
    ram_trainer *sentinel = (ram_trainer *)&tp, *t = sentinel;
    EXPECT_FAIL(ram_trainer_create(NULL, pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_create(m, NULL, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_create(m, pol, NULL, &t), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_create(m, pol, &tp, NULL), RAM_ERR_INVALID_ARGUMENT);

    /* Policies that do not fit the model. */
    pp.steps = 5;
    ck_assert_int_eq(ram_policy_create(&pp, m, &bad_pol), RAM_OK);
    EXPECT_FAIL(ram_trainer_create(m, bad_pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_free(bad_pol);
    ram_policy_params_init(&pp);
    pp.hidden = 9;
    ck_assert_int_eq(ram_policy_create(&pp, m, &bad_pol), RAM_OK);
    EXPECT_FAIL(ram_trainer_create(m, bad_pol, &tp, &t), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_free(bad_pol);

    /* Bad trainer params. */
    for (int k = 0; k < 7; k++) {
        ram_trainer_params_init(&tp);
        switch (k) {
        case 0:
            tp.lr = NAN;
            break;
        case 1:
            tp.threads = 0;
            break;
        case 2:
            tp.max_batch = 0;
            break;
        case 3:
            tp.momentum = 1.0f;
            break;
        case 4:
            tp.optimizer = (ram_optimizer)5;
            break;
        case 5:
            tp.struct_size = 0;
            break;
        case 6:
            tp.eps = 0;
            break;
        }
        plant_marker();
        ram_status s = ram_trainer_create(m, pol, &tp, &t);
        ck_assert_msg(s == RAM_ERR_INVALID_ARGUMENT, "case %d: status %d", k, s);
        ck_assert_msg(fresh_message(), "case %d: no message", k);
        ck_assert_ptr_eq(t, sentinel);
    }

    ram_trainer_params_init(&tp);
    tp.max_batch = 4;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    lcg_state = 5;
    float *img = random_images(5, 144);
    int labels[5] = {0, 1, 2, 3, 0};
    ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, 4, NULL), RAM_OK);
    labels[2] = 4;
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    labels[2] = -1;
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_evaluate(t, img, labels, 4, &(double){0}), RAM_ERR_INVALID_ARGUMENT);
    labels[2] = 2;
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 5, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 0, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_train_batch(t, NULL, labels, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_train_batch(t, img, NULL, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_train_batch(NULL, img, labels, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_evaluate(t, img, labels, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_shuffle(t, NULL, 3), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_save_checkpoint(t, NULL, NULL, 0), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_trainer_save_checkpoint(t, "x", NULL, 4), RAM_ERR_INVALID_ARGUMENT);
    /* Image 1 all NaN, so that its first glimpse reads one wherever it lands. */
    float *saved = malloc(sizeof(float) * 144);
    memcpy(saved, img + 144, sizeof(float) * 144);
    for (int i = 144; i < 288; i++)
        img[i] = NAN;
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 4, NULL), RAM_ERR_NUMERIC);
    ck_assert_int_eq(ram_trainer_steps(t), 1);

    /* Evaluation is not limited to max_batch. */
    memcpy(img + 144, saved, sizeof(float) * 144);
    free(saved);
    double err = -1;
    ck_assert_int_eq(ram_trainer_evaluate(t, img, labels, 5, &err), RAM_OK);
    ck_assert(err >= 0 && err <= 1);

    /* shuffle: a permutation. */
    int perm[50], seen[50] = {0};
    ck_assert_int_eq(ram_trainer_shuffle(t, perm, 50), RAM_OK);
    for (int i = 0; i < 50; i++) {
        ck_assert(perm[i] >= 0 && perm[i] < 50);
        seen[perm[i]]++;
    }
    for (int i = 0; i < 50; i++)
        ck_assert_int_eq(seen[i], 1);
    free(img);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

/* ---- params from older callers ---- */

START_TEST(test_old_caller_params) {
    /* A caller compiled when ram_model_params ended at `glimpses`: its init
     * fills only that much, and create reads only that much; whatever lies
     * beyond (here 0xff garbage) must be ignored. */
    ram_model_params p;
    memset(&p, 0xff, sizeof p);
    const size_t old = offsetof(ram_model_params, glimpses) + sizeof p.glimpses;
    ram_model_params_init_sized(&p, old);
    ck_assert_uint_eq(p.struct_size, old);
    ck_assert_int_eq(p.glimpses, 6);
    const unsigned char *beyond = (const unsigned char *)&p + old;
    for (size_t i = 0; i < sizeof p - old; i++)
        ck_assert_uint_eq(beyond[i], 0xff);
    p.height = p.width = 16;
    p.core_hidden = 32;
    p.glimpses = 3;
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);

    ram_model_params got;
    ram_model_params_init(&got);
    ck_assert_int_eq(ram_model_get_params(m, &got), RAM_OK);
    ck_assert_int_eq(got.height, 16);
    ck_assert_int_eq(got.core_hidden, 32);
    ck_assert_int_eq(got.glimpses, 3);
    ck_assert_int_eq(got.classes, 10);
    ck_assert_int_eq(got.bound, RAM_BOUND_TANH);
    ck_assert_float_eq(got.loc_std, 0.17f);
    ck_assert_float_eq(got.loc_range_pixels, 7.0f); /* the default: 16 / 2 - 1 */
    ck_assert_float_eq(got.init_scale, 0.1f);
    ck_assert(got.seed == 1);
    ck_assert_uint_eq(got.struct_size, sizeof got);

    /* get_params writes no further than the caller's struct_size. */
    ram_model_params short_out;
    memset(&short_out, 0xab, sizeof short_out);
    short_out.struct_size = old;
    ck_assert_int_eq(ram_model_get_params(m, &short_out), RAM_OK);
    ck_assert_int_eq(short_out.glimpses, 3);
    const unsigned char *tail = (const unsigned char *)&short_out + old;
    for (size_t i = 0; i < sizeof short_out - old; i++)
        ck_assert_uint_eq(tail[i], 0xab);

    /* The same for the trainer: defaults (max_batch 128) beyond `lr`. */
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    memset(&tp, 0xff, sizeof tp);
    ram_trainer_params_init_sized(&tp, offsetof(ram_trainer_params, lr) + sizeof tp.lr);
    tp.optimizer = RAM_OPT_SGD;
    tp.lr = 0.01f;
    ram_trainer *t = NULL;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    lcg_state = 8;
    float *img = random_images(129, 256);
    int *labels = calloc(129, sizeof(int));
    ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, 128, NULL), RAM_OK);
    EXPECT_FAIL(ram_trainer_train_batch(t, img, labels, 129, NULL), RAM_ERR_INVALID_ARGUMENT);
    free(img), free(labels);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

START_TEST(test_newer_caller_params) {
    /* A caller compiled against a later libram with a longer struct: init
     * fills the part this library knows and says so in struct_size; create
     * accepts the longer struct (its unknown tail is ignored). */
    struct {
        ram_model_params p;
        int future[4];
    } big;
    memset(&big, 0xee, sizeof big);
    ram_model_params_init_sized(&big.p, sizeof big);
    ck_assert_uint_eq(big.p.struct_size, sizeof big.p);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(big.future[i], (int)0xeeeeeeee);
    big.p.struct_size = sizeof big;
    big.p.height = big.p.width = 12;
    big.p.glimpse.patch = 4;
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&big.p, &m), RAM_OK);
    ram_model_params got;
    ram_model_params_init(&got);
    ck_assert_int_eq(ram_model_get_params(m, &got), RAM_OK);
    ck_assert_int_eq(got.height, 12);
    ck_assert_int_eq(got.glimpse.patch, 4);
    ram_model_free(m);

    /* A size too small to hold struct_size: nothing is written. */
    ram_model_params tiny;
    memset(&tiny, 0x77, sizeof tiny);
    ram_model_params_init_sized(&tiny, sizeof(size_t) - 1);
    const unsigned char *b = (const unsigned char *)&tiny;
    for (size_t i = 0; i < sizeof tiny; i++)
        ck_assert_uint_eq(b[i], 0x77);
    ram_model_params_init_sized(NULL, sizeof tiny);
}
END_TEST

START_TEST(test_param_count) {
    ram_model_params p;
    ram_model_params_init(&p);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    const size_t C = p.channels, depth = p.glimpse.depth, P = p.glimpse.patch,
                 Hg = p.glimpse_hidden, Hl = p.loc_hidden, G = p.glimpse_out, H = p.core_hidden,
                 K = p.classes;
    const size_t want = Hg * (C * depth * P * P) + Hg /* glimpse -> h_g */
                        + Hl * 2 + Hl                 /* l -> h_l */
                        + G * Hg + G + G * Hl + G     /* h_g, h_l -> g */
                        + H * G + H * H + H           /* RNN core */
                        + 2 * H + 2                   /* location */
                        + K * H + K;                  /* classifier */
    ck_assert_uint_eq(ram_model_param_count(m), want);
    ck_assert_uint_eq(want, 209164); /* the paper's MNIST model, as a fixed point */
    ram_model_free(m);
}
END_TEST

/* More or fewer glimpses for the same weights: the copy looks where the
 * model looks for as many glimpses as they share, and a copy back to the
 * model's own count classifies exactly as it does. */
START_TEST(test_with_glimpses) {
    ram_model_params p;
    small_params(&p);
    ram_model *m = NULL, *more = NULL, *back = NULL, *fresh = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_model_create(&p, &fresh), RAM_OK);
    enum { N = 4 };
    float *img = random_images(N, 12 * 12);
    { /* one training step, so that m's weights are not those its seed gives */
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        ram_trainer_params tp;
        ram_trainer_params_init(&tp);
        tp.max_batch = N;
        tp.lr = 0.05f;
        ram_policy *pol = NULL;
        ram_trainer *t = NULL;
        ram_train_stats stats;
        const int labels[N] = {0, 1, 2, 3};
        ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
        ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, N, &stats), RAM_OK);
        ram_trainer_free(t);
        ram_policy_free(pol);
    }
    const char *names[] = {"a", "b", "c", "d"};
    ck_assert_int_eq(ram_model_set_class_names(m, names, 4), RAM_OK);
    ck_assert_int_eq(ram_model_with_glimpses(m, 5, 0, &more), RAM_OK);
    ck_assert_int_eq(ram_model_with_glimpses(more, 3, 0, &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(more, &q), RAM_OK);
    ck_assert_int_eq(q.glimpses, 5);
    ck_assert_int_eq(q.core_hidden, p.core_hidden);
    ck_assert_uint_eq(ram_model_param_count(more), ram_model_param_count(m));
    ck_assert_str_eq(ram_model_class_name(more, 2), "c");

    float locs3[N * 3 * 2], locs5[N * 5 * 2], probs[N * 4], probs_back[N * 4];
    ram_state *st = NULL, *st5 = NULL, *st_back = NULL;
    ck_assert_int_eq(ram_state_create(m, N, &st), RAM_OK);
    ck_assert_int_eq(ram_state_create(more, N, &st5), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, N, &st_back), RAM_OK);
    ck_assert_int_eq(ram_model_classify(m, st, img, N, NULL, probs, locs3), RAM_OK);
    ck_assert_int_eq(ram_model_classify(more, st5, img, N, NULL, NULL, locs5), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, st_back, img, N, NULL, probs_back, NULL), RAM_OK);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3 * 2; k++)
            ck_assert_float_eq_tol(locs5[i * 10 + k], locs3[i * 6 + k], 1e-6f);
    ck_assert_mem_eq(probs_back, probs, sizeof probs);
    /* ... which a model of the same seed, untrained, does not. */
    ck_assert_int_eq(ram_model_classify(fresh, st, img, N, NULL, probs_back, NULL), RAM_OK);
    ck_assert(memcmp(probs_back, probs, sizeof probs) != 0);
    /* A state is made for one count of glimpses. */
    EXPECT_FAIL(ram_model_classify(more, st, img, N, NULL, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);

    ram_model *bad = NULL; /* a failure leaves no model behind */
    EXPECT_FAIL(ram_model_with_glimpses(NULL, 5, 0, &bad), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_glimpses(m, 5, 0, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_glimpses(m, 0, 0, &bad), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_glimpses(m, 65, 0, &bad), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_glimpses(m, 4, 3, &bad), RAM_ERR_INVALID_ARGUMENT);

    /* Two objects: the glimpses must be twice the step between labels. */
    ram_model *pair = NULL, *pair6 = NULL;
    p.objects = 2;
    p.glimpses = 4;
    ck_assert_int_eq(ram_model_create(&p, &pair), RAM_OK);
    EXPECT_FAIL(ram_model_with_glimpses(pair, 5, 0, &bad), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_glimpses(pair, 6, 2, &bad), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(ram_model_with_glimpses(pair, 6, 0, &pair6), RAM_OK);
    ck_assert_int_eq(ram_model_get_params(pair6, &q), RAM_OK);
    ck_assert_int_eq(q.glimpses, 6);
    ck_assert_int_eq(q.emit_every, 3);

    ram_state_free(st);
    ram_state_free(st5);
    ram_state_free(st_back);
    ram_model_free(m);
    ram_model_free(more);
    ram_model_free(back);
    ram_model_free(pair);
    ram_model_free(pair6);
    ram_model_free(fresh);
    free(img);
}
END_TEST

/* Another sensor for the same weights: at the centre, where each square's
 * edges and cells fall on pixel edges, the soft copy of a hard model reads
 * what the model reads and classifies as it does; a copy back to the hard
 * sensor classifies exactly as the model; the weights are copied, not
 * remade from the seed. */
START_TEST(test_with_sensor) {
    ram_model_params p;
    small_params(&p);
    p.glimpse.depth = 2; /* squares of 4 and 8 pixels, cells of 1 and 2 */
    ram_model *m = NULL, *soft = NULL, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    enum { N = 4 };
    float *img = random_images(N, 12 * 12);
    const char *names[] = {"a", "b", "c", "d"};
    ck_assert_int_eq(ram_model_set_class_names(m, names, 4), RAM_OK);
    ck_assert_int_eq(ram_model_with_sensor(m, RAM_SENSOR_SOFT, &soft), RAM_OK);
    ck_assert_int_eq(ram_model_with_sensor(soft, RAM_SENSOR_HARD, &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(soft, &q), RAM_OK);
    ck_assert_int_eq(q.sensor, RAM_SENSOR_SOFT);
    ck_assert_int_eq(q.glimpse.depth, 2);
    ck_assert_uint_eq(ram_model_param_count(soft), ram_model_param_count(m));
    ck_assert_str_eq(ram_model_class_name(soft, 3), "d");
    ck_assert_int_eq(ram_model_get_params(back, &q), RAM_OK);
    ck_assert_int_eq(q.sensor, RAM_SENSOR_HARD);

    float probs[N * 4], probs_soft[N * 4], probs_back[N * 4];
    ram_state *st = NULL, *st_soft = NULL;
    ck_assert_int_eq(ram_state_create(m, N, &st), RAM_OK);
    ck_assert_int_eq(ram_state_create(soft, N, &st_soft), RAM_OK);
    ck_assert_int_eq(ram_model_classify_ex(m, st, img, N, RAM_LOCS_CENTER, NULL, NULL, probs, NULL),
                     RAM_OK);
    ck_assert_int_eq(
        ram_model_classify_ex(soft, st_soft, img, N, RAM_LOCS_CENTER, NULL, NULL, probs_soft, NULL),
        RAM_OK);
    for (int i = 0; i < N * 4; i++)
        ck_assert_float_eq_tol(probs_soft[i], probs[i], 1e-5f);
    ck_assert_int_eq(ram_model_classify(m, st, img, N, NULL, probs, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, st, img, N, NULL, probs_back, NULL), RAM_OK);
    ck_assert_mem_eq(probs_back, probs, sizeof probs);

    ram_model *bad = NULL; /* a failure leaves no model behind */
    EXPECT_FAIL(ram_model_with_sensor(NULL, RAM_SENSOR_SOFT, &bad), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_sensor(m, RAM_SENSOR_SOFT, NULL), RAM_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(ram_model_with_sensor(m, (ram_sensor)7, &bad), RAM_ERR_INVALID_ARGUMENT);
    ram_model *sampled = NULL; /* cell samples are the hard sensor's alone */
    p.cell_samples = 2;
    ck_assert_int_eq(ram_model_create(&p, &sampled), RAM_OK);
    EXPECT_FAIL(ram_model_with_sensor(sampled, RAM_SENSOR_SOFT, &bad), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(bad);

    ram_state_free(st);
    ram_state_free(st_soft);
    ram_model_free(m);
    ram_model_free(soft);
    ram_model_free(back);
    ram_model_free(sampled);
    free(img);
}
END_TEST

/* ---- threads ---- */

enum { TN = 32, TREPS = 20 };

typedef struct {
    const ram_model *m;
    const float *img;
    float probs[TN * 10], locs[TN * 6 * 2];
    int labels[TN];
    ram_status status;
    int mismatches;
    const float *want_probs, *want_locs;
} thread_job;

static void *classify_job(void *arg) {
    thread_job *j = arg;
    ram_state *st = NULL;
    j->status = ram_state_create(j->m, TN, &st);
    for (int r = 0; r < TREPS && j->status == RAM_OK; r++) {
        j->status = ram_model_classify(j->m, st, j->img, TN, j->labels, j->probs, j->locs);
        if (j->want_probs && (memcmp(j->probs, j->want_probs, sizeof j->probs) != 0 ||
                              memcmp(j->locs, j->want_locs, sizeof j->locs) != 0))
            j->mismatches++;
    }
    ram_state_free(st);
    return NULL;
}

START_TEST(test_classify_threads) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.init_scale = 0.3f; /* livelier locations than the default init */
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    lcg_state = 21;
    float *img = random_images(TN, 28 * 28);

    static thread_job ref, jobs[2];
    ref.m = m, ref.img = img;
    classify_job(&ref);
    ck_assert_int_eq(ref.status, RAM_OK);
    /* The locations are not all the same, so a mix-up between threads would show. */
    ck_assert_float_ne(ref.locs[2 * 6 + 2], ref.locs[4 * 6 * 2 + 2]);

    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        jobs[k] = (thread_job){.m = m, .img = img, .want_probs = ref.probs, .want_locs = ref.locs};
        ck_assert_int_eq(pthread_create(&th[k], NULL, classify_job, &jobs[k]), 0);
    }
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        ck_assert_int_eq(jobs[k].status, RAM_OK);
        ck_assert_int_eq(jobs[k].mismatches, 0);
        ck_assert_mem_eq(jobs[k].labels, ref.labels, sizeof ref.labels);
    }
    free(img);
    ram_model_free(m);
}
END_TEST

static Suite *api_suite(void) {
    Suite *s = suite_create("api");
    TCase *basics = tcase_create("basics");
    tcase_add_test(basics, test_version);
    tcase_add_test(basics, test_status_strings);
    tcase_add_test(basics, test_free_null);
    tcase_add_test(basics, test_last_error_is_per_thread);
    tcase_add_test(basics, test_param_count);
    tcase_add_test(basics, test_with_glimpses);
    tcase_add_test(basics, test_with_sensor);
    suite_add_tcase(s, basics);
    TCase *misuse = tcase_create("misuse");
    tcase_add_test(misuse, test_model_misuse);
    tcase_add_test(misuse, test_classify_misuse);
    tcase_add_test(misuse, test_trainer_misuse);
    tcase_add_test(misuse, test_old_caller_params);
    tcase_add_test(misuse, test_newer_caller_params);
    suite_add_tcase(s, misuse);
    TCase *threads = tcase_create("threads");
    /* The paper-sized model, 60 passes: left out of scripts/test.sh's
     * valgrind pass (3 min there); check_threads covers the same ground on a
     * small model, and the TSan pass runs this one. */
    tcase_set_tags(threads, "long");
    tcase_add_test(threads, test_classify_threads);
    suite_add_tcase(s, threads);
    return s;
}

int main(void) {
    return run_suite(api_suite());
}
