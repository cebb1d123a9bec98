/*
 * ram-data: export the translated, cluttered and two-digit MNIST sets of
 * tools/common/datasets.h as IDX files, byte for byte what the other tools use.
 *
 *   test   the fixed test set ram-eval and ram-glimpses use: the 10,000 t10k
 *          digits placed with DATASET_TEST_SEED, clutter from the t10k digits
 *   val    ram-train's validation set: the last N (--val, 10000) training
 *          digits placed with DATASET_VAL_SEED, clutter from all 60,000
 *   train  the training images of epoch E (1-based, as ram-train prints and
 *          logs it) of a run with --seed S: the first 60000 - N digits, each
 *          placed with seed S * 1000003 + (E - 1), clutter from those digits.
 *          They are written in digit order; ram-train visits them shuffled.
 *
 * Files: OUTDIR/<name>-<split>-images-idx3-ubyte and -labels-idx1-ubyte, where
 * split is t10k, val or train-e<E>-s<S>, so idx_load_mnist(OUTDIR,
 * "<name>-t10k", ...) and `ram-eval --split <name>-t10k` read them back.  The
 * output depends only on the MNIST files and the arguments: running it twice
 * gives identical bytes (see docs/datasets.md for the checksums).
 *
 * stdout gets the two paths, one per line (`sha256sum $(ram-data ...)`);
 * stderr a summary.
 *
 * The labels are the images' classes (dataset_label): for pairs100 the pair's
 * class 0..44, for sum100 the sum.  A two-digit set also gets the two digits'
 * labels in reading order (dataset_digit_labels), which the other tools do
 * not read: an IDX file OUTDIR/<name>-<split>-labels2-idx2-ubyte of N x 2
 * bytes (a third path on stdout), y2_<split> (N x 2, int64) in an .npz, and
 * OUT/<split>/digits.csv (file,first,second) beside a PNG folder's class
 * folders, which are named by dataset_class_name ("3-7", "12").
 *
 * --format png writes an image folder instead, as ram-train --data reads
 * it: OUT/train, OUT/val and OUT/test (or the one --split), each
 * OUT/<split>/<digit>/<index>.png, index zero-padded to the split's size so
 * that byte order is the sets' order.  It is written into OUT.tmp-XXXXXX and
 * renamed to OUT at the end: an OUT that exists is complete.
 *
 * --format npz writes one NumPy .npz file OUT instead (as np.savez does:
 * stored members, which the tools memory-map): x_train, y_train, x_val,
 * y_val, x_test, y_test (or --split's two), uint8 images N x H x W and int64
 * labels, written to OUT.tmp and renamed.
 *
 * --colour SIDE makes large colour images instead of --dataset's (which must
 * be mnist): each digit scaled by --scale on a SIDE x SIDE textured colour
 * canvas (dataset_make_colour), as colour IDX files (N x SIDE x SIDE x 3,
 * written image by image), a PNG folder or an .npz (N x SIDE x SIDE x 3).  --limit N keeps the
 * first N images of every split, for examples that need a few thousand rather than 60,000.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "datasets.h"
#include "draw.h"
#include "idx.h"
#include "npz_write.h"
#include "opts.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum split { SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL } split;
static const int split_values[] = {SPLIT_TEST, SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL};

static const tool_info tool = {
    "ram-data",
    "write MNIST and its translated, cluttered and two-digit sets as IDX files, PNG "
    "folders or .npz files",
    "--dataset NAME --data DIR --out OUTDIR [options]",
    "Write a data set as IDX files OUTDIR/<name>-<split>-images-idx3-ubyte and "
    "-labels-idx1-ubyte (split: t10k, val or train-e<E>-s<S>), byte for byte the images the "
    "other tools use.  The two paths go to stdout, a summary to stderr.  The labels are the "
    "images' classes: for pairs100 the unordered pair's, 0 (0-1) to 44 (8-9), for sum100 the "
    "sum; their two digits' labels in reading order (left to right) also go to "
    "OUTDIR/<name>-<split>-labels2-idx2-ubyte (N x 2, a third path on stdout), y2_<split> in an "
    ".npz, and <split>/digits.csv in a PNG folder.\n\n"
    "With --format png, an image folder OUTDIR/<split>/<digit>/<index>.png instead (8-bit grey, "
    "lossless: the same pixels), of the splits train, val and test (or --split's), as ram-train, "
    "ram-eval and ram-glimpses read it; OUTDIR is printed to stdout.  With --format npz, one "
    "NumPy .npz file OUTDIR (x_train, y_train, x_val, y_val, x_test, y_test, or --split's).\n\n"
    "With --colour SIDE, SIDE x SIDE RGB images: each digit scaled by --scale at a random place "
    "on a textured colour background, the same for the same arguments (--limit N: N images a "
    "split); as IDX, OUTDIR/<split>-images-idx4-ubyte (N x SIDE x SIDE x 3) and "
    "OUTDIR/<split>-labels-idx1-ubyte, split t10k or train (--split val: val), so that "
    "--data OUTDIR reads the t10k and train pair."};

enum { FORMAT_IDX, FORMAT_PNG, FORMAT_NPZ };

typedef struct options {
    const char *data, *out;
    int dataset, split, epoch, val, format, split_given, colour, scale, limit;
    uint64_t seed;
} options;

static int parse(int argc, char **argv, options *o) {
    *o = (options){.split = SPLIT_TEST, .epoch = 1, .val = 10000, .seed = 1, .scale = 4};
    tool_opt t[] = {
        {"--dataset", OPT_CHOICE, &o->dataset, .choices = DATASET_CHOICES, .meta = "NAME",
         .flags = OPT_REQUIRED, .def = "", .help = "the set"},
        {"--data", OPT_STRING, &o->data, .meta = "DIR", .flags = OPT_REQUIRED,
         .help = "directory with the four MNIST IDX files"},
        {"--out", OPT_STRING, &o->out, .meta = "OUTDIR", .flags = OPT_REQUIRED,
         .help = "output directory (created if missing)"},
        {"--split", OPT_CHOICE, &o->split, .choices = "test|t10k|train|val", .values = split_values,
         .meta = "S",
         .help = "test: the fixed test set of ram-eval and ram-glimpses (t10k is the same); val: "
                 "ram-train's validation set; train: ram-train's training images of one epoch"},
        {"--epoch", OPT_INT, &o->epoch, 1, 1e9, .meta = "E",
         .help = "train: the epoch as ram-train prints it, from 1"},
        {"--seed", OPT_LONG, &o->seed, 0, 18446744073709551615.0, .meta = "S",
         .help = "train: ram-train's --seed"},
        {"--val", OPT_INT, &o->val, 1, 2147483647.0, .meta = "N",
         .help = "train, val: ram-train's --val"},
        {"--format", OPT_CHOICE, &o->format, .choices = "idx|png|npz", .meta = "F",
         .help = "idx: two IDX files; png: an image folder OUTDIR/SPLIT/DIGIT/INDEX.png of "
                 "train, val and test (only --split's when given), for ram-train --data; npz: "
                 "one .npz file OUTDIR of those splits (x_<split> uint8, y_<split> int64); "
                 "OUTDIR must not exist, and appears only when complete"},
        {"--colour", OPT_INT, &o->colour, 28, 8192, .meta = "SIDE", .def = "off",
         .help = "png, npz: SIDE x SIDE RGB images, each digit scaled by --scale at a random "
                 "place on a textured colour background (--dataset mnist)"},
        {"--scale", OPT_INT, &o->scale, 1, 64, .meta = "K",
         .help = "--colour: the digit's size, 28 K x 28 K pixels (bilinear)"},
        {"--limit", OPT_INT, &o->limit, 1, 2147483647.0, .meta = "N", .def = "all",
         .help = "the first N images of every split only"},
    };
    const size_t n = sizeof t / sizeof *t;
    int r = opts_parse(&tool, t, n, argc, argv);
    if (r) return r;
    o->split_given = opts_find(t, n, "--split")->seen != 0;
    if (o->colour && o->dataset != DATASET_MNIST)
        return opts_usage_error(&tool,
                                "--colour places MNIST's digits itself: use --dataset mnist");
    if (o->colour && o->colour < 28 * o->scale)
        return opts_usage_error(&tool, "--colour SIDE must be at least 28 x --scale (the digit)");
    if (!o->colour && opts_find(t, n, "--scale")->seen)
        return opts_usage_error(&tool, "--scale applies to --colour only");
    /* Silently ignoring these would export a different set than the user
     * thinks (a PNG folder without --split has every split). */
    if (o->format != FORMAT_IDX && !o->split_given) return TOOL_OK;
    if (o->split != SPLIT_TRAIN &&
        (opts_find(t, n, "--epoch")->seen || opts_find(t, n, "--seed")->seen))
        return opts_usage_error(&tool, "--epoch and --seed apply to --split train only");
    if (o->split == SPLIT_TEST && opts_find(t, n, "--val")->seen)
        return opts_usage_error(&tool, "--val applies to --split train and val only");
    return TOOL_OK;
}

