/* Image files for the tests of the tools' image readers, written with libpng
 * and libjpeg directly (no other image library needed):
 *
 *   image_fixtures DIR   DIR/shapes: an image folder of 3 classes of 16x16
 *                        shapes (train/ and test/, some JPEG, some RGB);
 *                        DIR/good: one file per PNG and JPEG kind the reader
 *                        takes; DIR/bad: files it must refuse.
 *   image_fixtures       also decodes DIR/good's kinds in memory and checks
 *                        every sample against what was written.
 *
 * Exit status 0, or 1 with what went wrong on stderr. */
#define _XOPEN_SOURCE 700 /* open_memstream, mkdtemp, nftw, strdup */
#include "image.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <png.h>

#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

static void bad(const char *what) {
    fprintf(stderr, "image_fixtures: %s\n", what);
    failures++;
}

/* ---- writing ------------------------------------------------------------------ */

static unsigned char *buf;
static size_t buf_len;
static int interlaced, progressive; /* how the next PNG or JPEG is written */

/* A PNG of w x h samples (rows of interleaved `depth`-bit samples) in buf. */
static void png_bytes(int w, int h, int depth, int type, const unsigned char *rows,
                      const png_color *palette, int colours, int trns) {
    free(buf);
    FILE *f = open_memstream((char **)&buf, &buf_len);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) abort();
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, depth, type,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette) png_set_PLTE(png, info, palette, colours);
    png_byte alpha[1] = {0};
    if (trns) png_set_tRNS(png, info, alpha, 1, NULL);
    png_write_info(png, info);
    const int passes = png_set_interlace_handling(png);
    const size_t stride = png_get_rowbytes(png, info);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++)
            png_write_row(png, rows + y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* A JPEG of w x h samples with `comps` components in colour space `cs`. */
static void jpeg_bytes(int w, int h, int comps, J_COLOR_SPACE cs, const unsigned char *px) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    unsigned long len = 0;
    free(buf);
    buf = NULL;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &len);
    c.image_width = w;
    c.image_height = h;
    c.input_components = comps;
    c.in_color_space = cs;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 98, TRUE);
    if (progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)px + c.next_scanline * w * comps;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    buf_len = len;
}

static void save(const char *dir, const char *name, size_t len) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) bad(path);
}

static uint32_t crc(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

/* A PNG that only declares w x h: signature, IHDR, an empty IDAT, IEND. */
static size_t png_header_only(uint32_t w, uint32_t h) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    free(buf);
    buf = calloc(1, 64);
    memcpy(buf, sig, 8);
    unsigned char *p = buf + 8;
    put32(p, 13);
    memcpy(p + 4, "IHDR", 4);
    put32(p + 8, w);
    put32(p + 12, h);
    p[16] = 8; /* depth; grey, deflate, no filter, no interlace */
    put32(p + 21, crc(p + 4, 17));
    p += 25;
    for (int k = 0; k < 2; k++, p += 12) {
        memcpy(p + 4, k ? "IEND" : "IDAT", 4);
        put32(p + 8, crc(p + 4, 4));
    }
    return (size_t)(p - buf);
}

/* ---- the shapes folder --------------------------------------------------------- */

static uint32_t rng = 12345;
static int next(int n) {
    rng = rng * 1664525u + 1013904223u;
    return (int)((rng >> 8) % (uint32_t)n);
}

/* Shape `cls` (0 circle, 1 cross, 2 square) on 16 x 16, moved and noisy. */
static void shape(int cls, unsigned char *px) {
    const float cx = 7.5f + next(5) - 2, cy = 7.5f + next(5) - 2;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            const float dx = fabsf(x - cx), dy = fabsf(y - cy);
            const float m = dx > dy ? dx : dy;
            const int on = cls == 0   ? fabsf(sqrtf(dx * dx + dy * dy) - 5) < 1
                           : cls == 1 ? (dx < 1.5f && dy < 6) || (dy < 1.5f && dx < 6)
                                      : m >= 4 && m < 5.5f;
            const int v = (on ? 230 : 10) + next(21) - 10;
            px[y * 16 + x] = (unsigned char)v;
        }
}

