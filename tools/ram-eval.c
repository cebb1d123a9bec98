/*
 * ram-eval: test error of a saved RAM model on MNIST (t10k by default), or on
 * the translated and cluttered test sets made from it (examples/datasets.h).
 *
 *   ram-eval --model FILE --data DIR [--dataset NAME]
 *            [--policy mean|sampled|random|center] [--sampled] [--seed N]
 *            [--batch N] [--threads N] [--split NAME] [--limit N] [--json]
 *            [--no-clutter]
 *
 * Shows how to share one read-only ram_model between threads, each with its
 * own ram_state (and its own ram_policy when locations are random).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "blas.h"
#include "datasets.h"

#include <ram/ram.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 256

static const char *const source_names[] = {"mean", "sampled", "random", "center"};

typedef struct options {
    const char *model, *data, *split;
    dataset_kind dataset;
    ram_loc_source source;
    uint64_t seed;
    int batch, threads, limit, json, no_clutter;
    ram_precision precision;
} options;

/* Everything a worker needs; workers share the model, images and results
 * arrays but write disjoint parts of `pred`.  For a translated or cluttered
 * set each worker places its own batches from the digits: dataset_make() is
 * pure, and this keeps memory at one batch per thread instead of the whole
 * set (400 MB for cluttered100). */
typedef struct job {
    const ram_model *model;
    const float *images; /* the images, or the 28 x 28 digits to place */
    int *pred;
    uint64_t *on_digit; /* placed sets: per image, bit g set if glimpse g hit the digit */
    int n, batch, pixels, side, glimpses, patch;
    dataset_kind dataset;
    int no_clutter;     /* place the digits as the set does, on an empty canvas */
    int n_digits;       /* digits clutter is drawn from (the whole split) */
    uint64_t data_seed; /* DATASET_TEST_SEED or DATASET_VAL_SEED */
    ram_loc_source source;
    ram_precision precision;
    uint64_t seed;
    int index, stride; /* this worker takes batches index, index+stride, ... */
    ram_status status;
    char error[512];
} job;

static void usage(FILE *f) {
    fprintf(f, "usage: ram-eval --model FILE --data DIR [options]\n"
               "\n"
               "Classify the MNIST test set (DIR/t10k-*-ubyte) with a saved model and print\n"
               "the test error, the confusion matrix and the time taken.  On a translated or\n"
               "cluttered set also where the glimpses went: the share of images with a\n"
               "glimpse on the digit (its finest window wholly inside the digit's 28x28 box),\n"
               "the glimpses on the digit per image, and the share of images whose glimpse\n"
               "1, 2, ... was on the digit (JSON: found, found_wrong, glimpses_on_digit,\n"
               "on_digit_by_glimpse).\n"
               "\n"
               "  --model FILE      model or checkpoint saved by libram\n"
               "  --data DIR        directory with the MNIST IDX files\n"
               "  --dataset NAME    mnist (default), translated60, cluttered60 or\n"
               "                    cluttered100: the fixed test set made from the t10k\n"
               "                    digits (see docs/datasets.md); must match the model\n"
               "  --no-clutter      cluttered sets: each digit where the set puts it, but\n"
               "                    without the clutter (how much of the error is the\n"
               "                    clutter's)\n"
               "  --policy P        where glimpses go: mean (default: the policy mean,\n"
               "                    deterministic), sampled (from the Gaussian policy),\n"
               "                    random (uniform, ablation), center (ablation)\n"
               "  --sampled         same as --policy sampled\n"
               "  --seed N          seed for sampled/random locations (1)\n"
               "  --batch N         images per ram_model_classify call (100)\n"
               "  --threads N       worker threads, each with its own ram_state (1)\n"
               "  --precision P     weights: float (default) or half (every parameter\n"
               "                    rounded to IEEE half precision: ram_state_set_precision)\n"
               "  --split NAME      data split to evaluate: t10k (default) or train.  With\n"
               "                    --dataset mnist, any DIR/NAME-*-ubyte pair (e.g. one\n"
               "                    exported by ram-data); with another set, train places\n"
               "                    all 60000 digits as ram-train places its validation\n"
               "                    images (whose set is the last --val of them)\n"
               "  --limit N         evaluate only the first N images\n"
               "  --json            print one JSON object and nothing else\n"
               "  -h, --help        show this help\n"
               "  --version         show the version\n");
}

