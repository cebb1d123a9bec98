/* The learned stop unit (stop.c): the per-step probabilities against whole
 * forward passes of 1..T glimpses, the unit's REINFORCE gradient against
 * the exact gradient of the expected reward, a fit that must find the one
 * best policy of a made-up set, the threshold rule as a unit, the file, and
 * the refusals. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t lcg = 991;
static float urand(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

enum { N = 24, T = 4, C = 1, IMG_H = 16, IMG_W = 16, K = 4 };

static void params(ram_model_params *p, int glimpses) {
    ram_model_params_init(p);
    p->channels = C;
    p->height = IMG_H;
    p->width = IMG_W;
    p->glimpse.patch = 4;
    p->glimpse.depth = 2;
    p->glimpse_hidden = 12;
    p->loc_hidden = 8;
    p->glimpse_out = 16;
    p->core_hidden = 20;
    p->core = RAM_CORE_LSTM;
    p->glimpses = glimpses;
    p->classes = K;
    p->init_scale = 0.6f; /* confident enough that a unit splits the batch */
    p->seed = 5;
}

static float images[N * C * IMG_H * IMG_W];
static uint8_t bytes[N * C * IMG_H * IMG_W];

static void make_images(void) {
    for (size_t i = 0; i < sizeof bytes; i++) {
        bytes[i] = (uint8_t)(urand() * 256.0f);
        images[i] = (float)bytes[i] / 255.0f;
    }
}

/* Step t's probabilities from a model of t + 1 glimpses with m's weights
 * (the weights do not depend on T), on one thread and on a team's slices. */
START_TEST(step_probs_are_the_shorter_models) {
    make_images();
    ram_model_params p;
    params(&p, T);
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ram_state *one, *team;
    ck_assert_int_eq(ram_state_create(m, N, &one), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(m, N, 2, &team), RAM_OK);
    static float probs[N * T * K], probs2[N * T * K], ref[N * K];
    ck_assert_int_eq(ram_model_step_probs(m, one, images, N, probs), RAM_OK);
    ck_assert_int_eq(ram_model_step_probs(m, team, images, N, probs2), RAM_OK);
    for (int t = 0; t < T; t++) {
        ram_model_params pt;
        params(&pt, t + 1);
        ram_model *mt;
        ram_state *st;
        ck_assert_int_eq(ram_model_create(&pt, &mt), RAM_OK);
        memcpy(mt->w, m->w, sizeof(float) * m->n_params);
        ram_model_touch(mt);
        ck_assert_int_eq(ram_state_create(mt, N, &st), RAM_OK);
        ck_assert_int_eq(ram_model_classify(mt, st, images, N, NULL, ref, NULL), RAM_OK);
        for (int i = 0; i < N; i++)
            for (int k = 0; k < K; k++) {
                const float r = ref[i * K + k], a = probs[(i * T + t) * K + k],
                            b = probs2[(i * T + t) * K + k];
                ck_assert_msg(fabsf(a - r) < 1e-5f && fabsf(b - r) < 1e-5f,
                              "image %d step %d class %d: %g and %g, reference %g", i, t, k,
                              (double)a, (double)b, (double)r);
            }
        ram_state_free(st);
        ram_model_free(mt);
    }
    ram_state_free(one);
    ram_state_free(team);
    ram_model_free(m);
}
END_TEST

/* The threshold rule as a unit: w = (1, 0, 0, log(1 - P), ...) stops where
 * classify_stop(P) does, thresholds midway between images' values. */
