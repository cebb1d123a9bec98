/* clock: the tools' timing and their live progress line. */
#ifndef RAM_TOOLS_CLOCK_H
#define RAM_TOOLS_CLOCK_H

#include <stddef.h>

/* Seconds on the monotonic clock (0 if it cannot be read). */
double clock_seconds(void);

/* A duration as "1h02m" or "3m04s" (negative and non-finite as 0). */
void clock_format(double seconds, char *buf, size_t len);

/* A progress line on stderr: rewritten in place (\r) on a terminal at most
 * twice a second, else one line every 30 seconds. */
typedef struct progress {
    int tty;
    double last; /* when it was last printed */
} progress;

/* quiet: never print.  Starts the interval at `now`. */
void progress_start(progress *p, int quiet, double now);
/* Whether a line is due at `now`; if so, its time is taken as printed. */
int progress_due(progress *p, double now);
/* The line's start ("\r" or "") and end ("   " or "\n"). */
const char *progress_lead(const progress *p);
const char *progress_tail(const progress *p);

#endif
