/* Model and checkpoint files: exact round trips, and every damaged, foreign
 * or hostile file rejected with the right status and a message, never
 * accepted and never a crash.  Layout (lib/serialize.c): magic[8], u32
 * version, u32 kind, chunks {u32 tag, u32 0, u64 len, payload}, and a final
 * 'END ' chunk holding the CRC-32 of everything before it. */
#define _XOPEN_SOURCE 700
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- scratch directories: one per run, made and removed by main(), and
 * one inside it per test (each test runs in its own process) ---- */

static char run_dir[64], dir[128];
static char ctx[128]; /* what a loop is doing, for failure messages */

static void make_dir(void) {
    snprintf(dir, sizeof dir, "%s/test-XXXXXX", run_dir);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ctx[0] = '\0';
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void remove_dir(void) {
    if (dir[0]) nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    dir[0] = '\0';
}

/* A path in the scratch directory, from a small ring of buffers: hold on to
 * it only for a few calls (copy it with PATH() for longer). */
static const char *in_dir(const char *name) {
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

#define PATH(var, name)                                                                            \
    char var[256];                                                                                 \
    snprintf(var, sizeof var, "%s/%s", dir, name)

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc(n > 0 ? (size_t)n : 1);
    ck_assert_uint_eq(fread(d, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return d;
}

static void write_file(const char *path, const void *data, size_t len) {
    /* A fresh file each time: ext4 flushes a file rewritten through
     * truncation on close, which would make thousands of writes slow. */
    unlink(path);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    if (len) ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* Recompute the END chunk's CRC after editing a file in memory. */
static void fix_crc(unsigned char *d, size_t len) {
    put_u32(d + len - 4, ram_crc32(d, len - 20));
}

/* Load `path` expecting failure `want`; the out-pointer must stay as it
 * was and a message must be left. */
static ram_status load_fails(const char *path) {
    ram_model *sentinel = (ram_model *)&dir, *m = sentinel;
    ram_clear_error();
    ram_status s = ram_model_load(path, &m);
    ck_assert_msg(s != RAM_OK, "%s was accepted (%s)", path, ctx);
    ck_assert_ptr_eq(m, sentinel);
    ck_assert_str_ne(ram_last_error(), "");
    return s;
}

/* ---- models ---- */

static uint32_t lcg_state;
static float lcg_uniform(void) {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) * (1.0f / 16777216.0f);
}

static void small_params(ram_model_params *p, ram_core_type core, ram_glimpse_form form) {
    ram_model_params_init(p);
    p->height = 12;
    p->width = 10;
    p->channels = 2;
    p->glimpse.patch = 4;
    p->glimpse.depth = 2;
    p->glimpse_hidden = 8;
    p->loc_hidden = 6;
    p->glimpse_out = 8;
    p->core_hidden = 8;
    p->glimpses = 3;
    p->classes = 4;
    p->core = core;
    p->form = form;
    /* Non-defaults, so a round trip that drops them is caught. */
    p->bound = RAM_BOUND_HARDTANH;
    p->loc_std = 0.31f;
    p->loc_range_pixels = 3.5f;
    p->init_scale = 0.4f;
    p->seed = 0x123456789abcULL;
}

static ram_model *small_model(ram_core_type core, ram_glimpse_form form) {
    ram_model_params p;
    small_params(&p, core, form);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    return m;
}

/* A saved small model: its bytes and path. */
static unsigned char *saved_model(const char *name, size_t *len) {
    ram_model *m = small_model(RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    ck_assert_int_eq(ram_model_save(m, in_dir(name)), RAM_OK);
    ram_model_free(m);
    return read_file(in_dir(name), len);
}

/* ---- round trips ---- */

START_TEST(test_roundtrip) {
    make_dir();
    const int core = _i / 2, form = _i % 2;
    ram_model *a = small_model((ram_core_type)core, (ram_glimpse_form)form);
    ram_model *b = NULL;
    ck_assert_int_eq(ram_model_save(a, in_dir("m.ram")), RAM_OK);
    ck_assert_int_eq(ram_model_load(in_dir("m.ram"), &b), RAM_OK);

    ck_assert_uint_eq(ram_model_param_count(a), ram_model_param_count(b));
    ck_assert_mem_eq(a->w, b->w, sizeof(float) * a->n_params);
    ram_model_params pa, pb;
    ram_model_params_init(&pa);
    ram_model_params_init(&pb);
    ck_assert_int_eq(ram_model_get_params(a, &pa), RAM_OK);
    ck_assert_int_eq(ram_model_get_params(b, &pb), RAM_OK);
    ck_assert_int_eq(pb.core, core);
    ck_assert_int_eq(pb.form, form);
    ck_assert_int_eq(pb.bound, RAM_BOUND_HARDTANH);
    ck_assert_int_eq(pb.channels, 2);
    ck_assert_int_eq(pb.height, 12);
    ck_assert_int_eq(pb.width, 10);
    ck_assert_int_eq(pb.glimpse.depth, 2);
    ck_assert_float_eq(pb.glimpse.scale, pa.glimpse.scale);
    ck_assert_int_eq(pb.loc_hidden, 6);
    ck_assert_float_eq(pb.loc_std, 0.31f);
    ck_assert_float_eq(pb.loc_range_pixels, 3.5f);
    ck_assert_float_eq(pb.init_scale, 0.4f);
    ck_assert(pb.seed == 0x123456789abcULL);

    /* The loaded model computes exactly what the saved one did. */
    enum { N = 6 };
    const int K = 4, T = 3;
    lcg_state = 9;
    float img[N * 2 * 12 * 10];
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = lcg_uniform();
    float pra[N * 4], prb[N * 4], la[N * 3 * 2], lb[N * 3 * 2];
    int ya[N], yb[N];
    ram_state *sa, *sb;
    ck_assert_int_eq(ram_state_create(a, N, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(b, N, &sb), RAM_OK);
    ck_assert_int_eq(ram_model_classify(a, sa, img, N, ya, pra, la), RAM_OK);
    ck_assert_int_eq(ram_model_classify(b, sb, img, N, yb, prb, lb), RAM_OK);
    ck_assert_mem_eq(pra, prb, sizeof(float) * N * K);
    ck_assert_mem_eq(la, lb, sizeof(float) * N * T * 2);
    ck_assert_mem_eq(ya, yb, sizeof ya);

    /* Saving the loaded model reproduces the file byte for byte. */
    ck_assert_int_eq(ram_model_save(b, in_dir("m2.ram")), RAM_OK);
    size_t l1, l2;
    unsigned char *d1 = read_file(in_dir("m.ram"), &l1), *d2 = read_file(in_dir("m2.ram"), &l2);
    ck_assert_uint_eq(l1, l2);
    ck_assert_mem_eq(d1, d2, l1);
    free(d1), free(d2);
    ram_state_free(sa), ram_state_free(sb);
    ram_model_free(a), ram_model_free(b);
    remove_dir();
}
END_TEST

START_TEST(test_null_arguments) {
    make_dir();
    ram_model *m = small_model(RAM_CORE_RNN, RAM_GLIMPSE_CONCAT);
    ram_clear_error();
    ck_assert_int_eq(ram_model_save(NULL, in_dir("x")), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_int_eq(ram_model_save(m, NULL), RAM_ERR_INVALID_ARGUMENT);
    ram_model *out = NULL;
    ck_assert_int_eq(ram_model_load(NULL, &out), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_load(in_dir("x"), NULL), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out);
    ram_model_free(m);
    remove_dir();
}
END_TEST

/* ---- damaged files ---- */

START_TEST(test_truncated_everywhere) {
    make_dir();
    size_t len;
    unsigned char *d = saved_model("full.ram", &len);
    ck_assert_uint_gt(len, 500);
    PATH(cut, "cut.ram");
    for (size_t n = 0; n < len; n++) {
        snprintf(ctx, sizeof ctx, "cut at %zu of %zu", n, len);
        write_file(cut, d, n);
        ram_status s = load_fails(cut);
        ck_assert_msg(s == RAM_ERR_CORRUPT || s == RAM_ERR_FORMAT,
                      "cut at %zu of %zu: status %d (%s)", n, len, s, ram_last_error());
        /* Anything that starts like a libram file is truncated, not foreign. */
        if (n > 0) ck_assert_msg(s == RAM_ERR_CORRUPT, "cut at %zu: status %d", n, s);
    }
    printf("serialize: a %zu-byte model cut at every length: %zu cases refused\n", len, len);
    /* A trailing extra byte is damage too. */
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, d, len);
    longer[len] = 0;
    write_file(cut, longer, len + 1);
    ck_assert_int_eq(load_fails(cut), RAM_ERR_CORRUPT);
    free(longer);
    free(d);
    remove_dir();
}
END_TEST

START_TEST(test_every_byte_flipped) {
    make_dir();
    size_t len;
    unsigned char *d = saved_model("full.ram", &len);
    PATH(bad, "bad.ram");
    const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < len; i++) {
        unsigned char keep = d[i];
        d[i] ^= masks[i % 3];
        snprintf(ctx, sizeof ctx, "byte %zu of %zu xor %02x", i, len, masks[i % 3]);
        write_file(bad, d, len);
        d[i] = keep;
        ram_status s = load_fails(bad);
        /* magic -> not ours; version -> VERSION; anything else -> CRC (or a
         * chunk length that no longer fits) */
        ram_status want = i < 8 ? RAM_ERR_FORMAT : i < 12 ? RAM_ERR_VERSION : RAM_ERR_CORRUPT;
        ck_assert_msg(s == want, "byte %zu of %zu flipped: status %d, expected %d (%s)", i, len, s,
                      want, ram_last_error());
    }
    printf("serialize: a %zu-byte model with each byte damaged: %zu cases refused\n", len, len);
    free(d);
    remove_dir();
}
END_TEST

/* ---- foreign files ---- */

START_TEST(test_foreign_files) {
    make_dir();
    const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0,    0,    0,
                                 13,   'I', 'H', 'D', 'R',  0,    0,    0,    1,    0,    0,
                                 0,    1,   8,   0,   0,    0,    0,    0x3a, 0x7e, 0x9b, 0x55};
    write_file(in_dir("a.png"), png, sizeof png);
    ck_assert_int_eq(load_fails(in_dir("a.png")), RAM_ERR_FORMAT);

    const char text[] = "This is not a model.\nIt is a text file of some length, really.\n";
    write_file(in_dir("a.txt"), text, sizeof text - 1);
    ck_assert_int_eq(load_fails(in_dir("a.txt")), RAM_ERR_FORMAT);

    /* An MNIST IDX image file: magic 0x00000803, 1 image of 28 x 28. */
    unsigned char idx[16 + 784] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 28, 0, 0, 0, 28};
    for (int i = 16; i < 16 + 784; i++)
        idx[i] = (unsigned char)(i * 7);
    write_file(in_dir("a.idx"), idx, sizeof idx);
    ck_assert_int_eq(load_fails(in_dir("a.idx")), RAM_ERR_FORMAT);

    write_file(in_dir("empty"), "", 0);
    ck_assert_int_eq(load_fails(in_dir("empty")), RAM_ERR_FORMAT);

    ram_status s = load_fails(dir); /* a directory */
    ck_assert_msg(s == RAM_ERR_IO || s == RAM_ERR_FORMAT, "directory: status %d", s);
    ck_assert_int_eq(load_fails(in_dir("does-not-exist.ram")), RAM_ERR_IO);

    /* The right magic followed by junk. */
    unsigned char junk[300];
    size_t len;
    unsigned char *d = saved_model("m.ram", &len);
    memcpy(junk, d, 16);
    for (size_t i = 16; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 13 + 5);
    write_file(in_dir("junk.ram"), junk, sizeof junk);
    ck_assert_int_eq(load_fails(in_dir("junk.ram")), RAM_ERR_CORRUPT);
    free(d);

    /* A valid container without the model chunks. */
    ram_buf b = {0};
    ram_file_begin(&b);
    ck_assert_int_eq(ram_file_finish_and_write(&b, in_dir("nochunks.ram")), RAM_OK);
    ck_assert_int_eq(load_fails(in_dir("nochunks.ram")), RAM_ERR_FORMAT);
    remove_dir();
}
END_TEST

START_TEST(test_future_version) {
    make_dir();
    size_t len;
    unsigned char *d = saved_model("m.ram", &len);
    const uint32_t versions[] = {2, 0, 0xffffffffu};
    for (int i = 0; i < 3; i++) {
        put_u32(d + 8, versions[i]);
        fix_crc(d, len);
        write_file(in_dir("v.ram"), d, len);
        ck_assert_int_eq(load_fails(in_dir("v.ram")), RAM_ERR_VERSION);
    }
    /* Control: version 1 with the recomputed CRC loads, so the edits above
     * were rejected for the version alone. */
    put_u32(d + 8, 1);
    fix_crc(d, len);
    write_file(in_dir("v.ram"), d, len);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_load(in_dir("v.ram"), &m), RAM_OK);
    ram_model_free(m);
    free(d);
    remove_dir();
}
END_TEST

/* Cap the address space (when no sanitizer reserves huge shadow memory) so
 * that an attempt to allocate what a hostile header claims would fail
 * loudly instead of quietly succeeding through overcommit. */
static struct rlimit saved_limit;
static int limited;

static void limit_memory(void) {
#if defined(__SANITIZE_ADDRESS__)
    return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return;
#endif
#endif
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f) return;
    if (fscanf(f, "%lu", &pages) != 1) pages = 0;
    fclose(f);
    if (!pages) return;
    if (getrlimit(RLIMIT_AS, &saved_limit) != 0) return;
    struct rlimit rl = saved_limit;
    rl.rlim_cur = (rlim_t)pages * sysconf(_SC_PAGESIZE) + (512UL << 20);
    if (saved_limit.rlim_cur != RLIM_INFINITY && saved_limit.rlim_cur < rl.rlim_cur) return;
    limited = setrlimit(RLIMIT_AS, &rl) == 0;
}

