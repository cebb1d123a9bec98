/* REINFORCE: the score-function estimators against gradients known in closed
 * form, the baseline's variance reduction, the location policy's sampling and
 * returns, and the learned baseline's own gradient. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fixed-seed RNG of the test's own (xorshift64*, Box-Muller) ---- */

static uint64_t xs_state;
static double xs_uniform(void) { /* (0, 1) */
    xs_state ^= xs_state >> 12;
    xs_state ^= xs_state << 25;
    xs_state ^= xs_state >> 27;
    return ((xs_state * 2685821657736338717ULL >> 11) + 0.5) * 0x1.0p-53;
}
static double xs_normal(void) {
    return sqrt(-2 * log(xs_uniform())) * cos(6.283185307179586 * xs_uniform());
}

enum { NS = 200000 };

typedef struct {
    double mean, se, var; /* of the per-sample values */
} moments;

static moments stats(const float *v, size_t n, size_t stride, double sign) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        double x = sign * v[i * stride];
        s += x;
        s2 += x * x;
    }
    moments m;
    m.mean = s / n;
    m.var = (s2 - s * s / n) / (n - 1);
    m.se = sqrt(m.var / n);
    return m;
}

/* Within `k` standard errors, and the test must be sharp enough to mean
 * something: the standard error small against the quantity itself. */
static void expect_close(moments m, double want, const char *what) {
    ck_assert_msg(m.se < 0.05 * fabs(want) + 1e-3, "%s: standard error %g too large to test", what,
                  m.se);
    ck_assert_msg(fabs(m.mean - want) < 4 * m.se, "%s: estimate %g, exact %g (se %g)", what, m.mean,
                  want, m.se);
}

/* ---- (a) unbiased against closed forms ---- */

START_TEST(test_gaussian_known_gradient) {
    xs_state = 0x9e3779b97f4a7c15ULL;
    const float mu0 = 0.3f, s = 0.25f, a = -0.4f;
    float *x = malloc(sizeof(float) * NS), *mu = malloc(sizeof(float) * NS),
          *R = malloc(sizeof(float) * NS), *dmu = malloc(sizeof(float) * NS);
    for (int i = 0; i < NS; i++) {
        mu[i] = mu0;
        x[i] = (float)(mu0 + s * xs_normal());
        R[i] = -(x[i] - a) * (x[i] - a);
    }
    /* d/dmu E[R] = -2 (mu - a); the function returns the loss gradient. */
    const double want = -2.0 * (mu0 - a);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, NS, 1, s, R, NULL, 1.0f, 1.0f, dmu), RAM_OK);
    moments m = stats(dmu, NS, 1, -1.0);
    expect_close(m, want, "gaussian");

    /* norm = number of samples: the sum is the mean estimate. */
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, NS, 1, s, R, NULL, 1.0f, (float)NS, dmu),
                     RAM_OK);
    double sum = 0;
    for (int i = 0; i < NS; i++)
        sum -= dmu[i];
    ck_assert_double_eq_tol(sum, m.mean, 1e-3 * fabs(m.mean));

    /* alpha scales the estimate linearly. */
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, NS, 1, s, R, NULL, 2.5f, 1.0f, dmu), RAM_OK);
    moments m2 = stats(dmu, NS, 1, -1.0);
    ck_assert_double_eq_tol(m2.mean, 2.5 * m.mean, 1e-3 * fabs(m.mean));

    /* d = 2: the rows share R, each coordinate gets its own score. */
    float *x2 = malloc(sizeof(float) * 2 * NS), *mu2 = malloc(sizeof(float) * 2 * NS),
          *d2 = malloc(sizeof(float) * 2 * NS);
    const float a2[2] = {0.5f, -0.2f}, m20[2] = {-0.1f, 0.1f};
    for (int i = 0; i < NS; i++) {
        R[i] = 0;
        for (int d = 0; d < 2; d++) {
            mu2[2 * i + d] = m20[d];
            x2[2 * i + d] = (float)(m20[d] + s * xs_normal());
            R[i] -= (x2[2 * i + d] - a2[d]) * (x2[2 * i + d] - a2[d]);
        }
    }
    ck_assert_int_eq(ram_reinforce_gaussian(x2, mu2, NS, 2, s, R, NULL, 1.0f, 1.0f, d2), RAM_OK);
    expect_close(stats(d2, NS, 2, -1.0), -2.0 * (m20[0] - a2[0]), "gaussian d=2, x");
    expect_close(stats(d2 + 1, NS, 2, -1.0), -2.0 * (m20[1] - a2[1]), "gaussian d=2, y");
    free(x), free(mu), free(R), free(dmu), free(x2), free(mu2), free(d2);
}
END_TEST

