/*
 * ram-glimpses: draw where a trained RAM model looks, as a PNG figure.
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
#include "draw.h"
#include "testset.h"
#include "zoom.h"

#include <ram/ram.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options -------------------------------------------------------------- */

static const tool_info tool = {"ram-glimpses", "draw where a Recurrent Attention Model looks",
                               "--model FILE --data DIR --out FILE.png [options]",
                               "Draw the glimpses a model takes on MNIST test digits: one row per "
                               "digit, the digit with every glimpse's squares, one tile per step "
                               "with what the retina saw, and the predicted and true labels.  "
                               "For a model of two objects on pairs100 or sum100 the tile of "
                               "the glimpse after which a label is emitted carries it (OUT 7), "
                               "and PRED is the pair (or sum) the two labels make."};

typedef struct options {
    testset_options set;
    const char *out;
    int count, first, scale, errors_only;
} options;

static int parse(int argc, char **argv, options *o) {
    *o = (options){.count = 8, .scale = 4};
    tool_opt t[TESTSET_OPTIONS + 5];
    size_t n = testset_table(&o->set, t);
    const tool_opt more[] = {
        {"--out", OPT_STRING, &o->out, .meta = "FILE.png", .flags = OPT_REQUIRED,
         .help = "output image"},
        {"--count", OPT_INT, &o->count, 1, 1000, .meta = "N", .help = "digits, one row each"},
        {"--first", OPT_INT, &o->first, 0, 2147483647.0, .meta = "K",
         .help = "index of the first digit"},
        {"--scale", OPT_INT, &o->scale, 1, 32, .meta = "S",
         .help = "step tiles S times the image height, within 64..160 pixels; the input is "
                 "drawn about twice as tall"},
        {"--errors", OPT_FLAG, &o->errors_only,
         .help = "show only misclassified digits (from --first on)"},
    };
    memcpy(t + n, more, sizeof more);
    n += sizeof more / sizeof *more;
    int r = opts_parse(&tool, t, n, argc, argv);
    return r ? r : testset_check(&tool, &o->set);
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
    const float *zooms;   /* rows x steps: each glimpse's zoom factor (1 without zoom) */
    const float *glimpse; /* rows x steps x depth x patch x patch */
    const int *index;     /* rows: index in the data set */
    /* A model of several objects: labels per image, glimpses between them,
     * and each row's labels (rows x objects; probs is then rows x objects x
     * classes, pred the set's class they make). */
    int objects, emit;
    const int *digits;
    int dataset; /* then pairs100 or sum100: TRUE is its class's name ("2-7", "9") */
} figure;

/* Where the parts of the figure go, in display pixels. */
typedef struct layout {
    int biggest;   /* side of the largest retina square, image pixels */
    int tile;      /* side of a step's tile */
    int S;         /* display pixels per image pixel of the input */
    int H, W, pad; /* the input's size and the room around it */
    int PW, PH;    /* the input's panel */
    int row_h, header_h, tiles_x, label_x;
    long width, height;
} layout;

#define MARGIN      24
#define GAP         16
#define TILE_GAP    8
#define HEADER_SIZE 2 /* font size of the column headers */
#define LABEL_SIZE  2 /* font size of the labels on the right */

/* Grey digit on white: dark strokes read well next to the coloured boxes. */
static rgb grey(float v) {
    unsigned char g = (unsigned char)(255.0f - 215.0f * clamp01(v) + 0.5f);
    return (rgb){g, g, g};
}

static void lay_out(const figure *fg, layout *L) {
    const int longest = fg->h > fg->w ? fg->h : fg->w;
    L->biggest = fg->side[fg->depth - 1];
    /* Tiles as tall as the image at --scale, rounded down to a multiple of the
     * largest retina square so every pooled cell gets the same number of
     * pixels. */
    const int scaled = fg->h * fg->scale;
    L->tile = scaled < 64 ? 64 : scaled > 160 ? 160 : scaled;
    if (L->tile >= L->biggest) L->tile = L->tile / L->biggest * L->biggest;
    /* The input at its own magnification S, whole display pixels per image
     * pixel, about twice as tall as a tile: the numbered squares of a small
     * image stay apart (by default 28 x 28 at 224 px, larger images at most
     * 320 px as tiles are at most 160). */
    L->S = (2 * L->tile + longest / 2) / longest;
    if (L->S < 1) L->S = 1;
    L->H = fg->h * L->S;
    L->W = fg->w * L->S;
    /* Room around the image for boxes that reach past its edge; at most half
     * the image so a huge outer scale does not swamp the figure. */
    int pad_px = (L->biggest + 1) / 2;
    if (pad_px > longest / 2) pad_px = longest / 2;
    L->pad = pad_px * L->S > 10 ? pad_px * L->S : 10;
    L->PW = L->W + 2 * L->pad;
    L->PH = L->H + 2 * L->pad;
    L->row_h = (L->PH > L->tile ? L->PH : L->tile) + GAP;
    L->header_h = 7 * HEADER_SIZE + 12;
    L->tiles_x = MARGIN + L->PW + GAP;
    L->label_x = L->tiles_x + fg->steps * (L->tile + TILE_GAP) - TILE_GAP + GAP;
    L->width = (long)L->label_x + text_width(fg->objects > 1 ? "PRED 0 0" : "PRED 0", LABEL_SIZE) +
               8 + MARGIN;
    L->height = (long)MARGIN + L->header_h + (long)fg->rows * L->row_h - GAP + MARGIN;
}

