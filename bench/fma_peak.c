/* FMA peak per vector width (fma_peak.h).  Each thread runs twelve
 * independent FMA chains in registers: enough to cover an FMA's latency on
 * two pipes (4 cycles x 2 = 8 in flight on the processors measured here,
 * with a margin), so that the loop is bound by the FMA pipes alone; no
 * memory is touched.  x86-64 only (target attributes, chosen by
 * __builtin_cpu_supports); elsewhere every width reads "not measured". */
#define _GNU_SOURCE
#include "fma_peak.h"

#include "clock.h"

#include <pthread.h>

static const char *const names[FMA_WIDTHS] = {"128-bit", "256-bit", "512-bit"};
static const int lanes[FMA_WIDTHS] = {4, 8, 16};

const char *fma_width_name(int w) {
    return w >= 0 && w < FMA_WIDTHS ? names[w] : "?";
}

int fma_width_lanes(int w) {
    return w >= 0 && w < FMA_WIDTHS ? lanes[w] : 0;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

int fma_width_supported(int w) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx")) return 0;
    return w < 2 || (w == 2 && __builtin_cpu_supports("avx512f"));
}

/* The twelve chains of one width; `iters` rounds of twelve FMAs.  The
 * result is summed and returned so that the compiler keeps every chain. */
#define CHAINS(T, FMA, ADD, SET1, CVT)                                                             \
    T a0 = SET1(1.0f), a1 = SET1(1.1f), a2 = SET1(1.2f), a3 = SET1(1.3f), a4 = SET1(1.4f),         \
      a5 = SET1(1.5f), a6 = SET1(1.6f), a7 = SET1(1.7f), a8 = SET1(1.8f), a9 = SET1(1.9f),         \
      a10 = SET1(2.0f), a11 = SET1(2.1f);                                                          \
    const T m = SET1(0.999999f), c = SET1(1e-7f);                                                  \
    for (long i = 0; i < iters; i++) {                                                             \
        a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);            \
        a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);            \
        a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);        \
    }                                                                                              \
    const T s = ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))),             \
                    ADD(ADD(a8, a9), ADD(a10, a11)));                                              \
    return CVT(s)

__attribute__((target("avx,fma"), noinline)) static float chains128(long iters) {
    CHAINS(__m128, _mm_fmadd_ps, _mm_add_ps, _mm_set1_ps, _mm_cvtss_f32);
}

__attribute__((target("avx,fma"), noinline)) static float chains256(long iters) {
    CHAINS(__m256, _mm256_fmadd_ps, _mm256_add_ps, _mm256_set1_ps, _mm256_cvtss_f32);
}

__attribute__((target("avx512f"), noinline)) static float chains512(long iters) {
    CHAINS(__m512, _mm512_fmadd_ps, _mm512_add_ps, _mm512_set1_ps, _mm512_cvtss_f32);
}

static float run_chains(int w, long iters) {
    return w == 0 ? chains128(iters) : w == 1 ? chains256(iters) : chains512(iters);
}
#else
int fma_width_supported(int w) {
    (void)w;
    return 0;
}

static float run_chains(int w, long iters) {
    (void)w, (void)iters;
    return 0;
}
#endif

typedef struct job {
    int w;
    long iters;
    double seconds;
    volatile float sink;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    const double t0 = clock_seconds();
    j->sink = run_chains(j->w, j->iters);
    j->seconds = clock_seconds() - t0;
    return NULL;
}

/* One timed run of `iters` rounds on each of `threads` threads; the
 * slowest thread's time, as the rounds of all of them were the work. */
static double timed(int w, int threads, long iters) {
    job jobs[64];
    pthread_t tid[64];
    int started[64] = {0};
    if (threads > 64) threads = 64;
    for (int k = 0; k < threads; k++) {
        jobs[k] = (job){.w = w, .iters = iters};
        if (k > 0) started[k] = !pthread_create(&tid[k], NULL, run_job, &jobs[k]);
    }
    run_job(&jobs[0]);
    double slowest = jobs[0].seconds;
    for (int k = 1; k < threads; k++) {
        if (started[k])
            pthread_join(tid[k], NULL);
        else
            run_job(&jobs[k]); /* no thread could start: run it here, after the others */
        if (jobs[k].seconds > slowest) slowest = jobs[k].seconds;
    }
    return slowest;
}

double fma_peak_gflops(int w, int threads, int reps, double seconds) {
    if (!fma_width_supported(w) || threads < 1) return 0;
    long iters = 1 << 16;
    while (timed(w, 1, iters) < seconds / 4 && iters < (1L << 40))
        iters *= 2; /* about `seconds` a run */
    iters *= 4;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t = timed(w, threads, iters);
        const double g = t > 0 ? 2.0 * 12 * lanes[w] * (double)iters * threads / t * 1e-9 : 0;
        if (g > best) best = g;
    }
    return best;
}