/* Create `dir` if it does not exist (one level, like mkdir without -p). */
static int ensure_dir(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ram-data: cannot create directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ram-data: %s is not a directory\n", dir);
        return -1;
    }
    return 0;
}

/* Which digits, from which pool of clutter, with which seed: the same three
 * choices ram-train, ram-eval and ram-glimpses make. */
typedef struct selection {
    int first, count, pool;
    uint64_t seed;
    char name[96]; /* t10k, val or train-e<E>-s<S> */
} selection;

static int select_images(const options *o, int split, const int *labels, int n_all,
                         selection *sel) {
    *sel = (selection){0, n_all, n_all, DATASET_TEST_SEED, "t10k"};
    if (split != SPLIT_TEST && o->val >= n_all) {
        fprintf(stderr, "ram-data: --val %d leaves no training images (of %d)\n", o->val, n_all);
        return -1;
    }
    if (split == SPLIT_TRAIN) {
        sel->count = sel->pool = n_all - o->val;
        /* ram-train: seed * 1000003u + epoch, its epoch counter starting at 0. */
        sel->seed = o->seed * 1000003u + (uint64_t)(o->epoch - 1);
        snprintf(sel->name, sizeof sel->name, "train-e%d-s%llu", o->epoch,
                 (unsigned long long)o->seed);
    } else if (split == SPLIT_VAL) {
        sel->first = n_all - o->val;
        sel->count = o->val;
        sel->seed = DATASET_VAL_SEED;
        snprintf(sel->name, sizeof sel->name, "val");
    }
    if (o->limit && o->limit < sel->count) sel->count = o->limit;
    /* A two-digit set's partners come from the pool. */
    return dataset_check_labels("ram-data", o->dataset, labels, sel->pool,
                                split == SPLIT_TEST ? "the t10k digits" : "the training digits");
}

