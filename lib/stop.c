/* The learned stop unit: a Bernoulli unit after each glimpse, on the
 * classifier's confidence at that step, fitted to a trained model by
 * REINFORCE with a cost per glimpse in the reward (ram.h, "A learned stop
 * unit").
 *
 * Why it reads the classifier's confidence and not the core's state: the
 * threshold rule, which it must beat, is a function of the top probability
 * alone, and a linear unit on (-log(1 - q_max), a bias per step) is exactly that
 * rule with a threshold of its own at every step; the margin and the entropy
 * let it tell a sure answer from a split one.  A unit on the 256 state
 * units would have to learn the classifier's confidence from the rewards
 * first.
 *
 * Why it is fitted to a trained model rather than trained with it: the
 * fit sees only each image's probabilities after every glimpse (one
 * forward pass, ram_model_step_probs()), so a fit takes seconds and one
 * trained model gives the whole curve of error against glimpses, a fit
 * per cost.  Stopping does not change later glimpses (an image that
 * stops takes none), so the per-step probabilities are all the fit
 * needs. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* The fit starts from the threshold rule at STOP_START, a soft one: its
 * probability of stopping goes from 0.12 to 0.88 within half a nat of
 * -log(1 - q_max) either side of the threshold.  From w = 0 (a stop with
 * probability 1/2 after every glimpse), the early stops' errors drive every
 * weight down to a unit that never stops, where REINFORCE's gradient
 * vanishes: a local optimum of the stochastic unit that a sharp rule
 * escapes. */
#define STOP_SLOPE 4.0f
#define STOP_START 0.9f
/* Fewest updates of a fit (ram_stop_params.epochs is raised to reach it). */
#define STOP_MIN_UPDATES 1000

void ram_stop_params_init_sized(ram_stop_params *p, size_t size) {
    static const ram_stop_params d = {
        .struct_size = sizeof d, .cost = 0.01f, .epochs = 30, .batch = 256, .lr = 0.05f, .seed = 1};
    ram_params_fill(p, size, &d, sizeof d);
}

void ram_stop_features(const float *q, int k, float *f) {
    int a = 0, b = -1;
    double h = 0;
    for (int j = 1; j < k; j++)
        if (q[j] > q[a]) a = j;
    for (int j = 0; j < k; j++) {
        if (j != a && (b < 0 || q[j] > q[b])) b = j;
        if (q[j] > 0.0f) h -= (double)q[j] * log((double)q[j]);
    }
    /* -log(1 - q_max): how sure, in nats; thresholds 0.9, 0.99, 0.999 are
     * 2.3, 4.6 and 6.9 apart, where log q_max would crowd them near 0 */
    float sure = -logf(fmaxf(1.0f - q[a], FLT_MIN));
    if (!(sure <= RAM_STOP_SURE_MAX)) sure = RAM_STOP_SURE_MAX;
    f[0] = sure;
    f[1] = q[a] - q[b];
    f[2] = (float)(h / log((double)k));
}

float ram_stop_logit(const float *w, const float *q, int k, int t) {
    float f[3];
    ram_stop_features(q, k, f);
    return w[0] * f[0] + w[1] * f[1] + w[2] * f[2] + w[3 + t];
}

static double logit_of(const float *w, const float *f, int t) {
    return (double)w[0] * f[0] + (double)w[1] * f[1] + (double)w[2] * f[2] + (double)w[3 + t];
}