/* A white canvas of the layout's size, with the column headers. */
static int start_canvas(const figure *fg, const layout *L, canvas *c) {
    if (L->width > 30000 || L->height > 30000 || L->width * L->height > 100000000L) {
        fprintf(stderr,
                "ram-glimpses: figure of %ld x %ld pixels is too large; lower --count "
                "or --scale\n",
                L->width, L->height);
        return -1;
    }
    c->w = (int)L->width;
    c->h = (int)L->height;
    c->px = malloc((size_t)c->w * (size_t)c->h * 3);
    if (!c->px) {
        fprintf(stderr, "ram-glimpses: out of memory for a %d x %d image\n", c->w, c->h);
        return -1;
    }
    memset(c->px, 255, (size_t)c->w * (size_t)c->h * 3);
    clip_all(c);
    const char *in = "INPUT";
    draw_text(c, MARGIN + (L->PW - text_width(in, HEADER_SIZE)) / 2, MARGIN, in, HEADER_SIZE, DARK,
              0, WHITE);
    for (int t = 0; t < fg->steps; t++) {
        char s[32];
        snprintf(s, sizeof s, L->tile >= text_width("STEP 00", HEADER_SIZE) ? "STEP %d" : "%d",
                 t + 1);
        int x = L->tiles_x + t * (L->tile + TILE_GAP) + (L->tile - text_width(s, HEADER_SIZE)) / 2;
        draw_text(c, x, MARGIN, s, HEADER_SIZE, palette_colour(t), 0, WHITE);
    }
    return 0;
}

/* Row r's digit at (px0, py0), framed so the image border is visible on
 * white, with every glimpse's squares, the path and the step numbers. */
static void draw_input(const figure *fg, const layout *L, canvas *c, int r, int px0, int py0) {
    const int S = L->S;
    const float *img = fg->images + (size_t)r * (size_t)fg->h * (size_t)fg->w;
    const float *loc = fg->locs + (size_t)r * (size_t)fg->steps * 2;
    const float *zoom = fg->zooms + (size_t)r * (size_t)fg->steps;
    clip_all(c);
    for (int y = 0; y < fg->h; y++)
        for (int x = 0; x < fg->w; x++)
            fill_rect(c, px0 + x * S, py0 + y * S, S, S, grey(img[y * fg->w + x]));
    draw_box(c, px0 - 0.5f, py0 - 0.5f, px0 + L->W + 0.5f, py0 + L->H + 0.5f, 1.0f, FRAME);
    /* Glimpse overlay, clipped to the panel.  Location x maps to column
     * (x + 1) * W / 2, exactly as ram_glimpse_extract() cuts it. */
    clip_to(c, MARGIN, py0 - L->pad, MARGIN + L->PW, py0 - L->pad + L->PH);
    float cx[64], cy[64];
    for (int t = 0; t < fg->steps; t++) {
        cx[t] = px0 + (loc[2 * t] + 1.0f) * 0.5f * (float)L->W;
        cy[t] = py0 + (loc[2 * t + 1] + 1.0f) * 0.5f * (float)L->H;
    }
    for (int t = 0; t < fg->steps; t++) {
        for (int k = 0; k < fg->depth; k++) {
            float hs = 0.5f * (float)zoomed_side(fg->side[k], zoom[t]) * (float)S;
            draw_box(c, cx[t] - hs, cy[t] - hs, cx[t] + hs, cy[t] + hs, k == 0 ? 2.0f : 1.25f,
                     palette_colour(t));
        }
    }
    for (int t = 0; t + 1 < fg->steps; t++)
        draw_line(c, cx[t], cy[t], cx[t + 1], cy[t + 1], 1.5f, DARK, 0.85f);
    for (int t = 0; t < fg->steps; t++) {
        draw_disc(c, cx[t], cy[t], 4.0f, WHITE, 1.0f);
        draw_disc(c, cx[t], cy[t], 3.0f, palette_colour(t), 1.0f);
    }
    for (int t = 0; t < fg->steps; t++) {
        char s[16];
        snprintf(s, sizeof s, "%d", t + 1);
        int fs = L->H >= 200 ? 2 : 1; /* numbers grow with the panel */
        draw_text(c, (int)cx[t] + 5, (int)cy[t] - 5 - 7 * fs, s, fs, palette_colour(t), 1, WHITE);
    }
    clip_all(c);
}

