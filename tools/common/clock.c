#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double clock_seconds(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void clock_format(double s, char *buf, size_t len) {
    if (s < 0 || !isfinite(s)) s = 0;
    int h = (int)(s / 3600), m = (int)(fmod(s, 3600) / 60), sec = (int)fmod(s, 60);
    if (h)
        snprintf(buf, len, "%dh%02dm", h, m);
    else
        snprintf(buf, len, "%dm%02ds", m, sec);
}

void progress_start(progress *p, int quiet, double now) {
    p->tty = quiet ? -1 : isatty(2);
    p->last = now;
}

int progress_due(progress *p, double now) {
    if (p->tty < 0 || now - p->last <= (p->tty ? 0.5 : 30.0)) return 0;
    p->last = now;
    return 1;
}

const char *progress_lead(const progress *p) {
    return p->tty > 0 ? "\r" : "";
}

const char *progress_tail(const progress *p) {
    return p->tty > 0 ? "   " : "\n";
}
