#define _DEFAULT_SOURCE /* strdup, madvise */
/* An image folder as a data set (see folder.h). */
#include "folder.h"

#include "image.h"
#include "list.h"
#include "idx.h"
#include "npz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* a/b into out; "" when it does not fit (no such file then). */
static const char *join(char *out, size_t len, const char *a, const char *b) {
    const int k = snprintf(out, len, "%s/%s", a, b);
    if (k < 0 || (size_t)k >= len) out[0] = '\0';
    return out;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* The entries of `dir` but the hidden ones, in byte order; count or -1. */
static int list_dir(const char *dir, char ***out) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, sizeof *names * cap);
            if (!more) break;
            names = more;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    *out = names;
    return n;
}

static int ends_with(const char *s, const char *tail) {
    const size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

int folder_is_images(const char *dir) {
    if (list_is_list(dir) || npz_is_npz(dir)) return 1;
    char **names, path[4096];
    int n = list_dir(dir, &names), subdir = 0, idx = 0;
    for (int i = 0; i < n; i++) {
        join(path, sizeof path, dir, names[i]);
        idx |= ends_with(names[i], "-ubyte");
        subdir |= is_dir(path);
    }
    if (n >= 0) free_names(names, n);
    return subdir && !idx;
}

/* PATH/train, PATH/test and PATH/val hold the splits (a folder with one of
 * the first two is taken to be laid out so). */
static int has_splits(const char *dir) {
    char path[4096];
    return is_dir(join(path, sizeof path, dir, "train")) ||
           is_dir(join(path, sizeof path, dir, "test"));
}

int folder_has_split(const char *dir, const char *split) {
    char path[4096];
    snprintf(path, sizeof path, "x_%.20s.npy", split);
    if (npz_is_npz(dir)) return npz_has(dir, path);
    join(path, sizeof path, dir, split);
    return has_splits(dir) && !list_is_list(dir) ? is_dir(path) : strcmp(split, "val") != 0;
}

/* Whether file `name` of class `cls` is in `split` of a folder without splits. */
static int in_split(const char *cls, const char *name, const char *split) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 of "cls/name" */
    for (const char *p = cls; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (h % 5 == 0) == !strcmp(split, "test");
}

/* The files of a split: paths and labels. */
typedef struct listing {
    char **paths;
    int *labels;
    int n, cap;
} listing;

static int add_file(listing *l, const char *path, int label) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        char **p = realloc(l->paths, sizeof *p * l->cap);
        if (p) l->paths = p;
        int *b = realloc(l->labels, sizeof *b * l->cap);
        if (b) l->labels = b;
        if (!p || !b) return -1;
    }
    if (!(l->paths[l->n] = strdup(path))) return -1;
    l->labels[l->n++] = label;
    return 0;
}

static void free_listing(listing *l) {
    free_names(l->paths, l->n);
    free(l->labels);
}

static int class_of(const char *name, const char *const *names, int count) {
    for (int k = 0; k < count; k++)
        if (!strcmp(names[k], name)) return k;
    return -1;
}

/* The images of one class folder into l; a non-image is bad (counted in
 * *bad when skipped).  0 or -1. */