static void shapes(const char *dir) {
    static const char *const names[] = {"circle", "cross", "square"};
    static const char *const splits[] = {"train", "test"};
    char sub[8192], name[64];
    unsigned char px[256], rgb[768];
    snprintf(sub, sizeof sub, "%s/shapes", dir);
    mkdir(sub, 0777);
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 3; c++) {
            snprintf(sub, sizeof sub, "%s/shapes/%s", dir, splits[s]);
            mkdir(sub, 0777);
            snprintf(sub, sizeof sub, "%s/shapes/%s/%s", dir, splits[s], names[c]);
            mkdir(sub, 0777);
            for (int i = 0; i < (s ? 12 : 40); i++) {
                shape(c, px);
                const int jpeg = i % 5 == 3, colour = i % 7 == 4;
                snprintf(name, sizeof name, "%03d.%s", i, jpeg ? "jpg" : "png");
                for (int k = 0; k < 768; k++)
                    rgb[k] = px[k / 3];
                if (jpeg)
                    jpeg_bytes(16, 16, 1, JCS_GRAYSCALE, px);
                else
                    png_bytes(16, 16, 8, colour ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                              colour ? rgb : px, NULL, 0, 0);
                save(sub, name, buf_len);
            }
        }
}

/* ---- the kinds the reader takes, checked -------------------------------------- */

#define W 5
#define H 3

static int sample(int x, int y, int k) {
    return (x * 7 + y * 13 + k * 29) % 256;
}

/* Decode buf and compare with want(x, y, k) within tol; save it as name. */
static void check(const char *dir, const char *name, int c, float (*want)(int, int, int),
                  float tol) {
    image img;
    char err[256], what[512];
    save(dir, name, buf_len);
    if (image_decode(buf, buf_len, IMAGE_MAX_PIXELS, &img, err, sizeof err)) {
        snprintf(what, sizeof what, "%s: %s", name, err);
        bad(what);
        return;
    }
    const int w = strstr(name, "jpg") ? 8 : W, h = strstr(name, "jpg") ? 8 : H;
    if (img.c != c || img.w != w || img.h != h) {
        snprintf(what, sizeof what, "%s: %dx%dx%d, not %dx%dx%d", name, img.c, img.h, img.w, c, h,
                 w);
        bad(what);
    }
    for (int k = 0; k < img.c && !failures; k++)
        for (int i = 0; i < img.h * img.w; i++)
            if (fabsf(img.px[k * img.h * img.w + i] - want(i % img.w, i / img.w, k)) > tol) {
                snprintf(what, sizeof what, "%s: sample %d of channel %d is %g, not %g", name, i, k,
                         img.px[k * img.h * img.w + i], want(i % img.w, i / img.w, k));
                bad(what);
                break;
            }
    image_free(&img);
}

static float want8(int x, int y, int k) {
    return sample(x, y, k) / 255.0f;
}
static float want16(int x, int y, int k) {
    return (sample(x, y, k) * 257 + x) / 65535.0f;
}
static const png_color palette[3] = {{10, 20, 30}, {200, 100, 50}, {0, 255, 0}};
static float want_pal(int x, int y, int k) {
    const png_color p = palette[(x + y) % 3];
    return (k == 0 ? p.red : k == 1 ? p.green : k == 2 ? p.blue : (x + y) % 3 ? 255 : 0) / 255.0f;
}
static float want4(int x, int y, int k) {
    return (float)((x + y + k) % 16) * 17 / 255.0f;
}
static float want_grey(int x, int y, int k) {
    return (void)x, (void)y, (void)k, 128 / 255.0f;
}
static float want_rgb(int x, int y, int k) {
    return (void)x, (void)y, (k == 0 ? 200 : k == 1 ? 50 : 100) / 255.0f;
}

/* Interleaved rows of c samples of `bytes` each, as want8/want16 say. */
static void fill(unsigned char *rows, int c, int bytes) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < c; k++) {
                unsigned char *p = rows + ((y * W + x) * c + k) * bytes;
                const int v = sample(x, y, k) * (bytes == 2 ? 257 : 1) + (bytes == 2 ? x : 0);
                if (bytes == 2)
                    p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v;
                else
                    p[0] = (unsigned char)v;
            }
}

