/* ram-bench-bf16: what bfloat16 products could give the training GEMMs.
 *
 * Training spends most of a step in cblas_sgemm at the model's shapes
 * (batch x 256 x 256 and the like).  On a CPU with AVX512_BF16, one
 * VDPBF16PS does 32 multiply-adds of bfloat16 pairs into 16 float sums, twice
 * the work of a 512-bit FMA.  This program times a small kernel of that kind
 * against the BLAS's sgemm on the forward product of a layer, C = X W^T
 * (X: M x K activations, W: N x K weights, row-major, as the library stores
 * them), one thread:
 *
 *   - the kernel alone, on X and W already rounded to bfloat16 (W packed in
 *     16-column blocks of k-pairs, the layout VDPBF16PS reads);
 *   - with X's rounding, which a training step would do once per product;
 *   - with W's rounding and packing too, which a step would do once per
 *     weight update and share between its products;
 *
 * and prints each as GFLOP/s (2 M N K per product) beside sgemm's, with the
 * largest error of the bfloat16 result against a double-precision product,
 * relative to the mean |C|.  Accuracy in training (float master weights,
 * float accumulation, bfloat16 inputs) is not measured here: a training run
 * must show that.  Not used by the library.
 *
 * x86-64 only; the kernel needs AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX
 * bit 5) and says so where the CPU lacks it.
 *
 * Usage: ram-bench-bf16 [reps (2000)]   (one BLAS thread) */
#define _GNU_SOURCE
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#define BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* AVX512_BF16 and AVX-512F, with the OS saving the ZMM state (XCR0 bits 5-7
 * and 1-2). */
static int have_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6) != 0xe6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 16))) return 0; /* AVX512F */
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;
}

/* X (M x K floats) to bfloat16, rounded to nearest even; M K % 32 == 0. */
BF16 static void round_x(const float *X, long n, uint16_t *Xb) {
    for (long i = 0; i < n; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(X + i + 16), _mm512_loadu_ps(X + i));
        _mm512_storeu_si512((void *)(Xb + i), (__m512i)v);
    }
}

/* W (N x K floats; N % 16 == 0, K % 16 == 0) to Wp[N / 16][K / 2][16][2]:
 * for each block of 16 rows of W (16 output columns of C) and each pair of
 * inputs (k, k + 1), the 16 rows' two values side by side. */
BF16 static void pack_w(const float *W, int N, int K, uint16_t *Wp) {
    for (int nb = 0; nb < N / 16; nb++)
        for (int kk = 0; kk < K / 2; kk += 8) /* 8 pairs: 16 values of a row */
            for (int j = 0; j < 16; j++) {
                uint32_t pairs[8];
                __m256bh h =
                    _mm512_cvtneps_pbh(_mm512_loadu_ps(W + (long)(nb * 16 + j) * K + 2 * kk));
                _mm256_storeu_si256((__m256i *)pairs, (__m256i)h);
                uint32_t *dst = (uint32_t *)(Wp + ((long)nb * (K / 2) + kk) * 32);
                for (int p = 0; p < 8; p++)
                    dst[p * 16 + j] = pairs[p];
            }
}

/* C = Xb Wp^T, tiles of 8 rows x 32 columns: 16 accumulators, two W loads
 * and eight broadcast X pairs for sixteen VDPBF16PS per pair of inputs.
 * M % 8 == 0, N % 32 == 0. */
