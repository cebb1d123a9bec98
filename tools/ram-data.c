/*
 * ram-data: export the translated and cluttered MNIST sets of
 * examples/datasets.h as IDX files, byte for byte what the other tools use.
 *
 *   ram-data --dataset NAME --data DIR --out OUTDIR [--split test|train|val]
 *            [--epoch E] [--seed S] [--val N]
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
 */
#include "datasets.h"
#include "idx.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum split { SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL } split;

typedef struct options {
    const char *data, *out;
    dataset_kind dataset;
    int have_dataset;
    split split;
    int epoch, val;
    uint64_t seed;
    int epoch_given, seed_given, val_given;
} options;

static void usage(FILE *f) {
    fprintf(f, "usage: ram-data --dataset NAME --data DIR --out OUTDIR [options]\n"
               "\n"
               "Write a data set as IDX files OUTDIR/<name>-<split>-images-idx3-ubyte and\n"
               "-labels-idx1-ubyte (split: t10k, val or train-e<E>-s<S>).  The two paths go\n"
               "to stdout, a summary to stderr.\n"
               "\n"
               "  --dataset NAME    mnist, translated60, cluttered60 or cluttered100\n"
               "  --data DIR        directory with the four MNIST IDX files\n"
               "  --out OUTDIR      output directory (created if missing)\n"
               "  --split S         test (default): the fixed test set of ram-eval;\n"
               "                    val: ram-train's validation set;\n"
               "                    train: ram-train's training images of one epoch\n"
               "  --epoch E         train: epoch number as ram-train prints it, from 1 (1)\n"
               "  --seed S          train: ram-train's --seed (1)\n"
               "  --val N           train, val: ram-train's --val (10000)\n"
               "  -h, --help        show this help\n"
               "  --version         show the version\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end;
    errno = 0;
    /* strtoull accepts "-1" as a huge number: reject signs up front. */
    unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    if (s[0] < '0' || s[0] > '9' || errno != 0 || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "ram-data: %s needs an integer in %llu..%llu, got '%s'\n", opt,
                (unsigned long long)lo, (unsigned long long)hi, s);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    *o = (options){.split = SPLIT_TEST, .epoch = 1, .val = 10000, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("ram-data (libram) %s\n", ram_version_string());
            exit(0);
        } else if (i + 1 >= argc) {
            fprintf(stderr, "ram-data: unknown option or missing value: %s\n", a);
            return -1;
        } else if (!strcmp(a, "--dataset")) {
            const char *name = argv[++i];
            if (dataset_parse(name, &o->dataset) != 0) {
                fprintf(stderr,
                        "ram-data: unknown --dataset '%s' (mnist, translated60, "
                        "cluttered60 or cluttered100)\n",
                        name);
                return -1;
            }
            o->have_dataset = 1;
        } else if (!strcmp(a, "--data")) {
            o->data = argv[++i];
        } else if (!strcmp(a, "--out")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--split")) {
            const char *s = argv[++i];
            if (!strcmp(s, "test") || !strcmp(s, "t10k"))
                o->split = SPLIT_TEST;
            else if (!strcmp(s, "train"))
                o->split = SPLIT_TRAIN;
            else if (!strcmp(s, "val"))
                o->split = SPLIT_VAL;
            else {
                fprintf(stderr, "ram-data: --split must be test, train or val\n");
                return -1;
            }
        } else if (!strcmp(a, "--epoch")) {
            if (parse_u64(a, argv[++i], 1, 1000000000, &v)) return -1;
            o->epoch = (int)v;
            o->epoch_given = 1;
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(a, argv[++i], 0, UINT64_MAX, &v)) return -1;
            o->seed = v;
            o->seed_given = 1;
        } else if (!strcmp(a, "--val")) {
            if (parse_u64(a, argv[++i], 1, INT_MAX, &v)) return -1;
            o->val = (int)v;
            o->val_given = 1;
        } else {
            fprintf(stderr, "ram-data: unknown option: %s\n", a);
            return -1;
        }
    }
    if (!o->have_dataset || !o->data || !o->out) {
        fprintf(stderr, "ram-data: --dataset, --data and --out are required (see --help)\n");
        return -1;
    }
    /* Silently ignoring these would export a different set than the user
     * thinks. */
    if (o->split != SPLIT_TRAIN && (o->epoch_given || o->seed_given)) {
        fprintf(stderr, "ram-data: --epoch and --seed apply to --split train only\n");
        return -1;
    }
    if (o->split == SPLIT_TEST && o->val_given) {
        fprintf(stderr, "ram-data: --val applies to --split train and val only\n");
        return -1;
    }
    return 0;
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

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o) != 0) return 2;

    int rc = 1, n_all = 0, h = 0, w = 0;
    float *digits = NULL, *images = NULL;
    int *labels = NULL;
    char err[1024];
    const char *mnist_split = o.split == SPLIT_TEST ? "t10k" : "train";
    /* The digits as they are (mnist), checked for every set just below. */
    if (dataset_load("ram-data", o.data, mnist_split, DATASET_MNIST, &digits, &labels, &n_all, &h,
                     &w) != 0)
        return 1;
    if (h != 28 || w != 28) {
        fprintf(stderr, "ram-data: %s/%s has %d x %d images, not MNIST's 28 x 28\n", o.data,
                mnist_split, h, w);
        goto done;
    }

    /* Which digits, from which pool of clutter, with which seed: the same
     * three choices ram-train, ram-eval and ram-glimpses make. */
    int first = 0, count = n_all, pool = n_all;
    uint64_t seed = DATASET_TEST_SEED;
    char split_name[96];
    snprintf(split_name, sizeof split_name, "t10k");
    if (o.split != SPLIT_TEST && o.val >= n_all) {
        fprintf(stderr, "ram-data: --val %d leaves no training images (of %d)\n", o.val, n_all);
        goto done;
    }
    if (o.split == SPLIT_TRAIN) {
        count = pool = n_all - o.val;
        /* ram-train: seed * 1000003u + epoch, its epoch counter starting at 0. */
        seed = o.seed * 1000003u + (uint64_t)(o.epoch - 1);
        snprintf(split_name, sizeof split_name, "train-e%d-s%llu", o.epoch,
                 (unsigned long long)o.seed);
    } else if (o.split == SPLIT_VAL) {
        first = n_all - o.val;
        count = o.val;
        seed = DATASET_VAL_SEED;
        snprintf(split_name, sizeof split_name, "val");
    }

    const int side = dataset_side(o.dataset);
    const size_t pixels = (size_t)side * (size_t)side;
    images = malloc((size_t)count * pixels * sizeof *images);
    if (!images) {
        fprintf(stderr, "ram-data: out of memory for %d images of %d x %d\n", count, side, side);
        goto done;
    }
    for (int i = 0; i < count; i++)
        dataset_make(o.dataset, digits, pool, first + i, seed, images + (size_t)i * pixels);

    if (ensure_dir(o.out) != 0) goto done;
    char img_path[4096], lab_path[4096];
    const char *name = dataset_name(o.dataset);
    int k1 =
        snprintf(img_path, sizeof img_path, "%s/%s-%s-images-idx3-ubyte", o.out, name, split_name);
    int k2 =
        snprintf(lab_path, sizeof lab_path, "%s/%s-%s-labels-idx1-ubyte", o.out, name, split_name);
    if (k1 < 0 || (size_t)k1 >= sizeof img_path || k2 < 0 || (size_t)k2 >= sizeof lab_path) {
        fprintf(stderr, "ram-data: output path too long\n");
        goto done;
    }
    if (idx_save_images(img_path, images, count, side, side, err, sizeof err) != 0 ||
        idx_save_labels(lab_path, labels + first, count, err, sizeof err) != 0) {
        fprintf(stderr, "ram-data: %s\n", err);
        goto done;
    }

    fprintf(stderr, "ram-data: %s %s: %d images %dx%d, digits %d..%d of %s/%s", name, split_name,
            count, side, side, first, first + count - 1, o.data, mnist_split);
    if (o.dataset == DATASET_MNIST)
        fprintf(stderr, " as they are\n");
    else
        fprintf(stderr, " placed with seed %llu, clutter from digits 0..%d\n",
                (unsigned long long)seed, pool - 1);
    printf("%s\n%s\n", img_path, lab_path);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ram-data: error writing output\n");
        goto done;
    }
    rc = 0;

done:
    free(images);
    free(labels);
    free(digits);
    return rc;
}