static double now_seconds(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Strict integer parsing: the whole string, in [lo, hi]. */
static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "ram-eval: %s needs an integer in %ld..%ld, got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    int sampled = 0, policy_given = 0;
    *o = (options){.split = "t10k", .source = RAM_LOCS_MEAN, .seed = 1, .batch = 100, .threads = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("ram-eval (libram) %s\n", ram_version_string());
            exit(0);
        } else if (!strcmp(a, "--sampled")) {
            sampled = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--no-clutter")) {
            o->no_clutter = 1;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "ram-eval: unknown option or missing value: %s\n", a);
            return -1;
        } else if (!strcmp(a, "--model")) {
            o->model = argv[++i];
        } else if (!strcmp(a, "--data")) {
            o->data = argv[++i];
        } else if (!strcmp(a, "--split")) {
            o->split = argv[++i];
        } else if (!strcmp(a, "--dataset")) {
            const char *name = argv[++i];
            if (dataset_parse(name, &o->dataset) != 0) {
                fprintf(stderr,
                        "ram-eval: unknown --dataset '%s' (mnist, translated60, "
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
                fprintf(stderr, "ram-eval: --policy must be mean, sampled, random or center\n");
                return -1;
            }
            o->source = (ram_loc_source)k;
            policy_given = 1;
        } else if (!strcmp(a, "--precision")) {
            const char *p = argv[++i];
            if (p && !strcmp(p, "float"))
                o->precision = RAM_PRECISION_FLOAT;
            else if (p && !strcmp(p, "half"))
                o->precision = RAM_PRECISION_HALF;
            else {
                fprintf(stderr, "ram-eval: --precision must be float or half\n");
                return -1;
            }
        } else if (!strcmp(a, "--seed")) {
            if (parse_long(a, argv[++i], 0, LONG_MAX, &v)) return -1;
            o->seed = (uint64_t)v;
        } else if (!strcmp(a, "--batch")) {
            if (parse_long(a, argv[++i], 1, 100000, &v)) return -1;
            o->batch = (int)v;
        } else if (!strcmp(a, "--threads")) {
            if (parse_long(a, argv[++i], 1, MAX_THREADS, &v)) return -1;
            o->threads = (int)v;
        } else if (!strcmp(a, "--limit")) {
            if (parse_long(a, argv[++i], 1, INT_MAX, &v)) return -1;
            o->limit = (int)v;
        } else {
            fprintf(stderr, "ram-eval: unknown option: %s\n", a);
            return -1;
        }
    }
    if (sampled) {
        if (policy_given && o->source != RAM_LOCS_SAMPLED) {
            fprintf(stderr, "ram-eval: --sampled contradicts --policy %s\n",
                    source_names[o->source]);
            return -1;
        }
        o->source = RAM_LOCS_SAMPLED;
    }
    if (!o->model || !o->data) {
        fprintf(stderr, "ram-eval: --model and --data are required (see --help)\n");
        return -1;
    }
    if (o->no_clutter && dataset_pieces(o->dataset) == 0) {
        fprintf(stderr, "ram-eval: --no-clutter needs --dataset cluttered60 or cluttered100\n");
        return -1;
    }
    /* The placement seed belongs to the split: only these two are defined. */
    if (o->dataset != DATASET_MNIST && strcmp(o->split, "t10k") != 0 &&
        strcmp(o->split, "train") != 0) {
        fprintf(stderr, "ram-eval: --dataset %s needs --split t10k or train\n",
                dataset_name(o->dataset));
        return -1;
    }
    return 0;
}

static ram_status job_fail(job *j, ram_status s, const char *what) {
    /* ram_last_error() is per thread: copy it before the thread ends. */
    j->status = s;
    snprintf(j->error, sizeof j->error, "%s: %s (%s)", what, ram_last_error(),
             ram_status_string(s));
    return s;
}

/*
 * Which of image `index`'s glimpses (locs: glimpses x 2, the retina's [-1, 1]
 * frame) landed on its digit, as a mask with bit g for glimpse g: the
 * glimpse's finest window (patch x patch pixels, centred as lib/glimpse.c
 * centres it) lies wholly inside the 28 x 28 box the digit was placed in.
 * With a 12-pixel patch that is a centre within 8 pixels of the digit's
 * centre in x and in y.
 */
