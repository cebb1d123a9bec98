/* draw: an RGB canvas with anti-aliased lines, boxes, discs and a 5x7
 * bitmap font, written as PNG with libpng (see draw.h). */
#include "draw.h"

#include <png.h>

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0}, DARK = {60, 60, 60}, FRAME = {170, 170, 170},
          GOOD = {0, 140, 60}, BAD = {210, 30, 30};

/* Tableau 10, the default of matplotlib: distinct and readable on white. */
static const rgb PALETTE[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                              {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                              {188, 189, 34},  {23, 190, 207}};
#define NPALETTE ((int)(sizeof PALETTE / sizeof PALETTE[0]))

rgb palette_colour(int k) {
    return PALETTE[k % NPALETTE];
}

void clip_all(canvas *c) {
    c->x0 = c->y0 = 0;
    c->x1 = c->w;
    c->y1 = c->h;
}

void clip_to(canvas *c, int x0, int y0, int x1, int y1) {
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

void fill_rect(canvas *c, int x, int y, int w, int h, rgb col) {
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

float clamp01(float v) {
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* Segment of width `width` with round caps; coverage from the distance of
 * each pixel centre to the segment gives the anti-aliasing. */
void draw_line(canvas *c, float ax, float ay, float bx, float by, float width, rgb col,
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

void draw_disc(canvas *c, float cx, float cy, float radius, rgb col, float alpha) {
    draw_line(c, cx, cy, cx, cy, 2.0f * radius, col, alpha);
}

/* Opaque only: with alpha < 1 the corners, covered by two segments, would
 * come out darker than the sides. */
void draw_box(canvas *c, float x0, float y0, float x1, float y1, float width, rgb col) {
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

static const glyph *find_glyph(char ch) {
    if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
    for (size_t i = 0; i < sizeof FONT / sizeof FONT[0]; i++)
        if (FONT[i].ch == ch) return &FONT[i];
    return NULL; /* space and anything unknown: blank */
}

int text_width(const char *s, int size) {
    int n = (int)strlen(s);
    return n > 0 ? (n * GLYPH_ADVANCE - 1) * size : 0;
}

/* Text with its top-left corner at (x, y), each font pixel size x size.  A
 * halo (1 font pixel of `halo` around every lit pixel) keeps labels legible
 * over busy backgrounds; pass halo_on = 0 for none. */
void draw_text(canvas *c, int x, int y, const char *s, int size, rgb col, int halo_on, rgb halo) {
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
    const char *prog;
    char msg[256];
} png_ctx;

static void png_error_fn(png_structp png, png_const_charp msg) {
    png_ctx *ctx = png_get_error_ptr(png);
    if (ctx) snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warning_fn(png_structp png, png_const_charp msg) {
    png_ctx *ctx = png_get_error_ptr(png);
    fprintf(stderr, "%s: libpng warning: %s\n", ctx ? ctx->prog : "libpng", msg);
}

/* Write the canvas as an 8-bit RGB PNG.  libpng reports errors by longjmp to
 * the setjmp below; everything that must be released there is set before
 * setjmp or is volatile. */
int write_png(const char *prog, const char *path, const canvas *c, const char *software) {
    return write_png_pixels(prog, path, c->w, c->h, 3, c->px, software);
}

int write_png_pixels(const char *prog, const char *path, int w, int h, int channels,
                     const unsigned char *px, const char *software) {
    png_ctx ctx = {prog, {0}};
    /* Remember whether we created the file: a failed write then deletes only
     * our own partial file, never something like /dev/full. */
    volatile int created = 1; /* volatile: read after longjmp */
    FILE *f = fopen(path, "wbx");
    if (!f && errno == EEXIST) {
        created = 0;
        f = fopen(path, "wb");
    }
    if (!f) {
        fprintf(stderr, "%s: cannot create %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, png_error_fn, png_warning_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        fprintf(stderr, "%s: libpng: out of memory\n", prog);
        png_destroy_write_struct(&png, &info);
        fclose(f);
        if (created) remove(path);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "%s: writing %s: libpng: %s\n", prog, path,
                ctx.msg[0] ? ctx.msg : "unknown error");
        png_destroy_write_struct(&png, &info);
        fclose(f);
        if (created) remove(path);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text = {
        .compression = PNG_TEXT_COMPRESSION_NONE, .key = "Software", .text = (char *)software};
    png_set_text(png, info, &text, 1);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, px + (size_t)y * (size_t)w * (size_t)channels);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    /* fclose flushes: a full disk shows up here, not in png_write_row. */
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        fprintf(stderr, "%s: writing %s: %s\n", prog, path, strerror(errno));
        if (created) remove(path);
        return -1;
    }
    return 0;
}