/* DRAM's parts outside the gradient checks (check_model.c,
 * check_soft_model.c): the context's pooling, model files of DRAM models,
 * threaded states and training on them. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t lcg = 99;
static float urand(void) { /* [0, 1) */
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(lcg >> 40) / (float)(1 << 24);
}

/* Averages over whole cells; where the image is smaller than the square,
 * the pixel under each cell's centre. */
START_TEST(context_pooling) {
    /* 4 x 6, one channel, to 2 x 2: cells of 2 x 3 pixels */
    float img[24], out[4];
    for (int i = 0; i < 24; i++)
        img[i] = (float)i;
    ram_context_pool(ram_images_f32(img), 1, 4, 6, 2, 0, NULL, out);
    const float want[4] = {(0 + 1 + 2 + 6 + 7 + 8) / 6.0f, (3 + 4 + 5 + 9 + 10 + 11) / 6.0f,
                           (12 + 13 + 14 + 18 + 19 + 20) / 6.0f,
                           (15 + 16 + 17 + 21 + 22 + 23) / 6.0f};
    for (int k = 0; k < 4; k++)
        ck_assert_float_eq_tol(out[k], want[k], 1e-6f);
    /* 2 x 2, two channels, to 4 x 4: each pixel repeated over 2 x 2 cells */
    const float small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float up[32];
    ram_context_pool(ram_images_f32(small), 2, 2, 2, 4, 0, NULL, up);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                ck_assert_float_eq(up[(c * 4 + i) * 4 + j], small[(c * 2 + i / 2) * 2 + j / 2]);
}
END_TEST

/* cell_samples k: a cell wider or taller than k pixels is the mean of the
 * pixels at floor((2m + 1) len / 2k) of its rows and columns; bytes give the
 * bits of their floats b / 255.  13 x 17 to 3 x 3 (cells of 4-5 x 5-6). */
START_TEST(context_pooling_sampled) {
    enum { H = 13, W = 17, S = 3, K = 2 };
    float img[2 * H * W], out[2 * S * S], outb[2 * S * S];
    uint8_t bytes[2 * H * W];
    for (int i = 0; i < 2 * H * W; i++) {
        bytes[i] = (uint8_t)(urand() * 256.0f);
        img[i] = (float)bytes[i] / 255.0f;
    }
    ram_context_pool(ram_images_f32(img), 2, H, W, S, K, NULL, out);
    ram_context_pool((ram_images){.u8 = bytes}, 2, H, W, S, K, NULL, outb);
    ck_assert_mem_eq(out, outb, sizeof out);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) {
                const int r0 = i * H / S, r1 = (i + 1) * H / S, c0 = j * W / S,
                          c1 = (j + 1) * W / S;
                double sum = 0;
                for (int m = 0; m < K; m++)
                    for (int q = 0; q < K; q++)
                        sum += img[(c * H + r0 + (2 * m + 1) * (r1 - r0) / (2 * K)) * W + c0 +
                                   (2 * q + 1) * (c1 - c0) / (2 * K)];
                ck_assert_float_eq_tol(out[(c * S + i) * S + j], sum / (K * K), 1e-6f);
            }
    /* Cells no larger than k: every pixel, as without sampling. */
    float all[2 * S * S];
    ram_context_pool(ram_images_f32(img), 2, H, W, S, 0, NULL, all);
    ram_context_pool(ram_images_f32(img), 2, H, W, S, 6, NULL, out);
    ck_assert_mem_eq(out, all, sizeof out);
}
END_TEST

/* contrast: each pooled cell v as |v - m| / (4 sqrt(s^2 + 1e-4)), m and s^2
 * the channel's mean and variance over a grid of its pixels (here all of
 * them: 13 x 17 is smaller than the 32 x 32 grid); bytes as their floats. */