/* The tile of row r's step t at (tx, ty): each retina scale upscaled to its
 * true relative size, finer scales on top, i.e. the foveated view the
 * network gets. */
static void draw_tile(const figure *fg, const layout *L, canvas *c, int r, int t, int tx, int ty) {
    const size_t gsize = (size_t)fg->depth * (size_t)fg->patch * (size_t)fg->patch;
    const float *gl = fg->glimpse + ((size_t)r * (size_t)fg->steps + (size_t)t) * gsize;
    const int tile = L->tile, biggest = L->biggest;
    for (int y = 0; y < tile; y++) {
        /* offset from the glimpse centre, in image pixels */
        float v = ((float)y + 0.5f) / (float)tile * (float)biggest - 0.5f * biggest;
        for (int x = 0; x < tile; x++) {
            float u = ((float)x + 0.5f) / (float)tile * (float)biggest - 0.5f * biggest;
            int k = 0;
            while (k < fg->depth - 1 && (2.0f * u < -fg->side[k] || 2.0f * u >= fg->side[k] ||
                                         2.0f * v < -fg->side[k] || 2.0f * v >= fg->side[k]))
                k++;
            float fs = (float)fg->side[k];
            int col = (int)((u + 0.5f * fs) / fs * (float)fg->patch);
            int row = (int)((v + 0.5f * fs) / fs * (float)fg->patch);
            col = col < 0 ? 0 : col >= fg->patch ? fg->patch - 1 : col;
            row = row < 0 ? 0 : row >= fg->patch ? fg->patch - 1 : row;
            float val =
                gl[((size_t)k * (size_t)fg->patch + (size_t)row) * (size_t)fg->patch + (size_t)col];
            fill_rect(c, tx + x, ty + y, 1, 1, grey(val));
        }
    }
    /* Outline of each finer scale inside the tile. */
    for (int k = 0; k < fg->depth - 1; k++) {
        float hs = 0.5f * (float)fg->side[k] / (float)biggest * (float)tile;
        float m = 0.5f * (float)tile;
        draw_box(c, tx + m - hs, ty + m - hs, tx + m + hs, ty + m + hs, 1.0f, palette_colour(t));
    }
    draw_box(c, tx - 1.0f, ty - 1.0f, tx + tile + 1.0f, ty + tile + 1.0f, 2.0f, palette_colour(t));
    if (fg->objects > 1 && (t + 1) % fg->emit == 0) { /* the label emitted after this glimpse */
        char s[32];
        snprintf(s, sizeof s, "OUT %d",
                 fg->digits[(size_t)r * fg->objects + (t + 1) / fg->emit - 1]);
        draw_text(c, tx, ty + tile + 4, s, 1, palette_colour(t), 0, WHITE);
    }
}

/* Row r's labels: prediction (green if right, red if wrong), truth,
 * confidence and the image's index. */
