/* 8-bit images: every _u8 and _u8_ptrs function gives the very bits its
 * float twin gives on the same pixels as (float)byte / 255.0f, for the hard
 * and the soft sensor (glimpses, classification, training steps down to the
 * checkpoint's bytes, evaluation), and refuses bad input as the float
 * functions do. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t lcg_state = 12345;
static uint32_t lcg_u32(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

/* n random byte images of `pixels` each and the same as floats, converted
 * as the tools do: (float)b / 255.0f, at run time. */
static void make_images(size_t n, size_t pixels, uint8_t **bytes, float **floats) {
    *bytes = malloc(n * pixels);
    *floats = malloc(sizeof(float) * n * pixels);
    ck_assert(*bytes && *floats);
    for (size_t i = 0; i < n * pixels; i++) {
        /* Runs of equal bytes and some zeros, as in real images. */
        const uint32_t r = lcg_u32();
        (*bytes)[i] = r % 7 == 0 ? 0 : (uint8_t)(r >> 8);
        (*floats)[i] = (float)(*bytes)[i] / 255.0f;
    }
}

START_TEST(table_is_the_division) {
    volatile float divisor = 255.0f; /* the division made now, not folded */
    for (int b = 0; b < 256; b++) {
        const float want = (float)b / divisor;
        ck_assert_msg(memcmp(&ram_byte_value[b], &want, sizeof want) == 0, "byte %d: %a, not %a", b,
                      (double)ram_byte_value[b], (double)want);
    }
}
END_TEST

/* Glimpse shapes: a patch that divides the scales, one that does not, one
 * pixel per cell (side == patch), and a large image (prefetched). */
static const struct {
    int patch, depth;
    float scale;
    int c, h, w;
} shapes[] = {
    {8, 3, 2.0f, 1, 28, 28},
    {5, 2, 1.7f, 3, 20, 31},
    {4, 1, 1.0f, 2, 9, 9},
    {8, 3, 2.0f, 3, 160, 150},
};

START_TEST(extract_same_bits) {
    const int s = _i % 4;
    const ram_sensor sensor = _i < 4 ? RAM_SENSOR_HARD : RAM_SENSOR_SOFT;
    ram_glimpse_params p;
    ram_glimpse_params_init(&p);
    p.patch = shapes[s].patch;
    p.depth = shapes[s].depth;
    p.scale = shapes[s].scale;
    ram_glimpse *g;
    ck_assert_int_eq(ram_glimpse_create_sensor(&p, sensor, &g), RAM_OK);
    const int n = 9, c = shapes[s].c, h = shapes[s].h, w = shapes[s].w;
    uint8_t *bytes;
    float *floats;
    make_images(n, (size_t)c * h * w, &bytes, &floats);
    /* Inside, on the edges, partly and wholly outside the image. */
    const float locs[] = {0,    0,    -1,   -1, 1, 1,      0.33f, -0.71f, -1.2f,
                          0.4f, 0.9f, 1.3f, 3,  3, -0.05f, 0.95f, 0.5f,   0.5f};
    const size_t len = (size_t)n * ram_glimpse_size(g, c);
    float *a = malloc(sizeof(float) * len), *b = malloc(sizeof(float) * len);
    ck_assert_int_eq(ram_glimpse_extract(g, floats, n, c, h, w, locs, a, len), RAM_OK);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, n, c, h, w, locs, b, len), RAM_OK);
    ck_assert_msg(memcmp(a, b, sizeof(float) * len) == 0, "shape %d sensor %d differs", s,
                  (int)sensor);
    if (sensor == RAM_SENSOR_SOFT) { /* the sampler's gradient reads bytes too */
        float dout[4096], da[3], db[3];
        const size_t per = ram_glimpse_size(g, c);
        ck_assert_uint_le(per, sizeof dout / sizeof *dout);
        for (size_t k = 0; k < per; k++)
            dout[k] = (float)(lcg_u32() % 1000) / 500.0f - 1.0f;
        for (int i = 0; i < n; i++) {
            const size_t px = (size_t)c * h * w;
            ram_glimpse_soft_backward(g, ram_image_f32(floats + i * px), c, h, w, locs[2 * i],
                                      locs[2 * i + 1], dout, &da[0], &da[1], &da[2]);
            ram_glimpse_soft_backward(g, (ram_image){bytes + i * px, true}, c, h, w, locs[2 * i],
                                      locs[2 * i + 1], dout, &db[0], &db[1], &db[2]);
            ck_assert(memcmp(da, db, sizeof da) == 0);
        }
    }
    free(a);
    free(b);
    free(bytes);
    free(floats);
    ram_glimpse_free(g);
}
END_TEST