START_TEST(context_pooling_contrast) {
    enum { H = 13, W = 17, S = 3 };
    float img[2 * H * W], plain[2 * S * S], out[2 * S * S], outb[2 * S * S];
    uint8_t bytes[2 * H * W];
    for (int i = 0; i < 2 * H * W; i++) {
        bytes[i] = (uint8_t)(urand() * 256.0f);
        img[i] = (float)bytes[i] / 255.0f;
    }
    ram_context_pool(ram_images_f32(img), 2, H, W, S, 0, NULL, plain);
    float st[4], stb[4];
    ram_contrast_stats(ram_image_f32(img), 2, H, W, st);
    ram_contrast_stats((ram_image){bytes, true}, 2, H, W, stb);
    ck_assert_mem_eq(st, stb, sizeof st);
    ram_context_pool(ram_images_f32(img), 2, H, W, S, 0, st, out);
    ram_context_pool((ram_images){.u8 = bytes}, 2, H, W, S, 0, stb, outb);
    ck_assert_mem_eq(out, outb, sizeof out);
    for (int c = 0; c < 2; c++) {
        double sum = 0, sq = 0;
        for (int i = 0; i < H * W; i++)
            sum += img[c * H * W + i];
        const double mean = sum / (H * W);
        for (int i = 0; i < H * W; i++)
            sq += (img[c * H * W + i] - mean) * (img[c * H * W + i] - mean);
        const double gain = 0.25 / sqrt(sq / (H * W) + 1e-4);
        for (int v = 0; v < S * S; v++)
            ck_assert_float_eq_tol(out[c * S * S + v], fabs(plain[c * S * S + v] - mean) * gain,
                                   1e-5f);
    }
}
END_TEST

static ram_model *dram_model_s(int layers, ram_core_type upper, int context, int objects) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.height = 20;
    p.width = 24;
    p.glimpse.patch = 4;
    p.glimpse.depth = 2;
    p.form = RAM_GLIMPSE_MULTIPLICATIVE;
    p.glimpse_hidden = 16;
    p.loc_hidden = 8;
    p.glimpse_out = 20;
    p.core_hidden = 24;
    p.core = RAM_CORE_LSTM;
    p.core_layers = layers;
    p.upper_core = upper;
    p.context = context;
    p.glimpses = 4;
    p.objects = objects;
    p.classes = 5;
    p.init_scale = 0.3f;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

static ram_model *dram_model(int layers, ram_core_type upper, int context) {
    return dram_model_s(layers, upper, context, 1);
}

static float *random_images(int n, const ram_model *m) {
    const size_t size = (size_t)n * m->p.channels * m->p.height * m->p.width;
    float *x = malloc(sizeof(float) * size);
    for (size_t i = 0; i < size; i++)
        x[i] = urand();
    return x;
}

/* Has the file a chunk with this tag? */
static bool file_has(const char *path, uint32_t tag) {
    unsigned char *data;
    size_t len;
    ck_assert_int_eq(ram_file_read(path, &data, &len), RAM_OK);
    ram_reader r;
    const bool found = ram_file_find(data, len, tag, &r);
    free(data);
    return found;
}

/* A DRAM model comes back from its file as it was, and classifies the
 * same; a model without DRAM's core and context has no DRAM chunk. */
START_TEST(file_round_trip) {
    char path[] = "dram-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    const struct {
        int layers;
        ram_core_type upper;
        int context, objects;
    } cases[] = {{2, RAM_CORE_LSTM, 6, 1},
                 {2, RAM_CORE_RNN, 0, 1},
                 {1, RAM_CORE_RNN, 3, 1},
                 {1, 0, 0, 1},
                 {1, 0, 0, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ram_model *m = dram_model_s(cases[c].layers, cases[c].upper, cases[c].context,
                                    cases[c].objects),
                  *back;
        ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
        ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
        ram_model_params a, b;
        ram_model_params_init(&a);
        ram_model_params_init(&b);
        ram_model_get_params(m, &a);
        ram_model_get_params(back, &b);
        ck_assert(ram_model_same_arch(&a, &b));
        ck_assert_int_eq(b.core_layers, cases[c].layers);
        ck_assert_int_eq(b.context, cases[c].context);
        ck_assert_int_eq(b.objects, cases[c].objects);
        ck_assert_uint_eq(m->n_params, back->n_params);
        ck_assert_mem_eq(m->w, back->w, sizeof(float) * m->n_params);
        const bool dram = cases[c].layers == 2 || cases[c].context || cases[c].objects > 1;
        ck_assert_int_eq(file_has(path, RAM_TAG('D', 'R', 'A', 'M')), dram);
        float *x = random_images(3, m), pa[15], pb[15];
        ram_state *st;
        ck_assert_int_eq(ram_state_create(m, 3, &st), RAM_OK);
        ck_assert_int_eq(ram_model_classify(m, st, x, 3, NULL, pa, NULL), RAM_OK);
        ck_assert_int_eq(ram_model_classify(back, st, x, 3, NULL, pb, NULL), RAM_OK);
        ck_assert_mem_eq(pa, pb, sizeof pa);
        ram_state_free(st);
        free(x);
        ram_model_free(m);
        ram_model_free(back);
    }
    unlink(path);
}
END_TEST

/* A DRAM chunk that names values no model has, or that says nothing a
 * model without it would not, makes the file FORMAT. */