static void draw_labels(const figure *fg, const layout *L, canvas *c, int r, int top) {
    char s[32];
    const int ly = top + (L->row_h - GAP) / 2 - (3 * 7 * LABEL_SIZE + 2 * 6) / 2;
    const int ok = fg->pred[r] == fg->truth[r];
    if (fg->objects > 1) { /* the labels as emitted, and the set's class */
        const int *d = fg->digits + (size_t)r * fg->objects;
        snprintf(s, sizeof s, "PRED %d %d", d[0], d[1]);
    } else {
        snprintf(s, sizeof s, "PRED %d", fg->pred[r]);
    }
    draw_text(c, L->label_x, ly, s, LABEL_SIZE, ok ? GOOD : BAD, 0, WHITE);
    const char *name =
        fg->objects > 1 ? dataset_class_name((dataset_kind)fg->dataset, fg->truth[r]) : NULL;
    if (name)
        snprintf(s, sizeof s, "TRUE %s", name);
    else
        snprintf(s, sizeof s, "TRUE %d", fg->truth[r]);
    draw_text(c, L->label_x, ly + 7 * LABEL_SIZE + 6, s, LABEL_SIZE, BLACK, 0, WHITE);
    float p = 1.0f; /* several objects: the product of their labels' probabilities */
    if (fg->objects > 1)
        for (int o = 0; o < fg->objects; o++) {
            const size_t at = (size_t)r * fg->objects + o;
            p *= fg->probs[at * (size_t)fg->classes + (size_t)fg->digits[at]];
        }
    else
        p = fg->probs[(size_t)r * (size_t)fg->classes + (size_t)fg->pred[r]];
    snprintf(s, sizeof s, "P=%.2f", p);
    draw_text(c, L->label_x, ly + 2 * (7 * LABEL_SIZE + 6), s, 1, DARK, 0, WHITE);
    snprintf(s, sizeof s, "#%d", fg->index[r]);
    draw_text(c, L->label_x + text_width("P=0.00  ", 1), ly + 2 * (7 * LABEL_SIZE + 6), s, 1, FRAME,
              0, WHITE);
}

static int render(const figure *fg, canvas *c) {
    layout L;
    lay_out(fg, &L);
    if (start_canvas(fg, &L, c)) return -1;
    for (int r = 0; r < fg->rows; r++) {
        const int top = MARGIN + L.header_h + r * L.row_h;
        draw_input(fg, &L, c, r, MARGIN + L.pad, top + (L.row_h - GAP - L.PH) / 2 + L.pad);
        const int ty = top + (L.row_h - GAP - L.tile) / 2;
        for (int t = 0; t < fg->steps; t++)
            draw_tile(fg, &L, c, r, t, L.tiles_x + t * (L.tile + TILE_GAP), ty);
        draw_labels(fg, &L, c, r, top);
    }
    return 0;
}

/* ---- main -------------------------------------------------------------------- */

static void report(const char *what, ram_status s) {
    fprintf(stderr, "ram-glimpses: %s: %s (%s)\n", what, ram_last_error(), ram_status_string(s));
}

/* A figure's digits and what the model did with them. */
typedef struct rows {
    testset set;
    ram_state *st;
    ram_policy *pol;
    ram_glimpse *g;
    size_t pixels;
    int count, cap, n; /* n: rows chosen */
    float *sel, *probs, *locs, *zooms, *glimpses, *batch;
    int *truth, *pred, *index;
    int *digits; /* a model of several objects: its labels, cap x objects */
} rows;

/* Classify k images: the set's class of each into pred, and probs and locs
 * (either may be NULL).  A model of two objects (the digits) gives the
 * class they make: the unordered pair (pairs100) or the sum (sum100). */
static ram_status classify_rows(const options *o, rows *w, const float *images, int k, float *probs,
                                float *locs) {
    const int S = w->set.mp.objects;
    if (S == 1)
        return testset_classify(w->set.model, w->st, o->set.source, w->pol, images, k, w->pred,
                                probs, locs);
    ram_status s =
        ram_model_classify_seq(w->set.model, w->st, images, k, (ram_loc_source)o->set.source,
                               w->pol, w->digits, probs, locs);
    for (int i = 0; s == RAM_OK && i < k; i++) {
        const int a = w->digits[2 * i], b = w->digits[2 * i + 1];
        w->pred[i] = o->set.dataset == DATASET_SUM100 ? a + b : dataset_pair_class(a, b);
    }
    return s;
}

/* Images first..first+count-1 of the set into out; a placed set's are made
 * only for the images needed (the whole cluttered100 test set would take
 * 400 MB). */
static int fetch(const options *o, const rows *w, int first, int count, float *out) {
    for (int i = 0; i < count; i++)
        if (testset_image(&w->set, o->set.dataset, first + i, out + (size_t)i * w->pixels))
            return -1;
    return 0;
}

