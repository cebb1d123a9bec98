#define _POSIX_C_SOURCE 200809L /* isatty */
/* ram-train's training loop (see train.h). */
#include "train.h"

#include "clock.h"
#include "datasets.h"
#include "files.h"
#include "folder.h"
#include "idx.h"
#include "loader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Everything a run holds, so that its steps can be functions of their own. */
typedef struct run {
    const char *prog;
    train_options *o;
    train_hooks h;
    int distributed; /* whole global batches, rank 0 alone evaluates and writes */
    float *images, *val_images, *batch_images, *warped, *plain;
    folder_set folder, val_folder; /* an image folder's training and validation images */
    int from_folder, channels;
    /* An 8-bit image folder or array trained on without augmentation is
     * handed to the library as bytes (pointers to each image, into the set
     * where it is kept: nothing converted, nothing copied that is not made
     * anyway); val_images and batch_images are then unused. */
    int bytes;
    unsigned char *val_bytes, *batch_bytes; /* room for images not kept as they are */
    const unsigned char **val_each, **batch_each;
    loader_batch own; /* the batch made here when there is no loader */
    int *labels, *perm, *batch_labels, *val_owned;
    const int *val_labels;
    /* Validation: val_loaded images and labels made once (all of them), or
     * chunks of val_chunk made at each evaluation from val_set's images
     * val_first.. (a streamed set's, too large to hold as floats). */
    const folder_set *val_set;
    int val_loaded, val_chunk, val_first;
    loader *loader;    /* streamed sets and arrays: the epoch's batches */
    uint64_t seed_now; /* the epoch's image seed, for the loader's thread */
    int skipped_now;   /* streamed images that could not be read this epoch */
    int n_all, height, width, n_train, pixels, averaging, stopped;
    int objects;  /* labels per image: 1, or a two-digit set's 2 digits (--objects 2) */
    int resensed; /* --init's hard model read with the soft sensor (--sensor soft|hybrid) */
    long steps;   /* per epoch */
    ram_model *model;
    ram_policy *policy;
    ram_trainer *trainer;
    FILE *log;
    train_state st;
} run;

/* The figures of an epoch, summed over its batches. */
typedef struct epoch_sums {
    double wrong, seen, nll, reward, base;
} epoch_sums;

