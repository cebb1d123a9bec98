/* The batch loader thread (see loader.h): depth + 1 slots, filled in order
 * by the thread and emptied in order by the caller, who holds the batch it
 * took (its slot) until its next call. */
#include "loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    loader_batch b;
    int n; /* images made, or -1: the fill failed */
} slot;

struct loader {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t filled, emptied;
    slot *slots;
    int depth, started;
    long count, made, taken; /* batches made by the thread, taken by the caller */
    int stop;
    loader_fill_fn fill;
    void *user;
};

static void *run(void *arg) {
    loader *l = arg;
    for (long b = 0; b < l->count; b++) {
        pthread_mutex_lock(&l->lock);
        while (!l->stop && b >= l->taken + l->depth) /* the queue is full */
            pthread_cond_wait(&l->emptied, &l->lock);
        const int stop = l->stop;
        pthread_mutex_unlock(&l->lock);
        if (stop) break;
        slot *s = &l->slots[b % (l->depth + 1)];
        s->n = l->fill(l->user, b, &s->b);
        pthread_mutex_lock(&l->lock);
        l->made = b + 1;
        pthread_cond_signal(&l->filled);
        pthread_mutex_unlock(&l->lock);
        if (s->n < 0) break;
    }
    return NULL;
}

int loader_start(const char *prog, int depth, int max_batch, size_t image_bytes, long count,
                 loader_fill_fn fill, void *user, loader **out) {
    *out = NULL;
    loader *l = calloc(1, sizeof *l);
    if (!l || !(l->slots = calloc((size_t)depth + 1, sizeof *l->slots))) {
        free(l);
        fprintf(stderr, "%s: out of memory for the loader\n", prog);
        return -1;
    }
    l->depth = depth;
    l->count = count;
    l->fill = fill;
    l->user = user;
    int ok = 1;
    for (int i = 0; i <= depth && ok; i++) {
        loader_batch *b = &l->slots[i].b;
        b->images = malloc(image_bytes * (size_t)max_batch);
        b->each = malloc(sizeof *b->each * (size_t)max_batch);
        b->labels = malloc(sizeof(int) * (size_t)max_batch);
        ok = b->images && b->each && b->labels;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->filled, NULL);
    pthread_cond_init(&l->emptied, NULL);
    if (!ok) {
        fprintf(stderr, "%s: out of memory for %d batches of %d images of %zu bytes\n", prog,
                depth + 1, max_batch, image_bytes);
    } else if (pthread_create(&l->thread, NULL, run, l) != 0) {
        fprintf(stderr, "%s: cannot start the loader thread\n", prog);
        ok = 0;
    }
    l->started = ok;
    if (!ok) {
        loader_free(l);
        return -1;
    }
    *out = l;
    return 0;
}

int loader_next(loader *l, const loader_batch **b, int *n) {
    pthread_mutex_lock(&l->lock);
    if (l->taken >= l->count) { /* asked for more than was started */
        pthread_mutex_unlock(&l->lock);
        return -1;
    }
    while (l->made <= l->taken)
        pthread_cond_wait(&l->filled, &l->lock);
    const slot *s = &l->slots[l->taken % (l->depth + 1)];
    l->taken++;
    pthread_cond_signal(&l->emptied);
    pthread_mutex_unlock(&l->lock);
    if (s->n < 0) {
        l->count = l->taken; /* the thread stopped there */
        return -1;
    }
    *b = &s->b;
    *n = s->n;
    return 0;
}

void loader_free(loader *l) {
    if (!l) return;
    if (l->started) {
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->emptied);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->thread, NULL);
    }
    for (int i = 0; i <= l->depth; i++) {
        free(l->slots[i].b.images);
        free(l->slots[i].b.each);
        free(l->slots[i].b.labels);
    }
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->filled);
    pthread_cond_destroy(&l->emptied);
    free(l->slots);
    free(l);
}
