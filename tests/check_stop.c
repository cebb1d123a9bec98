/* Stopping when sure (ram_model_classify_stop): each image's steps, label
 * and probabilities against a reference made of whole forward passes of the
 * same weights with 1, 2, ..., T glimpses (a model's weights do not depend
 * on T), on one thread and on a team's slices, floats and bytes. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg = 77;
static float urand(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

enum { N = 40, T = 5, C = 2, IMG_H = 18, IMG_W = 20, K = 4 };

typedef struct arch {
    ram_core_type core;
    int layers, context, contrast;
    int wide; /* an 8x8 retina with 3 scales: too large a glimpse for the
                 batch-1 team to take whole in every thread (forward.c) */
} arch;

static const arch archs[] = {
    {RAM_CORE_RNN, 1, 0, 0, 0}, {RAM_CORE_LSTM, 1, 0, 0, 0}, {RAM_CORE_LSTM, 2, 4, 0, 0},
    {RAM_CORE_RNN, 2, 3, 1, 0}, {RAM_CORE_LSTM, 1, 0, 0, 1},
};
enum { N_ARCHS = sizeof archs / sizeof *archs };

static void params(ram_model_params *p, const arch *a, int glimpses) {
    ram_model_params_init(p);
    p->channels = C;
    p->height = IMG_H;
    p->width = IMG_W;
    p->glimpse.patch = a->wide ? 8 : 4;
    p->glimpse.depth = a->wide ? 3 : 2;
    p->glimpse_hidden = 12;
    p->loc_hidden = 8;
    p->glimpse_out = 16;
    p->core_hidden = 20;
    p->core = a->core;
    p->core_layers = a->layers;
    p->upper_core = RAM_CORE_LSTM;
    p->context = a->context;
    p->contrast = a->contrast;
    p->glimpses = glimpses;
    p->classes = K;
    p->init_scale = 0.6f; /* confident enough that thresholds split the batch */
    p->seed = 3;
}

/* ref_probs[t][i]: image i's probabilities after t + 1 glimpses, from a
 * model of t + 1 glimpses with m's weights. */
static void reference(const ram_model *m, const arch *a, const float *img, float ref[T][N * K]) {
    for (int t = 0; t < T; t++) {
        ram_model_params p;
        params(&p, a, t + 1);
        ram_model *mt;
        ram_state *st;
        ck_assert_int_eq(ram_model_create(&p, &mt), RAM_OK);
        ck_assert_int_eq((int)mt->n_params, (int)m->n_params);
        memcpy(mt->w, m->w, sizeof(float) * m->n_params);
        ram_model_touch(mt);
        ck_assert_int_eq(ram_state_create(mt, N, &st), RAM_OK);
        ck_assert_int_eq(ram_model_classify(mt, st, img, N, NULL, ref[t], NULL), RAM_OK);
        ram_state_free(st);
        ram_model_free(mt);
    }
}

static float top(const float *p) {
    float b = p[0];
    for (int k = 1; k < K; k++)
        if (p[k] > b) b = p[k];
    return b;
}

/* Every image stops where the reference's top probability first reaches
 * the threshold, with the reference's probabilities there (the batch's rows
 * change from step to step, so the kernels and their rounding may differ:
 * a tolerance, and the label the same unless two classes tie to it). */
static void check_against(const float ref[T][N * K], float thr, const int *steps, const int *labels,
                          const float *probs) {
    for (int i = 0; i < N; i++) {
        int want = T;
        bool tie = false; /* within rounding of the threshold: could go either way */
        for (int t = 0; t < T && !tie; t++) {
            const float p = top(ref[t] + i * K);
            tie = thr > 0.0f && thr < 1.0f && fabsf(p - thr) < 1e-5f;
            if (p >= thr) {
                want = t + 1;
                break;
            }
        }
        if (tie) continue;
        ck_assert_msg(steps[i] == want, "threshold %g image %d: %d glimpses, reference %d",
                      (double)thr, i, steps[i], want);
        const float *r = ref[want - 1] + i * K;
        for (int k = 0; k < K; k++)
            ck_assert_msg(fabsf(probs[i * K + k] - r[k]) < 1e-5f,
                          "threshold %g image %d class %d: %g, reference %g", (double)thr, i, k,
                          (double)probs[i * K + k], (double)r[k]);
        ck_assert_int_eq(labels[i], ram_argmax(probs + i * K, K));
    }
}