#define TRY(call)                                                                                  \
    do {                                                                                           \
        ram_status s_ = (call);                                                                    \
        if (s_ != RAM_OK) {                                                                        \
            fprintf(stderr, "%s: %s: %s\n", r->prog, ram_status_string(s_), ram_last_error());     \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static void *alloc(run *r, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fprintf(stderr, "%s: out of memory\n", r->prog);
    return p;
}

/* Validation images first..first+n of an image folder into val_images
 * (or val_each, as bytes) and labels: how many could be read (a streamed
 * file can fail: passed over with --on-bad skip), or -1. */
static int fill_val(run *r, int first, int n, int *labels) {
    const folder_set *v = r->val_set;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const size_t at = (size_t)kept * r->pixels;
        const int got = r->bytes
                            ? folder_image_u8(v, first + i, r->val_bytes + at, &r->val_each[kept])
                            : folder_image(v, first + i, r->val_images + at);
        if (got < 0) return -1;
        if (got == 0) labels[kept++] = folder_label(v, first + i);
    }
    return kept;
}

/* Whether the run hands its images over as bytes: an 8-bit source (and
 * validation set), and no augmentation, which works on floats. */
static int trains_on_bytes(const run *r, const folder_set *v) {
    const train_options *o = r->o;
    return folder_has_bytes(&r->folder) && folder_has_bytes(v) && !o->shift && !(o->rotate > 0) &&
           !(o->zoom > 0) && !o->flip;
}

/* The canvas of an image folder's model into *mp: --init's (and its fit
 * rule unless --fit is given), else the options' and the first training
 * image's. */
static int folder_canvas(run *r, ram_model_params *mp) {
    train_options *o = r->o;
    *mp = o->mp;
    if (o->init) {
        ram_model *m = NULL;
        TRY(ram_model_load(o->init, &m));
        ram_status s = ram_model_get_params(m, mp);
        if (!o->fit_given) o->fit = (int)ram_model_fit(m);
        ram_model_free(m);
        TRY(s);
        return 0;
    }
    int c = 1, h = 1, w = 1;
    if (!(o->height && o->width && o->channels) &&
        (o->train_images ? folder_probe_pair(r->prog, o->train_images, &c, &h, &w)
                         : folder_probe(r->prog, o->data, "train", &c, &h, &w)))
        return -1;
    mp->height = o->height ? o->height : h;
    mp->width = o->width ? o->width : w;
    mp->channels = o->channels ? o->channels : c;
    return 0;
}

/* An array's or a list's classes are 0..K-1, K one more than its largest
 * label (a class folder without images is refused when read): say so when
 * some of them have no training image, as labels 5..7 make a model of eight
 * classes, five of which it can never learn.  0, or -1 out of memory. */
static int warn_empty_classes(run *r) {
    const int K = r->folder.classes;
    int *count = calloc((size_t)K, sizeof *count);
    if (!count) {
        fprintf(stderr, "%s: out of memory\n", r->prog);
        return -1;
    }
    for (int k = 0; k < r->n_train; k++)
        count[r->labels[k]]++;
    int empty = 0, first = -1;
    for (int c = 0; c < K; c++)
        if (!count[c] && empty++ == 0) first = c;
    free(count);
    if (empty)
        fprintf(stderr,
                "%s: warning: %d of the model's %d classes (0..%d, from the largest label) have "
                "no training image, the first %d: are the labels numbered from 0?\n",
                r->prog, empty, K, K - 1, first);
    return 0;
}

/* An image folder's training images (shuffled with a fixed seed, so that
 * the last --val are a sample of every class) and its validation images:
 * PATH/val's, or the last --val (a tenth by default) of the training ones. */
static int load_folder(run *r) {
    train_options *o = r->o;
    ram_model_params mp;
    ram_model *fit = NULL;
    if (folder_canvas(r, &mp)) return -1;
    mp.classes = 2; /* any count: this model only fits the images */
    TRY(ram_model_create(&mp, &fit));
    ram_status s = ram_model_set_fit(fit, (ram_fit)o->fit);
    int rc = s != RAM_OK       ? -1
             : o->train_images ? folder_load_pair(r->prog, o->train_images, o->train_labels, fit,
                                                  NULL, 0, DATASET_VAL_SEED, &r->folder)
                               : folder_load(r->prog, o->data, "train", fit, NULL, 0, o->on_bad,
                                             DATASET_VAL_SEED, o->stream, o->cache, &r->folder);
    const int no_val = o->val == 0; /* --val 0: PATH/val is not used */
    const int own_val = !rc && !o->train_images && !no_val && folder_has_split(o->data, "val");
    if (own_val)
        rc = folder_load(r->prog, o->data, "val", fit, (const char *const *)r->folder.names,
                         r->folder.classes, o->on_bad, 0, o->stream, o->cache, &r->val_folder);
    ram_model_free(fit);
    TRY(s);
    if (rc) return -1;
    folder_report(r->prog, o->data, &r->folder);
    folder_report(r->prog, o->data, &r->val_folder);
    const folder_set *v = own_val ? &r->val_folder : &r->folder;
    r->n_all = r->folder.n;
    if (own_val)
        o->val = r->val_folder.n;
    else if (!o->val_given)
        o->val = r->n_all / 10 > 0 ? r->n_all / 10 : 1;
    r->n_train = r->n_all - (own_val ? 0 : o->val);
    if (r->n_train < 1) {
        fprintf(stderr, "%s: --val %d leaves no training images (of %d)\n", r->prog, o->val,
                r->n_all);
        return -1;
    }
    if (o->train_limit > 0 && o->train_limit < r->n_train) r->n_train = o->train_limit;
    r->height = mp.height;
    r->width = mp.width;
    r->channels = mp.channels;
    r->pixels = mp.channels * mp.height * mp.width;
    o->mp.height = mp.height;
    o->mp.width = mp.width;
    o->mp.channels = mp.channels;
    o->mp.classes = r->folder.classes;
    if (!(r->labels = alloc(r, sizeof(int) * r->n_all))) return -1;
    for (int k = 0; k < r->n_all; k++)
        r->labels[k] = folder_label(&r->folder, k);
    if (warn_empty_classes(r)) return -1;
    r->val_set = v;
    r->val_first = v->n - o->val;
    r->bytes = trains_on_bytes(r, v);
    /* Validation images as floats take at most 256 MiB at a time (as
     * bytes, a quarter of that: the same chunks, the same figures). */
    const long most = (256L << 20) / ((long)sizeof(float) * r->pixels);
    r->val_chunk = o->val < most ? o->val : most > 0 ? (int)most : 1;
    const size_t room = (size_t)r->val_chunk * r->pixels;
    if (!(r->bytes ? (r->val_bytes = alloc(r, room)) &&
                         (r->val_each = alloc(r, sizeof *r->val_each * r->val_chunk))
                   : !!(r->val_images = alloc(r, sizeof(float) * room))) ||
        !(r->val_owned = alloc(r, sizeof(int) * r->val_chunk)))
        return -1;
    r->val_labels = r->val_owned;
    if (r->val_chunk < o->val) return 0; /* made at each evaluation */
    r->val_loaded = fill_val(r, r->val_first, o->val, r->val_owned);
    return r->val_loaded < 0 ? -1 : 0;
}

/* Whether --init's model is given another count of glimpses. */
static int init_retimes(const train_options *o) {
    return o->init_glimpses || o->init_emit_every >= 0;
}

/* The training set, and the validation set made from its last --val images. */
static int load_data(run *r) {
    train_options *o = r->o;
    r->channels = 1;
    r->objects = o->mp.objects;
    if (o->init) { /* --init's model says how many labels an image has (no --objects then);
                    * loaded once, here, and trained by make_trainer() */
        ram_model_params p;
        ram_model_params_init(&p);
        TRY(ram_model_load(o->init, &r->model));
        TRY(ram_model_get_params(r->model, &p));
        r->objects = p.objects;
        if (init_retimes(o)) {
            const int T = o->init_glimpses ? o->init_glimpses : p.glimpses;
            /* --glimpses alone: a label every glimpses / objects */
            const int K = o->init_emit_every >= 0 ? o->init_emit_every
                          : o->init_glimpses      ? 0
                                                  : p.emit_every;
            if (p.objects > 1 && (K ? p.objects * K != T : T % p.objects)) {
                /* the library's refusal speaks of counts, not of options */
                if (K)
                    fprintf(stderr,
                            "%s: %s labels %d objects: %d x --emit-every %d is %d glimpses, "
                            "not %d\n",
                            r->prog, o->init, p.objects, p.objects, K, p.objects * K, T);
                else
                    fprintf(stderr,
                            "%s: %s labels %d objects: %d glimpses are not a multiple of %d "
                            "(or give --emit-every K for %d x K glimpses)\n",
                            r->prog, o->init, p.objects, T, p.objects, p.objects);
                return -1;
            }
            ram_model *retimed;
            TRY(ram_model_with_glimpses(r->model, T, K, &retimed));
            ram_model_free(r->model);
            r->model = retimed;
        }
        if (o->mp.sensor == RAM_SENSOR_SOFT && p.sensor == RAM_SENSOR_HARD) {
            /* --sensor soft or hybrid on a hard model: the same weights read
             * through the soft sensor, which reads what the hard one does
             * where the squares sit on pixel edges */
            ram_model *resensed;
            TRY(ram_model_with_sensor(r->model, RAM_SENSOR_SOFT, &resensed));
            ram_model_free(r->model);
            r->model = resensed;
            r->resensed = 1;
        }
    }
    if (r->from_folder && r->objects > 1) {
        fprintf(stderr,
                "%s: --objects %d needs a two-digit --dataset (pairs100, sum100): image folders "
                "and arrays have one label per image\n",
                r->prog, r->objects);
        return -1;
    }
    if (r->from_folder) return load_folder(r);
    if (dataset_load(r->prog, o->data, "train", o->dataset, &r->images, &r->labels, &r->n_all,
                     &r->height, &r->width))
        return -1;
    r->n_train = r->n_all - o->val;
    if (r->n_train < 1) {
        fprintf(stderr, "%s: --val %d leaves no training images (of %d)\n", r->prog, o->val,
                r->n_all);
        return -1;
    }
    if (r->objects > 1 && r->objects != dataset_objects(o->dataset)) {
        fprintf(stderr,
                "%s: --objects %d: --dataset %s has %d digit%s per image (the labels of a "
                "model of several objects are its digits, in reading order)\n",
                r->prog, r->objects, dataset_name(o->dataset), dataset_objects(o->dataset),
                dataset_objects(o->dataset) == 1 ? "" : "s");
        return -1;
    }
    if (o->train_limit > 0 && o->train_limit < r->n_train) r->n_train = o->train_limit;
    /* A two-digit set pairs training digits with training digits only. */
    if (dataset_check_labels(r->prog, o->dataset, r->labels, r->n_all - o->val,
                             "the training digits"))
        return -1;
    /* Validation = the last `val` training images, as in the Torch recipe,
     * placed once with a fixed seed; training images are placed per batch. */
    r->pixels = r->height * r->width;
    r->val_labels = r->labels + (r->n_all - o->val);
    r->val_loaded = r->val_chunk = o->val;
    if (!(r->val_images = alloc(r, sizeof(float) * o->val * r->pixels))) return -1;
    for (int i = 0; i < o->val; i++) { /* a generated set's with the training images' --clutter */
        float *dst = r->val_images + (size_t)i * r->pixels;
        if (o->dataset == DATASET_MNIST)
            dataset_image(o->dataset, r->images, r->labels, r->pixels, r->n_all,
                          r->n_all - o->val + i, DATASET_VAL_SEED, dst);
        else
            dataset_make_some(o->dataset, r->images, r->labels, r->n_all, r->n_all - o->val + i,
                              NULL, o->clutter, DATASET_VAL_SEED, dst);
    }
    if (r->objects > 1) { /* the digits' labels in reading order, n x objects */
        if (!(r->val_owned = alloc(r, sizeof(int) * o->val * r->objects))) return -1;
        for (int i = 0; i < o->val; i++)
            dataset_digit_labels(o->dataset, r->labels, r->n_all, r->n_all - o->val + i,
                                 DATASET_VAL_SEED, r->val_owned + (size_t)i * r->objects);
        r->val_labels = r->val_owned;
    } else if (dataset_objects(o->dataset) > 1) { /* the images' classes, not their digits' */
        if (!(r->val_owned = alloc(r, sizeof(int) * o->val))) return -1;
        for (int i = 0; i < o->val; i++)
            r->val_owned[i] = dataset_label(o->dataset, r->labels, r->n_all, r->n_all - o->val + i,
                                            DATASET_VAL_SEED);
        r->val_labels = r->val_owned;
    }
    o->mp.height = r->height;
    o->mp.width = r->width;
    o->mp.channels = 1;
    o->mp.classes = r->objects > 1 ? 10 : dataset_classes(o->dataset);
    return 0;
}

/* What the run trains on, for messages. */
static const char *data_name(const run *r) {
    return r->from_folder ? r->o->data : dataset_name(r->o->dataset);
}

/* The model (new, or --init's), its policy and the trainer. */
static int make_trainer(run *r) {
    train_options *o = r->o;
    if (o->init) {
        TRY(ram_model_get_params(r->model, &o->mp)); /* loaded by load_data() */
        if (o->mp.height != r->height || o->mp.width != r->width || o->mp.channels != r->channels) {
            fprintf(stderr, "%s: %s takes %dx%d images with %d channels; %s has %d-channel %dx%d\n",
                    r->prog, o->init, o->mp.height, o->mp.width, o->mp.channels, data_name(r),
                    r->channels, r->height, r->width);
            return -1;
        }
        if (!r->from_folder && r->objects == 1 && o->mp.classes != dataset_classes(o->dataset) &&
            dataset_objects(o->dataset) > 1) {
            fprintf(stderr, "%s: %s has %d classes; --dataset %s has %d\n", r->prog, o->init,
                    o->mp.classes, data_name(r), dataset_classes(o->dataset));
            return -1;
        }
        if (r->from_folder && o->mp.classes != r->folder.classes) {
            fprintf(stderr, "%s: %s has %d classes; %s has %d class folders\n", r->prog, o->init,
                    o->mp.classes, o->data, r->folder.classes);
            return -1;
        }
    } else {
        TRY(ram_model_create(&o->mp, &r->model));
    }
    if (r->from_folder) { /* saved with the model and its checkpoints */
        TRY(ram_model_set_class_names(r->model, (const char *const *)r->folder.names,
                                      r->folder.classes));
        TRY(ram_model_set_fit(r->model, (ram_fit)o->fit));
    } else if (r->objects == 1 && dataset_class_name(o->dataset, 0)) { /* "0-1" ..., "0" ... */
        const char *names[45];
        for (int k = 0; k < o->mp.classes && k < 45; k++)
            names[k] = dataset_class_name(o->dataset, k);
        TRY(ram_model_set_class_names(r->model, names, o->mp.classes));
    }
    TRY(ram_policy_create(&o->pp, r->model, &r->policy));
    if (r->distributed) {
        const long global = (long)o->batch * r->h.ranks;
        r->steps = r->n_train / global; /* whole global batches only */
        if (r->steps < 1) {
            fprintf(stderr, "%s: %d training images do not fill one batch of %d x %d ranks\n",
                    r->prog, r->n_train, o->batch, r->h.ranks);
            return -1;
        }
    } else {
        r->steps = (r->n_train + o->batch - 1) / o->batch;
    }
    int decay_epochs = o->decay_epochs >= 0 ? o->decay_epochs : o->epochs;
    o->tp.decay_steps = o->tp.lr_final != o->tp.lr ? decay_epochs * r->steps : 0;
    TRY(ram_trainer_create(r->model, r->policy, &o->tp, &r->trainer));
    r->averaging = o->tp.average_decay > 0;
    if (r->h.average) TRY(ram_trainer_set_gradient_hook(r->trainer, r->h.average, r->h.user));
    return 0;
}

/* The files rank 0 will write: discovered unwritable now, not after an epoch. */
static int check_outputs(run *r) {
    const train_options *o = r->o;
    return file_check_writable(r->prog, "--out", o->out) ||
                   file_check_writable(r->prog, "--checkpoint", o->checkpoint)
               ? -1
               : 0;
}

/* The run's state: fresh, or --resume's (every rank's, when distributed). */
static int start(run *r) {
    train_options *o = r->o;
    const train_data want = r->st.data;
    if (r->h.start) {
        if (r->h.start(r->trainer, r->policy, o, &r->st, r->h.user)) return -1;
    } else if (o->resume) {
        size_t len = 0;
        TRY(ram_trainer_load_checkpoint(r->trainer, o->resume, &r->st, sizeof r->st, &len));
        if (train_check_resumed(r->prog, o->resume, len, &r->st, &want)) return -1;
    }
    if (!o->resume || r->h.rank != 0) return 0;
    /* The best model so far is in the first run's --out: a resume that
     * names another file would never have it there. */
    if (r->st.best_val < 1.0 && !file_exists(o->out)) {
        fprintf(stderr,
                "%s: --out %s does not exist, but the best model of the run that wrote %s "
                "(validation error %.2f%%) is in that run's --out: give that file, or copy it "
                "to %s\n",
                r->prog, o->out, o->resume, 100 * r->st.best_val, o->out);
        return -1;
    }
    if (r->st.best_val > 1.0)
        fprintf(stderr, "resumed from %s: %d epochs done, none validated\n", o->resume,
                r->st.epoch);
    else if (r->st.best_val < 0.0)
        fprintf(stderr, "resumed from %s: %d epochs done (no validation)\n", o->resume,
                r->st.epoch);
    else
        fprintf(stderr, "resumed from %s: %d epochs done, best validation error %.2f%%\n",
                o->resume, r->st.epoch, 100 * r->st.best_val);
    return 0;
}

/* The run in a line, and what augments its training images. */
static void print_header(const run *r) {
    const train_options *o = r->o;
    char augment[192] = ""; /* at most about 135 */
    if (o->shift || o->rotate > 0 || o->zoom > 0 || o->flip || o->clutter >= 0) {
        int used = snprintf(augment, sizeof augment, " (training images");
        if (o->clutter >= 0)
            used += snprintf(augment + used, sizeof augment - used,
                             " and validation with %d of %d clutter pieces,", o->clutter,
                             dataset_pieces(o->dataset));
        if (o->shift)
            used +=
                snprintf(augment + used, sizeof augment - used, " shifted by <= %d px,", o->shift);
        if (o->rotate > 0)
            used += snprintf(augment + used, sizeof augment - used, " rotated by <= %g deg,",
                             (double)o->rotate);
        if (o->zoom > 0)
            used += snprintf(augment + used, sizeof augment - used, " scaled by 1 +- %g,",
                             (double)o->zoom);
        if (o->flip) used += snprintf(augment + used, sizeof augment - used, " mirrored,");
        snprintf(augment + used - 1, sizeof augment - used + 1, ")");
    }
    if (r->distributed)
        fprintf(stderr, "%d ranks, batch %d per rank (%ld per step), %ld steps per epoch\n",
                r->h.ranks, o->batch, (long)o->batch * r->h.ranks, r->steps);
    fprintf(stderr,
            "libram %s: %s %dx%d, %zu parameters, %d glimpses of %dx%d x%d, %s core; %d train / "
            "%d validation images%s, batch %d, %d threads%s\n",
            ram_version_string(), data_name(r), r->height, r->width,
            ram_model_param_count(r->model), o->mp.glimpses, o->mp.glimpse.patch,
            o->mp.glimpse.patch, o->mp.glimpse.depth, o->mp.core == RAM_CORE_LSTM ? "LSTM" : "RNN",
            r->n_train, o->val, augment, o->batch, o->threads,
            o->tp.products == RAM_PRODUCTS_BF16 ? ", bfloat16 products" : "");
    if (o->mp.sensor == RAM_SENSOR_SOFT)
        fprintf(stderr, "soft sensor: %s%s\n",
                o->pp.soft_training == RAM_SOFT_HYBRID
                    ? "sampled locations, REINFORCE plus backpropagation through the sensor"
                    : "mean locations, trained by backpropagation through the sensor",
                o->pp.soft_detach_core ? " into the location network alone (--detach-soft)" : "");
    if (o->mp.conv_channels > 0)
        fprintf(stderr,
                "convolutional layer: %d channels, %dx%d filters at stride %d, before the "
                "glimpse network\n",
                o->mp.conv_channels, o->mp.conv_kernel, o->mp.conv_kernel, o->mp.conv_stride);
    if (o->mp.zoom_max > 0)
        fprintf(stderr,
                "zoom: each glimpse's squares times a factor in [%g, %g] chosen by the policy\n",
                (double)o->mp.zoom_min, (double)o->mp.zoom_max);
    if (o->init && !o->resume)
        fprintf(stderr, "starting from the weights of %s (optimizer and baseline afresh)%s%s\n",
                o->init, init_retimes(o) ? ", the glimpses counted as above" : "",
                r->resensed ? ", its hard sensor's weights read by the soft one" : "");
}

/* --log: a new file, or appended to when resuming if its columns are this run's.
 * A resume that logs to a new (or empty) file starts it with the header, so
 * that the CSV of a continued run reads like any other. */
static int open_log(run *r) {
    const train_options *o = r->o;
    static const char header[] = "epoch,seconds,train_error,val_error,lr,nll,reward,baseline";
    char want[256];
    snprintf(want, sizeof want, "%s%s\n", header, r->averaging ? ",val_error_last" : "");
    int fresh = 1;
    if (r->st.epoch > 0) {
        char line[256];
        FILE *old = fopen(o->log, "r");
        const int empty = !old || !fgets(line, sizeof line, old);
        const int same = !empty && !strcmp(line, want);
        if (old) fclose(old);
        fresh = empty;
        if (!empty && !same) {
            fprintf(stderr,
                    "%s: %s has other columns than this run writes (--average %s): resume "
                    "with the options of the run that wrote it, or log to another file\n",
                    r->prog, o->log, r->averaging ? "on" : "off");
            return -1;
        }
    }
    r->log = fopen(o->log, fresh ? "w" : "a");
    if (!r->log) {
        fprintf(stderr, "%s: %s: %s\n", r->prog, o->log, strerror(errno));
        return -1;
    }
    if (fresh) fputs(want, r->log);
    return 0;
}

static int alloc_batches(run *r) {
    const train_options *o = r->o;
    const int warp = o->rotate > 0 || o->zoom > 0;
    r->perm = alloc(r, sizeof(int) * r->n_train);
    if (r->from_folder && r->folder.streamed) /* the loader's slots */
        return r->perm && (!warp || (r->warped = alloc(r, sizeof(float) * r->pixels))) &&
                       (r->plain = alloc(r, sizeof(float) * r->pixels))
                   ? 0
                   : -1;
    r->batch_labels = alloc(r, sizeof(int) * o->batch * r->objects);
    if (r->bytes) {
        r->batch_bytes = alloc(r, (size_t)o->batch * r->pixels);
        r->batch_each = alloc(r, sizeof *r->batch_each * o->batch);
        r->own = (loader_batch){r->batch_bytes, r->batch_each, r->batch_labels};
        return r->perm && r->batch_bytes && r->batch_each && r->batch_labels ? 0 : -1;
    }
    r->batch_images = alloc(r, sizeof(float) * o->batch * r->pixels);
    r->own = (loader_batch){r->batch_images, NULL, r->batch_labels};
    if (warp) r->warped = alloc(r, sizeof(float) * r->pixels); /* >= 28 x 28 unless mnist */
    if (r->from_folder) r->plain = alloc(r, sizeof(float) * r->pixels);
    return r->perm && r->batch_images && r->batch_labels && (!warp || r->warped) &&
                   (!r->from_folder || r->plain)
               ? 0
               : -1;
}

/* An image folder's images slice[0..n) into images and labels, as
 * fill_batch does for plain images, each channel moved and warped alike:
 * how many could be read (a streamed file can fail: passed over with
 * --on-bad skip, and counted), or -1. */
static int fill_folder_batch(run *r, const int *slice, int n, uint64_t seed, float *images,
                             int *labels) {
    const train_options *o = r->o;
    const int warp = o->rotate > 0 || o->zoom > 0, h = r->height, w = r->width;
    const size_t plane = (size_t)h * w;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const int k = slice[i];
        float *dst = images + (size_t)kept * r->pixels;
        const int got = folder_image(&r->folder, k, warp || o->shift ? r->plain : dst);
        if (got < 0) return -1;
        r->skipped_now += got;
        if (got) continue;
        labels[kept++] = r->labels[k];
        for (int c = 0; c < r->channels && (warp || o->shift); c++) {
            const float *src = r->plain + c * plane;
            if (warp)
                dataset_warp(src, h, w, o->rotate, o->zoom, seed, k,
                             o->shift ? r->warped : dst + c * plane);
            if (o->shift)
                dataset_shift_copy(warp ? r->warped : src, h, w, o->shift, seed, k,
                                   dst + c * plane);
        }
        if (o->flip) dataset_flip(dst, r->channels, h, w, seed, k);
    }
    return kept;
}