static int list_class(const char *prog, const char *root, const char *cls, const char *split,
                      int hashed, int label, int on_bad, int *bad, listing *l) {
    char dir[4096], path[8192], **files;
    join(dir, sizeof dir, root, cls);
    const int n = list_dir(dir, &files), before = l->n;
    if (n < 0) {
        fprintf(stderr, "%s: cannot read class folder %s: %s\n", prog, dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        join(path, sizeof path, dir, files[i]);
        if (hashed && !in_split(cls, files[i], split)) continue;
        if (image_is_image_name(files[i]) && !is_dir(path)) {
            rc = add_file(l, path, label);
            if (rc) fprintf(stderr, "%s: out of memory\n", prog);
        } else if (on_bad == FOLDER_SKIP) {
            ++*bad;
        } else {
            fprintf(stderr,
                    "%s: %s is not a .png, .jpg or .jpeg file (--on-bad skip passes over it)\n",
                    prog, path);
            rc = -1;
        }
    }
    free_names(files, n);
    if (!rc && l->n == before && n == 0) {
        fprintf(stderr, "%s: class folder %s has no images\n", prog, dir);
        rc = -1;
    }
    return rc;
}

/* The root of the split's class folders: PATH/split, or PATH itself. */
static void split_root(const char *dir, const char *split, char *root, size_t len) {
    if (has_splits(dir))
        join(root, len, dir, split);
    else
        snprintf(root, len, "%s", dir);
}

/* The class folders of a split (its subdirectories) into *classes. */
static int list_classes(const char *prog, const char *root, char ***classes) {
    char **all, path[8192];
    int n = list_dir(root, &all), k = 0;
    if (n < 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, root, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        join(path, sizeof path, root, all[i]);
        if (is_dir(path))
            all[k++] = all[i];
        else
            free(all[i]); /* a file beside the class folders (a README) */
    }
    if (k == 0) {
        fprintf(stderr, "%s: %s has no class folders\n", prog, root);
        free(all);
        return -1;
    }
    *classes = all;
    return k;
}

/* The files of a split and, without `names`, its classes (*own). */
static int list_split(const char *prog, const char *dir, const char *split,
                      const char *const *names, int count, int on_bad, listing *l, char ***own,
                      int *n_own, int *bad) {
    char root[4096], **classes;
    if (list_is_list(dir)) { /* one split: the whole list */
        int rc = list_read(prog, dir, names, count, &l->paths, &l->labels, &l->n, own, n_own);
        l->cap = l->n;
        return rc;
    }
    split_root(dir, split, root, sizeof root);
    const int n = list_classes(prog, root, &classes);
    if (n < 0) return -1;
    int rc = 0;
    if (!names && n < 2) {
        fprintf(stderr, "%s: %s has a single class folder (%s): a classifier needs two or more\n",
                prog, root, classes[0]);
        rc = -1;
    }
    for (int i = 0; i < n && !rc; i++) {
        const int label = names ? class_of(classes[i], names, count) : i;
        if (label < 0) {
            fprintf(stderr, "%s: class folder %s/%s is not one of the model's %d classes\n", prog,
                    root, classes[i], count);
            rc = -1;
        } else {
            rc = list_class(prog, root, classes[i], split, !has_splits(dir), label, on_bad, bad, l);
        }
    }
    if (!rc && l->n == 0) {
        fprintf(stderr, "%s: %s has no images in split %s\n", prog, dir, split);
        rc = -1;
    }
    if (rc || names) {
        free_names(classes, n);
    } else {
        *own = classes;
        *n_own = n;
    }
    return rc;
}

/* An .npz's split (below). */
static int npz_find(const char *prog, const char *path, const char *split, npz_file *z,
                    npy_array *x, npy_array *y);

/* The canvas an image array suggests: its size, grey or colour. */
static void array_canvas(const npy_array *x, int *c, int *h, int *w) {
    npy_image_dims(x, c, h, w);
    *c = *c >= 3 ? 3 : 1;
}

int folder_probe(const char *prog, const char *dir, const char *split, int *c, int *h, int *w) {
    if (npz_is_npz(dir)) {
        npz_file z;
        npy_array x, y;
        if (npz_find(prog, dir, split, &z, &x, &y)) return -1;
        array_canvas(&x, c, h, w);
        npy_array_free(&x);
        npy_array_free(&y);
        npz_close(&z);
        return 0;
    }
    listing l = {0};
    char **own = NULL, err[4096];
    int n_own = 0, bad = 0;
    if (list_split(prog, dir, split, NULL, 0, FOLDER_SKIP, &l, &own, &n_own, &bad)) {
        free_listing(&l);
        return -1;
    }
    image img;
    int rc = image_load(l.paths[0], &img, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err);
    } else {
        *c = img.c >= 3 ? 3 : 1;
        *h = img.h;
        *w = img.w;
        image_free(&img);
    }
    free_names(own, n_own);
    free_listing(&l);
    return rc;
}

/* A fitted pixel as the in-memory set keeps it: round(255 * v). */
static unsigned char to_byte(float v) {
    return (unsigned char)((v < 0 ? 0 : v > 1 ? 1 : v) * 255.0f + 0.5f);
}

