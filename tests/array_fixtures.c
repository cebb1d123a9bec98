/* The tools' array readers (npz.h, idx.h) and the .npz writer (npz_write.h)
 * against files written here byte by byte: IDX of 1, 3 and 4 dimensions;
 * .npy of uint8, uint16, float32 and float64 in N x H x W, N x H x W x C and
 * N x C x H x W; .npz with stored members and with members deflated by zlib.
 * Every pixel read is compared with the value it was written from, and every
 * damaged or unsupported file must be refused with a message that says why.
 *
 * With RAM_TEST_PYTHON naming a python3 with NumPy, np.load must also read
 * the writer's files (zip64 records too) as they were written.
 *
 * Exit status 0, or 1 with what went wrong on stderr. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, dup */
#include "idx.h"
#include "npz.h"
#include "npz_write.h"

#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static int failures;
static char dir[512];

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "array_fixtures: %s:%d: ", __FILE__, __LINE__);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- bytes ---------------------------------------------------------------------- */

typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static void add(bytes *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void add_le(bytes *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)(v >> 8 * i);
        add(b, &c, 1);
    }
}

static void add_be32(bytes *b, uint32_t v) {
    const unsigned char c[4] = {v >> 24, v >> 16 & 255, v >> 8 & 255, v & 255};
    add(b, c, 4);
}

static char *path_of(const char *name) {
    static char path[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static const char *save(const char *name, const bytes *b) {
    const char *path = path_of(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f)) abort();
    return path;
}

/* ---- stderr, captured ------------------------------------------------------------ */

static int saved_fd = -1;
static FILE *captured;

static void capture(void) {
    fflush(stderr);
    captured = tmpfile();
    if (!captured) abort();
    saved_fd = dup(2);
    dup2(fileno(captured), 2);
}

/* What was said since capture() (a static buffer). */
static const char *said(void) {
    static char text[2048];
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    rewind(captured);
    const size_t n = fread(text, 1, sizeof text - 1, captured);
    text[n] = '\0';
    fclose(captured);
    return text;
}

/* ---- the values written ---------------------------------------------------------- */

/* Channel c of pixel (y, x) of image i, in [0, 1], exactly representable in
 * 8 bits (k / 255), so that every type gives the same float. */
static float value(int i, int c, int y, int x) {
    return (float)((i * 37 + c * 101 + y * 13 + x * 7) % 256) / 255.0f;
}

/* An .npy file: header dict then the items. */
static void npy(bytes *b, const char *descr, int fortran, const char *shape, const void *data,
                size_t len) {
    char dict[256];
    int d = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }",
                     descr, fortran ? "True" : "False", shape);
    size_t total = (10 + (size_t)d + 1 + 63) / 64 * 64;
    add(b, "\x93NUMPY\x01\x00", 8);
    add_le(b, total - 10, 2);
    add(b, dict, (size_t)d);
    for (size_t k = 10 + (size_t)d; k + 1 < total; k++)
        add(b, " ", 1);
    add(b, "\n", 1);
    add(b, data, len);
}

/* Images n x c x h x w of `value` as items of `kind`/`item`, in `layout`. */
static bytes images(int n, int c, int h, int w, char kind, int item, npy_layout layout) {
    bytes b = {0};
    for (int i = 0; i < n; i++)
        for (int a = 0; a < (layout == NPY_NCHW ? c : h); a++)
            for (int p = 0; p < (layout == NPY_NCHW ? h : w); p++)
                for (int q = 0; q < (layout == NPY_NCHW ? w : layout == NPY_NHWC ? c : 1); q++) {
                    const int cc = layout == NPY_NCHW ? a : layout == NPY_NHWC ? q : 0;
                    const int y = layout == NPY_NCHW ? p : a, x = layout == NPY_NCHW ? q : p;
                    const float v = value(i, cc, y, x);
                    if (kind == 'u' && item == 1) add_le(&b, (uint64_t)lrintf(v * 255), 1);
                    if (kind == 'u' && item == 2) add_le(&b, (uint64_t)lrintf(v * 255) * 257, 2);
                    if (kind == 'f' && item == 4) add(&b, &v, 4);
                    if (kind == 'f' && item == 8) {
                        const double d = v;
                        add(&b, &d, 8);
                    }
                }
    return b;
}

