/* The thread team (lib/team.c), the fork-join pool behind threaded states:
 * every index runs once per job, on the right threads, the job ends only
 * when every thread has finished, barriers order the phases of a job, and
 * workers that went to sleep between jobs are woken for the next.
 *
 * No check depends on timing to pass: the delays below only make a broken
 * team likelier to show.  The suite also runs under ThreadSanitizer, so its
 * own shared data are atomics, or plain writes ordered by what is under test
 * (the return of ram_team_run(), a barrier): a team that failed to order
 * them would show as a race as well as a wrong value. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { MAX_NT = 8 };

/* Busy-waits: no sleep, so that the delay is precise enough to land on a
 * worker's move from spinning to sleeping. */
static void spin_ns(long ns) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, us % 1000000 * 1000};
    while (nanosleep(&ts, &ts))
        ;
}

/* Busy work that the compiler cannot drop: keeps one thread late. */
static void dawdle(int units) {
    volatile unsigned sink = 0;
    for (int i = 0; i < units * 1000; i++)
        sink += (unsigned)i;
}

/* Loads as functions: the assertions' messages stay readable. */
static int load(atomic_int *a) {
    return atomic_load(a);
}
static long load_long(atomic_long *a) {
    return atomic_load(a);
}

static ram_team *make_team(int nt) {
    ram_team *t = NULL;
    ck_assert_int_eq(ram_team_create(nt, RAM_ERR_THREAD, "test", &t), RAM_OK);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(ram_team_size(t), nt);
    return t;
}

/* ---- who runs ---- */

typedef struct {
    int nt;                     /* what every call must be told */
    atomic_int calls[MAX_NT];   /* per index */
    atomic_int stray, wrong_nt; /* calls with k out of [0, nt), or another nt */
    pthread_t self[MAX_NT];     /* thread k's, read after the job */
} census;

static void census_fn(void *arg, int k, int nt) {
    census *c = arg;
    if (nt != c->nt) atomic_fetch_add(&c->wrong_nt, 1);
    if (k < 0 || k >= c->nt) {
        atomic_fetch_add(&c->stray, 1);
        return;
    }
    atomic_fetch_add(&c->calls[k], 1);
    c->self[k] = pthread_self();
}

START_TEST(test_each_index_once) {
    const pthread_t caller = pthread_self();
    for (int nt = 2; nt <= MAX_NT; nt++) {
        ram_team *t = make_team(nt);
        census c;
        memset(&c, 0, sizeof c);
        c.nt = nt;
        for (int rep = 0; rep < 100; rep++) {
            for (int k = 0; k < MAX_NT; k++)
                atomic_store(&c.calls[k], 0);
            ram_team_run(t, census_fn, &c);
            for (int k = 0; k < nt; k++)
                ck_assert_msg(load(&c.calls[k]) == 1, "nt %d, run %d: index %d ran %d times", nt,
                              rep, k, load(&c.calls[k]));
            ck_assert_int_eq(load(&c.stray), 0);
            ck_assert_int_eq(load(&c.wrong_nt), 0);
            /* Index 0 is the caller's share; the others run on nt - 1
             * threads of their own. */
            ck_assert_msg(pthread_equal(c.self[0], caller), "nt %d: index 0 not on the caller", nt);
            for (int k = 1; k < nt; k++) {
                ck_assert_msg(!pthread_equal(c.self[k], caller), "nt %d: index %d on the caller",
                              nt, k);
                for (int j = 1; j < k; j++)
                    ck_assert_msg(!pthread_equal(c.self[k], c.self[j]),
                                  "nt %d: indices %d and %d on one thread", nt, j, k);
            }
        }
        ram_team_free(t);
    }
}
END_TEST

/* ---- the job ends when every thread has finished ---- */

typedef struct {
    int run;
    int slot[MAX_NT]; /* plain: ram_team_run() must order these before its return */
    atomic_int finished;
} join_job;

static void join_fn(void *arg, int k, int nt) {
    (void)nt;
    join_job *j = arg;
    /* The caller's share ends at once, the workers' later and later: a
     * return that waited for the caller alone would see old slots. */
    dawdle(4 * k);
    j->slot[k] = j->run;
    atomic_fetch_add(&j->finished, 1);
}