/* A small model, hard or soft, of 2-channel 24 x 20 images; with `dram`,
 * DRAM's parts too (the context network pools the whole image, the one
 * other place that reads every pixel). */
enum { C = 2, H = 24, W = 20, PIX = C * H * W, K = 3, NB = 12 };

static ram_model *small_model(ram_sensor sensor, uint64_t seed, bool dram) {
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.channels = C;
    mp.height = H;
    mp.width = W;
    mp.glimpse.patch = 4;
    mp.glimpse.depth = 2;
    mp.glimpse_hidden = mp.loc_hidden = 8;
    mp.glimpse_out = mp.core_hidden = 16;
    mp.glimpses = 3;
    mp.classes = K;
    mp.sensor = sensor;
    mp.seed = seed;
    if (dram) {
        mp.context = 4;
        mp.core_layers = 2;
        mp.form = RAM_GLIMPSE_MULTIPLICATIVE;
    }
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&mp, &m), RAM_OK);
    return m;
}

START_TEST(classify_same_bits) {
    const ram_sensor sensor = _i & 1 ? RAM_SENSOR_SOFT : RAM_SENSOR_HARD;
    const int threads = _i & 2 ? 2 : 1;
    ram_model *m = small_model(sensor, 3, _i & 4);
    ram_state *st;
    ck_assert_int_eq(ram_state_create_threads(m, NB, threads, &st), RAM_OK);
    uint8_t *bytes;
    float *floats;
    make_images(NB, PIX, &bytes, &floats);
    int la[NB], lb[NB];
    float pa[NB * K], pb[NB * K], wa[NB * 3 * 2], wb[NB * 3 * 2];
    for (int n = 1; n <= NB; n += NB - 1) { /* one image and a batch */
        ck_assert_int_eq(ram_model_classify(m, st, floats, n, la, pa, wa), RAM_OK);
        ck_assert_int_eq(ram_model_classify_u8(m, st, bytes, n, lb, pb, wb), RAM_OK);
        ck_assert(memcmp(la, lb, sizeof(int) * n) == 0);
        ck_assert(memcmp(pa, pb, sizeof(float) * n * K) == 0);
        ck_assert(memcmp(wa, wb, sizeof(float) * n * 6) == 0);
    }
    /* Sampled locations: two policies from the same seed. */
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = 9;
    ram_policy *p1, *p2;
    ck_assert_int_eq(ram_policy_create(&pp, m, &p1), RAM_OK);
    ck_assert_int_eq(ram_policy_create(&pp, m, &p2), RAM_OK);
    ck_assert_int_eq(ram_model_classify_ex(m, st, floats, NB, RAM_LOCS_SAMPLED, p1, la, pa, wa),
                     RAM_OK);
    ck_assert_int_eq(ram_model_classify_ex_u8(m, st, bytes, NB, RAM_LOCS_SAMPLED, p2, lb, pb, wb),
                     RAM_OK);
    ck_assert(memcmp(pa, pb, sizeof pa) == 0);
    ck_assert(memcmp(wa, wb, sizeof wa) == 0);
    ram_policy_free(p1);
    ram_policy_free(p2);
    ram_state_free(st);
    ram_model_free(m);
    free(bytes);
    free(floats);
}
END_TEST

/* A file's bytes (malloc'd) and length. */
static unsigned char *slurp(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    unsigned char *d = malloc(*len);
    ck_assert_int_eq(fread(d, 1, *len, f), (size_t)*len);
    fclose(f);
    return d;
}

typedef struct run {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
} run;

