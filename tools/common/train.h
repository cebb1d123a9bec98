/* train: ram-train's training loop, shared by ram-train and ram-train-mpi.
 *
 * Keeps the model with the best validation error in --out, writes a
 * checkpoint after every epoch (--resume continues from it exactly), prints a
 * live progress line and one line per epoch, and can log epochs as CSV. */
#ifndef RAM_TOOLS_TRAIN_H
#define RAM_TOOLS_TRAIN_H

#include "opts.h"

#include <ram/ram.h>

#include <stddef.h>
#include <stdint.h>

typedef struct train_options {
    const char *data, *out, *checkpoint, *resume, *log;
    const char *init; /* --init: start from this model's weights and architecture */
    const char *train_images, *train_labels; /* a pair of files instead of --data */
    const char *model_flag; /* the last architecture option given, refused with --init */
    /* With --init, --glimpses and --emit-every change the model's count
     * (ram_model_with_glimpses()): the values given, else 0 and -1. */
    int init_glimpses, init_emit_every;
    int dataset; /* dataset_kind */
    int epochs, batch, threads, val, train_limit, decay_epochs, quiet, shift;
    float rotate, zoom; /* training-image augmentation (datasets.h) */
    /* Image folders (folder.h): the canvas (0 = the first image's), the fit
     * rule (ram_fit), --on-bad; whether --val, --dataset and --fit were given. */
    int height, width, channels, fit, on_bad, val_given, dataset_given, fit_given;
    int stream, prefetch, flip; /* --stream (FOLDER_STREAM), --prefetch, --flip */
    int clutter;                /* --clutter: pieces painted per image; -1: the set's all */
    const char *cache;          /* --cache: a folder for streamed sets' decoded images, or NULL */
    float stop_cost;            /* --stop-cost: fit a stop unit after training; -1: none */
    double time_budget;
    uint64_t seed;
    ram_model_params mp;
    ram_policy_params pp;
    ram_trainer_params tp;
    char checkpoint_default[4096]; /* OUT.ckpt */
} train_options;

/* What a run trains on.  A resumed run must see the same images, so
 * --resume refuses other ones (the library checks the architecture). */
typedef struct train_data {
    int32_t dataset, shift, val, train; /* train: training images used */
    uint64_t seed;
    float rotate, zoom;     /* not in checkpoints of TRAIN_STATE_NO_WARP bytes: those had none */
    int32_t batch, threads; /* 0 in older checkpoints, which are not checked for them */
    int32_t flip;           /* not in checkpoints of TRAIN_STATE_NO_FLIP bytes: none had it */
    int32_t pieces_left;    /* clutter pieces --clutter leaves out; 0 (older checkpoints): none */
} train_data;

/* Caller state stored in checkpoints next to the trainer's own. */
typedef struct train_state {
    int epoch;       /* epochs completed */
    double best_val; /* the kept model's validation error; TRAIN_NO_BEST before one is kept,
                      * TRAIN_NOT_VALIDATED once one is kept with --val 0 */
    double elapsed;  /* training seconds so far */
    train_data data; /* not in older checkpoints (TRAIN_STATE_OLD bytes): those are not checked */
} train_state;
/* Above any error rate: no model kept yet (checkpoints of older versions
 * say 1.0, and kept nothing until an epoch validated below 100 %). */
#define TRAIN_NO_BEST       2.0
#define TRAIN_STATE_OLD     offsetof(train_state, data)
#define TRAIN_STATE_NO_WARP (offsetof(train_state, data) + offsetof(train_data, rotate))
#define TRAIN_STATE_NO_FLIP (offsetof(train_state, data) + offsetof(train_data, flip))
/* Below any error rate: --val 0, the last epoch's model is kept unvalidated. */
#define TRAIN_NOT_VALIDATED (-1.0)

/* How the processes of a data-parallel run work together.  NULL hooks: one
 * process, which trains on every image. */
typedef struct train_hooks {
    int rank, ranks; /* this process, and how many train together */
    /* Averages the gradient of a step over the processes (the trainer's
     * gradient hook). */
    ram_gradient_fn average;
    /* Brings every process to rank 0's start: its --resume checkpoint or a
     * checkpoint it writes now; st receives the checkpoint's state.  0 or -1. */
    int (*start)(ram_trainer *t, ram_policy *pol, const train_options *o, train_state *st,
                 void *user);
    /* Sums n doubles over the processes, in place. */
    void (*sum)(double *v, int n, void *user);
    void *user;
} train_hooks;

/* ram-train's tool description and options (train_options.c); `name` is
 * the tool's. */
extern const tool_info train_tool_mpi, train_tool;
/* Parse ram-train's command line into o: TOOL_OK, TOOL_USAGE, or -1 after
 * --help, --version or --man. */
int train_parse(const tool_info *tool, int argc, char **argv, train_options *o);

/* Train as o says: TOOL_OK, or TOOL_FAILED with the reason on stderr. */
int train_run(const tool_info *tool, train_options *o, const train_hooks *hooks);

/* 0 if a checkpoint's state (len bytes: older checkpoints have less) fits
 * the run's `want`; else says why on stderr. */
int train_check_resumed(const char *prog, const char *path, size_t len, const train_state *got,
                        const train_data *want);

#endif
