/* The stochastic location policy and the REINFORCE estimator (Williams 1992):
 * score functions for Gaussian, Bernoulli and categorical units, returns from
 * the final reward, and the learned baseline that lowers the estimator's
 * variance without biasing it. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ram_policy_params_init_sized(ram_policy_params *p, size_t size) {
    /* std, hidden and steps 0: the model's */
    static const ram_policy_params d = {.struct_size = sizeof d,
                                        .baseline = RAM_BASELINE_LINEAR,
                                        .reward_scale = 1.0f,
                                        .discount = 1.0f,
                                        .detach_core = 1,
                                        .seed = 1};
    ram_params_fill(p, size, &d, sizeof d);
}

ram_status ram_policy_create(const ram_policy_params *user, const ram_model *m, ram_policy **out) {
    if (!out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: out is NULL");
    ram_policy_params p;
    ram_policy_params_init(&p);
    ram_status s = ram_copy_params(&p, sizeof p, user, "policy_create");
    if (s) return s;
    /* Only 0 asks for the model's value: a negative count is a mistake, and
     * taking the model's for it would hide that. */
    if (p.hidden < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "policy_create: hidden %d is negative (0 takes the model's)", p.hidden);
    if (p.steps < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "policy_create: steps %d is negative (0 takes the model's)", p.steps);
    if (m) {
        if (p.std <= 0.0f) p.std = m->p.loc_std;
        if (p.hidden == 0) p.hidden = m->p.core_hidden;
        if (p.steps == 0) p.steps = m->p.glimpses;
    }
    const char *no_model = m ? "" : " (no model to take it from)";
    if (!(p.std >= RAM_LOC_STD_MIN && p.std <= 10.0f))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: std %g not in [1e-4, 10]%s",
                        (double)p.std, no_model);
    if (p.hidden < 1 || p.hidden > 1 << 20)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: hidden %d not in [1, %d]%s",
                        p.hidden, 1 << 20, no_model);
    if (p.steps < 1 || p.steps > 64)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: steps %d not in [1, 64]%s",
                        p.steps, no_model);
    if (p.baseline < RAM_BASELINE_LINEAR || p.baseline > RAM_BASELINE_NONE)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: unknown baseline %d",
                        (int)p.baseline);
    if (!isfinite(p.reward_scale) || !isfinite(p.discount) || p.discount < 0.0f ||
        p.discount > 1.0f)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "policy_create: reward_scale %g must be finite, discount %g in [0, 1]",
                        (double)p.reward_scale, (double)p.discount);
    if (p.detach_core != 0 && p.detach_core != 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: detach_core must be 0 or 1");
    if (p.soft_detach_core != 0 && p.soft_detach_core != 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: soft_detach_core must be 0 or 1");
    if (p.reward < RAM_REWARD_PER_OBJECT || p.reward > RAM_REWARD_ALL_CORRECT)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_create: unknown reward mode %d",
                        (int)p.reward);
    ram_policy *pol = calloc(1, sizeof *pol);
    if (!pol) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "policy_create: out of memory");
    pol->p = p;
    pol->n_bw = p.baseline == RAM_BASELINE_LINEAR   ? (size_t)p.hidden + 1
                : p.baseline == RAM_BASELINE_SCALAR ? 1
                                                    : 0;
    if (pol->n_bw && !(pol->bw = calloc(pol->n_bw, sizeof(float)))) {
        free(pol);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "policy_create: out of memory");
    }
    ram_rng_seed(&pol->rng, p.seed);
    *out = pol;
    return RAM_OK;
}

void ram_policy_free(ram_policy *pol) {
    if (!pol) return;
    free(pol->bw);
    free(pol);
}

void ram_policy_seed(ram_policy *pol, uint64_t seed) {
    if (pol) ram_rng_seed(&pol->rng, seed);
}