/* fill_folder_batch() as bytes: b->each[i] points at image i's bytes,
 * in the set or in b->images. */
static int fill_bytes_batch(run *r, const int *slice, int n, loader_batch *b) {
    unsigned char *room = b->images;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const int k = slice[i];
        const int got =
            folder_image_u8(&r->folder, k, room + (size_t)kept * r->pixels, &b->each[kept]);
        if (got < 0) return -1;
        r->skipped_now += got;
        if (!got) b->labels[kept++] = r->labels[k];
    }
    return kept;
}

/* Training images slice[0..n) of this epoch (its seed) into b: how many
 * (fewer when a streamed file was skipped), or -1. */
static int fill_batch(run *r, const int *slice, int n, uint64_t seed, loader_batch *b) {
    const train_options *o = r->o;
    if (r->bytes) return fill_bytes_batch(r, slice, n, b);
    float *images = b->images;
    int *labels = b->labels;
    if (r->from_folder) return fill_folder_batch(r, slice, n, seed, images, labels);
    const int mnist = o->dataset == DATASET_MNIST, warp = o->rotate > 0 || o->zoom > 0;
    const int h = r->height, w = r->width, n_digits = r->n_all - o->val;
    for (int i = 0; i < n; i++) {
        int k = slice[i];
        float *dst = images + (size_t)i * r->pixels;
        if (warp) { /* the digit itself, before it is shifted or placed; a plain
                     * image that is not shifted is warped straight into the batch */
            const int dh = mnist ? h : 28, dw = mnist ? w : 28;
            dataset_warp(r->images + (size_t)k * dh * dw, dh, dw, o->rotate, o->zoom, seed, k,
                         mnist && !o->shift ? dst : r->warped);
        }
        if (o->shift) /* plain MNIST only (checked): moved as it is copied */
            dataset_shift_copy(warp ? r->warped : r->images + (size_t)k * r->pixels, h, w, o->shift,
                               seed, k, dst);
        else if (!mnist) /* clutter comes from training digits only (not validation) */
            dataset_make_some(o->dataset, r->images, r->labels, n_digits, k,
                              warp ? r->warped : NULL, o->clutter, seed, dst);
        else if (!warp)
            dataset_image(o->dataset, r->images, r->labels, r->pixels, n_digits, k, seed, dst);
        if (o->flip) dataset_flip(dst, 1, h, w, seed, k);
        if (r->objects > 1)
            dataset_digit_labels(o->dataset, r->labels, n_digits, k, seed,
                                 labels + (size_t)i * r->objects);
        else
            labels[i] = dataset_label(o->dataset, r->labels, n_digits, k, seed);
    }
    return n;
}