/* Image i of a selection's class, and its two digits' labels. */
static int image_label(const options *o, const selection *sel, const int *labels, int i) {
    return dataset_label(o->dataset, labels, sel->pool, sel->first + i, sel->seed);
}
static void image_digits(const options *o, const selection *sel, const int *labels, int i,
                         int digit[2]) {
    dataset_digit_labels(o->dataset, labels, sel->pool, sel->first + i, sel->seed, digit);
}

/* A two-digit selection's digit labels as an IDX file of N x 2 bytes
 * (magic 0x00000802: unsigned bytes, two dimensions), written to path.tmp
 * and renamed. */
static int write_labels2(const options *o, const selection *sel, const int *labels,
                         const char *path) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "ram-data: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    const uint32_t n = (uint32_t)sel->count;
    const unsigned char hdr[12] = {0,       0, 8, 2, n >> 24, n >> 16 & 255, n >> 8 & 255,
                                   n & 255, 0, 0, 0, 2};
    int ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr;
    for (int i = 0; i < sel->count && ok; i++) {
        int d[2];
        image_digits(o, sel, labels, i, d);
        const unsigned char b[2] = {(unsigned char)d[0], (unsigned char)d[1]};
        ok = fwrite(b, 1, 2, f) == 2;
    }
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return 0;
    fprintf(stderr, "ram-data: cannot write %s: %s\n", path, strerror(errno));
    remove(tmp);
    return -1;
}

