/* ram_state_set_precision(): the half-precision and bfloat16 conversions
 * against their definitions and the hardware's, the 16-bit layer kernels
 * against the float one on the rounded weights (the same bits), and a HALF
 * or BF16 state against a FLOAT state on a model whose weights were rounded
 * by hand: the same probabilities at batch 1 and above, for 1 and 2
 * threads, after the weights change, and a clear error for weights beyond
 * the 16-bit form's range. */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
__attribute__((target("f16c"))) static uint16_t hw_to_half(float f) {
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) static float hw_to_float(uint16_t h) {
    return _cvtsh_ss(h);
}
/* AVX-512 BF16 (cpuid leaf 7, sub-leaf 1, EAX bit 5), where the system
 * also keeps the AVX-512 registers (ram_cpu_x86_avx512()). */
static int has_avx512_bf16(void) {
    unsigned a, b, c, d;
    return ram_cpu_x86_avx512() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}
/* Sixteen floats to bfloat16 by VCVTNEPS2BF16: round to nearest even, but
 * subnormal inputs and outputs flushed to zero. */
__attribute__((target("avx512f,avx512bf16"))) static void hw_to_bf16(const float *f, uint16_t *h) {
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(f));
    memcpy(h, &v, 16 * sizeof *h);
}
#endif

static uint64_t lcg = 99;
static uint32_t rnd32(void) {
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg >> 32);
}
static float urand(void) { /* [-1, 1) */
    return (float)(rnd32() >> 8) / (float)(1 << 23) - 1.0f;
}
#ifdef HAVE_X86 /* the bit views serve only the comparison with F16C */
static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#endif

START_TEST(test_conversions_known_values) {
    ck_assert_uint_eq(ram_float_to_half(0.0f), 0x0000);
    ck_assert_uint_eq(ram_float_to_half(-0.0f), 0x8000);
    ck_assert_uint_eq(ram_float_to_half(1.0f), 0x3c00);
    ck_assert_uint_eq(ram_float_to_half(-2.0f), 0xc000);
    ck_assert_uint_eq(ram_float_to_half(65504.0f), 0x7bff);           /* largest finite */
    ck_assert_uint_eq(ram_float_to_half(65519.0f), 0x7bff);           /* rounds down */
    ck_assert_uint_eq(ram_float_to_half(65520.0f), 0x7c00);           /* rounds to Inf */
    ck_assert_uint_eq(ram_float_to_half(5.9604645e-8f), 0x0001);      /* smallest subnormal */
    ck_assert_uint_eq(ram_float_to_half(2.9802322e-8f), 0x0000);      /* half of it: to even */
    ck_assert_uint_eq(ram_float_to_half(6.1035156e-5f), 0x0400);      /* smallest normal */
    ck_assert_uint_eq(ram_float_to_half(1.0f + 1.0f / 2048), 0x3c00); /* tie: to even */
    ck_assert_uint_eq(ram_float_to_half(1.0f + 3.0f / 2048), 0x3c02); /* tie: to even */
    ck_assert_uint_eq(ram_float_to_half(INFINITY), 0x7c00);
    ck_assert_uint_eq(ram_float_to_half(-INFINITY), 0xfc00);
    ck_assert((ram_float_to_half(NAN) & 0x7fff) > 0x7c00);
    ck_assert(ram_half_to_float(0x3c00) == 1.0f);
    /* 2^-24 as a float object: the literal itself may be evaluated wider
     * (x87), where it is not 2^-24. */
    const float smallest = 5.9604645e-8f;
    ck_assert(ram_half_to_float(0x0001) == smallest);
    ck_assert(ram_half_to_float(0x7bff) == 65504.0f);
    ck_assert(isinf(ram_half_to_float(0xfc00)) && ram_half_to_float(0xfc00) < 0);
    ck_assert(isnan(ram_half_to_float(0x7e00)));
    /* Every finite half survives the round trip. */
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7c00) != 0x7c00)
            ck_assert_uint_eq(ram_float_to_half(ram_half_to_float((uint16_t)h)), h);
}
END_TEST