START_TEST(stops_where_the_reference_does) {
    const arch *a = &archs[_i];
    ram_model_params p;
    params(&p, a, T);
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    static float img[N * C * IMG_H * IMG_W];
    static uint8_t bytes[N * C * IMG_H * IMG_W];
    for (size_t i = 0; i < sizeof bytes; i++) {
        bytes[i] = (uint8_t)(urand() * 256.0f);
        img[i] = (float)bytes[i] / 255.0f;
    }
    static float ref[T][N * K];
    reference(m, a, img, ref);
    /* Thresholds at the quartiles of the second glimpse's top probability,
     * and the extremes. */
    float tops[N];
    for (int i = 0; i < N; i++)
        tops[i] = top(ref[1] + i * K);
    float sorted[N];
    memcpy(sorted, tops, sizeof sorted);
    for (int i = 1; i < N; i++)
        for (int k = i; k > 0 && sorted[k] < sorted[k - 1]; k--) {
            const float x = sorted[k];
            sorted[k] = sorted[k - 1];
            sorted[k - 1] = x;
        }
        /* (Midway between two images' values: no image sits on a threshold,
         * where rounding could tip it either way.) */
#define MID(k) (0.5f * (sorted[k] + sorted[(k) + 1]))
    const float thresholds[] = {0.0f, MID(N / 4), MID(N / 2), MID(3 * N / 4), 1.0f};
#undef MID
    ram_state *one, *team;
    ck_assert_int_eq(ram_state_create(m, N, &one), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(m, N, 2, &team), RAM_OK); /* N > 8: slices */
    ram_state *small;
    ck_assert_int_eq(ram_state_create_threads(m, 8, 2, &small), RAM_OK);
    int steps[N], labels[N], steps_b[N], labels_b[N];
    float probs[N * K], probs_b[N * K];
    int early = 0, late = 0;
    for (size_t q = 0; q < sizeof thresholds / sizeof *thresholds; q++) {
        const float thr = thresholds[q];
        ck_assert_int_eq(ram_model_classify_stop(m, one, img, N, thr, labels, probs, steps),
                         RAM_OK);
        check_against(ref, thr, steps, labels, probs);
        for (int i = 0; i < N; i++) {
            early += steps[i] < T;
            late += steps[i] == T;
        }
        /* Bytes: the bits of their floats.  A team's slices: the same
         * steps, and the probabilities to rounding. */
        ck_assert_int_eq(
            ram_model_classify_stop_u8(m, one, bytes, N, thr, labels_b, probs_b, steps_b), RAM_OK);
        ck_assert_mem_eq(probs, probs_b, sizeof probs);
        ck_assert_mem_eq(steps, steps_b, sizeof steps);
        ck_assert_int_eq(ram_model_classify_stop(m, team, img, N, thr, labels_b, probs_b, steps_b),
                         RAM_OK);
        check_against(ref, thr, steps_b, labels_b, probs_b);
        /* Small calls on a team: every layer's rows split between the
         * threads, or the caller alone, as the state's timing chooses (it
         * alternates while it measures, so two calls see both): the bits of
         * the one-thread state either way, the finished images leaving as
         * the batch shrinks to one. */
        for (int n = 1; n <= 8; n += 3)
            for (int call = 0; call < 2; call++) {
                ck_assert_int_eq(ram_model_classify_stop(m, one, img, n, thr, NULL, probs, steps),
                                 RAM_OK);
                ck_assert_int_eq(
                    ram_model_classify_stop(m, small, img, n, thr, NULL, probs_b, steps_b), RAM_OK);
                ck_assert_mem_eq(probs, probs_b, sizeof(float) * n * K);
                ck_assert_mem_eq(steps, steps_b, sizeof(int) * n);
            }
    }
    ck_assert_int_gt(early, 0);
    ck_assert_int_gt(late, 0);
    /* Threshold 0: one glimpse each; no outputs but the steps is fine. */
    ck_assert_int_eq(ram_model_classify_stop(m, one, img, 3, 0.0f, NULL, NULL, steps), RAM_OK);
    ck_assert_int_eq(steps[0] + steps[1] + steps[2], 3);
    ram_state_free(one);
    ram_state_free(team);
    ram_state_free(small);
    ram_model_free(m);
}
END_TEST

START_TEST(refusals) {
    ram_model_params p;
    params(&p, &archs[1], T);
    ram_model *m;
    ram_state *st;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_state_create(m, 4, &st), RAM_OK);
    static float img[4 * C * IMG_H * IMG_W];
    int steps[4];
    const float bad[] = {-0.01f, 1.01f, NAN, INFINITY};
    for (int b = 0; b < 4; b++)
        ck_assert_int_eq(ram_model_classify_stop(m, st, img, 4, bad[b], NULL, NULL, steps),
                         RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_stop(NULL, st, img, 4, 0.5f, NULL, NULL, steps),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_stop(m, st, NULL, 4, 0.5f, NULL, NULL, steps),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_stop(m, st, img, 5, 0.5f, NULL, NULL, steps),
                     RAM_ERR_INVALID_ARGUMENT);
    /* A NaN pixel under a glimpse: NUMERIC, naming the image. */
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = 0.5f;
    for (int c = 0; c < C; c++)
        for (int y = 0; y < IMG_H; y++)
            for (int x = 0; x < IMG_W; x++)
                img[((2 * C + c) * IMG_H + y) * IMG_W + x] = NAN; /* all of image 2 */
    ck_assert_int_eq(ram_model_classify_stop(m, st, img, 4, 0.5f, NULL, NULL, steps),
                     RAM_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "image 2"));
    ram_state_free(st);
    ram_model_free(m);
    /* Several objects: refused. */
    p.glimpses = 4;
    p.objects = 2;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ck_assert_int_eq(ram_state_create(m, 4, &st), RAM_OK);
    ck_assert_int_eq(ram_model_classify_stop(m, st, img, 1, 0.5f, NULL, NULL, steps),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "objects"));
    ram_state_free(st);
    ram_model_free(m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("stop");
    TCase *tc = tcase_create("stop");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, stops_where_the_reference_does, 0, N_ARCHS);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