/* Every image of x must be c x h x w of `value`. */
static void check_pixels(const char *what, const npy_array *x, int n, int c, int h, int w) {
    int cc = 0, hh = 0, ww = 0;
    CHECK(!npy_image_dims(x, &cc, &hh, &ww), "%s: not images: %s", what, npy_image_error(x));
    CHECK(cc == c && hh == h && ww == w, "%s: %d x %d x %d, wrote %d x %d x %d", what, cc, hh, ww,
          c, h, w);
    if (cc != c || hh != h || ww != w) return;
    float *img = malloc(sizeof *img * (size_t)c * h * w);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        CHECK(!npy_image(x, (size_t)i, img), "%s: image %d refused", what, i);
        for (int k = 0; k < c; k++)
            for (int y = 0; y < h; y++)
                for (int p = 0; p < w; p++) {
                    const float got = img[((size_t)k * h + y) * w + p], want = value(i, k, y, p);
                    if (fabsf(got - want) > 1e-6f && !wrong++)
                        CHECK(0, "%s: image %d channel %d (%d, %d) is %g, wrote %g", what, i, k, y,
                              p, got, want);
                }
    }
    CHECK(npy_image(x, (size_t)n, img) == -1, "%s: image %d of %d read", what, n, n);
    free(img);
}

/* ---- IDX -------------------------------------------------------------------------- */

static void test_idx(void) {
    char err[512];
    npz_file map;
    npy_array a;
    /* 3-D: 4 x 5 x 6 grey */
    bytes b = {0};
    add_be32(&b, 0x803);
    add_be32(&b, 4), add_be32(&b, 5), add_be32(&b, 6);
    bytes px = images(4, 1, 5, 6, 'u', 1, NPY_NHW);
    add(&b, px.p, px.len);
    const char *path = save("grey-idx3-ubyte", &b);
    CHECK(!idx_map(path, &map, &a, err, sizeof err), "idx 3-D: %s", err);
    CHECK(a.layout == NPY_NHW, "idx 3-D: layout %d", a.layout);
    check_pixels("idx 3-D", &a, 4, 1, 5, 6);
    npz_close(&map);
    /* the same bytes but one: truncated */
    b.len--;
    path = save("short-idx3-ubyte", &b);
    err[0] = '\0';
    CHECK(idx_map(path, &map, &a, err, sizeof err) && strstr(err, "truncated") && strstr(err, path),
          "truncated IDX: \"%s\"", err);
    b.len++;
    add(&b, "x", 1);
    CHECK(idx_parse(b.p, b.len, &a, err, sizeof err) && strstr(err, "trailing"),
          "IDX with a byte too many: \"%s\"", err);
    free(b.p);
    free(px.p);

    /* 4-D: 3 x 4 x 5 x 3 colour (N x H x W x C) */
    b = (bytes){0};
    add_be32(&b, 0x804);
    add_be32(&b, 3), add_be32(&b, 4), add_be32(&b, 5), add_be32(&b, 3);
    px = images(3, 3, 4, 5, 'u', 1, NPY_NHWC);
    add(&b, px.p, px.len);
    path = save("colour-idx4-ubyte", &b);
    CHECK(!idx_map(path, &map, &a, err, sizeof err), "idx 4-D: %s", err);
    CHECK(a.layout == NPY_NHWC, "idx 4-D: layout %d", a.layout);
    check_pixels("idx 4-D", &a, 3, 3, 4, 5);
    npz_close(&map);
    /* 5 channels is not a colour image */
    b.p[19] = 5;
    CHECK(idx_parse(b.p, b.len, &a, err, sizeof err) && strstr(err, "channels"),
          "IDX of 5 channels: \"%s\"", err);
    free(b.p);
    free(px.p);

    /* labels */
    b = (bytes){0};
    add_be32(&b, 0x801);
    add_be32(&b, 5);
    add(&b, "\x03\x00\x09\x01\x07", 5);
    CHECK(!idx_parse(b.p, b.len, &a, err, sizeof err), "idx labels: %s", err);
    int lab[5], top = -1;
    CHECK(!npy_labels(&a, 5, lab, &top, err, sizeof err), "idx labels: %s", err);
    CHECK(lab[0] == 3 && lab[2] == 9 && lab[4] == 7 && top == 9, "idx labels read wrong");
    CHECK(npy_labels(&a, 4, lab, &top, err, sizeof err) && strstr(err, "5 labels for 4"),
          "label count mismatch: \"%s\"", err);
    /* a 2-D IDX and a signed one */
    b.p[3] = 2;
    CHECK(idx_parse(b.p, b.len, &a, err, sizeof err) && strstr(err, "2 dimensions"),
          "2-D IDX: \"%s\"", err);
    b.p[2] = 0x09;
    CHECK(idx_parse(b.p, b.len, &a, err, sizeof err) && strstr(err, "0x09"), "int8 IDX: \"%s\"",
          err);
    /* a header of absurd dimensions */
    free(b.p);
    b = (bytes){0};
    add_be32(&b, 0x803);
    add_be32(&b, 100000000), add_be32(&b, 65536), add_be32(&b, 65536);
    CHECK(idx_parse(b.p, b.len, &a, err, sizeof err), "absurd IDX accepted");
    free(b.p);
}