START_TEST(test_run_waits_for_all) {
    for (int nt = 2; nt <= MAX_NT; nt++) {
        ram_team *t = make_team(nt);
        join_job j;
        memset(&j, 0, sizeof j);
        for (int run = 1; run <= 60; run++) {
            j.run = run;
            atomic_store(&j.finished, 0);
            ram_team_run(t, join_fn, &j);
            ck_assert_int_eq(load(&j.finished), nt);
            for (int k = 0; k < nt; k++)
                ck_assert_msg(j.slot[k] == run, "nt %d, run %d: index %d's slot from run %d", nt,
                              run, k, j.slot[k]);
        }
        ram_team_free(t);
    }
}
END_TEST

/* ---- barriers order the phases ---- */

enum { PHASES = 10 };

typedef struct {
    ram_team *team;
    int iter;
    /* Phase p writes buf[p % 2] and reads, after the barrier, what every
     * thread wrote in phase p - 1: plain data, ordered by the barriers. */
    int buf[2][MAX_NT];
    atomic_int wrong;
} phased;

static int phase_value(int iter, int p, int k) {
    return (iter * PHASES + p) * MAX_NT + k;
}

static void phase_fn(void *arg, int k, int nt) {
    phased *j = arg;
    int wrong = 0;
    for (int p = 0; p <= PHASES; p++) {
        if (p > 0)
            for (int i = 0; i < nt; i++)
                wrong += j->buf[(p - 1) % 2][i] != phase_value(j->iter, p - 1, i);
        if (p == PHASES) break;
        /* One thread a phase is late, a different one each phase, so that a
         * barrier that let the others through would let them read early. */
        if ((p + j->iter) % nt == k) dawdle(2);
        j->buf[p % 2][k] = phase_value(j->iter, p, k);
        ram_team_barrier(j->team);
    }
    if (wrong) atomic_fetch_add(&j->wrong, wrong);
}

START_TEST(test_barriers_order_phases) {
    const int nts[] = {2, 3, 4, 8};
    for (size_t c = 0; c < sizeof nts / sizeof *nts; c++) {
        const int nt = nts[c];
        phased j;
        memset(&j, 0, sizeof j);
        j.team = make_team(nt);
        for (j.iter = 0; j.iter < 40; j.iter++) {
            ram_team_run(j.team, phase_fn, &j);
            ck_assert_msg(load(&j.wrong) == 0,
                          "nt %d, run %d: %d values read before their phase ended", nt, j.iter,
                          load(&j.wrong));
            /* The last phase's writes, seen by the caller after the run. */
            for (int k = 0; k < nt; k++)
                ck_assert_int_eq(j.buf[(PHASES - 1) % 2][k], phase_value(j.iter, PHASES - 1, k));
        }
        ram_team_free(j.team);
    }
}
END_TEST

/* ---- many jobs, and workers woken from sleep ---- */

typedef struct {
    atomic_long total;
    atomic_int calls[MAX_NT];
} tally;

/* Two jobs that differ, so that a worker running the previous job's
 * function or argument shows. */
static void add_one(void *arg, int k, int nt) {
    (void)nt;
    tally *t = arg;
    atomic_fetch_add(&t->total, 1);
    atomic_fetch_add(&t->calls[k], 1);
}
static void add_thousand(void *arg, int k, int nt) {
    (void)nt;
    tally *t = arg;
    atomic_fetch_add(&t->total, 1000);
    atomic_fetch_add(&t->calls[k], 1);
}

/* Runs `runs` jobs on a team of nt, alternating the function and the
 * argument, pausing now and then: every 997th run after a sleep well past the
 * workers' idle spin (IDLE_SPIN_NS, 100 us), so they have gone to sleep and
 * must be woken; every 101st after a sleep near it, and every 16th after a
 * busy wait sweeping 95 .. 115 us, so that some jobs are posted just as a
 * worker goes to sleep.  A lost wake-up hangs the run (and the test times
 * out). */