static uint64_t glimpses_on_digit(const job *j, int index, const float *locs) {
    int x0, y0;
    uint64_t hits = 0; /* glimpses <= 64 (ram_model_create's limit) */
    dataset_digit_origin(j->dataset, j->n_digits, index, j->data_seed, &x0, &y0);
    const double reach = 14.0 - 0.5 * j->patch; /* 28 / 2 - patch / 2 */
    for (int g = 0; g < j->glimpses; g++) {
        const double px = (locs[2 * g] + 1.0) * j->side * 0.5;
        const double py = (locs[2 * g + 1] + 1.0) * j->side * 0.5;
        if (fabs(px - (x0 + 14.0)) <= reach && fabs(py - (y0 + 14.0)) <= reach)
            hits |= (uint64_t)1 << g;
    }
    return hits;
}

static void *run_job(void *arg) {
    job *j = arg;
    ram_state *st = NULL;
    ram_policy *pol = NULL;
    float *placed = NULL, *locs = NULL;
    if (j->dataset != DATASET_MNIST) {
        placed = malloc((size_t)j->batch * (size_t)j->pixels * sizeof *placed);
        locs = malloc((size_t)j->batch * (size_t)j->glimpses * 2 * sizeof *locs);
        if (!placed || !locs) {
            free(placed);
            free(locs);
            j->status = RAM_ERR_OUT_OF_MEMORY;
            snprintf(j->error, sizeof j->error, "out of memory for a batch of %d images", j->batch);
            return NULL;
        }
    }
    ram_status s = ram_state_create(j->model, j->batch, &st);
    if (s == RAM_OK) s = ram_state_set_precision(st, j->precision);
    if (s != RAM_OK) {
        job_fail(j, s, "ram_state_create");
        free(placed);
        free(locs);
        return NULL;
    }
    if (j->source == RAM_LOCS_SAMPLED || j->source == RAM_LOCS_RANDOM) {
        ram_policy_params pp;
        ram_policy_params_init(&pp);
        pp.seed = j->seed;
        s = ram_policy_create(&pp, j->model, &pol);
        if (s != RAM_OK) {
            job_fail(j, s, "ram_policy_create");
            ram_state_free(st);
            free(placed);
            free(locs);
            return NULL;
        }
    }
    int nbatches = (j->n + j->batch - 1) / j->batch;
    for (int b = j->index; b < nbatches; b += j->stride) {
        int first = b * j->batch;
        int count = j->n - first < j->batch ? j->n - first : j->batch;
        const float *img = placed;
        if (placed) {
            for (int i = 0; i < count; i++)
                (j->no_clutter ? dataset_make_uncluttered : dataset_make)(
                    j->dataset, j->images, j->n_digits, first + i, j->data_seed,
                    placed + (size_t)i * (size_t)j->pixels);
        } else {
            img = j->images + (size_t)first * (size_t)j->pixels;
        }
        if (j->source == RAM_LOCS_MEAN) {
            s = ram_model_classify(j->model, st, img, count, j->pred + first, NULL, locs);
        } else {
            /* Reseed per batch, not per thread, so the result depends on the
             * seed and batch size but not on how many threads ran. */
            if (pol) ram_policy_seed(pol, j->seed + (uint64_t)b * 0x9E3779B97F4A7C15ull);
            s = ram_model_classify_ex(j->model, st, img, count, j->source, pol, j->pred + first,
                                      NULL, locs);
        }
        if (s != RAM_OK) {
            job_fail(j, s,
                     j->source == RAM_LOCS_MEAN ? "ram_model_classify" : "ram_model_classify_ex");
            break;
        }
        for (int i = 0; locs && i < count; i++)
            j->on_digit[first + i] =
                glimpses_on_digit(j, first + i, locs + (size_t)i * (size_t)j->glimpses * 2);
    }
    ram_policy_free(pol);
    ram_state_free(st);
    free(placed);
    free(locs);
    return NULL;
}