/* Fitted floats rounded to what the in-memory set would hold, in place: a
 * streamed run sees the very pixels of a kept one. */
static void as_bytes(float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        v[i] = (float)to_byte(v[i]) / 255.0f;
}

/* img fitted to the set's canvas (floats in `canvas`): 0, or -1 after
 * saying why, naming `what`. */
static int fit_image(const folder_set *s, const char *what, const image *img, float *canvas) {
    const size_t pixels = (size_t)s->c * s->h * s->w;
    ram_status st = ram_image_fit(s->fit, img->px, img->c, img->h, img->w, canvas, pixels);
    if (st == RAM_OK) return 0;
    fprintf(stderr, "%s: %s: %s\n", s->prog, what, ram_last_error());
    return -1;
}

/* Decode and fit file `path` into image slot s->n (floats in `canvas`);
 * 1 when it was bad and skipped, 0 when kept, -1 to stop. */
static int add_image(const char *path, float *canvas, folder_set *s) {
    char err[4096];
    image img;
    if (image_load(path, &img, err, sizeof err)) {
        fprintf(stderr, "%s: %s%s\n", s->prog, err,
                s->on_bad == FOLDER_SKIP ? " (skipped)" : " (--on-bad skip passes over it)");
        return s->on_bad == FOLDER_SKIP ? 1 : -1;
    }
    const int rc = fit_image(s, path, &img, canvas);
    image_free(&img);
    const size_t pixels = (size_t)s->c * s->h * s->w;
    for (size_t i = 0; !rc && i < pixels; i++)
        s->bytes[(size_t)s->n * pixels + i] = to_byte(canvas[i]);
    return rc;
}

/* ---- arrays: .npz members, .npy and IDX files (npz.h, idx.h) ------------------ */

/* Whether x holds images and y their labels; -1 after saying why (x and y
 * named by what_x and what_y). */
static int check_arrays(const char *prog, const char *what_x, const npy_array *x,
                        const char *what_y, const npy_array *y) {
    int c, h, w;
    const char *why = npy_image_error(x);
    if (why || npy_image_dims(x, &c, &h, &w)) {
        fprintf(stderr, "%s: %s: %s\n", prog, what_x, why ? why : "not an array of images");
        return -1;
    }
    if ((double)h * w > IMAGE_MAX_PIXELS || x->shape[0] < 1) {
        fprintf(stderr, "%s: %s: %ld images of %dx%d: none, or larger than these tools read\n",
                prog, what_x, x->shape[0], h, w);
        return -1;
    }
    if (!(y->ndim == 1 || (y->ndim == 2 && y->shape[1] == 1))) {
        fprintf(stderr, "%s: %s: labels must be N numbers (or N x 1), not a %d-D array\n", prog,
                what_y, y->ndim);
        return -1;
    }
    if (y->shape[0] != x->shape[0]) {
        fprintf(stderr, "%s: %s has %ld labels for the %ld images of %s\n", prog, what_y,
                y->shape[0], x->shape[0], what_x);
        return -1;
    }
    return 0;
}

/* x_<split> and y_<split> (stored or deflated): 0, 1 when the split is
 * missing, or -1 after saying why. */
static int npz_split(const char *prog, const char *path, const npz_file *z, const char *split,
                     npy_array *x, npy_array *y) {
    char name[32], what_x[4200], what_y[4200];
    memset(x, 0, sizeof *x);
    memset(y, 0, sizeof *y);
    snprintf(name, sizeof name, "x_%.20s", split);
    snprintf(what_x, sizeof what_x, "%s: x_%.20s", path, split);
    int rc = npz_read(prog, path, z, name, x);
    snprintf(name, sizeof name, "y_%.20s", split);
    snprintf(what_y, sizeof what_y, "%s: y_%.20s", path, split);
    if (rc == 0) rc = npz_read(prog, path, z, name, y);
    if (rc == 0) rc = check_arrays(prog, what_x, x, what_y, y);
    if (rc) {
        npy_array_free(x);
        npy_array_free(y);
    }
    return rc;
}

