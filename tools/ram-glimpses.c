/*
 * ram-glimpses: draw where a trained RAM model looks, as a PNG figure.
 *
 *   ram-glimpses --model FILE --data DIR --out FILE.png [--dataset NAME]
 *                [--count 8] [--first K] [--scale 4] [--errors]
 *                [--policy mean|sampled|random|center] [--seed N] [--split NAME]
 *
 * One row per test digit: the digit with every glimpse's squares (one colour
 * per step, the path joining the centres), then one tile per step with what
 * the retina saw (finer scales drawn over coarser ones, as the network
 * receives them), then the predicted and true labels.
 *
 * Uses only the public API: ram_model_classify()'s `locs` output and
 * ram_glimpse_extract() with the model's own retina parameters.
 */
#include "blas.h"
#include "datasets.h"

#include <ram/ram.h>

#include <png.h>

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options -------------------------------------------------------------- */

static const char *const source_names[] = {"mean", "sampled", "random", "center"};

typedef struct options {
    const char *model, *data, *out, *split;
    dataset_kind dataset;
    int count, first, scale, errors_only;
    ram_loc_source source;
    uint64_t seed;
} options;

static void usage(FILE *f) {
    fprintf(f, "usage: ram-glimpses --model FILE --data DIR --out FILE.png [options]\n"
               "\n"
               "Draw the glimpses a model takes on MNIST test digits.\n"
               "\n"
               "  --model FILE      model or checkpoint saved by libram\n"
               "  --data DIR        directory with the MNIST IDX files\n"
               "  --out FILE.png    output image\n"
               "  --dataset NAME    mnist (default), translated60, cluttered60 or\n"
               "                    cluttered100: the fixed test set made from the t10k\n"
               "                    digits (as ram-eval); must match the model\n"
               "  --count N         number of digits, one row each (8)\n"
               "  --first K         index of the first digit (0)\n"
               "  --scale S         step tiles S times the image height, within 64..160\n"
               "                    pixels (4); the input is drawn about twice as tall\n"
               "  --errors          show only misclassified digits (from --first on)\n"
               "  --policy P        mean (default), sampled, random or center locations\n"
               "  --seed N          seed for sampled/random locations (1)\n"
               "  --split NAME      t10k (default) or train (as ram-eval --split)\n"
               "  -h, --help        show this help\n"
               "  --version         show the version\n");
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "ram-glimpses: %s needs an integer in %ld..%ld, got '%s'\n", opt, lo, hi,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    *o = (options){.split = "t10k", .count = 8, .scale = 4, .source = RAM_LOCS_MEAN, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("ram-glimpses (libram) %s\n", ram_version_string());
            exit(0);
        } else if (!strcmp(a, "--errors")) {
            o->errors_only = 1;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "ram-glimpses: unknown option or missing value: %s\n", a);
            return -1;
        } else if (!strcmp(a, "--model")) {
            o->model = argv[++i];
        } else if (!strcmp(a, "--data")) {
            o->data = argv[++i];
        } else if (!strcmp(a, "--out")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--split")) {
            o->split = argv[++i];
        } else if (!strcmp(a, "--dataset")) {
            const char *name = argv[++i];
            if (dataset_parse(name, &o->dataset) != 0) {
                fprintf(stderr,
                        "ram-glimpses: unknown --dataset '%s' (mnist, translated60, "
                        "cluttered60 or cluttered100)\n",
                        name);
                return -1;
            }
        } else if (!strcmp(a, "--policy")) {
            const char *p = argv[++i];
            int k = 0;
            while (k < 4 && strcmp(p, source_names[k]) != 0)
                k++;
            if (k == 4) {
                fprintf(stderr, "ram-glimpses: --policy must be mean, sampled, random or "
                                "center\n");
                return -1;
            }
            o->source = (ram_loc_source)k;
        } else if (!strcmp(a, "--seed")) {
            if (parse_long(a, argv[++i], 0, LONG_MAX, &v)) return -1;
            o->seed = (uint64_t)v;
        } else if (!strcmp(a, "--count")) {
            if (parse_long(a, argv[++i], 1, 1000, &v)) return -1;
            o->count = (int)v;
        } else if (!strcmp(a, "--first")) {
            if (parse_long(a, argv[++i], 0, INT_MAX, &v)) return -1;
            o->first = (int)v;
        } else if (!strcmp(a, "--scale")) {
            if (parse_long(a, argv[++i], 1, 32, &v)) return -1;
            o->scale = (int)v;
        } else {
            fprintf(stderr, "ram-glimpses: unknown option: %s\n", a);
            return -1;
        }
    }
    if (!o->model || !o->data || !o->out) {
        fprintf(stderr, "ram-glimpses: --model, --data and --out are required (see --help)\n");
        return -1;
    }
    /* The placement seed belongs to the split: only these two are defined. */
    if (o->dataset != DATASET_MNIST && strcmp(o->split, "t10k") != 0 &&
        strcmp(o->split, "train") != 0) {
        fprintf(stderr, "ram-glimpses: --dataset %s needs --split t10k or train\n",
                dataset_name(o->dataset));
        return -1;
    }
    return 0;
}