/* The selected images and their labels as two IDX files in --out, whose
 * paths go to stdout. */
static int write_set(const options *o, const selection *sel, const float *images, const int *labels,
                     int side) {
    char err[1024], img_path[4096], lab_path[4096], lab2_path[4096];
    if (ensure_dir(o->out) != 0) return -1;
    const char *name = dataset_name(o->dataset);
    int k1 =
        snprintf(img_path, sizeof img_path, "%s/%s-%s-images-idx3-ubyte", o->out, name, sel->name);
    int k2 =
        snprintf(lab_path, sizeof lab_path, "%s/%s-%s-labels-idx1-ubyte", o->out, name, sel->name);
    int k3 = snprintf(lab2_path, sizeof lab2_path, "%s/%s-%s-labels2-idx2-ubyte", o->out, name,
                      sel->name);
    if (k1 < 0 || (size_t)k1 >= sizeof img_path || k2 < 0 || (size_t)k2 >= sizeof lab_path ||
        k3 < 0 || (size_t)k3 >= sizeof lab2_path) {
        fprintf(stderr, "ram-data: output path too long\n");
        return -1;
    }
    int *classes = malloc(sizeof *classes * (size_t)sel->count);
    if (!classes) {
        fprintf(stderr, "ram-data: out of memory\n");
        return -1;
    }
    for (int i = 0; i < sel->count; i++)
        classes[i] = image_label(o, sel, labels, i);
    int rc = idx_save_images(img_path, images, sel->count, side, side, err, sizeof err) ||
             idx_save_labels(lab_path, classes, sel->count, err, sizeof err);
    free(classes);
    if (rc) {
        fprintf(stderr, "ram-data: %s\n", err);
        return -1;
    }
    const int two = dataset_objects(o->dataset) > 1;
    if (two && write_labels2(o, sel, labels, lab2_path)) return -1;
    printf("%s\n%s\n", img_path, lab_path);
    if (two) printf("%s\n", lab2_path);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ram-data: error writing output\n");
        return -1;
    }
    return 0;
}

/* The selected images of `split`, made as the other tools make them:
 * malloc'ed into *images, or NULL after saying why. */
static float *make_images(const options *o, int split, const float *digits, const int *labels,
                          int n_all, selection *sel) {
    if (select_images(o, split, labels, n_all, sel)) return NULL;
    const int side = dataset_side(o->dataset);
    const size_t pixels = (size_t)side * (size_t)side;
    float *images = malloc((size_t)sel->count * pixels * sizeof *images);
    if (!images) {
        fprintf(stderr, "ram-data: out of memory for %d images of %d x %d\n", sel->count, side,
                side);
        return NULL;
    }
    for (int i = 0; i < sel->count; i++)
        dataset_make(o->dataset, digits, labels, sel->pool, sel->first + i, sel->seed,
                     images + (size_t)i * pixels);
    return images;
}

static void summary(const options *o, const selection *sel, const char *mnist_split) {
    if (o->colour) {
        fprintf(stderr,
                "ram-data: colour %s: %d RGB images %dx%d, digits %d..%d of %s/%s scaled x%d, "
                "placed with seed %llu\n",
                sel->name, sel->count, o->colour, o->colour, sel->first,
                sel->first + sel->count - 1, o->data, mnist_split, o->scale,
                (unsigned long long)sel->seed);
        return;
    }
    const int side = dataset_side(o->dataset);
    fprintf(stderr, "ram-data: %s %s: %d images %dx%d, digits %d..%d of %s/%s",
            dataset_name(o->dataset), sel->name, sel->count, side, side, sel->first,
            sel->first + sel->count - 1, o->data, mnist_split);
    if (o->dataset == DATASET_MNIST)
        fprintf(stderr, " as they are\n");
    else
        fprintf(stderr, " placed with seed %llu, %s from digits 0..%d\n",
                (unsigned long long)sel->seed,
                dataset_objects(o->dataset) > 1 ? "second digits" : "clutter", sel->pool - 1);
}