/* The images of step b of the epoch: *n of them from the returned slice
 * of the permutation (distributed: this rank's part of global batch b). */
static const int *batch_slice(const run *r, long b, int *n) {
    const int ranks = r->distributed ? r->h.ranks : 1, batch = r->o->batch;
    *n = r->distributed || b + 1 < r->steps ? batch : (int)(r->n_train - b * batch);
    return r->perm + (b * ranks + r->h.rank) * batch;
}

/* The loader thread's work: step b's batch. */
static int fill_step(void *user, long b, loader_batch *lb) {
    run *r = user;
    int n;
    const int *slice = batch_slice(r, b, &n);
    return fill_batch(r, slice, n, r->seed_now, lb);
}

/* Step b's batch: the loader's, or made here. */
static int next_batch(run *r, long b, const loader_batch **out, int *n) {
    if (r->loader) return loader_next(r->loader, out, n) ? -1 : 0;
    int want, next;
    const int *slice = batch_slice(r, b, &want);
    /* A mapped array is read here, where the training threads wait for it
     * (converting bytes costs less than a thread of its own on the same
     * cores); the pages of the next batch are asked for meanwhile. */
    if (r->from_folder && b + 1 < r->steps) {
        const int *ahead = batch_slice(r, b + 1, &next);
        folder_prefetch(&r->folder, ahead, next);
    }
    *n = fill_batch(r, slice, want, r->seed_now, &r->own);
    *out = &r->own;
    return *n < 0 ? -1 : 0;
}