/* ---- canvas: RGB8 with anti-aliased primitives ----------------------------- */

typedef struct rgb {
    unsigned char r, g, b;
} rgb;

typedef struct canvas {
    int w, h;
    unsigned char *px;  /* w * h * 3 */
    int x0, y0, x1, y1; /* clip rectangle, [x0, x1) x [y0, y1) */
} canvas;

static const rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0}, DARK = {60, 60, 60},
                 FRAME = {170, 170, 170}, GOOD = {0, 140, 60}, BAD = {210, 30, 30};

/* Tableau 10, the default of matplotlib: distinct and readable on white. */
static const rgb PALETTE[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                              {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                              {188, 189, 34},  {23, 190, 207}};
#define NPALETTE ((int)(sizeof PALETTE / sizeof PALETTE[0]))

static void clip_all(canvas *c) {
    c->x0 = c->y0 = 0;
    c->x1 = c->w;
    c->y1 = c->h;
}

static void clip_to(canvas *c, int x0, int y0, int x1, int y1) {
    c->x0 = x0 < 0 ? 0 : x0;
    c->y0 = y0 < 0 ? 0 : y0;
    c->x1 = x1 > c->w ? c->w : x1;
    c->y1 = y1 > c->h ? c->h : y1;
}

static void blend(canvas *c, int x, int y, rgb col, float a) {
    if (x < c->x0 || y < c->y0 || x >= c->x1 || y >= c->y1 || a <= 0.0f) return;
    if (a > 1.0f) a = 1.0f;
    unsigned char *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    p[0] = (unsigned char)(p[0] + (col.r - p[0]) * a + 0.5f);
    p[1] = (unsigned char)(p[1] + (col.g - p[1]) * a + 0.5f);
    p[2] = (unsigned char)(p[2] + (col.b - p[2]) * a + 0.5f);
}

static void fill_rect(canvas *c, int x, int y, int w, int h, rgb col) {
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++)
            blend(c, i, j, col, 1.0f);
}

/* Square root by Newton's method: the example then links without libm. */
static float root(float x) {
    if (x <= 0.0f) return 0.0f;
    float r = x > 1.0f ? x : 1.0f;
    for (int i = 0; i < 40; i++) {
        float next = 0.5f * (r + x / r);
        if (next >= r) break;
        r = next;
    }
    return r;
}

