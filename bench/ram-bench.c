/* ram-bench: speed figures for libram (a benchmark prints, it never asserts).
 *
 *   1. inference cost against image size: the point of hard attention is that
 *      it does not grow with the image (same retina, 28x28 .. 512x512);
 *   2. training throughput (samples/s) with 1 and 2 worker threads;
 *   3. inference throughput of one shared model from 1 and 2 threads.
 *
 * Each figure is the median of --reps timed repetitions, all in one run so
 * that ratios are comparable on a noisy machine. */
#define _POSIX_C_SOURCE 200809L
#include <ram/ram.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        ram_status s_ = (call);                                                                    \
        if (s_) {                                                                                  \
            fprintf(stderr, "ram-bench: %s: %s\n", #call, ram_last_error());                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static float *random_images(int n, int c, int h, int w, unsigned seed) {
    size_t count = (size_t)n * c * h * w;
    float *x = malloc(sizeof(float) * count);
    if (!x) exit(1);
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65535.0f;
    }
    return x;
}

typedef struct job {
    const ram_model *m;
    const float *images;
    int n, batch, reps;
    double seconds;
} job;

static void *classify_job(void *arg) {
    job *j = arg;
    ram_state *st;
    CHECK(ram_state_create(j->m, j->batch, &st));
    int *labels = malloc(sizeof(int) * j->batch);
    ram_model_params p;
    ram_model_params_init(&p);
    CHECK(ram_model_get_params(j->m, &p));
    size_t img = (size_t)p.channels * p.height * p.width;
    double t0 = now();
    for (int r = 0; r < j->reps; r++)
        for (int i = 0; i < j->n; i += j->batch) {
            int b = j->n - i < j->batch ? j->n - i : j->batch;
            CHECK(ram_model_classify(j->m, st, j->images + i * img, b, labels, NULL, NULL));
        }
    j->seconds = now() - t0;
    free(labels);
    ram_state_free(st);
    return NULL;
}

int main(int argc, char **argv) {
    int reps = 5;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
    if (reps < 1) reps = 1;
    ram_set_blas_threads(1);
    printf("libram %s ram-bench, median of %d repetitions\n\n", ram_version_string(), reps);

    /* 1. cost against image size, paper's MNIST network (6 glimpses, 8x8, 1 scale
     *    for 28x28) and a 12x12, 3-scale retina for the larger images. */
    printf("1. inference, batch 64, 6 glimpses: microseconds per image\n");
    printf("   %-10s %-16s %12s %14s\n", "image", "retina", "us/image", "input floats");
    const int sizes[] = {28, 60, 100, 256, 512};
    for (int s = 0; s < 5; s++) {
        ram_model_params p;
        ram_model_params_init(&p);
        p.height = p.width = sizes[s];
        p.loc_range_pixels = 0;
        if (sizes[s] > 28) {
            p.glimpse.patch = 12;
            p.glimpse.depth = 3;
        }
        ram_model *m;
        CHECK(ram_model_create(&p, &m));
        int n = 256;
        float *x = random_images(n, 1, p.height, p.width, 7);
        double t[64];
        for (int r = 0; r < reps; r++) {
            job j = {m, x, n, 64, 1, 0};
            classify_job(&j);
            t[r] = j.seconds / n * 1e6;
        }
        char retina[32];
        snprintf(retina, sizeof retina, "%dx%d x%d", p.glimpse.patch, p.glimpse.patch,
                 p.glimpse.depth);
        printf("   %3dx%-6d %-16s %12.1f %14d\n", sizes[s], sizes[s], retina, median(t, reps),
               sizes[s] * sizes[s]);
        free(x);
        ram_model_free(m);
    }

    /* 2. training throughput on the MNIST model. */
    printf("\n2. training, MNIST model (28x28, 6 glimpses, 256 hidden), batch 64: samples/s\n");
    ram_model_params mp;
    ram_model_params_init(&mp);
    const int n_train = 1024;
    float *x = random_images(n_train, 1, 28, 28, 11);
    int *y = malloc(sizeof(int) * n_train);
    for (int i = 0; i < n_train; i++)
        y[i] = i % 10;
    double rate[2];
    for (int threads = 1; threads <= 2; threads++) {
        ram_model *m;
        ram_policy *pol;
        ram_trainer *t;
        ram_policy_params pp;
        ram_trainer_params tp;
        ram_policy_params_init(&pp);
        ram_trainer_params_init(&tp);
        tp.max_batch = 64;
        tp.threads = threads;
        CHECK(ram_model_create(&mp, &m));
        CHECK(ram_policy_create(&pp, m, &pol));
        CHECK(ram_trainer_create(m, pol, &tp, &t));
        double v[64];
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int i = 0; i < n_train; i += 64)
                CHECK(ram_trainer_train_batch(t, x + (size_t)i * 784, y + i, 64, NULL));
            v[r] = n_train / (now() - t0);
        }
        rate[threads - 1] = median(v, reps);
        printf("   %d thread%s %10.0f samples/s  (%.1f s per 50,000-image epoch)\n", threads,
               threads > 1 ? "s" : " ", rate[threads - 1], 50000 / rate[threads - 1]);
        ram_trainer_free(t);
        ram_policy_free(pol);
        ram_model_free(m);
    }
    printf("   speed-up 2 threads / 1 thread: %.2fx\n", rate[1] / rate[0]);

    /* 3. one shared model, inference from 1 and 2 threads. */
    printf("\n3. inference, one shared model, batch 64: images/s\n");
    ram_model *m;
    CHECK(ram_model_create(&mp, &m));
    double ips[2];
    for (int threads = 1; threads <= 2; threads++) {
        double v[64];
        for (int r = 0; r < reps; r++) {
            pthread_t th[2];
            job j[2];
            double t0 = now();
            for (int k = 0; k < threads; k++) {
                j[k] = (job){m, x, n_train, 64, 1, 0};
                pthread_create(&th[k], NULL, classify_job, &j[k]);
            }
            for (int k = 0; k < threads; k++)
                pthread_join(th[k], NULL);
            v[r] = threads * n_train / (now() - t0);
        }
        ips[threads - 1] = median(v, reps);
        printf("   %d thread%s %10.0f images/s\n", threads, threads > 1 ? "s" : " ",
               ips[threads - 1]);
    }
    printf("   speed-up 2 threads / 1 thread: %.2fx\n", ips[1] / ips[0]);
    ram_model_free(m);
    free(x);
    free(y);
    return 0;
}