START_TEST(a_unit_can_be_the_threshold_rule) {
    make_images();
    ram_model_params p;
    params(&p, T);
    ram_model *m;
    ram_state *st;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_state_create(m, N, &st), RAM_OK);
    static float probs[N * T * K];
    ck_assert_int_eq(ram_model_step_probs(m, st, images, N, probs), RAM_OK);
    float tops[N];
    for (int i = 0; i < N; i++) { /* the second glimpse's top probabilities, sorted */
        const float *q = probs + (i * T + 1) * K;
        tops[i] = q[ram_argmax(q, K)];
    }
    for (int i = 1; i < N; i++)
        for (int k = i; k > 0 && tops[k] < tops[k - 1]; k--) {
            const float x = tops[k];
            tops[k] = tops[k - 1];
            tops[k - 1] = x;
        }
    int early = 0, late = 0;
    for (int q = 1; q < 4; q++) {
        const float thr = 0.5f * (tops[q * N / 4] + tops[q * N / 4 + 1]);
        float w[RAM_STOP_WEIGHTS(T)] = {1.0f, 0.0f, 0.0f};
        for (int t = 0; t < T; t++)
            w[3 + t] = logf(1.0f - thr);
        ck_assert_int_eq(ram_model_set_stop_unit(m, w, 0.0f), RAM_OK);
        int s1[N], s2[N], s3[N], l1[N], l2[N];
        float p1[N * K], p2[N * K];
        ck_assert_int_eq(ram_model_classify_stop(m, st, images, N, thr, l1, p1, s1), RAM_OK);
        ck_assert_int_eq(ram_model_classify_stop_unit(m, st, images, N, l2, p2, s2), RAM_OK);
        ck_assert_mem_eq(s1, s2, sizeof s1);
        ck_assert_mem_eq(l1, l2, sizeof l1);
        ck_assert_mem_eq(p1, p2, sizeof p1);
        ck_assert_int_eq(ram_model_classify_stop_unit_u8(m, st, bytes, N, NULL, p2, s3), RAM_OK);
        ck_assert_mem_eq(s1, s3, sizeof s1);
        for (int i = 0; i < N; i++) {
            early += s1[i] < T;
            late += s1[i] == T;
        }
    }
    ck_assert_int_gt(early, 0);
    ck_assert_int_gt(late, 0);
    ram_state_free(st);
    ram_model_free(m);
}
END_TEST

/* The expected reward of one image under weights w, exactly: the sum over
 * the steps of P(stop there) x reward there. */
static double expected_reward(const double *w, const float *f, const unsigned char *right,
                              double cost) {
    double go_on = 1.0, J = 0.0;
    for (int t = 0; t < T; t++) {
        double stop = 1.0;
        if (t < T - 1) {
            const double a = w[0] * f[3 * t] + w[1] * f[3 * t + 1] + w[2] * f[3 * t + 2] + w[3 + t];
            stop = 1.0 / (1.0 + exp(-a));
        }
        J += go_on * stop * ((right[t] ? 1.0 : 0.0) - cost * (t + 1));
        go_on *= 1.0 - stop;
    }
    return J;
}

/* REINFORCE is unbiased: the mean of many sampled gradients, with and
 * without a baseline, is the exact gradient of the negative expected
 * reward (central differences of expected_reward()), within 5 standard
 * errors of the mean. */
