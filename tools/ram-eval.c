/*
 * ram-eval: test error of a saved RAM model on MNIST (its test set by
 * default), or on the translated and cluttered test sets made from it
 * (tools/common/datasets.h).
 *
 * Shows how to share one read-only ram_model between threads, each with its
 * own ram_state (and its own ram_policy when locations are random).
 */
#include "blas.h"
#include "clock.h"
#include "datasets.h"
#include "json.h"
#include "list.h"
#include "testset.h"
#include "zoom.h"

#include <ram/ram.h>

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 256

static const tool_info tool = {
    "ram-eval", "measure a Recurrent Attention Model's error on MNIST or on your images",
    "--model FILE --data DIR [options]",
    "Classify the MNIST test set (DIR/t10k-*-ubyte), or the test split of an image folder, "
    "CSV/TSV list or .npz, with a saved model and print the test error, "
    "the confusion matrix and the time taken.  On a translated or cluttered set also where the "
    "glimpses went: the share of images with a glimpse on the digit (its finest window wholly "
    "inside the digit's 28x28 box), the glimpses on the digit per image, and the share of "
    "images whose glimpse 1, 2, ... was on the digit (JSON: found, found_wrong, "
    "glimpses_on_digit, on_digit_by_glimpse; on pairs100 and sum100, on either digit).  On "
    "pairs100 also the digit error: the share of the two digits of each image that the "
    "predicted pair gets wrong (JSON: object_error).  A model of two objects (ram-train "
    "--objects 2) names the two digits (by default the most probable pair of different "
    "digits, see --decode); on pairs100 they are scored as an unordered pair, on sum100 by "
    "their sum, and the digit error (object_error) is then reported on both."};

static const int precision_values[] = {RAM_PRECISION_FLOAT, RAM_PRECISION_HALF, RAM_PRECISION_BF16};

/* How a model of two labels answers a two-digit set.  LABELS: each label
 * its most probable digit, so a digit may be named twice, which no image of
 * the set holds.  JOINT: the answer the label probabilities make most
 * probable, the two taken as independent and the digits as different, as
 * the set's are: the pair a != b with the largest p1(a) p2(b) and, on
 * sum100, the sum s with the largest sum of p1(a) p2(b) over a + b = s. */
typedef enum decode_kind { DECODE_LABELS = 0, DECODE_JOINT = 1 } decode_kind;
static const int decode_values[] = {DECODE_LABELS, DECODE_JOINT};

typedef struct options {
    testset_options set;
    int batch, threads, first, limit, json, no_clutter, sampled;
    int decode;    /* decode_kind: how a two-object model's labels become the answer */
    int precision; /* ram_precision */
    float stop;    /* --stop-threshold, or -1: every glimpse */
    int stop_unit; /* --stop-unit: where the model's stop unit says */
} options;

/* Whether each image stops at a glimpse of its own. */
static bool stopping(const options *o) {
    return o->stop >= 0 || o->stop_unit;
}