START_TEST(test_conversions_match_f16c) {
#ifdef HAVE_X86
    if (!has_f16c()) {
        fprintf(stderr, "test_conversions_match_f16c: no F16C here, nothing compared\n");
        return;
    }
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float a = ram_half_to_float((uint16_t)h), b = hw_to_float((uint16_t)h);
        ck_assert_msg(bits(a) == bits(b) || (isnan(a) && isnan(b)), "half %04x: %g, F16C %g", h,
                      (double)a, (double)b);
    }
    /* Floats near every half (both neighbours and the ties between), and random ones. */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const uint32_t f = bits(ram_half_to_float((uint16_t)h));
        for (int d = -2; d <= 2; d++) {
            const float x = from_bits(f + (uint32_t)d);
            if (isnan(x)) continue; /* below 0: NaN payloads are F16C's own business */
            for (int sgn = 0; sgn < 2; sgn++) {
                const float y = sgn ? -x : x;
                ck_assert_msg(ram_float_to_half(y) == hw_to_half(y), "%a: %04x, F16C %04x",
                              (double)y, ram_float_to_half(y), hw_to_half(y));
            }
        }
        const float mid = 0.5f * (ram_half_to_float((uint16_t)h) +
                                  ram_half_to_float((uint16_t)(h + 1))); /* a tie, exact */
        ck_assert_uint_eq(ram_float_to_half(mid), hw_to_half(mid));
    }
    for (int i = 0; i < 200000; i++) {
        const float y = from_bits(rnd32());
        if (isnan(y)) continue;
        ck_assert_msg(ram_float_to_half(y) == hw_to_half(y), "%a", (double)y);
    }
#endif
}
END_TEST

/* bfloat16 by its definition: a float's upper half, the lower 16 bits
 * rounded away to the nearest, ties to even. */
static uint16_t bf16_by_definition(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t up = x >> 16, rest = x & 0xffffu;
    return (uint16_t)(rest > 0x8000u || (rest == 0x8000u && (up & 1u)) ? up + 1 : up);
}