/* Open the file and find a split: 0, or -1 (said). */
static int npz_find(const char *prog, const char *path, const char *split, npz_file *z,
                    npy_array *x, npy_array *y) {
    if (npz_open(prog, path, z)) return -1;
    const int rc = npz_split(prog, path, z, split, x, y);
    if (rc == 1)
        fprintf(stderr,
                "%s: %s has no x_%s and y_%s (an .npz holds x_train, y_train, x_test, y_test and "
                "optionally x_val, y_val)\n",
                prog, path, split, split);
    if (rc) npz_close(z);
    return rc ? -1 : 0;
}

/* An .npy or IDX file (told by its name: *.npy, else IDX), mapped. */
static int open_array(const char *prog, const char *path, npz_file *map, npy_array *a) {
    memset(a, 0, sizeof *a);
    if (npy_is_npy(path)) return npy_open(prog, path, map, a);
    char err[4400];
    if (idx_map(path, map, a, err, sizeof err) == 0) return 0;
    fprintf(stderr, "%s: %s\n", prog, err);
    return -1;
}

int folder_probe_pair(const char *prog, const char *images, int *c, int *h, int *w) {
    npz_file map;
    npy_array x;
    if (open_array(prog, images, &map, &x)) return -1;
    const char *why = npy_image_error(&x);
    if (why) fprintf(stderr, "%s: %s: %s\n", prog, images, why);
    if (!why) array_canvas(&x, c, h, w);
    npz_close(&map);
    return why ? -1 : 0;
}

/* The class names "0".."k-1" of labels 0..k-1. */
static char **number_names(int k) {
    char **names = calloc((size_t)k, sizeof *names);
    for (int i = 0; names && i < k; i++)
        if ((names[i] = malloc(12))) snprintf(names[i], 12, "%d", i);
    return names;
}

static size_t memory_budget(void);

/* An array no larger than a kept set may be has its pages mapped in now
 * (MADV_POPULATE_READ: the page tables filled from the page cache, reading
 * the file once if it is not there), as a kept set's pixels are in memory
 * before training starts.  Without it each epoch's glimpses, landing on
 * pages of the file not touched before, fault them in a few at a time in
 * the middle of the training steps: a 512 x 512 .npz trained at 0.76 of
 * the kept set's speed.  Advice only: where the kernel lacks it, nothing
 * changes but the speed. */
static void map_in(const npy_array *x) {
#ifdef MADV_POPULATE_READ
    const size_t len = x->count * (size_t)x->item;
    if (x->owned || !len || len > memory_budget()) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from = (uintptr_t)x->data;
    const uintptr_t start = from & ~(page - 1);
    madvise((void *)start, from + len - start, MADV_POPULATE_READ);
#else
    (void)x;
#endif
}

/* Images x and labels y into s: x kept (mapped, or owned), the labels read
 * and checked against `count` classes (0: their own, at least two, named
 * "0".."k-1"), float pixels checked now rather than in the middle of a run. */
static int take_arrays(const char *what, const char *what_y, npy_array *x, const npy_array *y,
                       int count, folder_set *s) {
    s->x = *x;
    memset(x, 0, sizeof *x);
    s->mapped = 1;
    s->path = what;
    npy_image_dims(&s->x, &s->ac, &s->ah, &s->aw);
    map_in(&s->x);
    const int n = (int)s->x.shape[0];
    char err[256];
    int top = 0;
    if (!(s->labels = malloc(sizeof *s->labels * (size_t)n))) {
        fprintf(stderr, "%s: out of memory for %d labels\n", s->prog, n);
        return -1;
    }
    if (npy_labels(y, (size_t)n, s->labels, &top, err, sizeof err)) {
        fprintf(stderr, "%s: %s: %s\n", s->prog, what_y, err);
        return -1;
    }
    if (count && top >= count) {
        for (int i = 0; i < n; i++)
            if (s->labels[i] >= count) {
                fprintf(stderr,
                        "%s: %s: label %d of image %d is not one of the model's %d "
                        "classes\n",
                        s->prog, what_y, s->labels[i], i, count);
                return -1;
            }
    }
    if (!count && top < 1) {
        fprintf(stderr, "%s: %s has a single class (%d): a classifier needs two or more\n", s->prog,
                what, top);
        return -1;
    }
    if (!count && !(s->names = number_names(s->classes = top + 1))) {
        fprintf(stderr, "%s: out of memory\n", s->prog);
        return -1;
    }
    s->n = n;
    if (s->x.kind != 'f') return 0;
    float *px = malloc(sizeof *px * (size_t)s->ac * s->ah * s->aw);
    int rc = px ? 0 : -1;
    if (!px) fprintf(stderr, "%s: out of memory\n", s->prog);
    for (int i = 0; i < n && !rc; i++)
        if (npy_image(&s->x, (size_t)i, px)) {
            fprintf(stderr,
                    "%s: %s: image %d has a value that is NaN, infinite or outside "
                    "[0, 1]\n",
                    s->prog, what, i);
            rc = -1;
        }
    free(px);
    return rc;
}