static int parse(int argc, char **argv, options *o) {
    *o = (options){.batch = 100, .threads = 1, .stop = -1.0f, .decode = DECODE_JOINT};
    const tool_opt more[] = {
        {"--sampled", OPT_FLAG, &o->sampled, .help = "the same as --policy sampled"},
        {"--no-clutter", OPT_FLAG, &o->no_clutter,
         .help = "cluttered sets: each digit where the set puts it, but without the clutter "
                 "(how much of the error is the clutter's)"},
        {"--batch", OPT_INT, &o->batch, 1, 100000, .meta = "N",
         .help = "images per ram_model_classify call"},
        {"--threads", OPT_INT, &o->threads, 1, MAX_THREADS, .meta = "N",
         .help = "worker threads, each with its own ram_state"},
        {"--precision", OPT_CHOICE, &o->precision, .choices = "float|half|bf16",
         .values = precision_values, .meta = "P",
         .help = "weights: as they are, or every parameter rounded to IEEE half precision or "
                 "to bfloat16 (ram_state_set_precision)"},
        {"--limit", OPT_INT, &o->limit, 1, 2147483647.0, .meta = "N", .def = "all",
         .help = "evaluate only the first N images (counted from --first)"},
        {"--first", OPT_INT, &o->first, 0, 2147483647.0, .meta = "N",
         .help = "start at image N of the split (from 0): --split train --first 50000 is "
                 "the validation set ram-train holds out of MNIST's training digits by "
                 "default (its last 10000)"},
        {"--decode", OPT_CHOICE, &o->decode, .choices = "labels|joint", .values = decode_values,
         .meta = "D",
         .help = "a model of two labels on pairs100 or sum100: each label its most probable "
                 "digit (labels), or the most probable answer from the two labels' "
                 "probabilities, the digits taken as different as the set's are (joint: the "
                 "pair a != b with the largest p1(a) p2(b); on sum100 the sum with the "
                 "largest total of p1(a) p2(b))"},
        {"--json", OPT_FLAG, &o->json, .help = "print one JSON object and nothing else"},
        {"--stop-threshold", OPT_FLOAT, &o->stop, 0, 1, .meta = "P", .def = "off",
         .help = "stop each image at the first glimpse after which the classifier's top "
                 "probability is at least P (ram_model_classify_stop; mean locations); reports "
                 "the mean glimpses and how many images stopped at each"},
        {"--stop-unit", OPT_FLAG, &o->stop_unit,
         .help = "stop each image where the model's stop unit says (ram-train --stop-cost; "
                 "ram_model_classify_stop_unit); reports as --stop-threshold"},
    };
    tool_opt t[TESTSET_OPTIONS + sizeof more / sizeof *more];
    size_t n = testset_table(&o->set, t);
    memcpy(t + n, more, sizeof more);
    n += sizeof more / sizeof *more;
    int r = opts_parse(&tool, t, n, argc, argv);
    if (r) return r;
    const tool_opt *policy = opts_find(t, n, "--policy");
    if (o->sampled) {
        if (policy->seen && o->set.source != RAM_LOCS_SAMPLED)
            return opts_usage_error(&tool, "--sampled contradicts --policy %s",
                                    testset_policy_name(o->set.source));
        o->set.source = RAM_LOCS_SAMPLED;
    }
    if (o->stop >= 0 && o->stop_unit)
        return opts_usage_error(&tool, "--stop-threshold or --stop-unit, not both");
    if (stopping(o) && o->set.source != RAM_LOCS_MEAN)
        return opts_usage_error(&tool, "%s takes the policy's mean locations, not --policy %s",
                                o->stop_unit ? "--stop-unit" : "--stop-threshold",
                                testset_policy_name(o->set.source));
    if (o->no_clutter && dataset_pieces((dataset_kind)o->set.dataset) == 0)
        return opts_usage_error(&tool, "--no-clutter needs --dataset cluttered60 or cluttered100");
    return testset_check(&tool, &o->set);
}

/* Everything a worker needs; workers share the model, images and results
 * arrays but write disjoint parts of `pred`.  For a translated or cluttered
 * set each worker places its own batches from the digits: dataset_make() is
 * pure, and this keeps memory at one batch per thread instead of the whole
 * set (400 MB for cluttered100). */
typedef struct job {
    const ram_model *model;
    const testset *set;  /* an image folder's images are converted per batch */
    const float *images; /* the images, or the 28 x 28 digits to place */
    int *pred;
    int objects;        /* the model's labels per image: 1, or 2 digits (mapped into pred) */
    int *digits;        /* objects > 1: n x objects predicted digits */
    decode_kind decode; /* objects > 1: how the digits are chosen */
    uint64_t *on_digit; /* placed sets: per image, bit g set if glimpse g hit the digit */
    float stop;         /* --stop-threshold, or -1 */
    int stop_unit;      /* --stop-unit */
    int *steps;         /* stopping: the glimpses each image took */
    int start, n, batch, pixels, side, glimpses, patch; /* images [start, n) */
    bool zoom;                                          /* the model chooses each glimpse's zoom */
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
 * glimpse's finest window (patch x patch pixels, times the glimpse's zoom
 * (zooms: glimpses, or NULL for none) as the hard sensor rounds it,
 * centred as lib/glimpse.c centres it) lies wholly inside the 28 x 28 box
 * the digit was placed in.  With a 12-pixel patch that is a centre within
 * 8 pixels of the digit's centre in x and in y.
 */