/* Print `s` as a JSON string literal. */
static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o) != 0) return 1;
    /* One BLAS thread: threads split the batches, and a multi-threaded BLAS
     * on top of them only fights for the cores (20x slower on a busy
     * machine, measured).  Also makes sure OpenBLAS's kernels fit the CPU. */
    tool_blas_init("ram-eval", argv);
    if (ram_version_number() / 10000 != RAM_VERSION_MAJOR) {
        fprintf(stderr, "ram-eval: built for libram %s but loaded libram %s\n", RAM_VERSION_STRING,
                ram_version_string());
        return 1;
    }

    int rc = 1;
    ram_model *model = NULL;
    float *images = NULL;
    int *labels = NULL, *pred = NULL;
    uint64_t *on_digit = NULL;
    long *confusion = NULL;
    job *jobs = NULL;
    pthread_t *tids = NULL;

    ram_status s = ram_model_load(o.model, &model);
    if (s != RAM_OK) {
        fprintf(stderr, "ram-eval: cannot load model %s: %s (%s)\n", o.model, ram_last_error(),
                ram_status_string(s));
        goto done;
    }
    ram_model_params mp;
    ram_model_params_init(&mp);
    s = ram_model_get_params(model, &mp);
    if (s != RAM_OK) {
        fprintf(stderr, "ram-eval: ram_model_get_params: %s (%s)\n", ram_last_error(),
                ram_status_string(s));
        goto done;
    }

    int n, h, w;
    if (dataset_load("ram-eval", o.data, o.split, o.dataset, &images, &labels, &n, &h, &w))
        goto done;
    if (dataset_check_model("ram-eval", o.model, &mp, o.dataset, o.data, o.split, h, w)) goto done;
    const int n_digits = n; /* clutter comes from the whole split, even with --limit */
    if (o.limit > 0 && o.limit < n) n = o.limit;
    for (int i = 0; i < n; i++) {
        if (labels[i] >= mp.classes) {
            fprintf(stderr, "ram-eval: label %d of image %d but the model has %d classes\n",
                    labels[i], i, mp.classes);
            goto done;
        }
    }

    int nbatches = (n + o.batch - 1) / o.batch;
    int nthreads = o.threads < nbatches ? o.threads : nbatches;
    pred = malloc((size_t)n * sizeof *pred);
    on_digit = calloc((size_t)n, sizeof *on_digit);
    confusion = calloc((size_t)mp.classes * (size_t)mp.classes, sizeof *confusion);
    jobs = calloc((size_t)nthreads, sizeof *jobs);
    tids = calloc((size_t)nthreads, sizeof *tids);
    if (!pred || !on_digit || !confusion || !jobs || !tids) {
        fprintf(stderr, "ram-eval: out of memory\n");
        goto done;
    }

    double t0 = now_seconds();
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        jobs[t] =
            (job){.model = model,
                  .images = images,
                  .pred = pred,
                  .on_digit = on_digit,
                  .n = n,
                  .batch = o.batch,
                  .pixels = h * w,
                  .side = w,
                  .glimpses = mp.glimpses,
                  .patch = mp.glimpse.patch,
                  .dataset = o.dataset,
                  .no_clutter = o.no_clutter,
                  .n_digits = n_digits,
                  .data_seed = strcmp(o.split, "train") == 0 ? DATASET_VAL_SEED : DATASET_TEST_SEED,
                  .source = o.source,
                  .precision = o.precision,
                  .seed = o.seed,
                  .index = t,
                  .stride = nthreads,
                  .status = RAM_OK};
        if (nthreads == 1) {
            run_job(&jobs[t]); /* no thread needed: keeps the simple case simple */
            continue;
        }
        int e = pthread_create(&tids[t], NULL, run_job, &jobs[t]);
        if (e != 0) {
            fprintf(stderr, "ram-eval: cannot start thread %d: %s\n", t, strerror(e));
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    double seconds = now_seconds() - t0;
    if (nthreads > 1 && started < nthreads) goto done;
    for (int t = 0; t < nthreads; t++) {
        if (jobs[t].status != RAM_OK) {
            fprintf(stderr, "ram-eval: %s\n", jobs[t].error);
            goto done;
        }
    }

    long errors = 0;
    for (int i = 0; i < n; i++) {
        errors += pred[i] != labels[i];
        if (pred[i] >= 0 && pred[i] < mp.classes)
            confusion[(size_t)labels[i] * (size_t)mp.classes + (size_t)pred[i]]++;
    }
    double error = (double)errors / n;
    /* Where the glimpses went, for the placed sets (the digit's box is known):
     * images with a glimpse on the digit, overall and among the wrong ones,
     * and glimpses on the digit per image. */
    const int placed_set = o.dataset != DATASET_MNIST;
    long found = 0, found_wrong = 0, on_total = 0, by_glimpse[64] = {0};
    for (int i = 0; placed_set && i < n; i++) {
        found += on_digit[i] != 0;
        found_wrong += on_digit[i] != 0 && pred[i] != labels[i];
        for (int g = 0; g < mp.glimpses; g++) {
            const int hit = (on_digit[i] >> g) & 1;
            on_total += hit;
            by_glimpse[g] += hit;
        }
    }

    if (o.json) {
        printf("{\"test_error\": %.6f, \"n\": %d, \"errors\": %ld, \"glimpses\": %d, "
               "\"policy\": \"%s\", \"precision\": \"%s\", \"dataset\": \"%s\", \"model\": ",
               error, n, errors, mp.glimpses, source_names[o.source],
               o.precision == RAM_PRECISION_HALF ? "half" : "float", dataset_name(o.dataset));
        json_string(o.model);
        if (o.no_clutter) printf(", \"no_clutter\": true");
        if (placed_set) {
            printf(", \"found\": %.4f, \"found_wrong\": ", (double)found / n);
            if (errors) /* a share of no images is not a number */
                printf("%.4f", (double)found_wrong / errors);
            else
                printf("null");
            printf(", \"glimpses_on_digit\": %.3f, \"on_digit_by_glimpse\": [",
                   (double)on_total / n);
            for (int g = 0; g < mp.glimpses; g++)
                printf("%s%.4f", g ? ", " : "", (double)by_glimpse[g] / n);
            printf("]");
        }
        printf(", \"seconds\": %.3f}\n", seconds);
    } else {
        printf("model:      %s (%d glimpses, %dx%d retina x%d scale%s, %s core)\n", o.model,
               mp.glimpses, mp.glimpse.patch, mp.glimpse.patch, mp.glimpse.depth,
               mp.glimpse.depth == 1 ? "" : "s", mp.core == RAM_CORE_LSTM ? "LSTM" : "RNN");
        printf("data:       %s%s, %s/%s, %d images %dx%d\n", dataset_name(o.dataset),
               o.no_clutter ? " without its clutter" : "", o.data, o.split, n, h, w);
        if (o.precision == RAM_PRECISION_HALF) printf("weights:    rounded to half precision\n");
        printf("locations:  %s", source_names[o.source]);
        if (o.source == RAM_LOCS_SAMPLED || o.source == RAM_LOCS_RANDOM)
            printf(" (seed %llu)", (unsigned long long)o.seed);
        printf("\ntest error: %.2f%% (%ld / %d wrong)\n", 100.0 * error, errors, n);
        if (placed_set) {
            printf("on digit:   a glimpse on the digit in %.1f%% of the images", 100.0 * found / n);
            if (errors) printf(" (%.1f%% of the wrong ones)", 100.0 * found_wrong / errors);
            printf(";\n            %.2f of %d glimpses per image on average\n",
                   (double)on_total / n, mp.glimpses);
            printf("            glimpse 1, 2, ... on the digit in");
            for (int g = 0; g < mp.glimpses; g++)
                printf(" %.0f%%", 100.0 * by_glimpse[g] / n);
            printf(" of the images\n");
        }
        printf("\n");
        printf("confusion matrix (rows: true label, columns: predicted)\n      ");
        for (int c = 0; c < mp.classes; c++)
            printf("%6d", c);
        printf("\n");
        for (int r = 0; r < mp.classes; r++) {
            printf("%6d", r);
            for (int c = 0; c < mp.classes; c++)
                printf("%6ld", confusion[(size_t)r * (size_t)mp.classes + (size_t)c]);
            printf("\n");
        }
        printf("\ntime:       %.3f s (%.0f images/s, %d thread%s, batch %d)\n", seconds,
               seconds > 0 ? n / seconds : 0.0, nthreads, nthreads == 1 ? "" : "s", o.batch);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ram-eval: error writing output\n");
        goto done;
    }
    rc = 0;

done:
    free(tids);
    free(jobs);
    free(confusion);
    free(on_digit);
    free(pred);
    free(labels);
    free(images);
    ram_model_free(model);
    return rc;
}