static float clamp01(float v) {
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* Segment of width `width` with round caps; coverage from the distance of
 * each pixel centre to the segment gives the anti-aliasing. */
static void draw_line(canvas *c, float ax, float ay, float bx, float by, float width, rgb col,
                      float alpha) {
    float r = width * 0.5f;
    int xa = (int)((ax < bx ? ax : bx) - r - 2), xb = (int)((ax > bx ? ax : bx) + r + 2);
    int ya = (int)((ay < by ? ay : by) - r - 2), yb = (int)((ay > by ? ay : by) + r + 2);
    if (xa < c->x0) xa = c->x0;
    if (ya < c->y0) ya = c->y0;
    if (xb >= c->x1) xb = c->x1 - 1;
    if (yb >= c->y1) yb = c->y1 - 1;
    float dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
    for (int y = ya; y <= yb; y++) {
        for (int x = xa; x <= xb; x++) {
            float px = x + 0.5f - ax, py = y + 0.5f - ay;
            float t = len2 > 0.0f ? clamp01((px * dx + py * dy) / len2) : 0.0f;
            float ex = px - t * dx, ey = py - t * dy;
            float cov = clamp01(r + 0.5f - root(ex * ex + ey * ey));
            blend(c, x, y, col, alpha * cov);
        }
    }
}

static void draw_disc(canvas *c, float cx, float cy, float radius, rgb col, float alpha) {
    draw_line(c, cx, cy, cx, cy, 2.0f * radius, col, alpha);
}

/* Opaque only: with alpha < 1 the corners, covered by two segments, would
 * come out darker than the sides. */
static void draw_box(canvas *c, float x0, float y0, float x1, float y1, float width, rgb col) {
    draw_line(c, x0, y0, x1, y0, width, col, 1.0f);
    draw_line(c, x1, y0, x1, y1, width, col, 1.0f);
    draw_line(c, x1, y1, x0, y1, width, col, 1.0f);
    draw_line(c, x0, y1, x0, y0, width, col, 1.0f);
}

/* ---- a 5x7 bitmap font ------------------------------------------------------ */

typedef struct glyph {
    char ch;
    const char *rows[7];
} glyph;

static const glyph FONT[] = {
    {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
    {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
    {'3', {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
    {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
    {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
    {'6', {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
    {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
    {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
    {'9', {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
    {'A', {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'B', {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
    {'C', {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
    {'D', {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."}},
    {'E', {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
    {'F', {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
    {'G', {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
    {'H', {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'I', {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'J', {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
    {'K', {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
    {'L', {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
    {'M', {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
    {'N', {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
    {'O', {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'P', {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
    {'Q', {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
    {'R', {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
    {'S', {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
    {'T', {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
    {'U', {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'V', {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'W', {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
    {'X', {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
    {'Y', {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
    {'Z', {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
    {'#', {".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."}},
    {'.', {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
    {':', {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
    {'/', {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."}},
    {'=', {".....", ".....", "#####", ".....", "#####", ".....", "....."}},
    {'-', {".....", ".....", ".....", "#####", ".....", ".....", "....."}},
    {'%', {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"}},
    {'(', {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
    {')', {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
};

#define GLYPH_ADVANCE 6 /* 5 columns + 1 of spacing */

static const glyph *find_glyph(char ch) {
    if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
    for (size_t i = 0; i < sizeof FONT / sizeof FONT[0]; i++)
        if (FONT[i].ch == ch) return &FONT[i];
    return NULL; /* space and anything unknown: blank */
}

static int text_width(const char *s, int size) {
    int n = (int)strlen(s);
    return n > 0 ? (n * GLYPH_ADVANCE - 1) * size : 0;
}

/* Text with its top-left corner at (x, y), each font pixel size x size.  A
 * halo (1 font pixel of `halo` around every lit pixel) keeps labels legible
 * over busy backgrounds; pass halo_on = 0 for none. */
static void draw_text(canvas *c, int x, int y, const char *s, int size, rgb col, int halo_on,
                      rgb halo) {
    for (int pass = halo_on ? 0 : 1; pass < 2; pass++) {
        int pen = x;
        for (const char *p = s; *p; p++, pen += GLYPH_ADVANCE * size) {
            const glyph *g = find_glyph(*p);
            if (!g) continue;
            for (int r = 0; r < 7; r++) {
                for (int k = 0; k < 5; k++) {
                    if (g->rows[r][k] != '#') continue;
                    int gx = pen + k * size, gy = y + r * size;
                    if (pass == 0)
                        fill_rect(c, gx - size, gy - size, 3 * size, 3 * size, halo);
                    else
                        fill_rect(c, gx, gy, size, size, col);
                }
            }
        }
    }
}

/* ---- PNG output ------------------------------------------------------------ */

typedef struct png_ctx {
    char msg[256];
} png_ctx;

static void png_error_fn(png_structp png, png_const_charp msg) {
    png_ctx *ctx = png_get_error_ptr(png);
    if (ctx) snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warning_fn(png_structp png, png_const_charp msg) {
    (void)png;
    fprintf(stderr, "ram-glimpses: libpng warning: %s\n", msg);
}

/* Write the canvas as an 8-bit RGB PNG.  libpng reports errors by longjmp to
 * the setjmp below; everything that must be released there is set before
 * setjmp or is volatile. */
static int write_png(const char *path, const canvas *c) {
    png_ctx ctx = {{0}};
    /* Remember whether we created the file: a failed write then deletes only
     * our own partial file, never something like /dev/full. */
    volatile int created = 1; /* volatile: read after longjmp */
    FILE *f = fopen(path, "wbx");
    if (!f && errno == EEXIST) {
        created = 0;
        f = fopen(path, "wb");
    }
    if (!f) {
        fprintf(stderr, "ram-glimpses: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, png_error_fn, png_warning_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        fprintf(stderr, "ram-glimpses: libpng: out of memory\n");
        png_destroy_write_struct(&png, &info);
        fclose(f);
        if (created) remove(path);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "ram-glimpses: writing %s: libpng: %s\n", path,
                ctx.msg[0] ? ctx.msg : "unknown error");
        png_destroy_write_struct(&png, &info);
        fclose(f);
        if (created) remove(path);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text = {.compression = PNG_TEXT_COMPRESSION_NONE,
                     .key = "Software",
                     .text = "ram-glimpses (libram " RAM_VERSION_STRING ")"};
    png_set_text(png, info, &text, 1);
    png_write_info(png, info);
    for (int y = 0; y < c->h; y++)
        png_write_row(png, c->px + (size_t)y * (size_t)c->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    /* fclose flushes: a full disk shows up here, not in png_write_row. */
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        fprintf(stderr, "ram-glimpses: writing %s: %s\n", path, strerror(errno));
        if (created) remove(path);
        return -1;
    }
    return 0;
}

/* ---- the figure -------------------------------------------------------------- */

/* Everything the renderer needs about the chosen digits. */
typedef struct figure {
    int rows, h, w, steps, classes, patch, depth, scale;
    int side[16];         /* pixel side of each retina scale, as the sensor cuts it */
    const float *images;  /* rows x h x w */
    const int *truth;     /* rows */
    const int *pred;      /* rows */
    const float *probs;   /* rows x classes */
    const float *locs;    /* rows x steps x 2 */
    const float *glimpse; /* rows x steps x depth x patch x patch */
    const int *index;     /* rows: index in the data set */
} figure;

#define MARGIN      24
#define GAP         16
#define TILE_GAP    8
#define HEADER_SIZE 2 /* font size of the column headers */
#define LABEL_SIZE  2 /* font size of the labels on the right */

static rgb step_colour(int t) {
    return PALETTE[t % NPALETTE];
}

/* Grey digit on white: dark strokes read well next to the coloured boxes. */
static rgb grey(float v) {
    unsigned char g = (unsigned char)(255.0f - 215.0f * clamp01(v) + 0.5f);
    return (rgb){g, g, g};
}

static int render(const figure *fg, canvas *c) {
    const int biggest = fg->side[fg->depth - 1];
    const int longest = fg->h > fg->w ? fg->h : fg->w;

    /* Tiles as tall as the image at --scale, rounded down to a multiple of the
     * largest retina square so every pooled cell gets the same number of
     * pixels. */
    const int scaled = fg->h * fg->scale;
    int tile = scaled < 64 ? 64 : scaled > 160 ? 160 : scaled;
    if (tile >= biggest) tile = tile / biggest * biggest;

    /* The input at its own magnification S, whole display pixels per image
     * pixel, about twice as tall as a tile: the numbered squares of a small
     * image stay apart (by default 28 x 28 at 224 px, larger images at most
     * 320 px as tiles are at most 160). */
    int S = (2 * tile + longest / 2) / longest;
    if (S < 1) S = 1;
    const int H = fg->h * S, W = fg->w * S;
    /* Room around the image for boxes that reach past its edge; at most half
     * the image so a huge outer scale does not swamp the figure. */
    int pad_px = (biggest + 1) / 2;
    if (pad_px > longest / 2) pad_px = longest / 2;
    const int pad = pad_px * S > 10 ? pad_px * S : 10;
    const int PW = W + 2 * pad, PH = H + 2 * pad;
    const int label_w = text_width("PRED 0", LABEL_SIZE) + 8;
    const int row_h = (PH > tile ? PH : tile) + GAP;
    const int header_h = 7 * HEADER_SIZE + 12;

    const int tiles_x = MARGIN + PW + GAP;
    const int label_x = tiles_x + fg->steps * (tile + TILE_GAP) - TILE_GAP + GAP;
    const long width = (long)label_x + label_w + MARGIN;
    const long height = (long)MARGIN + header_h + (long)fg->rows * row_h - GAP + MARGIN;
    if (width > 30000 || height > 30000 || width * height > 100000000L) {
        fprintf(stderr,
                "ram-glimpses: figure of %ld x %ld pixels is too large; lower --count "
                "or --scale\n",
                width, height);
        return -1;
    }
    c->w = (int)width;
    c->h = (int)height;
    c->px = malloc((size_t)c->w * (size_t)c->h * 3);
    if (!c->px) {
        fprintf(stderr, "ram-glimpses: out of memory for a %d x %d image\n", c->w, c->h);
        return -1;
    }
    memset(c->px, 255, (size_t)c->w * (size_t)c->h * 3);
    clip_all(c);

    /* Column headers. */
    int hy = MARGIN;
    const char *in = "INPUT";
    draw_text(c, MARGIN + (PW - text_width(in, HEADER_SIZE)) / 2, hy, in, HEADER_SIZE, DARK, 0,
              WHITE);
    for (int t = 0; t < fg->steps; t++) {
        char s[32];
        snprintf(s, sizeof s, tile >= text_width("STEP 00", HEADER_SIZE) ? "STEP %d" : "%d", t + 1);
        int x = tiles_x + t * (tile + TILE_GAP) + (tile - text_width(s, HEADER_SIZE)) / 2;
        draw_text(c, x, hy, s, HEADER_SIZE, step_colour(t), 0, WHITE);
    }

    const size_t gsize = (size_t)fg->depth * (size_t)fg->patch * (size_t)fg->patch;
    for (int r = 0; r < fg->rows; r++) {
        const int top = MARGIN + header_h + r * row_h;
        const int px0 = MARGIN + pad, py0 = top + (row_h - GAP - PH) / 2 + pad;
        const float *img = fg->images + (size_t)r * (size_t)fg->h * (size_t)fg->w;
        const float *loc = fg->locs + (size_t)r * (size_t)fg->steps * 2;

        /* The digit, framed so the image border is visible on white. */
        clip_all(c);
        for (int y = 0; y < fg->h; y++)
            for (int x = 0; x < fg->w; x++)
                fill_rect(c, px0 + x * S, py0 + y * S, S, S, grey(img[y * fg->w + x]));
        draw_box(c, px0 - 0.5f, py0 - 0.5f, px0 + W + 0.5f, py0 + H + 0.5f, 1.0f, FRAME);

        /* Glimpse overlay, clipped to the panel.  Location x maps to column
         * (x + 1) * W / 2, exactly as ram_glimpse_extract() cuts it. */
        clip_to(c, MARGIN, py0 - pad, MARGIN + PW, py0 - pad + PH);
        float cx[64], cy[64];
        for (int t = 0; t < fg->steps; t++) {
            cx[t] = px0 + (loc[2 * t] + 1.0f) * 0.5f * (float)W;
            cy[t] = py0 + (loc[2 * t + 1] + 1.0f) * 0.5f * (float)H;
        }
        for (int t = 0; t < fg->steps; t++) {
            for (int k = 0; k < fg->depth; k++) {
                float hs = 0.5f * (float)(fg->side[k] * S);
                draw_box(c, cx[t] - hs, cy[t] - hs, cx[t] + hs, cy[t] + hs, k == 0 ? 2.0f : 1.25f,
                         step_colour(t));
            }
        }
        for (int t = 0; t + 1 < fg->steps; t++)
            draw_line(c, cx[t], cy[t], cx[t + 1], cy[t + 1], 1.5f, DARK, 0.85f);
        for (int t = 0; t < fg->steps; t++) {
            draw_disc(c, cx[t], cy[t], 4.0f, WHITE, 1.0f);
            draw_disc(c, cx[t], cy[t], 3.0f, step_colour(t), 1.0f);
        }
        for (int t = 0; t < fg->steps; t++) {
            char s[16];
            snprintf(s, sizeof s, "%d", t + 1);
            int fs = H >= 200 ? 2 : 1; /* numbers grow with the panel */
            draw_text(c, (int)cx[t] + 5, (int)cy[t] - 5 - 7 * fs, s, fs, step_colour(t), 1, WHITE);
        }
        clip_all(c);

        /* One tile per step: each retina scale upscaled to its true relative
         * size, finer scales on top, i.e. the foveated view the network gets. */
        const int ty = top + (row_h - GAP - tile) / 2;
        for (int t = 0; t < fg->steps; t++) {
            const int tx = tiles_x + t * (tile + TILE_GAP);
            const float *gl = fg->glimpse + ((size_t)r * (size_t)fg->steps + (size_t)t) * gsize;
            for (int y = 0; y < tile; y++) {
                /* offset from the glimpse centre, in image pixels */
                float v = ((float)y + 0.5f) / (float)tile * (float)biggest - 0.5f * biggest;
                for (int x = 0; x < tile; x++) {
                    float u = ((float)x + 0.5f) / (float)tile * (float)biggest - 0.5f * biggest;
                    int k = 0;
                    while (k < fg->depth - 1 &&
                           (2.0f * u < -fg->side[k] || 2.0f * u >= fg->side[k] ||
                            2.0f * v < -fg->side[k] || 2.0f * v >= fg->side[k]))
                        k++;
                    float fs = (float)fg->side[k];
                    int col = (int)((u + 0.5f * fs) / fs * (float)fg->patch);
                    int row = (int)((v + 0.5f * fs) / fs * (float)fg->patch);
                    col = col < 0 ? 0 : col >= fg->patch ? fg->patch - 1 : col;
                    row = row < 0 ? 0 : row >= fg->patch ? fg->patch - 1 : row;
                    float val =
                        gl[((size_t)k * (size_t)fg->patch + (size_t)row) * (size_t)fg->patch +
                           (size_t)col];
                    fill_rect(c, tx + x, ty + y, 1, 1, grey(val));
                }
            }
            /* Outline of each finer scale inside the tile. */
            for (int k = 0; k < fg->depth - 1; k++) {
                float hs = 0.5f * (float)fg->side[k] / (float)biggest * (float)tile;
                float m = 0.5f * (float)tile;
                draw_box(c, tx + m - hs, ty + m - hs, tx + m + hs, ty + m + hs, 1.0f,
                         step_colour(t));
            }
            draw_box(c, tx - 1.0f, ty - 1.0f, tx + tile + 1.0f, ty + tile + 1.0f, 2.0f,
                     step_colour(t));
        }

        /* Labels: prediction (green if right, red if wrong), truth, confidence. */
        char s[32];
        int ly = top + (row_h - GAP) / 2 - (3 * 7 * LABEL_SIZE + 2 * 6) / 2;
        int ok = fg->pred[r] == fg->truth[r];
        snprintf(s, sizeof s, "PRED %d", fg->pred[r]);
        draw_text(c, label_x, ly, s, LABEL_SIZE, ok ? GOOD : BAD, 0, WHITE);
        snprintf(s, sizeof s, "TRUE %d", fg->truth[r]);
        draw_text(c, label_x, ly + 7 * LABEL_SIZE + 6, s, LABEL_SIZE, BLACK, 0, WHITE);
        float p = fg->probs[(size_t)r * (size_t)fg->classes + (size_t)fg->pred[r]];
        snprintf(s, sizeof s, "P=%.2f", p);
        draw_text(c, label_x, ly + 2 * (7 * LABEL_SIZE + 6), s, 1, DARK, 0, WHITE);
        snprintf(s, sizeof s, "#%d", fg->index[r]);
        draw_text(c, label_x + text_width("P=0.00  ", 1), ly + 2 * (7 * LABEL_SIZE + 6), s, 1,
                  FRAME, 0, WHITE);
    }
    return 0;
}

/* ---- main -------------------------------------------------------------------- */

static void report(const char *what, ram_status s) {
    fprintf(stderr, "ram-glimpses: %s: %s (%s)\n", what, ram_last_error(), ram_status_string(s));
}

/* Where the images come from: a loaded IDX split as it is (mnist), or its 28 x
 * 28 digits placed on a canvas by dataset_make(), made only for the images
 * needed (the whole cluttered100 test set would take 400 MB). */
typedef struct source {
    dataset_kind kind;
    const float *digits; /* n x pixels (mnist) or n x 28 x 28 */
    int n;
    uint64_t seed;
    size_t pixels; /* of one output image */
} source;

/* Images first..first+count-1 of the set into out. */
static void fetch(const source *src, int first, int count, float *out) {
    for (int i = 0; i < count; i++) {
        float *dst = out + (size_t)i * src->pixels;
        if (src->kind == DATASET_MNIST)
            memcpy(dst, src->digits + (size_t)(first + i) * src->pixels, src->pixels * sizeof *dst);
        else
            dataset_make(src->kind, src->digits, src->n, first + i, src->seed, dst);
    }
}

/* Classify n images with the chosen location source. */
static ram_status classify(const options *o, const ram_model *m, ram_state *st, ram_policy *pol,
                           const float *img, int n, int *labels, float *probs, float *locs) {
    if (o->source == RAM_LOCS_MEAN) return ram_model_classify(m, st, img, n, labels, probs, locs);
    return ram_model_classify_ex(m, st, img, n, o->source, pol, labels, probs, locs);
}

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o) != 0) return 1;
    tool_blas_init("ram-glimpses", argv); /* one BLAS thread, kernels fit for the CPU */

    int rc = 1;
    ram_model *model = NULL;
    ram_state *st = NULL;
    ram_policy *pol = NULL;
    ram_glimpse *g = NULL;
    float *images = NULL, *sel = NULL, *probs = NULL, *locs = NULL, *glimpses = NULL;
    float *batch = NULL;
    int *labels = NULL, *truth = NULL, *pred = NULL, *index = NULL;
    canvas cv = {0};
    ram_status s;

    if ((s = ram_model_load(o.model, &model)) != RAM_OK) {
        fprintf(stderr, "ram-glimpses: cannot load model %s: %s (%s)\n", o.model, ram_last_error(),
                ram_status_string(s));
        goto done;
    }
    ram_model_params mp;
    ram_model_params_init(&mp);
    if ((s = ram_model_get_params(model, &mp)) != RAM_OK) {
        report("ram_model_get_params", s);
        goto done;
    }
    if (mp.glimpses > 64 || mp.glimpse.depth < 1 || mp.glimpse.depth > 16) {
        fprintf(stderr,
                "ram-glimpses: model has %d glimpses of %d scales; can draw at most 64 "
                "of at most 16\n",
                mp.glimpses, mp.glimpse.depth);
        goto done;
    }

    int n, h, w;
    if (dataset_load("ram-glimpses", o.data, o.split, o.dataset, &images, &labels, &n, &h, &w))
        goto done;
    if (dataset_check_model("ram-glimpses", o.model, &mp, o.dataset, o.data, o.split, h, w))
        goto done;
    if (o.first >= n) {
        fprintf(stderr, "ram-glimpses: --first %d but %s/%s has only %d images\n", o.first, o.data,
                o.split, n);
        goto done;
    }

    const int T = mp.glimpses, C = mp.classes;
    const size_t pixels = (size_t)h * (size_t)w;
    const source src = {.kind = o.dataset,
                        .digits = images,
                        .n = n,
                        .seed =
                            strcmp(o.split, "train") == 0 ? DATASET_VAL_SEED : DATASET_TEST_SEED,
                        .pixels = pixels};
    const int chunk = 100; /* batch for the --errors search */
    int count = o.count;
    if (!o.errors_only && count > n - o.first) count = n - o.first;
    int cap = count > chunk ? count : chunk;
    if ((s = ram_state_create(model, cap, &st)) != RAM_OK) {
        report("ram_state_create", s);
        goto done;
    }
    if (o.source == RAM_LOCS_SAMPLED || o.source == RAM_LOCS_RANDOM) {
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        pp.seed = o.seed;
        if ((s = ram_policy_create(&pp, model, &pol)) != RAM_OK) {
            report("ram_policy_create", s);
            goto done;
        }
    }

    sel = malloc((size_t)count * pixels * sizeof *sel);
    truth = malloc((size_t)cap * sizeof *truth);
    pred = malloc((size_t)cap * sizeof *pred);
    index = malloc((size_t)count * sizeof *index);
    probs = malloc((size_t)cap * (size_t)C * sizeof *probs);
    locs = malloc((size_t)cap * (size_t)T * 2 * sizeof *locs);
    if (o.errors_only) batch = malloc((size_t)chunk * pixels * sizeof *batch);
    if (!sel || !truth || !pred || !index || !probs || !locs || (o.errors_only && !batch)) {
        fprintf(stderr, "ram-glimpses: out of memory\n");
        goto done;
    }

    /* Pick the digits: the next `count` from --first, or with --errors the
     * next `count` the model gets wrong. */
    int rows = 0;
    if (!o.errors_only) {
        for (; rows < count; rows++)
            index[rows] = o.first + rows;
    } else {
        for (int b = o.first; b < n && rows < count; b += chunk) {
            int k = n - b < chunk ? n - b : chunk;
            fetch(&src, b, k, batch);
            s = classify(&o, model, st, pol, batch, k, pred, NULL, NULL);
            if (s != RAM_OK) {
                report("classify", s);
                goto done;
            }
            for (int i = 0; i < k && rows < count; i++)
                if (pred[i] != labels[b + i]) index[rows++] = b + i;
        }
        if (rows == 0) {
            fprintf(stderr, "ram-glimpses: no misclassified digit from index %d on\n", o.first);
            goto done;
        }
    }
    for (int i = 0; i < rows; i++) {
        fetch(&src, index[i], 1, sel + (size_t)i * pixels);
        truth[i] = labels[index[i]];
    }
    if (pol) ram_policy_seed(pol, o.seed); /* the figure does not depend on --errors' search */
    if ((s = classify(&o, model, st, pol, sel, rows, pred, probs, locs)) != RAM_OK) {
        report("classify", s);
        goto done;
    }

    /* What the retina saw at each step, cut by the public sensor with the
     * model's own retina parameters. */
    if ((s = ram_glimpse_create(&mp.glimpse, &g)) != RAM_OK) {
        report("ram_glimpse_create", s);
        goto done;
    }
    const size_t gsize = ram_glimpse_size(g, 1);
    glimpses = malloc((size_t)rows * (size_t)T * gsize * sizeof *glimpses);
    if (!glimpses) {
        fprintf(stderr, "ram-glimpses: out of memory\n");
        goto done;
    }
    for (int i = 0; i < rows; i++) {
        for (int t = 0; t < T; t++) {
            float *dst = glimpses + ((size_t)i * (size_t)T + (size_t)t) * gsize;
            const float *l = locs + ((size_t)i * (size_t)T + (size_t)t) * 2;
            s = ram_glimpse_extract(g, sel + (size_t)i * pixels, 1, 1, h, w, l, dst, gsize);
            if (s != RAM_OK) {
                report("ram_glimpse_extract", s);
                goto done;
            }
        }
    }

    figure fg = {.rows = rows,
                 .h = h,
                 .w = w,
                 .steps = T,
                 .classes = C,
                 .patch = mp.glimpse.patch,
                 .depth = mp.glimpse.depth,
                 .scale = o.scale,
                 .images = sel,
                 .truth = truth,
                 .pred = pred,
                 .probs = probs,
                 .locs = locs,
                 .glimpse = glimpses,
                 .index = index};
    /* The sensor's square sides: round(patch * scale^k), as documented. */
    float side = (float)mp.glimpse.patch;
    for (int k = 0; k < mp.glimpse.depth; k++, side *= mp.glimpse.scale)
        fg.side[k] = (int)(side + 0.5f);
    if (render(&fg, &cv) != 0 || write_png(o.out, &cv) != 0) goto done;

    int wrong = 0;
    for (int i = 0; i < rows; i++)
        wrong += pred[i] != truth[i];
    printf("ram-glimpses: wrote %s (%d x %d): %d %s image%s from #%d, %d misclassified, %d "
           "glimpses, %s locations\n",
           o.out, cv.w, cv.h, rows, dataset_name(o.dataset), rows == 1 ? "" : "s", index[0], wrong,
           T, source_names[o.source]);
    rc = 0;

done:
    free(cv.px);
    free(batch);
    free(glimpses);
    free(locs);
    free(probs);
    free(index);
    free(pred);
    free(truth);
    free(sel);
    free(labels);
    free(images);
    ram_glimpse_free(g);
    ram_policy_free(pol);
    ram_state_free(st);
    ram_model_free(model);
    return rc;
}