static uint64_t glimpses_on_digit(const job *j, int index, const float *locs, const float *zooms) {
    int x0[2], y0[2];
    uint64_t hits = 0; /* glimpses <= 64 (ram_model_create's limit) */
    const int boxes = dataset_digit_boxes(j->dataset, j->n_digits, index, j->data_seed, x0, y0);
    for (int g = 0; g < j->glimpses; g++) {
        const double side = zooms ? zoomed_side(j->patch, zooms[g]) : j->patch;
        const double reach = 14.0 - 0.5 * side; /* 28 / 2 - side / 2 */
        const double px = (locs[2 * g] + 1.0) * j->side * 0.5;
        const double py = (locs[2 * g + 1] + 1.0) * j->side * 0.5;
        for (int b = 0; b < boxes; b++) /* either digit of a two-digit set */
            if (fabs(px - (x0[b] + 14.0)) <= reach && fabs(py - (y0[b] + 14.0)) <= reach)
                hits |= (uint64_t)1 << g;
    }
    return hits;
}

enum { DIGITS = 10 }; /* the classes of each label of a two-digit set */

/* DECODE_JOINT for one image: p, the two labels' probabilities (2 x
 * DIGITS).  Sets d[0], d[1] to the most probable pair of different digits
 * and returns the most probable sum. */
static int decode_joint(const float *p, int d[2]) {
    double best = -1.0, by_sum[2 * DIGITS - 1] = {0};
    for (int a = 0; a < DIGITS; a++)
        for (int b = 0; b < DIGITS; b++) {
            if (a == b) continue;
            const double q = (double)p[a] * p[DIGITS + b];
            by_sum[a + b] += q;
            if (q > best) {
                best = q;
                d[0] = a;
                d[1] = b;
            }
        }
    int sum = 0;
    for (int k = 1; k < 2 * DIGITS - 1; k++)
        if (by_sum[k] > by_sum[sum]) sum = k;
    return sum;
}

/* Batch b of the job's images, classified with st (and pol); probs: room
 * for the batch's label probabilities (a model of two labels), or NULL. */
static ram_status job_batch(job *j, int b, ram_state *st, ram_policy *pol, float *placed,
                            unsigned char *bytes, float *locs, float *probs) {
    const int first = j->start + b * j->batch;
    const int count = j->n - first < j->batch ? j->n - first : j->batch;
    const float *img = placed;
    if (bytes) { /* an 8-bit folder or array: its bytes, as they are */
        for (int i = 0; i < count; i++) {
            unsigned char *to = bytes + (size_t)i * (size_t)j->pixels;
            const unsigned char *px;
            if (folder_image_u8(&j->set->folder, first + i, to, &px)) {
                j->status = RAM_ERR_IO;
                snprintf(j->error, sizeof j->error, "image %d of the set could not be read",
                         first + i);
                return RAM_ERR_IO;
            }
            if (px != to) memcpy(to, px, (size_t)j->pixels);
        }
    } else if (placed && j->set->from_folder) {
        for (int i = 0; i < count; i++)
            if (testset_image(j->set, j->dataset, first + i,
                              placed + (size_t)i * (size_t)j->pixels)) {
                j->status = RAM_ERR_IO;
                snprintf(j->error, sizeof j->error, "image %d of the set could not be read",
                         first + i);
                return RAM_ERR_IO;
            }
    } else if (placed) {
        for (int i = 0; i < count; i++)
            (j->no_clutter ? dataset_make_uncluttered : dataset_make)(
                j->dataset, j->images, j->set->digit_labels, j->n_digits, first + i, j->data_seed,
                placed + (size_t)i * (size_t)j->pixels);
    } else {
        img = j->images + (size_t)first * (size_t)j->pixels;
    }
    /* Reseed per batch, not per thread, so the result depends on the seed
     * and batch size but not on how many threads ran. */
    if (pol) ram_policy_seed(pol, j->seed + (uint64_t)b * 0x9E3779B97F4A7C15ull);
    if (j->objects > 1) {
        /* The two digits, as the set's class: the unordered pair's (none for
         * a digit named twice), or the sum.  (Multi-object sets are made
         * by the tools as floats, never read as bytes.) */
        int *d = j->digits + (size_t)first * j->objects;
        ram_status s =
            ram_model_classify_seq(j->model, st, img, count, j->source, pol, d, probs, locs);
        if (s != RAM_OK) return job_fail(j, s, "ram_model_classify_seq");
        for (int i = 0; i < count; i++) {
            int *di = d + 2 * i, sum = di[0] + di[1];
            if (j->decode == DECODE_JOINT) sum = decode_joint(probs + (size_t)i * 2 * DIGITS, di);
            j->pred[first + i] =
                j->dataset == DATASET_SUM100 ? sum : dataset_pair_class(di[0], di[1]);
        }
    } else if (j->stop_unit) {
        int *pred = j->pred + first, *steps = j->steps + first;
        ram_status s =
            bytes ? ram_model_classify_stop_unit_u8(j->model, st, bytes, count, pred, NULL, steps)
                  : ram_model_classify_stop_unit(j->model, st, img, count, pred, NULL, steps);
        if (s != RAM_OK) return job_fail(j, s, "ram_model_classify_stop_unit");
        return RAM_OK;
    } else if (j->stop >= 0) {
        ram_status s = bytes ? ram_model_classify_stop_u8(j->model, st, bytes, count, j->stop,
                                                          j->pred + first, NULL, j->steps + first)
                             : ram_model_classify_stop(j->model, st, img, count, j->stop,
                                                       j->pred + first, NULL, j->steps + first);
        if (s != RAM_OK) return job_fail(j, s, "ram_model_classify_stop");
        return RAM_OK; /* (no locations: which glimpses found the digit is not reported) */
    } else {
        ram_status s = bytes ? testset_classify_u8(j->model, st, j->source, pol, bytes, count,
                                                   j->pred + first, NULL, locs)
                             : testset_classify(j->model, st, j->source, pol, img, count,
                                                j->pred + first, NULL, locs);
        if (s != RAM_OK)
            return job_fail(
                j, s, j->source == RAM_LOCS_MEAN ? "ram_model_classify" : "ram_model_classify_ex");
    }
    if (!locs || j->dataset == DATASET_MNIST) return RAM_OK;
    /* A model with zoom: each glimpse's window at its own size. */
    float *zooms = j->zoom ? malloc(sizeof *zooms * (size_t)count * (size_t)j->glimpses) : NULL;
    if (j->zoom && !zooms) {
        j->status = RAM_ERR_OUT_OF_MEMORY;
        snprintf(j->error, sizeof j->error, "out of memory");
        return RAM_ERR_OUT_OF_MEMORY;
    }
    if (zooms) {
        ram_status s = ram_state_zooms(st, count, zooms);
        if (s != RAM_OK) {
            free(zooms);
            return job_fail(j, s, "ram_state_zooms");
        }
    }
    for (int i = 0; i < count; i++)
        j->on_digit[first + i] =
            glimpses_on_digit(j, first + i, locs + (size_t)i * (size_t)j->glimpses * 2,
                              zooms ? zooms + (size_t)i * (size_t)j->glimpses : NULL);
    free(zooms);
    return RAM_OK;
}

