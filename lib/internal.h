/* Internal declarations shared by libram's compilation units.  Not installed. */
#ifndef RAM_INTERNAL_H
#define RAM_INTERNAL_H

#include "ram/ram.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The smallest location std (1/std^2 must stay finite), as a float object:
 * compared with a float, the literal 1e-4f itself may be evaluated in a
 * wider format (FLT_EVAL_METHOD 2, x87: i386), where 1e-4f rounded to a
 * float is below it and a caller's 1e-4f would be refused. */
static const float RAM_LOC_STD_MIN = 1e-4f;

#define RAM_HIDDEN __attribute__((visibility("hidden")))

/* ---- errors (error.c) ---- */

/* Record a formatted message as the thread's last error and return `s`. */
RAM_HIDDEN ram_status ram_fail(ram_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
RAM_HIDDEN void ram_clear_error(void);

/* Send a diagnostic to the log callback (ram_set_log_callback()). */
RAM_HIDDEN void ram_log(ram_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the BLAS (blas.c) ---- */

/* Inspect the BLAS once per process and warn if its kernels are too old for
 * the CPU; called whenever a model comes to life. */
RAM_HIDDEN void ram_blas_check_once(void);
/* Before a thread's first sgemm: have OpenBLAS map the pages its Zen kernels
 * prefetch from (blas.c says why); once per thread, cheap afterwards. */
RAM_HIDDEN void ram_blas_prepare_thread(void);
/* 1 if OpenBLAS core `core` runs kernels older than the CPU's vectors:
 * predating AVX2 while cpu_avx >= 1 (the CPU has AVX2 and FMA), or stopping
 * at AVX2 while cpu_avx == 2 (AVX-512); cpu_avx as ram_cpu_x86_avx().
 * Testable without such a CPU. */
RAM_HIDDEN int ram_blas_core_is_slow(const char *core, int cpu_avx);
/* Before `workers` threads of libram's call BLAS at once: a warning, once a
 * process, if OpenBLAS would start threads of its own inside each. */
RAM_HIDDEN void ram_blas_check_threads(int workers);

/* What every ram_X_params_init_sized() does: the first `size` bytes (at
 * most `full`) of `defaults` into the caller's p, struct_size (the first
 * field) set to that; nothing for a NULL p or a size below a size_t. */
RAM_HIDDEN void ram_params_fill(void *p, size_t size, const void *defaults, size_t full);
/* Copy a caller's versioned params struct over `defaults` (already filled):
 * only the first min(user->struct_size, full) bytes are taken. */
RAM_HIDDEN ram_status ram_copy_params(void *dst, size_t full, const void *user, const char *what);

/* ---- the processor (cpu.c) ---- */

/* AVX2, FMA, F16C and POPCNT: the kernels of kernels_x86.c may run. */
RAM_HIDDEN bool ram_cpu_x86_kernels(void);
/* Those and AVX-512 F, BW and VL, enabled by the system: the kernels of
 * kernels_avx512.c may run. */
RAM_HIDDEN bool ram_cpu_x86_avx512(void);
/* Those and AVX512_BF16: the bfloat16 training products of gemm.c may run. */
RAM_HIDDEN bool ram_cpu_x86_avx512_bf16(void);
/* An x86-64 processor's vector units, for the BLAS check (blas.c): 2 with
 * AVX-512F besides AVX2 and FMA, 1 with AVX2 and FMA, 0 without them and on
 * other processors. */
RAM_HIDDEN int ram_cpu_x86_avx(void);
/* In a spin loop: let the other hardware thread of the core run. */
RAM_HIDDEN void ram_cpu_relax(void);

/* ---- random numbers (rng.c): xoshiro256**, seeded by splitmix64 ---- */

typedef struct ram_rng {
    uint64_t s[4];
    double spare; /* second Box-Muller normal */
    int has_spare;
} ram_rng;

RAM_HIDDEN void ram_rng_seed(ram_rng *r, uint64_t seed);
RAM_HIDDEN uint64_t ram_rng_u64(ram_rng *r);
RAM_HIDDEN double ram_rng_uniform(ram_rng *r); /* [0, 1) */
RAM_HIDDEN double ram_rng_normal(ram_rng *r);  /* N(0, 1) */

/* ---- glimpse sensor (glimpse.c) ---- */

#define RAM_MAX_DEPTH 16
#define RAM_MAX_PATCH 1024

struct ram_glimpse {
    int patch, depth;
    float scale;
    int side[RAM_MAX_DEPTH]; /* pixel side of each scale's square */
    /* The soft sensor's side of each square, continuous: side[k] exactly,
     * or side[k] times a zoom factor (ram_glimpse_zoomed()). */
    double span[RAM_MAX_DEPTH];
    ram_sensor sensor; /* HARD: average pooling; SOFT: exact cell averages */
    int samples;       /* HARD: reads per cell side, 0 = all (cell_samples) */
    bool contrast;     /* HARD: cells as contrast magnitudes (contrast) */
};

RAM_HIDDEN ram_status ram_glimpse_init(struct ram_glimpse *g, const ram_glimpse_params *p);

/* g with every square's side times `zoom` (ram_model_params.zoom_min):
 * the hard sensor's sides rounded to whole pixels (at least one), the soft
 * sensor's spans exact, so that its glimpse is continuous in the zoom. */
RAM_HIDDEN void ram_glimpse_zoomed(const struct ram_glimpse *g, float zoom,
                                   struct ram_glimpse *out);

/* Pixels as the sensors read them: floats as they are, or bytes standing
 * for byte / 255 (the tools' 8-bit images), read through ram_byte_value[]
 * so that a byte gives exactly the float (float)byte / 255.0f. */
RAM_HIDDEN extern const float ram_byte_value[256];

/* One image: c x h x w pixels at px, floats or bytes. */
typedef struct ram_image {
    const void *px; /* NULL: no image */
    bool u8;
} ram_image;

static inline ram_image ram_image_f32(const float *px) {
    return (ram_image){px, false};
}

/* A batch of images, as the callers hand them over: exactly one of f (n x
 * pixels floats), u8 (n x pixels bytes) or each (n pointers to pixels bytes
 * each: images that are not next to each other, as a shuffled batch of a
 * kept or memory-mapped set is) is not NULL. */
typedef struct ram_images {
    const float *f;
    const uint8_t *u8;
    const uint8_t *const *each;
} ram_images;

static inline ram_images ram_images_f32(const float *f) {
    return (ram_images){f, NULL, NULL};
}

/* Sample m of k over `len` pixels from `first`, as cell_samples reads a
 * wide cell (ram.h): the pixel at the centre of the m-th of k equal parts. */
static inline long ram_cell_sample(long first, long len, int m, int k) {
    return first + (2L * m + 1) * len / (2L * k);
}

/* ram_model_params.contrast: each channel's mean (shift) and 1 / (4 spread)
 * (gain), read at a fixed grid of the image's pixels, into stats[2 ch] and
 * stats[2 ch + 1]; a cell v then reads |v - shift| x gain.  The same for
 * every glimpse of an image: a forward pass works them out once an image
 * and hands them to the sensor. */
RAM_HIDDEN void ram_contrast_stats(ram_image img, int c, int h, int w, float *stats);

/* Image i of a batch of images of `pixels` pixels each. */
static inline ram_image ram_images_at(ram_images b, size_t i, size_t pixels) {
    if (b.f) return (ram_image){b.f + i * pixels, false};
    return (ram_image){b.u8 ? b.u8 + i * pixels : b.each[i], true};
}

/* The batch from image i0 on. */
static inline ram_images ram_images_from(ram_images b, size_t i0, size_t pixels) {
    return (ram_images){b.f ? b.f + i0 * pixels : NULL, b.u8 ? b.u8 + i0 * pixels : NULL,
                        b.each ? b.each + i0 : NULL};
}

/* Whether no image is given (a NULL array, or a NULL among n pointers). */
RAM_HIDDEN bool ram_images_missing(ram_images b, int n);

/* One image (c x h x w) at one location (already in the image's [-1, 1]
 * frame).  stats: the image's ram_contrast_stats() for a sensor of contrast
 * cells, or NULL (the sensor then works them out itself). */
RAM_HIDDEN void ram_glimpse_one(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                                float lx, float ly, const float *stats, float *out);
/* ram_glimpse_one(), asking for the cache lines of the image `next`'s
 * glimpse at (nx, ny) (next.px NULL: none) while this one is summed: the
 * batched forward pass's way through a batch of large images. */
RAM_HIDDEN void ram_glimpse_one_ahead(const struct ram_glimpse *g, ram_image img, int c, int h,
                                      int w, float lx, float ly, const float *stats, float *out,
                                      ram_image next, float nx, float ny);
/* Only rows [p0, p1) of every patch (every scale and channel) of that glimpse:
 * how threads share one image's glimpse. */
RAM_HIDDEN void ram_glimpse_rows(const struct ram_glimpse *g, ram_image img, int c, int h, int w,
                                 float lx, float ly, const float *stats, float *out, int p0,
                                 int p1);
/* A hint: fetch the cache lines of rows [p0, p1) of the widest square's
 * cells, so that a large image's misses overlap (glimpse.c says more). */
RAM_HIDDEN void ram_glimpse_prefetch(const struct ram_glimpse *g, ram_image img, int c, int h,
                                     int w, float lx, float ly, int p0, int p1);

/* ---- the soft sensor (glimpse_soft.c) ---- */

/* Rows [p0, p1) of every patch of the soft glimpse at (lx, ly) (the image's
 * frame): value (i, j) of scale k is the image's average over cell (i, j)
 * of the square of side side[k] centred on the location, a square of
 * side c = side[k] / patch; where c <= 1, over a pixel-wide square centred
 * on the cell (bilinear interpolation); zeros outside.  The glimpse calls
 * above come here for a SOFT sensor. */
RAM_HIDDEN void ram_glimpse_soft_rows(const struct ram_glimpse *g, ram_image img, int c, int h,
                                      int w, float lx, float ly, float *out, int p0, int p1);
/* d out / d lx and d out / d ly of every value of that glimpse (jx, jy: as
 * out), the right-hand derivative at a kink (a sample on a pixel centre, a
 * cell's edge on a pixel edge). */
RAM_HIDDEN void ram_glimpse_soft_jacobian(const struct ram_glimpse *g, const float *img, int c,
                                          int h, int w, float lx, float ly, float *jx, float *jy);
/* d out / d log s, s the factor every square's side is multiplied by
 * (the zoom), at s = 1 for g (a zoomed glimpse: g from ram_glimpse_zoomed());
 * as out.  At a kink (an edge on a pixel edge) each edge's one-sided
 * derivative is that of the pixel it moves into along +x or +y, as for
 * the location: for edges left of the centre, which move left as s grows,
 * that is the derivative from below in s (either side would do for
 * descent). */
RAM_HIDDEN void ram_glimpse_soft_jacobian_zoom(const struct ram_glimpse *g, const float *img, int c,
                                               int h, int w, float lx, float ly, float *js);
/* The same contracted with dout (the loss gradient w.r.t. the glimpse):
 * *dlx = sum dout * jx, *dly = sum dout * jy, and, when dls is not NULL,
 * *dls = sum dout * js. */
RAM_HIDDEN void ram_glimpse_soft_backward(const struct ram_glimpse *g, ram_image img, int c, int h,
                                          int w, float lx, float ly, const float *dout, float *dlx,
                                          float *dly, float *dls);

/* ---- layers (layers.c, kernels.c): batched, row-major, rows = batch ---- */

/* Up to this many rows, a linear layer runs one row at a time through
 * ram_dot_rows() (kernels.c) instead of sgemm. */
#ifndef RAM_GEMV_MAX_ROWS
#define RAM_GEMV_MAX_ROWS 8
#endif

/* libram's own training products (gemm.c): a worker's packing buffers and
 * its weights' packings for the current slice, in float or bfloat16.
 * NULL wherever every product goes to sgemm. */
typedef struct ram_gemm ram_gemm;
struct ram_tensor_info;
/* The CPU has AVX512_BF16 (and AVX-512 F/BW/VL, saved by the system), and
 * the kernel set is avx512. */
RAM_HIDDEN bool ram_bf16_supported(void);
/* The kernel set is avx512: the float products may run. */
RAM_HIDDEN bool ram_gemm_float_supported(void);
/* Buffers for products of up to max_n rows of the layers whose weights
 * are t[0 .. count) (rows = outputs, cols = inputs; cols 1: a bias,
 * skipped), in bfloat16 when bf16, else float.  Errors: INVALID_ARGUMENT
 * (the CPU or the kernel set cannot run that format), OUT_OF_MEMORY. */
RAM_HIDDEN ram_status ram_gemm_create(const struct ram_tensor_info *t, int count, int max_n,
                                      bool bf16, ram_gemm **out);
RAM_HIDDEN void ram_gemm_free(ram_gemm *s);
/* A new slice: forget the weights' packings (the weights changed); `on`
 * false leaves the slice's products to sgemm (evaluation).  NULL: nothing. */
RAM_HIDDEN void ram_gemm_begin(ram_gemm *s, bool on);
/* The three products of ram_linear_forward() and ram_linear_backward() in
 * the format; false, touching nothing, when s is NULL or off or the
 * product is not one for the kernel (a side under 16): then
 * the caller runs sgemm. */
RAM_HIDDEN bool ram_gemm_forward(ram_gemm *s, const float *X, int ldx, int n, int in,
                                 const float *W, int out, float *Y, int ldy, bool acc);
RAM_HIDDEN bool ram_gemm_backward_dx(ram_gemm *s, const float *dY, int ldy, int n, int in, int out,
                                     const float *W, float *dX, int lddx, bool acc);
RAM_HIDDEN bool ram_gemm_backward_dw(ram_gemm *s, const float *dY, int ldy, const float *X, int ldx,
                                     int n, int in, int out, float *dW);

/* Y[n x out] (ld ldy) = X[n x in] (ld ldx) W^T + b, or += when accumulate. b may be NULL.
 * Above RAM_GEMV_MAX_ROWS rows, the product through gemm when it (not
 * NULL, on) takes it, else sgemm. */
RAM_HIDDEN void ram_linear_forward(const float *X, int ldx, int n, int in, const float *W,
                                   const float *b, int out, float *Y, int ldy, bool accumulate,
                                   ram_gemm *gemm);
/* The forms the kernels read weights in: floats, or the 16-bit numbers of
 * a state's reduced-precision copy (ram_state_set_precision()): IEEE 754
 * binary16, or bfloat16 (a float's upper 16 bits: a float's range, 8 bits
 * of significand).  Both widen to float exactly, and the kernels multiply
 * the widened weights in float. */
typedef enum ram_wform { RAM_WFORM_FLOAT, RAM_WFORM_HALF, RAM_WFORM_BF16 } ram_wform;

/* The bytes of one weight in `form`. */
static inline size_t ram_wform_size(ram_wform form) {
    return form == RAM_WFORM_FLOAT ? sizeof(float) : sizeof(uint16_t);
}

/* A 16-bit copy of a model's parameters, laid out as its floats, in form
 * HALF or BF16; w NULL: none (the floats are read). */
typedef struct ram_w16 {
    const uint16_t *w;
    ram_wform form;
} ram_w16;

/* The same as ram_linear_forward() for n <= RAM_GEMV_MAX_ROWS with W in a
 * 16-bit form (the floats it widens to, multiplied in float in the order
 * of ram_linear_forward()'s small-n path: the same bits as that on those
 * floats; kernels.c). */
RAM_HIDDEN void ram_linear_forward_w16(const float *X, int ldx, int n, int in, const uint16_t *W,
                                       ram_wform form, const float *b, int out, float *Y, int ldy,
                                       bool accumulate);
/* The sparse-input path (kernels.c): rows [r0, r1) of y (indexed from 0,
 * like b) = x W^T + b for one input row x of `in`, from Wt, W's
 * column-major copy (in `form`; column c's ldt rows at Wt + c * ldt),
 * reading only the columns of x's nonzeros.  Returns false,
 * touching nothing, when x has fewer than min_zeros zeros (the caller's
 * other kernel is then faster), when in > RAM_SPARSE_MAX_IN, or without
 * the AVX2/FMA kernels (ram_sparse_kernels()).  Its sums are not ram_dot_rows()'s:
 * a row is one FMA chain over the nonzero inputs in increasing order,
 * whichever rows are computed with it. */
#define RAM_SPARSE_MAX_IN 2048
RAM_HIDDEN bool ram_sparse_kernels(void);
/* The number of x's `in` entries that are not zero (NaN counts). */
RAM_HIDDEN int ram_count_nonzeros(const float *x, int in);
/* dst (cols x rows, row-major) = src (rows x cols, row-major) transposed. */
RAM_HIDDEN void ram_transpose(float *dst, const float *src, int rows, int cols);
RAM_HIDDEN bool ram_linear_forward_sparse(const float *x, int in, int min_zeros, const void *Wt,
                                          ram_wform form, int ldt, int r0, int r1, const float *b,
                                          float *y, bool accumulate);
/* IEEE 754 binary16 <-> float: round to nearest even, overflow to Inf, NaN
 * kept; every half is exactly a float. */
RAM_HIDDEN uint16_t ram_float_to_half(float f);
RAM_HIDDEN float ram_half_to_float(uint16_t h);
/* float <-> bfloat16.  bfloat16 is a float's upper half: rounding drops
 * the lower 16 bits to the nearest, ties to even, and a carry into the
 * exponent takes the value to the next binade or to Inf as it should; NaN
 * is kept, made quiet so that dropping its low payload bits cannot make it
 * Inf.  Widening is exact (a shift).  Inline: the kernels' scalar tails
 * widen with it. */
static inline uint16_t ram_float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(x >> 16 | 0x40u);
    x += 0x7fffu + (x >> 16 & 1u);
    return (uint16_t)(x >> 16);
}
static inline float ram_bf16_to_float(uint16_t h) {
    const uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
/* dW += dY^T X, db += sum_rows dY; dX (ld lddx) = or += dY W when dX != NULL.
 * The products through gemm when it takes them (as ram_linear_forward()). */
RAM_HIDDEN void ram_linear_backward(const float *dY, int ldy, const float *X, int ldx, int n,
                                    int in, int out, const float *W, float *dW, float *db,
                                    float *dX, int lddx, bool accumulate_dx, ram_gemm *gemm);
RAM_HIDDEN void ram_relu_forward(float *Y, int n, int cols, int ld);
/* dY *= (Y > 0), Y the ReLU output. */
RAM_HIDDEN void ram_relu_backward(const float *Y, float *dY, int n, int cols, int ld);
/* tanh for the LSTM: the odd rational function p(x)/q(x) of degrees 13/6
 * that Eigen, XLA and ONNX Runtime use, its argument clamped at +-7.905
 * (where this approximation reaches +-1; Eigen's choice, keeping |result|
 * <= 1), and x itself below 4e-4 (where tanh(x) is within 1 ulp of x).
 * Why not libm's tanhf: it is a call per element (glibc's goes through
 * expm1f), a quarter of LSTM training time in perf; this is branch-free
 * arithmetic that the compiler vectorises.  Measured against tanh() in
 * double over every finite float (tests/tanh_error.c): at most 4.1e-7
 * absolute error (near +-1, about 7 ulp there); odd; NaN in, NaN out. */
static inline float ram_tanh(float x) {
    /* Float objects and one operation per assignment: where float
     * expressions are evaluated wider (x87: i386), a literal keeps its
     * decimal value in the wider format and only an assignment rounds
     * (ISO C's excess precision), so written this way the result is the
     * bits SSE gives, and +-1 at the clamp (1 - 6e-7 otherwise).  On other
     * processors the same code as the plain Horner steps. */
    static const float P[7] = {-2.76076847742355e-16f, 2.00018790482477e-13f,
                               -8.60467152213735e-11f, 5.12229709037114e-08f,
                               1.48572235717979e-05f,  6.37261928875436e-04f,
                               4.89352455891786e-03f};
    static const float Q[4] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                               4.89352518554385e-03f};
    static const float lim = 7.90531110763549805f, tiny = 4e-4f;
    const float c = x < -lim ? -lim : x > lim ? lim : x, c2 = c * c;
    float p = P[0], q = Q[0], t;
    for (int k = 1; k < 7; k++)
        t = p * c2, p = t + P[k];
    for (int k = 1; k < 4; k++)
        t = q * c2, q = t + Q[k];
    const float cp = c * p, r = cp / q;
    return x > -tiny && x < tiny ? x : r;
}

/* The logistic function as 1/2 + tanh(x/2)/2: the same vectorisable
 * arithmetic, at most 2.3e-7 absolute error.  Exactly 0 below x = -15.8,
 * where the true value is under 1.4e-7: right in absolute terms, which is
 * what a gate needs, not in relative terms. */
static inline float ram_sigmoid(float x) {
    return 0.5f + 0.5f * ram_tanh(0.5f * x);
}

/* LSTM pointwise part.  gates: n x 4H pre-activations [i f g o], replaced by
 * their activations; c_prev, c, h: n x H.  No two arrays may overlap, here
 * and in ram_lstm_backward (the loops are compiled on that promise). */
RAM_HIDDEN void ram_lstm_forward(float *gates, const float *c_prev, float *c, float *h, int n,
                                 int H);
/* The same for units [u0, u1) only (gates i, f, g, o of those units). */
RAM_HIDDEN void ram_lstm_forward_units(float *gates, const float *c_prev, float *c, float *h, int n,
                                       int H, int u0, int u1);
/* Given dh, dc (n x H, gradient w.r.t. h_t and c_t), writes dgates (n x 4H,
 * w.r.t. pre-activations) and dc_prev (n x H). */
RAM_HIDDEN void ram_lstm_backward(const float *gates, const float *c_prev, const float *c,
                                  const float *dh, const float *dc, float *dgates, float *dc_prev,
                                  int n, int H);
/* Row-wise softmax of logits into probs (n x k). */
RAM_HIDDEN void ram_softmax(const float *logits, float *probs, int n, int k);

/* ---- model (model.c) ---- */

enum ram_tensor_id {
    RAM_T_G1_W,
    RAM_T_G1_B, /* rho -> h_g */
    RAM_T_L1_W,
    RAM_T_L1_B, /* l -> h_l */
    RAM_T_G2_W,
    RAM_T_G2_B, /* h_g -> g (ADDITIVE) or [h_g; h_l] -> g (CONCAT) */
    RAM_T_L2_W,
    RAM_T_L2_B, /* h_l -> g (ADDITIVE only; empty for CONCAT) */
    RAM_T_CX_W,
    RAM_T_CH_W,
    RAM_T_C_B, /* core: input, recurrent, bias (x4 for LSTM) */
    RAM_T_LOC_W,
    RAM_T_LOC_B, /* h -> mu */
    RAM_T_CLS_W,
    RAM_T_CLS_B, /* h_T -> logits */
    /* The tensors of a model file of before the two-layer core and the
     * context network: a model without either has only these (the rest
     * are empty) and is saved as it was then. */
    RAM_T_V1_COUNT,
    RAM_T_UX_W = RAM_T_V1_COUNT,
    RAM_T_UH_W,
    RAM_T_U_B, /* the core's upper layer r2: input r1, recurrent, bias (x4 for LSTM) */
    RAM_T_CTX_W,
    RAM_T_CTX_B, /* context network: pooled image -> r2_0 */
    /* The tensors of a model file of before the convolutional layer: a
     * model without it lists only these (or only the first V1 ones). */
    RAM_T_V2_COUNT,
    RAM_T_CONV_W = RAM_T_V2_COUNT,
    RAM_T_CONV_B, /* the convolutional layer: filters (C x planes k k), biases */
    RAM_T_COUNT
};

/* Column-major copies of a model's ReLU-fed layers (the glimpse network's
 * second layer, the core's input and, for the ReLU RNN, its recurrent
 * weights), which the sparse kernels read (ram_linear_forward_sparse());
 * columns.c makes them.  Floats, or the 16-bit numbers of a state's
 * rounded copy when made from one; layer id's copy starts off[id] entries
 * into data (SIZE_MAX: not copied).  data is NULL without the sparse kernels. */
typedef struct ram_cols {
    void *block, *data;
    size_t off[RAM_T_COUNT];
    uint64_t version; /* the model weights' version they were made from; 0: none */
} ram_cols;

typedef struct ram_tensor_info {
    size_t off;     /* offset into ram_model.w */
    int rows, cols; /* biases: rows x 1 */
} ram_tensor_info;

struct ram_model {
    ram_model_params p;
    struct ram_glimpse sensor;
    int rho_size; /* C * depth * patch^2 */
    /* The convolutional layer (p.conv_channels > 0): Q, its output's side,
     * and the values one filter reads at a position (planes x k x k); g1_in,
     * what h_g reads: C x Q x Q values, or rho_size without the layer. */
    int conv_q, conv_in, g1_in;
    int hgl;                /* glimpse_hidden + loc_hidden: width of the [h_g; h_l] buffer */
    int gates;              /* core_hidden (RNN) or 4 * core_hidden (LSTM) */
    int gates2;             /* the same for the upper layer; 0 with one layer */
    int ctx_in;             /* channels * context^2: the pooled image's values */
    float range_x, range_y; /* policy [-1,1] -> retina [-1,1] factor per axis */
    /* Floats per location: 2 (x, y), or 3 with zoom (x, y, z); then the
     * factor at z is exp(zoom_lo + (z + 1) zoom_half) (ram_model_zoom()). */
    int ld;
    float zoom_lo, zoom_half;
    ram_tensor_info t[RAM_T_COUNT];
    size_t n_params;
    float *w;      /* n_params weights, 64-byte aligned within w_block */
    void *w_block; /* what was allocated */
    /* Numbers these weights, unique in the process: a new one at creation,
     * load and every change (ram_model_touch()). */
    uint64_t version;
    /* What the model knows of its inputs and outputs, beyond the network:
     * the class names (NULL: none; names[k] points into names_block) and
     * how images of another size are fitted to its canvas. */
    char **names;
    char *names_block;
    ram_fit fit;
    /* The stop unit (ram_model_fit_stop()): whether there is one, its
     * weights (RAM_STOP_WEIGHTS(glimpses) of them) and its cost. */
    bool has_stop;
    float stop_cost;
    float stop_w[RAM_STOP_WEIGHTS(64)];
};

/* The zoom factor of a location's z (a model with zoom), within the
 * model's range: expf can round a last bit beyond it, and a NaN z (a core
 * overflowed by huge pixels) reads as the smallest factor rather than
 * reaching the sensor's casts. */
static inline float ram_model_zoom(const struct ram_model *m, float z) {
    float f = expf(m->zoom_lo + (z + 1.0f) * m->zoom_half);
    if (!(f >= m->p.zoom_min)) f = m->p.zoom_min;
    if (f > m->p.zoom_max) f = m->p.zoom_max;
    return f;
}

/* The sensor for a glimpse at location l (m->ld floats): the model's, or
 * with zoom a copy in `tmp` whose squares are zoomed by l's z. */
static inline const struct ram_glimpse *
ram_model_sensor_at(const struct ram_model *m, const float *l, struct ram_glimpse *tmp) {
    if (m->ld == 2) return &m->sensor;
    ram_glimpse_zoomed(&m->sensor, ram_model_zoom(m, l[2]), tmp);
    return tmp;
}

/* Longest class name, in bytes (the terminating NUL not counted). */
#define RAM_MAX_CLASS_NAME 1024
/* Check names (count = the model's classes, each 1..RAM_MAX_CLASS_NAME
 * bytes: lens[k], or strings' own lengths when lens is NULL) and put
 * copies in m, replacing any; NULL names clear them. */
RAM_HIDDEN ram_status ram_model_put_names(struct ram_model *m, const char *const *names,
                                          const size_t *lens, int count, const char *what);

RAM_HIDDEN ram_status ram_model_validate(const ram_model_params *p);
/* emit_every 0 (glimpses / objects) made explicit, where it divides. */
RAM_HIDDEN void ram_model_resolve_emit(ram_model_params *p);
/* Same architecture: every field but the initialisation (seed, init_scale). */
RAM_HIDDEN bool ram_model_same_arch(const ram_model_params *a, const ram_model_params *b);
static inline int ram_argmax(const float *p, int k) {
    int best = 0;
    for (int j = 1; j < k; j++)
        if (p[j] > p[best]) best = j;
    return best;
}
/* Fill layout fields (everything but w) from p->.  p must be valid. */
RAM_HIDDEN void ram_model_layout(struct ram_model *m, const ram_model_params *p);
RAM_HIDDEN ram_status ram_model_alloc(const ram_model_params *p, struct ram_model **out);
/* p rounded up to a 64-byte cache line (NULL stays NULL): blocks are
 * malloc'ed 63 bytes larger and used from here. */
static inline void *ram_align64(void *p) {
    return p ? (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63) : NULL;
}
static inline float *ram_param(const struct ram_model *m, float *base, enum ram_tensor_id id) {
    return base + m->t[id].off;
}
/* In ram_cols.off: this layer is not copied. */
#define RAM_NO_COLS SIZE_MAX
/* Allocate c for m's layers (nothing without the sparse kernels). */
RAM_HIDDEN ram_status ram_cols_init(ram_cols *c, const struct ram_model *m);
RAM_HIDDEN void ram_cols_release(ram_cols *c);
/* Remake c from m's weights (or, when w16 is given, from their 16-bit
 * copy, in either form), unless made from this very version of them. */
RAM_HIDDEN void ram_cols_refresh(ram_cols *c, const struct ram_model *m, const uint16_t *w16);
/* Note that the model's weights changed (ram_state_set_precision()'s copies
 * compare this number with the one they were made from). */
RAM_HIDDEN void ram_model_touch(struct ram_model *m);

/* Part k of nt of [0, total), cut at multiples of `align` (16 floats, one
 * cache line, so that threads do not write the same lines). */
static inline void ram_split(int total, int k, int nt, int align, int *a, int *b) {
    *a = k == 0 ? 0 : (int)((long)total * k / nt / align * align);
    *b = k == nt - 1 ? total : (int)((long)total * (k + 1) / nt / align * align);
}

/* How forward picks each location. */
typedef enum ram_loc_mode {
    RAM_LOC_MEAN,   /* l_t = mu_t (evaluation) */
    RAM_LOC_SAMPLE, /* l_t = clamp(mu_t + std * eps_t, -1, 1), eps given */
    RAM_LOC_FIXED   /* l_t given (gradient checks) */
} ram_loc_mode;

/* Caches for one forward/backward pass over up to max_n images. */
typedef struct ram_ws {
    int max_n;
    float *rho;   /* T x n x rho_size */
    float *loc;   /* T x n x 2, the locations used (policy frame) */
    float *mupre; /* T x n x 2, location mean before the bound */
    float *mu;    /* T x n x 2 */
    float *hgl;   /* T x n x hgl */
    float *g;     /* T x n x glimpse_out */
    float *gates; /* T x n x 4H (LSTM) */
    float *h;     /* (T+1) x n x H, h[0] = 0 */
    float *c;     /* (T+1) x n x H (LSTM) */
    float *probs; /* objects x n x classes */
    float *aux;   /* T x n x 2: noise or given locations for classify_ex */
    /* Inference above RAM_GEMV_MAX_ROWS images with the sparse kernels: the
     * rows of the images too dense for them, gathered for one sgemm
     * (n x the widest ReLU-fed input, n x the widest output), and their
     * indices; NULL otherwise. */
    float *gather_x, *gather_y;
    int *gather_at;
    /* backward */
    float *dh, *dh2, *dc, *dc2, *dgates, *dg, *dhgl, *dlogits, *dmu;
    float *drho, *dloc; /* a soft sensor's: n x rho_size, n x 2 (NULL otherwise) */
    /* The MULTIPLICATIVE form's factors ReLU(W_g2 h_g + b) and ReLU(W_l2
     * h_l + b), side by side (T x n x 2G), and a step's gradients of them
     * (n x 2G); NULL for the other forms. */
    float *gm, *dgm;
    /* The core's upper layer (core_layers = 2): h2 and c2 as h and c,
     * gates2 as gates; du, du2, dcu, dcu2, dgates2 as dh ... dgates.  NULL
     * with one layer. */
    float *h2, *c2, *gates2, *du, *du2, *dcu, *dcu2, *dgates2;
    float *ctx_in; /* n x ctx_in: the context network's pooled images, or NULL */
    /* The convolutional layer: its ReLU'd outputs, T x n x g1_in, each
     * image's Q x Q positions of conv_channels values (position-major);
     * the glimpses unrolled for its product, n x Q^2 x conv_in (one step's,
     * remade in the backward pass); and in a training workspace, a step's
     * gradients of both (dcol only for the soft sensor).  NULL without it. */
    float *conv, *col, *dconv, *dcol;
    /* n x channels x 2: each image's (shift, gain) of every channel for
     * contrast cells (ram_contrast_stats()), or NULL without them. */
    float *contrast;
    /* Stopping (ram_model_forward_stop()): the classifier's probabilities
     * of the images still looking (n x classes), and which image each of
     * their rows is (n ints, then n more for the rows kept).  NULL in a
     * training workspace. */
    float *halt_probs;
    int *halt_rows;
    float *grad; /* n_params */
    /* A trainer's own products (gemm.c, in ram_trainer_params.products'
     * format), owned by the trainer; NULL: sgemm. */
    ram_gemm *gemm;
} ram_ws;

/* The core layer the location network and the baseline read (T+1 x n x
 * H): the upper layer with two, else the only one. */
static inline float *ram_top_state(const struct ram_model *m, const ram_ws *ws) {
    return m->p.core_layers == 2 ? ws->h2 : ws->h;
}

/* ---- context network (context.c) ---- */

/* One image (c x h x w) average-pooled to c x s x s (ram_model_params.context
 * says how). */
RAM_HIDDEN void ram_context_pool(ram_images img, int c, int h, int w, int s, int k,
                                 const float *stats, float *out);

/* ---- the glimpse's convolutional layer (conv.c) ---- */

/* Images [i0, i1) of a step's glimpses rho (n x rho_size) through the
 * layer with the parameters at w (laid out as m->w): each glimpse
 * unrolled into col (its Q^2 rows of conv_in values), one product with
 * the filters, ReLU, into out (n x g1_in).  Float products: a state at a
 * reduced precision passes its rounded weights as the floats they are. */
RAM_HIDDEN void ram_conv_forward(const struct ram_model *m, const float *w, const float *rho,
                                 int i0, int i1, float *col, float *out);
/* Its backward pass for n images, given dout (n x g1_in, the loss
 * gradient w.r.t. the layer's output, overwritten by the ReLU's mask) and
 * the forward pass's out: the filters' and biases' gradients added to
 * grad (laid out as m->w); col is scratch (the glimpses unrolled again);
 * with dcol and drho not NULL, the loss gradient w.r.t. the glimpses
 * written to drho (n x rho_size). */
RAM_HIDDEN void ram_conv_backward(const struct ram_model *m, const float *rho, int n,
                                  const float *out, float *dout, float *col, float *grad,
                                  float *dcol, float *drho);

/* ---- thread team (team.c) ---- */

/* Runs as thread k of nt (k = 0 is the caller's thread). */
typedef void (*ram_team_fn)(void *arg, int k, int nt);
typedef struct ram_team ram_team;
/* threads - 1 worker threads; threads >= 2.  A thread that cannot be
 * started fails with `thread_failure`, the message starting with `what`. */
RAM_HIDDEN ram_status ram_team_create(int threads, ram_status thread_failure, const char *what,
                                      ram_team **out);
RAM_HIDDEN void ram_team_free(ram_team *t);
/* 1 for NULL */
RAM_HIDDEN int ram_team_size(const ram_team *t);
/* A monotonic clock, in seconds (for timing a team's work against none). */
RAM_HIDDEN double ram_seconds(void);
/* fn on every thread of the team (just the caller for NULL); returns when all
 * are done. */
RAM_HIDDEN void ram_team_run(ram_team *t, ram_team_fn fn, void *arg);
/* Inside fn: wait for the team's other threads (no-op for NULL). */
RAM_HIDDEN void ram_team_barrier(ram_team *t);

/* ---- a threaded state's choice for small calls (split_choice.c) ---- */

#define RAM_CHOOSE_TRIALS    8
#define RAM_TIME_ALONE_EVERY 8
/* Times per image of the last calls each way and the choice; all zeros to
 * start. */
typedef struct ram_split_choice {
    unsigned calls;                    /* calls so far, counted to 2 x RAM_CHOOSE_TRIALS */
    unsigned wait;                     /* calls the chosen way before the next trial */
    double time[2][RAM_CHOOSE_TRIALS]; /* seconds per image: [0] alone, [1] split */
    unsigned next[2];                  /* where each way's next time goes */
    double stall;                      /* a split call slower than this chooses again */
    bool split;                        /* the choice after the first trials */
    bool last;                         /* the way of the call before: a call after one
                                          the other way only warms (split_choice.c) */
} ram_split_choice;
/* Whether the next small call splits its rows between the threads. */
RAM_HIDDEN bool ram_split_choice_next(const ram_split_choice *c);
/* Whether that call must be timed: the first trials, every split call, every
 * trial; of the calls alone the choice keeps, one in RAM_TIME_ALONE_EVERY. */
RAM_HIDDEN bool ram_split_choice_timed(const ram_split_choice *c, bool split);
/* After a timed call the way ram_split_choice_next() said: its seconds per
 * image (not kept when the call before went the other way). */
RAM_HIDDEN void ram_split_choice_record(ram_split_choice *c, bool split, double seconds);
/* After a call that was not to be timed (always one alone): counted towards
 * the next trial. */
RAM_HIDDEN void ram_split_choice_count(ram_split_choice *c);

RAM_HIDDEN ram_status ram_ws_init(ram_ws *ws, const struct ram_model *m, int max_n, bool train);
RAM_HIDDEN void ram_ws_release(ram_ws *ws);
/* Forward n images.  eps (RAM_LOC_SAMPLE: T x n x 2 normals) or locs
 * (RAM_LOC_FIXED: T x n x 2) per mode; std used by SAMPLE. */
RAM_HIDDEN void ram_model_forward(const struct ram_model *m, ram_ws *ws, const float *images, int n,
                                  ram_loc_mode mode, const float *eps_or_locs, float std);
/* The same, with each layer's outputs split over the team's threads (and the
 * glimpses over images); the same bits as ram_model_forward() for n <= 8. */
RAM_HIDDEN void ram_model_forward_team(const struct ram_model *m, ram_ws *ws, const float *images,
                                       int n, ram_loc_mode mode, const float *eps_or_locs,
                                       float std, ram_team *team);
/* ram_model_forward_team() with the parameters at `w` (n_params floats laid
 * out as m->w) instead of m->w, and, when w16.w is not NULL, the same values
 * in that 16-bit form read by the layers of n <= RAM_GEMV_MAX_ROWS images;
 * when cols is not NULL and has data, the ReLU-fed layers read those
 * column-major copies (made from the same values: 16-bit when w16.w) for
 * each image whose input has zeros enough (ram_linear_forward_sparse(), and
 * above RAM_GEMV_MAX_ROWS images ws's gather buffers). */
RAM_HIDDEN void ram_model_forward_with(const struct ram_model *m, const float *w, ram_w16 w16,
                                       const ram_cols *cols, ram_ws *ws, ram_images images, int n,
                                       ram_loc_mode mode, const float *eps_or_locs, float std,
                                       ram_team *team);
/* When an image of a stopping pass stops (the first rule that is set):
 * with `record`, only after the last glimpse, every step's probabilities
 * written to record (n x glimpses x classes, ram_model_step_probs());
 * with `unit`, where the stop unit's logit (ram_stop_logit()) is positive;
 * else where the top probability reaches `threshold`. */
typedef struct ram_stop_rule {
    float threshold;
    const float *unit;
    float *record;
} ram_stop_rule;
/* A forward pass of n images (nt = 1, mean locations, one object) in which
 * each image stops at the first glimpse after which `rule` says so, or at
 * the last: its probabilities go to
 * ws->probs and its glimpse count to steps[i].  Finished images leave the
 * work: the next glimpse is taken for the others only.  Returns the first
 * image whose glimpse read a NaN or Inf pixel (its step in *bad_step), or
 * -1.  ws is an inference workspace of at least n images.  With a team
 * (n <= RAM_GEMV_MAX_ROWS), every layer's rows are split between its
 * threads as in ram_model_forward_with(), with the same bits. */
RAM_HIDDEN long ram_model_forward_stop(const struct ram_model *m, const float *w, ram_w16 w16,
                                       const ram_cols *cols, ram_ws *ws, ram_images images, int n,
                                       const ram_stop_rule *rule, int *steps, int *bad_step,
                                       ram_team *team);

/* ---- the stop unit (stop.c) ---- */

/* The stop unit's logit after glimpse t of T for the classifier's
 * probabilities q (k classes), with weights w (RAM_STOP_WEIGHTS(T)). */
RAM_HIDDEN float ram_stop_logit(const float *w, const float *q, int k, int t);
/* Its three confidence features of q: -log(1 - q_max) (at most
 * RAM_STOP_SURE_MAX), the margin q_max - q_second, the entropy over log k. */
#define RAM_STOP_SURE_MAX 20.0f
RAM_HIDDEN void ram_stop_features(const float *q, int k, float *f);
/* One Monte Carlo estimate of the gradient of the negative expected
 * reward with respect to the weights w: an image's stop drawn from the
 * unit (decisions after glimpses 0 .. T-2 with `rng`; every image stops
 * after the last), given its features (T x 3, ram_stop_features()) and
 * whether the label at each step is right (T bytes); the REINFORCE
 * gradient of its decisions (ram_reinforce_bernoulli(), with the baselines
 * base[t], or none for NULL), divided by norm, is added to grad
 * (RAM_STOP_WEIGHTS(T) doubles).  Returns the reward; the step it stopped
 * at (0-based) to *stopped_at, unless NULL.  For the fit and the tests. */
RAM_HIDDEN double ram_stop_sample_gradient(const float *w, const float *feats,
                                           const unsigned char *right, int T, float cost,
                                           ram_rng *rng, const float *base, float norm,
                                           double *grad, int *stopped_at);
/* After a forward pass of n images in ws: the first image whose glimpses
 * read a NaN or Inf pixel, or -1; *step gets that glimpse's step (0-based).
 * Pixels are never scanned up front, which would make the cost grow with
 * the image; the glimpses are (a NaN or Inf pixel poisons its pooled cell,
 * and ReLU would silently turn NaN into 0 further on). */
RAM_HIDDEN long ram_ws_bad_glimpse(const struct ram_model *m, const ram_ws *ws, int n, int *step);
/* Backward: ws->dlogits (n x classes) and, if dmu != NULL, the loss gradient
 * w.r.t. mu_t (T x n x 2).  Accumulates into ws->grad (not zeroed here).
 * detach_core: the location gradient stops at the location network. */
RAM_HIDDEN void ram_model_backward(const struct ram_model *m, ram_ws *ws, int n, const float *dmu,
                                   bool detach_core);
/* ram_model_backward() for a model with the soft sensor, also through the
 * sensor: at each step the loss gradient w.r.t. l_t (from the glimpse and
 * from the location layer h_l) reaches mu_t (mode MEAN: l = mu; SAMPLE:
 * where the clamp let the sample through; FIXED: nowhere) and from there
 * the location network and, unless detach_soft, the core through time
 * (detach_core concerns the REINFORCE term dmu, as above).  images: those
 * of the forward pass in ws; the workspace was made for training. */
RAM_HIDDEN void ram_model_backward_soft(const struct ram_model *m, ram_ws *ws, int n,
                                        const float *images, ram_loc_mode mode, const float *dmu,
                                        bool detach_core, bool detach_soft);
/* The same, the images as the forward pass took them (floats or bytes). */
RAM_HIDDEN void ram_model_backward_images(const struct ram_model *m, ram_ws *ws, int n,
                                          ram_images images, ram_loc_mode mode, const float *dmu,
                                          bool detach_core, bool detach_soft);

/* ---- policy (reinforce.c) ---- */

struct ram_policy {
    ram_policy_params p; /* zero fields resolved */
    float *bw;           /* baseline: hidden weights + 1 bias (LINEAR), 1 (SCALAR), 0 (NONE) */
    size_t n_bw;
    ram_rng rng;
};

/* Baseline values b[t*n + i] from the decision states h[t] (T+1 x n x H). */
RAM_HIDDEN void ram_baseline_forward(const struct ram_policy *pol, const float *h, int n, float *b);
/* Gradient of the baseline loss mean_{t,i}(b - R)^2 * (n / norm) into gbw;
 * returns the summed squared error. */
RAM_HIDDEN double ram_baseline_backward(const struct ram_policy *pol, const float *h, int n,
                                        const float *b, const float *R, float norm, float *gbw);

/* Returns of one image that earned `reward`: R[t * stride] =
 * discount^(steps - 1 - t) * reward for t = 0 .. steps - 1
 * (ram_policy_returns() is this with stride 1, image after image). */
RAM_HIDDEN void ram_policy_return_row(const struct ram_policy *pol, float reward, float *R,
                                      size_t stride);
/* The Gaussian policy's REINFORCE surrogate, for the loss the trainer
 * reports: subtracts alpha (R_i - b_i) log N(l_i; mu_i, std^2 I) from *sum
 * for each of the n rows of d coordinates, in order. */
RAM_HIDDEN void ram_reinforce_gaussian_surrogate(const float *l, const float *mu, int n, int d,
                                                 float std, const float *R, const float *b,
                                                 float alpha, double *sum);

/* ---- optimizers (optim.c) ---- */

/* An optimizer's state over n weights (the model's, then the baseline's). */
typedef struct ram_optim {
    ram_trainer_params p;
    size_t n;
    float *m1, *m2; /* Adam's moments; SGD's velocity in m1 (m2 stays zero) */
    float *avg;     /* moving average of the first n_avg weights, or NULL */
    size_t n_avg;
    long step; /* updates made */
} ram_optim;

/* The optimizer's fields of p, checked; `what` starts the message. */
RAM_HIDDEN ram_status ram_optim_validate(const ram_trainer_params *p, const char *what);
/* Zero moments; the average (when p->average_decay > 0) starts at w[0 .. n_avg). */
RAM_HIDDEN ram_status ram_optim_init(ram_optim *o, const ram_trainer_params *p, size_t n,
                                     const float *w, size_t n_avg);
RAM_HIDDEN void ram_optim_release(ram_optim *o);
/* The learning rate of the next update (linear decay over decay_steps). */
RAM_HIDDEN float ram_optim_lr(const ram_optim *o);
/* The fraction by which the average moves toward the weights at this step. */
RAM_HIDDEN float ram_optim_average_rate(const ram_optim *o);
/* One update of the n weights w at offset `off` of the state, gradient g
 * scaled by `scale` (clipping); `decay` scales w first (decoupled weight
 * decay, AdamW's order), in the same pass: w * 1 is w, so without decay
 * the bits are those of a plain step.  A non-NULL avg then moves toward
 * the new w by a fraction a, also in the same pass. */
RAM_HIDDEN void ram_optim_update(const ram_optim *o, float *w, const float *g, size_t n, size_t off,
                                 float lr, float scale, float decay, float *avg, float a);
/* sum g_i^2 in double, in a fixed order. */
RAM_HIDDEN double ram_squared_norm(const float *g, size_t n);

/* ---- serialization (file.c: the container; serialize.c: models, checkpoints) ---- */

/* A growable little-endian byte buffer used to build files. */
typedef struct ram_buf {
    unsigned char *data;
    size_t len, cap;
    bool failed; /* an allocation failed: the buffer is unusable */
} ram_buf;

RAM_HIDDEN void ram_buf_u32(ram_buf *b, uint32_t v);
RAM_HIDDEN void ram_buf_u64(ram_buf *b, uint64_t v);
RAM_HIDDEN void ram_buf_f32(ram_buf *b, float v);
RAM_HIDDEN void ram_buf_bytes(ram_buf *b, const void *p, size_t n);
RAM_HIDDEN void ram_buf_floats(ram_buf *b, const float *p, size_t n);

/* A bounds-checked reader over a byte range. */
typedef struct ram_reader {
    const unsigned char *p;
    size_t len, pos;
    bool bad; /* read past the end */
} ram_reader;

RAM_HIDDEN uint32_t ram_rd_u32(ram_reader *r);
RAM_HIDDEN uint64_t ram_rd_u64(ram_reader *r);
RAM_HIDDEN float ram_rd_f32(ram_reader *r);
RAM_HIDDEN bool ram_rd_floats(ram_reader *r, float *dst, size_t n);

/* File container: header, chunks, CRC-32 trailer.  See docs/file-format.md. */
#define RAM_TAG(a, b, c, d)                                                                        \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
RAM_HIDDEN void ram_file_begin(ram_buf *b);
RAM_HIDDEN void ram_file_chunk(ram_buf *b, uint32_t tag, const ram_buf *payload);
RAM_HIDDEN ram_status ram_file_finish_and_write(ram_buf *b, const char *path);
/* Read and verify a whole file; fills the data buffer (caller frees *data). */
RAM_HIDDEN ram_status ram_file_read(const char *path, unsigned char **data, size_t *len);
/* Verify a whole file already in memory (magic, version, chunk lengths, END
 * chunk, CRC), as ram_file_read does after reading; `path` only names the
 * file in error messages. */
RAM_HIDDEN ram_status ram_file_verify(const unsigned char *data, size_t len, const char *path);
/* Find chunk `tag` in a verified file; false if absent. */
RAM_HIDDEN bool ram_file_find(const unsigned char *data, size_t len, uint32_t tag,
                              ram_reader *chunk);
RAM_HIDDEN void ram_model_serialize(const struct ram_model *m, ram_buf *b);
/* Parse the model chunks of a verified file. */
RAM_HIDDEN ram_status ram_model_deserialize(const unsigned char *data, size_t len,
                                            struct ram_model **out);
RAM_HIDDEN uint32_t ram_crc32(const unsigned char *p, size_t n);

/* What a trainer's checkpoint holds, where it lives in the trainer: the
 * model, the policy (baseline weights, sampling generator), the optimizer
 * (with the weights' average) and the shuffling generator. */
typedef struct ram_checkpoint {
    struct ram_model *m;
    struct ram_policy *pol;
    ram_optim *opt;
    ram_rng *shuffle;
} ram_checkpoint;

RAM_HIDDEN ram_status ram_checkpoint_save(const ram_checkpoint *c, const char *path,
                                          const void *user, size_t user_len);
/* Parse a verified checkpoint image and, only if all of it fits c, commit
 * it into c; `name` names the source in messages. */
RAM_HIDDEN ram_status ram_checkpoint_load(const ram_checkpoint *c, const unsigned char *data,
                                          size_t len, const char *name, void *user, size_t user_cap,
                                          size_t *user_len);

#endif
