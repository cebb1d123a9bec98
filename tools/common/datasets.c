/* Deterministic translated, cluttered and two-digit MNIST (see datasets.h). */
#include "datasets.h"

#include "idx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int side, pieces, objects, classes;
} table[] = {
    [DATASET_MNIST] = {"mnist", 28, 0, 1, 10},
    [DATASET_TRANSLATED60] = {"translated60", 60, 0, 1, 10},
    [DATASET_CLUTTERED60] = {"cluttered60", 60, 4, 1, 10},
    [DATASET_CLUTTERED100] = {"cluttered100", 100, 8, 1, 10},
    [DATASET_PAIRS100] = {"pairs100", 100, 0, 2, 45},
    [DATASET_SUM100] = {"sum100", 100, 0, 2, 19},
};

int dataset_parse(const char *name, dataset_kind *kind) {
    for (int k = 0; k < (int)(sizeof table / sizeof *table); k++)
        if (name && !strcmp(name, table[k].name)) {
            *kind = (dataset_kind)k;
            return 0;
        }
    return -1;
}

const char *dataset_name(dataset_kind kind) {
    return table[kind].name;
}
int dataset_side(dataset_kind kind) {
    return table[kind].side;
}
int dataset_pieces(dataset_kind kind) {
    return table[kind].pieces;
}
int dataset_objects(dataset_kind kind) {
    return table[kind].objects;
}
int dataset_classes(dataset_kind kind) {
    return table[kind].classes;
}

int dataset_pair_class(int a, int b) {
    if (a < 0 || a > 9 || b < 0 || b > 9 || a == b) return -1;
    if (a > b) {
        const int t = a;
        a = b;
        b = t;
    }
    return a * (19 - a) / 2 + b - a - 1; /* the pairs {i < j} with i < a come first */
}

int dataset_pair_digits(int pair, int *a, int *b) {
    if (pair < 0 || pair > 44) return -1;
    int first = 0;
    while (pair >= 9 - first) { /* digit `first` starts 9 - first pairs */
        pair -= 9 - first;
        first++;
    }
    *a = first;
    *b = first + 1 + pair;
    return 0;
}

const char *dataset_class_name(dataset_kind kind, int k) {
    /* In class order, which is also their byte order (what an image folder
     * of them sorts into). */
    static const char *const pairs[45] = {
        "0-1", "0-2", "0-3", "0-4", "0-5", "0-6", "0-7", "0-8", "0-9", "1-2", "1-3", "1-4",
        "1-5", "1-6", "1-7", "1-8", "1-9", "2-3", "2-4", "2-5", "2-6", "2-7", "2-8", "2-9",
        "3-4", "3-5", "3-6", "3-7", "3-8", "3-9", "4-5", "4-6", "4-7", "4-8", "4-9", "5-6",
        "5-7", "5-8", "5-9", "6-7", "6-8", "6-9", "7-8", "7-9", "8-9"};
    static const char *const sums[19] = {"0",  "1",  "2",  "3",  "4",  "5",  "6",  "7",  "8", "9",
                                         "10", "11", "12", "13", "14", "15", "16", "17", "18"};
    if (kind == DATASET_PAIRS100) return k >= 0 && k < 45 ? pairs[k] : NULL;
    if (kind == DATASET_SUM100) return k >= 0 && k < 19 ? sums[k] : NULL;
    return NULL;
}

int dataset_names_for_side(int side, char *buf, size_t len) {
    int found = 0;
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int k = 0; k < (int)(sizeof table / sizeof *table); k++) {
        if (table[k].side != side) continue;
        if (len > used) {
            int w = snprintf(buf + used, len - used, "%s%s", found ? " or " : "", table[k].name);
            used += w > 0 ? (size_t)w : 0;
        }
        found++;
    }
    return found;
}

/* splitmix64: a tiny, well-mixed generator; one stream per image. */
static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform integer in [0, n) (n small: the modulo bias is below 2^-50). */
static int below(uint64_t *s, int n) {
    return (int)(next(s) % (uint64_t)n);
}

void dataset_shift_copy(const float *img, int h, int w, int shift, uint64_t seed, int index,
                        float *out) {
    uint64_t s = (uint64_t)index;
    s = seed ^ next(&s); /* one stream per (seed, index) */
    const uint64_t r = next(&s), n = (uint64_t)(2 * shift + 1);
    const int dx = (int)(r % n) - shift, dy = (int)((r >> 32) % n) - shift;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int sy = y - dy, sx = x - dx;
            out[(size_t)y * w + x] =
                sy >= 0 && sy < h && sx >= 0 && sx < w ? img[(size_t)sy * w + sx] : 0.0f;
        }
}