static void many_runs(int nt, int runs) {
    ram_team *team = make_team(nt);
    tally a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    long want_a = 0, want_b = 0;
    for (int r = 0; r < runs; r++) {
        if (r % 997 == 500)
            sleep_us(1500);
        else if (r % 101 == 50)
            sleep_us(60 + r % 7 * 20); /* 60 .. 180 us */
        else if (r % 16 == 7)
            spin_ns(95000 + r / 16 % 200 * 100);
        if (r % 2) {
            ram_team_run(team, add_thousand, &b);
            want_b += 1000L * nt;
        } else {
            ram_team_run(team, add_one, &a);
            want_a += nt;
        }
        ck_assert_msg(load_long(&a.total) == want_a && load_long(&b.total) == want_b,
                      "nt %d, run %d: totals %ld and %ld, want %ld and %ld", nt, r,
                      load_long(&a.total), load_long(&b.total), want_a, want_b);
    }
    for (int k = 0; k < nt; k++) {
        ck_assert_int_eq(load(&a.calls[k]), (runs + 1) / 2);
        ck_assert_int_eq(load(&b.calls[k]), runs / 2);
    }
    ram_team_free(team);
}

START_TEST(test_many_runs_and_wakeups) {
    many_runs(2, 20000);
    many_runs(4, 2000);
}
END_TEST

/* ---- no team ---- */

typedef struct {
    int calls, k, nt, past_barrier;
    pthread_t self;
} solo;

static void solo_fn(void *arg, int k, int nt) {
    solo *s = arg;
    s->calls++;
    s->k = k;
    s->nt = nt;
    s->self = pthread_self();
    ram_team_barrier(NULL); /* nothing to wait for */
    s->past_barrier = 1;
}

START_TEST(test_null_team) {
    ck_assert_int_eq(ram_team_size(NULL), 1);
    solo s;
    memset(&s, 0, sizeof s);
    ram_team_run(NULL, solo_fn, &s);
    ck_assert_int_eq(s.calls, 1);
    ck_assert_int_eq(s.k, 0);
    ck_assert_int_eq(s.nt, 1);
    ck_assert(pthread_equal(s.self, pthread_self()));
    ck_assert_int_eq(s.past_barrier, 1);
    ram_team_barrier(NULL);
    ram_team_free(NULL);
}
END_TEST

/* ---- teams come and go ---- */

START_TEST(test_create_free_many) {
    /* Freed at once (workers maybe not yet waiting), after a job (workers
     * spinning), after a job and a sleep (workers asleep), after a job with
     * barriers.  ASan's leak check covers the threads and the team. */
    for (int i = 0; i < 120; i++) {
        const int nt = 2 + i % (MAX_NT - 1);
        ram_team *t = make_team(nt);
        switch (i % 4) {
        case 0:
            break;
        case 1:
        case 2: {
            census c;
            memset(&c, 0, sizeof c);
            c.nt = nt;
            ram_team_run(t, census_fn, &c);
            for (int k = 0; k < nt; k++)
                ck_assert_int_eq(load(&c.calls[k]), 1);
            if (i % 4 == 2) sleep_us(300);
            break;
        }
        case 3: {
            phased j;
            memset(&j, 0, sizeof j);
            j.team = t;
            ram_team_run(t, phase_fn, &j);
            ck_assert_int_eq(load(&j.wrong), 0);
            break;
        }
        }
        ram_team_free(t);
    }
}
END_TEST

/* ---- the threaded state's choice for small calls (split_choice.c) ---- */

/* A clock for the simulations below: a split call whose worker has waited
 * longer than `spin` since the last split call (it has gone to sleep,
 * team.c) costs `wake` more. */
typedef struct waking {
    double now, last_split_end, spin, wake;
} waking;

/* n calls on a simulated clock, as the state makes them (lib/state.c): each
 * way takes its time per image (plus w's wake-ups, if w is not NULL), and
 * only the calls the choice asks to time are timed; counts the calls each
 * way went (and in timed[], the timed ones, if not NULL) and returns the
 * time they took. */