/* Lift the cap again (matters when CK_FORK=no runs every test in one process). */
static void unlimit_memory(void) {
    if (limited) setrlimit(RLIMIT_AS, &saved_limit);
    limited = 0;
}

/* Write a model file whose ARCH says `p` and whose tensor table matches
 * that architecture, but which holds only `nfloats` weights. */
static void write_claimed_model(const char *path, const ram_model_params *p, size_t nfloats) {
    static struct ram_model layout;
    ram_model_layout(&layout, p);
    ram_buf file = {0}, c = {0};
    ram_file_begin(&file);
    const uint32_t ints[] = {p->channels, p->height, p->width, p->glimpse.patch, p->glimpse.depth};
    for (int i = 0; i < 5; i++)
        ram_buf_u32(&c, ints[i]);
    ram_buf_f32(&c, p->glimpse.scale);
    const uint32_t ints2[] = {p->form,        p->glimpse_hidden, p->loc_hidden,
                              p->glimpse_out, p->core_hidden,    p->core,
                              p->glimpses,    p->classes,        p->bound};
    for (int i = 0; i < 9; i++)
        ram_buf_u32(&c, ints2[i]);
    ram_buf_f32(&c, p->loc_std);
    ram_buf_f32(&c, p->loc_range_pixels);
    ram_buf_f32(&c, p->init_scale);
    ram_buf_u64(&c, p->seed);
    ram_file_chunk(&file, RAM_TAG('A', 'R', 'C', 'H'), &c);
    c.len = 0;
    ram_buf_u32(&c, RAM_T_V1_COUNT);
    for (int i = 0; i < RAM_T_V1_COUNT; i++) {
        ram_buf_u32(&c, (uint32_t)layout.t[i].rows);
        ram_buf_u32(&c, (uint32_t)layout.t[i].cols);
    }
    for (size_t i = 0; i < nfloats; i++)
        ram_buf_f32(&c, 0.01f * (float)i);
    ram_file_chunk(&file, RAM_TAG('W', 'G', 'H', 'T'), &c);
    free(c.data);
    ck_assert_int_eq(ram_file_finish_and_write(&file, path), RAM_OK);
}