/* Uniform in [-1, 1). */
static float symmetric(uint64_t *s) {
    return (float)(next(s) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

void dataset_warp(const float *img, int h, int w, float rotate, float zoom, uint64_t seed,
                  int index, float *out) {
    uint64_t s = (uint64_t)index ^ 0x5851f42d4c957f2dULL; /* not dataset_shift_copy's stream */
    s = seed ^ next(&s);
    const float angle = rotate * symmetric(&s) * 0.017453292519943295f /* pi / 180 */;
    const float factor = 1.0f + zoom * symmetric(&s);
    /* Inverse map: output pixel -> source point (rotate back, shrink back). */
    const float c = cosf(angle) / factor, sn = sinf(angle) / factor;
    const float cy = 0.5f * (float)(h - 1), cx = 0.5f * (float)(w - 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const float dy = (float)y - cy, dx = (float)x - cx;
            const float sx = c * dx + sn * dy + cx, sy = -sn * dx + c * dy + cy;
            const float fx = floorf(sx), fy = floorf(sy), ax = sx - fx, ay = sy - fy;
            const int x0 = (int)fx, y0 = (int)fy;
            float v = 0.0f;
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    const int yy = y0 + j, xx = x0 + i;
                    if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    v += (j ? ay : 1 - ay) * (i ? ax : 1 - ax) * img[(size_t)yy * w + xx];
                }
            out[(size_t)y * w + x] = v;
        }
}

void dataset_flip(float *img, int c, int h, int w, uint64_t seed, int index) {
    uint64_t s = (uint64_t)index ^ 0x2545f4914f6cdd1dULL; /* a stream of its own */
    s = seed ^ next(&s);
    if (next(&s) >> 63) return; /* kept as it is: half of the time */
    for (size_t row = 0; row < (size_t)c * h; row++) {
        float *p = img + row * w;
        for (int x = 0; x < w / 2; x++) {
            const float t = p[x];
            p[x] = p[w - 1 - x];
            p[w - 1 - x] = t;
        }
    }
}

void dataset_make(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                  uint64_t seed, float *out) {
    dataset_make_with(kind, digits, labels, n, index, digits + (size_t)index * 28 * 28, seed, out);
}

/* The draws that place image `index`: its clutter pieces, then the digit
 * (and for a two-digit set its partner's box).  dataset_make_with() and
 * dataset_digit_origin() both take them from here, so the picture and the
 * position reported for it cannot disagree. */
enum { CROP = 8, MAX_PIECES = 8 };
typedef struct placement {
    int pieces;
    struct {
        int other, cy, cx, py, px; /* crop of digit `other` at (cy, cx), pasted at (py, px) */
    } piece[MAX_PIECES];
    int y, x;   /* the digit's top-left pixel */
    int y2, x2; /* a two-digit set's partner's */
} placement;

static int overlap(int x1, int y1, int x2, int y2) {
    return abs(x1 - x2) < 28 && abs(y1 - y2) < 28;
}

static void place(dataset_kind kind, int n, int index, uint64_t seed, placement *p) {
    const int D = 28, S = table[kind].side;
    uint64_t s = seed * 0xd1b54a32d192ed03ULL ^ (uint64_t)index * 0x8cb92ba72f3d8dd7ULL;
    p->pieces = n > 1 ? table[kind].pieces : 0;
    for (int k = 0; k < p->pieces; k++) {
        int other = below(&s, n - 1);
        p->piece[k].other = other >= index ? other + 1 : other; /* any digit but this one */
        p->piece[k].cy = below(&s, D - CROP + 1);
        p->piece[k].cx = below(&s, D - CROP + 1);
        p->piece[k].py = below(&s, S - CROP + 1);
        p->piece[k].px = below(&s, S - CROP + 1);
    }
    p->y = below(&s, S - D + 1);
    p->x = below(&s, S - D + 1);
    if (table[kind].objects < 2) return;
    /* Both boxes drawn again together, not the second alone: that keeps the
     * pair uniform over the placements where they are apart. */
    for (int tries = 1;; tries++) {
        p->y2 = below(&s, S - D + 1);
        p->x2 = below(&s, S - D + 1);
        if (!overlap(p->x, p->y, p->x2, p->y2)) return;
        if (tries == DATASET_PLACE_DRAWS) break;
        p->y = below(&s, S - D + 1);
        p->x = below(&s, S - D + 1);
    }
    p->y = p->x = 0;
    p->y2 = p->x2 = S - D;
}

void dataset_digit_origin(dataset_kind kind, int n, int index, uint64_t seed, int *x, int *y) {
    placement p = {0};
    if (kind != DATASET_MNIST) place(kind, n, index, seed, &p);
    *x = p.x;
    *y = p.y;
}

/* Whether the partner's box comes first in reading order. */
static int partner_first(const placement *p) {
    return p->x2 < p->x || (p->x2 == p->x && p->y2 < p->y);
}

int dataset_digit_boxes(dataset_kind kind, int n, int index, uint64_t seed, int x[2], int y[2]) {
    placement p = {0};
    if (kind != DATASET_MNIST) place(kind, n, index, seed, &p);
    x[0] = p.x;
    y[0] = p.y;
    if (table[kind].objects < 2) return 1;
    const int swap = partner_first(&p);
    x[swap] = p.x; /* digit `index` second when its partner comes first */
    y[swap] = p.y;
    x[!swap] = p.x2;
    y[!swap] = p.y2;
    return 2;
}

int dataset_partner(dataset_kind kind, const int *labels, int n, int index, uint64_t seed) {
    if (table[kind].objects < 2 || n < 2 || index < 0 || index >= n) return -1;
    uint64_t s = (uint64_t)index ^ 0x9e6c63d0676a9a99ULL; /* not the placement's stream */
    s = seed ^ next(&s);
    int other = 0;
    for (int k = 0; k < DATASET_PARTNER_DRAWS; k++) {
        other = below(&s, n - 1);
        other += other >= index; /* any digit but this one */
        if (labels[other] != labels[index]) return other;
    }
    for (int k = 1; k < n; k++) { /* a pool nearly all of one label */
        const int c = (int)(((long)other + k) % n);
        if (labels[c] != labels[index]) return c;
    }
    return -1;
}

int dataset_digit_labels(dataset_kind kind, const int *labels, int n, int index, uint64_t seed,
                         int digit[2]) {
    digit[0] = labels[index];
    if (table[kind].objects < 2) return 1;
    const int other = dataset_partner(kind, labels, n, index, seed);
    if (other < 0) return -1;
    placement p = {0};
    place(kind, n, index, seed, &p);
    const int swap = partner_first(&p);
    digit[swap] = labels[index];
    digit[!swap] = labels[other];
    return 2;
}

int dataset_label(dataset_kind kind, const int *labels, int n, int index, uint64_t seed) {
    if (table[kind].objects < 2) return labels[index];
    const int other = dataset_partner(kind, labels, n, index, seed);
    if (other < 0) return -1;
    return kind == DATASET_SUM100 ? labels[index] + labels[other]
                                  : dataset_pair_class(labels[index], labels[other]);
}

int dataset_check_labels(const char *prog, dataset_kind kind, const int *labels, int n,
                         const char *what) {
    if (table[kind].objects < 2) return 0;
    int seen = 0; /* bit d: digit d occurs */
    for (int i = 0; i < n; i++) {
        if (labels[i] < 0 || labels[i] > 9) {
            fprintf(stderr, "%s: --dataset %s pairs digits 0..9, but label %d of %s is %d\n", prog,
                    table[kind].name, i, what, labels[i]);
            return -1;
        }
        seen |= 1 << labels[i];
    }
    if (seen & (seen - 1)) return 0; /* two bits or more */
    fprintf(stderr, "%s: --dataset %s pairs digits of different labels, but %s (%d) %s\n", prog,
            table[kind].name, what, n, n ? "all have the same label" : "are none");
    return -1;
}

/* Paint image `index` as placed by `p`: the first `clutter` of its clutter
 * pieces, then `digit` (and the partner `second`, if any), all summed and
 * clipped to [0, 1]. */
static void paint(dataset_kind kind, const float *digits, const placement *p, const float *digit,
                  const float *second, int clutter, float *out) {
    const int D = 28, S = table[kind].side;
    memset(out, 0, sizeof(float) * S * S);
    for (int k = 0; k < clutter && k < p->pieces; k++) {
        const float *src = digits + (size_t)p->piece[k].other * D * D;
        for (int r = 0; r < CROP; r++)
            for (int c = 0; c < CROP; c++)
                out[(p->piece[k].py + r) * S + p->piece[k].px + c] +=
                    src[(p->piece[k].cy + r) * D + p->piece[k].cx + c];
    }
    for (int r = 0; r < D; r++)
        for (int c = 0; c < D; c++)
            out[(p->y + r) * S + p->x + c] += digit[r * D + c];
    for (int r = 0; second && r < D; r++)
        for (int c = 0; c < D; c++)
            out[(p->y2 + r) * S + p->x2 + c] += second[r * D + c];
    for (int i = 0; i < S * S; i++)
        out[i] = out[i] > 1.0f ? 1.0f : out[i];
}

/* Image `index` with `digit` placed and the first `clutter` clutter pieces. */
static void make(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                 const float *digit, uint64_t seed, int clutter, float *out) {
    if (kind == DATASET_MNIST) {
        memcpy(out, digit, sizeof(float) * 28 * 28);
        return;
    }
    placement p;
    place(kind, n, index, seed, &p);
    const int other = dataset_partner(kind, labels, n, index, seed);
    paint(kind, digits, &p, digit, other < 0 ? NULL : digits + (size_t)other * 28 * 28, clutter,
          out);
}

void dataset_make_with(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                       const float *digit, uint64_t seed, float *out) {
    make(kind, digits, labels, n, index, digit, seed, MAX_PIECES, out);
}

void dataset_make_some(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                       const float *digit, int pieces, uint64_t seed, float *out) {
    make(kind, digits, labels, n, index, digit ? digit : digits + (size_t)index * 28 * 28, seed,
         pieces < 0 ? MAX_PIECES : pieces, out);
}

void dataset_make_uncluttered(dataset_kind kind, const float *digits, const int *labels, int n,
                              int index, uint64_t seed, float *out) {
    make(kind, digits, labels, n, index, digits + (size_t)index * 28 * 28, seed, 0, out);
}

void dataset_image(dataset_kind kind, const float *images, const int *labels, int pixels, int n,
                   int k, uint64_t seed, float *out) {
    if (kind == DATASET_MNIST)
        memcpy(out, images + (size_t)k * pixels, sizeof(float) * pixels);
    else
        dataset_make(kind, images, labels, n, k, seed, out);
}

const char *dataset_split_file(dataset_kind kind, const char *split) {
    if (!strcmp(split, "test") || !strcmp(split, "t10k")) return "t10k";
    if (!strcmp(split, "train")) return "train";
    return kind == DATASET_MNIST ? split : NULL;
}

uint64_t dataset_split_seed(const char *split_file) {
    return strcmp(split_file, "train") == 0 ? DATASET_VAL_SEED : DATASET_TEST_SEED;
}

int dataset_load(const char *prog, const char *dir, const char *split, dataset_kind kind,
                 float **digits, int **labels, int *n, int *h, int *w) {
    char err[1024];
    float *d;
    int *l, count, dh, dw;
    if (idx_load_mnist(dir, split, &d, &l, &count, &dh, &dw, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        /* Only MNIST's own files can be fetched: not a mistyped split's. */
        const int mnist = !strcmp(split, "train") || !strcmp(split, "t10k");
        if (mnist && strstr(err, "cannot open") && strstr(err, strerror(ENOENT)))
            fprintf(stderr, "%s: (`ram-fetch-mnist %s` downloads MNIST there)\n", prog, dir);
        return -1;
    }
    if (kind != DATASET_MNIST) {
        if (dh != 28 || dw != 28) {
            fprintf(stderr,
                    "%s: --dataset %s is made from 28 x 28 digits but %s/%s has %d x %d images\n",
                    prog, dataset_name(kind), dir, split, dh, dw);
            free(l);
            free(d);
            return -1;
        }
        dh = dw = dataset_side(kind);
    }
    char what[1100];
    snprintf(what, sizeof what, "the digits of %s/%s", dir, split);
    if (dataset_check_labels(prog, kind, l, count, what)) {
        free(l);
        free(d);
        return -1;
    }
    *digits = d;
    *labels = l;
    *n = count;
    *h = dh;
    *w = dw;
    return 0;
}

int dataset_check_model(const char *prog, const char *model, const ram_model_params *mp,
                        dataset_kind kind, const char *dir, const char *split, int h, int w) {
    char names[128];
    if (mp->channels == 1 && mp->height == h && mp->width == w) {
        if (table[kind].objects < 2 || mp->classes == table[kind].classes) return 0;
        /* a model of one label per digit: its digits, 10 classes */
        if (mp->objects == table[kind].objects && mp->classes == 10) return 0;
        fprintf(stderr, "%s: model %s has %d classes but --dataset %s has %d\n", prog, model,
                mp->classes, dataset_name(kind), table[kind].classes);
        return -1;
    }
    fprintf(stderr, "%s: model %s expects %d x %d x %d images but --dataset %s gives 1 x %d x %d",
            prog, model, mp->channels, mp->height, mp->width, dataset_name(kind), h, w);
    if (mp->channels == 1 && mp->height == mp->width &&
        dataset_names_for_side(mp->height, names, sizeof names) > 0)
        fprintf(stderr, ": use --dataset %s\n", names);
    else
        fprintf(stderr, " (%s/%s)\n", dir, split);
    return -1;
}

/* ---- large colour images ------------------------------------------------------- */

/* Uniform in [0, 1): 24 bits, exact in a float. */
static float unit(uint64_t *s) {
    return (float)(next(s) >> 40) * (1.0f / 16777216.0f);
}

#define COLOUR_GRID 8 /* cells of the background's noise across the canvas */

void dataset_make_colour(const float *digit, int side, int scale, uint64_t seed, int index,
                         float *out) {
    uint64_t s = (uint64_t)index;
    s = seed ^ next(&s); /* one stream per (seed, index) */
    /* A light background with a dark digit or the other way round: every
     * channel differs by 0.15 or more, most by far more. */
    const int light = below(&s, 2);
    float a[3], b[3], d[3];
    for (int c = 0; c < 3; c++) {
        a[c] = light ? 0.45f + 0.55f * unit(&s) : 0.55f * unit(&s);
        b[c] = light ? 0.45f + 0.55f * unit(&s) : 0.55f * unit(&s);
        d[c] = light ? 0.3f * unit(&s) : 0.7f + 0.3f * unit(&s);
    }
    float grid[COLOUR_GRID + 1][COLOUR_GRID + 1];
    for (int i = 0; i <= COLOUR_GRID; i++)
        for (int j = 0; j <= COLOUR_GRID; j++)
            grid[i][j] = unit(&s);
    /* Stripes: one of four directions, a period of 8 to 72 pixels. */
    const int dir = below(&s, 4);
    const float period = 8.0f + 64.0f * unit(&s), phase = unit(&s), weight = 0.35f * unit(&s);
    const int box = 28 * scale;
    const int x0 = below(&s, side - box + 1), y0 = below(&s, side - box + 1);
    const size_t plane = (size_t)side * (size_t)side;
    const float cell = (float)side / COLOUR_GRID;
    for (int y = 0; y < side; y++) {
        const float gy = (float)y / cell;
        const int iy = (int)gy < COLOUR_GRID ? (int)gy : COLOUR_GRID - 1;
        float fy = gy - (float)iy;
        fy = fy * fy * (3.0f - 2.0f * fy); /* smoothstep: no creases at cell edges */
        for (int x = 0; x < side; x++) {
            const float gx = (float)x / cell;
            const int ix = (int)gx < COLOUR_GRID ? (int)gx : COLOUR_GRID - 1;
            float fx = gx - (float)ix;
            fx = fx * fx * (3.0f - 2.0f * fx);
            const float top = grid[iy][ix] + (grid[iy][ix + 1] - grid[iy][ix]) * fx;
            const float bot = grid[iy + 1][ix] + (grid[iy + 1][ix + 1] - grid[iy + 1][ix]) * fx;
            const float u = (float)(dir == 0 ? x : dir == 1 ? y : dir == 2 ? x + y : x - y + side);
            float f = u / period + phase;
            f -= (float)(int)f;
            const float tri = f < 0.5f ? 2.0f * f : 2.0f - 2.0f * f;
            const float t = (top + (bot - top) * fy) * (1.0f - weight) + tri * weight;
            float alpha = 0.0f;
            if (x >= x0 && x < x0 + box && y >= y0 && y < y0 + box) {
                /* bilinear, pixel centres aligned: the digit's pixel k covers
                 * [k * scale, (k + 1) * scale) of the box */
                const float sx = ((float)(x - x0) + 0.5f) / (float)scale - 0.5f;
                const float sy = ((float)(y - y0) + 0.5f) / (float)scale - 0.5f;
                const int kx = sx < 0 ? -1 : (int)sx, ky = sy < 0 ? -1 : (int)sy;
                const float wx = sx - (float)kx, wy = sy - (float)ky;
                float v[2][2];
                for (int j = 0; j < 2; j++)
                    for (int i = 0; i < 2; i++) {
                        const int px = kx + i, py = ky + j;
                        v[j][i] =
                            px >= 0 && px < 28 && py >= 0 && py < 28 ? digit[py * 28 + px] : 0.0f;
                    }
                alpha = (v[0][0] + (v[0][1] - v[0][0]) * wx) * (1.0f - wy) +
                        (v[1][0] + (v[1][1] - v[1][0]) * wx) * wy;
                alpha = alpha < 0.0f ? 0.0f : alpha > 1.0f ? 1.0f : alpha;
            }
            for (int c = 0; c < 3; c++) {
                const float bg = a[c] + (b[c] - a[c]) * t;
                out[(size_t)c * plane + (size_t)y * side + x] = bg + (d[c] - bg) * alpha;
            }
        }
    }
}