/* ---- .npy -------------------------------------------------------------------------- */

/* An .npy of images in a file, mapped and compared. */
static void good_npy(const char *name, const char *descr, char kind, int item, npy_layout layout,
                     const char *shape, int n, int c, int h, int w) {
    bytes px = images(n, c, h, w, kind, item, layout), b = {0};
    npy(&b, descr, 0, shape, px.p, px.len);
    const char *path = save(name, &b);
    npz_file map;
    npy_array a;
    CHECK(npy_is_npy(path), "%s: not taken for an .npy", name);
    capture();
    const int rc = npy_open("array_fixtures", path, &map, &a);
    const char *text = said();
    CHECK(!rc, "%s: refused: %s", name, text);
    if (!rc) {
        CHECK(a.layout == layout, "%s: layout %d, wrote %d", name, a.layout, layout);
        CHECK(npy_image_layout(&a) == layout, "%s: npy_image_layout", name);
        CHECK(!a.owned, "%s: a mapped array owns memory", name);
        check_pixels(name, &a, n, c, h, w);
        npz_close(&map);
    }
    free(px.p);
    free(b.p);
}

/* An .npy that npy_open must refuse, saying `reason` and the file. */
static void bad_npy(const char *name, const bytes *b, const char *reason) {
    const char *path = save(name, b);
    npz_file map = {0};
    npy_array a;
    capture();
    const int rc = npy_open("array_fixtures", path, &map, &a);
    const char *text = said();
    CHECK(rc == -1 && strstr(text, reason) && strstr(text, path), "%s: \"%s\" (want \"%s\")", name,
          text, reason);
    CHECK(!map.map, "%s: a refused file left mapped", name);
    if (!rc) npz_close(&map);
}