static void *run_job(void *arg) {
    job *j = arg;
    ram_state *st = NULL;
    ram_policy *pol = NULL;
    float *placed = NULL, *locs = NULL, *probs = NULL;
    unsigned char *bytes = NULL;
    if (j->dataset != DATASET_MNIST || j->set->from_folder) {
        const size_t room = (size_t)j->batch * (size_t)j->pixels;
        if (j->set->from_folder && folder_has_bytes(&j->set->folder))
            bytes = malloc(room);
        else
            placed = malloc(room * sizeof *placed);
        locs = malloc((size_t)j->batch * (size_t)j->glimpses * 2 * sizeof *locs);
        if (!(placed || bytes) || !locs) {
            j->status = RAM_ERR_OUT_OF_MEMORY;
            snprintf(j->error, sizeof j->error, "out of memory for a batch of %d images", j->batch);
            goto done;
        }
    }
    if (j->objects > 1 && j->decode == DECODE_JOINT &&
        !(probs = malloc(sizeof *probs * (size_t)j->batch * 2 * DIGITS))) {
        j->status = RAM_ERR_OUT_OF_MEMORY;
        snprintf(j->error, sizeof j->error, "out of memory for a batch of %d images", j->batch);
        goto done;
    }
    ram_status s = ram_state_create(j->model, j->batch, &st);
    if (s == RAM_OK) s = ram_state_set_precision(st, j->precision);
    if (s != RAM_OK) {
        job_fail(j, s, "ram_state_create");
        goto done;
    }
    if ((s = testset_policy(j->model, j->source, j->seed, &pol)) != RAM_OK) {
        job_fail(j, s, "ram_policy_create");
        goto done;
    }
    int nbatches = (j->n - j->start + j->batch - 1) / j->batch;
    for (int b = j->index; b < nbatches; b += j->stride)
        if (job_batch(j, b, st, pol, placed, bytes, locs, probs) != RAM_OK) break;
done:
    free(probs);
    ram_policy_free(pol);
    ram_state_free(st);
    free(placed);
    free(bytes);
    free(locs);
    return NULL;
}