/* An .npz split: mapped (or inflated), read image by image. */
static int npz_load(const char *path, const char *split, int count, folder_set *s) {
    npy_array x, y;
    if (npz_find(s->prog, path, split, &s->map, &x, &y)) return -1;
    char what_y[4200];
    snprintf(what_y, sizeof what_y, "%s: y_%.20s", path, split);
    const int rc = take_arrays(path, what_y, &x, &y, count, s);
    npy_array_free(&x);
    npy_array_free(&y);
    return rc;
}

/* ---- image files: kept in memory, or streamed -------------------------------- */

/* A seeded Fisher-Yates shuffle (splitmix64) of order[0..n): the same on
 * every machine. */
static void shuffle_order(int *order, int n, uint64_t seed) {
    for (int i = n - 1; i > 0; i--) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        const int j = (int)(z % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The listed files decoded into s->bytes. */
static int decode_all(const listing *l, folder_set *s) {
    const size_t pixels = (size_t)s->c * s->h * s->w;
    float *canvas = malloc(sizeof *canvas * pixels);
    s->bytes = malloc(pixels * (size_t)l->n);
    s->labels = malloc(sizeof *s->labels * (size_t)l->n);
    int rc = canvas && s->bytes && s->labels ? 0 : -1;
    if (rc)
        fprintf(stderr, "%s: out of memory for %d images of %zu bytes\n", s->prog, l->n, pixels);
    for (int i = 0; i < l->n && !rc; i++) {
        const int got = add_image(l->paths[i], canvas, s);
        if (got < 0) rc = -1;
        s->skipped += got == 1;
        if (got == 0) s->labels[s->n++] = l->labels[i];
    }
    free(canvas);
    return rc;
}

/* Streamed files: each header read now (a bad one stops, or is skipped and
 * counted), the pixels when folder_image asks.  The listing moves into s. */
static int probe_all(listing *l, folder_set *s) {
    char err[4096];
    int kept = 0;
    for (int i = 0; i < l->n; i++) {
        image img;
        if (image_probe(l->paths[i], &img, err, sizeof err)) {
            fprintf(stderr, "%s: %s%s\n", s->prog, err,
                    s->on_bad == FOLDER_SKIP ? " (skipped)" : " (--on-bad skip passes over it)");
            if (s->on_bad != FOLDER_SKIP) return -1;
            s->skipped++;
            free(l->paths[i]);
            continue;
        }
        l->paths[kept] = l->paths[i];
        l->labels[kept++] = l->labels[i];
    }
    s->paths = l->paths;
    s->labels = l->labels;
    s->n = kept;
    *l = (listing){0};
    return 0;
}

/* Half of the machine's memory: the most an in-memory set may take. */
static size_t memory_budget(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (size_t)pages / 2 * (size_t)size : (size_t)1 << 31;
}

/* Whether n images of `pixels` bytes are streamed rather than kept. */
static int streams(const folder_set *s, int stream, int n) {
    return stream || (double)n * s->c * s->h * s->w > (double)memory_budget();
}

/* What every set starts with: its own copy of the canvas and fit rule,
 * for folder_image.  0, or -1 (said). */
static int set_up(const char *prog, const ram_model *fit, int on_bad, folder_set *s) {
    memset(s, 0, sizeof *s);
    s->prog = prog;
    s->on_bad = on_bad;
    ram_model_params mp;
    ram_model_params_init(&mp);
    if (ram_model_get_params(fit, &mp) != RAM_OK || ram_model_create(&mp, &s->fit) != RAM_OK ||
        ram_model_set_fit(s->fit, ram_model_fit(fit)) != RAM_OK) {
        fprintf(stderr, "%s: %s\n", prog, ram_last_error());
        return -1;
    }
    s->c = mp.channels;
    s->h = mp.height;
    s->w = mp.width;
    return 0;
}

/* The images' order, shuffled by `shuffle` when it is not 0; rc passed
 * through, and the set freed on failure. */
static int finish(int rc, uint64_t shuffle, folder_set *s) {
    if (!rc && !(s->order = malloc(sizeof *s->order * (size_t)s->n))) {
        fprintf(stderr, "%s: out of memory\n", s->prog);
        rc = -1;
    }
    for (int i = 0; !rc && i < s->n; i++)
        s->order[i] = i;
    if (!rc && shuffle) shuffle_order(s->order, s->n, shuffle);
    if (rc) folder_free(s);
    return rc;
}

/* What a cache of the streamed set must match: the canvas, the fit rule,
 * and each file's path, size and modification time, in order (a file
 * changed, added or removed makes another cache). */
static uint64_t fingerprint(const folder_set *s) {
    const int head[5] = {s->c, s->h, s->w, (int)ram_model_fit(s->fit), s->n};
    uint64_t h = cache_hash(CACHE_HASH_START, head, sizeof head);
    for (int i = 0; i < s->n; i++) {
        struct stat st;
        int64_t meta[3] = {-1, -1, -1};
        if (!stat(s->paths[i], &st)) {
            meta[0] = (int64_t)st.st_size;
            meta[1] = (int64_t)st.st_mtim.tv_sec;
            meta[2] = (int64_t)st.st_mtim.tv_nsec;
        }
        h = cache_hash(h, s->paths[i], strlen(s->paths[i]) + 1);
        h = cache_hash(h, meta, sizeof meta);
        h = cache_hash(h, &s->labels[i], sizeof s->labels[i]);
    }
    return h;
}

int folder_load(const char *prog, const char *dir, const char *split, const ram_model *fit,
                const char *const *names, int count, int on_bad, uint64_t shuffle, int stream,
                const char *cache, folder_set *s) {
    if (set_up(prog, fit, on_bad, s)) return -1;
    if (npz_is_npz(dir)) return finish(npz_load(dir, split, names ? count : 0, s), shuffle, s);
    listing l = {0};
    int rc =
        list_split(prog, dir, split, names, count, on_bad, &l, &s->names, &s->classes, &s->skipped);
    if (!rc) {
        s->streamed = streams(s, stream, l.n);
        rc = s->streamed ? probe_all(&l, s) : decode_all(&l, s);
    }
    if (!rc && s->n == 0) {
        fprintf(stderr, "%s: no image of %s could be read\n", prog, dir);
        rc = -1;
    }
    if (!rc && s->streamed && cache) {
        s->cache = cache_open(prog, cache, fingerprint(s), s->n, (size_t)s->c * s->h * s->w);
        if (s->cache)
            fprintf(stderr, "%s: %s (%s): %d of %d images decoded in the cache of %s\n", prog, dir,
                    split, cache_count(s->cache), s->n, cache);
    }
    free_listing(&l);
    return finish(rc, shuffle, s);
}

int folder_load_pair(const char *prog, const char *images, const char *labels, const ram_model *fit,
                     const char *const *names, int count, uint64_t shuffle, folder_set *s) {
    if (set_up(prog, fit, FOLDER_FAIL, s)) return -1;
    npy_array x, y;
    npz_file ymap;
    int rc = open_array(prog, images, &s->map, &x);
    s->mapped = !rc; /* s->map is to be closed */
    if (!rc && (rc = open_array(prog, labels, &ymap, &y)) == 0) {
        rc = check_arrays(prog, images, &x, labels, &y);
        if (!rc) rc = take_arrays(images, labels, &x, &y, names ? count : 0, s);
        npz_close(&ymap);
    }
    npy_array_free(&x);
    return finish(rc, shuffle, s);
}

int folder_label(const folder_set *s, int k) {
    return s->labels[s->order[k]];
}

/* File `at` of a streamed set decoded, fitted and rounded as decode_all
 * keeps it, into out (floats): 0; 1 when it was bad and skipped, -1 to stop. */
static int decode_file(const folder_set *s, int at, float *out) {
    const char *path = s->paths[at];
    char err[4096];
    image img;
    if (image_load(path, &img, err, sizeof err)) {
        fprintf(stderr, "%s: %s%s\n", s->prog, err,
                s->on_bad == FOLDER_SKIP ? " (skipped)" : " (--on-bad skip passes over it)");
        return s->on_bad == FOLDER_SKIP ? 1 : -1;
    }
    const size_t pixels = (size_t)s->c * s->h * s->w;
    int rc = 0;
    if (img.bits == 8 && img.c == s->c && img.h == s->h && img.w == s->w &&
        ram_model_fit(s->fit) == RAM_FIT_PAD) {
        memcpy(out, img.px, sizeof *out * pixels); /* what fitting and rounding would give */
    } else {
        rc = fit_image(s, path, &img, out);
        if (!rc) as_bytes(out, pixels);
    }
    image_free(&img);
    return rc;
}

/* Streamed file k: decoded (or read back from the cache). */
static int stream_file(const folder_set *s, int k, float *out) {
    const int at = s->order[k];
    if (cache_get(s->cache, at, out)) return 0;
    const int rc = decode_file(s, at, out);
    if (!rc) cache_put(s->cache, at, out);
    return rc;
}

/* Array image k, fitted; 8-bit arrays rounded to bytes as a kept set would
 * hold them, 16-bit and float arrays as they are. */
static int stream_array(const folder_set *s, int k, float *out) {
    const npy_array *x = &s->x;
    const size_t i = (size_t)s->order[k], plane = (size_t)s->ah * s->aw;
    if (x->kind == 'u' && x->item == 1 && s->ac == s->c && s->ah == s->h && s->aw == s->w &&
        ram_model_fit(s->fit) == RAM_FIT_PAD) {
        /* The canvas's own size: what fitting would give, in one pass over
         * the bytes (interleaved channels to planes). */
        const unsigned char *src = x->data + i * plane * s->ac;
        const size_t all = plane * (size_t)s->ac;
        if (s->ac == 1 || x->layout == NPY_NCHW) { /* planes already: the kept set's loop */
            for (size_t p = 0; p < all; p++)
                out[p] = (float)src[p] / 255.0f;
            return 0;
        }
        /* The layout's test out of the loops, so that they vectorise: the
         * per-pixel choice took 60 % of a 512 x 512 training's time. */
        for (int ch = 0; ch < s->ac; ch++) {
            float *o = out + ch * plane;
            const unsigned char *c = src + ch;
            for (size_t p = 0; p < plane; p++)
                o[p] = (float)c[p * (size_t)s->ac] / 255.0f;
        }
        return 0;
    }
    image img = {s->ac, s->ah, s->aw, malloc(sizeof(float) * s->ac * plane), 0};
    char what[4200];
    snprintf(what, sizeof what, "%s (image %zu)", s->path, i);
    int rc = img.px ? npy_image(x, i, img.px) : -1;
    if (rc) fprintf(stderr, "%s: %s: cannot be read\n", s->prog, what);
    if (!rc) rc = fit_image(s, what, &img, out);
    free(img.px);
    if (!rc && x->kind == 'u' && x->item == 1) as_bytes(out, (size_t)s->c * s->h * s->w);
    return rc;
}

int folder_image(const folder_set *s, int k, float *out) {
    if (s->mapped) return stream_array(s, k, out);
    if (s->streamed) return stream_file(s, k, out);
    const size_t pixels = (size_t)s->c * s->h * s->w;
    const unsigned char *src = s->bytes + (size_t)s->order[k] * pixels;
    for (size_t i = 0; i < pixels; i++)
        out[i] = (float)src[i] / 255.0f;
    return 0;
}

int folder_has_bytes(const folder_set *s) {
    return !s->mapped || (s->x.kind == 'u' && s->x.item == 1);
}

/* Floats that are whole multiples of 1/255 (a set's rounded pixels) to
 * their bytes. */
static void to_bytes(const float *v, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; i++)
        out[i] = to_byte(v[i]);
}

/* folder_image() into floats of its own, then to bytes in buf. */
static int through_floats(const folder_set *s, int k, unsigned char *buf) {
    const size_t pixels = (size_t)s->c * s->h * s->w;
    float *tmp = malloc(sizeof *tmp * pixels);
    if (!tmp) {
        fprintf(stderr, "%s: out of memory for an image of %zu pixels\n", s->prog, pixels);
        return -1;
    }
    int rc;
    if (s->streamed) {
        rc = decode_file(s, s->order[k], tmp);
    } else {
        rc = stream_array(s, k, tmp);
    }
    if (!rc) to_bytes(tmp, pixels, buf);
    free(tmp);
    return rc;
}

int folder_image_u8(const folder_set *s, int k, unsigned char *buf, const unsigned char **px) {
    const size_t pixels = (size_t)s->c * s->h * s->w;
    const int at = s->order[k];
    *px = buf;
    if (!s->mapped && !s->streamed) { /* kept: the set's own bytes */
        *px = s->bytes + (size_t)at * pixels;
        return 0;
    }
    if (s->streamed) {
        const unsigned char *cached = cache_peek(s->cache, at);
        if (cached) {
            *px = cached;
            return 0;
        }
        const int rc = through_floats(s, k, buf);
        if (!rc) cache_put_bytes(s->cache, at, buf);
        return rc;
    }
    const npy_array *x = &s->x;
    const size_t plane = (size_t)s->ah * s->aw;
    if (s->ac == s->c && s->ah == s->h && s->aw == s->w && ram_model_fit(s->fit) == RAM_FIT_PAD) {
        const unsigned char *src = x->data + (size_t)at * plane * s->ac;
        if (s->ac == 1 || x->layout == NPY_NCHW) { /* planes in the file: no copy */
            *px = src;
            return 0;
        }
        for (int ch = 0; ch < s->ac; ch++) /* interleaved channels to planes */
            for (size_t p = 0; p < plane; p++)
                buf[ch * plane + p] = src[p * (size_t)s->ac + ch];
        return 0;
    }
    return through_floats(s, k, buf); /* fitted to the canvas */
}

void folder_prefetch(const folder_set *s, const int *ks, int n) {
    const npy_array *x = &s->x;
    /* Only for an array larger than the memory kept sets may take: a
     * smaller one stays in the page cache after the first epoch, and the
     * advice (a system call per image) cost 10 % of MNIST's training speed. */
    if (!s->mapped || x->owned || s->map.len <= memory_budget()) return;
    const size_t bytes = x->count / (size_t)x->shape[0] * (size_t)x->item;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < n; i++) {
        const uintptr_t from = (uintptr_t)(x->data + (size_t)s->order[ks[i]] * bytes);
        const uintptr_t start = from & ~(page - 1);
        /* Advice only: an array in memory already is not read again. */
        madvise((void *)start, from + bytes - start, MADV_WILLNEED);
    }
}

void folder_report(const char *prog, const char *dir, const folder_set *s) {
    if (s->skipped)
        fprintf(stderr, "%s: skipped %d bad file%s of %s (--on-bad skip)\n", prog, s->skipped,
                s->skipped == 1 ? "" : "s", dir);
}

void folder_free(folder_set *s) {
    cache_close(s->cache);
    free_names(s->names, s->classes);
    free_names(s->paths, s->n);
    free(s->bytes);
    free(s->labels);
    free(s->order);
    npy_array_free(&s->x);
    if (s->mapped) npz_close(&s->map);
    ram_model_free(s->fit);
    memset(s, 0, sizeof *s);
}