static void test_npy(void) {
    good_npy("u8-nhw.npy", "|u1", 'u', 1, NPY_NHW, "(3, 4, 5)", 3, 1, 4, 5);
    good_npy("u16-nhwc.npy", "<u2", 'u', 2, NPY_NHWC, "(2, 4, 5, 3)", 2, 3, 4, 5);
    good_npy("f32-nchw.npy", "<f4", 'f', 4, NPY_NCHW, "(2, 3, 4, 5)", 2, 3, 4, 5);
    good_npy("f64-nhw.npy", "<f8", 'f', 8, NPY_NHW, "(2, 6, 7)", 2, 1, 6, 7);
    good_npy("f32-nhwc4.npy", "<f4", 'f', 4, NPY_NHWC, "(2, 3, 2, 4)", 2, 4, 3, 2);
    /* both shape[1] and shape[3] are channel counts: N x H x W x C */
    good_npy("u8-ambiguous.npy", "|u1", 'u', 1, NPY_NHWC, "(2, 3, 3, 3)", 2, 3, 3, 3);

    bytes px = images(2, 1, 4, 5, 'u', 1, NPY_NHW), b = {0};
    npy(&b, "|u1", 0, "(2, 4, 5)", px.p, px.len - 1);
    bad_npy("truncated.npy", &b, "truncated");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(3, 4, 5)", px.p, px.len);
    bad_npy("lying.npy", &b, "truncated: shape needs 60 bytes of data, there are 40");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(1, 4, 5)", px.p, px.len);
    bad_npy("trailing.npy", &b, "bytes after the data");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 1, "(2, 4, 5)", px.p, px.len);
    bad_npy("fortran.npy", &b, "fortran_order is True");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(1099511627776, 1099511627776, 1099511627776)", px.p, px.len);
    bad_npy("absurd.npy", &b, "more than memory can hold");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(1000000000, 1000, 1000)", px.p, px.len);
    bad_npy("huge.npy", &b, "truncated: shape needs");
    free(b.p), b = (bytes){0};
    npy(&b, ">f4", 0, "(2, 4, 5)", px.p, px.len);
    bad_npy("big-endian.npy", &b, "big-endian");
    free(b.p), b = (bytes){0};
    npy(&b, "<c8", 0, "(2, 4, 5)", px.p, px.len);
    bad_npy("complex.npy", &b, "not one of these tools'");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(2, 4, 5)", px.p, px.len);
    b.p[6] = 9;
    bad_npy("version9.npy", &b, "version 9");
    b.p[6] = 1;
    b.p[0] = 'X';
    bad_npy("magic.npy", &b, "magic");
    b.len = 9;
    bad_npy("tiny.npy", &b, "truncated");
    free(b.p);

    /* images that are not images, or whose values are not pixels */
    char err[256];
    npy_array a;
    b = (bytes){0};
    npy(&b, "|u1", 0, "(2, 20)", px.p, px.len);
    CHECK(!npy_parse(b.p, b.len, &a, err, sizeof err), "2-D: %s", err);
    int c, h, w;
    const char *why = npy_image_error(&a);
    CHECK(npy_image_dims(&a, &c, &h, &w) == -1 && why && strstr(why, "2-D"),
          "a 2-D array taken for images (%s)", why ? why : "no reason");
    free(b.p), b = (bytes){0};
    npy(&b, "|u1", 0, "(1, 5, 2, 2)", px.p, 20);
    CHECK(!npy_parse(b.p, b.len, &a, err, sizeof err), "5 channels: %s", err);
    CHECK(npy_image_dims(&a, &c, &h, &w) == -1 && strstr(npy_image_error(&a), "channel"),
          "1 x 5 x 2 x 2 taken for images");
    free(b.p), b = (bytes){0};
    npy(&b, "<i4", 0, "(1, 5)", px.p, 20);
    CHECK(!npy_parse(b.p, b.len, &a, err, sizeof err), "int32: %s", err);
    a.ndim = 3, a.shape[0] = 1, a.shape[1] = 1, a.shape[2] = 5;
    CHECK(npy_image_dims(&a, &c, &h, &w) == -1, "int32 images taken");
    free(b.p);
    free(px.p);

    float f[12];
    for (int k = 0; k < 12; k++)
        f[k] = (float)k / 12.0f;
    f[7] = NAN;
    b = (bytes){0};
    npy(&b, "<f4", 0, "(3, 2, 2)", f, sizeof f);
    CHECK(!npy_parse(b.p, b.len, &a, err, sizeof err), "float32 NaN: %s", err);
    float img[4];
    CHECK(!npy_image(&a, 0, img) && npy_image(&a, 1, img) == -1 && !npy_image(&a, 2, img),
          "an image with a NaN read (or its neighbours refused)");
    f[7] = 1.5f;
    memcpy(b.p + b.len - sizeof f, f, sizeof f);
    CHECK(npy_image(&a, 1, img) == -1, "an image with 1.5 read");
    f[7] = INFINITY;
    memcpy(b.p + b.len - sizeof f, f, sizeof f);
    CHECK(npy_image(&a, 1, img) == -1, "an image with inf read");
    free(b.p);
}