static double simulate_clock(ram_split_choice *c, waking *w, long n, double alone, double split,
                             long ways[2], long timed[2]) {
    double total = 0;
    for (long i = 0; i < n; i++) {
        const bool s = ram_split_choice_next(c);
        double t = s ? split : alone;
        if (w && s && w->now - w->last_split_end > w->spin) t += w->wake;
        if (ram_split_choice_timed(c, s)) {
            ram_split_choice_record(c, s, t);
            if (timed) timed[s]++;
        } else {
            ram_split_choice_count(c);
        }
        ways[s]++;
        total += t;
        if (w) {
            w->now += t;
            if (s) w->last_split_end = w->now;
        }
    }
    return total;
}

static double simulate_timed(ram_split_choice *c, long n, double alone, double split, long ways[2],
                             long timed[2]) {
    return simulate_clock(c, NULL, n, alone, split, ways, timed);
}

static double simulate(ram_split_choice *c, long n, double alone, double split, long ways[2]) {
    return simulate_clock(c, NULL, n, alone, split, ways, NULL);
}

static double simulate_waking(ram_split_choice *c, waking *w, long n, double alone, double split,
                              long ways[2]) {
    return simulate_clock(c, w, n, alone, split, ways, NULL);
}

START_TEST(test_choice_keeps_the_faster_way) {
    /* split faster by more than the margin, by less, and slower */
    const double splits[3] = {6e-6, 9.7e-6, 12e-6};
    const bool want[3] = {true, false, false};
    for (int k = 0; k < 3; k++) {
        ram_split_choice c = {0};
        long ways[2] = {0, 0};
        /* the first trials, in turns of two calls, the first of each not
         * timed */
        simulate(&c, 4 * RAM_CHOOSE_TRIALS, 10e-6, splits[k], ways);
        ck_assert_int_eq(ways[0], 2 * RAM_CHOOSE_TRIALS);
        ck_assert_int_eq(ways[1], 2 * RAM_CHOOSE_TRIALS);
        ck_assert(c.split == want[k]);
        ways[0] = ways[1] = 0;
        simulate(&c, 100000, 10e-6, splits[k], ways);
        ck_assert(c.split == want[k]);
        /* the other way is still tried, rarely: two calls (one to warm,
         * one timed) in 128 x the ratio while split, in 1024 x the ratio
         * while alone (a trial of the split is what two threads lose to
         * one) */
        const long other = ways[!want[k]], every = want[k] ? 128 : 1024;
        ck_assert_int_gt(other, 2 * 100000 / (2 * every * 2));
        ck_assert_int_lt(other, 2 * 100000 / every + 1);
    }
}
END_TEST

START_TEST(test_choice_follows_the_load) {
    ram_split_choice c = {0};
    long ways[2] = {0, 0};
    simulate(&c, 2000, 10e-6, 6e-6, ways);
    ck_assert(c.split);
    /* one preempted split call does not change it */
    ram_split_choice_record(&c, true, 2e-3);
    ck_assert(c.split);
    simulate(&c, 100, 10e-6, 6e-6, ways);
    ck_assert(c.split);
    /* another program takes the worker's core: split calls stall for
     * milliseconds; the choice leaves the split within a few of them */
    ways[0] = ways[1] = 0;
    simulate(&c, 5, 10e-6, 2e-3, ways);
    ck_assert(!c.split);
    /* and its trials of the split then cost about 2/1024 of the time */
    ways[0] = ways[1] = 0;
    const double loaded = simulate(&c, 1000000, 10e-6, 2e-3, ways);
    ck_assert_int_ge(ways[1], 2);
    ck_assert_double_lt(ways[1] * 2e-3, loaded / 250);
    /* the load goes: the split comes back once its trials say so */
    ways[0] = ways[1] = 0;
    for (long i = 0; i < 3000000 && !c.split; i++)
        simulate(&c, 1, 10e-6, 6e-6, ways);
    ck_assert(c.split);
}
END_TEST

