/* path_figure: each classified image with its glimpse path, as a grid of
 * panels in one PNG (see path_figure.h). */
#include "path_figure.h"

#include "draw.h"
#include "zoom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct path_panel {
    int tw, th;        /* the thumbnail's size: the canvas at PANEL on its longer side */
    unsigned char *px; /* tw x th x 3 */
    float *locs;       /* glimpses x 2 */
    float *zooms;      /* glimpses: each glimpse's zoom factor */
    int taken;         /* the glimpses drawn: all, or where the image stopped */
    char caption[64], file[96];
};

#define MARGIN  16
#define PAD     14                  /* room around a panel for squares that reach past the image */
#define TEXT_H  (7 * 2 + 4 + 7 + 6) /* a size-2 caption and a size-1 file line */
#define CELL_W  (PATH_FIGURE_PANEL + 2 * PAD)
#define CELL_H  (PATH_FIGURE_PANEL + 2 * PAD + TEXT_H)
#define COLUMNS 4

int path_figure_init(path_figure *f, const ram_model_params *mp, const char *prog) {
    *f = (path_figure){.c = mp->channels,
                       .h = mp->height,
                       .w = mp->width,
                       .glimpses = mp->glimpses,
                       .depth = mp->glimpse.depth};
    /* The sensor's square sides: round(patch * scale^k), as ram-glimpses
     * draws them. */
    float side = (float)mp->glimpse.patch;
    for (int k = 0; k < f->depth && k < 16; k++, side *= mp->glimpse.scale)
        f->side[k] = (int)(side + 0.5f);
    f->panels = calloc(PATH_FIGURE_MAX, sizeof *f->panels);
    if (f->panels) return 0;
    fprintf(stderr, "%s: out of memory for the glimpse figure\n", prog);
    return -1;
}

static unsigned char byte_of(float v) {
    return (unsigned char)(clamp01(v) * 255.0f + 0.5f);
}

/* The canvas box-averaged (or, when smaller than the panel, repeated) to
 * tw x th RGB bytes: grey images as grey, colour as colour. */
static void thumbnail(const path_figure *f, const float *canvas, path_panel *p) {
    const size_t plane = (size_t)f->h * (size_t)f->w;
    for (int y = 0; y < p->th; y++) {
        const long y0 = (long)y * f->h / p->th;
        long y1 = (long)(y + 1) * f->h / p->th;
        if (y1 <= y0) y1 = y0 + 1;
        for (int x = 0; x < p->tw; x++) {
            const long x0 = (long)x * f->w / p->tw;
            long x1 = (long)(x + 1) * f->w / p->tw;
            if (x1 <= x0) x1 = x0 + 1;
            unsigned char *out = p->px + 3 * ((size_t)y * p->tw + x);
            for (int ch = 0; ch < 3; ch++) {
                const float *pl = canvas + (f->c == 3 ? (size_t)ch : 0) * plane;
                double sum = 0;
                for (long r = y0; r < y1; r++)
                    for (long q = x0; q < x1; q++)
                        sum += pl[(size_t)r * f->w + q];
                out[ch] = byte_of((float)(sum / ((double)(y1 - y0) * (x1 - x0))));
            }
        }
    }
}

/* `s` cut to `width` display pixels at font `size`: its end kept when
 * `keep_end` (a file name's last part tells it apart), else its start. */
static void fit_text(char *dst, size_t len, const char *s, int width, int size, int keep_end) {
    size_t n = strlen(s), most = (size_t)((width / size + 1) / GLYPH_ADVANCE);
    if (most >= len) most = len - 1;
    if (n <= most) {
        memcpy(dst, s, n + 1);
        return;
    }
    if (most < 4) most = 4;
    if (keep_end)
        snprintf(dst, len, "..%s", s + n - (most - 2));
    else
        snprintf(dst, len, "%.*s..", (int)(most - 2), s);
}

int path_figure_add(path_figure *f, const float *canvas, const float *locs, const float *zooms,
                    int taken, const char *caption, const char *file, const char *prog) {
    if (f->n == PATH_FIGURE_MAX) {
        f->left_out++;
        return 0;
    }
    path_panel *p = &f->panels[f->n];
    const int longest = f->h > f->w ? f->h : f->w;
    p->tw = (int)lround((double)f->w * PATH_FIGURE_PANEL / longest);
    p->th = (int)lround((double)f->h * PATH_FIGURE_PANEL / longest);
    if (p->tw < 1) p->tw = 1;
    if (p->th < 1) p->th = 1;
    p->px = malloc((size_t)p->tw * (size_t)p->th * 3);
    p->locs = malloc(sizeof *p->locs * 2 * (size_t)f->glimpses);
    p->zooms = malloc(sizeof *p->zooms * (size_t)f->glimpses);
    if (!p->px || !p->locs || !p->zooms) {
        free(p->px);
        free(p->locs);
        free(p->zooms);
        p->px = NULL;
        p->locs = NULL;
        p->zooms = NULL;
        fprintf(stderr, "%s: out of memory for the glimpse figure\n", prog);
        return -1;
    }
    thumbnail(f, canvas, p);
    memcpy(p->locs, locs, sizeof *p->locs * 2 * (size_t)f->glimpses);
    memcpy(p->zooms, zooms, sizeof *p->zooms * (size_t)f->glimpses);
    p->taken = taken >= 1 && taken < f->glimpses ? taken : f->glimpses;
    fit_text(p->caption, sizeof p->caption, caption, CELL_W - 4, 2, 0);
    fit_text(p->file, sizeof p->file, file, CELL_W - 4, 1, 1);
    f->n++;
    return 0;
}