/* ---- labels ------------------------------------------------------------------------ */

static void label_case(const char *what, const char *descr, const char *shape, const void *data,
                       size_t len, size_t n, const char *reason) {
    bytes b = {0};
    npy(&b, descr, 0, shape, data, len);
    npy_array a;
    char err[256] = "";
    int out[8], top = -1;
    CHECK(!npy_parse(b.p, b.len, &a, err, sizeof err), "%s: %s", what, err);
    const int rc = npy_labels(&a, n, out, &top, err, sizeof err);
    if (reason)
        CHECK(rc == -1 && strstr(err, reason), "%s: \"%s\" (want \"%s\")", what, err, reason);
    else
        CHECK(!rc && out[0] == 2 && out[1] == 0 && out[2] == 7 && top == 7, "%s: %s", what, err);
    free(b.p);
}

static void test_labels(void) {
    const int64_t i8[3] = {2, 0, 7}, neg[3] = {2, -1, 7};
    const int32_t i4[3] = {2, 0, 7};
    const uint8_t u1[3] = {2, 0, 7}, b1[3] = {1, 0, 1};
    const float f4[3] = {2, 0, 7}, frac[3] = {2, 0.5f, 7}, nan[3] = {2, NAN, 7};
    const double f8[3] = {2, 0, 7};
    const int64_t huge[3] = {2, 0, 70000};
    label_case("int64", "<i8", "(3,)", i8, sizeof i8, 3, NULL);
    label_case("int32", "<i4", "(3,)", i4, sizeof i4, 3, NULL);
    label_case("uint8", "|u1", "(3,)", u1, sizeof u1, 3, NULL);
    label_case("N x 1", "|u1", "(3, 1)", u1, sizeof u1, 3, NULL);
    label_case("whole float32", "<f4", "(3,)", f4, sizeof f4, 3, NULL);
    label_case("whole float64", "<f8", "(3,)", f8, sizeof f8, 3, NULL);
    label_case("fractions", "<f4", "(3,)", frac, sizeof frac, 3, "not a whole number");
    label_case("NaN", "<f4", "(3,)", nan, sizeof nan, 3, "not a whole number");
    label_case("negative", "<i8", "(3,)", neg, sizeof neg, 3, "label -1 of image 1 is negative");
    label_case("bool", "|b1", "(3,)", b1, sizeof b1, 3, "bool");
    label_case("count", "<i8", "(3,)", i8, sizeof i8, 4, "3 labels for 4 images");
    label_case("huge", "<i8", "(3,)", huge, sizeof huge, 3, "over 65535");
    label_case("2-D", "|u1", "(1, 3)", u1, sizeof u1, 1, "N or N x 1");
}

/* ---- .npz -------------------------------------------------------------------------- */

typedef struct member {
    const char *name;
    bytes npy;
    int deflate;
} member;

/* A zip of the members as np.savez or np.savez_compressed writes it; `crc_off`
 * is added to every CRC-32 (to damage them). */