START_TEST(test_bf16_conversions) {
    ck_assert_uint_eq(ram_float_to_bf16(0.0f), 0x0000);
    ck_assert_uint_eq(ram_float_to_bf16(-0.0f), 0x8000);
    ck_assert_uint_eq(ram_float_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(ram_float_to_bf16(-2.0f), 0xc000);
    ck_assert_uint_eq(ram_float_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* tie: to even */
    ck_assert_uint_eq(ram_float_to_bf16(1.0f + 3.0f / 256), 0x3f82); /* tie: to even */
    ck_assert_uint_eq(ram_float_to_bf16(1.0f + 1.0f / 256 + 1.0f / 8388608), 0x3f81);
    ck_assert_uint_eq(ram_float_to_bf16(FLT_MAX), 0x7f80); /* rounds to Inf */
    ck_assert_uint_eq(ram_float_to_bf16(3.38e38f), 0x7f7e);
    ck_assert_uint_eq(ram_float_to_bf16(INFINITY), 0x7f80);
    ck_assert_uint_eq(ram_float_to_bf16(-INFINITY), 0xff80);
    ck_assert_uint_eq(ram_float_to_bf16(1e-45f), 0x0000); /* smallest subnormal: to 0 */
    ck_assert(ram_bf16_to_float(0x3f80) == 1.0f);
    ck_assert(isinf(ram_bf16_to_float(0xff80)) && ram_bf16_to_float(0xff80) < 0);
    /* NaN stays NaN, also one whose payload is in the dropped bits only */
    uint32_t nan_bits = 0x7f800001u;
    float snan;
    memcpy(&snan, &nan_bits, sizeof snan);
    ck_assert(isnan(ram_bf16_to_float(ram_float_to_bf16(snan))));
    ck_assert(isnan(ram_bf16_to_float(ram_float_to_bf16(NAN))));
    /* Every bfloat16 but NaN survives the round trip, and floats near
     * every one of them (both neighbours, the ties) and random ones round
     * as the definition says. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7fffu) > 0x7f80u) continue;
        ck_assert_uint_eq(ram_float_to_bf16(ram_bf16_to_float((uint16_t)h)), h);
        const uint32_t base = h << 16;
        const uint32_t near[] = {base + 1, base + 0x7fff, base + 0x8000, base + 0x8001,
                                 base + 0xffff};
        for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
            float f;
            memcpy(&f, &near[i], sizeof f);
            if (isnan(f)) continue;
            ck_assert_msg(ram_float_to_bf16(f) == bf16_by_definition(f), "%08x: %04x, want %04x",
                          near[i], ram_float_to_bf16(f), bf16_by_definition(f));
        }
    }
    for (int i = 0; i < 200000; i++) {
        const uint32_t u = rnd32();
        float f;
        memcpy(&f, &u, sizeof f);
        if (!isnan(f)) ck_assert_uint_eq(ram_float_to_bf16(f), bf16_by_definition(f));
    }
}
END_TEST

/* Against the processor's own conversion where it has one (AVX-512 BF16),
 * on normal floats (it flushes subnormals to zero). */
START_TEST(test_bf16_matches_avx512_bf16) {
#ifdef HAVE_X86
    if (!has_avx512_bf16()) {
        fprintf(stderr, "test_bf16_matches_avx512_bf16: no AVX-512 BF16 here, nothing compared\n");
        return;
    }
    int compared = 0;
    for (int i = 0; i < 1 << 16; i++) {
        float f[16];
        uint16_t hw[16];
        for (int j = 0; j < 16; j++) {
            /* random normal floats, a quarter of them on a tie */
            uint32_t u = (rnd32() & 0x807fffffu) | ((1 + rnd32() % 253) << 23);
            if (j % 4 == 0) u = (u & 0xffff0000u) | 0x8000u;
            memcpy(&f[j], &u, sizeof u);
        }
        hw_to_bf16(f, hw);
        for (int j = 0; j < 16; j++, compared++)
            ck_assert_msg(ram_float_to_bf16(f[j]) == hw[j], "%a: %04x, VCVTNEPS2BF16 %04x",
                          (double)f[j], ram_float_to_bf16(f[j]), hw[j]);
    }
    fprintf(stderr, "bfloat16 rounding matched VCVTNEPS2BF16 on %d floats\n", compared);
#endif
}
END_TEST

/* The half kernel equals the float one on the rounded weights, bit for bit,
 * for every shape the model uses (rows not a multiple of 8 or 4, inputs below,
 * between and above the vector widths).  With 2 inputs the float side is the
 * vectorised location kernel and the half side the portable loop, so this
 * also holds that kernel to the portable one's bits. */
START_TEST(test_half_kernel_equals_float_kernel) {
    const int ins[] = {2, 7, 8, 13, 16, 31, 64, 130}, outs[] = {1, 2, 3, 5, 8, 10, 12, 33};
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (size_t a = 0; a < sizeof ins / sizeof *ins; a++)
            for (size_t b = 0; b < sizeof outs / sizeof *outs; b++)
                for (int n = 1; n <= RAM_GEMV_MAX_ROWS; n += 3)
                    for (int acc = 0; acc < 2; acc++) {
                        const int in = ins[a], out = outs[b], ldx = in + 3, ldy = out + 2;
                        float *X = malloc(sizeof(float) * n * ldx),
                              *W = malloc(sizeof(float) * out * in),
                              *bias = malloc(sizeof(float) * out),
                              *Y1 = malloc(sizeof(float) * n * ldy),
                              *Y2 = malloc(sizeof(float) * n * ldy);
                        uint16_t *W16 = malloc(sizeof(uint16_t) * out * in);
                        for (int i = 0; i < n * ldx; i++)
                            X[i] = urand();
                        for (int i = 0; i < out * in; i++) {
                            const float w = 0.3f * urand();
                            W16[i] = bf16 ? ram_float_to_bf16(w) : ram_float_to_half(w);
                            W[i] = bf16 ? ram_bf16_to_float(W16[i]) : ram_half_to_float(W16[i]);
                        }
                        for (int i = 0; i < out; i++)
                            bias[i] = urand();
                        for (int i = 0; i < n * ldy; i++)
                            Y1[i] = Y2[i] = urand();
                        ram_linear_forward(X, ldx, n, in, W, bias, out, Y1, ldy, acc, NULL);
                        ram_linear_forward_w16(X, ldx, n, in, W16,
                                               bf16 ? RAM_WFORM_BF16 : RAM_WFORM_HALF, bias, out,
                                               Y2, ldy, acc);
                        ck_assert_msg(!memcmp(Y1, Y2, sizeof(float) * n * ldy),
                                      "in %d out %d n %d acc %d: %s and float kernels differ", in,
                                      out, n, acc, bf16 ? "bf16" : "half");
                        free(X), free(W), free(bias), free(Y1), free(Y2), free(W16);
                    }
}
END_TEST

/* ---- a model ---- */

enum { SIDE = 20, IMG = SIDE * SIDE, NIMG = 19 };

static ram_model *make_model(ram_core_type core, int glimpse_hidden) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.height = p.width = SIDE;
    p.glimpse.patch = 6;
    p.glimpse.depth = 2;
    p.glimpse_hidden = glimpse_hidden;
    p.loc_hidden = 32;
    p.glimpse_out = 64;
    p.core_hidden = 48;
    p.core = core;
    p.glimpses = 4;
    p.init_scale = 0.3f;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

static void make_images(float *img) {
    for (int i = 0; i < NIMG * IMG; i++)
        img[i] = 0.5f * (urand() + 1.0f);
}

/* probs of n images with `st` */
static void classify(const ram_model *m, ram_state *st, const float *img, int n, float *probs,
                     float *locs) {
    ck_assert_int_eq(ram_model_classify(m, st, img, n, NULL, probs, locs), RAM_OK);
}

/* A HALF or BF16 state on model m equals a FLOAT state on a copy of m
 * rounded by hand. */
static void check_against_rounded(ram_model *m, const float *img, int threads,
                                  ram_precision precision) {
    const bool bf16 = precision == RAM_PRECISION_BF16;
    ram_model *r;
    ram_model_params p;
    ram_model_params_init(&p);
    ck_assert_int_eq(ram_model_get_params(m, &p), RAM_OK);
    ck_assert_int_eq(ram_model_create(&p, &r), RAM_OK);
    for (size_t i = 0; i < m->n_params; i++)
        r->w[i] = bf16 ? ram_bf16_to_float(ram_float_to_bf16(m->w[i]))
                       : ram_half_to_float(ram_float_to_half(m->w[i]));
    ram_model_touch(r);
    ram_state *half, *flt;
    ck_assert_int_eq(ram_state_create_threads(m, NIMG, threads, &half), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(r, NIMG, threads, &flt), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(half, precision), RAM_OK);
    const int K = p.classes, T = p.glimpses;
    float a[NIMG * 10], b[NIMG * 10], la[NIMG * 64 * 2], lb[NIMG * 64 * 2];
    const int sizes[] = {1, 3, RAM_GEMV_MAX_ROWS, NIMG}; /* dot kernels, then sgemm */
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int n = sizes[s];
        classify(m, half, img, n, a, la);
        classify(r, flt, img, n, b, lb);
        ck_assert_msg(!memcmp(a, b, sizeof(float) * n * K) &&
                          !memcmp(la, lb, sizeof(float) * n * T * 2),
                      "batch %d, %d threads: %s differs from the model rounded by hand", n, threads,
                      bf16 ? "BF16" : "HALF");
    }
    /* and it is not FLOAT on m itself (the rounding shows somewhere) */
    ram_state *plain;
    ck_assert_int_eq(ram_state_create(m, NIMG, &plain), RAM_OK);
    classify(m, plain, img, NIMG, b, NULL);
    ck_assert_msg(memcmp(a, b, sizeof(float) * NIMG * K), "rounding gave FLOAT's very bits");
    /* Near, not equal: this random model (init 0.3) amplifies a 2^-11
     * (bfloat16: 2^-9) change through 4 glimpses and moves its locations:
     * its probabilities move by thousandths on average (bfloat16: up to
     * 0.006 seen), by up to 0.05 for one of them (bfloat16: 0.3, where an
     * image's glimpses moved), and the labels stay.  Garbled weights would
     * move them by a tenth on average.  The trained models' test errors are
     * in docs/performance.md. */
    double mean = 0, most = 0;
    int moved = 0;
    for (int i = 0; i < NIMG * K; i++) {
        mean += fabsf(a[i] - b[i]) / (NIMG * K);
        most = fmax(most, fabsf(a[i] - b[i]));
    }
    for (int i = 0; i < NIMG; i++)
        moved += ram_argmax(a + (size_t)i * K, K) != ram_argmax(b + (size_t)i * K, K);
    ck_assert_msg(mean < (bf16 ? 0.02 : 0.01) && (bf16 || most < 0.05) && moved <= 2,
                  "%s far from FLOAT: %g apart on average, %g at most, %d of %d labels moved",
                  bf16 ? "BF16" : "HALF", mean, most, moved, NIMG);
    ram_state_free(plain);
    ram_state_free(half);
    ram_state_free(flt);
    ram_model_free(r);
}

START_TEST(test_half_state_is_the_rounded_model) {
    static float img[NIMG * IMG];
    make_images(img);
    const ram_core_type cores[] = {RAM_CORE_RNN, RAM_CORE_LSTM};
    /* 16 x 72 weights: the whole-first-layer batch-1 path on a team; 200 x 72: the split one */
    const int hidden[] = {16, 200};
    for (int c = 0; c < 2; c++)
        for (int h = 0; h < 2; h++) {
            ram_model *m = make_model(cores[c], hidden[h]);
            for (int threads = 1; threads <= 2; threads++) {
                check_against_rounded(m, img, threads, RAM_PRECISION_HALF);
                check_against_rounded(m, img, threads, RAM_PRECISION_BF16);
            }
            ram_model_free(m);
        }
}
END_TEST

/* The copy follows the weights: a trainer step, another model, a reload. */
START_TEST(test_half_copy_follows_the_weights) {
    static float img[NIMG * IMG];
    make_images(img);
    ram_model *m = make_model(RAM_CORE_LSTM, 16), *other = make_model(RAM_CORE_LSTM, 16);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = NIMG;
    tp.threads = 1;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    ram_state *half;
    ck_assert_int_eq(ram_state_create(m, NIMG, &half), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(half, RAM_PRECISION_HALF), RAM_OK);
    float before[10], after[10], fresh[10];
    classify(m, half, img, 1, before, NULL);
    int labels[NIMG];
    for (int i = 0; i < NIMG; i++)
        labels[i] = i % 10;
    ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, NIMG, NULL), RAM_OK);
    classify(m, half, img, 1, after, NULL);
    ck_assert_msg(memcmp(before, after, sizeof before), "a HALF state kept the old weights");
    /* a new state made now agrees with the refreshed one */
    ram_state *again;
    ck_assert_int_eq(ram_state_create(m, NIMG, &again), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(again, RAM_PRECISION_HALF), RAM_OK);
    classify(m, again, img, 1, fresh, NULL);
    ck_assert(!memcmp(after, fresh, sizeof after));
    /* another model of the same architecture through the same state */
    float o1[10], o2[10];
    classify(other, half, img, 1, o1, NULL);
    classify(other, again, img, 1, o2, NULL);
    ck_assert(!memcmp(o1, o2, sizeof o1));
    ck_assert_msg(memcmp(o1, after, sizeof o1), "the state used the first model's copy");
    classify(m, half, img, 1, o2, NULL);
    ck_assert(!memcmp(o2, after, sizeof o2));
    /* back to FLOAT, and HALF again */
    ck_assert_int_eq(ram_state_set_precision(half, RAM_PRECISION_FLOAT), RAM_OK);
    classify(m, half, img, 1, o1, NULL);
    ck_assert_msg(memcmp(o1, after, sizeof o1), "FLOAT still rounded");
    ck_assert_int_eq(ram_state_set_precision(half, RAM_PRECISION_HALF), RAM_OK);
    classify(m, half, img, 1, o1, NULL);
    ck_assert(!memcmp(o1, after, sizeof o1));
    /* HALF to BF16 in the same state: the copy is remade in the new form */
    ck_assert_int_eq(ram_state_set_precision(half, RAM_PRECISION_BF16), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(again, RAM_PRECISION_BF16), RAM_OK);
    ram_state *fresh_bf16;
    ck_assert_int_eq(ram_state_create(m, NIMG, &fresh_bf16), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(fresh_bf16, RAM_PRECISION_BF16), RAM_OK);
    classify(m, half, img, 1, o1, NULL);
    classify(m, fresh_bf16, img, 1, o2, NULL);
    ck_assert_msg(memcmp(o1, after, sizeof o1), "BF16 still classified with the halves");
    ck_assert(!memcmp(o1, o2, sizeof o1));
    ram_state_free(fresh_bf16);
    ram_state_free(again);
    ram_state_free(half);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(other);
    ram_model_free(m);
}
END_TEST

