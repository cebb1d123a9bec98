/* What one glimpse costs with each sensor, and the soft sensor's location
 * gradient, at the retinas of the committed models: nanoseconds per
 * glimpse, the median of several runs.  Not a test (timings are not
 * pass/fail); built beside the tests, run by hand:
 *     soft_glimpse_speed [runs]
 * Public API only. */
#define _POSIX_C_SOURCE 200809L
#include "ram/ram.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BATCH = 64, REPEAT = 400 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned long long lcg = 1;
static float uniform(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

typedef struct retina {
    const char *name;
    int side, patch, depth;
} retina;

/* ns per glimpse of `what` (0 extract hard, 1 extract soft, 2 soft gradient). */
static double run(const retina *r, int what, int runs, const float *img, const float *locs,
                  float *out, const float *dout, float *dl) {
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    p.patch = r->patch;
    p.depth = r->depth;
    p.scale = 2.0f;
    ram_glimpse *g;
    if (ram_glimpse_create_sensor(&p, what == 0 ? RAM_SENSOR_HARD : RAM_SENSOR_SOFT, &g)) {
        fprintf(stderr, "%s\n", ram_last_error());
        exit(1);
    }
    const size_t per = ram_glimpse_size(g, 1);
    double t[32];
    for (int k = 0; k < runs; k++) {
        const double t0 = now();
        for (int rep = 0; rep < REPEAT; rep++) {
            ram_status s = what == 2
                               ? ram_glimpse_backward_location(g, img, BATCH, 1, r->side, r->side,
                                                               locs, dout, per * BATCH, dl)
                               : ram_glimpse_extract(g, img, BATCH, 1, r->side, r->side, locs, out,
                                                     per * BATCH);
            if (s) {
                fprintf(stderr, "%s\n", ram_last_error());
                exit(1);
            }
        }
        t[k] = (now() - t0) / ((double)REPEAT * BATCH) * 1e9;
    }
    ram_glimpse_free(g);
    qsort(t, runs, sizeof *t, cmp_double);
    return t[runs / 2];
}

int main(int argc, char **argv) {
    const int runs = argc > 1 ? atoi(argv[1]) : 7;
    if (runs < 1 || runs > 32) {
        fprintf(stderr, "runs: 1 to 32\n");
        return 2;
    }
    const retina retinas[] = {{"mnist 28x28, 8x8 x 1", 28, 8, 1},
                              {"translated60 60x60, 12x12 x 3", 60, 12, 3},
                              {"cluttered100 100x100, 12x12 x 4", 100, 12, 4}};
    printf("%-34s %10s %10s %10s %7s\n", "retina", "hard ns", "soft ns", "grad ns", "soft/hard");
    for (size_t i = 0; i < sizeof retinas / sizeof *retinas; i++) {
        const retina *r = &retinas[i];
        const size_t img_n = (size_t)BATCH * r->side * r->side;
        const size_t per = (size_t)r->depth * r->patch * r->patch;
        float *img = malloc(sizeof(float) * img_n), *locs = malloc(sizeof(float) * 2 * BATCH);
        float *out = malloc(sizeof(float) * per * BATCH),
              *dout = malloc(sizeof(float) * per * BATCH);
        float dl[2 * BATCH];
        if (!img || !locs || !out || !dout) return 1;
        for (size_t k = 0; k < img_n; k++)
            img[k] = uniform();
        for (int k = 0; k < 2 * BATCH; k++)
            locs[k] = 1.8f * uniform() - 0.9f;
        for (size_t k = 0; k < per * BATCH; k++)
            dout[k] = uniform() - 0.5f;
        const double hard = run(r, 0, runs, img, locs, out, dout, dl);
        const double soft = run(r, 1, runs, img, locs, out, dout, dl);
        const double grad = run(r, 2, runs, img, locs, out, dout, dl);
        printf("%-34s %10.1f %10.1f %10.1f %7.2f\n", r->name, hard, soft, grad, soft / hard);
        free(img);
        free(locs);
        free(out);
        free(dout);
    }
    return 0;
}
