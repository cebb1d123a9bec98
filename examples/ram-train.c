/* ram-train: train a Recurrent Attention Model on MNIST (IDX files).
 *
 * Keeps the model with the best validation error in --out, writes a
 * checkpoint after every epoch (--resume continues from it exactly), prints a
 * live progress line and one line per epoch, and can log epochs as CSV for
 * plotting.  Uses only the public header.
 *
 * Built with RAM_TRAIN_MPI defined (and MPI), this file is ram-train-mpi:
 * data-parallel training on `mpirun -np N`.  Every rank trains on its own
 * --batch images of each global batch of N x --batch (the epoch's shuffled
 * order is the same on all ranks; the remainder that does not fill a global
 * batch is left out); the gradients are averaged with one MPI_Allreduce of
 * one flat buffer per step, through the trainer's gradient hook, so that the
 * step equals a single process's step on the N x --batch images up to float
 * rounding.  Rank 0 writes an initial checkpoint (or reads --resume) and
 * broadcasts its bytes, so all ranks start from the same parameters and
 * optimizer state, and --resume works with any number of ranks.  Each rank
 * samples locations from its own RNG stream.  Rank 0 evaluates, prints and
 * writes the model and checkpoints.  A failing rank aborts the job. */
#define _POSIX_C_SOURCE 200809L
#include "tool_blas.h"
#include "datasets.h"

#include <ram/ram.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef RAM_TRAIN_MPI
#include <mpi.h>
#define TOOL "ram-train-mpi"
#else
#define TOOL "ram-train"
#endif

typedef struct options {
    const char *data, *out, *checkpoint, *resume, *log;
    const char *init;       /* --init: start from this model's weights and architecture */
    const char *model_flag; /* the last architecture option given, refused with --init */
    dataset_kind dataset;
    int epochs, batch, threads, val, train_limit, decay_epochs, quiet, shift;
    float rotate, zoom; /* training-image augmentation (datasets.h) */
    double time_budget;
    uint64_t seed;
    ram_model_params mp;
    ram_policy_params pp;
    ram_trainer_params tp;
} options;

/* What a run trains on.  A resumed run must see the same images, so
 * --resume refuses other ones (the library checks the architecture). */
typedef struct run_data {
    int32_t dataset, shift, val, train; /* train: training images used */
    uint64_t seed;
    float rotate, zoom; /* not in checkpoints of RUN_STATE_NO_WARP bytes: those had none */
    uint64_t reserved;  /* 0 */
} run_data;

/* Caller state stored in checkpoints next to the trainer's own. */
typedef struct run_state {
    int epoch; /* epochs completed */
    double best_val;
    double elapsed; /* training seconds so far */
    run_data data;  /* not in older checkpoints (RUN_STATE_OLD bytes): those are not checked */
} run_state;
#define RUN_STATE_OLD     offsetof(run_state, data)
#define RUN_STATE_NO_WARP (offsetof(run_state, data) + offsetof(run_data, rotate))