/* One epoch's steps; `last` gets the last step's report. */
static int train_epoch(run *r, double t0, epoch_sums *e, ram_train_stats *last) {
    const train_options *o = r->o;
    r->seed_now = o->seed * 1000003u + r->st.epoch; /* this epoch's images */
    r->skipped_now = 0;
    const int ranks = r->distributed ? r->h.ranks : 1;
    progress pr;
    progress_start(&pr, o->quiet, t0);
    TRY(ram_trainer_shuffle(r->trainer, r->perm, r->n_train));
    if (r->from_folder && r->folder.streamed &&
        loader_start(r->prog, o->prefetch, o->batch,
                     (r->bytes ? 1 : sizeof(float)) * (size_t)r->pixels, r->steps, fill_step, r,
                     &r->loader))
        return -1;
    for (long b = 0; b < r->steps; b++) {
        const loader_batch *batch;
        int n;
        if (next_batch(r, b, &batch, &n)) return -1;
        if (n == 0) continue; /* every image of the batch was skipped */
        /* Bytes come from 8-bit files, which hold one object an image. */
        TRY(r->bytes
                ? ram_trainer_train_batch_u8_ptrs(r->trainer, batch->each, batch->labels, n, last)
            : r->objects > 1
                ? ram_trainer_train_batch_seq(r->trainer, batch->images, batch->labels, n, last)
                : ram_trainer_train_batch(r->trainer, batch->images, batch->labels, n, last));
        e->wrong += lround((1 - last->accuracy) * n);
        e->seen += n;
        e->nll += last->nll * n;
        e->reward += last->reward * n;
        e->base += last->baseline * n;
        const double t = clock_seconds();
        if (progress_due(&pr, t)) {
            /* this rank's figures, scaled to the whole job */
            const double rate = e->seen * ranks / (t - t0), done = e->seen * ranks;
            const double total = r->distributed ? (double)r->steps * o->batch * ranks : r->n_train;
            char eta[32];
            clock_format((total - done) / rate, eta, sizeof eta);
            fprintf(stderr,
                    "%sepoch %d/%d %5.1f%%  %6.0f samples/s  ETA %s  nll %.3f  train err "
                    "%.2f%%  reward %.3f  baseline %.3f%s",
                    progress_lead(&pr), r->st.epoch + 1, o->epochs, 100.0 * done / total, rate, eta,
                    e->nll / e->seen, 100.0 * e->wrong / e->seen, e->reward / e->seen,
                    e->base / e->seen, progress_tail(&pr));
        }
        if (o->time_budget > 0 && r->st.elapsed + (t - t0) > o->time_budget) {
            r->stopped = 1;
            break;
        }
    }
    loader_free(r->loader);
    r->loader = NULL;
    if (r->skipped_now)
        fprintf(stderr, "%s%s: skipped %d unreadable image%s this epoch (--on-bad skip)\n",
                isatty(2) && !o->quiet ? "\n" : "", r->prog, r->skipped_now,
                r->skipped_now == 1 ? "" : "s");
    return 0;
}