/* A short ARCH chunk, a missing WGHT chunk and a negative enum each get a
 * message that says what is wrong with the file. */
START_TEST(test_arch_messages) {
    make_dir();
    size_t len;
    unsigned char *d = saved_model("m.ram", &len);
    /* bound (ARCH payload word 14, at 16 + 16 + 56) = -1 as a u32, valid CRC. */
    unsigned char *e = malloc(len);
    memcpy(e, d, len);
    put_u32(e + 88, 0xffffffffu);
    fix_crc(e, len);
    write_file(in_dir("bound.ram"), e, len);
    ck_assert_int_eq(load_fails(in_dir("bound.ram")), RAM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "bound = -1 not in"));
    free(e);

    /* The first 40 bytes of that ARCH payload alone, no WGHT chunk. */
    ram_buf file = {0}, c = {0};
    ram_file_begin(&file);
    ram_buf_bytes(&c, d + 32, 40);
    ram_file_chunk(&file, RAM_TAG('A', 'R', 'C', 'H'), &c);
    ck_assert_int_eq(ram_file_finish_and_write(&file, in_dir("arch40.ram")), RAM_OK);
    ck_assert_int_eq(load_fails(in_dir("arch40.ram")), RAM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "ARCH chunk is 40 bytes, 80 expected"));

    /* A whole ARCH chunk and no WGHT chunk. */
    ram_buf file2 = {0};
    ram_file_begin(&file2);
    c.len = 0;
    ram_buf_bytes(&c, d + 32, 80);
    ram_file_chunk(&file2, RAM_TAG('A', 'R', 'C', 'H'), &c);
    free(c.data);
    ck_assert_int_eq(ram_file_finish_and_write(&file2, in_dir("nowght.ram")), RAM_OK);
    ck_assert_int_eq(load_fails(in_dir("nowght.ram")), RAM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "no WGHT chunk"));
    free(d);
}
END_TEST

/* ---- class names and the fit rule ---- */