double ram_stop_sample_gradient(const float *w, const float *feats, const unsigned char *right,
                                int T, float cost, ram_rng *rng, const float *base, float norm,
                                double *grad, int *stopped_at) {
    /* Decisions after glimpses 0 .. T-2; after the last every image stops. */
    float x[64], p[64], R[64], b[64], dp[64];
    int tau = T - 1, decided = 0;
    for (int t = 0; t < T - 1; t++) {
        double pt = 1.0 / (1.0 + exp(-logit_of(w, feats + 3 * t, t)));
        /* ram_reinforce_bernoulli() needs p in (0, 1) */
        if (pt < 1e-6) pt = 1e-6;
        if (pt > 1.0 - 1e-6) pt = 1.0 - 1e-6;
        p[t] = (float)pt;
        x[t] = ram_rng_uniform(rng) < pt ? 1.0f : 0.0f;
        decided = t + 1;
        if (x[t] == 1.0f) {
            tau = t;
            break;
        }
    }
    const float reward = (right[tau] ? 1.0f : 0.0f) - cost * (float)(tau + 1);
    for (int t = 0; t < decided; t++) {
        R[t] = reward;
        b[t] = base ? base[t] : 0.0f;
    }
    /* d loss / d p of each decision; times p (1 - p), d loss / d logit */
    if (decided && ram_reinforce_bernoulli(x, p, decided, 1, R, b, 1.0f, norm, dp) == RAM_OK)
        for (int t = 0; t < decided; t++) {
            const double g = (double)dp[t] * p[t] * (1.0 - p[t]);
            const float *f = feats + 3 * t;
            grad[0] += g * f[0];
            grad[1] += g * f[1];
            grad[2] += g * f[2];
            grad[3 + t] += g;
        }
    if (stopped_at) *stopped_at = tau;
    return reward;
}

static ram_status check_fit(const ram_model *m, const float *probs, const int *labels, int n,
                            const ram_stop_params *sp) {
    if (!m || !probs || !labels)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "fit_stop: NULL model, probs or labels");
    if (m->p.objects != 1 || m->p.glimpses < 2)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "fit_stop: a model of %d objects and %d glimpses; a stop unit needs one "
                        "object and at least two glimpses",
                        m->p.objects, m->p.glimpses);
    if (n < 1) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "fit_stop: n = %d", n);
    if (!(sp->cost >= 0.0f) || !isfinite(sp->cost))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "fit_stop: cost %g is not finite and >= 0",
                        (double)sp->cost);
    if (sp->epochs < 1 || sp->batch < 1 || !(sp->lr > 0.0f) || !isfinite(sp->lr))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "fit_stop: epochs %d and batch %d must be >= 1, lr %g > 0", sp->epochs,
                        sp->batch, (double)sp->lr);
    const int K = m->p.classes;
    const size_t count = (size_t)n * m->p.glimpses * K;
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= K)
            return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                            "fit_stop: label %d of image %d not in [0, %d)", labels[i], i, K);
    for (size_t v = 0; v < count; v++)
        if (!(probs[v] >= 0.0f && probs[v] <= 1.0f))
            return ram_fail(RAM_ERR_NUMERIC, "fit_stop: probability %zu is %g, not in [0, 1]", v,
                            (double)probs[v]);
    return RAM_OK;
}