/* The error on the n validation images made (floats or bytes). */
static ram_status val_error(run *r, const int *labels, int n, double *err) {
    if (r->bytes) return ram_trainer_evaluate_u8_ptrs(r->trainer, r->val_each, labels, n, err);
    return r->objects > 1
               ? ram_trainer_evaluate_seq(r->trainer, r->val_images, labels, n, err, NULL)
               : ram_trainer_evaluate(r->trainer, r->val_images, labels, n, err);
}

/* The validation error of the trainer's current weights, in chunks when
 * the images are made at each evaluation. */
static int evaluate(run *r, double *err) {
    const int val = r->o->val;
    if (r->val_chunk == val && r->val_loaded > 0) {
        TRY(val_error(r, r->val_labels, r->val_loaded, err));
        return 0;
    }
    double wrong = 0, seen = 0;
    for (int first = 0; first < val; first += r->val_chunk) {
        const int want = val - first < r->val_chunk ? val - first : r->val_chunk;
        const int n = fill_val(r, r->val_first + first, want, r->val_owned);
        if (n < 0) return -1;
        double e = 0;
        if (n > 0) TRY(val_error(r, r->val_owned, n, &e));
        wrong += e * n;
        seen += n;
    }
    *err = seen > 0 ? wrong / seen : 1.0;
    return 0;
}

/* The validation error of the weights (*last) and of the model kept (*val:
 * the average's with --average), which is saved to --out when it is best. */
static int validate(run *r, double *last, double *val, int *best) {
    const train_options *o = r->o;
    if (o->val == 0) { /* nothing to validate on: every epoch's model replaces the last */
        *last = *val = TRAIN_NOT_VALIDATED;
        *best = 1;
        if (r->averaging) TRY(ram_trainer_swap_average(r->trainer));
        const ram_status s = ram_model_save(r->model, o->out);
        if (r->averaging) TRY(ram_trainer_swap_average(r->trainer));
        TRY(s);
        return 0;
    }
    if (evaluate(r, last)) return -1;
    *val = *last;
    if (!r->averaging) {
        *best = *val < r->st.best_val;
        if (*best) TRY(ram_model_save(r->model, o->out));
        return 0;
    }
    TRY(ram_trainer_swap_average(r->trainer)); /* the average in */
    const int e1 = evaluate(r, val);
    *best = !e1 && *val < r->st.best_val;
    ram_status s2 = *best ? ram_model_save(r->model, o->out) : RAM_OK;
    TRY(ram_trainer_swap_average(r->trainer)); /* the trained weights back */
    if (e1) return -1;
    TRY(s2);
    return 0;
}

/* Rank 0 after an epoch: validate, keep the best, print, log, checkpoint. */
static int end_epoch(run *r, const epoch_sums *e, const ram_train_stats *s, double t0) {
    double val_last, val_err;
    int best;
    if (validate(r, &val_last, &val_err, &best)) return -1;
    if (best) r->st.best_val = val_err;
    const double dt = clock_seconds() - t0;
    r->st.elapsed += dt;
    char el[32], val_txt[16] = "      -", last_txt[40] = "", val_csv[16] = "", last_csv[16] = "";
    clock_format(r->st.elapsed, el, sizeof el);
    const int validated = r->o->val > 0; /* --val 0: the columns stay empty */
    if (validated) {
        snprintf(val_txt, sizeof val_txt, "%6.2f%%", 100 * val_err);
        snprintf(val_csv, sizeof val_csv, "%.5f", val_err);
        snprintf(last_csv, sizeof last_csv, "%.5f", val_last);
        if (r->averaging)
            snprintf(last_txt, sizeof last_txt, "  (last weights %.2f%%)", 100 * val_last);
    }
    fprintf(stderr,
            "%sepoch %3d  train err %6.2f%%  val err %s%s%s  nll %.4f  reward %.3f  lr "
            "%.2e  %.1fs  (total %s)%s\n",
            isatty(2) && !r->o->quiet ? "\r" : "", r->st.epoch + 1, 100.0 * e->wrong / e->seen,
            val_txt, best && validated ? " *" : "  ", last_txt, e->nll / e->seen,
            e->reward / e->seen, s->lr, dt, el, r->stopped ? "  [time budget reached]" : "");
    if (r->log) {
        fprintf(r->log, "%d,%.3f,%.5f,%s,%.3g,%.5f,%.5f,%.5f", r->st.epoch + 1, r->st.elapsed,
                e->wrong / e->seen, val_csv, s->lr, e->nll / e->seen, e->reward / e->seen,
                e->base / e->seen);
        if (r->averaging) fprintf(r->log, ",%s", last_csv);
        fputc('\n', r->log);
        fflush(r->log);
    }
    train_state next = r->st;
    next.epoch++;
    TRY(ram_trainer_save_checkpoint(r->trainer, r->o->checkpoint, &next, sizeof next));
    return 0;
}