START_TEST(test_names_and_fit_roundtrip) {
    make_dir();
    ram_model *m = small_model(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    ck_assert_ptr_null(ram_model_class_name(m, 0));
    ck_assert_int_eq(ram_model_fit(m), RAM_FIT_PAD);
    size_t plain_len, named_len;
    ck_assert_int_eq(ram_model_save(m, in_dir("plain.ram")), RAM_OK);
    unsigned char *plain = read_file(in_dir("plain.ram"), &plain_len);

    const char *names[4] = {"cat", "dog", "caf\xc3\xa9 au lait", "x"};
    ck_assert_int_eq(ram_model_set_class_names(m, names, 4), RAM_OK);
    ck_assert_int_eq(ram_model_set_fit(m, RAM_FIT_LETTERBOX), RAM_OK);
    ck_assert_int_eq(ram_model_save(m, in_dir("named.ram")), RAM_OK);
    free(read_file(in_dir("named.ram"), &named_len));
    ck_assert_uint_gt(named_len, plain_len);
    ram_model *back = NULL;
    ck_assert_int_eq(ram_model_load(in_dir("named.ram"), &back), RAM_OK);
    for (int k = 0; k < 4; k++)
        ck_assert_str_eq(ram_model_class_name(back, k), names[k]);
    ck_assert_ptr_null(ram_model_class_name(back, 4));
    ck_assert_ptr_null(ram_model_class_name(back, -1));
    ck_assert_int_eq(ram_model_fit(back), RAM_FIT_LETTERBOX);

    /* Cleared names and the default rule: the very bytes of a model that never had them. */
    ck_assert_int_eq(ram_model_set_class_names(back, NULL, 0), RAM_OK);
    ck_assert_int_eq(ram_model_set_fit(back, RAM_FIT_PAD), RAM_OK);
    ck_assert_int_eq(ram_model_save(back, in_dir("cleared.ram")), RAM_OK);
    size_t cleared_len;
    unsigned char *cleared = read_file(in_dir("cleared.ram"), &cleared_len);
    ck_assert_uint_eq(cleared_len, plain_len);
    ck_assert_int_eq(memcmp(cleared, plain, plain_len), 0);
    free(cleared);
    free(plain);
    ram_model_free(back);
    ram_model_free(m);
}
END_TEST

/* cell_samples: kept in a SAMP chunk only when set (a model without it is
 * the file it was), loaded back with the same classifications; a bad
 * value in the chunk, or the option with the soft sensor, refused. */
static unsigned char *find_tag(unsigned char *b, size_t len, const char *tag) {
    for (size_t i = 16; i + 4 <= len; i++)
        if (memcmp(b + i, tag, 4) == 0) return b + i;
    return NULL;
}

/* `plain` saved as plain.ram and `with` as `name`: the second file's
 * bytes (*len of them; the caller frees them), in which *at is chunk
 * `tag`, which the plain file (*plain_len bytes) lacks. */
static unsigned char *saved_with_chunk(const ram_model *plain, const ram_model *with,
                                       const char *name, const char *tag, size_t *plain_len,
                                       size_t *len, unsigned char **at) {
    ck_assert_int_eq(ram_model_save(plain, in_dir("plain.ram")), RAM_OK);
    ck_assert_int_eq(ram_model_save(with, in_dir(name)), RAM_OK);
    unsigned char *pb = read_file(in_dir("plain.ram"), plain_len);
    unsigned char *d = read_file(in_dir(name), len);
    ck_assert_ptr_null(find_tag(pb, *plain_len, tag));
    *at = find_tag(d, *len, tag);
    ck_assert_ptr_nonnull(*at);
    free(pb);
    return d;
}

START_TEST(test_cell_samples_roundtrip) {
    make_dir();
    ram_model_params p;
    small_params(&p, RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    p.glimpse.depth = 3; /* sides 4, 8, 16: the widest reads 2 x 2 of its 4 x 4 cells */
    p.context = 3;
    ram_model *plain = NULL, *sampled = NULL, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &plain), RAM_OK);
    p.cell_samples = 2;
    ck_assert_int_eq(ram_model_create(&p, &sampled), RAM_OK);
    size_t plain_len, len;
    unsigned char *tag;
    unsigned char *d =
        saved_with_chunk(plain, sampled, "sampled.ram", "SAMP", &plain_len, &len, &tag);
    ck_assert_uint_eq(len, plain_len + 20); /* tag, reserved, length, u32 */
    ck_assert_int_eq(ram_model_load(in_dir("sampled.ram"), &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(back, &q), RAM_OK);
    ck_assert_int_eq(q.cell_samples, 2);
    /* The same weights read with and without sampling classify differently;
     * the loaded model as the saved one. */
    static float img[3 * 2 * 12 * 10];
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = (float)((i * 37 + 11) % 101) / 100.0f;
    memcpy(plain->w, sampled->w, sizeof(float) * sampled->n_params);
    ram_model_touch(plain);
    float pa[3 * 4], pp[3 * 4], pl[3 * 4];
    ram_state *sa, *sp, *sl;
    ck_assert_int_eq(ram_state_create(sampled, 3, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(plain, 3, &sp), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, 3, &sl), RAM_OK);
    ck_assert_int_eq(ram_model_classify(sampled, sa, img, 3, NULL, pa, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(plain, sp, img, 3, NULL, pp, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, sl, img, 3, NULL, pl, NULL), RAM_OK);
    ck_assert_mem_eq(pa, pl, sizeof pa);
    ck_assert(memcmp(pa, pp, sizeof pa) != 0);
    ram_state_free(sa);
    ram_state_free(sp);
    ram_state_free(sl);
    ram_model_free(back);
    const size_t at = (size_t)(tag - d);
    for (uint32_t bad = 0; bad < 2; bad++) {
        put_u32(d + at + 16, bad ? 65 : 0);
        fix_crc(d, len);
        ck_assert_int_eq(ram_model_load_memory(d, len, &back), RAM_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "SAMP"));
    }
    p.sensor = RAM_SENSOR_SOFT;
    ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "cell_samples"));
    p.sensor = RAM_SENSOR_HARD;
    p.cell_samples = 65;
    ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
    free(d);
    ram_model_free(plain);
    ram_model_free(sampled);
}
END_TEST

/* contrast: a CTRS chunk only when set, loaded back with the same
 * classifications (which differ from the same weights reading pixel
 * values); a bad value in the chunk, or the option with the soft sensor,
 * refused. */
START_TEST(test_contrast_roundtrip) {
    make_dir();
    ram_model_params p;
    small_params(&p, RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    p.context = 3;
    ram_model *plain = NULL, *con = NULL, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &plain), RAM_OK);
    p.contrast = 1;
    ck_assert_int_eq(ram_model_create(&p, &con), RAM_OK);
    size_t plain_len, len;
    unsigned char *tag;
    unsigned char *d = saved_with_chunk(plain, con, "contrast.ram", "CTRS", &plain_len, &len, &tag);
    ck_assert_uint_eq(len, plain_len + 20);
    ck_assert_int_eq(ram_model_load(in_dir("contrast.ram"), &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(back, &q), RAM_OK);
    ck_assert_int_eq(q.contrast, 1);
    static float img[3 * 2 * 12 * 10];
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = (float)((i * 37 + 11) % 101) / 100.0f;
    memcpy(plain->w, con->w, sizeof(float) * con->n_params);
    ram_model_touch(plain);
    float pa[3 * 4], pp[3 * 4], pl[3 * 4];
    ram_state *sa, *sp, *sl;
    ck_assert_int_eq(ram_state_create(con, 3, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(plain, 3, &sp), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, 3, &sl), RAM_OK);
    ck_assert_int_eq(ram_model_classify(con, sa, img, 3, NULL, pa, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(plain, sp, img, 3, NULL, pp, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, sl, img, 3, NULL, pl, NULL), RAM_OK);
    ck_assert_mem_eq(pa, pl, sizeof pa);
    ck_assert(memcmp(pa, pp, sizeof pa) != 0);
    /* Two threads, sharing each image's glimpse rows (one image) or the
     * images (three), read the statistics the pass worked out: the same
     * bits as one thread. */
    ram_state *st2;
    float p2[3 * 4];
    ck_assert_int_eq(ram_state_create_threads(con, 3, 2, &st2), RAM_OK);
    for (int calls = 0; calls < 20; calls++) { /* both of the state's ways for small calls */
        ck_assert_int_eq(ram_model_classify(con, st2, img, 3, NULL, p2, NULL), RAM_OK);
        ck_assert_mem_eq(pa, p2, sizeof pa);
        ck_assert_int_eq(ram_model_classify(con, st2, img, 1, NULL, p2, NULL), RAM_OK);
        ck_assert_mem_eq(pa, p2, 4 * sizeof *pa);
    }
    ram_state_free(st2);
    ram_state_free(sa);
    ram_state_free(sp);
    ram_state_free(sl);
    ram_model_free(back);
    const size_t at = (size_t)(tag - d);
    for (uint32_t bad = 0; bad < 2; bad++) {
        put_u32(d + at + 16, bad ? 2 : 0);
        fix_crc(d, len);
        ck_assert_int_eq(ram_model_load_memory(d, len, &back), RAM_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "CTRS"));
    }
    p.sensor = RAM_SENSOR_SOFT;
    ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(ram_last_error(), "contrast"));
    p.sensor = RAM_SENSOR_HARD;
    p.contrast = 2;
    ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
    free(d);
    ram_model_free(plain);
    ram_model_free(con);
}
END_TEST