static bytes zip(member *m, int count, uint32_t crc_off) {
    bytes z = {0}, cd = {0};
    for (int k = 0; k < count; k++) {
        bytes data = {0};
        if (m[k].deflate) {
            z_stream s = {0};
            if (deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
            data.cap = deflateBound(&s, m[k].npy.len);
            data.p = malloc(data.cap);
            s.next_in = m[k].npy.p;
            s.avail_in = (uInt)m[k].npy.len;
            s.next_out = data.p;
            s.avail_out = (uInt)data.cap;
            if (deflate(&s, Z_FINISH) != Z_STREAM_END) abort();
            data.len = s.total_out;
            deflateEnd(&s);
        } else {
            add(&data, m[k].npy.p, m[k].npy.len);
        }
        const uint32_t crc = (uint32_t)crc32(0, m[k].npy.p, (uInt)m[k].npy.len) + crc_off;
        const size_t nlen = strlen(m[k].name), offset = z.len;
        add_le(&z, 0x04034b50u, 4);
        add_le(&z, 20, 2), add_le(&z, 0, 2), add_le(&z, m[k].deflate ? 8 : 0, 2);
        add_le(&z, 0, 4), add_le(&z, crc, 4), add_le(&z, data.len, 4), add_le(&z, m[k].npy.len, 4);
        add_le(&z, nlen, 2), add_le(&z, 0, 2);
        add(&z, m[k].name, nlen);
        add(&z, data.p, data.len);
        add_le(&cd, 0x02014b50u, 4);
        add_le(&cd, 20, 2), add_le(&cd, 20, 2), add_le(&cd, 0, 2),
            add_le(&cd, m[k].deflate ? 8 : 0, 2);
        add_le(&cd, 0, 4), add_le(&cd, crc, 4), add_le(&cd, data.len, 4),
            add_le(&cd, m[k].npy.len, 4);
        add_le(&cd, nlen, 2), add_le(&cd, 0, 2), add_le(&cd, 0, 2), add_le(&cd, 0, 2);
        add_le(&cd, 0, 2), add_le(&cd, 0, 4), add_le(&cd, offset, 4);
        add(&cd, m[k].name, nlen);
        free(data.p);
    }
    const size_t at = z.len;
    add(&z, cd.p, cd.len);
    add_le(&z, 0x06054b50u, 4);
    add_le(&z, 0, 2), add_le(&z, 0, 2), add_le(&z, (uint64_t)count, 2),
        add_le(&z, (uint64_t)count, 2);
    add_le(&z, cd.len, 4), add_le(&z, at, 4), add_le(&z, 0, 2);
    free(cd.p);
    return z;
}

/* The members of a zip in a file, read with npz_read. */
static void good_npz(const char *name, int deflate) {
    const int64_t y[3] = {4, 1, 9};
    member m[2] = {{"x_train.npy", {0}, deflate}, {"y_train.npy", {0}, deflate}};
    bytes px = images(3, 3, 4, 5, 'u', 1, NPY_NHWC);
    npy(&m[0].npy, "|u1", 0, "(3, 4, 5, 3)", px.p, px.len);
    npy(&m[1].npy, "<i8", 0, "(3,)", y, sizeof y);
    bytes z = zip(m, 2, 0);
    const char *path = save(name, &z);
    npz_file f;
    npy_array x, l;
    capture();
    int rc = npz_open("array_fixtures", path, &f);
    if (!rc) rc = npz_read("array_fixtures", path, &f, "x_train", &x);
    if (!rc) rc = npz_read("array_fixtures", path, &f, "y_train", &l);
    const char *text = said();
    CHECK(!rc, "%s: refused: %s", name, text);
    if (!rc) {
        CHECK(!deflate == !x.owned && !deflate == !l.owned, "%s: owned is wrong", name);
        CHECK(deflate || (x.data > f.map && x.data < f.map + f.len), "%s: not mapped", name);
        check_pixels(name, &x, 3, 3, 4, 5);
        int lab[3], top = 0;
        char err[256];
        CHECK(!npy_labels(&l, 3, lab, &top, err, sizeof err) && lab[0] == 4 && lab[2] == 9 &&
                  top == 9,
              "%s: labels: %s", name, err);
        npy_array_free(&x);
        npy_array_free(&l);
        CHECK(!x.owned && !x.data == !!deflate, "%s: npy_array_free", name);
        npy_array_free(&x); /* twice is harmless */
        capture();
        CHECK(npz_read("array_fixtures", path, &f, "x_test", &x) == 1, "%s: a missing member",
              name);
        said();
        /* npz_array, as before: stored members only */
        capture();
        rc = npz_array("array_fixtures", path, &f, "x_train", &x);
        text = said();
        CHECK(deflate ? rc == -1 && strstr(text, "is compressed") : rc == 0 && !x.owned,
              "%s: npz_array: %d %s", name, rc, text);
        npz_close(&f);
    }
    free(px.p);
    free(m[0].npy.p);
    free(m[1].npy.p);
    free(z.p);
}

/* A zip npz_read must refuse, saying `reason`. */
static void bad_npz(const char *name, const bytes *z, const char *reason) {
    const char *path = save(name, z);
    npz_file f;
    npy_array x = {0};
    capture();
    int rc = npz_open("array_fixtures", path, &f);
    if (!rc) {
        rc = npz_read("array_fixtures", path, &f, "x_train", &x);
        if (!rc) npy_array_free(&x);
        npz_close(&f);
    }
    const char *text = said();
    CHECK(rc == -1 && strstr(text, reason) && strstr(text, path), "%s: \"%s\" (want \"%s\")", name,
          text, reason);
}

static void test_npz(void) {
    good_npz("stored.npz", 0);
    good_npz("deflated.npz", 1);

    bytes px = images(3, 1, 40, 40, 'u', 1, NPY_NHW);
    member m[1] = {{"x_train.npy", {0}, 1}};
    npy(&m[0].npy, "|u1", 0, "(3, 40, 40)", px.p, px.len);
    bytes z = zip(m, 1, 1);
    bad_npz("bad-crc.npz", &z, "bad CRC-32");
    free(z.p);
    z = zip(m, 1, 0);
    /* corrupt the deflate stream: its first block header becomes type 3 */
    z.p[30 + 11] |= 0x06;
    bad_npz("corrupt.npz", &z, "corrupt deflate data");
    free(z.p);
    z = zip(m, 1, 0);
    /* the sizes: uncompressed 1 byte more than the stream makes; absurd */
    const size_t cd = z.len - 22 - 46 - 11;
    z.p[cd + 24] += 1;
    bad_npz("size.npz", &z, "its size field says");
    z.p[cd + 24] -= 1;
    z.p[cd + 27] = 0x7f; /* about 2 GiB from a few hundred bytes */
    bad_npz("absurd.npz", &z, "damaged");
    free(z.p);
    /* a member cut short */
    z = zip(m, 1, 0);
    const size_t csize = z.p[cd + 20] | (size_t)z.p[cd + 21] << 8;
    z.p[cd + 20] = (unsigned char)(csize / 2), z.p[cd + 21] = (unsigned char)(csize / 2 >> 8);
    bad_npz("cut.npz", &z, "truncated deflate data");
    free(z.p);
    /* a stored member whose .npy lies about its shape */
    free(m[0].npy.p);
    m[0].npy = (bytes){0};
    m[0].deflate = 0;
    npy(&m[0].npy, "|u1", 0, "(4, 40, 40)", px.p, px.len);
    z = zip(m, 1, 0);
    bad_npz("lying.npz", &z, "x_train.npy: truncated: shape needs");
    free(z.p);
    free(m[0].npy.p);
    free(px.p);
}

/* ---- the writer -------------------------------------------------------------------- */

static void test_writer(int zip64) {
    char err[512];
    const char *path = path_of(zip64 ? "written64.npz" : "written.npz");
    npz_writer w;
    const long xs[3] = {3, 4, 5}, ys[1] = {3};
    bytes px = images(3, 1, 4, 5, 'u', 1, NPY_NHW);
    const int64_t y[3] = {5, 0, 3};
    int rc = npz_write_begin(&w, path, err, sizeof err);
    w.zip64 = zip64;
    if (!rc) rc = npz_write_member(&w, "x_test", "|u1", 3, xs, err, sizeof err);
    for (int i = 0; i < 3 && !rc; i++) /* image by image, as ram-data streams them */
        rc = npz_write_data(&w, px.p + 20 * i, 20, err, sizeof err);
    if (!rc) rc = npz_write_member(&w, "y_test", "<i8", 1, ys, err, sizeof err);
    if (!rc) rc = npz_write_data(&w, y, sizeof y, err, sizeof err);
    if (!rc) rc = npz_write_end(&w, err, sizeof err);
    npz_write_abort(&w);
    CHECK(!rc, "writer: %s", err);
    CHECK(access(path, F_OK) == 0, "writer: no %s", path);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(access(tmp, F_OK) != 0, "writer: %s left behind", tmp);
    npz_file f;
    npy_array x, l;
    capture();
    rc = npz_open("array_fixtures", path, &f);
    if (!rc) rc = npz_read("array_fixtures", path, &f, "x_test", &x);
    if (!rc) rc = npz_read("array_fixtures", path, &f, "y_test", &l);
    const char *text = said();
    CHECK(!rc, "writer%s: its file refused: %s", zip64 ? " (zip64)" : "", text);
    if (!rc) {
        check_pixels("writer", &x, 3, 1, 4, 5);
        int lab[3];
        CHECK(!npy_labels(&l, 3, lab, NULL, err, sizeof err) && lab[0] == 5 && lab[2] == 3,
              "writer: labels %s", err);
        npz_close(&f);
    }
    /* too few bytes for the shape: refused, and no file appears */
    const char *short_path = path_of("short.npz");
    rc = npz_write_begin(&w, short_path, err, sizeof err);
    if (!rc) rc = npz_write_member(&w, "x_test", "|u1", 3, xs, err, sizeof err);
    if (!rc) rc = npz_write_data(&w, px.p, 59, err, sizeof err);
    if (!rc) rc = npz_write_end(&w, err, sizeof err);
    npz_write_abort(&w);
    CHECK(rc == -1 && strstr(err, "short"), "writer: a short member: \"%s\"", err);
    CHECK(access(short_path, F_OK) != 0, "writer: a short member's file written");

    /* NumPy reads it too */
    const char *py = getenv("RAM_TEST_PYTHON");
    if (py && *py) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy' 2>/dev/null", py);
        if (system(cmd) == 0) {
            snprintf(
                cmd, sizeof cmd,
                "'%s' -c 'import numpy as np, sys, zipfile\n"
                "z = np.load(sys.argv[1])\n"
                "assert z.files == [\"x_test\", \"y_test\"], z.files\n"
                "x = z[\"x_test\"]\n"
                "assert x.dtype == np.uint8 and x.shape == (3, 4, 5), x.shape\n"
                "assert z[\"y_test\"].tolist() == [5, 0, 3] and z[\"y_test\"].dtype == np.int64\n"
                "assert x.tobytes() == open(sys.argv[2], \"rb\").read()\n"
                "assert zipfile.ZipFile(sys.argv[1]).testzip() is None\n' '%s' '%s'",
                py, path, save("pixels", &px));
            CHECK(system(cmd) == 0, "np.load of the writer's %s", path);
        }
    }
    free(px.p);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/array_fixtures-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) return perror("array_fixtures: mkdtemp"), 1;
    test_idx();
    test_npy();
    test_labels();
    test_npz();
    test_writer(0);
    test_writer(1);
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (failures)
        fprintf(stderr, "array_fixtures: %d failures\n", failures);
    else
        printf("array_fixtures: ok\n");
    return failures ? 1 : 0;
}