static int epochs(run *r) {
    for (; r->st.epoch < r->o->epochs && !r->stopped; r->st.epoch++) {
        const double t0 = clock_seconds();
        epoch_sums e = {0};
        ram_train_stats s = {0};
        if (train_epoch(r, t0, &e, &s)) return -1;
        if (r->h.sum) { /* the whole job's figures */
            double v[5] = {e.wrong, e.seen, e.nll, e.reward, e.base};
            r->h.sum(v, 5, r->h.user);
            e = (epoch_sums){v[0], v[1], v[2], v[3], v[4]};
        }
        if (r->h.rank != 0) { /* rank 0 evaluates and writes */
            r->st.elapsed += clock_seconds() - t0;
            continue;
        }
        if (end_epoch(r, &e, &s, t0)) return -1;
    }
    if (r->h.rank == 0 && r->o->epochs > 0) {
        const long peak = file_peak_memory_kb();
        char mem[64] = "";
        if (peak > 0) snprintf(mem, sizeof mem, "; peak memory %.0f MB", peak / 1024.0);
        if (r->st.best_val > 1.0)
            fprintf(stderr, "no epoch was validated: no model in %s%s\n", r->o->out, mem);
        else if (r->st.best_val < 0.0)
            fprintf(stderr, "no validation: the last epoch's model in %s%s\n", r->o->out, mem);
        else
            fprintf(stderr, "best validation error %.2f%%, model in %s%s\n", 100 * r->st.best_val,
                    r->o->out, mem);
    }
    return 0;
}

/* Image i of the validation images at hand (after fill_val(), or all of
 * them) as floats into dst. */
static void val_image(const run *r, int i, float *dst) {
    if (!r->bytes) {
        memcpy(dst, r->val_images + (size_t)i * r->pixels, sizeof(float) * r->pixels);
        return;
    }
    for (int v = 0; v < r->pixels; v++)
        dst[v] = (float)r->val_each[i][v] / 255.0f;
}

/* The kept model on the validation images, taking every glimpse and
 * stopping where its unit says: printed, errors and mean glimpses. */
static int judge_stop(run *r, const ram_model *m, ram_state *st, float *images, int chunk) {
    const int val = r->o->val;
    int *labels = alloc(r, sizeof(int) * chunk * 3), *got = labels + chunk, *steps = got + chunk;
    if (!labels) return -1;
    double wrong_all = 0, wrong = 0, glimpses = 0, seen = 0;
    ram_model_params p;
    ram_model_params_init(&p);
    ram_model_get_params(m, &p);
    for (int first = 0; first < val;) {
        int n;
        const int *truth;
        if (r->val_chunk == val && r->val_loaded > 0) { /* all in memory */
            n = r->val_loaded - first < chunk ? r->val_loaded - first : chunk;
            truth = r->val_labels + first;
            for (int i = 0; i < n; i++)
                val_image(r, first + i, images + (size_t)i * r->pixels);
            first = n > 0 ? first + n : val;
        } else { /* made chunk by chunk */
            const int want = val - first < chunk ? val - first : chunk;
            const int step = want < r->val_chunk ? want : r->val_chunk;
            n = fill_val(r, r->val_first + first, step, r->val_owned);
            if (n < 0) break;
            truth = r->val_owned;
            for (int i = 0; i < n; i++)
                val_image(r, i, images + (size_t)i * r->pixels);
            first += step;
        }
        if (n <= 0) continue;
        ram_status s = ram_model_classify(m, st, images, n, got, NULL, NULL);
        for (int i = 0; !s && i < n; i++)
            wrong_all += got[i] != truth[i];
        if (!s) s = ram_model_classify_stop_unit(m, st, images, n, got, NULL, steps);
        if (s) {
            fprintf(stderr, "%s: %s: %s\n", r->prog, ram_status_string(s), ram_last_error());
            seen = 0;
            break;
        }
        for (int i = 0; i < n; i++) {
            wrong += got[i] != truth[i];
            glimpses += steps[i];
        }
        seen += n;
    }
    free(labels);
    if (seen < 1) return -1;
    fprintf(stderr,
            "stop unit on the %.0f validation images: %.2f%% error with %.2f glimpses on average, "
            "against %.2f%% with all %d (%.0f%% fewer glimpses)\n",
            seen, 100 * wrong / seen, glimpses / seen, 100 * wrong_all / seen, p.glimpses,
            100 * (1 - glimpses / seen / p.glimpses));
    return 0;
}

/* --stop-cost: a stop unit (ram_model_fit_stop()) fitted to the model kept
 * in --out (with --epochs 0, --init's) on the training images as an
 * evaluation sees them (epoch 1's placement, no --shift, --rotate, --zoom
 * or --flip), judged on the validation images, and saved with the model in
 * --out. */
static int fit_stop(run *r) {
    train_options *o = r->o;
    ram_model *kept = NULL;
    if (o->epochs > 0) {
        if (r->st.best_val > 1.0) return 0; /* nothing kept (said) */
        TRY(ram_model_load(o->out, &kept));
    }
    ram_model *m = kept ? kept : r->model;
    ram_model_params p;
    ram_model_params_init(&p);
    ram_model_get_params(m, &p);
    const int chunk = o->batch, T = p.glimpses, K = p.classes;
    const int shift = o->shift, flip = o->flip;
    const float rotate = o->rotate, zoom = o->zoom;
    o->shift = o->flip = 0; /* the images as an evaluation sees them */
    o->rotate = o->zoom = 0;
    float *probs = alloc(r, sizeof(float) * r->n_train * T * K);
    float *images = alloc(r, sizeof(float) * chunk * r->pixels);
    int *labels = alloc(r, sizeof(int) * (r->n_train + 2 * chunk)), *slice = labels + r->n_train;
    /* bytes: room for the images not kept as they are, and where each is */
    unsigned char *room = r->bytes ? alloc(r, (size_t)chunk * r->pixels) : NULL;
    const unsigned char **each = r->bytes ? alloc(r, sizeof *each * chunk) : NULL;
    ram_state *st = NULL;
    int rc = probs && images && labels && (!r->bytes || (room && each)) ? 0 : -1;
    ram_status s = rc ? RAM_OK : ram_state_create_threads(m, chunk, o->threads, &st);
    const double t0 = clock_seconds();
    int seen = 0;
    for (int first = 0; !rc && !s && first < r->n_train; first += chunk) {
        const int want = r->n_train - first < chunk ? r->n_train - first : chunk;
        for (int i = 0; i < want; i++)
            slice[i] = first + i;
        loader_batch b = r->bytes ? (loader_batch){room, each, slice + chunk}
                                  : (loader_batch){images, NULL, labels + seen};
        const int n = fill_batch(r, slice, want, o->seed * 1000003u, &b);
        if (n < 0) rc = -1;
        for (int i = 0; r->bytes && i < n; i++) {
            labels[seen + i] = b.labels[i];
            for (int v = 0; v < r->pixels; v++)
                images[(size_t)i * r->pixels + v] = (float)b.each[i][v] / 255.0f;
        }
        if (n > 0) s = ram_model_step_probs(m, st, images, n, probs + (size_t)seen * T * K);
        seen += n > 0 ? n : 0;
    }
    ram_stop_params sp;
    ram_stop_params_init(&sp);
    sp.cost = o->stop_cost;
    sp.seed = o->seed;
    if (!rc && !s) s = ram_model_fit_stop(m, probs, labels, seen, &sp);
    if (!rc && !s)
        fprintf(stderr, "stop unit fitted at cost %g on %d training images (%.1f s)\n",
                (double)o->stop_cost, seen, clock_seconds() - t0);
    o->shift = shift, o->flip = flip, o->rotate = rotate, o->zoom = zoom;
    if (!rc && !s && o->val > 0 && judge_stop(r, m, st, images, chunk)) rc = -1;
    if (!rc && !s) s = ram_model_save(m, o->out);
    if (s) {
        fprintf(stderr, "%s: --stop-cost: %s: %s\n", r->prog, ram_status_string(s),
                ram_last_error());
        rc = -1;
    }
    if (!rc) fprintf(stderr, "model with its stop unit in %s\n", o->out);
    ram_state_free(st);
    ram_model_free(kept);
    free(probs);
    free(images);
    free(labels);
    free(room);
    free(each);
    return rc;
}

