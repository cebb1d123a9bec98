/* threads: classify images on several threads with one shared model.
 *
 * A ram_model is read-only once made, so any number of threads may use it at
 * once; each thread needs its own ram_state (the scratch memory of a forward
 * pass) and, for random locations, its own ram_policy.  Here each thread
 * classifies its share of the images, and the labels must be those one
 * thread gets for the same images.
 * usage: threads [MODEL.ram [THREADS]]   (no model: one with random weights) */
#include <ram/ram.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IMAGES = 600, MAX_THREADS = 16 };

typedef struct work {
    const ram_model *model; /* shared */
    const float *images;
    int *labels;
    int first, count, pixels;
    ram_status status;
} work;

static void *classify(void *arg) {
    work *w = arg;
    ram_state *state = NULL; /* this thread's own */
    w->status = ram_state_create(w->model, w->count, &state);
    if (w->status == RAM_OK)
        w->status = ram_model_classify(w->model, state, w->images + (size_t)w->first * w->pixels,
                                       w->count, w->labels + w->first, NULL, NULL);
    ram_state_free(state);
    return NULL;
}

int main(int argc, char **argv) {
    const int nthreads = argc > 2 ? atoi(argv[2]) : 4;
    if (nthreads < 1 || nthreads > MAX_THREADS) {
        fprintf(stderr, "usage: %s [MODEL.ram [THREADS (1..%d)]]\n", argv[0], MAX_THREADS);
        return 1;
    }
    ram_model *model = NULL;
    ram_model_params p;
    ram_model_params_init(&p);
    ram_status s = argc > 1 ? ram_model_load(argv[1], &model) : ram_model_create(&p, &model);
    if (s == RAM_OK) s = ram_model_get_params(model, &p);
    if (s != RAM_OK) {
        fprintf(stderr, "libram: %s (%s)\n", ram_last_error(), ram_status_string(s));
        ram_model_free(model);
        return 1;
    }
    const int pixels = p.channels * p.height * p.width;
    float *images = malloc(sizeof(float) * IMAGES * pixels);
    int *labels = malloc(sizeof(int) * IMAGES), *alone = malloc(sizeof(int) * IMAGES), rc = 1;
    if (!images || !labels || !alone) goto done;
    srand(1);
    for (long i = 0; i < (long)IMAGES * pixels; i++)
        images[i] = (float)rand() / (float)RAND_MAX; /* any pixels will do */

    /* One thread's labels for all images, to compare with. */
    work one = {model, images, alone, 0, IMAGES, pixels, RAM_OK};
    classify(&one);
    pthread_t tid[MAX_THREADS];
    work w[MAX_THREADS];
    for (int t = 0; t < nthreads; t++) {
        const int first = IMAGES * t / nthreads, end = IMAGES * (t + 1) / nthreads;
        w[t] = (work){model, images, labels, first, end - first, pixels, RAM_OK};
        if (pthread_create(&tid[t], NULL, classify, &w[t]) != 0) {
            fprintf(stderr, "cannot start thread %d\n", t);
            for (int k = 0; k < t; k++)
                pthread_join(tid[k], NULL);
            goto done;
        }
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(tid[t], NULL);
    for (int t = 0; t < nthreads; t++)
        if (w[t].status != RAM_OK || one.status != RAM_OK) {
            fprintf(stderr, "classify: %s\n",
                    ram_status_string(w[t].status ? w[t].status : one.status));
            goto done;
        }
    if (memcmp(labels, alone, sizeof(int) * IMAGES) != 0) {
        fprintf(stderr, "%d threads gave other labels than one thread\n", nthreads);
        goto done;
    }
    printf("%d threads classified %d images with one shared model: the labels of one thread\n",
           nthreads, IMAGES);
    rc = 0;
done:
    free(alone);
    free(labels);
    free(images);
    ram_model_free(model);
    return rc;
}