/* Zoom as an action: a ZOOM chunk with the range, the same classifications
 * and zooms after a round trip, on one thread and two; a chunk that says
 * nothing or a bad range refused; bad ranges refused at creation. */
START_TEST(test_zoom_roundtrip) {
    make_dir();
    ram_model_params p;
    small_params(&p, RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    ram_model *plain = NULL, *zm = NULL, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &plain), RAM_OK);
    p.zoom_min = 0.5f;
    p.zoom_max = 2.0f;
    ck_assert_int_eq(ram_model_create(&p, &zm), RAM_OK);
    /* one more row of the location network and column of its layer */
    ck_assert_uint_eq(ram_model_param_count(zm),
                      ram_model_param_count(plain) + p.core_hidden + 1 + p.loc_hidden);
    size_t plain_len, len;
    unsigned char *tag;
    unsigned char *d = saved_with_chunk(plain, zm, "zoom.ram", "ZOOM", &plain_len, &len, &tag);
    ck_assert_int_eq(ram_model_load(in_dir("zoom.ram"), &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(back, &q), RAM_OK);
    ck_assert(q.zoom_min == 0.5f && q.zoom_max == 2.0f);
    static float img[3 * 2 * 12 * 10];
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = (float)((i * 37 + 11) % 101) / 100.0f;
    const int T = p.glimpses;
    float pa[3 * 4], pl[3 * 4], za[3 * 16], zl[3 * 16], z2[3 * 16];
    ck_assert_int_le(T, 16);
    ram_state *sa, *sl, *s2, *sp;
    ck_assert_int_eq(ram_state_create(zm, 3, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, 3, &sl), RAM_OK);
    ck_assert_int_eq(ram_state_create_threads(zm, 3, 2, &s2), RAM_OK);
    ck_assert_int_eq(ram_state_zooms(sa, 3, za), RAM_ERR_INVALID_ARGUMENT); /* no call yet */
    ck_assert_int_eq(ram_model_classify(zm, sa, img, 3, NULL, pa, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, sl, img, 3, NULL, pl, NULL), RAM_OK);
    ck_assert_mem_eq(pa, pl, sizeof pa);
    ck_assert_int_eq(ram_state_zooms(sa, 3, za), RAM_OK);
    ck_assert_int_eq(ram_state_zooms(sl, 3, zl), RAM_OK);
    ck_assert_int_eq(ram_state_zooms(sa, 2, zl), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_mem_eq(za, zl, sizeof(float) * 3 * T);
    for (int i = 0; i < 3 * T; i++)
        ck_assert(za[i] >= 0.5f && za[i] <= 2.0f);
    for (int calls = 0; calls < 20; calls++) { /* both of the state's ways for small calls */
        ck_assert_int_eq(ram_model_classify(zm, s2, img, 3, NULL, pl, NULL), RAM_OK);
        ck_assert_mem_eq(pa, pl, sizeof pa);
        ck_assert_int_eq(ram_state_zooms(s2, 3, z2), RAM_OK);
        ck_assert_mem_eq(za, z2, sizeof(float) * 3 * T);
    }
    /* Above 8 images a threaded state gives each thread a slice, with its
     * share of the noise: the random locations and zooms one thread takes. */
    {
        enum { BIG = 20 };
        static float many[BIG * 2 * 12 * 10];
        for (size_t i = 0; i < sizeof many / sizeof *many; i++)
            many[i] = (float)((i * 53 + 7) % 97) / 96.0f;
        ram_state *one, *two;
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        ram_policy *pol1, *pol2;
        ck_assert_int_eq(ram_policy_create(&pp, zm, &pol1), RAM_OK);
        ck_assert_int_eq(ram_policy_create(&pp, zm, &pol2), RAM_OK);
        ck_assert_int_eq(ram_state_create(zm, BIG, &one), RAM_OK);
        ck_assert_int_eq(ram_state_create_threads(zm, BIG, 2, &two), RAM_OK);
        float q1[BIG * 4], q2[BIG * 4], y1[BIG * 16], y2[BIG * 16];
        ck_assert_int_eq(
            ram_model_classify_ex(zm, one, many, BIG, RAM_LOCS_RANDOM, pol1, NULL, q1, NULL),
            RAM_OK);
        ck_assert_int_eq(
            ram_model_classify_ex(zm, two, many, BIG, RAM_LOCS_RANDOM, pol2, NULL, q2, NULL),
            RAM_OK);
        ck_assert_int_eq(ram_state_zooms(one, BIG, y1), RAM_OK);
        ck_assert_int_eq(ram_state_zooms(two, BIG, y2), RAM_OK);
        /* the matrix products of 20 rows and of two slices of 10 may round
         * their last bits apart */
        for (int i = 0; i < BIG * 4; i++)
            ck_assert_float_eq_tol(q1[i], q2[i], 1e-5f);
        for (int i = 0; i < BIG * T; i++)
            ck_assert_float_eq_tol(y1[i], y2[i], 1e-5f);
        float lo = 2, hi = 0;
        for (int i = 0; i < BIG * T; i++) {
            lo = y1[i] < lo ? y1[i] : lo;
            hi = y1[i] > hi ? y1[i] : hi;
        }
        ck_assert_msg(lo < 0.8f && hi > 1.25f, "random zooms from %g to %g", (double)lo,
                      (double)hi);
        ram_state_free(one);
        ram_state_free(two);
        ram_policy_free(pol1);
        ram_policy_free(pol2);
    }
    /* a model without zoom reports 1 */
    ck_assert_int_eq(ram_state_create(plain, 3, &sp), RAM_OK);
    ck_assert_int_eq(ram_model_classify(plain, sp, img, 3, NULL, pl, NULL), RAM_OK);
    ck_assert_int_eq(ram_state_zooms(sp, 3, z2), RAM_OK);
    for (int i = 0; i < 3 * T; i++)
        ck_assert(z2[i] == 1.0f);
    ram_state_free(sp);
    ram_state_free(s2);
    ram_state_free(sa);
    ram_state_free(sl);
    ram_model_free(back);
    const size_t at = (size_t)(tag - d);
    const float bad[][2] = {{0.0f, 0.0f}, {2.0f, 0.5f}, {-1.0f, 2.0f}, {0.5f, 17.0f}, {0.5f, NAN}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        for (int k = 0; k < 2; k++) { /* little-endian floats, on any host */
            uint32_t bits;
            memcpy(&bits, &bad[b][k], sizeof bits);
            put_u32(d + at + 16 + 4 * k, bits);
        }
        fix_crc(d, len);
        ck_assert_int_eq(ram_model_load_memory(d, len, &back), RAM_ERR_FORMAT);
        ck_assert(strstr(ram_last_error(), "ZOOM") || strstr(ram_last_error(), "zoom"));
    }
    const float refused[][2] = {{0.5f, 0.0f}, {0.0f, 2.0f}, {1.0f, 1.0f}, {0.5f, 20.0f}};
    for (size_t b = 0; b < sizeof refused / sizeof *refused; b++) {
        p.zoom_min = refused[b][0];
        p.zoom_max = refused[b][1];
        ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
    }
    free(d);
    ram_model_free(plain);
    ram_model_free(zm);
}
END_TEST

/* The convolutional layer: a CONV chunk and every tensor listed, loaded
 * back with the same classifications on one thread and on two (a whole
 * batch, and one image whose glimpse rows the threads share); a chunk with
 * a bad value, or a layer that does not fit the patch, refused.  Only the
 * tensor list tells an older reader that it cannot read the file: it must
 * hold the two new tensors. */
START_TEST(test_conv_roundtrip) {
    make_dir();
    ram_model_params p;
    small_params(&p, RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    ram_model *plain = NULL, *conv = NULL, *back = NULL;
    ck_assert_int_eq(ram_model_create(&p, &plain), RAM_OK);
    p.conv_channels = 5;
    p.conv_kernel = 2;
    p.conv_stride = 1;
    ck_assert_int_eq(ram_model_create(&p, &conv), RAM_OK);
    /* 4 x 4 patch, 2 x 2 filters: 3 x 3 positions of 5 channels for h_g */
    ck_assert_uint_eq(ram_model_param_count(conv),
                      ram_model_param_count(plain) + 5 * (2 * 2 * 2 * 2 + 1) +
                          (size_t)p.glimpse_hidden * (5 * 9 - 2 * 2 * 4 * 4));
    size_t plain_len, len;
    unsigned char *tag;
    unsigned char *d = saved_with_chunk(plain, conv, "conv.ram", "CONV", &plain_len, &len, &tag);
    unsigned char *w = find_tag(d, len, "WGHT");
    ck_assert_ptr_nonnull(w);
    ck_assert_uint_eq(w[16], RAM_T_COUNT); /* the tensor count, little-endian */
    ck_assert_int_eq(ram_model_load(in_dir("conv.ram"), &back), RAM_OK);
    ram_model_params q;
    ram_model_params_init(&q);
    ck_assert_int_eq(ram_model_get_params(back, &q), RAM_OK);
    ck_assert(q.conv_channels == 5 && q.conv_kernel == 2 && q.conv_stride == 1);
    static float img[3 * 2 * 12 * 10];
    for (size_t i = 0; i < sizeof img / sizeof *img; i++)
        img[i] = (float)((i * 37 + 11) % 101) / 100.0f;
    float pa[3 * 4], pl[3 * 4], p2[3 * 4];
    ram_state *sa, *sl, *st2;
    ck_assert_int_eq(ram_state_create(conv, 3, &sa), RAM_OK);
    ck_assert_int_eq(ram_state_create(back, 3, &sl), RAM_OK);
    ck_assert_int_eq(ram_model_classify(conv, sa, img, 3, NULL, pa, NULL), RAM_OK);
    ck_assert_int_eq(ram_model_classify(back, sl, img, 3, NULL, pl, NULL), RAM_OK);
    ck_assert_mem_eq(pa, pl, sizeof pa);
    ck_assert_int_eq(ram_state_create_threads(conv, 3, 2, &st2), RAM_OK);
    for (int calls = 0; calls < 20; calls++) { /* both of the state's ways for small calls */
        ck_assert_int_eq(ram_model_classify(conv, st2, img, 3, NULL, p2, NULL), RAM_OK);
        ck_assert_mem_eq(pa, p2, sizeof pa);
        ck_assert_int_eq(ram_model_classify(conv, st2, img, 1, NULL, p2, NULL), RAM_OK);
        ck_assert_mem_eq(pa, p2, 4 * sizeof *pa);
    }
    ram_state_free(st2);
    ram_state_free(sa);
    ram_state_free(sl);
    ram_model_free(back);
    const size_t at = (size_t)(tag - d);
    const uint32_t bad[][3] = {{0, 2, 1}, {5, 0, 1}, {5, 2, 0}, {4097, 2, 1}, {5, 5, 1}};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        for (int k = 0; k < 3; k++)
            put_u32(d + at + 16 + 4 * k, bad[b][k]);
        fix_crc(d, len);
        ck_assert_int_eq(ram_model_load_memory(d, len, &back), RAM_ERR_FORMAT);
        ck_assert(strstr(ram_last_error(), "CONV") || strstr(ram_last_error(), "conv"));
    }
    const int refused[][3] = {{-1, 2, 1}, {4097, 2, 1}, {5, 0, 1}, {5, 5, 1}, {5, 2, 0}, {5, 2, 5}};
    for (size_t b = 0; b < sizeof refused / sizeof *refused; b++) {
        p.conv_channels = refused[b][0];
        p.conv_kernel = refused[b][1];
        p.conv_stride = refused[b][2];
        ck_assert_int_eq(ram_model_create(&p, &back), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "conv"));
    }
    /* without the layer its filters' shape is not looked at */
    p.conv_channels = 0;
    p.conv_kernel = 0;
    ck_assert_int_eq(ram_model_create(&p, &back), RAM_OK);
    ram_model_free(back);
    free(d);
    ram_model_free(plain);
    ram_model_free(conv);
}
END_TEST