START_TEST(test_choice_times_few_calls_alone) {
    /* alone by choice, one call in RAM_TIME_ALONE_EVERY is timed (the clock
     * costs more than 0.5 % of a small call), the trials of the split every
     * time; split by choice, every call */
    ram_split_choice c = {0};
    long ways[2] = {0, 0}, timed[2] = {0, 0};
    simulate(&c, 4 * RAM_CHOOSE_TRIALS, 10e-6, 12e-6, ways);
    ck_assert(!c.split);
    ways[0] = ways[1] = 0;
    simulate_timed(&c, 100000, 10e-6, 12e-6, ways, timed);
    ck_assert(!c.split);
    ck_assert_int_eq(timed[1], ways[1]);
    ck_assert_int_ge(ways[1], 100000 / (1024 * 2 * 2));
    ck_assert_int_le(timed[0], ways[0] / RAM_TIME_ALONE_EVERY + ways[1] + 1);
    ck_assert_int_ge(timed[0], ways[0] / (2 * RAM_TIME_ALONE_EVERY));

    ram_split_choice d = {0};
    ways[0] = ways[1] = timed[0] = timed[1] = 0;
    simulate_timed(&d, 100000, 10e-6, 6e-6, ways, timed);
    ck_assert(d.split);
    ck_assert_int_eq(timed[1], ways[1]);
    ck_assert_int_eq(timed[0], ways[0]); /* the trials alone */
}
END_TEST

START_TEST(test_choice_outgrows_cold_trials) {
    /* the first split calls are slow (cold caches, a worker waking), the
     * later ones fast: the first choice is to stay alone, and the trials
     * bring the split in within some ten thousand calls (a tenth of a
     * second at this size) */
    ram_split_choice c = {0};
    long ways[2] = {0, 0};
    simulate(&c, 4 * RAM_CHOOSE_TRIALS, 10e-6, 30e-6, ways);
    ck_assert(!c.split);
    long calls = 0;
    while (!c.split && calls < 50000) {
        simulate(&c, 1, 10e-6, 6e-6, ways);
        calls++;
    }
    ck_assert(c.split);
}
END_TEST

START_TEST(test_choice_warms_before_timing) {
    /* The first trials find the split slow (another program had the
     * worker's core), so the choice is to stay alone; then the split
     * becomes the faster way, call after call.  But the worker sleeps
     * between trials, and waking it costs half a millisecond, 50 calls'
     * worth: a trial timed cold could never win.  Timed on its second
     * call, the split is chosen, and stays. */
    ram_split_choice c = {0};
    waking w = {.now = 0, .last_split_end = -1, .spin = 100e-6, .wake = 500e-6};
    long ways[2] = {0, 0};
    const double alone = 10e-6, split = 6e-6;
    simulate_waking(&c, &w, 4 * RAM_CHOOSE_TRIALS, alone, 30e-6, ways);
    ck_assert(!c.split);
    long calls = 0;
    while (!c.split && calls < 50000)
        calls += 1, simulate_waking(&c, &w, 1, alone, split, ways);
    ck_assert(c.split);
    ways[0] = ways[1] = 0;
    const double total = simulate_waking(&c, &w, 100000, alone, split, ways);
    ck_assert(c.split);
    ck_assert_double_lt(total, 100000 * split * 1.02);
    /* the split slower call after call: alone, its trials costing little
     * beside the calls, wake-ups included */
    ram_split_choice d = {0};
    waking v = {.now = 0, .last_split_end = -1, .spin = 100e-6, .wake = 500e-6};
    ways[0] = ways[1] = 0;
    const double slow = simulate_waking(&d, &v, 100000, alone, 12e-6, ways);
    ck_assert(!d.split);
    ck_assert_double_lt(slow, 100000 * alone * 1.10);
}
END_TEST

static Suite *team_suite(void) {
    Suite *s = suite_create("team");
    TCase *run = tcase_create("run");
    tcase_add_test(run, test_each_index_once);
    tcase_add_test(run, test_run_waits_for_all);
    tcase_add_test(run, test_barriers_order_phases);
    tcase_add_test(run, test_many_runs_and_wakeups);
    tcase_add_test(run, test_null_team);
    tcase_add_test(run, test_create_free_many);
    suite_add_tcase(s, run);
    TCase *choice = tcase_create("split choice");
    tcase_add_test(choice, test_choice_keeps_the_faster_way);
    tcase_add_test(choice, test_choice_follows_the_load);
    tcase_add_test(choice, test_choice_times_few_calls_alone);
    tcase_add_test(choice, test_choice_outgrows_cold_trials);
    tcase_add_test(choice, test_choice_warms_before_timing);
    suite_add_tcase(s, choice);
    return s;
}

int main(void) {
    return run_suite(team_suite());
}
