/* REINFORCE: the score-function estimators against gradients known in closed
 * form, the baseline's variance reduction, the location policy's sampling and
 * returns, and the learned baseline's own gradient. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
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
    ram_model_free(m);
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
    suite_add_tcase(s, est);
    TCase *pol = tcase_create("policy");
    tcase_add_test(pol, test_policy_sample);
    tcase_add_test(pol, test_policy_seeding);
    tcase_add_test(pol, test_policy_returns);
    tcase_add_test(pol, test_policy_create);
    tcase_add_test(pol, test_linear_baseline_gradient);
    suite_add_tcase(s, pol);
    return s;
}

int main(void) {
    return run_suite(reinforce_suite());
}