static int export(const options *o, const float *digits, const int *labels, int n_all) {
    selection sel;
    float *images = make_images(o, o->split, digits, labels, n_all, &sel);
    if (!images) return -1;
    int rc = write_set(o, &sel, images, labels, dataset_side(o->dataset));
    free(images);
    if (rc) return -1;
    summary(o, &sel, o->split == SPLIT_TEST ? "t10k" : "train");
    return 0;
}

/* MNIST split `mnist_split` of --data, 28 x 28 (checked): 0 or -1. */
static int load_digits(const options *o, const char *mnist_split, float **digits, int **labels,
                       int *n_all) {
    int h = 0, w = 0;
    if (dataset_load("ram-data", o->data, mnist_split, DATASET_MNIST, digits, labels, n_all, &h,
                     &w) != 0)
        return -1;
    if (h == 28 && w == 28) return 0;
    fprintf(stderr, "ram-data: %s/%s has %d x %d images, not MNIST's 28 x 28\n", o->data,
            mnist_split, h, w);
    free(*labels);
    free(*digits);
    return -1;
}

/* ---- --format png ------------------------------------------------------------- */

static const char *const split_dirs[] = {"test", "train", "val"}; /* by split */

/* Image i of a selection as bytes, H x W x C interleaved (C 1 or 3), made
 * as the other tools make it (or by dataset_make_colour); `work` holds the
 * floats of one image. */
static void image_bytes(const options *o, const selection *sel, const float *digits,
                        const int *labels, int i, float *work, unsigned char *bytes) {
    const int index = sel->first + i;
    if (!o->colour) {
        const int side = dataset_side(o->dataset);
        dataset_make(o->dataset, digits, labels, sel->pool, index, sel->seed, work);
        for (int k = 0; k < side * side; k++) { /* as idx_save_images rounds */
            const float v = work[k] > 0 ? (work[k] < 1 ? work[k] : 1) : 0;
            bytes[k] = (unsigned char)(v * 255.0f + 0.5f);
        }
        return;
    }
    const size_t plane = (size_t)o->colour * (size_t)o->colour;
    dataset_make_colour(digits + (size_t)index * 784, o->colour, o->scale, sel->seed, index, work);
    for (size_t p = 0; p < plane; p++)
        for (int c = 0; c < 3; c++) {
            const float v = work[(size_t)c * plane + p];
            bytes[p * 3 + (size_t)c] =
                (unsigned char)((v > 0 ? (v < 1 ? v : 1) : 0) * 255.0f + 0.5f);
        }
}

/* Side and channels of the images written. */
static int out_side(const options *o) {
    return o->colour ? o->colour : dataset_side(o->dataset);
}
static int out_channels(const options *o) {
    return o->colour ? 3 : 1;
}

/* One image's float and byte buffers: 0, or -1 after saying so. */
static int image_buffers(const options *o, float **work, unsigned char **bytes) {
    const size_t side = (size_t)out_side(o), px = side * side * (size_t)out_channels(o);
    *work = malloc(px * sizeof **work);
    *bytes = malloc(px);
    if (*work && *bytes) return 0;
    free(*work);
    free(*bytes);
    fprintf(stderr, "ram-data: out of memory for an image of %zu x %zu\n", side, side);
    return -1;
}

/* The class folder of `label`: the digit, or the name a two-digit set's
 * models give the class ("3-7", "12"), by which the tools match them. */