/* What the run found, over all images. */
typedef struct result {
    long errors, found, found_wrong, on_total, by_glimpse[64];
    long digits_wrong;    /* pairs100: digits of the true pairs the predictions miss */
    long stopped_at[64];  /* --stop-threshold: images that took 1, 2, ... glimpses */
    double mean_glimpses; /* --stop-threshold: their mean */
    int objects_reported; /* the digit error is reported (pairs100, or two objects) */
    int classes;          /* the set's classes: the model's, or a two-digit set's */
    long *confusion;      /* classes x classes */
    double error, seconds;
} result;

/* Classify the set with `threads` workers (none for one); fills pred and
 * on_digit.  0, or -1 with the reason on stderr. */
static int classify_all(const options *o, const testset *s, int n, int *pred, int *digits,
                        uint64_t *on_digit, int *steps, double *seconds) {
    int nbatches = (n - o->first + o->batch - 1) / o->batch;
    int nthreads = o->threads < nbatches ? o->threads : nbatches;
    job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    int rc = -1, started = 0;
    if (!jobs || !tids) {
        fprintf(stderr, "ram-eval: out of memory\n");
        goto done;
    }
    double t0 = clock_seconds();
    for (int t = 0; t < nthreads; t++) {
        jobs[t] =
            (job){.model = s->model,
                  .set = s,
                  .images = s->images,
                  .pred = pred,
                  .objects = s->mp.objects,
                  .digits = digits,
                  .decode = (decode_kind)o->decode,
                  .on_digit = on_digit,
                  .stop = o->stop,
                  .stop_unit = o->stop_unit,
                  .steps = steps,
                  .start = o->first,
                  .n = n,
                  .batch = o->batch,
                  .pixels = s->c * s->h * s->w,
                  .side = s->w,
                  .glimpses = s->mp.glimpses,
                  .patch = s->mp.glimpse.patch,
                  .zoom = s->mp.zoom_max > 0,
                  .dataset = (dataset_kind)o->set.dataset,
                  .no_clutter = o->no_clutter,
                  .n_digits = s->n, /* clutter comes from the whole split, even with --limit */
                  .data_seed = s->seed,
                  .source = (ram_loc_source)o->set.source,
                  .precision = (ram_precision)o->precision,
                  .seed = o->set.seed,
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
    *seconds = clock_seconds() - t0;
    if (nthreads > 1 && started < nthreads) goto done;
    for (int t = 0; t < nthreads; t++) {
        if (jobs[t].status != RAM_OK) {
            fprintf(stderr, "ram-eval: %s\n", jobs[t].error);
            goto done;
        }
    }
    rc = 0;
done:
    free(tids);
    free(jobs);
    return rc;
}

/* How many of the two digits of true pair `truth` (a pairs100 class) the
 * predicted pair misses: 0, 1 or 2 (2 for a class that is no pair). */
static int pair_digits_wrong(int pred, int truth) {
    int a, b, c, d;
    if (dataset_pair_digits(pred, &a, &b) || dataset_pair_digits(truth, &c, &d)) return 2;
    return 2 - (a == c || a == d) - (b == c || b == d);
}

/* The error and confusion matrix and, for the placed sets (the digit's box
 * is known), where the glimpses went: images with a glimpse on the digit,
 * overall and among the wrong ones, and glimpses on the digit per image. */
/* The same for a model that names the two digits d[0], d[1] of image k:
 * how many of its true digits they miss (a digit named twice finds one). */
static int digits_missed(const testset *s, int dataset, int k, const int *d) {
    int truth[2];
    if (dataset_digit_labels((dataset_kind)dataset, s->digit_labels, s->n, k, s->seed, truth) != 2)
        return 2;
    const int first = d[0] == truth[0] || d[0] == truth[1];
    const int second = d[1] != d[0] && (d[1] == truth[0] || d[1] == truth[1]);
    return 2 - first - second;
}

/* Over images [o->first, n). */
static void summarise(const options *o, const testset *s, int n, const int *pred, const int *digits,
                      const uint64_t *on_digit, const int *steps, result *r) {
    const int i0 = o->first, count = n - i0;
    const int classes = r->classes;
    if (steps) {
        long total = 0;
        for (int i = i0; i < n; i++) {
            r->stopped_at[steps[i] - 1]++;
            total += steps[i];
        }
        r->mean_glimpses = (double)total / count;
    }
    for (int i = i0; i < n; i++) {
        r->errors += pred[i] != s->labels[i];
        if (pred[i] >= 0 && pred[i] < classes)
            r->confusion[(size_t)s->labels[i] * (size_t)classes + (size_t)pred[i]]++;
    }
    r->error = (double)r->errors / count;
    if (s->mp.objects > 1)
        for (int i = i0; i < n; i++)
            r->digits_wrong += digits_missed(s, o->set.dataset, i, digits + (size_t)i * 2);
    else
        for (int i = i0; o->set.dataset == DATASET_PAIRS100 && i < n; i++)
            r->digits_wrong += pair_digits_wrong(pred[i], s->labels[i]);
    for (int i = i0; !steps && o->set.dataset != DATASET_MNIST && i < n; i++) {
        r->found += on_digit[i] != 0;
        r->found_wrong += on_digit[i] != 0 && pred[i] != s->labels[i];
        for (int g = 0; g < s->mp.glimpses; g++) {
            const int hit = (on_digit[i] >> g) & 1;
            r->on_total += hit;
            r->by_glimpse[g] += hit;
        }
    }
}

static void print_json(const options *o, const testset *s, int n, const result *r) {
    const ram_model_params *mp = &s->mp;
    printf("{\"test_error\": %.6f, \"n\": %d, \"errors\": %ld, \"glimpses\": %d, "
           "\"policy\": \"%s\", \"precision\": \"%s\", \"dataset\": \"%s\", \"model\": ",
           r->error, n, r->errors, mp->glimpses, testset_policy_name(o->set.source),
           o->precision == RAM_PRECISION_HALF   ? "half"
           : o->precision == RAM_PRECISION_BF16 ? "bf16"
                                                : "float",
           s->from_folder ? (o->set.pair_images ? "files" : "folder")
                          : dataset_name((dataset_kind)o->set.dataset));
    json_string(stdout, o->set.model);
    if (mp->objects > 1)
        printf(", \"objects\": %d, \"decode\": \"%s\"", mp->objects,
               o->decode == DECODE_JOINT ? "joint" : "labels");
    if (o->first) printf(", \"first\": %d", o->first);
    if (r->objects_reported)
        printf(", \"object_error\": %.6f, \"digits_wrong\": %ld",
               (double)r->digits_wrong / (2.0 * n), r->digits_wrong);
    printf(", \"sensor\": \"%s\"", mp->sensor == RAM_SENSOR_SOFT ? "soft" : "hard");
    if (mp->cell_samples) printf(", \"cell_samples\": %d", mp->cell_samples);
    if (mp->contrast) printf(", \"contrast\": true");
    if (mp->zoom_max > 0)
        printf(", \"zoom\": [%g, %g]", (double)mp->zoom_min, (double)mp->zoom_max);
    if (mp->conv_channels)
        printf(", \"conv\": {\"channels\": %d, \"kernel\": %d, \"stride\": %d}", mp->conv_channels,
               mp->conv_kernel, mp->conv_stride);
    if (o->no_clutter) printf(", \"no_clutter\": true");
    if (stopping(o)) {
        float cost = 0;
        if (o->stop_unit && ram_model_stop_unit(s->model, NULL, &cost) == RAM_OK)
            printf(", \"stop_unit\": true, \"stop_cost\": %.9g", (double)cost);
        else
            printf(", \"stop_threshold\": %.9g", (double)o->stop);
        printf(", \"mean_glimpses\": %.4f, \"stopped_at\": [", r->mean_glimpses);
        for (int g = 0; g < mp->glimpses; g++)
            printf("%s%ld", g ? ", " : "", r->stopped_at[g]);
        printf("]");
    } else if (o->set.dataset != DATASET_MNIST) {
        printf(", \"found\": %.4f, \"found_wrong\": ", (double)r->found / n);
        if (r->errors) /* a share of no images is not a number */
            printf("%.4f", (double)r->found_wrong / r->errors);
        else
            printf("null");
        printf(", \"glimpses_on_digit\": %.3f, \"on_digit_by_glimpse\": [",
               (double)r->on_total / n);
        for (int g = 0; g < mp->glimpses; g++)
            printf("%s%.4f", g ? ", " : "", (double)r->by_glimpse[g] / n);
        printf("]");
    }
    if (ram_model_class_name(s->model, 0)) { /* only models that have names */
        printf(", \"classes\": [");
        for (int k = 0; k < mp->classes; k++) {
            printf("%s", k ? ", " : "");
            json_string(stdout, ram_model_class_name(s->model, k));
        }
        printf("]");
    }
    printf(", \"seconds\": %.3f}\n", r->seconds);
}

static void print_on_digit(const testset *s, int n, const result *r) {
    printf("on digit:   a glimpse on the digit in %.1f%% of the images", 100.0 * r->found / n);
    if (r->errors) printf(" (%.1f%% of the wrong ones)", 100.0 * r->found_wrong / r->errors);
    printf(";\n            %.2f of %d glimpses per image on average\n", (double)r->on_total / n,
           s->mp.glimpses);
    printf("            glimpse 1, 2, ... on the digit in");
    for (int g = 0; g < s->mp.glimpses; g++)
        printf(" %.0f%%", 100.0 * r->by_glimpse[g] / n);
    printf(" of the images\n");
}

/* What --data (or the pair) is, when it is not one of the benchmarks. */
static const char *source_name(const options *o, const testset *s) {
    return o->set.pair_images          ? "image file"
           : s->folder.mapped          ? "array"
           : list_is_list(o->set.data) ? "image list"
                                       : "image folder";
}

static void print_text(const options *o, const testset *s, int n, int nthreads, const result *r) {
    const ram_model_params *mp = &s->mp;
    printf("model:      %s (%d glimpses, %dx%d retina x%d scale%s, %s core)\n", o->set.model,
           mp->glimpses, mp->glimpse.patch, mp->glimpse.patch, mp->glimpse.depth,
           mp->glimpse.depth == 1 ? "" : "s", mp->core == RAM_CORE_LSTM ? "LSTM" : "RNN");
    printf("data:       %s%s, %s/%s, %d images %dx%d\n",
           s->from_folder ? source_name(o, s) : dataset_name((dataset_kind)o->set.dataset),
           o->no_clutter ? " without its clutter" : "", o->set.data,
           s->from_folder ? o->set.split : o->set.split_file, n, s->h, s->w);
    if (o->first) printf("            from image %d of the split\n", o->first);
    if (mp->objects > 1)
        printf("answer:     %s\n",
               o->decode == DECODE_JOINT
                   ? "the most probable pair of different digits (or sum) from the two labels"
                   : "each label its most probable digit");
    for (int k = 0; ram_model_class_name(s->model, k); k++)
        printf("%s%d %s%s", k ? ", " : "classes:    ", k, ram_model_class_name(s->model, k),
               k + 1 == mp->classes ? "\n" : "");
    if (o->precision == RAM_PRECISION_HALF) printf("weights:    rounded to half precision\n");
    if (o->precision == RAM_PRECISION_BF16) printf("weights:    rounded to bfloat16\n");
    printf("locations:  %s", testset_policy_name(o->set.source));
    if (o->set.source == RAM_LOCS_SAMPLED || o->set.source == RAM_LOCS_RANDOM)
        printf(" (seed %llu)", (unsigned long long)o->set.seed);
    printf("\ntest error: %.2f%% (%ld / %d wrong)\n", 100.0 * r->error, r->errors, n);
    if (r->objects_reported)
        printf("digit error: %.2f%% (%ld / %d digits wrong)\n", 100.0 * r->digits_wrong / (2.0 * n),
               r->digits_wrong, 2 * n);
    if (stopping(o)) {
        char rule[64];
        float cost = 0;
        if (o->stop_unit && ram_model_stop_unit(s->model, NULL, &cost) == RAM_OK)
            snprintf(rule, sizeof rule, "by the model's stop unit (cost %g)", (double)cost);
        else
            snprintf(rule, sizeof rule, "at top probability %g", (double)o->stop);
        printf("stopping:   %s: %.2f of %d glimpses per image on average;\n"
               "            images stopped after glimpse 1, 2, ...:",
               rule, r->mean_glimpses, mp->glimpses);
        for (int g = 0; g < mp->glimpses; g++)
            printf(" %ld", r->stopped_at[g]);
        printf("\n");
    } else if (o->set.dataset != DATASET_MNIST) {
        print_on_digit(s, n, r);
    }
    printf("\nconfusion matrix (rows: true label, columns: predicted)\n      ");
    for (int c = 0; c < r->classes; c++)
        printf("%6d", c);
    printf("\n");
    for (int row = 0; row < r->classes; row++) {
        printf("%6d", row);
        for (int c = 0; c < r->classes; c++)
            printf("%6ld", r->confusion[(size_t)row * (size_t)r->classes + (size_t)c]);
        printf("\n");
    }
    printf("\ntime:       %.3f s (%.0f images/s, %d thread%s, batch %d)\n", r->seconds,
           r->seconds > 0 ? n / r->seconds : 0.0, nthreads, nthreads == 1 ? "" : "s", o->batch);
}

/* Evaluate the loaded set; TOOL_OK or TOOL_FAILED. */
static int evaluate(const options *o, const testset *s) {
    int n = s->n, rc = TOOL_FAILED; /* images [o->first, n) */
    if (o->first >= n) {
        fprintf(stderr, "ram-eval: --first %d: the split has %d images\n", o->first, s->n);
        return TOOL_FAILED;
    }
    if (o->limit > 0 && o->limit < n - o->first) n = o->first + o->limit;
    const int two = s->mp.objects > 1;
    result r = {0};
    r.classes = s->mp.classes;
    if (two) {
        const int set = o->set.dataset;
        if (s->from_folder || (set != DATASET_PAIRS100 && set != DATASET_SUM100) ||
            s->mp.objects != 2 || s->mp.classes != DIGITS) {
            fprintf(stderr,
                    "ram-eval: %s names %d objects of %d classes per image: it is evaluated on "
                    "--dataset pairs100 or sum100 (two digits, 10 classes)\n",
                    o->set.model, s->mp.objects, s->mp.classes);
            return TOOL_FAILED;
        }
        r.classes = dataset_classes((dataset_kind)set);
    }
    r.objects_reported = two || o->set.dataset == DATASET_PAIRS100;
    for (int i = 0; i < n; i++) {
        if (s->labels[i] >= r.classes) {
            fprintf(stderr, "ram-eval: label %d of image %d but the model has %d classes\n",
                    s->labels[i], i, s->mp.classes);
            return TOOL_FAILED;
        }
    }
    int *pred = malloc((size_t)n * sizeof *pred);
    int *digits = two ? malloc((size_t)n * 2 * sizeof *digits) : NULL;
    uint64_t *on_digit = calloc((size_t)n, sizeof *on_digit);
    int *steps = stopping(o) ? malloc((size_t)n * sizeof *steps) : NULL;
    r.confusion = calloc((size_t)r.classes * (size_t)r.classes, sizeof *r.confusion);
    if (!pred || !on_digit || !r.confusion || (two && !digits) || (stopping(o) && !steps)) {
        fprintf(stderr, "ram-eval: out of memory\n");
    } else if (two && stopping(o)) {
        fprintf(stderr, "ram-eval: stopping is for models of one label per image\n");
    } else if (o->stop_unit && ram_model_stop_unit(s->model, NULL, NULL) != RAM_OK) {
        fprintf(stderr, "ram-eval: %s: --stop-unit: %s\n", o->set.model, ram_last_error());
    } else if (!classify_all(o, s, n, pred, digits, on_digit, steps, &r.seconds)) {
        summarise(o, s, n, pred, digits, on_digit, steps, &r);
        const int count = n - o->first, nbatches = (count + o->batch - 1) / o->batch;
        if (o->json)
            print_json(o, s, count, &r);
        else
            print_text(o, s, count, o->threads < nbatches ? o->threads : nbatches, &r);
        if (fflush(stdout) != 0 || ferror(stdout))
            fprintf(stderr, "ram-eval: error writing output\n");
        else
            rc = TOOL_OK;
    }
    free(r.confusion);
    free(steps);
    free(on_digit);
    free(digits);
    free(pred);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    int parsed = parse(argc, argv, &o);
    if (parsed) return opts_exit(parsed);
    /* One BLAS thread: threads split the batches, and a multi-threaded BLAS
     * on top of them only fights for the cores (20x slower on a busy
     * machine, measured).  Also makes sure OpenBLAS's kernels fit the CPU. */
    tool_blas_init(tool.name, argv);
    if (ram_version_number() / 10000 != RAM_VERSION_MAJOR) {
        fprintf(stderr, "ram-eval: built for libram %s but loaded libram %s\n", RAM_VERSION_STRING,
                ram_version_string());
        return TOOL_FAILED;
    }
    testset s;
    if (testset_load(tool.name, &o.set, &s)) return TOOL_FAILED;
    int rc = evaluate(&o, &s);
    testset_free(&s);
    return rc;
}
