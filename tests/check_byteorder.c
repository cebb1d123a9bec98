/* Model files are little-endian on every host.  The committed models were
 * written on a little-endian machine; this suite decodes one byte by byte
 * (shifts of single bytes, which mean the same on any host) and requires
 * the loader's floats to be those, bit for bit; saving the loaded model
 * must give the committed bytes back; and a model with chosen weights
 * must be written as those weights' little-endian bytes.  On a big-endian
 * host (scripts/cross-check.sh s390x runs it under qemu) that is a file
 * from the other byte order loading right, and a file written there being
 * the file a little-endian host writes. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "internal.h"

#include <check.h>
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RAM_MODELS_DIR
#error "RAM_MODELS_DIR: the directory of the committed models (tests/CMakeLists.txt)"
#endif

static char run_dir[4096];

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: cannot open", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    const long n = ftell(f);
    ck_assert_int_gt(n, 0);
    rewind(f);
    unsigned char *d = malloc((size_t)n);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(fread(d, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return d;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) {
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The payload of chunk `tag` ("WGHT"), walking the chunks by hand. */
static const unsigned char *chunk(const unsigned char *d, size_t len, const char *tag,
                                  uint64_t *clen) {
    size_t at = 16; /* magic, version, kind */
    while (at + 16 <= len) {
        const uint64_t n = le64(d + at + 8);
        if (!memcmp(d + at, tag, 4)) {
            *clen = n;
            return d + at + 16;
        }
        at += 16 + n;
    }
    ck_abort_msg("no %s chunk", tag);
    return NULL;
}

static uint32_t
float_bits(float f) { /* the same on every host whose ints and floats share an order */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* models/mnist.ram: its header fields and ARCH values read by hand, and
 * every weight decoded from its four bytes, equal the loader's. */
START_TEST(test_committed_model_decodes) {
    size_t len;
    unsigned char *d = slurp(RAM_MODELS_DIR "/mnist.ram", &len);
    ck_assert_uint_eq(le32(d + 8), 1); /* format version */
    ram_model *m;
    ck_assert_int_eq(ram_model_load(RAM_MODELS_DIR "/mnist.ram", &m), RAM_OK);
    ram_model_params p;
    ram_model_params_init(&p);
    ck_assert_int_eq(ram_model_get_params(m, &p), RAM_OK);
    uint64_t alen;
    const unsigned char *a = chunk(d, len, "ARCH", &alen);
    ck_assert_uint_ge(alen, 80);
    ck_assert_int_eq(p.channels, (int)le32(a));
    ck_assert_int_eq(p.height, (int)le32(a + 4));
    ck_assert_int_eq(p.width, (int)le32(a + 8));
    ck_assert_int_eq(p.glimpse.patch, (int)le32(a + 12));
    ck_assert_uint_eq(float_bits(p.glimpse.scale), le32(a + 20));
    ck_assert_uint_eq(p.seed, le64(a + 72));
    uint64_t wlen;
    const unsigned char *w = chunk(d, len, "WGHT", &wlen);
    const uint32_t tensors = le32(w);
    const unsigned char *f = w + 4 + 8 * (size_t)tensors;
    ck_assert_uint_eq(wlen, 4 + 8 * (uint64_t)tensors + 4 * (uint64_t)m->n_params);
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < m->n_params; i++)
        if (float_bits(m->w[i]) != le32(f + 4 * i) && !differ++) first = i;
    ck_assert_msg(!differ, "%zu of %zu weights differ from the file's bytes, the first at %zu",
                  differ, m->n_params, first);
    /* a value a reader of the wrong byte order could not mistake: the first
     * weight's bytes reversed are another float */
    const uint32_t b0 = le32(f),
                   swapped = b0 >> 24 | (b0 >> 8 & 0xff00u) | (b0 << 8 & 0xff0000u) | b0 << 24;
    ck_assert_uint_ne(b0, swapped);

    /* written back, the same bytes */
    char path[4200];
    snprintf(path, sizeof path, "%s/mnist.ram", run_dir);
    ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
    size_t len2;
    unsigned char *d2 = slurp(path, &len2);
    ck_assert_uint_eq(len2, len);
    ck_assert_msg(!memcmp(d, d2, len), "the saved model's bytes differ from the committed file's");
    unlink(path);
    free(d), free(d2);
    ram_model_free(m);
}
END_TEST

/* Weights of chosen bits (signs, a subnormal, the largest finite float) are
 * written least significant byte first, and read back to the same bits. */
START_TEST(test_written_little_endian) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.height = p.width = 12;
    p.glimpse.patch = 4;
    p.glimpse_hidden = p.loc_hidden = p.glimpse_out = p.core_hidden = 8;
    p.glimpses = 2;
    p.classes = 3;
    ram_model *m;
    ck_assert_int_eq(ram_model_create(&p, &m), RAM_OK);
    const uint32_t pattern[] = {0x3f800000u, 0xbf800001u, 0x00000001u, 0x7f7fffffu,
                                0x12345678u, 0x80000000u, 0x01020304u, 0xc0490fdbu};
    for (size_t i = 0; i < m->n_params; i++) {
        const uint32_t u = pattern[i % 8] ^ (uint32_t)(i >> 3) << 4; /* stays finite */
        memcpy(&m->w[i], &u, sizeof u);
    }
    ram_model_touch(m);
    char path[4200];
    snprintf(path, sizeof path, "%s/chosen.ram", run_dir);
    ck_assert_int_eq(ram_model_save(m, path), RAM_OK);
    size_t len;
    unsigned char *d = slurp(path, &len);
    uint64_t wlen;
    const unsigned char *w = chunk(d, len, "WGHT", &wlen);
    const unsigned char *f = w + 4 + 8 * (size_t)le32(w);
    for (size_t i = 0; i < m->n_params; i++) {
        const uint32_t u = float_bits(m->w[i]);
        const unsigned char want[4] = {u & 0xff, u >> 8 & 0xff, u >> 16 & 0xff, u >> 24};
        ck_assert_msg(!memcmp(f + 4 * i, want, 4), "weight %zu (%08x): bytes %02x %02x %02x %02x",
                      i, u, f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]);
    }
    ram_model *back;
    ck_assert_int_eq(ram_model_load(path, &back), RAM_OK);
    ck_assert(!memcmp(back->w, m->w, sizeof(float) * m->n_params));
    unlink(path);
    free(d);
    ram_model_free(back);
    ram_model_free(m);
}
END_TEST

static Suite *byteorder_suite(void) {
    Suite *s = suite_create("byteorder");
    TCase *tc = tcase_create("files");
    tcase_add_test(tc, test_committed_model_decodes);
    tcase_add_test(tc, test_written_little_endian);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(run_dir, sizeof run_dir, "%s/check_byteorder-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(run_dir)) {
        perror("mkdtemp");
        return 1;
    }
    const int status = run_suite(byteorder_suite());
    rmdir(run_dir);
    return status;
}