static void make_run(run *r, ram_sensor sensor, ram_soft_training how, int threads, bool dram) {
    r->m = small_model(sensor, 5, dram);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = 6;
    pp.soft_training = how;
    ck_assert_int_eq(ram_policy_create(&pp, r->m, &r->pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = NB;
    tp.threads = threads;
    tp.lr = 0.01f;
    ck_assert_int_eq(ram_trainer_create(r->m, r->pol, &tp, &r->t), RAM_OK);
}

static void free_run(run *r) {
    ram_trainer_free(r->t);
    ram_policy_free(r->pol);
    ram_model_free(r->m);
}

/* Three trainers from the same seeds: r[0] on floats, r[1] and r[2] on
 * the same images as bytes, then r[0] on a gathered batch of floats and the
 * other two on pointers to those images' bytes.  After a few steps their
 * checkpoints (weights, optimizer state, RNG) are the same bytes, and so
 * are their evaluations. */
START_TEST(training_same_bytes) {
    static const struct {
        ram_sensor sensor;
        ram_soft_training how;
        int threads;
        bool dram;
    } cases[] = {{RAM_SENSOR_HARD, RAM_SOFT_BACKPROP, 1, false},
                 {RAM_SENSOR_HARD, RAM_SOFT_BACKPROP, 2, false},
                 {RAM_SENSOR_SOFT, RAM_SOFT_BACKPROP, 1, false},
                 {RAM_SENSOR_SOFT, RAM_SOFT_HYBRID, 2, false},
                 {RAM_SENSOR_HARD, RAM_SOFT_BACKPROP, 2, true}};
    run r[3];
    for (int k = 0; k < 3; k++)
        make_run(&r[k], cases[_i].sensor, cases[_i].how, cases[_i].threads, cases[_i].dram);
    enum { SET = 3 * NB };
    uint8_t *bytes;
    float *floats;
    make_images(SET, PIX, &bytes, &floats);
    int labels[SET];
    for (int i = 0; i < SET; i++)
        labels[i] = (int)(lcg_u32() % K);
    float *gathered = malloc(sizeof(float) * NB * PIX);
    const uint8_t *ptrs[NB];
    int shuffled[NB];
    for (int step = 0; step < 4; step++) {
        const int first = step % 3 * NB;
        ram_train_stats sa, sb, sc;
        ck_assert_int_eq(
            ram_trainer_train_batch(r[0].t, floats + (size_t)first * PIX, labels + first, NB, &sa),
            RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch_u8(r[1].t, bytes + (size_t)first * PIX,
                                                    labels + first, NB, &sb),
                         RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch_u8(r[2].t, bytes + (size_t)first * PIX,
                                                    labels + first, NB, &sc),
                         RAM_OK);
        ck_assert(memcmp(&sa, &sb, sizeof sa) == 0);
        ck_assert(memcmp(&sa, &sc, sizeof sa) == 0);
        /* Then a batch from anywhere in the set: gathered as floats for
         * r[0], pointed at for the others. */
        for (int i = 0; i < NB; i++) {
            const int at = (int)(lcg_u32() % SET);
            ptrs[i] = bytes + (size_t)at * PIX;
            memcpy(gathered + (size_t)i * PIX, floats + (size_t)at * PIX, sizeof(float) * PIX);
            shuffled[i] = labels[at];
        }
        ck_assert_int_eq(ram_trainer_train_batch(r[0].t, gathered, shuffled, NB, &sa), RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(r[1].t, ptrs, shuffled, NB, &sb), RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(r[2].t, ptrs, shuffled, NB, &sc), RAM_OK);
        ck_assert(memcmp(&sa, &sb, sizeof sa) == 0);
        ck_assert(memcmp(&sa, &sc, sizeof sa) == 0);
    }
    char path[3][64];
    unsigned char *file[3];
    long len[3];
    for (int k = 0; k < 3; k++) {
        snprintf(path[k], sizeof path[k], "check_bytes_%d_%d.ckpt", (int)getpid(), k);
        ck_assert_int_eq(ram_trainer_save_checkpoint(r[k].t, path[k], NULL, 0), RAM_OK);
        file[k] = slurp(path[k], &len[k]);
        unlink(path[k]);
    }
    for (int k = 1; k < 3; k++) {
        ck_assert_int_eq(len[k], len[0]);
        ck_assert_msg(memcmp(file[k], file[0], len[0]) == 0, "case %d: checkpoint %d differs", _i,
                      k);
    }
    double ea, eb, ec;
    ck_assert_int_eq(ram_trainer_evaluate(r[0].t, floats, labels, SET, &ea), RAM_OK);
    ck_assert_int_eq(ram_trainer_evaluate_u8(r[0].t, bytes, labels, SET, &eb), RAM_OK);
    const uint8_t *all[SET];
    for (int i = 0; i < SET; i++)
        all[i] = bytes + (size_t)i * PIX;
    ck_assert_int_eq(ram_trainer_evaluate_u8_ptrs(r[0].t, all, labels, SET, &ec), RAM_OK);
    ck_assert(ea == eb && ea == ec);
    for (int k = 0; k < 3; k++) {
        free(file[k]);
        free_run(&r[k]);
    }
    free(gathered);
    free(bytes);
    free(floats);
}
END_TEST

START_TEST(bad_input) {
    run r;
    make_run(&r, RAM_SENSOR_HARD, RAM_SOFT_BACKPROP, 1, false);
    uint8_t *bytes;
    float *floats;
    make_images(NB, PIX, &bytes, &floats);
    int labels[NB] = {0};
    const uint8_t *ptrs[NB];
    for (int i = 0; i < NB; i++)
        ptrs[i] = bytes + (size_t)i * PIX;
    ram_train_stats s;
    double e;
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, NULL, labels, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "train_batch_u8"));
    ck_assert_int_eq(ram_trainer_train_batch_u8(NULL, bytes, labels, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, bytes, NULL, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, bytes, labels, 0, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, bytes, labels, -3, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, bytes, labels, NB + 1, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    labels[3] = K;
    ck_assert_int_eq(ram_trainer_train_batch_u8(r.t, bytes, labels, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_evaluate_u8(r.t, bytes, labels, NB, &e), RAM_ERR_INVALID_ARGUMENT);
    labels[3] = 0;
    ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(r.t, NULL, labels, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ptrs[5] = NULL;
    ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(r.t, ptrs, labels, NB, &s),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "NULL image pointer"));
    ck_assert_int_eq(ram_trainer_evaluate_u8_ptrs(r.t, ptrs, labels, NB, &e),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(r.t, ptrs, labels, 5, &s), RAM_OK);
    ck_assert_int_eq(ram_trainer_evaluate_u8(r.t, bytes, labels, NB, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_evaluate_u8(r.t, NULL, labels, NB, &e), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_trainer_evaluate_u8(r.t, bytes, labels, 0, &e), RAM_ERR_INVALID_ARGUMENT);

    ram_state *st;
    ck_assert_int_eq(ram_state_create(r.m, NB, &st), RAM_OK);
    int out[NB];
    ck_assert_int_eq(ram_model_classify_u8(r.m, st, NULL, NB, out, NULL, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_u8(NULL, st, bytes, NB, out, NULL, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_u8(r.m, NULL, bytes, NB, out, NULL, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_u8(r.m, st, bytes, 0, out, NULL, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_classify_u8(r.m, st, bytes, NB + 1, out, NULL, NULL),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(
        ram_model_classify_ex_u8(r.m, st, bytes, NB, RAM_LOCS_SAMPLED, NULL, out, NULL, NULL),
        RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(
        ram_model_classify_ex_u8(r.m, st, bytes, NB, (ram_loc_source)9, NULL, out, NULL, NULL),
        RAM_ERR_INVALID_ARGUMENT);

    ram_glimpse *g;
    ram_glimpse_params gp;
    ram_glimpse_params_init(&gp);
    ck_assert_int_eq(ram_glimpse_create(&gp, &g), RAM_OK);
    const float locs[2] = {0, 0}, nan_locs[2] = {0, NAN};
    float glimpse[64];
    ck_assert_int_eq(ram_glimpse_extract_u8(g, NULL, 1, 1, 8, 8, locs, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "glimpse_extract_u8"));
    ck_assert_int_eq(ram_glimpse_extract_u8(NULL, bytes, 1, 1, 8, 8, locs, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, 8, 8, NULL, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, 8, 8, locs, NULL, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 0, 1, 8, 8, locs, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 0, 8, 8, locs, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, -8, 8, locs, glimpse, 64),
                     RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(
        ram_glimpse_extract_u8(g, bytes, 1 << 30, 1 << 30, 1 << 30, 8, locs, glimpse, 64),
        RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, 8, 8, locs, glimpse, 63),
                     RAM_ERR_BUFFER_TOO_SMALL);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, 8, 8, nan_locs, glimpse, 64),
                     RAM_ERR_NUMERIC);
    ck_assert_int_eq(ram_glimpse_extract_u8(g, bytes, 1, 1, 8, 8, locs, glimpse, 64), RAM_OK);
    ram_glimpse_free(g);
    ram_state_free(st);
    free_run(&r);
    free(bytes);
    free(floats);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("bytes");
    TCase *tc = tcase_create("bytes");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, table_is_the_division);
    tcase_add_loop_test(tc, extract_same_bits, 0, 8);
    tcase_add_loop_test(tc, classify_same_bits, 0, 8);
    tcase_add_loop_test(tc, training_same_bytes, 0, 5);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return run_suite(suite());
}
