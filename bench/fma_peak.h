/* The floating-point peak of this processor: fused multiply-adds on
 * independent registers, for each vector width it can run, so that
 * ram-bench can say what fraction of the machine a figure is.  The only
 * processor-specific code of the benchmarks. */
#ifndef RAM_BENCH_FMA_PEAK_H
#define RAM_BENCH_FMA_PEAK_H

#define FMA_WIDTHS 3 /* 128, 256 and 512 bits */

/* The widths' names ("128-bit", ...) and lanes of floats (4, 8, 16). */
const char *fma_width_name(int w);
int fma_width_lanes(int w);

/* Whether this processor (and its system) can run width w's FMAs. */
int fma_width_supported(int w);

/* GFLOP/s (2 per lane per FMA) of width w's FMAs on `threads` threads at
 * once (each its own loop), the best of `reps` runs of about `seconds`;
 * 0 when the width is not supported. */
double fma_peak_gflops(int w, int threads, int reps, double seconds);

#endif