START_TEST(reinforce_gradient_is_the_exact_one) {
    enum { D = RAM_STOP_WEIGHTS(T), SAMPLES = 200000 };
    const float cost = 0.07f;
    float feats[T * 3], q[K];
    unsigned char right[T] = {0, 1, 0, 1};
    for (int t = 0; t < T; t++) {
        float s = 0;
        for (int k = 0; k < K; k++)
            s += q[k] = 0.05f + urand();
        for (int k = 0; k < K; k++)
            q[k] /= s;
        ram_stop_features(q, K, feats + 3 * t);
    }
    const float w[D] = {0.8f, -0.3f, 0.5f, -0.2f, 0.4f, 0.1f, 0.0f};
    double wd[D], exact[D];
    for (int j = 0; j < D; j++)
        wd[j] = w[j];
    for (int j = 0; j < D; j++) {
        const double h = 1e-5, keep = wd[j];
        wd[j] = keep + h;
        const double up = expected_reward(wd, feats, right, cost);
        wd[j] = keep - h;
        const double down = expected_reward(wd, feats, right, cost);
        wd[j] = keep;
        exact[j] = -(up - down) / (2 * h);
    }
    const float baselines[T] = {0.3f, 0.5f, -0.2f, 0.0f};
    for (int with_base = 0; with_base < 2; with_base++) {
        ram_rng rng;
        ram_rng_seed(&rng, 17 + with_base);
        static double sum[D], sq[D];
        memset(sum, 0, sizeof sum);
        memset(sq, 0, sizeof sq);
        for (int s = 0; s < SAMPLES; s++) {
            double g[D] = {0};
            ram_stop_sample_gradient(w, feats, right, T, cost, &rng, with_base ? baselines : NULL,
                                     1.0f, g, NULL);
            for (int j = 0; j < D; j++) {
                sum[j] += g[j];
                sq[j] += g[j] * g[j];
            }
        }
        for (int j = 0; j < D; j++) {
            const double mean = sum[j] / SAMPLES,
                         se = sqrt((sq[j] / SAMPLES - mean * mean) / SAMPLES);
            if (j == 3 + T - 1) { /* no decision after the last glimpse */
                ck_assert(sum[j] == 0.0 && fabs(exact[j]) < 1e-9);
                continue;
            }
            ck_assert_msg(fabs(mean - exact[j]) < 5 * se + 1e-6,
                          "baseline %d weight %d: REINFORCE %g (standard error %g), exact %g",
                          with_base, j, mean, se, exact[j]);
            ck_assert_msg(fabs(exact[j]) > 10 * se, "weight %d: a gradient too small to test", j);
        }
    }
}
END_TEST

/* A made-up set with one best policy.  Easy images: the top class right
 * and sure (0.97) from the first glimpse.  Hard ones: wrong and unsure
 * until the last glimpse, then right.  At cost 0.05 the best is to stop the
 * easy ones at once and take every glimpse of the hard ones (1 - 0.2
 * against 0 - 0.05); at cost 0.5, to stop everything at once (-0.5
 * against 1 - 2). */
START_TEST(fit_finds_the_best_policy) {
    enum { n = 400 };
    ram_model_params p;
    params(&p, T);
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    static float probs[n * T * K];
    static int labels[n];
    for (int i = 0; i < n; i++) {
        const bool easy = i % 2 == 0;
        labels[i] = easy ? 0 : 1;
        for (int t = 0; t < T; t++) {
            float *q = probs + ((size_t)i * T + t) * K;
            const float jitter = 0.02f * urand();
            if (easy) {
                q[0] = 0.97f - jitter, q[1] = 0.01f + jitter, q[2] = 0.01f, q[3] = 0.01f;
            } else if (t < T - 1) {
                q[0] = 0.35f + jitter, q[1] = 0.3f - jitter, q[2] = 0.2f, q[3] = 0.15f;
            } else {
                q[0] = 0.1f, q[1] = 0.8f, q[2] = 0.05f + jitter, q[3] = 0.05f - jitter;
            }
        }
    }
    const float costs[2] = {0.05f, 0.5f};
    for (int c = 0; c < 2; c++) {
        ram_stop_params sp;
        ram_stop_params_init(&sp);
        sp.cost = costs[c];
        sp.epochs = 60;
        sp.batch = 64;
        ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, n, &sp), RAM_OK);
        float w[RAM_STOP_WEIGHTS(T)], got_cost;
        ck_assert_int_eq(ram_model_stop_unit(m, w, &got_cost), RAM_OK);
        ck_assert(got_cost == costs[c]);
        for (int i = 0; i < n; i++) {
            int stop = T - 1;
            for (int t = 0; t < T - 1; t++)
                if (ram_stop_logit(w, probs + ((size_t)i * T + t) * K, K, t) > 0.0f) {
                    stop = t;
                    break;
                }
            const int want = c == 1 || i % 2 == 0 ? 0 : T - 1;
            ck_assert_msg(stop == want, "cost %g image %d: stops after glimpse %d, not %d",
                          (double)costs[c], i, stop + 1, want + 1);
        }
    }
    /* Deterministic for a seed. */
    ram_stop_params sp;
    ram_stop_params_init(&sp);
    sp.epochs = 5;
    float w1[RAM_STOP_WEIGHTS(T)], w2[RAM_STOP_WEIGHTS(T)];
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, n, &sp), RAM_OK);
    ck_assert_int_eq(ram_model_stop_unit(m, w1, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, n, &sp), RAM_OK);
    ck_assert_int_eq(ram_model_stop_unit(m, w2, NULL), RAM_OK);
    ck_assert_mem_eq(w1, w2, sizeof w1);
    ram_model_free(m);
}
END_TEST