BF16 static void product(const uint16_t *Xb, const uint16_t *Wp, float *C, int M, int N, int K) {
    const int pairs = K / 2;
    for (int nb = 0; nb < N / 16; nb += 2)
        for (int m = 0; m < M; m += 8) {
            __m512 c[8][2];
            for (int r = 0; r < 8; r++)
                c[r][0] = c[r][1] = _mm512_setzero_ps();
            const uint32_t *x = (const uint32_t *)(Xb + (long)m * K);
            const __m512i *w0 = (const __m512i *)(Wp + (long)nb * pairs * 32);
            const __m512i *w1 = (const __m512i *)(Wp + (long)(nb + 1) * pairs * 32);
            for (int kk = 0; kk < pairs; kk++) {
                const __m512bh a = (__m512bh)_mm512_load_si512(w0 + kk);
                const __m512bh b = (__m512bh)_mm512_load_si512(w1 + kk);
                /* written out: as a loop over r, gcc kept c[][] in memory */
#define ROW(r)                                                                                     \
    do {                                                                                           \
        const __m512bh xr = (__m512bh)_mm512_set1_epi32((int)x[(long)(r)*pairs + kk]);             \
        c[r][0] = _mm512_dpbf16_ps(c[r][0], xr, a);                                                \
        c[r][1] = _mm512_dpbf16_ps(c[r][1], xr, b);                                                \
    } while (0)
                ROW(0);
                ROW(1);
                ROW(2);
                ROW(3);
                ROW(4);
                ROW(5);
                ROW(6);
                ROW(7);
#undef ROW
            }
            for (int r = 0; r < 8; r++) {
                _mm512_storeu_ps(C + (long)(m + r) * N + nb * 16, c[r][0]);
                _mm512_storeu_ps(C + (long)(m + r) * N + nb * 16 + 16, c[r][1]);
            }
        }
}

static void measure(int M, int N, int K, int reps) {
    float *X = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * N * K);
    float *C = malloc(sizeof(float) * M * N), *Cb = malloc(sizeof(float) * M * N);
    uint16_t *Xb = aligned_alloc(64, sizeof(uint16_t) * M * K);
    uint16_t *Wp = aligned_alloc(64, sizeof(uint16_t) * N * K);
    if (!X || !W || !C || !Cb || !Xb || !Wp) {
        fprintf(stderr, "ram-bench-bf16: out of memory\n");
        exit(1);
    }
    srand(1); /* activations in [-0.5, 0.5], weights as the model's initial ones */
    for (long i = 0; i < (long)M * K; i++)
        X[i] = rand() / (float)RAND_MAX - 0.5f;
    for (long i = 0; i < (long)N * K; i++)
        W[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.2f;
    double sgemm = 1e9, kernel = 1e9, rx = 1e9, pw = 1e9;
    for (int r = 0; r < reps; r++) { /* best of reps, the four timed in turn */
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, X, K, W, K, 0, C, N);
        double t1 = now();
        round_x(X, (long)M * K, Xb);
        double t2 = now();
        pack_w(W, N, K, Wp);
        double t3 = now();
        product(Xb, Wp, Cb, M, N, K);
        double t4 = now();
        sgemm = fmin(sgemm, t1 - t0), rx = fmin(rx, t2 - t1);
        pw = fmin(pw, t3 - t2), kernel = fmin(kernel, t4 - t3);
    }
    double worst = 0, mean = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0;
            for (int k = 0; k < K; k++)
                exact += (double)X[(long)i * K + k] * W[(long)j * K + k];
            worst = fmax(worst, fabs(Cb[(long)i * N + j] - exact));
            mean += fabs(exact);
        }
    mean /= (double)M * N;
    const double g = 2.0 * M * N * K / 1e9;
    printf("%4d x %4d x %4d  %6.1f  %6.1f  %6.1f  %6.1f  %5.2fx  %.1e\n", M, N, K, g / sgemm,
           g / kernel, g / (kernel + rx), g / (kernel + rx + pw), sgemm / (kernel + rx + pw),
           worst / mean);
    free(X), free(W), free(C), free(Cb), free(Xb), free(Wp);
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 2000;
    if (reps < 1) {
        fprintf(stderr, "usage: ram-bench-bf16 [reps >= 1 (2000)]\n");
        return 2;
    }
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1);
#endif
    if (!have_bf16()) {
        printf("ram-bench-bf16: this CPU has no AVX512_BF16: nothing to measure\n");
        return 0;
    }
    printf("C = X W^T, one thread, GFLOP/s (best of %d)\n", reps);
    printf("   M x    N x    K   sgemm   bf16  +round X  +pack W  ratio  max error / mean |C|\n");
    static const int shapes[][3] = {
        {64, 256, 256}, {128, 256, 256}, {256, 256, 256}, {128, 1024, 256}, {128, 256, 1024}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        measure(shapes[s][0], shapes[s][1], shapes[s][2], reps);
    printf("ratio: sgemm's time over the bf16 product's with X rounded and W packed\n");
    return 0;
}
#else
int main(void) {
    (void)now;
    printf("ram-bench-bf16: x86-64 only\n");
    return 0;
}
#endif
