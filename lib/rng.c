/* xoshiro256** (Blackman & Vigna), seeded through splitmix64.  Every RNG
 * lives in a handle: libram has no global random state. */
#include "internal.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ram_rng_seed(ram_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
    r->spare = 0;
    r->has_spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t ram_rng_u64(ram_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ram_rng_uniform(ram_rng *r) {
    return (double)(ram_rng_u64(r) >> 11) * 0x1.0p-53;
}

double ram_rng_normal(ram_rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do { /* Marsaglia's polar method: no trig, exact tails */
        u = 2 * ram_rng_uniform(r) - 1;
        v = 2 * ram_rng_uniform(r) - 1;
        s = u * u + v * v;
    } while (s >= 1 || s == 0);
    double f = sqrt(-2 * log(s) / s);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}