START_TEST(test_bernoulli_known_gradient) {
    xs_state = 12345;
    const float p0 = 0.3f, c1 = 2.0f, c0 = -0.5f;
    float *x = malloc(sizeof(float) * NS), *p = malloc(sizeof(float) * NS),
          *R = malloc(sizeof(float) * NS), *dp = malloc(sizeof(float) * NS);
    for (int i = 0; i < NS; i++) {
        p[i] = p0;
        x[i] = xs_uniform() < p0 ? 1.0f : 0.0f;
        R[i] = x[i] * c1 + (1 - x[i]) * c0;
    }
    /* E[R] = p c1 + (1 - p) c0, so dE/dp = c1 - c0. */
    ck_assert_int_eq(ram_reinforce_bernoulli(x, p, NS, 1, R, NULL, 1.0f, 1.0f, dp), RAM_OK);
    expect_close(stats(dp, NS, 1, -1.0), c1 - c0, "bernoulli");
    /* Each sample's value is exact: -R (x - p) / (p (1 - p)). */
    for (int i = 0; i < 100; i++)
        ck_assert_double_eq_tol(dp[i], -R[i] * (x[i] - p0) / (p0 * (1 - p0)), 1e-5);
    free(x), free(p), free(R), free(dp);
}
END_TEST

START_TEST(test_categorical_known_gradient) {
    xs_state = 777;
    enum { K = 4 };
    const float pk[K] = {0.1f, 0.2f, 0.3f, 0.4f}, Rk[K] = {1.0f, -2.0f, 0.5f, 3.0f};
    int *x = malloc(sizeof(int) * NS);
    float *p = malloc(sizeof(float) * NS * K), *R = malloc(sizeof(float) * NS),
          *dp = malloc(sizeof(float) * NS * K);
    for (int i = 0; i < NS; i++) {
        double u = xs_uniform(), acc = 0;
        x[i] = K - 1;
        for (int j = 0; j < K; j++) {
            acc += pk[j];
            if (u < acc) {
                x[i] = j;
                break;
            }
        }
        memcpy(p + (size_t)i * K, pk, sizeof pk);
        R[i] = Rk[x[i]];
    }
    /* E[R] = sum_j p_j R_j: dE/dp_j = R_j. */
    ck_assert_int_eq(ram_reinforce_categorical(x, p, NS, K, R, NULL, 1.0f, 1.0f, dp), RAM_OK);
    for (int j = 0; j < K; j++) {
        char what[32];
        snprintf(what, sizeof what, "categorical p_%d", j);
        expect_close(stats(dp + j, NS, K, -1.0), Rk[j], what);
    }
    free(x), free(p), free(R), free(dp);
}
END_TEST

/* ---- (b) the baseline ---- */

START_TEST(test_baseline_lowers_variance) {
    xs_state = 4242;
    const float mu0 = 0.0f, s = 0.2f, a = 1.0f;
    float *x = malloc(sizeof(float) * NS), *mu = malloc(sizeof(float) * NS),
          *R = malloc(sizeof(float) * NS), *b = malloc(sizeof(float) * NS),
          *d0 = malloc(sizeof(float) * NS), *db = malloc(sizeof(float) * NS);
    /* E[R] = -((mu - a)^2 + s^2), a constant baseline: unbiased. */
    const float ER = -((mu0 - a) * (mu0 - a) + s * s);
    for (int i = 0; i < NS; i++) {
        mu[i] = mu0;
        x[i] = (float)(mu0 + s * xs_normal());
        R[i] = -(x[i] - a) * (x[i] - a);
        b[i] = ER;
    }
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, NS, 1, s, R, NULL, 1.0f, 1.0f, d0), RAM_OK);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, NS, 1, s, R, b, 1.0f, 1.0f, db), RAM_OK);
    moments m0 = stats(d0, NS, 1, -1.0), mb = stats(db, NS, 1, -1.0);
    const double want = -2.0 * (mu0 - a);
    expect_close(m0, want, "no baseline");
    expect_close(mb, want, "baseline");
    /* Same samples, so the means differ only by b * mean(score), tiny. */
    ck_assert_msg(fabs(m0.mean - mb.mean) < 4 * m0.se, "means %g vs %g", m0.mean, mb.mean);
    /* Theory: var ~ 8 d^2 with the baseline, d^4 / s^2 + 8 d^2 without (d =
     * mu - a = 1): about 8 vs 33. */
    ck_assert_msg(mb.var < 0.5 * m0.var, "variance %g with baseline, %g without", mb.var, m0.var);
    free(x), free(mu), free(R), free(b), free(d0), free(db);
}
END_TEST

/* ---- argument checks of the estimators ---- */