/* The clutter pieces --clutter leaves out of each image (0 without it). */
static int32_t clutter_left_out(const train_options *o) {
    return o->clutter < 0 ? 0 : dataset_pieces(o->dataset) - o->clutter;
}

static int steps(run *r) {
    const train_options *o = r->o;
    if (load_data(r) || make_trainer(r)) return -1;
    if (r->h.rank == 0 && check_outputs(r)) return -1;
    /* best_val above any error: the first validated epoch is kept, even at
     * 100 % (TRAIN_NO_BEST). */
    r->st = (train_state){0,
                          TRAIN_NO_BEST,
                          0.0,
                          {o->dataset, o->shift, o->val, r->n_train, o->seed, o->rotate, o->zoom,
                           o->batch, o->threads, o->flip, clutter_left_out(o)}};
    if (start(r)) return -1;
    if (r->h.rank == 0) print_header(r);
    if (o->log && open_log(r)) return -1;
    if (alloc_batches(r)) return -1;
    if (epochs(r)) return -1;
    return o->stop_cost >= 0 && r->h.rank == 0 ? fit_stop(r) : 0;
}

int train_run(const tool_info *tool, train_options *o, const train_hooks *hooks) {
    run r = {.prog = tool->name, .o = o, .h = {.rank = 0, .ranks = 1}};
    static char colour_images[4096], colour_labels[4096]; /* o keeps pointers to them */
    if (!o->train_images &&
        idx_colour_split(o->data, "train", colour_images, colour_labels, sizeof colour_images)) {
        o->train_images = colour_images; /* a directory of colour IDX files: their pair */
        o->train_labels = colour_labels;
    }
    r.from_folder = o->train_images || folder_is_images(o->data);
    if (r.from_folder && o->dataset_given) {
        fprintf(stderr, "%s: %s is an image folder: --dataset is for MNIST's IDX files\n",
                tool->name, o->data);
        return TOOL_USAGE;
    }
    if (hooks) {
        r.h = *hooks;
        r.distributed = 1;
    }
    int rc = steps(&r) ? TOOL_FAILED : TOOL_OK;
    loader_free(r.loader); /* before the buffers its thread writes */
    if (r.log) fclose(r.log);
    ram_trainer_free(r.trainer);
    ram_policy_free(r.policy);
    ram_model_free(r.model);
    free(r.images);
    free(r.labels);
    free(r.perm);
    free(r.batch_images);
    free(r.warped);
    free(r.plain);
    folder_free(&r.folder);
    folder_free(&r.val_folder);
    free(r.val_images);
    free(r.val_bytes);
    free(r.val_each);
    free(r.batch_bytes);
    free(r.batch_each);
    free(r.val_owned);
    free(r.batch_labels);
    return rc;
}

int train_check_resumed(const char *prog, const char *path, size_t len, const train_state *got,
                        const train_data *want) {
    if (len != sizeof(train_state) && len != TRAIN_STATE_NO_FLIP && len != TRAIN_STATE_NO_WARP &&
        len != TRAIN_STATE_OLD) {
        fprintf(stderr, "%s: %s was not written by ram-train\n", prog, path);
        return -1;
    }
    if (len == TRAIN_STATE_OLD) return 0;
    train_data had = got->data;
    if (len == TRAIN_STATE_NO_WARP) /* written before --rotate and --zoom existed */
        had.rotate = had.zoom = 0;
    if (len <= TRAIN_STATE_NO_FLIP) /* written before --flip existed */
        had.flip = had.pieces_left = 0;
    if (len == TRAIN_STATE_NO_WARP || had.batch == 0) { /* before batch and threads were kept */
        had.batch = want->batch;
        had.threads = want->threads;
    }
    /* A step's result depends on both: another value cannot continue exactly. */
    const char *option = had.batch != want->batch ? "--batch" : "--threads";
    if (had.batch != want->batch || had.threads != want->threads) {
        const int was = had.batch != want->batch ? had.batch : had.threads;
        const int now = had.batch != want->batch ? want->batch : want->threads;
        fprintf(stderr, "%s: %s was written with %s %d: resume it with %s %d, not %d\n", prog, path,
                option, was, option, was, now);
        return -1;
    }
    if (!memcmp(&had, want, sizeof *want)) return 0;
    char clutter[32] = ""; /* a cluttered set's --clutter */
    const int pieces = dataset_pieces((dataset_kind)had.dataset);
    if (pieces) snprintf(clutter, sizeof clutter, " --clutter %d", pieces - (int)had.pieces_left);
    fprintf(stderr,
            "%s: %s is a run on other images (--dataset %s --shift %d --rotate %g --zoom %g%s%s "
            "--val %d, %d training images, --seed %llu); resume it with those options\n",
            prog, path, dataset_name((dataset_kind)had.dataset), (int)had.shift, (double)had.rotate,
            (double)had.zoom, had.flip ? " --flip" : "", clutter, (int)had.val, (int)had.train,
            (unsigned long long)had.seed);
    return -1;
}