/* Panel p in the cell whose top-left corner is (x0, y0). */
static void draw_panel(const path_figure *f, const path_panel *p, canvas *c, int x0, int y0) {
    const int ix = x0 + PAD + (PATH_FIGURE_PANEL - p->tw) / 2;
    const int iy = y0 + PAD + (PATH_FIGURE_PANEL - p->th) / 2;
    clip_all(c);
    for (int y = 0; y < p->th; y++)
        memcpy(c->px + 3 * ((size_t)(iy + y) * c->w + ix), p->px + 3 * (size_t)y * p->tw,
               3 * (size_t)p->tw);
    draw_box(c, ix - 0.5f, iy - 0.5f, ix + p->tw + 0.5f, iy + p->th + 0.5f, 1.0f, FRAME);
    /* Location x maps to column (x + 1) * W / 2, as the sensor cuts it. */
    const float s = (float)p->tw / (float)f->w;
    clip_to(c, x0, y0, x0 + CELL_W, y0 + PATH_FIGURE_PANEL + 2 * PAD);
    float cx[256], cy[256];
    const int T = p->taken < 256 ? p->taken : 256;
    for (int t = 0; t < T; t++) {
        cx[t] = ix + (p->locs[2 * t] + 1.0f) * 0.5f * (float)p->tw;
        cy[t] = iy + (p->locs[2 * t + 1] + 1.0f) * 0.5f * (float)p->th;
    }
    for (int t = 0; t < T; t++)
        for (int k = 0; k < f->depth; k++) {
            const float hs = 0.5f * (float)zoomed_side(f->side[k], p->zooms[t]) * s;
            draw_box(c, cx[t] - hs, cy[t] - hs, cx[t] + hs, cy[t] + hs, k == 0 ? 2.0f : 1.25f,
                     palette_colour(t));
        }
    for (int t = 0; t + 1 < T; t++)
        draw_line(c, cx[t], cy[t], cx[t + 1], cy[t + 1], 1.5f, WHITE, 0.9f);
    for (int t = 0; t < T; t++) {
        draw_disc(c, cx[t], cy[t], 4.0f, WHITE, 1.0f);
        draw_disc(c, cx[t], cy[t], 3.0f, palette_colour(t), 1.0f);
        char num[16];
        snprintf(num, sizeof num, "%d", t + 1);
        draw_text(c, (int)cx[t] + 5, (int)cy[t] - 12, num, 1, palette_colour(t), 1, WHITE);
    }
    clip_all(c);
    const int ty = y0 + PATH_FIGURE_PANEL + 2 * PAD;
    draw_text(c, x0 + 2, ty, p->caption, 2, BLACK, 0, WHITE);
    draw_text(c, x0 + 2, ty + 7 * 2 + 4, p->file, 1, DARK, 0, WHITE);
}

int path_figure_write(const path_figure *f, const char *path, const char *prog) {
    if (f->n == 0) {
        fprintf(stderr, "%s: no image was classified: no glimpse figure written\n", prog);
        return -1;
    }
    const int cols = f->n < COLUMNS ? f->n : COLUMNS, rows = (f->n + cols - 1) / cols;
    canvas c = {.w = 2 * MARGIN + cols * CELL_W, .h = 2 * MARGIN + rows * CELL_H};
    c.px = malloc((size_t)c.w * (size_t)c.h * 3);
    if (!c.px) {
        fprintf(stderr, "%s: out of memory for a %d x %d figure\n", prog, c.w, c.h);
        return -1;
    }
    memset(c.px, 255, (size_t)c.w * (size_t)c.h * 3);
    for (int i = 0; i < f->n; i++)
        draw_panel(f, &f->panels[i], &c, MARGIN + i % cols * CELL_W, MARGIN + i / cols * CELL_H);
    const int rc = write_png(prog, path, &c, "ram-classify (libram " RAM_VERSION_STRING ")");
    free(c.px);
    if (rc) return -1;
    if (f->left_out)
        fprintf(stderr, "%s: %s shows the first %d images; %d more were classified, not drawn\n",
                prog, path, f->n, f->left_out);
    return 0;
}

void path_figure_free(path_figure *f) {
    if (f->panels)
        for (int i = 0; i < f->n; i++) {
            free(f->panels[i].px);
            free(f->panels[i].locs);
            free(f->panels[i].zooms);
        }
    free(f->panels);
    f->panels = NULL;
}