/* 0 if a checkpoint's data are the run's (or the checkpoint predates them). */
static int check_resumed_data(const char *path, size_t len, const run_data *got,
                              const run_data *want) {
    if (len != sizeof(run_state) && len != RUN_STATE_NO_WARP && len != RUN_STATE_OLD) {
        fprintf(stderr, TOOL ": %s was not written by ram-train\n", path);
        return -1;
    }
    if (len == RUN_STATE_OLD) return 0;
    run_data had = *got;
    if (len == RUN_STATE_NO_WARP) { /* written before --rotate and --zoom existed */
        had.rotate = had.zoom = 0;
        had.reserved = 0;
    }
    if (!memcmp(&had, want, sizeof *want)) return 0;
    fprintf(stderr,
            TOOL ": %s is a run on other images (--dataset %s --shift %d --rotate %g --zoom %g "
                 "--val %d, %d training images, --seed %llu); resume it with those options\n",
            path, dataset_name((dataset_kind)had.dataset), (int)had.shift, (double)had.rotate,
            (double)had.zoom, (int)had.val, (int)had.train, (unsigned long long)had.seed);
    return -1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The options that set ram_model_params: with --init they come from the file. */
static int is_model_flag(const char *a) {
    static const char *const names[] = {
        "--glimpses",   "--patch",       "--depth",       "--scale",     "--glimpse-hidden",
        "--loc-hidden", "--glimpse-out", "--hidden",      "--core",      "--form",
        "--bound",      "--std",         "--unit-pixels", "--init-scale"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i])) return 1;
    return 0;
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: " TOOL " [options]\n"
        "data and run:\n"
        "  --data DIR            directory with the four MNIST IDX files (data/mnist)\n"
        "  --dataset NAME        mnist, translated60, cluttered60 or cluttered100 (mnist);\n"
        "                        training images are placed afresh every epoch\n"
        "  --epochs N            epochs (100)            --batch N      batch size (64)\n"
        "  --seed N              seed of init, sampling and shuffling (1)\n"
        "  --threads N           worker threads (2)      --val N        validation images (10000)\n"
        "  --train-limit N       use only the first N training images (all)\n"
        "  --shift N             mnist only: move each training image by up to N pixels\n"
        "                        (0-8; uniform, zeros fill), afresh every epoch (0)\n"
        "  --rotate DEG          rotate each training digit by up to DEG degrees (0-45)\n"
        "  --zoom F              and scale it by 1 - F to 1 + F (0-0.5); both uniform,\n"
        "                        bilinear, afresh every epoch, before it is placed (0)\n"
        "  --time-budget SEC     stop after this many seconds of training (none)\n"
        "  --out FILE            best model by validation error (ram-mnist.ram)\n"
        "  --checkpoint FILE     checkpoint written every epoch (OUT.ckpt)\n"
        "  --resume FILE         continue from a checkpoint: exactly with the same options\n"
        "                        and threads; a larger --epochs stretches the lr decay\n"
        "                        (when it is not set by --decay-epochs)\n"
        "  --init MODEL          start from a saved model's weights (fine-tuning, or a\n"
        "                        run continued without its checkpoint): the model options\n"
        "                        below come from MODEL and may not be given; the\n"
        "                        optimizer and the baseline start afresh; the batch\n"
        "                        order follows MODEL's saved seed (--seed still sets\n"
        "                        sampling, placement and clutter)\n"
        "  --log FILE            per-epoch CSV: epoch,seconds,train_error,val_error,lr,...\n"
        "  --quiet               no live progress line\n"
        "  -h, --help            show this help\n"
        "  --version             show the version\n"
        "model:\n"
        "  --glimpses N (6)  --patch N (8)  --depth N (1)  --scale F (2)\n"
        "  --glimpse-hidden N (128)  --loc-hidden N (128)  --glimpse-out N (256)\n"
        "  --hidden N (256)  --core rnn|lstm (rnn)  --form additive|concat (additive)\n"
        "  --std F (0.17)  --unit-pixels F (13; 0 = image edge)  --bound tanh|hardtanh (tanh)\n"
        "  --init-scale F (0.1)\n"
        "policy:\n"
        "  --baseline linear|scalar|none (linear)  --reward-scale F (1)  --discount F (1)\n"
        "  --reinforce-core      let REINFORCE train the core too (default: location net only)\n"
        "optimizer:\n"
        "  --optim adam|sgd (adam)  --lr F (1e-3)  --lr-final F (= lr)\n"
        "  --decay-epochs N      linear lr decay over N epochs (= epochs)\n"
        "  --momentum F (0.9)  --nesterov  --clip F (5; 0 = off)\n"
        "  --weight-decay F      decoupled weight decay, AdamW style (0 = off)\n"
        "  --average F           keep a moving average of the weights with this decay per\n"
        "                        step, e.g. 0.9998 (0 = off): val err and --out are then\n"
        "                        the average's, and the CSV gains val_error_last, the\n"
        "                        last weights' validation error; --resume with the same F\n"
        "  --beta1 F (0.9)  --beta2 F (0.999)  --adam-eps F (1e-8)\n");
}

static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->data = "data/mnist";
    o->out = "ram-mnist.ram";
    o->epochs = 100;
    o->batch = 64;
    o->threads = 2;
    o->val = 10000;
    o->seed = 1;
    o->decay_epochs = -1;
    ram_model_params_init(&o->mp);
    ram_policy_params_init(&o->pp);
    ram_trainer_params_init(&o->tp);
    float lr_final = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(name) (strcmp(a, name) == 0)
#define NEED()                                                                                     \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(stderr, TOOL ": %s needs a value\n", a);                                       \
            return -1;                                                                             \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
#define INT(dst)                                                                                   \
    do {                                                                                           \
        NEED();                                                                                    \
        char *e;                                                                                   \
        long x = strtol(v, &e, 10);                                                                \
        if (*e || e == v || x < 0 || x > 1000000000) {                                             \
            fprintf(stderr, TOOL ": %s: '%s' is not a valid count\n", a, v);                       \
            return -1;                                                                             \
        }                                                                                          \
        dst = (int)x;                                                                              \
    } while (0)