ram_status ram_policy_sample(ram_policy *pol, const float *mu, int n, float *l) {
    if (!pol || !mu || !l || n < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_sample: NULL argument or n < 0");
    /* Every mean before the first draw: a refused call leaves l and the RNG
     * as they were. */
    for (size_t i = 0; i < 2 * (size_t)n; i++)
        if (!isfinite(mu[i]))
            return ram_fail(RAM_ERR_NUMERIC, "policy_sample: mean %zu is not finite", i / 2);
    for (size_t i = 0; i < 2 * (size_t)n; i++) {
        float x = mu[i] + pol->p.std * (float)ram_rng_normal(&pol->rng);
        l[i] = x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
    }
    return RAM_OK;
}

/* What the three estimators share.  Every value they read is checked here or
 * by them before anything is written, so that a refused call leaves the
 * output as it was.  x_name and p_name name x and p when they are float
 * arrays of n x d to check for NaN and Inf (NULL: not, or checked apart). */
static ram_status check_common(const void *x, const void *p, const float *R, const float *b,
                               const void *out, int n, int d, float alpha, float norm,
                               const char *x_name, const char *p_name, const char *what) {
    if (!x || !p || !R || !out)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (n < 0 || d < 1 || !(norm > 0.0f) || !isfinite(norm))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: n %d, d %d or norm %g out of range", what, n,
                        d, (double)norm);
    if (!isfinite(alpha))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: alpha is %s", what,
                        isnan(alpha)   ? "NaN"
                        : alpha > 0.0f ? "Inf"
                                       : "-Inf");
    const size_t rows = (size_t)n, all = (size_t)n * d;
    const struct {
        const float *v;
        size_t count;
        const char *name;
    } in[4] = {{R, rows, "R"},
               {b, b ? rows : 0, "b"},
               {x, x_name ? all : 0, x_name},
               {p, p_name ? all : 0, p_name}};
    for (int a = 0; a < 4; a++)
        for (size_t i = 0; i < in[a].count; i++)
            if (!isfinite(in[a].v[i]))
                return ram_fail(RAM_ERR_NUMERIC, "%s: %s[%zu] is %s", what, in[a].name, i,
                                isnan(in[a].v[i])   ? "NaN"
                                : in[a].v[i] > 0.0f ? "Inf"
                                                    : "-Inf");
    return RAM_OK;
}

/* For every score function below: the loss is -alpha (R - b) log pi(x), so
 * its gradient is -alpha (R - b) d log pi(x) / d theta.  b is a constant here:
 * the baseline is fitted by its own MSE loss and never differentiated
 * through this term, which keeps the estimator unbiased. */
ram_status ram_reinforce_gaussian(const float *x, const float *mu, int n, int d, float std,
                                  const float *R, const float *b, float alpha, float norm,
                                  float *dmu) {
    ram_status s =
        check_common(x, mu, R, b, dmu, n, d, alpha, norm, "x", "mu", "reinforce_gaussian");
    if (s) return s;
    if (!(std > 0.0f) || !isfinite(std))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "reinforce_gaussian: std %g must be > 0",
                        (double)std);
    const float inv_var = 1.0f / (std * std);
    /* Below about 5.4e-20, 1 / std^2 overflows, and x == mu would give 0 * Inf. */
    if (!isfinite(inv_var))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "reinforce_gaussian: std %g: 1 / std^2 overflows",
                        (double)std);
    for (int i = 0; i < n; i++) {
        float adv = R[i] - (b ? b[i] : 0.0f);
        for (int j = 0; j < d; j++) {
            size_t k = (size_t)i * d + j;
            dmu[k] = -alpha * adv * (x[k] - mu[k]) * inv_var / norm;
        }
    }
    return RAM_OK;
}

ram_status ram_reinforce_bernoulli(const float *x, const float *p, int n, int d, const float *R,
                                   const float *b, float alpha, float norm, float *dp) {
    ram_status s =
        check_common(x, p, R, b, dp, n, d, alpha, norm, "x", NULL, "reinforce_bernoulli");
    if (s) return s;
    for (size_t k = 0; k < (size_t)n * d; k++)
        if (!(p[k] > 0.0f && p[k] < 1.0f))
            return ram_fail(RAM_ERR_NUMERIC, "reinforce_bernoulli: p[%zu] = %g not in (0, 1)", k,
                            (double)p[k]);
    for (int i = 0; i < n; i++) {
        float adv = R[i] - (b ? b[i] : 0.0f);
        for (int j = 0; j < d; j++) {
            size_t k = (size_t)i * d + j;
            dp[k] = -alpha * adv * (x[k] - p[k]) / (p[k] * (1.0f - p[k])) / norm;
        }
    }
    return RAM_OK;
}