START_TEST(file_bad_dram_chunk) {
    ram_model *m = dram_model(2, RAM_CORE_RNN, 4);
    ram_buf b = {0};
    ram_file_begin(&b);
    ram_model_serialize(m, &b);
    /* the chunk's payload: after its tag, 4 reserved bytes and the length */
    unsigned char *at = NULL;
    for (size_t i = 0; i + 4 <= b.len; i++)
        if (!memcmp(b.data + i, "DRAM", 4)) at = b.data + i + 16;
    ck_assert_ptr_nonnull(at);
    const uint32_t bad[][3] = {{3, 0, 4}, {2, 7, 4}, {2, 0, 999}, {1, 0, 0}};
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        memcpy(at, bad[c], 12); /* the test runs on little-endian machines, as the format is */
        ram_model *back = NULL;
        ck_assert_int_eq(ram_model_deserialize(b.data, b.len, &back), RAM_ERR_FORMAT);
        ck_assert_ptr_null(back);
    }
    free(b.data);
    ram_model_free(m);
}
END_TEST

/* A state of two threads gives a state of one's bits for up to 8 images
 * (the layers split by rows, the context by images and rows). */
START_TEST(threaded_state_same_bits) {
    ram_model *m = dram_model(2, RAM_CORE_LSTM, 5);
    float *x = random_images(6, m);
    ram_state *one, *two;
    ck_assert_int_eq(ram_state_create(m, 6, &one), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(m, 6, 2, &two), RAM_OK);
    for (int n = 1; n <= 6; n += 5) {
        float pa[30], pb[30], la[48], lb[48];
        ck_assert_int_eq(ram_model_classify(m, one, x, n, NULL, pa, la), RAM_OK);
        ck_assert_int_eq(ram_model_classify(m, two, x, n, NULL, pb, lb), RAM_OK);
        ck_assert_mem_eq(pa, pb, sizeof(float) * n * 5);
        ck_assert_mem_eq(la, lb, sizeof(float) * n * 4 * 2);
    }
    ram_state_free(one);
    ram_state_free(two);
    free(x);
    ram_model_free(m);
}
END_TEST

/* Training a DRAM model: finite steps that lower the loss on a fixed
 * batch, and a NaN pixel anywhere refused (the context reads them all). */
START_TEST(training_steps) {
    ram_model *m = dram_model(2, RAM_CORE_RNN, 4);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 16;
    tp.threads = 2;
    tp.lr = 3e-3f;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    /* the class is the image's brightness, under noise */
    float *x = random_images(16, m);
    int labels[16];
    const size_t img = (size_t)m->p.height * m->p.width;
    for (int i = 0; i < 16; i++) {
        labels[i] = i % 5;
        for (size_t q = 0; q < img; q++)
            x[i * img + q] = 0.2f * labels[i] + 0.3f * x[i * img + q];
    }
    ram_train_stats first, last;
    for (int k = 0; k < 60; k++) {
        ck_assert_int_eq(ram_trainer_train_batch(t, x, labels, 16, k ? &last : &first), RAM_OK);
        ck_assert(isfinite(last.nll) || k == 0);
    }
    ck_assert_msg(last.nll < 0.8f * first.nll, "nll %g -> %g", (double)first.nll, (double)last.nll);
    x[5 * 20 * 24 + 3] = NAN; /* image 5, a corner no glimpse need read */
    ck_assert_int_eq(ram_trainer_train_batch(t, x, labels, 16, NULL), RAM_ERR_NUMERIC);
    ram_trainer_free(t);
    ram_policy_free(pol);
    free(x);
    ram_model_free(m);
}
END_TEST