START_TEST(test_estimator_arguments) {
    const float x[2] = {0.1f, 0.2f}, mu[2] = {0, 0}, R[1] = {1};
    float out[2];
    ram_clear_error();
    ck_assert_int_eq(ram_reinforce_gaussian(NULL, mu, 1, 2, 0.1f, R, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, 0.1f, NULL, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, 0.1f, R, NULL, 1, 1, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, 0.0f, R, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, NAN, R, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, 0.1f, R, NULL, 1, 0, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 2, 0.1f, R, NULL, 1, NAN, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, -1, 2, 0.1f, R, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 1, 0, 0.1f, R, NULL, 1, 1, out),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_gaussian(x, mu, 0, 2, 0.1f, R, NULL, 1, 1, out), RAM_OK);

    const float p_bad[2] = {0.0f, 1.0f}, xb[2] = {0, 1};
    ram_clear_error();
    ck_assert_int_eq(ram_reinforce_bernoulli(xb, p_bad, 1, 2, R, NULL, 1, 1, out), RAM_ERR_NUMERIC);
    ck_assert_str_ne(ram_last_error(), "");

    const int xc_bad[1] = {3}, xc[1] = {1};
    const float pc[3] = {0.5f, 0.0f, 0.5f}, pc_ok[3] = {0.2f, 0.3f, 0.5f};
    float oc[3];
    ck_assert_int_eq(ram_reinforce_categorical(xc_bad, pc_ok, 1, 3, R, NULL, 1, 1, oc),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_reinforce_categorical(xc, pc, 1, 3, R, NULL, 1, 1, oc), RAM_ERR_NUMERIC);
    ck_assert_int_eq(ram_reinforce_categorical(xc, pc_ok, 1, 3, R, NULL, 1, 1, oc), RAM_OK);
    ck_assert_float_eq(oc[0], 0.0f);
    ck_assert_float_eq_tol(oc[1], -1.0f / 0.3f, 1e-5f);
    ck_assert_float_eq(oc[2], 0.0f);
}
END_TEST

/* ---- (c) the policy ---- */

static ram_policy *make_policy(float std, int steps, float discount, uint64_t seed) {
    ram_policy_params p;
    ram_policy_params_init(&p);
    p.std = std;
    p.hidden = 5;
    p.steps = steps;
    p.discount = discount;
    p.seed = seed;
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_OK);
    return pol;
}

START_TEST(test_policy_sample) {
    enum { N = 50000 };
    ram_policy *pol = make_policy(0.1f, 3, 1.0f, 7);
    float *mu = malloc(sizeof(float) * 2 * N), *l = malloc(sizeof(float) * 2 * N);

    /* Away from the bounds: mean mu, std the policy's, both axes. */
    for (int i = 0; i < N; i++) {
        mu[2 * i] = 0.2f;
        mu[2 * i + 1] = -0.3f;
    }
    ck_assert_int_eq(ram_policy_sample(pol, mu, N, l), RAM_OK);
    for (int d = 0; d < 2; d++) {
        moments m = stats(l + d, N, 2, 1.0);
        ck_assert_double_eq_tol(m.mean, mu[d], 4 * 0.1 / sqrt(N));
        ck_assert_msg(fabs(sqrt(m.var) - 0.1) < 0.003, "axis %d: std %g, want 0.1", d, sqrt(m.var));
    }
    /* The two coordinates are independent draws. */
    double cov = 0;
    for (int i = 0; i < N; i++)
        cov += (l[2 * i] - 0.2) * (l[2 * i + 1] + 0.3);
    ck_assert_double_lt(fabs(cov / N / 0.01), 0.03);

    /* Near and beyond the bounds: clamped into [-1, 1], hitting them exactly. */
    for (int i = 0; i < N; i++) {
        mu[2 * i] = 0.95f;
        mu[2 * i + 1] = -3.0f;
    }
    ck_assert_int_eq(ram_policy_sample(pol, mu, N, l), RAM_OK);
    int at_bound = 0;
    for (int i = 0; i < N; i++) {
        ck_assert(l[2 * i] >= -1.0f && l[2 * i] <= 1.0f);
        ck_assert_float_eq(l[2 * i + 1], -1.0f);
        at_bound += l[2 * i] == 1.0f;
    }
    /* P(0.95 + 0.1 eps > 1) = P(eps > 0.5) = 0.3085 */
    ck_assert_msg(fabs(at_bound / (double)N - 0.3085) < 0.01, "%d of %d clamped", at_bound, N);

    /* Non-finite means and bad arguments. */
    mu[3] = NAN;
    ram_clear_error();
    ck_assert_int_eq(ram_policy_sample(pol, mu, 2, l), RAM_ERR_NUMERIC);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_policy_sample(NULL, mu, 1, l), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_policy_sample(pol, NULL, 1, l), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_policy_sample(pol, mu, 1, NULL), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_free(pol);
    free(mu), free(l);
}
END_TEST