/* Saved and loaded bit for bit; a file without a unit has no STOP chunk;
 * a training step removes the unit. */
START_TEST(the_unit_in_the_file_and_after_training) {
    ram_model_params p;
    params(&p, T);
    ram_model *m, *back;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    char path[] = "stop-unit-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
    ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
    ck_assert_int_eq(ram_model_stop_unit(back, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "no stop unit"));
    ram_model_free(back);
    const float w[RAM_STOP_WEIGHTS(T)] = {1.5f, -0.25f, 3.0f, 0.125f, -7.0f, 1e-3f, 2.0f};
    ck_assert_int_eq(ram_model_set_stop_unit(m, w, 0.03f), RAM_OK);
    ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
    ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
    float got[RAM_STOP_WEIGHTS(T)], cost;
    ck_assert_int_eq(ram_model_stop_unit(back, got, &cost), RAM_OK);
    ck_assert_mem_eq(got, w, sizeof w);
    ck_assert(cost == 0.03f);
    ram_model_free(back);
    unlink(path);
    /* One training step: the unit describes weights that are gone. */
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    ram_trainer *tr;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &tr), RAM_OK);
    make_images();
    int labels[4] = {0, 1, 2, 3};
    ck_assert_int_eq(ram_trainer_train_batch(tr, images, labels, 4, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_stop_unit(m, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    ram_trainer_free(tr);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

/* A model file whose STOP chunk says `count` weights of `w` (n floats)
 * and `cost`, written to path. */
static void write_with_stop(const ram_model *m, const char *path, float cost, uint32_t count,
                            const float *w, int n) {
    ram_buf b = {0}, c = {0};
    ram_file_begin(&b);
    ram_model_serialize(m, &b);
    ram_buf_f32(&c, cost);
    ram_buf_u32(&c, count);
    ram_buf_floats(&c, w, (size_t)n);
    ram_file_chunk(&b, RAM_TAG('S', 'T', 'O', 'P'), &c);
    free(c.data);
    ck_assert_int_eq(ram_file_finish_and_write(&b, path), RAM_OK);
}

/* Hostile STOP chunks: a count that is not 3 + glimpses, a short chunk,
 * bytes after the weights, a NaN weight, a negative cost: FORMAT, with a
 * message, never a unit of the wrong size. */
START_TEST(bad_stop_chunks) {
    ram_model_params p;
    params(&p, T);
    ram_model *m, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    char path[] = "stop-unit-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    float w[RAM_STOP_WEIGHTS(T) + 1] = {1, 0, 0, -2, -2, -2, -2, 5};
    const int d = RAM_STOP_WEIGHTS(T);
    write_with_stop(m, path, 0.01f, (uint32_t)d, w, d); /* the good one */
    ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
    ck_assert_int_eq(ram_model_stop_unit(back, NULL, NULL), RAM_OK);
    ram_model_free(back);
    const struct {
        float cost;
        uint32_t count;
        int n;
        float nan_at;
    } bad[] = {{0.01f, (uint32_t)d + 1, d + 1, -1},
               {0.01f, (uint32_t)d - 1, d - 1, -1},
               {0.01f, (uint32_t)d, d - 1, -1},
               {0.01f, (uint32_t)d, d + 1, -1},
               {0.01f, 1u << 30, d, -1},
               {0.01f, (uint32_t)d, d, 2},
               {-1.0f, (uint32_t)d, d, -1},
               {NAN, (uint32_t)d, d, -1}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        float v[RAM_STOP_WEIGHTS(T) + 1];
        memcpy(v, w, sizeof v);
        if (bad[k].nan_at >= 0) v[(int)bad[k].nan_at] = NAN;
        write_with_stop(m, path, bad[k].cost, bad[k].count, v, bad[k].n);
        back = NULL;
        ck_assert_msg(ram_model_load(path, &back) == RAM_ERR_FORMAT, "case %zu loaded", k);
        ck_assert_ptr_null(back);
        const char *e = ram_last_error();
        ck_assert_msg(strstr(e, "STOP") || strstr(e, "stop unit"), "case %zu: %s", k, e);
    }
    unlink(path);
    ram_model_free(m);
}
END_TEST

START_TEST(refusals) {
    ram_model_params p;
    params(&p, T);
    ram_model *m;
    ram_state *st;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_state_create(m, 4, &st), RAM_OK);
    int steps[4];
    ck_assert_int_eq(ram_model_classify_stop_unit(m, st, images, 4, NULL, NULL, steps),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "no stop unit"));
    ck_assert_int_eq(ram_model_step_probs(m, st, images, 4, NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_step_probs(m, st, images, 5, (float[5 * T * K]){0}),
                     RAM_ERR_INVALID_ARGUMENT);
    static float probs[4 * T * K];
    for (size_t v = 0; v < sizeof probs / sizeof *probs; v++)
        probs[v] = 1.0f / K;
    int labels[4] = {0, 1, 2, 3};
    ram_stop_params sp;
    ram_stop_params_init(&sp);
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_OK);
    ck_assert_int_eq(ram_model_fit_stop(NULL, probs, labels, 4, &sp), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 0, &sp), RAM_ERR_INVALID_ARGUMENT);
    labels[2] = K;
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_INVALID_ARGUMENT);
    labels[2] = 2;
    const float bad_costs[3] = {-0.1f, NAN, INFINITY};
    for (int b = 0; b < 3; b++) {
        sp.cost = bad_costs[b];
        ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_INVALID_ARGUMENT);
    }
    ram_stop_params_init(&sp);
    sp.lr = 0.0f;
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_INVALID_ARGUMENT);
    ram_stop_params_init(&sp);
    probs[5] = NAN;
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_NUMERIC);
    probs[5] = 1.5f;
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_NUMERIC);
    /* a failed fit leaves the unit of the good one */
    ck_assert_int_eq(ram_model_stop_unit(m, NULL, NULL), RAM_OK);
    float w[RAM_STOP_WEIGHTS(T)] = {0};
    w[4] = NAN;
    ck_assert_int_eq(ram_model_set_stop_unit(m, w, 0.0f), RAM_ERR_INVALID_ARGUMENT);
    w[4] = 0;
    ck_assert_int_eq(ram_model_set_stop_unit(m, w, -1.0f), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_set_stop_unit(m, NULL, 0.0f), RAM_OK); /* removed */
    ck_assert_int_eq(ram_model_stop_unit(m, NULL, NULL), RAM_ERR_INVALID_ARGUMENT);
    ram_state_free(st);
    ram_model_free(m);
    /* One glimpse, or several objects: no unit. */
    params(&p, 1);
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_model_set_stop_unit(m, w, 0.0f), RAM_ERR_INVALID_ARGUMENT);
    ram_model_free(m);
    params(&p, T);
    p.objects = 2;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_model_fit_stop(m, probs, labels, 4, &sp), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "objects"));
    ram_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("stop_unit");
    TCase *tc = tcase_create("stop_unit");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, step_probs_are_the_shorter_models);
    tcase_add_test(tc, a_unit_can_be_the_threshold_rule);
    tcase_add_test(tc, reinforce_gradient_is_the_exact_one);
    tcase_add_test(tc, fit_finds_the_best_policy);
    tcase_add_test(tc, the_unit_in_the_file_and_after_training);
    tcase_add_test(tc, bad_stop_chunks);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
