/* The error of the LSTM's tanh and logistic function (ram_tanh, ram_sigmoid
 * in lib/internal.h) against tanh() and 1 / (1 + exp(-x)) in double, over
 * every finite float (about 3 minutes on one core), or every STRIDE-th bit
 * pattern: `tanh-error [STRIDE]`.  The bounds quoted in internal.h and
 * docs/performance.md come from this program; tests/check_layers.c checks
 * them on a grid. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The spacing of floats at |ref|: the unit of an error in ulp. */
static double ulp_at(float ref) {
    const float a = fabsf(ref);
    return a == 0.0f ? 1.4e-45 : (double)(nextafterf(a, INFINITY) - a);
}

int main(int argc, char **argv) {
    const uint64_t stride = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    if (stride < 1) {
        fprintf(stderr, "usage: tanh-error [STRIDE >= 1]\n");
        return 2;
    }
    double worst_abs = 0, worst_ulp = 0, worst_sig = 0;
    float at_abs = 0, at_ulp = 0, at_sig = 0, largest = 0;
    unsigned long long n = 0, not_odd = 0;
    for (uint64_t b = 0; b < (1ull << 32); b += stride) {
        const uint32_t u = (uint32_t)b;
        float x;
        memcpy(&x, &u, sizeof x);
        if (!isfinite(x)) continue;
        const float t = ram_tanh(x), s = ram_sigmoid(x);
        const double ref = tanh((double)x), e = fabs((double)t - ref);
        const double e_ulp = fabs((double)t - (double)(float)ref) / ulp_at((float)ref);
        const double e_sig = fabs((double)s - 1.0 / (1.0 + exp(-(double)x)));
        if (e > worst_abs) worst_abs = e, at_abs = x;
        if (e_ulp > worst_ulp) worst_ulp = e_ulp, at_ulp = x;
        if (e_sig > worst_sig) worst_sig = e_sig, at_sig = x;
        if (fabsf(t) > largest) largest = fabsf(t);
        not_odd += ram_tanh(-x) != -t;
        n++;
    }
    printf("%llu finite floats (every %llu-th bit pattern)\n", n, (unsigned long long)stride);
    printf("ram_tanh:    max abs error %.3g at x = %.9g; max %.1f ulp at x = %.9g; "
           "max |tanh| %.9g; not odd at %llu\n",
           worst_abs, at_abs, worst_ulp, at_ulp, largest, not_odd);
    printf("ram_sigmoid: max abs error %.3g at x = %.9g\n", worst_sig, at_sig);
    return 0;
}