static void class_folder(const options *o, int label, char *buf, size_t len) {
    const char *name = dataset_class_name(o->dataset, label);
    if (name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%d", label);
}

/* Image i of a set as root/<class>/<i>.png, zero-padded to `digits`; its
 * path inside root into rel. */
static int write_png_image(const options *o, const char *root, const unsigned char *bytes,
                           int label, int i, int digits, char *rel, size_t rel_len) {
    char path[4096], cls[16];
    class_folder(o, label, cls, sizeof cls);
    if (snprintf(path, sizeof path, "%s/%s", root, cls) >= (int)sizeof path || ensure_dir(path))
        return -1;
    const int k = snprintf(rel, rel_len, "%s/%0*d.png", cls, digits, i);
    if (k < 0 || (size_t)k >= rel_len) return -1; /* digits <= 10: never */
    if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path) return -1;
#ifdef RAM_TOOLS_NO_IMAGES
    (void)o, (void)bytes;
    fprintf(stderr, "ram-data: %s: the tools were built without libpng\n", path);
    return -1;
#else
    return write_png_pixels("ram-data", path, out_side(o), out_side(o), out_channels(o), bytes,
                            "libram ram-data");
#endif
}

/* One split of the set as tmp/<split>/<label>/<index>.png, image by image. */
static int png_split(const options *o, const char *tmp, int split) {
    const char *mnist_split = split == SPLIT_TEST ? "t10k" : "train";
    float *digits = NULL, *work = NULL;
    unsigned char *bytes = NULL;
    int *labels = NULL, n_all = 0, rc = -1;
    selection sel;
    char root[4096];
    if (snprintf(root, sizeof root, "%s/%s", tmp, split_dirs[split]) >= (int)sizeof root) return -1;
    if (load_digits(o, mnist_split, &digits, &labels, &n_all)) return -1;
    if (!select_images(o, split, labels, n_all, &sel) && !image_buffers(o, &work, &bytes) &&
        !ensure_dir(root)) {
        int width = 1;
        for (int c = sel.count - 1; c >= 10; c /= 10)
            width++;
        FILE *csv = NULL; /* a two-digit set's digits.csv */
        char rel[64];
        rc = 0;
        if (dataset_objects(o->dataset) > 1) {
            char path[4200];
            snprintf(path, sizeof path, "%s/digits.csv", root);
            if (!(csv = fopen(path, "w"))) {
                fprintf(stderr, "ram-data: cannot create %s: %s\n", path, strerror(errno));
                rc = -1;
            } else if (fputs("file,first,second\n", csv) < 0) {
                rc = -1;
            }
        }
        for (int i = 0; i < sel.count && !rc; i++) {
            image_bytes(o, &sel, digits, labels, i, work, bytes);
            rc = write_png_image(o, root, bytes, image_label(o, &sel, labels, i), i, width, rel,
                                 sizeof rel);
            if (!rc && csv) {
                int d[2];
                image_digits(o, &sel, labels, i, d);
                if (fprintf(csv, "%s,%d,%d\n", rel, d[0], d[1]) < 0) rc = -1;
            }
        }
        if (csv && fclose(csv) != 0) rc = -1;
        if (rc && csv) fprintf(stderr, "ram-data: cannot write %s/digits.csv\n", root);
        if (!rc) summary(o, &sel, mnist_split);
    }
    free(work);
    free(bytes);
    free(labels);
    free(digits);
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The folder, written beside --out and renamed to it when complete. */
static int export_png(const options *o) {
    char tmp[4096];
    struct stat st;
    if (stat(o->out, &st) == 0) {
        fprintf(stderr, "ram-data: %s exists: --format png writes a new folder\n", o->out);
        return -1;
    }
    if (strlen(o->out) > 2048) {
        fprintf(stderr, "ram-data: --out %s: path too long\n", o->out);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", o->out);
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "ram-data: cannot create %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int s = SPLIT_TEST; s <= SPLIT_VAL && !rc; s++)
        if (!o->split_given || s == o->split) rc = png_split(o, tmp, s);
    if (!rc && rename(tmp, o->out) != 0) {
        fprintf(stderr, "ram-data: cannot rename %s to %s: %s\n", tmp, o->out, strerror(errno));
        rc = -1;
    }
    if (rc) {
        nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return -1;
    }
    printf("%s\n", o->out);
    return fflush(stdout) != 0 || ferror(stdout) ? -1 : 0;
}

/* ---- --format npz ------------------------------------------------------------- */

/* One split as members x_<split> and y_<split> of the writer's file. */
static int npz_split(const options *o, npz_writer *w, int split) {
    const char *mnist_split = split == SPLIT_TEST ? "t10k" : "train";
    float *digits = NULL, *work = NULL;
    unsigned char *bytes = NULL;
    int *labels = NULL, n_all = 0, rc = -1;
    selection sel;
    char err[1024], name[16];
    if (load_digits(o, mnist_split, &digits, &labels, &n_all)) return -1;
    if (!select_images(o, split, labels, n_all, &sel) && !image_buffers(o, &work, &bytes)) {
        const long side = out_side(o), c = out_channels(o);
        const long xshape[4] = {sel.count, side, side, c}, yshape[1] = {sel.count};
        const size_t px = (size_t)side * (size_t)side * (size_t)c;
        snprintf(name, sizeof name, "x_%s", split_dirs[split]);
        rc = npz_write_member(w, name, "|u1", c > 1 ? 4 : 3, xshape, err, sizeof err);
        for (int i = 0; i < sel.count && !rc; i++) {
            image_bytes(o, &sel, digits, labels, i, work, bytes);
            rc = npz_write_data(w, bytes, px, err, sizeof err);
        }
        snprintf(name, sizeof name, "y_%s", split_dirs[split]);
        if (!rc) rc = npz_write_member(w, name, "<i8", 1, yshape, err, sizeof err);
        for (int i = 0; i < sel.count && !rc; i++) { /* 0..44, little-endian */
            unsigned char b[8] = {(unsigned char)image_label(o, &sel, labels, i)};
            rc = npz_write_data(w, b, 8, err, sizeof err);
        }
        const long y2shape[2] = {sel.count, 2};
        snprintf(name, sizeof name, "y2_%s", split_dirs[split]);
        if (!rc && dataset_objects(o->dataset) > 1)
            rc = npz_write_member(w, name, "<i8", 2, y2shape, err, sizeof err);
        for (int i = 0; i < sel.count && !rc && dataset_objects(o->dataset) > 1; i++) {
            int d[2];
            image_digits(o, &sel, labels, i, d);
            unsigned char b[16] = {(unsigned char)d[0]};
            b[8] = (unsigned char)d[1];
            rc = npz_write_data(w, b, 16, err, sizeof err);
        }
        if (rc)
            fprintf(stderr, "ram-data: %s\n", err);
        else
            summary(o, &sel, mnist_split);
    }
    free(work);
    free(bytes);
    free(labels);
    free(digits);
    return rc;
}

/* The .npz file, written beside --out and renamed to it when complete. */
static int export_npz(const options *o) {
    struct stat st;
    char err[1024];
    const char *dot = strrchr(o->out, '.');
    if (!dot || strcmp(dot, ".npz")) {
        fprintf(stderr, "ram-data: --out %s: name it *.npz (the tools tell an .npz by its name)\n",
                o->out);
        return -1;
    }
    if (stat(o->out, &st) == 0) {
        fprintf(stderr, "ram-data: %s exists: --format npz writes a new file\n", o->out);
        return -1;
    }
    npz_writer w;
    int rc = npz_write_begin(&w, o->out, err, sizeof err);
    if (rc) fprintf(stderr, "ram-data: %s\n", err);
    /* train, val, test: the order of Keras' files and of np.load's keys */
    static const int order[] = {SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST};
    for (int k = 0; k < 3 && !rc; k++)
        if (!o->split_given || order[k] == o->split) rc = npz_split(o, &w, order[k]);
    if (!rc && (rc = npz_write_end(&w, err, sizeof err))) fprintf(stderr, "ram-data: %s\n", err);
    npz_write_abort(&w);
    if (rc) return -1;
    printf("%s\n", o->out);
    return fflush(stdout) != 0 || ferror(stdout) ? -1 : 0;
}

/* ---- --colour with --format idx ------------------------------------------------ */

typedef struct colour_items {
    const options *o;
    const selection *sel;
    const float *digits;
    const int *labels;
    float *work;
} colour_items;

static int colour_item(void *ctx, int i, unsigned char *bytes) {
    const colour_items *c = ctx;
    image_bytes(c->o, c->sel, c->digits, c->labels, i, c->work, bytes);
    return 0;
}

/* --split's colour images as OUT/<split>-images-idx4-ubyte and its labels
 * as OUT/<split>-labels-idx1-ubyte (MNIST's names, t10k and train, which
 * --data OUT reads as a pair), made and written one image at a time. */
static int export_colour_idx(const options *o) {
    const char *mnist_split = o->split == SPLIT_TEST ? "t10k" : "train";
    const char *name = o->split == SPLIT_TEST ? "t10k" : o->split == SPLIT_VAL ? "val" : "train";
    float *digits = NULL, *work = NULL;
    unsigned char *bytes = NULL;
    int *labels = NULL, *classes = NULL, n_all = 0, rc = -1;
    selection sel;
    char err[1024], img_path[4096], lab_path[4096];
    if (ensure_dir(o->out) != 0) return -1;
    int k1 = snprintf(img_path, sizeof img_path, "%s/%s-images-idx4-ubyte", o->out, name);
    int k2 = snprintf(lab_path, sizeof lab_path, "%s/%s-labels-idx1-ubyte", o->out, name);
    if (k1 < 0 || (size_t)k1 >= sizeof img_path || k2 < 0 || (size_t)k2 >= sizeof lab_path) {
        fprintf(stderr, "ram-data: output path too long\n");
        return -1;
    }
    if (load_digits(o, mnist_split, &digits, &labels, &n_all)) return -1;
    if (!select_images(o, o->split, labels, n_all, &sel) && !image_buffers(o, &work, &bytes) &&
        (classes = malloc(sizeof *classes * (size_t)sel.count))) {
        for (int i = 0; i < sel.count; i++)
            classes[i] = image_label(o, &sel, labels, i);
        colour_items c = {o, &sel, digits, labels, work};
        const uint32_t dims[4] = {(uint32_t)sel.count, (uint32_t)o->colour, (uint32_t)o->colour, 3};
        rc = idx_save_items(img_path, dims, 4, colour_item, &c, err, sizeof err) ||
             idx_save_labels(lab_path, classes, sel.count, err, sizeof err);
        if (rc) fprintf(stderr, "ram-data: %s\n", err);
    } else if (!classes && work) {
        fprintf(stderr, "ram-data: out of memory\n");
    }
    free(classes);
    free(work);
    free(bytes);
    free(labels);
    free(digits);
    if (rc) return -1;
    summary(o, &sel, mnist_split);
    printf("%s\n%s\n", img_path, lab_path);
    return fflush(stdout) != 0 || ferror(stdout) ? -1 : 0;
}

int main(int argc, char **argv) {
    options o;
    int parsed = parse(argc, argv, &o);
    if (parsed) return opts_exit(parsed);
    if (o.format == FORMAT_PNG) return export_png(&o) ? TOOL_FAILED : TOOL_OK;
    if (o.format == FORMAT_NPZ) return export_npz(&o) ? TOOL_FAILED : TOOL_OK;
    if (o.colour) return export_colour_idx(&o) ? TOOL_FAILED : TOOL_OK;
    float *digits = NULL;
    int *labels = NULL, n_all = 0;
    if (load_digits(&o, o.split == SPLIT_TEST ? "t10k" : "train", &digits, &labels, &n_all))
        return TOOL_FAILED;
    int rc = export(&o, digits, labels, n_all) ? TOOL_FAILED : TOOL_OK;
    free(labels);
    free(digits);
    return rc;
}