#define REAL(dst)                                                                                  \
    do {                                                                                           \
        NEED();                                                                                    \
        char *e;                                                                                   \
        double x = strtod(v, &e);                                                                  \
        if (*e || e == v || !isfinite(x)) {                                                        \
            fprintf(stderr, TOOL ": %s: '%s' is not a number\n", a, v);                            \
            return -1;                                                                             \
        }                                                                                          \
        dst = x;                                                                                   \
    } while (0)
#define CHOICE(dst, s1, v1, s2, v2)                                                                \
    do {                                                                                           \
        NEED();                                                                                    \
        if (!strcmp(v, s1))                                                                        \
            dst = v1;                                                                              \
        else if (!strcmp(v, s2))                                                                   \
            dst = v2;                                                                              \
        else {                                                                                     \
            fprintf(stderr, TOOL ": %s must be %s or %s\n", a, s1, s2);                            \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
        double r;
        if (is_model_flag(a)) o->model_flag = a;
        if (FLAG("-h") || FLAG("--help")) {
            usage(stdout);
            exit(0);
        } else if (FLAG("--version")) {
            printf(TOOL " (libram) %s\n", ram_version_string());
            exit(0);
        } else if (FLAG("--data")) {
            NEED();
            o->data = v;
        } else if (FLAG("--dataset")) {
            NEED();
            if (dataset_parse(v, &o->dataset)) {
                fprintf(stderr, TOOL ": unknown dataset '%s'\n", v);
                return -1;
            }
        } else if (FLAG("--out")) {
            NEED();
            o->out = v;
        } else if (FLAG("--checkpoint")) {
            NEED();
            o->checkpoint = v;
        } else if (FLAG("--resume")) {
            NEED();
            o->resume = v;
        } else if (FLAG("--init")) {
            NEED();
            o->init = v;
        } else if (FLAG("--log")) {
            NEED();
            o->log = v;
        } else if (FLAG("--quiet")) {
            o->quiet = 1;
        } else if (FLAG("--epochs"))
            INT(o->epochs);
        else if (FLAG("--batch"))
            INT(o->batch);
        else if (FLAG("--threads"))
            INT(o->threads);
        else if (FLAG("--val"))
            INT(o->val);
        else if (FLAG("--train-limit"))
            INT(o->train_limit);
        else if (FLAG("--shift"))
            INT(o->shift);
        else if (FLAG("--rotate")) {
            REAL(r);
            o->rotate = (float)r;
        } else if (FLAG("--zoom")) {
            REAL(r);
            o->zoom = (float)r;
        } else if (FLAG("--decay-epochs"))
            INT(o->decay_epochs);
        else if (FLAG("--time-budget"))
            REAL(o->time_budget);
        else if (FLAG("--seed")) {
            REAL(r);
            o->seed = (uint64_t)r;
        } else if (FLAG("--glimpses"))
            INT(o->mp.glimpses);
        else if (FLAG("--patch"))
            INT(o->mp.glimpse.patch);
        else if (FLAG("--depth"))
            INT(o->mp.glimpse.depth);
        else if (FLAG("--scale")) {
            REAL(r);
            o->mp.glimpse.scale = (float)r;
        } else if (FLAG("--glimpse-hidden"))
            INT(o->mp.glimpse_hidden);
        else if (FLAG("--loc-hidden"))
            INT(o->mp.loc_hidden);
        else if (FLAG("--glimpse-out"))
            INT(o->mp.glimpse_out);
        else if (FLAG("--hidden"))
            INT(o->mp.core_hidden);
        else if (FLAG("--core"))
            CHOICE(o->mp.core, "rnn", RAM_CORE_RNN, "lstm", RAM_CORE_LSTM);
        else if (FLAG("--form"))
            CHOICE(o->mp.form, "additive", RAM_GLIMPSE_ADDITIVE, "concat", RAM_GLIMPSE_CONCAT);
        else if (FLAG("--bound"))
            CHOICE(o->mp.bound, "tanh", RAM_BOUND_TANH, "hardtanh", RAM_BOUND_HARDTANH);
        else if (FLAG("--std")) {
            REAL(r);
            o->mp.loc_std = (float)r;
        } else if (FLAG("--unit-pixels")) {
            REAL(r);
            o->mp.loc_range_pixels = (float)r;
        } else if (FLAG("--init-scale")) {
            REAL(r);
            o->mp.init_scale = (float)r;
        } else if (FLAG("--baseline")) {
            NEED();
            if (!strcmp(v, "linear"))
                o->pp.baseline = RAM_BASELINE_LINEAR;
            else if (!strcmp(v, "scalar"))
                o->pp.baseline = RAM_BASELINE_SCALAR;
            else if (!strcmp(v, "none"))
                o->pp.baseline = RAM_BASELINE_NONE;
            else {
                fprintf(stderr, TOOL ": --baseline must be linear, scalar or none\n");
                return -1;
            }
        } else if (FLAG("--reward-scale")) {
            REAL(r);
            o->pp.reward_scale = (float)r;
        } else if (FLAG("--discount")) {
            REAL(r);
            o->pp.discount = (float)r;
        } else if (FLAG("--reinforce-core")) {
            o->pp.detach_core = 0;
        } else if (FLAG("--optim"))
            CHOICE(o->tp.optimizer, "adam", RAM_OPT_ADAM, "sgd", RAM_OPT_SGD);
        else if (FLAG("--lr")) {
            REAL(r);
            o->tp.lr = (float)r;
        } else if (FLAG("--lr-final")) {
            REAL(r);
            lr_final = (float)r;
        } else if (FLAG("--momentum")) {
            REAL(r);
            o->tp.momentum = (float)r;
        } else if (FLAG("--beta1")) {
            REAL(r);
            o->tp.beta1 = (float)r;
        } else if (FLAG("--beta2")) {
            REAL(r);
            o->tp.beta2 = (float)r;
        } else if (FLAG("--adam-eps")) {
            REAL(r);
            o->tp.eps = (float)r;
        } else if (FLAG("--nesterov")) {
            o->tp.nesterov = 1;
        } else if (FLAG("--weight-decay")) {
            REAL(r);
            o->tp.weight_decay = (float)r;
        } else if (FLAG("--average")) {
            REAL(r);
            o->tp.average_decay = (float)r;
            if (!(r >= 0 && o->tp.average_decay < 1)) {
                fprintf(stderr, TOOL ": --average must be in [0, 1), e.g. 0.999\n");
                return -1;
            }
        } else if (FLAG("--clip")) {
            REAL(r);
            o->tp.clip_norm = (float)r;
        } else {
            fprintf(stderr, TOOL ": unknown option '%s' (see --help)\n", a);
            return -1;
        }
    }
    if (o->epochs < 1 || o->batch < 1 || o->threads < 1) {
        fprintf(stderr, TOOL ": --epochs, --batch and --threads must be >= 1\n");
        return -1;
    }
    if (o->shift < 0 || o->shift > 8) {
        fprintf(stderr, TOOL ": --shift must be in [0, 8] pixels\n");
        return -1;
    }
    if (!(o->rotate >= 0 && o->rotate <= 45) || !(o->zoom >= 0 && o->zoom <= 0.5f)) {
        fprintf(stderr, TOOL ": --rotate must be in [0, 45] degrees and --zoom in [0, 0.5]\n");
        return -1;
    }
    if (o->init && o->model_flag) {
        fprintf(stderr,
                TOOL ": --init takes the model's architecture, std and range from %s; drop %s\n",
                o->init, o->model_flag);
        return -1;
    }
    if (o->shift && o->dataset != DATASET_MNIST) {
        fprintf(stderr, TOOL ": --shift is for --dataset mnist; the other sets already place "
                             "each digit afresh every epoch\n");
        return -1;
    }
    o->tp.lr_final = lr_final >= 0 ? lr_final : o->tp.lr;
    o->tp.max_batch = o->batch;
    o->tp.threads = o->threads;
    o->mp.seed = o->seed;
    o->pp.seed = o->seed * 0x9e3779b97f4a7c15ULL + 1;
    return 0;
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        ram_status s_ = (call);                                                                    \
        if (s_ != RAM_OK) {                                                                        \
            fprintf(stderr, TOOL ": %s: %s\n", ram_status_string(s_), ram_last_error());           \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Image k of the set: plain IDX images (any size) as they are, the synthetic
 * sets made from 28 x 28 digits. */
static void make_image(dataset_kind kind, const float *images, int pixels, int n, int k,
                       uint64_t seed, float *out) {
    if (kind == DATASET_MNIST)
        memcpy(out, images + (size_t)k * pixels, sizeof(float) * pixels);
    else
        dataset_make(kind, images, n, k, seed, out);
}

static void fmt_time(double s, char *buf, size_t len) {
    if (s < 0 || !isfinite(s)) s = 0;
    int h = (int)(s / 3600), m = (int)(fmod(s, 3600) / 60), sec = (int)fmod(s, 60);
    if (h)
        snprintf(buf, len, "%dh%02dm", h, m);
    else
        snprintf(buf, len, "%dm%02ds", m, sec);
}

#ifdef RAM_TRAIN_MPI
static int mpi_rank = 0, mpi_size = 1;

/* The gradient hook: the mean of all ranks' gradients, in place. */
static ram_status allreduce_mean(float *grad, size_t count, void *user) {
    (void)user;
    if (MPI_Allreduce(MPI_IN_PLACE, grad, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return RAM_ERR_IO;
    const float inv = 1.0f / (float)mpi_size;
    for (size_t i = 0; i < count; i++)
        grad[i] *= inv;
    return RAM_OK;
}

static unsigned char *read_file(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *d = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (d = malloc((size_t)*len)) && fread(d, 1, (size_t)*len, f) != (size_t)*len) {
        free(d);
        d = NULL;
    }
    if (f) fclose(f);
    return d;
}

/* Rank 0's checkpoint (--resume, or one it writes now) to every rank, which
 * loads it: the same parameters, optimizer state and step everywhere. */
static int share_start(ram_trainer *t, ram_policy *pol, const options *o, run_state *st) {
    long len = 0;
    unsigned char *bytes = NULL;
    if (mpi_rank == 0) {
        const char *path = o->resume ? o->resume : o->checkpoint;
        ram_status s = RAM_OK;
        if (!o->resume) s = ram_trainer_save_checkpoint(t, path, st, sizeof *st);
        if (!s) bytes = read_file(path, &len);
        if (s || !bytes) {
            fprintf(stderr, TOOL ": cannot %s %s: %s\n", o->resume ? "read" : "write", path,
                    s ? ram_last_error() : strerror(errno));
            len = -1;
        }
    }
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (len < 0) return -1;
    if (mpi_rank != 0 && !(bytes = malloc((size_t)len))) {
        fprintf(stderr, TOOL ": rank %d: out of memory\n", mpi_rank);
        return -1;
    }
    MPI_Bcast(bytes, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    size_t ulen = 0;
    const run_data want = st->data;
    ram_status s = ram_trainer_load_checkpoint_memory(t, bytes, (size_t)len, st, sizeof *st, &ulen);
    free(bytes);
    if (s) {
        fprintf(stderr, TOOL ": rank %d: %s\n", mpi_rank, ram_last_error());
        return -1;
    }
    if (check_resumed_data(o->resume ? o->resume : o->checkpoint, ulen, &st->data, &want))
        return -1;
    /* Rank 0 keeps the checkpoint's sampling stream; the others draw their
     * own, fresh for every (re)start. */
    if (mpi_rank != 0) ram_policy_seed(pol, o->pp.seed + (uint64_t)st->epoch * 1000003u);
    return 0;
}
#endif

int main(int argc, char **argv) {
#ifdef RAM_TRAIN_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
#endif
    options o;
    if (parse(argc, argv, &o)) {
#ifdef RAM_TRAIN_MPI
        MPI_Finalize();
#endif
        return 2;
    }
#ifdef RAM_TRAIN_MPI
    if (o.time_budget > 0) {
        if (mpi_rank == 0) fprintf(stderr, TOOL ": --time-budget is not supported with MPI\n");
        MPI_Finalize();
        return 2;
    }
    if (mpi_rank != 0) { /* rank 0 speaks and writes for all */
        o.quiet = 1;
        o.log = NULL;
    }
    o.pp.seed += (uint64_t)mpi_rank * 0x632be59bd9b4e019ULL;
#endif
    char ckpt_default[4096];
    if (!o.checkpoint) {
        snprintf(ckpt_default, sizeof ckpt_default, "%s.ckpt", o.out);
        o.checkpoint = ckpt_default;
    }
    tool_blas_init(TOOL, argv); /* one BLAS thread, kernels fit for the CPU */

    float *images = NULL;
    int *labels = NULL, *perm = NULL, *batch_labels = NULL, n_all, h, w, rc = 1;
    float *batch_images = NULL, *val_images = NULL, *warped = NULL;
    ram_model *model = NULL;
    ram_policy *policy = NULL;
    ram_trainer *trainer = NULL;
    FILE *log = NULL;
    if (dataset_load(TOOL, o.data, "train", o.dataset, &images, &labels, &n_all, &h, &w))
        goto fail; /* (with MPI: aborts the job rather than leave ranks waiting) */
    int n_train = n_all - o.val;
    if (o.val < 1 || n_train < 1) {
        fprintf(stderr, TOOL ": --val %d leaves no training images (of %d)\n", o.val, n_all);
        goto fail;
    }
    if (o.train_limit > 0 && o.train_limit < n_train) n_train = o.train_limit;
    /* Validation = the last `val` training images, as in the Torch recipe,
     * placed once with a fixed seed; training images are placed per batch. */
    const int pixels = h * w;
    const int *val_labels = labels + (n_all - o.val);
    val_images = malloc(sizeof(float) * o.val * pixels);
    if (!val_images) {
        fprintf(stderr, TOOL ": out of memory\n");
        goto fail;
    }
    for (int i = 0; i < o.val; i++)
        make_image(o.dataset, images, pixels, n_all, n_all - o.val + i, DATASET_VAL_SEED,
                   val_images + (size_t)i * pixels);
    o.mp.height = h;
    o.mp.width = w;
    o.mp.channels = 1;

    if (o.init) {
        TRY(ram_model_load(o.init, &model));
        TRY(ram_model_get_params(model, &o.mp));
        if (o.mp.height != h || o.mp.width != w || o.mp.channels != 1) {
            fprintf(stderr,
                    TOOL ": %s takes %dx%d images with %d channels; %s has 1-channel %dx%d\n",
                    o.init, o.mp.height, o.mp.width, o.mp.channels, dataset_name(o.dataset), h, w);
            goto fail;
        }
    } else {
        TRY(ram_model_create(&o.mp, &model));
    }
    TRY(ram_policy_create(&o.pp, model, &policy));
#ifdef RAM_TRAIN_MPI
    const long global_batch = (long)o.batch * mpi_size;
    const long steps_per_epoch = n_train / global_batch; /* whole global batches only */
    if (steps_per_epoch < 1) {
        fprintf(stderr, TOOL ": %d training images do not fill one batch of %d x %d ranks\n",
                n_train, o.batch, mpi_size);
        goto fail;
    }
#else
    const long steps_per_epoch = (n_train + o.batch - 1) / o.batch;
#endif
    int decay_epochs = o.decay_epochs >= 0 ? o.decay_epochs : o.epochs;
    o.tp.decay_steps = o.tp.lr_final != o.tp.lr ? decay_epochs * steps_per_epoch : 0;
    TRY(ram_trainer_create(model, policy, &o.tp, &trainer));
    const int averaging = o.tp.average_decay > 0;

    run_state st = {0, 1.0, 0.0, {o.dataset, o.shift, o.val, n_train, o.seed, o.rotate, o.zoom, 0}};
#ifdef RAM_TRAIN_MPI
    TRY(ram_trainer_set_gradient_hook(trainer, allreduce_mean, NULL));
    if (share_start(trainer, policy, &o, &st)) goto fail;
    if (o.resume && mpi_rank == 0)
        fprintf(stderr, "resumed from %s: %d epochs done, best validation error %.2f%%\n", o.resume,
                st.epoch, 100 * st.best_val);
    if (mpi_rank == 0)
        fprintf(stderr, "%d ranks, batch %d per rank (%ld per step), %ld steps per epoch\n",
                mpi_size, o.batch, global_batch, steps_per_epoch);
#else
    if (o.resume) {
        size_t len = 0;
        const run_data want = st.data;
        TRY(ram_trainer_load_checkpoint(trainer, o.resume, &st, sizeof st, &len));
        if (check_resumed_data(o.resume, len, &st.data, &want)) goto fail;
        fprintf(stderr, "resumed from %s: %d epochs done, best validation error %.2f%%\n", o.resume,
                st.epoch, 100 * st.best_val);
    }
#endif
    char augment[160] = ""; /* at most about 90 */
    if (o.shift || o.rotate > 0 || o.zoom > 0) {
        int used = snprintf(augment, sizeof augment, " (training images");
        if (o.shift)
            used +=
                snprintf(augment + used, sizeof augment - used, " shifted by <= %d px,", o.shift);
        if (o.rotate > 0)
            used += snprintf(augment + used, sizeof augment - used, " rotated by <= %g deg,",
                             (double)o.rotate);
        if (o.zoom > 0)
            used += snprintf(augment + used, sizeof augment - used, " scaled by 1 +- %g,",
                             (double)o.zoom);
        snprintf(augment + used - 1, sizeof augment - used + 1, ")");
    }
#ifdef RAM_TRAIN_MPI
    if (mpi_rank == 0)
#endif
    {
        fprintf(
            stderr,
            "libram %s: %s %dx%d, %zu parameters, %d glimpses of %dx%d x%d, %s core; %d train / "
            "%d validation images%s, batch %d, %d threads\n",
            ram_version_string(), dataset_name(o.dataset), h, w, ram_model_param_count(model),
            o.mp.glimpses, o.mp.glimpse.patch, o.mp.glimpse.patch, o.mp.glimpse.depth,
            o.mp.core == RAM_CORE_LSTM ? "LSTM" : "RNN", n_train, o.val, augment, o.batch,
            o.threads);
        if (o.init && !o.resume)
            fprintf(stderr, "starting from the weights of %s (optimizer and baseline afresh)\n",
                    o.init);
    }
    static const char log_header[] = "epoch,seconds,train_error,val_error,lr,nll,reward,baseline";
    if (o.log && st.epoch > 0) { /* appending: the file's columns must be this run's */
        char line[256], want[256];
        snprintf(want, sizeof want, "%s%s\n", log_header, averaging ? ",val_error_last" : "");
        FILE *old = fopen(o.log, "r");
        const int same = old && fgets(line, sizeof line, old) && !strcmp(line, want);
        if (old) fclose(old);
        if (old && !same) {
            fprintf(stderr,
                    TOOL ": %s has other columns than this run writes (--average %s): resume "
                         "with the options of the run that wrote it, or log to another file\n",
                    o.log, averaging ? "on" : "off");
            goto fail;
        }
    }
    if (o.log) {
        log = fopen(o.log, st.epoch > 0 ? "a" : "w");
        if (!log) {
            fprintf(stderr, TOOL ": %s: %s\n", o.log, strerror(errno));
            goto fail;
        }
        if (st.epoch == 0) fprintf(log, "%s%s\n", log_header, averaging ? ",val_error_last" : "");
    }
    perm = malloc(sizeof(int) * n_train);
    batch_images = malloc(sizeof(float) * o.batch * pixels);
    batch_labels = malloc(sizeof(int) * o.batch);
    const int mnist = o.dataset == DATASET_MNIST, warp = o.rotate > 0 || o.zoom > 0;
    warped = warp ? malloc(sizeof(float) * pixels) : NULL; /* pixels >= 28 x 28 unless mnist */
    if (!perm || !batch_images || !batch_labels || (warp && !warped)) {
        fprintf(stderr, TOOL ": out of memory\n");
        goto fail;
    }
    const int tty = isatty(2) && !o.quiet;
    int stopped = 0;
    for (; st.epoch < o.epochs && !stopped; st.epoch++) {
        double t0 = now(), last_print = t0, nll = 0, reward = 0, base = 0;
        long wrong = 0, seen = 0;
        ram_train_stats s = {0};
        const uint64_t seed = o.seed * 1000003u + st.epoch; /* this epoch's images */
        TRY(ram_trainer_shuffle(trainer, perm, n_train));
        for (long b = 0; b < steps_per_epoch; b++) {
#ifdef RAM_TRAIN_MPI
            const int n = o.batch; /* this rank's slice of global batch b */
            const int *slice = perm + (b * mpi_size + mpi_rank) * o.batch;
#else
            int n = (int)(b + 1 < steps_per_epoch ? o.batch : n_train - b * o.batch);
            const int *slice = perm + b * o.batch;
#endif
            for (int i = 0; i < n; i++) {
                int k = slice[i];
                float *dst = batch_images + (size_t)i * pixels;
                if (warp) { /* the digit itself, before it is shifted or placed; a plain
                             * image that is not shifted is warped straight into the batch */
                    const int dh = mnist ? h : 28, dw = mnist ? w : 28;
                    dataset_warp(images + (size_t)k * dh * dw, dh, dw, o.rotate, o.zoom, seed, k,
                                 mnist && !o.shift ? dst : warped);
                }
                if (o.shift) /* plain MNIST only (checked): moved as it is copied */
                    dataset_shift_copy(warp ? warped : images + (size_t)k * pixels, h, w, o.shift,
                                       seed, k, dst);
                else if (warp && !mnist) /* clutter from training digits only, as below */
                    dataset_make_with(o.dataset, images, n_all - o.val, k, warped, seed, dst);
                else if (!warp) /* clutter comes from training digits only (not validation) */
                    make_image(o.dataset, images, pixels, n_all - o.val, k, seed, dst);
                batch_labels[i] = labels[k];
            }
            TRY(ram_trainer_train_batch(trainer, batch_images, batch_labels, n, &s));
            wrong += lround((1 - s.accuracy) * n);
            seen += n;
            nll += s.nll * n;
            reward += s.reward * n;
            base += s.baseline * n;
            double t = now();
            if (!o.quiet && t - last_print > (tty ? 0.5 : 30.0)) {
#ifdef RAM_TRAIN_MPI
                /* rank 0's figures, scaled to the whole job */
                double rate = seen * mpi_size / (t - t0);
                const double total = (double)steps_per_epoch * global_batch, done = seen * mpi_size;
#else
                double rate = seen / (t - t0);
                const double total = n_train, done = seen;
#endif
                char eta[32];
                fmt_time((total - done) / rate, eta, sizeof eta);
                fprintf(stderr,
                        "%sepoch %d/%d %5.1f%%  %6.0f samples/s  ETA %s  nll %.3f  train err "
                        "%.2f%%  reward %.3f  baseline %.3f%s",
                        tty ? "\r" : "", st.epoch + 1, o.epochs, 100.0 * done / total, rate, eta,
                        nll / seen, 100.0 * wrong / seen, reward / seen, base / seen,
                        tty ? "   " : "\n");
                last_print = t;
            }
            if (o.time_budget > 0 && st.elapsed + (t - t0) > o.time_budget) {
                stopped = 1;
                break;
            }
        }
#ifdef RAM_TRAIN_MPI
        {
            double sums[5] = {(double)wrong, (double)seen, nll, reward, base};
            MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            wrong = (long)sums[0];
            seen = (long)sums[1];
            nll = sums[2];
            reward = sums[3];
            base = sums[4];
        }
        if (mpi_rank != 0) { /* rank 0 evaluates and writes */
            st.elapsed += now() - t0;
            continue;
        }
#endif
        /* With --average the average is validated, and kept when best; the
         * last weights' error is printed next to it. */
        double val_last;
        TRY(ram_trainer_evaluate(trainer, val_images, val_labels, o.val, &val_last));
        double val_err = val_last;
        int best;
        if (averaging) {
            TRY(ram_trainer_swap_average(trainer)); /* the average in */
            ram_status s1 = ram_trainer_evaluate(trainer, val_images, val_labels, o.val, &val_err);
            best = !s1 && val_err < st.best_val;
            ram_status s2 = best ? ram_model_save(model, o.out) : RAM_OK;
            TRY(ram_trainer_swap_average(trainer)); /* the trained weights back */
            TRY(s1);
            TRY(s2);
        } else {
            best = val_err < st.best_val;
            if (best) TRY(ram_model_save(model, o.out));
        }
        if (best) st.best_val = val_err;
        double dt = now() - t0;
        st.elapsed += dt;
        char el[32], last_txt[40] = "";
        fmt_time(st.elapsed, el, sizeof el);
        if (averaging)
            snprintf(last_txt, sizeof last_txt, "  (last weights %.2f%%)", 100 * val_last);
        fprintf(stderr,
                "%sepoch %3d  train err %6.2f%%  val err %6.2f%%%s%s  nll %.4f  reward %.3f  lr "
                "%.2e  %.1fs  (total %s)%s\n",
                tty ? "\r" : "", st.epoch + 1, 100.0 * wrong / seen, 100 * val_err,
                best ? " *" : "  ", last_txt, nll / seen, reward / seen, s.lr, dt, el,
                stopped ? "  [time budget reached]" : "");
        if (log) {
            fprintf(log, "%d,%.1f,%.5f,%.5f,%.3g,%.5f,%.5f,%.5f", st.epoch + 1, st.elapsed,
                    (double)wrong / seen, val_err, s.lr, nll / seen, reward / seen, base / seen);
            if (averaging) fprintf(log, ",%.5f", val_last);
            fputc('\n', log);
            fflush(log);
        }
        run_state next = st;
        next.epoch++;
        TRY(ram_trainer_save_checkpoint(trainer, o.checkpoint, &next, sizeof next));
    }
#ifdef RAM_TRAIN_MPI
    if (mpi_rank == 0)
#endif
        fprintf(stderr, "best validation error %.2f%%, model in %s\n", 100 * st.best_val, o.out);
    rc = 0;
fail:
    if (log) fclose(log);
    ram_trainer_free(trainer);
    ram_policy_free(policy);
    ram_model_free(model);
    free(images);
    free(labels);
    free(perm);
    free(batch_images);
    free(warped);
    free(val_images);
    free(batch_labels);
#ifdef RAM_TRAIN_MPI
    /* One rank failing must not leave the others waiting in a collective. */
    if (rc) MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
#endif
    return rc;
}
