/* draw: what ram-glimpses draws its figure with: an RGB canvas, anti-aliased
 * primitives clipped to a rectangle, a 5x7 bitmap font and PNG output. */
#ifndef RAM_TOOLS_DRAW_H
#define RAM_TOOLS_DRAW_H

typedef struct rgb {
    unsigned char r, g, b;
} rgb;

typedef struct canvas {
    int w, h;
    unsigned char *px;  /* w * h * 3 */
    int x0, y0, x1, y1; /* clip rectangle, [x0, x1) x [y0, y1) */
} canvas;

extern const rgb WHITE, BLACK, DARK, FRAME, GOOD, BAD;
/* Colour k of Tableau 10 (matplotlib's default), cycling. */
rgb palette_colour(int k);

void clip_all(canvas *c);
void clip_to(canvas *c, int x0, int y0, int x1, int y1);
void fill_rect(canvas *c, int x, int y, int w, int h, rgb col);
float clamp01(float v);
/* A segment `width` wide with round caps, alpha in [0, 1]. */
void draw_line(canvas *c, float ax, float ay, float bx, float by, float width, rgb col,
               float alpha);
void draw_disc(canvas *c, float cx, float cy, float radius, rgb col, float alpha);
/* An opaque rectangle outline. */
void draw_box(canvas *c, float x0, float y0, float x1, float y1, float width, rgb col);

#define GLYPH_ADVANCE 6 /* 5 columns + 1 of spacing */
/* Width of `s` in pixels at font size `size` (each font pixel size x size). */
int text_width(const char *s, int size);
/* Text with its top-left corner at (x, y); halo_on: one font pixel of
 * `halo` around every lit pixel, to stay legible over a busy background. */
void draw_text(canvas *c, int x, int y, const char *s, int size, rgb col, int halo_on, rgb halo);

/* The canvas as an 8-bit RGB PNG with a Software text; 0, or -1 with
 * "prog: ..." on stderr and no partial file of its own left behind. */
int write_png(const char *prog, const char *path, const canvas *c, const char *software);
/* The same for w x h pixels of 1 (grey) or 3 (RGB) interleaved bytes. */
int write_png_pixels(const char *prog, const char *path, int w, int h, int channels,
                     const unsigned char *px, const char *software);

#endif