static int allocate(const options *o, rows *w) {
    const int chunk = 100; /* batch for the --errors search */
    const int T = w->set.mp.glimpses, C = w->set.mp.classes;
    w->count = o->count;
    if (!o->errors_only && w->count > w->set.n - o->first) w->count = w->set.n - o->first;
    w->cap = w->count > chunk ? w->count : chunk;
    ram_status s = ram_state_create(w->set.model, w->cap, &w->st);
    if (s != RAM_OK) {
        report("ram_state_create", s);
        return -1;
    }
    if ((s = testset_policy(w->set.model, o->set.source, o->set.seed, &w->pol)) != RAM_OK) {
        report("ram_policy_create", s);
        return -1;
    }
    w->sel = malloc((size_t)w->count * w->pixels * sizeof *w->sel);
    w->truth = malloc((size_t)w->cap * sizeof *w->truth);
    w->pred = malloc((size_t)w->cap * sizeof *w->pred);
    w->index = malloc((size_t)w->count * sizeof *w->index);
    const int S = w->set.mp.objects;
    w->probs = malloc((size_t)w->cap * (size_t)C * (size_t)S * sizeof *w->probs);
    w->digits = malloc((size_t)w->cap * (size_t)S * sizeof *w->digits);
    w->locs = malloc((size_t)w->cap * (size_t)T * 2 * sizeof *w->locs);
    w->zooms = malloc((size_t)w->cap * (size_t)T * sizeof *w->zooms);
    if (o->errors_only) w->batch = malloc((size_t)chunk * w->pixels * sizeof *w->batch);
    if (!w->sel || !w->truth || !w->pred || !w->index || !w->probs || !w->locs || !w->zooms ||
        !w->digits || (o->errors_only && !w->batch)) {
        fprintf(stderr, "ram-glimpses: out of memory\n");
        return -1;
    }
    return 0;
}

/* The digits: the next `count` from --first, or with --errors the next
 * `count` the model gets wrong. */
static int pick(const options *o, rows *w) {
    const int chunk = 100, n = w->set.n;
    w->n = 0;
    if (!o->errors_only) {
        for (; w->n < w->count; w->n++)
            w->index[w->n] = o->first + w->n;
        return 0;
    }
    for (int b = o->first; b < n && w->n < w->count; b += chunk) {
        int k = n - b < chunk ? n - b : chunk;
        if (fetch(o, w, b, k, w->batch)) return -1;
        ram_status s = classify_rows(o, w, w->batch, k, NULL, NULL);
        if (s != RAM_OK) {
            report("classify", s);
            return -1;
        }
        for (int i = 0; i < k && w->n < w->count; i++)
            if (w->pred[i] != w->set.labels[b + i]) w->index[w->n++] = b + i;
    }
    if (w->n == 0) {
        fprintf(stderr, "ram-glimpses: no misclassified digit from index %d on\n", o->first);
        return -1;
    }
    return 0;
}

/* Classify the chosen rows and cut what the retina saw at each step, by the
 * public sensor with the model's own retina parameters. */
static int look(const options *o, rows *w) {
    const int T = w->set.mp.glimpses;
    for (int i = 0; i < w->n; i++) {
        if (fetch(o, w, w->index[i], 1, w->sel + (size_t)i * w->pixels)) return -1;
        w->truth[i] = w->set.labels[w->index[i]];
    }
    if (w->pol)
        ram_policy_seed(w->pol, o->set.seed); /* the figure does not depend on --errors' search */
    ram_status s = classify_rows(o, w, w->sel, w->n, w->probs, w->locs);
    if (s == RAM_OK) s = ram_state_zooms(w->st, w->n, w->zooms);
    if (s != RAM_OK) {
        report("classify", s);
        return -1;
    }
    /* The model's own sensor: its kind, its reads per cell and its input. */
    if ((s = ram_glimpse_create_sensor(&w->set.mp.glimpse, w->set.mp.sensor, &w->g)) != RAM_OK ||
        (s = ram_glimpse_set_cell_samples(w->g, w->set.mp.cell_samples)) != RAM_OK ||
        (s = ram_glimpse_set_contrast(w->g, w->set.mp.contrast)) != RAM_OK) {
        report("ram_glimpse_create_sensor", s);
        return -1;
    }
    const size_t gsize = ram_glimpse_size(w->g, 1);
    if (!(w->glimpses = malloc((size_t)w->n * (size_t)T * gsize * sizeof *w->glimpses))) {
        fprintf(stderr, "ram-glimpses: out of memory\n");
        return -1;
    }
    for (int i = 0; i < w->n * T; i++) {
        const float *img = w->sel + (size_t)(i / T) * w->pixels, *l = w->locs + (size_t)i * 2;
        s = ram_glimpse_set_zoom(w->g, w->zooms[i]);
        if (s == RAM_OK)
            s = ram_glimpse_extract(w->g, img, 1, 1, w->set.h, w->set.w, l,
                                    w->glimpses + (size_t)i * gsize, gsize);
        if (s != RAM_OK) {
            report("ram_glimpse_extract", s);
            return -1;
        }
    }
    return 0;
}