START_TEST(test_policy_seeding) {
    enum { N = 64 };
    float mu[2 * N] = {0}, a[2 * N], b[2 * N], c[2 * N];
    ram_policy *p1 = make_policy(0.3f, 2, 1.0f, 99), *p2 = make_policy(0.3f, 2, 1.0f, 99),
               *p3 = make_policy(0.3f, 2, 1.0f, 100);
    /* Same seed: same stream; different seed: a different one. */
    ck_assert_int_eq(ram_policy_sample(p1, mu, N, a), RAM_OK);
    ck_assert_int_eq(ram_policy_sample(p2, mu, N, b), RAM_OK);
    ck_assert_int_eq(ram_policy_sample(p3, mu, N, c), RAM_OK);
    ck_assert_mem_eq(a, b, sizeof a);
    int same = 0;
    for (int i = 0; i < 2 * N; i++)
        same += a[i] == c[i];
    ck_assert_int_lt(same, 4);

    /* Reseeding restarts the stream after it has moved on. */
    ck_assert_int_eq(ram_policy_sample(p1, mu, 1, b), RAM_OK);
    ram_policy_seed(p1, 99);
    ck_assert_int_eq(ram_policy_sample(p1, mu, N, b), RAM_OK);
    ck_assert_mem_eq(a, b, sizeof a);
    ram_policy_seed(p3, 99);
    ck_assert_int_eq(ram_policy_sample(p3, mu, N, c), RAM_OK);
    ck_assert_mem_eq(a, c, sizeof a);
    /* The stream moves on between calls. */
    ck_assert_int_eq(ram_policy_sample(p2, mu, N, b), RAM_OK);
    ck_assert_mem_ne(a, b, sizeof a);
    ram_policy_seed(NULL, 1); /* no-op */
    ram_policy_free(p1), ram_policy_free(p2), ram_policy_free(p3);
}
END_TEST

START_TEST(test_policy_returns) {
    enum { T = 4, N = 3 };
    ram_policy *pol = make_policy(0.1f, T, 0.5f, 1);
    const int pred[N] = {2, 1, 0}, label[N] = {2, 0, 0};
    float R[N * T];
    ck_assert_int_eq(ram_policy_returns(pol, pred, label, N, R), RAM_OK);
    const float want[N * T] = {0.125f, 0.25f, 0.5f, 1, 0, 0, 0, 0, 0.125f, 0.25f, 0.5f, 1};
    for (int i = 0; i < N * T; i++)
        ck_assert_float_eq(R[i], want[i]);
    ram_policy_free(pol);

    pol = make_policy(0.1f, T, 1.0f, 1); /* no discount: the final reward everywhere */
    ck_assert_int_eq(ram_policy_returns(pol, pred, label, N, R), RAM_OK);
    for (int i = 0; i < N * T; i++)
        ck_assert_float_eq(R[i], pred[i / T] == label[i / T]);
    ck_assert_int_eq(ram_policy_returns(pol, NULL, label, N, R), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_policy_returns(pol, pred, label, -1, R), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_free(pol);
}
END_TEST

START_TEST(test_policy_create) {
    ram_policy_params p;
    ram_policy_params_init(&p);
    ram_policy *pol = NULL;
    /* Without a model, std, hidden and steps must be given. */
    ram_clear_error();
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_ptr_null(pol);
    p.std = 0.1f, p.hidden = 4, p.steps = 3;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_OK);
    ck_assert_uint_eq(pol->n_bw, 5); /* LINEAR: hidden weights + bias */
    ram_policy_free(pol);
    ram_policy_free(NULL);

    /* With a model, zero fields take its values. */
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.core_hidden = 7, mp.glimpses = 5, mp.loc_std = 0.22f;
    mp.glimpse_hidden = mp.loc_hidden = mp.glimpse_out = 4;
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&mp, &m), RAM_OK);
    ram_policy_params_init(&p);
    p.baseline = RAM_BASELINE_SCALAR;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_OK);
    ck_assert_int_eq(pol->p.hidden, 7);
    ck_assert_int_eq(pol->p.steps, 5);
    ck_assert_float_eq(pol->p.std, 0.22f);
    ck_assert_uint_eq(pol->n_bw, 1);
    ram_policy_free(pol);

    const float bad_discount[] = {-0.1f, 1.5f, NAN};
    for (int i = 0; i < 3; i++) {
        ram_policy_params_init(&p);
        p.discount = bad_discount[i];
        pol = NULL;
        ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(pol);
    }
    ram_policy_params_init(&p);
    p.std = NAN;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_params_init(&p);
    p.baseline = (ram_baseline_type)7;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_params_init(&p);
    p.detach_core = 2;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_ERR_INVALID_ARGUMENT);
    ram_policy_params_init(&p);
    p.struct_size = 0;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(pol);

    /* Only 0 takes the model's value: a negative hidden or steps is refused,
     * with or without a model, naming the field and its value. */
    const struct {
        int hidden, steps;
        const char *msg;
    } neg[] = {{5, -4, "steps -4"},
               {-7, 3, "hidden -7"},
               {5, INT_MIN, "steps -2147483648"},
               {INT_MIN, 3, "hidden -2147483648"},
               {-1, -1, "hidden -1"}};
    ram_policy *const sentinel = (ram_policy *)&p;
    for (size_t c = 0; c < sizeof neg / sizeof *neg; c++)
        for (int with_model = 0; with_model < 2; with_model++) {
            ram_policy_params_init(&p);
            p.std = 0.1f, p.hidden = neg[c].hidden, p.steps = neg[c].steps;
            pol = sentinel;
            ram_clear_error();
            ck_assert_int_eq(ram_policy_create(&p, with_model ? m : NULL, &pol),
                             RAM_ERR_INVALID_ARGUMENT);
            ck_assert_msg(strstr(ram_last_error(), neg[c].msg), "\"%s\" does not name %s",
                          ram_last_error(), neg[c].msg);
            ck_assert_ptr_eq(pol, sentinel);
        }
    /* Out-of-range counts name their field too. */
    ram_policy_params_init(&p);
    p.std = 0.1f, p.hidden = 5, p.steps = 65;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "steps 65"));
    p.steps = 3, p.hidden = (1 << 20) + 1;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "hidden 1048577"));
    /* A negative std stays documented as "the model's". */
    ram_policy_params_init(&p);
    p.std = -1.0f;
    pol = NULL;
    ck_assert_int_eq(ram_policy_create(&p, m, &pol), RAM_OK);
    ck_assert_float_eq(pol->p.std, 0.22f);
    ram_policy_free(pol);
    ram_model_free(m);
}
END_TEST