START_TEST(test_names_refused) {
    ram_model *m = small_model(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    const char *good[4] = {"a", "b", "c", "d"};
    ck_assert_int_eq(ram_model_set_class_names(m, good, 4), RAM_OK);
    char long_name[1026];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    const char *bad[][4] = {{"a", "b", NULL, "d"}, {"a", "", "c", "d"}, {"a", "b", "c", long_name}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(ram_model_set_class_names(m, bad[i], 4), RAM_ERR_INVALID_ARGUMENT);
        ck_assert_str_eq(ram_model_class_name(m, 2), "c"); /* unchanged */
    }
    ck_assert_int_eq(ram_model_set_class_names(m, good, 3), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_set_class_names(NULL, good, 4), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_set_fit(m, (ram_fit)4), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_set_fit(m, (ram_fit)-1), RAM_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(ram_model_fit(m), RAM_FIT_PAD);
    ram_model_free(m);
}
END_TEST

/* A file with the model's chunks and one more, hand-made. */
static void write_with_chunk(const char *path, uint32_t tag, const ram_buf *payload) {
    ram_model *m = small_model(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    ram_buf file = {0};
    ram_file_begin(&file);
    ram_model_serialize(m, &file);
    ram_file_chunk(&file, tag, payload);
    ck_assert_int_eq(ram_file_finish_and_write(&file, path), RAM_OK);
    ram_model_free(m);
}

START_TEST(test_hostile_names_and_fit) {
    make_dir();
    const uint32_t CLSN = RAM_TAG('C', 'L', 'S', 'N'), FITR = RAM_TAG('F', 'I', 'T', 'R');
    struct {
        uint32_t count, len[4];
        const char *bytes; /* the names' bytes, back to back */
        size_t extra;      /* bytes appended after the names */
        const char *says;
    } cases[] = {
        {3, {1, 1, 1, 0}, "abc", 0, "names 3 classes"},
        {4, {1, 1, 1, 100}, "abcd", 0, "runs past"},
        {4, {1, 1, 1, 1}, "abcd", 3, "after the class names"},
        {4, {1, 0, 1, 1}, "acd", 0, "name 1"},
        {4, {1, 2, 1, 1}, "a\0bcd", 0, "NUL"},
        {4, {1, 1, 1, 2000}, "abcd", 0, "runs past"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ram_buf c = {0};
        ram_buf_u32(&c, cases[i].count);
        const char *at = cases[i].bytes;
        for (uint32_t k = 0; k < 4 && k < cases[i].count; k++) {
            ram_buf_u32(&c, cases[i].len[k]);
            const size_t have = cases[i].len[k] > 4 ? 1 : cases[i].len[k];
            ram_buf_bytes(&c, at, have);
            at += have;
        }
        for (size_t e = 0; e < cases[i].extra; e++)
            ram_buf_bytes(&c, "z", 1);
        write_with_chunk(in_dir("names.ram"), CLSN, &c);
        free(c.data);
        ck_assert_int_eq(load_fails(in_dir("names.ram")), RAM_ERR_FORMAT);
        ck_assert_msg(strstr(ram_last_error(), cases[i].says), "case %zu: %s", i, ram_last_error());
    }
    for (uint32_t rule = 4; rule < 6; rule++) {
        ram_buf c = {0};
        ram_buf_u32(&c, rule == 4 ? 4 : 1);
        if (rule == 5) ram_buf_u32(&c, 0); /* 8 bytes */
        write_with_chunk(in_dir("fit.ram"), FITR, &c);
        free(c.data);
        ck_assert_int_eq(load_fails(in_dir("fit.ram")), RAM_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(ram_last_error(), "FITR"));
    }
}
END_TEST

START_TEST(test_absurd_sizes) {
    make_dir();
    size_t len;
    unsigned char *d = saved_model("m.ram", &len);
    limit_memory();

    /* core_hidden (ARCH payload word 10, at 16 + 16 + 40) = 2^30, valid CRC. */
    put_u32(d + 72, 1u << 30);
    fix_crc(d, len);
    write_file(in_dir("huge.ram"), d, len);
    ck_assert_int_eq(load_fails(in_dir("huge.ram")), RAM_ERR_FORMAT);

    /* Sizes each within the validator's limits, about 8 G parameters in all,
     * with a consistent tensor table: only the weight bytes present betray
     * it, and they must be checked before anything is allocated. */
    ram_model_params p;
    small_params(&p, RAM_CORE_LSTM, RAM_GLIMPSE_CONCAT);
    p.glimpse_hidden = p.loc_hidden = p.glimpse_out = 65536;
    p.core_hidden = 16384;
    write_claimed_model(in_dir("claims.ram"), &p, 100);
    ck_assert_int_eq(load_fails(in_dir("claims.ram")), RAM_ERR_FORMAT);

    /* Control: the same writer with a true architecture and all its weights
     * makes a loadable file. */
    small_params(&p, RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    struct ram_model lay;
    ram_model_layout(&lay, &p);
    write_claimed_model(in_dir("honest.ram"), &p, lay.n_params);
    ram_model *m = NULL;
    ck_assert_int_eq(ram_model_load(in_dir("honest.ram"), &m), RAM_OK);
    ck_assert_uint_eq(m->n_params, lay.n_params);
    ck_assert_float_eq(m->w[3], 0.03f);
    ram_model_free(m);
    /* ...and one weight short is rejected. */
    write_claimed_model(in_dir("short.ram"), &p, lay.n_params - 1);
    ck_assert_int_eq(load_fails(in_dir("short.ram")), RAM_ERR_FORMAT);

    /* A chunk length of 2^62 (first chunk, at byte 24), CRC fixed. */
    free(d);
    d = saved_model("m.ram", &len);
    put_u32(d + 24, 0);
    put_u32(d + 28, 1u << 30);
    fix_crc(d, len);
    write_file(in_dir("longchunk.ram"), d, len);
    ck_assert_int_eq(load_fails(in_dir("longchunk.ram")), RAM_ERR_CORRUPT);
    free(d);
    unlimit_memory();
    remove_dir();
}
END_TEST

START_TEST(test_nonfinite_weight) {
    make_dir();
    ram_model *m = small_model(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    m->w[5] = NAN;
    ck_assert_int_eq(ram_model_save(m, in_dir("nan.ram")), RAM_OK);
    ck_assert_int_eq(load_fails(in_dir("nan.ram")), RAM_ERR_FORMAT);
    ram_model_free(m);
    remove_dir();
}
END_TEST

/* ---- atomic save ---- */

static int count_entries(const char *path, const char *needle) {
    DIR *dd = opendir(path);
    ck_assert_ptr_nonnull(dd);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)))
        if (e->d_name[0] != '.' && (!needle || strstr(e->d_name, needle))) n++;
    closedir(dd);
    return n;
}

START_TEST(test_atomic_save) {
    make_dir();
    ram_model *a = small_model(RAM_CORE_RNN, RAM_GLIMPSE_ADDITIVE);
    ram_model *b = small_model(RAM_CORE_LSTM, RAM_GLIMPSE_CONCAT);
    PATH(path, "model.ram");
    ck_assert_int_eq(ram_model_save(a, path), RAM_OK);
    ck_assert_int_eq(ram_model_save(b, path), RAM_OK); /* over the existing file */
    ck_assert_int_eq(count_entries(dir, NULL), 1);
    ck_assert_int_eq(count_entries(dir, ".tmp-"), 0);
    ram_model *c = NULL;
    ck_assert_int_eq(ram_model_load(path, &c), RAM_OK);
    ck_assert_uint_eq(c->n_params, b->n_params);
    ck_assert_mem_eq(c->w, b->w, sizeof(float) * b->n_params);
    ram_model_free(c);

    /* Into a directory that does not exist: IO, and the old file stays. */
    ram_clear_error();
    ck_assert_int_eq(ram_model_save(a, in_dir("missing/model.ram")), RAM_ERR_IO);
    ck_assert_str_ne(ram_last_error(), "");
    /* Over a path that is a directory: the rename fails, nothing is left. */
    ck_assert_int_eq(mkdir(in_dir("adir"), 0755), 0);
    ck_assert_int_eq(ram_model_save(a, in_dir("adir")), RAM_ERR_IO);
    ck_assert_int_eq(count_entries(dir, ".tmp-"), 0);
    ck_assert_int_eq(count_entries(in_dir("adir"), NULL), 0);
    ck_assert_int_eq(count_entries(dir, NULL), 2);

    ck_assert_int_eq(ram_model_load(path, &c), RAM_OK);
    ck_assert_mem_eq(c->w, b->w, sizeof(float) * b->n_params);
    ram_model_free(c);
    ram_model_free(a), ram_model_free(b);
    remove_dir();
}
END_TEST

/* ---- checkpoints ---- */

START_TEST(test_checkpoint_is_a_model_file) {
    make_dir();
    ram_model *m = small_model(RAM_CORE_LSTM, RAM_GLIMPSE_ADDITIVE);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol = NULL;
    ck_assert_int_eq(ram_policy_create(&pp, m, &pol), RAM_OK);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 4;
    tp.lr = 0.01f;
    ram_trainer *t = NULL;
    ck_assert_int_eq(ram_trainer_create(m, pol, &tp, &t), RAM_OK);
    enum { N = 4, IMG = 2 * 12 * 10 };
    float img[N * IMG];
    lcg_state = 17;
    for (int i = 0; i < N * IMG; i++)
        img[i] = lcg_uniform();
    const int labels[N] = {0, 1, 2, 3};
    ck_assert_int_eq(ram_trainer_train_batch(t, img, labels, N, NULL), RAM_OK);

    const char user[] = "epoch 3";
    PATH(path, "ckpt.ram");
    ck_assert_int_eq(ram_trainer_save_checkpoint(t, path, user, sizeof user), RAM_OK);
    ck_assert_int_eq(count_entries(dir, ".tmp-"), 0);
    ram_model *loaded = NULL;
    ck_assert_int_eq(ram_model_load(path, &loaded), RAM_OK);
    ck_assert_uint_eq(loaded->n_params, m->n_params);
    ck_assert_mem_eq(loaded->w, m->w, sizeof(float) * m->n_params);
    ram_model_free(loaded);

    /* A model file is not a checkpoint; a truncated checkpoint is corrupt.
     * Neither may change the trainer. */
    ck_assert_int_eq(ram_model_save(m, in_dir("model.ram")), RAM_OK);
    float *w0 = malloc(sizeof(float) * m->n_params);
    for (size_t i = 0; i < m->n_params; i++)
        m->w[i] += 1.0f; /* differs from both files */
    memcpy(w0, m->w, sizeof(float) * m->n_params);
    char got[16];
    size_t got_len = 0;
    ram_clear_error();
    ck_assert_int_eq(ram_trainer_load_checkpoint(t, in_dir("model.ram"), got, sizeof got, &got_len),
                     RAM_ERR_FORMAT);
    ck_assert_str_ne(ram_last_error(), "");
    ck_assert_mem_eq(m->w, w0, sizeof(float) * m->n_params);
    size_t len;
    unsigned char *d = read_file(path, &len);
    for (size_t n = 0; n < len; n += 1 + n / 16) {
        write_file(in_dir("cut.ram"), d, n);
        ram_status s = ram_trainer_load_checkpoint(t, in_dir("cut.ram"), got, sizeof got, NULL);
        ck_assert_msg(s == RAM_ERR_CORRUPT || s == RAM_ERR_FORMAT, "cut at %zu: %d", n, s);
        ck_assert_mem_eq(m->w, w0, sizeof(float) * m->n_params);
        ck_assert_int_eq(ram_trainer_steps(t), 1);
    }
    free(d);

    /* The real thing restores the weights and the caller's bytes. */
    ck_assert_int_eq(ram_trainer_load_checkpoint(t, path, got, sizeof got, &got_len), RAM_OK);
    ck_assert_uint_eq(got_len, sizeof user);
    ck_assert_str_eq(got, user);
    ck_assert_int_eq(ram_trainer_steps(t), 1);
    ck_assert_mem_ne(m->w, w0, sizeof(float) * m->n_params);
    free(w0);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
    remove_dir();
}
END_TEST

static Suite *serialize_suite(void) {
    Suite *s = suite_create("serialize");
    TCase *rt = tcase_create("roundtrip");
    tcase_add_loop_test(rt, test_roundtrip, 0, 4); /* {RNN, LSTM} x {ADDITIVE, CONCAT} */
    tcase_add_test(rt, test_null_arguments);
    tcase_add_test(rt, test_names_and_fit_roundtrip);
    tcase_add_test(rt, test_names_refused);
    tcase_add_test(rt, test_cell_samples_roundtrip);
    tcase_add_test(rt, test_contrast_roundtrip);
    tcase_add_test(rt, test_zoom_roundtrip);
    tcase_add_test(rt, test_conv_roundtrip);
    tcase_add_test(rt, test_atomic_save);
    tcase_add_test(rt, test_checkpoint_is_a_model_file);
    suite_add_tcase(s, rt);
    TCase *bad = tcase_create("damaged");
    tcase_add_test(bad, test_truncated_everywhere);
    tcase_add_test(bad, test_every_byte_flipped);
    tcase_add_test(bad, test_foreign_files);
    tcase_add_test(bad, test_future_version);
    tcase_add_test(bad, test_absurd_sizes);
    tcase_add_test(bad, test_arch_messages);
    tcase_add_test(bad, test_hostile_names_and_fit);
    tcase_add_test(bad, test_nonfinite_weight);
    suite_add_tcase(s, bad);
    return s;
}

int main(void) {
    strcpy(run_dir, "/tmp/check_serialize-XXXXXX");
    if (!mkdtemp(run_dir)) {
        perror("mkdtemp");
        return 1;
    }
    int status = run_suite(serialize_suite());
    strcpy(dir, run_dir);
    remove_dir();
    return status;
}
