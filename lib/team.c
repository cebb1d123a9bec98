/* A team of threads that run one function together, with barriers between
 * the phases of that function: the library's one thread pool, behind
 * threaded inference states (ram_state_create_threads) and the trainer's
 * data-parallel workers.
 *
 * Batch-1 inference is a chain of small layers (a few microseconds each), so
 * the hand-offs must cost far less than a mutex and condition-variable round
 * trip (~5-10 us to wake a sleeping thread).  Workers therefore spin on an
 * atomic generation counter for a while after each job, in case another job
 * follows, and only then sleep on a condition variable; barriers spin
 * (yielding the CPU after a while, for machines with more threads than free
 * cores).  All hand-offs are C11 sequentially consistent atomics. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* How long an idle worker spins before it sleeps: long enough to catch the
 * next call of a caller classifying image after image. */
#define IDLE_SPIN_NS 100000L
/* Spins at a barrier before each sched_yield(). */
#define BARRIER_SPINS 4096

typedef struct worker {
    struct ram_team *team;
    int k;
    pthread_t thread;
} worker;

struct ram_team {
    int nt; /* threads, the caller's included */
    worker *w;
    int started; /* worker threads running: w[1 .. started] */
    ram_team_fn fn;
    void *arg;
    atomic_long gen; /* bumped once per job */
    atomic_int done; /* workers finished with the current job */
    atomic_int sleepers;
    atomic_int quit;
    atomic_int bar_count, bar_phase;
    pthread_mutex_t mu;
    pthread_cond_t wake;
};

double ram_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long elapsed_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Wait until t->gen differs from `seen`; returns the new value. */
static long wait_job(ram_team *t, long seen) {
    long g;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned spin = 1; (g = atomic_load(&t->gen)) == seen; spin++) {
        ram_cpu_relax();
        if (spin % 256 || elapsed_ns(&t0) < IDLE_SPIN_NS) continue;
        /* Sleep.  The caller bumps gen and then reads sleepers; we raise
         * sleepers and then re-read gen (both sequentially consistent), so
         * one of us sees the other and no wake-up is lost. */
        pthread_mutex_lock(&t->mu);
        atomic_fetch_add(&t->sleepers, 1);
        while ((g = atomic_load(&t->gen)) == seen)
            pthread_cond_wait(&t->wake, &t->mu);
        atomic_fetch_sub(&t->sleepers, 1);
        pthread_mutex_unlock(&t->mu);
        break;
    }
    return g;
}

static void *worker_main(void *arg) {
    worker *wk = arg;
    ram_team *t = wk->team;
    long seen = 0;
    for (;;) {
        seen = wait_job(t, seen);
        if (atomic_load(&t->quit)) return NULL;
        t->fn(t->arg, wk->k, t->nt);
        atomic_fetch_add(&t->done, 1);
    }
}

static void bump(ram_team *t) {
    atomic_fetch_add(&t->gen, 1);
    if (atomic_load(&t->sleepers) > 0) {
        pthread_mutex_lock(&t->mu);
        pthread_cond_broadcast(&t->wake);
        pthread_mutex_unlock(&t->mu);
    }
}

void ram_team_free(ram_team *t) {
    if (!t) return;
    if (t->started) {
        atomic_store(&t->quit, 1);
        bump(t);
        for (int k = 1; k <= t->started; k++)
            pthread_join(t->w[k].thread, NULL);
    }
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->mu);
    free(t->w);
    free(t);
}

ram_status ram_team_create(int threads, ram_status thread_failure, const char *what,
                           ram_team **out) {
    ram_team *t = calloc(1, sizeof *t);
    worker *w = calloc((size_t)threads, sizeof *w);
    if (!t || !w) {
        free(t);
        free(w);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    t->nt = threads;
    t->w = w;
    atomic_init(&t->gen, 0);
    atomic_init(&t->done, 0);
    atomic_init(&t->sleepers, 0);
    atomic_init(&t->quit, 0);
    atomic_init(&t->bar_count, 0);
    atomic_init(&t->bar_phase, 0);
    if (pthread_mutex_init(&t->mu, NULL)) {
        free(w);
        free(t);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: cannot create a mutex", what);
    }
    if (pthread_cond_init(&t->wake, NULL)) {
        pthread_mutex_destroy(&t->mu);
        free(w);
        free(t);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: cannot create a condition variable", what);
    }
    for (int k = 1; k < threads; k++) {
        w[k].team = t;
        w[k].k = k;
        if (pthread_create(&w[k].thread, NULL, worker_main, &w[k])) {
            ram_team_free(t);
            return ram_fail(thread_failure, "%s: cannot start worker thread %d of %d", what, k,
                            threads - 1);
        }
        t->started = k;
    }
    *out = t;
    return RAM_OK;
}

int ram_team_size(const ram_team *t) {
    return t ? t->nt : 1;
}

void ram_team_run(ram_team *t, ram_team_fn fn, void *arg) {
    if (!t || t->nt == 1) {
        fn(arg, 0, 1);
        return;
    }
    t->fn = fn;
    t->arg = arg;
    atomic_store(&t->done, 0);
    bump(t);
    fn(arg, 0, t->nt);
    for (unsigned spin = 1; atomic_load(&t->done) < t->nt - 1; spin++) {
        ram_cpu_relax();
        if (spin % BARRIER_SPINS == 0) sched_yield();
    }
}

void ram_team_barrier(ram_team *t) {
    if (!t || t->nt == 1) return;
    const int phase = atomic_load(&t->bar_phase);
    if (atomic_fetch_add(&t->bar_count, 1) == t->nt - 1) {
        atomic_store(&t->bar_count, 0);
        atomic_store(&t->bar_phase, phase + 1);
        return;
    }
    for (unsigned spin = 1; atomic_load(&t->bar_phase) == phase; spin++) {
        ram_cpu_relax();
        if (spin % BARRIER_SPINS == 0) sched_yield();
    }
}