/* Render the figure, write it and say what it shows. */
static int draw(const options *o, const rows *w) {
    const ram_model_params *mp = &w->set.mp;
    figure fg = {.rows = w->n,
                 .h = w->set.h,
                 .w = w->set.w,
                 .steps = mp->glimpses,
                 .classes = mp->classes,
                 .patch = mp->glimpse.patch,
                 .depth = mp->glimpse.depth,
                 .scale = o->scale,
                 .images = w->sel,
                 .truth = w->truth,
                 .pred = w->pred,
                 .probs = w->probs,
                 .locs = w->locs,
                 .zooms = w->zooms,
                 .glimpse = w->glimpses,
                 .index = w->index,
                 .objects = mp->objects,
                 .emit = mp->emit_every,
                 .digits = w->digits,
                 .dataset = o->set.dataset};
    /* The sensor's square sides: round(patch * scale^k), as documented. */
    float side = (float)mp->glimpse.patch;
    for (int k = 0; k < mp->glimpse.depth; k++, side *= mp->glimpse.scale)
        fg.side[k] = (int)(side + 0.5f);
    canvas cv = {0};
    int rc = render(&fg, &cv) ||
             write_png(tool.name, o->out, &cv, "ram-glimpses (libram " RAM_VERSION_STRING ")");
    free(cv.px);
    if (rc) return -1;
    int wrong = 0;
    for (int i = 0; i < w->n; i++)
        wrong += w->pred[i] != w->truth[i];
    printf("ram-glimpses: wrote %s (%d x %d): %d %s image%s from #%d, %d misclassified, %d "
           "glimpses, %s locations\n",
           o->out, cv.w, cv.h, w->n,
           w->set.from_folder ? (o->set.pair_images     ? "files"
                                 : w->set.folder.mapped ? "array"
                                                        : "folder")
                              : dataset_name((dataset_kind)o->set.dataset),
           w->n == 1 ? "" : "s", w->index[0], wrong, mp->glimpses,
           testset_policy_name(o->set.source));
    return 0;
}

static int run(const options *o, rows *w) {
    if (testset_load(tool.name, &o->set, &w->set)) return -1;
    const ram_model_params *mp = &w->set.mp;
    if (mp->glimpses > 64 || mp->glimpse.depth < 1 || mp->glimpse.depth > 16) {
        fprintf(stderr,
                "ram-glimpses: model has %d glimpses of %d scales; can draw at most 64 "
                "of at most 16\n",
                mp->glimpses, mp->glimpse.depth);
        return -1;
    }
    if (mp->objects > 1 &&
        (w->set.from_folder || mp->objects != 2 ||
         (o->set.dataset != DATASET_PAIRS100 && o->set.dataset != DATASET_SUM100))) {
        fprintf(stderr,
                "ram-glimpses: %s names %d objects per image: it is drawn on --dataset pairs100 "
                "or sum100 (two digits)\n",
                o->set.model, mp->objects);
        return -1;
    }
    if (w->set.c != 1) {
        fprintf(stderr, "ram-glimpses: %s takes %d-channel images; it draws grey ones only\n",
                o->set.model, w->set.c);
        return -1;
    }
    if (o->first >= w->set.n) {
        fprintf(stderr, "ram-glimpses: --first %d but %s/%s has only %d images\n", o->first,
                o->set.data, o->set.split_file, w->set.n);
        return -1;
    }
    w->pixels = (size_t)w->set.h * (size_t)w->set.w;
    return allocate(o, w) || pick(o, w) || look(o, w) || draw(o, w) ? -1 : 0;
}

int main(int argc, char **argv) {
    options o;
    int parsed = parse(argc, argv, &o);
    if (parsed) return opts_exit(parsed);
    tool_blas_init(tool.name, argv); /* one BLAS thread, kernels fit for the CPU */
    rows w = {0};
    int rc = run(&o, &w) ? TOOL_FAILED : TOOL_OK;
    free(w.batch);
    free(w.glimpses);
    free(w.locs);
    free(w.zooms);
    free(w.probs);
    free(w.index);
    free(w.pred);
    free(w.truth);
    free(w.digits);
    free(w.sel);
    ram_glimpse_free(w.g);
    ram_policy_free(w.pol);
    ram_state_free(w.st);
    testset_free(&w.set);
    return rc;
}