ram_status ram_model_fit_stop(ram_model *m, const float *probs, const int *labels, int n,
                              const ram_stop_params *user) {
    ram_stop_params sp;
    ram_stop_params_init(&sp);
    if (user) {
        ram_status s = ram_copy_params(&sp, sizeof sp, user, "fit_stop");
        if (s) return s;
    }
    ram_status s = check_fit(m, probs, labels, n, &sp);
    if (s) return s;
    const int T = m->p.glimpses, K = m->p.classes, d = RAM_STOP_WEIGHTS(T);
    float *feats = malloc(sizeof(float) * 3 * T * (size_t)n);
    unsigned char *right = malloc((size_t)T * n);
    int *order = malloc(sizeof(int) * (size_t)n);
    if (!feats || !right || !order) {
        free(feats);
        free(right);
        free(order);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "fit_stop: %d images: out of memory", n);
    }
    for (int i = 0; i < n; i++) {
        order[i] = i;
        for (int t = 0; t < T; t++) {
            const float *q = probs + ((size_t)i * T + t) * K;
            ram_stop_features(q, K, feats + ((size_t)i * T + t) * 3);
            right[(size_t)i * T + t] = ram_argmax(q, K) == labels[i];
        }
    }
    /* Adam on the negative expected reward, from w = 0 (a stop with
     * probability 1/2 after every glimpse).  The baseline of the decision
     * after glimpse t is the reward of stopping there: known before the
     * decision (the image and its label say it), so the estimate stays
     * unbiased, and a decision to stop then has no variance at all; one to
     * go on is weighed by what going on gained over stopping. */
    float w[RAM_STOP_WEIGHTS(64)] = {STOP_SLOPE}, base[64];
    for (int t = 0; t < T; t++)
        w[3 + t] = STOP_SLOPE * logf(1.0f - STOP_START);
    double m1[RAM_STOP_WEIGHTS(64)] = {0}, m2[RAM_STOP_WEIGHTS(64)] = {0};
    double grad[RAM_STOP_WEIGHTS(64)];
    const double beta1 = 0.9, beta2 = 0.999;
    long step = 0;
    ram_rng rng;
    ram_rng_seed(&rng, sp.seed);
    /* At least STOP_MIN_UPDATES steps of Adam, whatever the images' count:
     * a weight moves about lr a step, and the start's biases are -9. */
    const long per_epoch = (n + sp.batch - 1) / sp.batch;
    long epochs = (STOP_MIN_UPDATES + per_epoch - 1) / per_epoch;
    if (epochs < sp.epochs) epochs = sp.epochs;
    for (long e = 0; e < epochs; e++) {
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            const int j = (int)(ram_rng_u64(&rng) % (uint64_t)(i + 1)), v = order[i];
            order[i] = order[j];
            order[j] = v;
        }
        for (int b0 = 0; b0 < n; b0 += sp.batch) {
            const int nb = n - b0 < sp.batch ? n - b0 : sp.batch;
            for (int j = 0; j < d; j++)
                grad[j] = 0;
            for (int r = 0; r < nb; r++) {
                const size_t i = (size_t)order[b0 + r];
                const unsigned char *ri = right + i * T;
                for (int t = 0; t < T; t++)
                    base[t] = (ri[t] ? 1.0f : 0.0f) - sp.cost * (float)(t + 1);
                ram_stop_sample_gradient(w, feats + i * T * 3, ri, T, sp.cost, &rng, base,
                                         (float)nb, grad, NULL);
            }
            step++;
            const double c1 = 1.0 - pow(beta1, (double)step), c2 = 1.0 - pow(beta2, (double)step);
            for (int j = 0; j < d; j++) {
                m1[j] = beta1 * m1[j] + (1 - beta1) * grad[j];
                m2[j] = beta2 * m2[j] + (1 - beta2) * grad[j] * grad[j];
                w[j] -= (float)(sp.lr * (m1[j] / c1) / (sqrt(m2[j] / c2) + 1e-8));
            }
        }
    }
    free(feats);
    free(right);
    free(order);
    for (int j = 0; j < d; j++)
        if (!isfinite(w[j]))
            return ram_fail(RAM_ERR_NUMERIC, "fit_stop: weight %d diverged (lower lr)", j);
    memcpy(m->stop_w, w, sizeof(float) * (size_t)d);
    m->stop_cost = sp.cost;
    m->has_stop = true;
    return RAM_OK;
}

ram_status ram_model_stop_unit(const ram_model *m, float *w, float *cost) {
    if (!m) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_stop_unit: NULL model");
    if (!m->has_stop)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_stop_unit: the model has no stop unit");
    if (w) memcpy(w, m->stop_w, sizeof(float) * (size_t)RAM_STOP_WEIGHTS(m->p.glimpses));
    if (cost) *cost = m->stop_cost;
    return RAM_OK;
}

ram_status ram_model_set_stop_unit(ram_model *m, const float *w, float cost) {
    if (!m) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_stop_unit: NULL model");
    if (!w) {
        m->has_stop = false;
        return RAM_OK;
    }
    if (m->p.objects != 1 || m->p.glimpses < 2)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "model_set_stop_unit: a model of %d objects and %d glimpses; a stop unit "
                        "needs one object and at least two glimpses",
                        m->p.objects, m->p.glimpses);
    if (!(cost >= 0.0f) || !isfinite(cost))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_stop_unit: cost %g", (double)cost);
    const int d = RAM_STOP_WEIGHTS(m->p.glimpses);
    for (int j = 0; j < d; j++)
        if (!isfinite(w[j]))
            return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_set_stop_unit: weight %d is %g", j,
                            (double)w[j]);
    memcpy(m->stop_w, w, sizeof(float) * (size_t)d);
    m->stop_cost = cost;
    m->has_stop = true;
    return RAM_OK;
}