ram_status ram_reinforce_categorical(const int *x, const float *p, int n, int k, const float *R,
                                     const float *b, float alpha, float norm, float *dp) {
    ram_status s =
        check_common(x, p, R, b, dp, n, k, alpha, norm, NULL, NULL, "reinforce_categorical");
    if (s) return s;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= k)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT, "reinforce_categorical: x[%d] = %d", i, x[i]);
        /* Only the chosen class's probability is read; an infinite one would
         * pass for a zero gradient. */
        float px = p[(size_t)i * k + x[i]];
        if (!(px > 0.0f) || !isfinite(px))
            return ram_fail(RAM_ERR_NUMERIC,
                            "reinforce_categorical: p[%zu], the choice of row %d, is %g",
                            (size_t)i * k + x[i], i, (double)px);
    }
    for (int i = 0; i < n; i++) {
        float px = p[(size_t)i * k + x[i]];
        float adv = R[i] - (b ? b[i] : 0.0f);
        for (int j = 0; j < k; j++)
            dp[(size_t)i * k + j] = 0.0f;
        dp[(size_t)i * k + x[i]] = -alpha * adv / px / norm;
    }
    return RAM_OK;
}

ram_status ram_policy_returns(const ram_policy *pol, const int *pred, const int *label, int n,
                              float *R) {
    if (!pol || !pred || !label || !R || n < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "policy_returns: NULL argument or n < 0");
    const int T = pol->p.steps;
    for (int i = 0; i < n; i++)
        ram_policy_return_row(pol, pred[i] == label[i] ? 1.0f : 0.0f, R + (size_t)i * T, 1);
    return RAM_OK;
}

void ram_policy_return_row(const struct ram_policy *pol, float reward, float *R, size_t stride) {
    float r = reward;
    for (int t = pol->p.steps - 1; t >= 0; t--) {
        R[(size_t)t * stride] = r;
        r *= pol->p.discount;
    }
}

void ram_reinforce_gaussian_surrogate(const float *l, const float *mu, int n, int d, float std,
                                      const float *R, const float *b, float alpha, double *sum) {
    for (int i = 0; i < n; i++) {
        double logp = 0;
        for (int k = 0; k < d; k++) {
            double z = (l[(size_t)i * d + k] - mu[(size_t)i * d + k]) / std;
            logp += -0.5 * z * z - log(std) - 0.91893853320467274; /* log sqrt(2 pi) */
        }
        *sum -= alpha * (R[i] - b[i]) * logp;
    }
}

void ram_baseline_forward(const struct ram_policy *pol, const float *h, int n, float *b) {
    const int T = pol->p.steps, H = pol->p.hidden;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < n; i++) {
            float v = 0.0f;
            if (pol->p.baseline == RAM_BASELINE_LINEAR) {
                const float *hi = h + ((size_t)t * n + i) * H;
                v = pol->bw[H];
                for (int j = 0; j < H; j++)
                    v += pol->bw[j] * hi[j];
            } else if (pol->p.baseline == RAM_BASELINE_SCALAR) {
                v = pol->bw[0];
            }
            b[(size_t)t * n + i] = v;
        }
}

double ram_baseline_backward(const struct ram_policy *pol, const float *h, int n, const float *b,
                             const float *R, float norm, float *gbw) {
    const int T = pol->p.steps, H = pol->p.hidden;
    double sse = 0.0;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < n; i++) {
            float e = b[(size_t)t * n + i] - R[(size_t)t * n + i];
            sse += (double)e * e;
            /* h is detached here: the baseline must not shape the state. */
            float d = 2.0f * e / ((float)T * norm);
            if (pol->p.baseline == RAM_BASELINE_LINEAR) {
                const float *hi = h + ((size_t)t * n + i) * H;
                for (int j = 0; j < H; j++)
                    gbw[j] += d * hi[j];
                gbw[H] += d;
            } else if (pol->p.baseline == RAM_BASELINE_SCALAR) {
                gbw[0] += d;
            }
        }
    return sse;
}