static ram_trainer *make_trainer(ram_model *m, ram_reward_mode reward, ram_policy **pol) {
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.reward = reward;
    ck_assert_int_eq(ram_policy_create(&pp, m, pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 16;
    ram_trainer *t;
    ck_assert_int_eq(ram_trainer_create(m, *pol, &tp, &t), RAM_OK);
    return t;
}

/* With one object the _seq functions are the plain ones, bit for bit. */
START_TEST(one_object_seq_is_plain) {
    ram_model *a = dram_model(2, RAM_CORE_RNN, 4), *b = dram_model(2, RAM_CORE_RNN, 4);
    ram_policy *pa, *pb;
    ram_trainer *ta = make_trainer(a, RAM_REWARD_PER_OBJECT, &pa),
                *tb = make_trainer(b, RAM_REWARD_ALL_CORRECT, &pb);
    float *x = random_images(16, a);
    int labels[16];
    for (int i = 0; i < 16; i++)
        labels[i] = i % 5;
    for (int k = 0; k < 3; k++) {
        ram_train_stats sa, sb;
        ck_assert_int_eq(ram_trainer_train_batch(ta, x, labels, 16, &sa), RAM_OK);
        ck_assert_int_eq(ram_trainer_train_batch_seq(tb, x, labels, 16, &sb), RAM_OK);
        ck_assert_mem_eq(&sa, &sb, sizeof sa);
    }
    ck_assert_mem_eq(a->w, b->w, sizeof(float) * a->n_params);
    double ea, eb, ob;
    ck_assert_int_eq(ram_trainer_evaluate(ta, x, labels, 16, &ea), RAM_OK);
    ck_assert_int_eq(ram_trainer_evaluate_seq(tb, x, labels, 16, &eb, &ob), RAM_OK);
    ck_assert(ea == eb && eb == ob);
    ram_trainer_free(ta);
    ram_trainer_free(tb);
    ram_policy_free(pa);
    ram_policy_free(pb);
    free(x);
    ram_model_free(a);
    ram_model_free(b);
}
END_TEST

/* Two objects: the plain functions refuse the model; the _seq ones train
 * it in either reward mode, and evaluate as classify_seq() counts. */
START_TEST(two_objects) {
    for (int mode = 0; mode < 2; mode++) {
        ram_model *m = dram_model_s(2, RAM_CORE_LSTM, 4, 2);
        ram_model_params p;
        ram_model_params_init(&p);
        ram_model_get_params(m, &p);
        ck_assert_int_eq(p.emit_every, 2);
        ram_policy *pol;
        ram_trainer *t = make_trainer(m, (ram_reward_mode)mode, &pol);
        float *x = random_images(16, m);
        int labels[32];
        for (int i = 0; i < 32; i++)
            labels[i] = (i * 7) % 5;
        ram_train_stats st;
        double e, oe;
        ck_assert_int_eq(ram_trainer_train_batch(t, x, labels, 16, &st), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(ram_trainer_evaluate(t, x, labels, 16, &e), RAM_ERR_INVALID_ARGUMENT);
        /* ...and so do their byte forms, which have no _seq of their own. */
        const size_t px = (size_t)16 * p.channels * p.height * p.width;
        uint8_t *u8 = calloc(px, 1);
        const uint8_t *each[16];
        for (int i = 0; i < 16; i++)
            each[i] = u8 + px / 16 * (size_t)i;
        ck_assert_int_eq(ram_trainer_train_batch_u8(t, u8, labels, 16, &st),
                         RAM_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(ram_trainer_train_batch_u8_ptrs(t, each, labels, 16, &st),
                         RAM_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(ram_trainer_evaluate_u8(t, u8, labels, 16, &e), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(ram_trainer_evaluate_u8_ptrs(t, each, labels, 16, &e),
                         RAM_ERR_INVALID_ARGUMENT);
        free(u8);
        labels[31] = 5;
        ck_assert_int_eq(ram_trainer_train_batch_seq(t, x, labels, 16, &st),
                         RAM_ERR_INVALID_ARGUMENT);
        labels[31] = 4;
        for (int k = 0; k < 5; k++) {
            ck_assert_int_eq(ram_trainer_train_batch_seq(t, x, labels, 16, &st), RAM_OK);
            if (mode == RAM_REWARD_PER_OBJECT) /* the right labels per image */
                ck_assert_float_eq_tol(st.reward, 2 * st.accuracy, 1e-5f);
            else
                ck_assert(st.reward <= st.accuracy + 1e-6f);
        }
        ck_assert_int_eq(ram_trainer_evaluate_seq(t, x, labels, 16, &e, &oe), RAM_OK);
        ram_state *s;
        ck_assert_int_eq(ram_state_create(m, 16, &s), RAM_OK);
        int pred[32], last[16];
        ck_assert_int_eq(ram_model_classify_seq(m, s, x, 16, RAM_LOCS_MEAN, NULL, pred, NULL, NULL),
                         RAM_OK);
        ck_assert_int_eq(ram_model_classify(m, s, x, 16, last, NULL, NULL), RAM_OK);
        int images_wrong = 0, labels_wrong = 0;
        for (int i = 0; i < 16; i++) {
            const int w = (pred[2 * i] != labels[2 * i]) + (pred[2 * i + 1] != labels[2 * i + 1]);
            images_wrong += w > 0;
            labels_wrong += w;
            ck_assert_int_eq(last[i], pred[2 * i + 1]); /* classify: the last label */
        }
        ck_assert(e == images_wrong / 16.0 && oe == labels_wrong / 32.0);
        ram_state_free(s);
        ram_trainer_free(t);
        ram_policy_free(pol);
        free(x);
        ram_model_free(m);
    }
}
END_TEST

/* Objects and glimpses must agree. */
START_TEST(objects_must_divide) {
    ram_model_params p;
    ram_model_params_init(&p);
    ram_model *m = NULL;
    p.objects = 4; /* of 6 glimpses */
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_ERR_INVALID_ARGUMENT);
    p.objects = 2;
    p.emit_every = 2; /* 4 of 6 */
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_ERR_INVALID_ARGUMENT);
    p.emit_every = 3;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    ram_model_free(m);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.reward = (ram_reward_mode)2;
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_policy_create(&pp, NULL, &pol), RAM_ERR_INVALID_ARGUMENT);
}
END_TEST

/* A DRAM trainer's checkpoint resumes exactly; one of another DRAM
 * architecture is refused (MISMATCH). */
START_TEST(checkpoint_resumes) {
    char path[] = "dram-ckpt-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ram_model *a = dram_model_s(2, RAM_CORE_LSTM, 4, 2), *b = dram_model_s(2, RAM_CORE_LSTM, 4, 2);
    ram_policy *pa, *pb;
    ram_trainer *ta = make_trainer(a, RAM_REWARD_PER_OBJECT, &pa),
                *tb = make_trainer(b, RAM_REWARD_PER_OBJECT, &pb);
    float *x = random_images(16, a);
    int labels[32];
    for (int i = 0; i < 32; i++)
        labels[i] = (i * 3) % 5;
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(ram_trainer_train_batch_seq(ta, x, labels, 16, NULL), RAM_OK);
    ck_assert_int_eq(ram_trainer_save_checkpoint(ta, path, NULL, 0), RAM_OK);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(ram_trainer_train_batch_seq(ta, x, labels, 16, NULL), RAM_OK);
    ck_assert_int_eq(ram_trainer_load_checkpoint(tb, path, NULL, 0, NULL), RAM_OK);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(ram_trainer_train_batch_seq(tb, x, labels, 16, NULL), RAM_OK);
    ck_assert_mem_eq(a->w, b->w, sizeof(float) * a->n_params);
    ram_model *c = dram_model_s(2, RAM_CORE_RNN, 4, 2);
    ram_policy *pc;
    ram_trainer *tc = make_trainer(c, RAM_REWARD_PER_OBJECT, &pc);
    ck_assert_int_eq(ram_trainer_load_checkpoint(tc, path, NULL, 0, NULL), RAM_ERR_MISMATCH);
    ram_trainer_free(tc);
    ram_policy_free(pc);
    ram_model_free(c);
    ram_trainer_free(ta);
    ram_trainer_free(tb);
    ram_policy_free(pa);
    ram_policy_free(pb);
    free(x);
    ram_model_free(a);
    ram_model_free(b);
    unlink(path);
}
END_TEST

/* Out-of-range DRAM fields are refused with a message. */
START_TEST(bad_params) {
    ram_model_params p;
    ram_model *m = NULL;
    const struct {
        int layers, upper, context;
    } bad[] = {{0, 0, 0}, {3, 0, 0}, {2, 2, 0}, {1, 0, -1}, {1, 0, 257}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ram_model_params_init(&p);
        p.core_layers = bad[i].layers;
        p.upper_core = (ram_core_type)bad[i].upper;
        p.context = bad[i].context;
        ck_assert_int_eq(ram_model_create(&p, &m), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_null(m);
        ck_assert(strlen(ram_last_error()) > 0);
    }
    ram_model_params_init(&p);
    p.form = (ram_glimpse_form)3;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_ERR_INVALID_ARGUMENT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("dram");
    TCase *tc = tcase_create("dram");
    tcase_add_test(tc, context_pooling);
    tcase_add_test(tc, context_pooling_sampled);
    tcase_add_test(tc, context_pooling_contrast);
    tcase_add_test(tc, file_round_trip);
    tcase_add_test(tc, file_bad_dram_chunk);
    tcase_add_test(tc, threaded_state_same_bits);
    tcase_add_test(tc, training_steps);
    tcase_add_test(tc, one_object_seq_is_plain);
    tcase_add_test(tc, two_objects);
    tcase_add_test(tc, objects_must_divide);
    tcase_add_test(tc, checkpoint_resumes);
    tcase_add_test(tc, bad_params);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