static void good(const char *dir) {
    static const struct {
        const char *name;
        int type, c;
    } kinds[] = {{"grey", PNG_COLOR_TYPE_GRAY, 1},
                 {"grey-alpha", PNG_COLOR_TYPE_GRAY_ALPHA, 2},
                 {"rgb", PNG_COLOR_TYPE_RGB, 3},
                 {"rgba", PNG_COLOR_TYPE_RGB_ALPHA, 4}};
    unsigned char rows[W * H * 8], px[8 * 8 * 3];
    char name[64];
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        for (int bytes = 1; bytes <= 2; bytes++) {
            fill(rows, kinds[i].c, bytes);
            png_bytes(W, H, 8 * bytes, kinds[i].type, rows, NULL, 0, 0);
            snprintf(name, sizeof name, "%s%d.png", kinds[i].name, 8 * bytes);
            check(dir, name, kinds[i].c, bytes == 2 ? want16 : want8, 1e-6f);
        }
    for (int trns = 0; trns <= 1; trns++) {
        for (int k = 0; k < W * H; k++)
            rows[k] = (unsigned char)((k % W + k / W) % 3);
        png_bytes(W, H, 8, PNG_COLOR_TYPE_PALETTE, rows, palette, 3, trns);
        check(dir, trns ? "palette-trns.png" : "palette.png", trns ? 4 : 3, want_pal, 1e-6f);
    }
    memset(rows, 0, sizeof rows); /* 4-bit grey: two samples a byte, rows of 3 bytes */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            rows[y * 3 + x / 2] |= (unsigned char)(((x + y) % 16) << (x % 2 ? 0 : 4));
    png_bytes(W, H, 4, PNG_COLOR_TYPE_GRAY, rows, NULL, 0, 0);
    check(dir, "grey4.png", 1, want4, 1e-6f);
    memset(px, 128, 64);
    jpeg_bytes(8, 8, 1, JCS_GRAYSCALE, px);
    check(dir, "grey.jpg", 1, want_grey, 3 / 255.0f);
    for (int k = 0; k < 64 * 3; k++)
        px[k] = (unsigned char)(k % 3 == 0 ? 200 : k % 3 == 1 ? 50 : 100);
    jpeg_bytes(8, 8, 3, JCS_RGB, px);
    check(dir, "rgb.jpg", 3, want_rgb, 6 / 255.0f);
    progressive = interlaced = 1;
    jpeg_bytes(8, 8, 3, JCS_RGB, px);
    check(dir, "rgb-progressive.jpg", 3, want_rgb, 6 / 255.0f);
    fill(rows, 3, 2);
    png_bytes(W, H, 16, PNG_COLOR_TYPE_RGB, rows, NULL, 0, 0);
    check(dir, "rgb16-interlaced.png", 3, want16, 1e-6f);
    progressive = interlaced = 0;
}

/* ---- what the reader must refuse ---------------------------------------------- */

/* Decoding buf must fail with a message containing `why`; saved as name. */
static void refuse(const char *dir, const char *name, size_t len, const char *why) {
    image img = {0, 0, 0, NULL, 0};
    char err[256] = "", what[512];
    save(dir, name, len);
    if (!image_decode(buf, len, IMAGE_MAX_PIXELS, &img, err, sizeof err)) {
        snprintf(what, sizeof what, "bad/%s was read", name);
        bad(what);
        image_free(&img);
    } else if (!strstr(err, why) || img.px) {
        snprintf(what, sizeof what, "bad/%s: \"%s\" does not say \"%s\"", name, err, why);
        bad(what);
    }
}

static void refused(const char *dir) {
    unsigned char px[16 * 16 * 4];
    for (int k = 0; k < (int)sizeof px; k++)
        px[k] = (unsigned char)(k * 37);
    png_bytes(16, 16, 8, PNG_COLOR_TYPE_RGB, px, NULL, 0, 0);
    refuse(dir, "truncated.png", buf_len * 6 / 10, "not a valid PNG");
    jpeg_bytes(16, 16, 3, JCS_RGB, px);
    buf[4] = 0, buf[5] = 1; /* the first segment's length */
    refuse(dir, "corrupt.jpg", buf_len, "not a valid JPEG");
    jpeg_bytes(16, 16, 3, JCS_RGB, px);
    refuse(dir, "truncated.jpg", buf_len / 2, "not a valid JPEG");
    jpeg_bytes(16, 16, 4, JCS_CMYK, px);
    refuse(dir, "cmyk.jpg", buf_len, "CMYK");
    refuse(dir, "zero.png", png_header_only(0, 0), "zero");
    refuse(dir, "huge.png", png_header_only(100000, 100000), "100000x100000");
    free(buf);
    buf = (unsigned char *)strdup("this is a text file, not a picture\n");
    refuse(dir, "text.png", strlen((char *)buf), "neither a PNG nor a JPEG");
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : NULL;
    char tmp[4096];
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/image_fixtures-XXXXXX", base && *base ? base : "/tmp");
    if (!dir && !(dir = mkdtemp(tmp))) return 1;
    char good_dir[4096], bad_dir[4096];
    snprintf(good_dir, sizeof good_dir, "%s/good", dir);
    snprintf(bad_dir, sizeof bad_dir, "%s/bad", dir);
    mkdir(dir, 0777);
    mkdir(good_dir, 0777);
    mkdir(bad_dir, 0777);
    good(good_dir);
    refused(bad_dir);
    if (argc > 1) shapes(dir);
    free(buf);
    if (argc <= 1) { /* the check alone: leave nothing behind */
        if (nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS)) bad("cannot remove the scratch folder");
    }
    if (!failures) printf("image_fixtures: all kinds read, all bad files refused\n");
    return failures ? 1 : 0;
}
