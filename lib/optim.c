/* The optimizers over a flat vector of weights: SGD with momentum (Nesterov
 * optional) and Adam, both with decoupled weight decay, a linear learning-
 * rate decay, and a moving average of the weights; and the squared norm
 * that gradient clipping needs.  The trainer shares the work out between
 * its threads by blocks of weights (trainer.c); Adam's element-wise step
 * runs in the processor's kernel set (kernels.h), SGD's stays here. */
#include "internal.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ram_status ram_optim_validate(const ram_trainer_params *p, const char *what) {
    if (p->optimizer != RAM_OPT_SGD && p->optimizer != RAM_OPT_ADAM)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: unknown optimizer %d", what,
                        (int)p->optimizer);
    if (!isfinite(p->lr) || p->lr < 0 || !isfinite(p->lr_final) || p->lr_final < 0 ||
        p->decay_steps < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: lr %g, lr_final %g must be >= 0, decay_steps >= 0", what,
                        (double)p->lr, (double)p->lr_final);
    if (!isfinite(p->momentum) || p->momentum < 0 || p->momentum >= 1 || !isfinite(p->beta1) ||
        p->beta1 < 0 || p->beta1 >= 1 || !isfinite(p->beta2) || p->beta2 < 0 || p->beta2 >= 1 ||
        !(p->eps > 0) || !isfinite(p->eps) || !isfinite(p->clip_norm) || p->clip_norm < 0)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: momentum, beta1, beta2 must be in [0, 1), eps finite and > 0, "
                        "clip_norm finite and >= 0",
                        what);
    /* lr * weight_decay >= 1 would flip or zero every weight at each step. */
    if (!isfinite(p->weight_decay) || p->weight_decay < 0 ||
        (double)fmaxf(p->lr, p->lr_final) * p->weight_decay >= 1)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: weight_decay %g must be finite, >= 0 and below 1 / lr", what,
                        (double)p->weight_decay);
    if (!(p->average_decay >= 0 && p->average_decay < 1)) /* also false for NaN */
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: average_decay %g must be in [0, 1)", what,
                        (double)p->average_decay);
    return RAM_OK;
}

ram_status ram_optim_init(ram_optim *o, const ram_trainer_params *p, size_t n, const float *w,
                          size_t n_avg) {
    memset(o, 0, sizeof *o);
    o->p = *p;
    o->n = n;
    o->m1 = calloc(n ? n : 1, sizeof(float));
    o->m2 = calloc(n ? n : 1, sizeof(float));
    if (p->average_decay > 0 && (o->avg = malloc(sizeof(float) * (n_avg ? n_avg : 1))))
        memcpy(o->avg, w, sizeof(float) * n_avg);
    o->n_avg = o->avg ? n_avg : 0;
    if (!o->m1 || !o->m2 || (p->average_decay > 0 && !o->avg)) {
        ram_optim_release(o);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "trainer_create: out of memory");
    }
    return RAM_OK;
}

void ram_optim_release(ram_optim *o) {
    free(o->m1);
    free(o->m2);
    free(o->avg);
    memset(o, 0, sizeof *o);
}

float ram_optim_lr(const ram_optim *o) {
    if (o->p.decay_steps <= 0) return o->p.lr;
    double f = o->step >= o->p.decay_steps ? 1.0 : (double)o->step / o->p.decay_steps;
    return (float)(o->p.lr + (o->p.lr_final - o->p.lr) * f);
}

/* The moving average's step after step k: avg += (1 - d) (w - avg), with
 * TensorFlow's warm-up for d. */
float ram_optim_average_rate(const ram_optim *o) {
    const double k = (double)o->step;
    return 1 - fminf(o->p.average_decay, (float)((1 + k) / (10 + k)));
}

void ram_optim_update(const ram_optim *o, float *restrict w, const float *restrict g, size_t n,
                      size_t off, float lr, float scale, float decay, float *restrict avg,
                      float a) {
    /* Locals and restrict: the loop vectorises only once the compiler knows
     * that writing w cannot change the hyper-parameters. */
    float *restrict m1 = o->m1 + off, *restrict m2 = o->m2 + off;
    const ram_trainer_params *p = &o->p;
    if (p->optimizer == RAM_OPT_SGD) {
        const float mom = p->momentum;
        const bool nesterov = p->nesterov;
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] * scale;
            m1[i] = mom * m1[i] + gi;
            w[i] = w[i] * decay - lr * (nesterov ? gi + mom * m1[i] : m1[i]);
            if (avg) avg[i] += a * (w[i] - avg[i]);
        }
    } else {
        const double k = (double)o->step + 1;
        const float b1 = p->beta1, b2 = p->beta2;
        const ram_adam_step s = {.scale = scale,
                                 .beta1 = b1,
                                 .one_minus_beta1 = 1 - b1,
                                 .beta2 = b2,
                                 .one_minus_beta2 = 1 - b2,
                                 .c1 = (float)(1.0 / (1.0 - pow(b1, k))),
                                 .c2 = (float)(1.0 / (1.0 - pow(b2, k))),
                                 .eps = p->eps,
                                 .lr = lr,
                                 .decay = decay,
                                 .avg_rate = a};
        ram_adam(&s, w, m1, m2, g, n, avg);
    }
}

/* Four partial sums: a quarter of the dependent additions' latency. */
double ram_squared_norm(const float *g, size_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)g[i] * g[i];
        s1 += (double)g[i + 1] * g[i + 1];
        s2 += (double)g[i + 2] * g[i + 2];
        s3 += (double)g[i + 3] * g[i + 3];
    }
    for (; i < n; i++)
        s0 += (double)g[i] * g[i];
    return (s0 + s1) + (s2 + s3);
}