/* ---- exact values: the estimators' arithmetic is pinned ---- */

START_TEST(test_estimators_exact) {
    /* Small cases whose results are exact in float. */
    const float gx[2] = {0.75f, -0.5f}, gmu[2] = {0.25f, 0.5f}, gR[1] = {3}, gb[1] = {1};
    float out[3];
    /* adv 2, std^2 1/4: dmu = -2 * 2 * (x - mu) * 4 / 2 */
    ck_assert_int_eq(ram_reinforce_gaussian(gx, gmu, 1, 2, 0.5f, gR, gb, 2, 2, out), RAM_OK);
    ck_assert_float_eq(out[0], -4.0f);
    ck_assert_float_eq(out[1], 8.0f);
    const float bx[2] = {1, 0}, bp[2] = {0.25f, 0.75f}, bR[1] = {2}, bb[1] = {0.5f};
    /* adv 1.5, p (1 - p) = 3/16 for both */
    ck_assert_int_eq(ram_reinforce_bernoulli(bx, bp, 1, 2, bR, bb, 1, 1, out), RAM_OK);
    ck_assert_float_eq(out[0], -6.0f);
    ck_assert_float_eq(out[1], 6.0f);
    const int cx[1] = {2};
    const float cp[3] = {0.5f, 0.25f, 0.25f}, cR[1] = {1};
    ck_assert_int_eq(ram_reinforce_categorical(cx, cp, 1, 3, cR, NULL, 3, 2, out), RAM_OK);
    ck_assert_float_eq(out[0], 0.0f);
    ck_assert_float_eq(out[1], 0.0f);
    ck_assert_float_eq(out[2], -6.0f);

    /* Random cases, bit for bit against the formula in the library's order
     * of float operations, with and without a baseline. */
    enum { N = 37, D = 3 };
    xs_state = 2024;
    float x[N * D], mu[N * D], p[N * D], R[N], b[N], got[N * D], want[N * D];
    int xc[N];
    for (int i = 0; i < N; i++) {
        R[i] = (float)(2 * xs_uniform() - 0.5);
        b[i] = (float)xs_uniform();
        xc[i] = (int)(xs_uniform() * D);
        for (int j = 0; j < D; j++) {
            mu[i * D + j] = (float)(xs_uniform() - 0.5);
            x[i * D + j] = (float)(mu[i * D + j] + 0.3 * xs_normal());
            p[i * D + j] = (float)(0.01 + 0.98 * xs_uniform());
        }
    }
    const float alpha = 0.7f, norm = 5.0f, std = 0.3f, inv_var = 1.0f / (std * std);
    for (int with_b = 0; with_b < 2; with_b++) {
        const float *bl = with_b ? b : NULL;
        ck_assert_int_eq(ram_reinforce_gaussian(x, mu, N, D, std, R, bl, alpha, norm, got), RAM_OK);
        for (int k = 0; k < N * D; k++) {
            float adv = R[k / D] - (bl ? bl[k / D] : 0.0f);
            want[k] = -alpha * adv * (x[k] - mu[k]) * inv_var / norm;
        }
        ck_assert_mem_eq(got, want, sizeof got);

        float xb[N * D];
        for (int k = 0; k < N * D; k++)
            xb[k] = x[k] > mu[k] ? 1.0f : 0.0f;
        ck_assert_int_eq(ram_reinforce_bernoulli(xb, p, N, D, R, bl, alpha, norm, got), RAM_OK);
        for (int k = 0; k < N * D; k++) {
            float adv = R[k / D] - (bl ? bl[k / D] : 0.0f);
            want[k] = -alpha * adv * (xb[k] - p[k]) / (p[k] * (1.0f - p[k])) / norm;
        }
        ck_assert_mem_eq(got, want, sizeof got);

        ck_assert_int_eq(ram_reinforce_categorical(xc, p, N, D, R, bl, alpha, norm, got), RAM_OK);
        for (int k = 0; k < N * D; k++) {
            int i = k / D;
            float adv = R[i] - (bl ? bl[i] : 0.0f);
            want[k] = k % D == xc[i] ? -alpha * adv / p[k] / norm : 0.0f;
        }
        ck_assert_mem_eq(got, want, sizeof got);
    }
}
END_TEST