START_TEST(test_half_out_of_range_and_bad_args) {
    static float img[NIMG * IMG];
    make_images(img);
    ram_model *m = make_model(RAM_CORE_RNN, 16);
    ram_state *st;
    ck_assert_int_eq(ram_state_create(m, NIMG, &st), RAM_OK);
    ck_assert_int_eq(ram_state_set_precision(NULL, RAM_PRECISION_HALF), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_state_set_precision(st, (ram_precision)7), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "unknown precision"));
    ck_assert_int_eq(ram_state_set_precision(st, RAM_PRECISION_HALF), RAM_OK);
    const float keep = m->w[5];
    m->w[5] = 70000.0f; /* finite in float, Inf in half */
    ram_model_touch(m);
    int label;
    ck_assert_int_eq(ram_model_classify(m, st, img, 1, &label, NULL, NULL), RAM_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "beyond half precision's range"));
    ck_assert_int_eq(ram_model_classify(m, st, img, NIMG, NULL, NULL, NULL), RAM_ERR_NUMERIC);
    m->w[5] = keep;
    ram_model_touch(m);
    ck_assert_int_eq(ram_model_classify(m, st, img, 1, &label, NULL, NULL), RAM_OK);
    /* bfloat16 has a float's range: 70000 is fine, FLT_MAX rounds to Inf */
    ck_assert_int_eq(ram_state_set_precision(st, RAM_PRECISION_BF16), RAM_OK);
    m->w[5] = 70000.0f;
    ram_model_touch(m);
    ck_assert_int_eq(ram_model_classify(m, st, img, 1, &label, NULL, NULL), RAM_OK);
    m->w[5] = FLT_MAX;
    ram_model_touch(m);
    ck_assert_int_eq(ram_model_classify(m, st, img, 1, &label, NULL, NULL), RAM_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "beyond bfloat16 precision's range"));
    ck_assert_int_eq(ram_model_classify_stop(m, st, img, 1, 0.9f, &label, NULL, NULL),
                     RAM_ERR_NUMERIC);
    m->w[5] = keep;
    ram_model_touch(m);
    ck_assert_int_eq(ram_model_classify(m, st, img, 1, &label, NULL, NULL), RAM_OK);
    ram_state_free(st);
    ram_model_free(m);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("precision");
    TCase *tc = tcase_create("half");
    tcase_add_test(tc, test_conversions_known_values);
    tcase_add_test(tc, test_conversions_match_f16c);
    tcase_add_test(tc, test_bf16_conversions);
    tcase_add_test(tc, test_bf16_matches_avx512_bf16);
    tcase_add_test(tc, test_half_kernel_equals_float_kernel);
    tcase_add_test(tc, test_half_state_is_the_rounded_model);
    tcase_add_test(tc, test_half_copy_follows_the_weights);
    tcase_add_test(tc, test_half_out_of_range_and_bad_args);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return run_suite(suite());
}
