/* How a threaded inference state runs its small calls: every layer's rows
 * split between its threads, or the caller's thread alone, chosen by
 * timing both ways as the calls come.
 *
 * Whether the split pays is measured, not assumed: its barriers cost a few
 * microseconds a glimpse where the threads' cores are shared (a VM's
 * vCPUs), which can exceed the work they divide (the paper's MNIST model at
 * batch 1 took 29 us with two threads against 21 us alone on a 2-vCPU
 * machine), and a split whose worker is not running (another program has
 * its core) waits milliseconds.  So each way's time per image is kept for
 * its last RAM_CHOOSE_TRIALS calls.  The first calls alternate between the
 * two ways, two calls at a turn, until each way has RAM_CHOOSE_TRIALS
 * timed.  From then on one call goes the other
 * way after a number of calls times the ratio of the two ways' medians, so
 * that both records stay current while the trials cost a bounded share of
 * the time however slow the other way is: EXPLORE_ALONE calls while the
 * split is chosen, since a split that has come to lose must be left soon;
 * EXPLORE_SPLIT, eight times as many, while the caller runs alone, since
 * all such a trial can find is a gain, and what it costs is what two
 * threads lose to one (at 128 the trials made two threads 0.4-0.9 % slower
 * than one on the trained MNIST model, measured paired).
 *
 * Every split call is timed, since a stalled one must be seen at once; of
 * the calls alone the choice keeps, one in RAM_TIME_ALONE_EVERY: two clock
 * readings (about 35 ns each on a VM) are 0.6 % of that model's 11 us.
 *
 * The split is chosen while its median is below SPLIT_GAIN times the median
 * alone: the median, not the fastest call, because a split's calls vary
 * more (one preempted vCPU stalls every barrier), so that its best call
 * flatters it; and a margin, because a split that gains less is not worth
 * a second core.  The choice is made again after each trial of the other
 * way, and at once when a split call takes SPLIT_STALL times the median
 * alone (the machine's load has changed): neither the first calls, which
 * run on cold caches, nor a load that comes later holds a losing choice for
 * long.  Both ways give the same bits, so the choice changes only the
 * time.
 *
 * A way's first call after a call the other way is made but not timed:
 * it warms that way, and the next call, the same way, is the one timed.
 * A worker that has waited longer than its spin (team.c) has gone to
 * sleep, and between trials alone it always has: on a 2-vCPU VM the
 * split's trials of translated60's model at batch 1 took 184-883 us timed
 * on their first call, the wake-up more than the split, against 57-88 us
 * on their second (the calls alone 42-58 us).  A split that gains call
 * after call could not have won a trial timed cold.  The weights that the
 * other way's rows left in the other core's cache are the same kind of
 * cost, smaller.  So the choice is between the ways as each runs call
 * after call, which is how the chosen way runs. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define EXPLORE_ALONE 128        /* split chosen: calls (x ratio) between trials alone */
#define EXPLORE_SPLIT 1024       /* alone chosen: calls (x ratio) between trials of the split */
#define EXPLORE_MAX   (1u << 20) /* calls between trials, at most */
#define SPLIT_GAIN    0.95
#define SPLIT_STALL   4.0

bool ram_split_choice_next(const ram_split_choice *c) {
    if (c->calls < 2 * RAM_CHOOSE_TRIALS) return c->calls % 2 == 0; /* the first trials */
    return c->split != (c->wait == 0);                              /* a trial when due */
}

bool ram_split_choice_timed(const ram_split_choice *c, bool split) {
    /* while the split is chosen, a call alone is a trial */
    return c->calls < 2 * RAM_CHOOSE_TRIALS || split || c->split ||
           c->wait % RAM_TIME_ALONE_EVERY == 0;
}

static void count_call(ram_split_choice *c) {
    if (c->wait > 0) c->wait--;
}

void ram_split_choice_count(ram_split_choice *c) {
    c->last = false;
    count_call(c);
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of a way's last RAM_CHOOSE_TRIALS times (sorted in a copy). */
static double median_time(const ram_split_choice *c, int way) {
    double v[RAM_CHOOSE_TRIALS];
    memcpy(v, c->time[way], sizeof v);
    qsort(v, RAM_CHOOSE_TRIALS, sizeof *v, compare_doubles);
    return 0.5 * (v[RAM_CHOOSE_TRIALS / 2 - 1] + v[RAM_CHOOSE_TRIALS / 2]);
}

void ram_split_choice_record(ram_split_choice *c, bool split, double seconds) {
    const bool warming = split != c->last;
    c->last = split;
    /* The first call of a trial, or of a turn of the first trials: the
     * next call goes the same way (neither calls nor wait has moved). */
    if (warming) return;
    c->time[split][c->next[split]] = seconds;
    c->next[split] = (c->next[split] + 1) % RAM_CHOOSE_TRIALS;
    if (c->calls < 2 * RAM_CHOOSE_TRIALS) { /* the first trials: chosen after the last */
        if (++c->calls < 2 * RAM_CHOOSE_TRIALS) return;
    } else if (split == c->split && !(split && seconds > c->stall)) {
        count_call(c); /* neither a trial nor a stall */
        return;
    }
    const double alone = median_time(c, 0), both = median_time(c, 1);
    c->split = both < SPLIT_GAIN * alone;
    /* The times alone change only by a call alone, which while the split
     * is chosen is a trial, and a trial makes the choice again: so the
     * bound is set here, not sorted out of them at every split call. */
    c->stall = SPLIT_STALL * alone;
    /* the next trial after EXPLORE_* x (the other way's time over the chosen one's) */
    const double ratio = c->split ? alone / both : both / alone;
    const double wait = (c->split ? EXPLORE_ALONE : EXPLORE_SPLIT) * (ratio > 1 ? ratio : 1);
    c->wait = wait < EXPLORE_MAX ? (unsigned)wait : EXPLORE_MAX;
}