/* ---- refusals: status, message, and the output as it was ---- */

/* `call` must return `status` with the message `msg` (a message starting
 * with it if `prefix`) and leave the array `out` as it was: filled with a
 * byte pattern beforehand, compared byte for byte afterwards. */
#define EXPECT_REFUSED(call, status, msg, prefix, out)                                             \
    do {                                                                                           \
        unsigned char before_[sizeof(out)];                                                        \
        memset(out, 0xA5, sizeof(out));                                                            \
        memcpy(before_, out, sizeof(out));                                                         \
        ram_clear_error();                                                                         \
        ram_status got_ = (call);                                                                  \
        ck_assert_msg(got_ == (status), "%s: status %d (%s), want %d", #call, got_,                \
                      ram_last_error(), (status));                                                 \
        ck_assert_msg((prefix) ? strncmp(ram_last_error(), (msg), strlen(msg)) == 0                \
                               : strcmp(ram_last_error(), (msg)) == 0,                             \
                      "%s: message \"%s\", want \"%s\"", #call, ram_last_error(), (msg));          \
        ck_assert_msg(memcmp(out, before_, sizeof(out)) == 0, "%s wrote its output", #call);       \
    } while (0)

static const float bad_values[3] = {NAN, INFINITY, -INFINITY};
static const char *const bad_names[3] = {"NaN", "Inf", "-Inf"};

/* With arr[at] = bad_values[v], `call` must refuse with "<what>: arr[at] is
 * NaN" (or Inf, -Inf), writing nothing to `out`; arr[at] is restored. */
#define EXPECT_NONFINITE(call, what, arr, at, v, out)                                              \
    do {                                                                                           \
        const float keep_ = (arr)[at];                                                             \
        char want_[128];                                                                           \
        (arr)[at] = bad_values[v];                                                                 \
        snprintf(want_, sizeof want_, "%s: %s[%d] is %s", what, #arr, at, bad_names[v]);           \
        EXPECT_REFUSED(call, RAM_ERR_NUMERIC, want_, 0, out);                                      \
        (arr)[at] = keep_;                                                                         \
    } while (0)

START_TEST(test_gaussian_refuses_nonfinite) {
    enum { N = 4, D = 2 };
    float x[N * D], mu[N * D], R[N], b[N], out[N * D];
    for (int k = 0; k < N * D; k++)
        x[k] = 0.1f * k, mu[k] = x[k] - 0.05f;
    x[0] = mu[0]; /* x == mu: a too small std would give 0 * Inf here */
    for (int i = 0; i < N; i++)
        R[i] = 1.0f, b[i] = 0.25f;
    const char *what = "reinforce_gaussian";
    char want[128];
    for (int v = 0; v < 3; v++) {
#define GAUSS(bl, alpha) ram_reinforce_gaussian(x, mu, N, D, 0.2f, R, bl, alpha, 2.0f, out)
        EXPECT_NONFINITE(GAUSS(b, 1.0f), what, R, 3, v, out);
        EXPECT_NONFINITE(GAUSS(NULL, 1.0f), what, R, 0, v, out);
        EXPECT_NONFINITE(GAUSS(b, 1.0f), what, b, 2, v, out);
        EXPECT_NONFINITE(GAUSS(b, 1.0f), what, x, 5, v, out);
        EXPECT_NONFINITE(GAUSS(b, 1.0f), what, mu, 6, v, out);
        snprintf(want, sizeof want, "%s: alpha is %s", what, bad_names[v]);
        EXPECT_REFUSED(GAUSS(b, bad_values[v]), RAM_ERR_INVALID_ARGUMENT, want, 0, out);
    }
    /* A positive std whose square underflows. */
    EXPECT_REFUSED(ram_reinforce_gaussian(x, mu, N, D, 1e-20f, R, b, 1.0f, 1.0f, out),
                   RAM_ERR_INVALID_ARGUMENT, "reinforce_gaussian: std 1e-20", 1, out);
    ck_assert_int_eq(GAUSS(b, 1.0f), RAM_OK);
    for (int k = 0; k < N * D; k++)
        ck_assert(isfinite(out[k]));
#undef GAUSS
}
END_TEST

START_TEST(test_bernoulli_refuses_before_writing) {
    enum { N = 3, D = 2 };
    float x[N * D] = {1, 0, 0, 1, 1, 1}, p[N * D] = {0.2f, 0.4f, 0.6f, 0.8f, 0.5f, 0.3f}, R[N],
                b[N], out[N * D];
    for (int i = 0; i < N; i++)
        R[i] = 1.0f, b[i] = 0.5f;
    const char *what = "reinforce_bernoulli";
    char want[128];
#define BERN(alpha) ram_reinforce_bernoulli(x, p, N, D, R, b, alpha, 3.0f, out)
    /* A probability out of (0, 1) in the last row: the rows before it used
     * to be written. */
    const float bad_p[5] = {0.0f, 1.0f, -0.5f, 2.0f, NAN};
    for (int v = 0; v < 5; v++) {
        p[5] = bad_p[v];
        EXPECT_REFUSED(BERN(1.0f), RAM_ERR_NUMERIC, "reinforce_bernoulli: p[5] = ", 1, out);
    }
    p[5] = 0.3f;
    for (int v = 0; v < 3; v++) {
        EXPECT_NONFINITE(BERN(1.0f), what, R, 2, v, out);
        EXPECT_NONFINITE(BERN(1.0f), what, b, 1, v, out);
        EXPECT_NONFINITE(BERN(1.0f), what, x, 4, v, out);
        snprintf(want, sizeof want, "%s: alpha is %s", what, bad_names[v]);
        EXPECT_REFUSED(BERN(bad_values[v]), RAM_ERR_INVALID_ARGUMENT, want, 0, out);
    }
    ck_assert_int_eq(BERN(1.0f), RAM_OK);
#undef BERN
}
END_TEST

START_TEST(test_categorical_refuses_before_writing) {
    enum { N = 3, K = 3 };
    int x[N] = {0, 2, 1};
    float p[N * K] = {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f, 0.6f, 0.3f, 0.1f}, R[N] = {1, 0, 1},
                b[N] = {0.5f, 0.5f, 0.5f}, out[N * K];
    const char *what = "reinforce_categorical";
    char want[128];
#define CAT(alpha) ram_reinforce_categorical(x, p, N, K, R, b, alpha, 3.0f, out)
    /* A bad choice or probability in the last row: the rows before it used
     * to be written. */
    x[2] = 3;
    EXPECT_REFUSED(CAT(1.0f), RAM_ERR_INVALID_ARGUMENT, "reinforce_categorical: x[2] = 3", 0, out);
    x[2] = -1;
    EXPECT_REFUSED(CAT(1.0f), RAM_ERR_INVALID_ARGUMENT, "reinforce_categorical: x[2] = -1", 0, out);
    x[2] = 1;
    const float bad_p[4] = {0.0f, -0.1f, NAN, INFINITY};
    for (int v = 0; v < 4; v++) {
        p[7] = bad_p[v]; /* row 2 chose class 1 */
        EXPECT_REFUSED(CAT(1.0f), RAM_ERR_NUMERIC,
                       "reinforce_categorical: p[7], the choice of row 2, is ", 1, out);
    }
    p[7] = 0.3f;
    for (int v = 0; v < 3; v++) {
        EXPECT_NONFINITE(CAT(1.0f), what, R, 1, v, out);
        EXPECT_NONFINITE(CAT(1.0f), what, b, 2, v, out);
        snprintf(want, sizeof want, "%s: alpha is %s", what, bad_names[v]);
        EXPECT_REFUSED(CAT(bad_values[v]), RAM_ERR_INVALID_ARGUMENT, want, 0, out);
    }
    /* Probabilities of classes not chosen are not read: NaN there is fine. */
    p[0 * K + 1] = NAN;
    ck_assert_int_eq(CAT(1.0f), RAM_OK);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < K; j++)
            if (j == x[i])
                ck_assert_float_eq(out[i * K + j], -(R[i] - b[i]) / p[i * K + j] / 3.0f);
            else
                ck_assert_float_eq(out[i * K + j], 0.0f);
#undef CAT
}
END_TEST

START_TEST(test_policy_sample_refuses_before_drawing) {
    enum { N = 3 };
    ram_policy *pol = make_policy(0.2f, 2, 1.0f, 5), *twin = make_policy(0.2f, 2, 1.0f, 5);
    float mu[2 * N] = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, 0.0f}, l[2 * N], l2[2 * N];
    /* A bad mean in the last row: the rows before it used to be drawn and
     * written, and the RNG advanced. */
    for (int v = 0; v < 3; v++) {
        mu[5] = bad_values[v];
        EXPECT_REFUSED(ram_policy_sample(pol, mu, N, l), RAM_ERR_NUMERIC,
                       "policy_sample: mean 2 is not finite", 0, l);
    }
    mu[5] = 0.0f;
    /* The refusals drew nothing: the stream is where its twin's is. */
    ck_assert_int_eq(ram_policy_sample(pol, mu, N, l), RAM_OK);
    ck_assert_int_eq(ram_policy_sample(twin, mu, N, l2), RAM_OK);
    ck_assert_mem_eq(l, l2, sizeof l);
    ram_policy_free(pol), ram_policy_free(twin);
}
END_TEST

/* ---- (d) the learned baseline ---- */

/* The loss ram_baseline_backward differentiates:
 * sum_{t,i} (b - R)^2 / (T * norm), with b from ram_baseline_forward. */
static double baseline_loss(const ram_policy *pol, const float *h, int n, const float *R,
                            float norm, float *b) {
    const int T = pol->p.steps;
    ram_baseline_forward(pol, h, n, b);
    double L = 0;
    for (int i = 0; i < T * n; i++)
        L += ((double)b[i] - R[i]) * ((double)b[i] - R[i]);
    return L / ((double)T * norm);
}

START_TEST(test_linear_baseline_gradient) {
    enum { T = 3, N = 4, H = 5 };
    ram_policy_params p;
    ram_policy_params_init(&p);
    p.std = 0.1f, p.hidden = H, p.steps = T;
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_OK);
    ck_assert_uint_eq(pol->n_bw, H + 1);
    xs_state = 31337;
    for (int j = 0; j <= H; j++)
        pol->bw[j] = (float)(xs_uniform() - 0.5);
    float h[(T + 1) * N * H], R[T * N], b[T * N], gbw[H + 1];
    for (int i = 0; i < (T + 1) * N * H; i++)
        h[i] = (float)(2 * xs_uniform() - 1);
    for (int i = 0; i < T * N; i++)
        R[i] = xs_uniform() < 0.5 ? 0.0f : 1.0f;

    /* Forward against w . h_t + c for the decision states h[0..T-1]. */
    ram_baseline_forward(pol, h, N, b);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < N; i++) {
            double v = pol->bw[H];
            for (int j = 0; j < H; j++)
                v += (double)pol->bw[j] * h[((size_t)t * N + i) * H + j];
            ck_assert_double_eq_tol(b[t * N + i], v, 1e-5);
        }

    const float norm = (float)N;
    for (int j = 0; j <= H; j++)
        gbw[j] = 0.25f; /* backward accumulates */
    double sse = ram_baseline_backward(pol, h, N, b, R, norm, gbw);
    double want_sse = 0;
    for (int i = 0; i < T * N; i++)
        want_sse += ((double)b[i] - R[i]) * ((double)b[i] - R[i]);
    ck_assert_double_eq_tol(sse, want_sse, 1e-5 * (1 + want_sse));

    float scratch[T * N];
    const float step = 1e-3f;
    for (int j = 0; j <= H; j++) {
        float keep = pol->bw[j];
        pol->bw[j] = keep + step;
        double lp = baseline_loss(pol, h, N, R, norm, scratch);
        pol->bw[j] = keep - step;
        double lm = baseline_loss(pol, h, N, R, norm, scratch);
        pol->bw[j] = keep;
        double num = (lp - lm) / (2.0 * step), ana = gbw[j] - 0.25;
        ck_assert_msg(fabs(ana - num) <= 1e-3 + 1e-2 * fabs(num), "gbw[%d]: %g vs fd %g", j, ana,
                      num);
    }
    ram_policy_free(pol);

    /* SCALAR: one shared value, gradient 2 mean(b - R) / T-scaled. */
    p.baseline = RAM_BASELINE_SCALAR;
    ck_assert_int_eq(ram_policy_create(&p, NULL, &pol), RAM_OK);
    pol->bw[0] = 0.4f;
    ram_baseline_forward(pol, h, N, b);
    for (int i = 0; i < T * N; i++)
        ck_assert_float_eq(b[i], 0.4f);
    float g1 = 0;
    ram_baseline_backward(pol, h, N, b, R, norm, &g1);
    double want = 0;
    for (int i = 0; i < T * N; i++)
        want += 2.0 * (0.4 - R[i]) / (T * norm);
    ck_assert_double_eq_tol(g1, want, 1e-5);
    ram_policy_free(pol);
}
END_TEST

static Suite *reinforce_suite(void) {
    Suite *s = suite_create("reinforce");
    TCase *est = tcase_create("estimators");
    tcase_add_test(est, test_gaussian_known_gradient);
    tcase_add_test(est, test_bernoulli_known_gradient);
    tcase_add_test(est, test_categorical_known_gradient);
    tcase_add_test(est, test_baseline_lowers_variance);
    tcase_add_test(est, test_estimator_arguments);
    tcase_add_test(est, test_estimators_exact);
    tcase_add_test(est, test_gaussian_refuses_nonfinite);
    tcase_add_test(est, test_bernoulli_refuses_before_writing);
    tcase_add_test(est, test_categorical_refuses_before_writing);
    suite_add_tcase(s, est);
    TCase *pol = tcase_create("policy");
    tcase_add_test(pol, test_policy_sample);
    tcase_add_test(pol, test_policy_seeding);
    tcase_add_test(pol, test_policy_returns);
    tcase_add_test(pol, test_policy_create);
    tcase_add_test(pol, test_policy_sample_refuses_before_drawing);
    tcase_add_test(pol, test_linear_baseline_gradient);
    suite_add_tcase(s, pol);
    return s;
}

int main(void) {
    return run_suite(reinforce_suite());
}
