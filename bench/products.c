/* ram-bench-products: libram's own training products (lib/gemm.c) beside
 * sgemm, one thread, at the model's shapes, in float (what a trainer runs
 * on the avx512 kernel set) or in bfloat16 (RAM_PRODUCTS_BF16).
 *
 * For each shape (M rows of a worker's slice, a layer of N outputs and K
 * inputs) and each of a linear layer's three products, Y = X W^T,
 * dX = dY W and dW += dY^T X, it prints sgemm's GFLOP/s (2 M N K per
 * product), the kernel's with the weight's packing kept (as a training
 * slice has it after its first product with that weight) and with the
 * weight packed afresh for every product, the ratio of sgemm's time to the
 * kept-packing time, and the largest error of the kernel's result against
 * a double-precision product of the float operands, relative to the mean
 * magnitude of that product (for bfloat16, both operands rounded to 8 bits
 * of significand).  dW has no weight to pack: its two columns are the same.
 *
 * Runs where the library runs the format's products and says so elsewhere.
 * Not installed.
 *
 * Usage: ram-bench-products [float|bf16 (float)] [reps (2000)] */
#define _GNU_SOURCE
#include "internal.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *uniform(size_t n, float scale) {
    float *a = malloc(sizeof(float) * n);
    if (!a) {
        fprintf(stderr, "ram-bench-products: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (rand() / (float)RAND_MAX - 0.5f) * scale;
    return a;
}

enum { FORWARD, INPUT_GRAD, WEIGHT_GRAD };
static const char *const product_name[] = {"Y = X W^T", "dX = dY W", "dW += dY^T X"};

/* The product by sgemm (own NULL) or the kernel, which first forgets W's
 * packing (and so packs it afresh) when repack. */
static void run(int which, ram_gemm *own, bool repack, int M, int N, int K, const float *X,
                const float *W, const float *dY, float *out) {
    if (own && repack) ram_gemm_begin(own, true);
    switch (which) {
    case FORWARD: /* X: M x K, W: N x K, Y: M x N */
        if (!own || !ram_gemm_forward(own, X, K, M, K, W, N, out, N, false))
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, X, K, W, K, 0, out, N);
        break;
    case INPUT_GRAD: /* dY: M x N, W: N x K, dX: M x K */
        if (!own || !ram_gemm_backward_dx(own, dY, N, M, K, N, W, out, K, false))
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1, dY, N, W, K, 0, out,
                        K);
        break;
    default: /* dY: M x N, X: M x K, dW: N x K */
        if (!own || !ram_gemm_backward_dw(own, dY, N, X, K, M, K, N, out))
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1, dY, N, X, K, 1, out,
                        K);
    }
}

/* The largest |got - exact| over the mean |exact|. */
static double error_of(int which, int M, int N, int K, const float *X, const float *W,
                       const float *dY, const float *got) {
    const int rows = which == WEIGHT_GRAD ? N : M, cols = which == FORWARD ? N : K;
    const int sum = which == FORWARD ? K : which == INPUT_GRAD ? N : M;
    double worst = 0, mean = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double exact = 0;
            for (int k = 0; k < sum; k++)
                exact += which == FORWARD ? (double)X[(size_t)i * K + k] * W[(size_t)j * K + k]
                         : which == INPUT_GRAD
                             ? (double)dY[(size_t)i * N + k] * W[(size_t)k * K + j]
                             : (double)dY[(size_t)k * N + i] * X[(size_t)k * K + j];
            worst = fmax(worst, fabs(got[(size_t)i * cols + j] - exact));
            mean += fabs(exact);
        }
    return worst / (mean / ((double)rows * cols));
}

static void measure(bool bf16, int M, int N, int K, int reps) {
    srand(1); /* activations in [-0.5, 0.5], weights as a model's first ones */
    float *X = uniform((size_t)M * K, 1), *W = uniform((size_t)N * K, 0.2f);
    float *dY = uniform((size_t)M * N, 0.02f);
    const size_t most = (size_t)(M > N ? M : N) * (size_t)(N > K ? N : K);
    float *out = uniform(most, 0), *out_own = uniform(most, 0);
    const ram_tensor_info layer = {0, N, K};
    ram_gemm *own;
    if (ram_gemm_create(&layer, 1, M, bf16, &own)) {
        fprintf(stderr, "ram-bench-products: %s\n", ram_last_error());
        exit(1);
    }
    for (int which = FORWARD; which <= WEIGHT_GRAD; which++) {
        double sgemm = 1e9, kept = 1e9, fresh = 1e9;
        for (int r = 0; r < reps; r++) { /* best of reps, the three timed in turn */
            double t0 = now();
            run(which, NULL, false, M, N, K, X, W, dY, out);
            double t1 = now();
            run(which, own, true, M, N, K, X, W, dY, out_own);
            double t2 = now();
            run(which, own, false, M, N, K, X, W, dY, out_own); /* the packing kept */
            double t3 = now();
            sgemm = fmin(sgemm, t1 - t0), fresh = fmin(fresh, t2 - t1), kept = fmin(kept, t3 - t2);
        }
        if (which == WEIGHT_GRAD) { /* accumulated reps times: one product from zeros */
            memset(out_own, 0, sizeof(float) * (size_t)N * K);
            run(which, own, false, M, N, K, X, W, dY, out_own);
        }
        const double g = 2.0 * M * N * K / 1e9;
        printf("%4d x %4d x %4d  %-13s %6.1f  %6.1f  %6.1f  %5.2fx  %.1e\n", M, N, K,
               product_name[which], g / sgemm, g / kept, g / fresh, sgemm / kept,
               error_of(which, M, N, K, X, W, dY, out_own));
    }
    ram_gemm_free(own);
    free(X), free(W), free(dY), free(out), free(out_own);
}

int main(int argc, char **argv) {
    const bool bf16 = argc > 1 && !strcmp(argv[1], "bf16");
    const int reps = argc > 2 ? atoi(argv[2]) : 2000;
    if (argc > 3 || (argc > 1 && !bf16 && strcmp(argv[1], "float")) || reps < 1) {
        fprintf(stderr, "usage: ram-bench-products [float|bf16 (float)] [reps >= 1 (2000)]\n");
        return 2;
    }
    ram_set_blas_threads(1);
    if (bf16 ? !ram_bf16_products_supported() : !ram_gemm_float_supported()) {
        printf("ram-bench-products: no %s products of libram's own here (kernels %s; they need "
               "%sthe avx512 set): nothing to measure\n",
               bf16 ? "bfloat16" : "float", ram_kernels_name(), bf16 ? "AVX512_BF16 and " : "");
        return 0;
    }
    const char *name = bf16 ? "bf16" : "float";
    printf("one thread, GFLOP/s (best of %d); M: a worker's rows, N: outputs, K: inputs\n", reps);
    printf("   M x    N x    K  product        sgemm  %6s  +pack W  ratio  max error / mean\n",
           name);
    static const int shapes[][3] = {
        {32, 256, 256}, {64, 256, 256}, {128, 256, 256}, {64, 1024, 256}, {64, 256, 432}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        measure(bf16, shapes[s][0], shapes[s][1], shapes[s][2], reps);
    printf("%s: the weight's packing kept, as within a training slice; +pack W: packed "
           "afresh for each product; ratio: sgemm's time over %s's\n",
           name, name);
    return 0;
}
