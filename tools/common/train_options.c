/* ram-train's options: the table --help, the man page and the parser share. */
#include "train.h"

#include "folder.h"

#include "datasets.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

#define DESCRIPTION                                                                                \
    "Train a Recurrent Attention Model on MNIST (IDX files) or on a translated or cluttered set "  \
    "made from it, or on your own images: a folder of PNG and JPEG files, one subfolder per "      \
    "class, a CSV/TSV list of them or a NumPy .npz (the model keeps the class names and how its "  \
    "images were fitted to its canvas).  Keeps the model with the best validation error in "       \
    "--out, writes a "                                                                             \
    "checkpoint after every epoch (--resume continues from it exactly), prints a live progress "   \
    "line and one line per epoch, and can log the epochs as CSV."

const tool_info train_tool = {"ram-train", "train a Recurrent Attention Model on MNIST",
                              "[options]", DESCRIPTION};

const tool_info train_tool_mpi = {
    "ram-train-mpi", "train a Recurrent Attention Model on MNIST with MPI",
    "[options] (under mpirun -np N)",
    DESCRIPTION "\n\nData-parallel: every rank trains on its own --batch images of each global "
                "batch of N x --batch (the remainder that does not fill a global batch is left "
                "out), and the gradients are averaged with one MPI_Allreduce per step, so that "
                "a step equals one process's step on the N x --batch images up to float "
                "rounding.  --resume works with any number of ranks.  Rank 0 evaluates, prints "
                "and writes the files.  --time-budget is not supported."};

static const int core_values[] = {RAM_CORE_RNN, RAM_CORE_LSTM};
static const int form_values[] = {RAM_GLIMPSE_ADDITIVE, RAM_GLIMPSE_CONCAT,
                                  RAM_GLIMPSE_MULTIPLICATIVE};
static const int bound_values[] = {RAM_BOUND_TANH, RAM_BOUND_HARDTANH};
static const int baseline_values[] = {RAM_BASELINE_LINEAR, RAM_BASELINE_SCALAR, RAM_BASELINE_NONE};
static const int optim_values[] = {RAM_OPT_ADAM, RAM_OPT_SGD};
static const int reward_values[] = {RAM_REWARD_PER_OBJECT, RAM_REWARD_ALL_CORRECT};
/* --sensor's choices, in order: the sensor and how a soft one is trained */
enum { SENSOR_HARD, SENSOR_SOFT, SENSOR_HYBRID };

#define COUNT 1e9 /* the largest count an option takes */
#define ANY   -FLT_MAX, FLT_MAX

/* The table, pointing into o, lr_final, reinforce_core (a flag that
 * clears detach_core) and sensor (SENSOR_*); each option once.  Longer
 * than a function should be because it is data: one entry per option,
 * nothing to cut. */
static size_t train_table(train_options *o, float *lr_final, int *reinforce_core, int *sensor,
                          tool_opt *t) {
    ram_model_params *mp = &o->mp;
    ram_policy_params *pp = &o->pp;
    ram_trainer_params *tp = &o->tp;
    const tool_opt opts[] = {
        {"--data", OPT_STRING, &o->data, .meta = "PATH", .section = "data and run",
         .help = "directory with the four MNIST IDX files, or an image folder: "
                 "PATH/train/CLASS/*.png|jpg (with PATH/test, optional PATH/val) or PATH/CLASS/... "
                 "(a fifth of each class, by a hash of its file names, kept for testing), or a "
                 "list PATH.csv of PATH,LABEL lines (.tsv: tab-separated), or a NumPy PATH.npz "
                 "of x_train, y_train (x_val, y_val), stored or compressed"},
        {"--train-images", OPT_STRING, &o->train_images, .meta = "FILE",
         .help = "instead of --data: the training images as one file, IDX (N x H x W, or "
                 "N x H x W x C for colour) or NumPy .npy (as in an .npz), memory-mapped; "
                 "validation: the last --val of them (a tenth by default) after a fixed shuffle"},
        {"--train-labels", OPT_STRING, &o->train_labels, .meta = "FILE",
         .help = "the labels of --train-images (IDX or .npy): N whole numbers, the classes "
                 "0..K-1"},
        {"--dataset", OPT_CHOICE, &o->dataset, .choices = DATASET_CHOICES, .meta = "NAME",
         .help = "the set to train on; the training images of a translated, cluttered or "
                 "two-digit set are placed afresh every epoch (a two-digit set's with new "
                 "partners); pairs100 and sum100 make a model of 45 or 19 classes"},
        {"--height", OPT_INT, &o->height, 1, 4096, .meta = "N", .def = "the first image's",
         .help = "image folders: the canvas's height"},
        {"--width", OPT_INT, &o->width, 1, 4096, .meta = "N", .def = "the first image's",
         .help = "image folders: the canvas's width"},
        {"--channels", OPT_INT, &o->channels, 1, 3, .meta = "N", .def = "the first image's",
         .help = "image folders: 1 (grey) or 3 (colour); images are converted"},
        {"--fit", OPT_CHOICE, &o->fit, .choices = FOLDER_FIT_CHOICES, .meta = "F",
         .help = FOLDER_FIT_HELP},
        {"--on-bad", OPT_CHOICE, &o->on_bad, .choices = FOLDER_ON_BAD_CHOICES, .meta = "A",
         .help = FOLDER_ON_BAD_HELP},
        {"--stream", OPT_FLAG, &o->stream, .help = FOLDER_STREAM_HELP},
        {"--cache", OPT_STRING, &o->cache, .meta = "DIR", .help = FOLDER_CACHE_HELP},
        {"--prefetch", OPT_INT, &o->prefetch, 1, 64, .meta = "N",
         .help = "streamed images and arrays: batches the loader thread makes ahead of the "
                 "trainer"},
        {"--epochs", OPT_INT, &o->epochs, 0, COUNT, .meta = "N",
         .help = "epochs (0 with --init and --stop-cost: only fit a stop unit to the model)"},
        {"--batch", OPT_INT, &o->batch, 1, 65536, .meta = "N", .help = "batch size"},
        {"--seed", OPT_LONG, &o->seed, 0, 18446744073709551615.0, .meta = "N",
         .help = "seed of initialisation, sampling and shuffling"},
        {"--threads", OPT_INT, &o->threads, 1, 256, .meta = "N", .help = "worker threads"},
        {"--val", OPT_INT, &o->val, 0, COUNT, .meta = "N",
         .help = "validation images: the last N training images (image folders: PATH/val, else "
                 "by default a tenth of the training images, shuffled with a fixed seed); 0 "
                 "trains on every training image and keeps the last epoch's model (the epochs "
                 "of a recipe validated before decide)"},
        {"--train-limit", OPT_INT, &o->train_limit, 1, COUNT, .meta = "N", .def = "all",
         .help = "use only the first N training images"},
        {"--shift", OPT_INT, &o->shift, 0, 8, .meta = "N",
         .help = "move each training image by up to N pixels (uniform, zeros fill), afresh "
                 "every epoch: MNIST and your own images (the generated sets already place "
                 "each digit afresh)"},
        {"--rotate", OPT_FLOAT, &o->rotate, 0, 45, .meta = "DEG",
         .help = "rotate each training digit by up to DEG degrees (uniform, bilinear, afresh "
                 "every epoch, before it is placed)"},
        {"--zoom", OPT_FLOAT, &o->zoom, 0, 0.5, .meta = "F",
         .help = "scale each training digit by 1 - F to 1 + F (as --rotate)"},
        {"--flip", OPT_FLAG, &o->flip,
         .help = "mirror each training image left to right with probability 1/2, afresh every "
                 "epoch (for classes a mirror keeps: not digits)"},
        {"--clutter", OPT_INT, &o->clutter, 0, 8, .meta = "N", .def = "all",
         .help = "cluttered sets: paint only the first N of each image's clutter pieces "
                 "(cluttered60 has 4, cluttered100 8), in training and validation, the digit "
                 "where the set puts it: 0 trains on the digit alone, a curriculum's first "
                 "leg"},
        {"--time-budget", OPT_DOUBLE, &o->time_budget, 0, DBL_MAX, .meta = "SEC", .def = "none",
         .help = "stop after this many seconds of training"},
        {"--out", OPT_STRING, &o->out, .meta = "FILE",
         .help = "best model by validation error; with --resume, the file of the run that "
                 "wrote the checkpoint (it holds that run's best model so far)"},
        {"--checkpoint", OPT_STRING, &o->checkpoint, .meta = "FILE", .def = "OUT.ckpt",
         .help = "checkpoint written every epoch"},
        {"--resume", OPT_STRING, &o->resume, .meta = "FILE",
         .help = "continue from a checkpoint, exactly: with the same options, --batch and "
                 "--threads (refused otherwise); a larger --epochs stretches the lr decay (when "
                 "it is not set by --decay-epochs)"},
        {"--init", OPT_STRING, &o->init, .meta = "MODEL",
         .help = "start from a saved model's weights (fine-tuning, or a run continued without "
                 "its checkpoint): the model options come from MODEL and may not be given, but "
                 "--glimpses and --emit-every, which change its count of glimpses; the "
                 "optimizer and the baseline start afresh; the batch order follows MODEL's "
                 "saved seed (--seed still sets sampling, placement and clutter)"},
        {"--log", OPT_STRING, &o->log, .meta = "FILE",
         .help = "per-epoch CSV: epoch,seconds,train_error,val_error,lr,nll,reward,baseline"},
        {"--quiet", OPT_FLAG, &o->quiet, .help = "no live progress line"},
        {"--glimpses", OPT_INT, &mp->glimpses, 1, COUNT, .meta = "N", .section = "model",
         .flags = OPT_GROUP,
         .help = "glimpses per image (with --init: another count for the model's weights)"},
        {"--patch", OPT_INT, &mp->glimpse.patch, 1, COUNT, .meta = "N", .flags = OPT_GROUP,
         .help = "side of the retina's finest square, in pixels"},
        {"--depth", OPT_INT, &mp->glimpse.depth, 1, COUNT, .meta = "N", .flags = OPT_GROUP,
         .help = "scales of the retina"},
        {"--scale", OPT_FLOAT, &mp->glimpse.scale, ANY, .meta = "F", .flags = OPT_GROUP,
         .help = "each scale's side over the previous one's"},
        {"--glimpse-hidden", OPT_INT, &mp->glimpse_hidden, 1, COUNT, .meta = "N",
         .flags = OPT_GROUP, .help = "units of the glimpse network's retina layer"},
        {"--loc-hidden", OPT_INT, &mp->loc_hidden, 1, COUNT, .meta = "N", .flags = OPT_GROUP,
         .help = "units of the glimpse network's location layer"},
        {"--glimpse-out", OPT_INT, &mp->glimpse_out, 1, COUNT, .meta = "N", .flags = OPT_GROUP,
         .help = "units of the glimpse feature"},
        {"--hidden", OPT_INT, &mp->core_hidden, 1, COUNT, .meta = "N", .flags = OPT_GROUP,
         .help = "units of the core"},
        {"--core", OPT_CHOICE, &mp->core, .choices = "rnn|lstm", .values = core_values, .meta = "C",
         .flags = OPT_GROUP, .help = "the core network"},
        {"--form", OPT_CHOICE, &mp->form, .choices = "additive|concat|mul", .values = form_values,
         .meta = "F", .flags = OPT_GROUP,
         .help = "how the glimpse network joins its inputs (mul: DRAM's product of the two)"},
        {"--glimpse-form", OPT_CHOICE, &mp->form, .choices = "additive|concat|mul",
         .values = form_values, .meta = "F", .flags = OPT_GROUP, .help = "the same as --form"},
        {"--core-layers", OPT_INT, &mp->core_layers, 1, 2, .meta = "N", .flags = OPT_GROUP,
         .help = "layers of the core: 2 is DRAM's (the lower one feeds the classifier, the "
                 "upper one the location network and the baseline)"},
        {"--upper-core", OPT_CHOICE, &mp->upper_core, .choices = "rnn|lstm", .values = core_values,
         .meta = "C", .flags = OPT_GROUP, .def = "rnn", .help = "the upper layer's cell"},
        {"--context", OPT_INT, &mp->context, 0, 256, .meta = "SIDE", .flags = OPT_GROUP,
         .help = "DRAM's context network: the whole image average-pooled to SIDE x SIDE, one "
                 "ReLU layer on it gives the core's top layer its first state (0 = none)"},
        {"--conv", OPT_INT, &mp->conv_channels, 0, 4096, .meta = "C", .flags = OPT_GROUP,
         .help = "a convolutional layer of C channels (ReLU) between the retina and the glimpse "
                 "network, over every scale of the patch at once (0 = none)"},
        {"--conv-kernel", OPT_INT, &mp->conv_kernel, 1, COUNT, .meta = "K", .flags = OPT_GROUP,
         .help = "side of its filters (with --conv)"},
        {"--conv-stride", OPT_INT, &mp->conv_stride, 1, COUNT, .meta = "S", .flags = OPT_GROUP,
         .help = "step of its filters (with --conv)"},
        {"--cell-samples", OPT_INT, &mp->cell_samples, 0, 64, .meta = "K", .flags = OPT_GROUP,
         .help = "read at most K x K pixels of each retina cell (and context cell), on a grid "
                 "over it, so that a glimpse costs the same on any image and at any scale (0 = "
                 "every pixel; hard sensor)"},
        {"--contrast", OPT_FLAG, &mp->contrast, .flags = OPT_GROUP,
         .help = "retina and context cells as contrast magnitudes |v - mean| / (4 spread), the "
                 "image's mean and spread per channel: no colour, no light or dark, for objects "
                 "in any colour on any background (hard sensor)"},
        {"--zoom-min", OPT_FLOAT, &mp->zoom_min, 0, 16, .meta = "A", .flags = OPT_GROUP,
         .def = "no zoom",
         .help = "zoom as an action: the policy also chooses a factor in [A, B] for each "
                 "glimpse's squares (log-uniform in its output), sampled and trained as the "
                 "location; give both, 1/64 <= A < B <= 16, e.g. 0.5 and 2"},
        {"--zoom-max", OPT_FLOAT, &mp->zoom_max, 0, 16, .meta = "B", .flags = OPT_GROUP,
         .def = "no zoom", .help = "the largest zoom factor (with --zoom-min)"},
        {"--objects", OPT_INT, &mp->objects, 1, 64, .meta = "S", .flags = OPT_GROUP,
         .help = "labels per image, one every --emit-every glimpses: 2 on pairs100 and sum100 "
                 "trains on the two digits in reading order (10 classes)"},
        {"--emit-every", OPT_INT, &mp->emit_every, 0, 64, .meta = "K", .flags = OPT_GROUP,
         .def = "glimpses / S", .help = "glimpses between labels (S x K = --glimpses)"},
        {"--bound", OPT_CHOICE, &mp->bound, .choices = "tanh|hardtanh", .values = bound_values,
         .meta = "B", .flags = OPT_GROUP, .help = "how the location mean is kept in [-1, 1]"},
        {"--std", OPT_FLOAT, &mp->loc_std, ANY, .meta = "F", .flags = OPT_GROUP,
         .help = "standard deviation of the location policy"},
        {"--unit-pixels", OPT_FLOAT, &mp->loc_range_pixels, ANY, .meta = "F", .flags = OPT_GROUP,
         .help = "pixels of one location unit (0 = the image's edge; negative = half the "
                 "shorter side less one pixel: 13 for 28x28)"},
        {"--init-scale", OPT_FLOAT, &mp->init_scale, ANY, .meta = "F", .flags = OPT_GROUP,
         .help = "scale of the initial weights"},
        {"--sensor", OPT_CHOICE, sensor, .choices = "hard|soft|hybrid", .meta = "S", .def = "hard",
         .help = "the retina: hard (average pooling, locations trained by REINFORCE), soft "
                 "(exact cell averages, continuous in the location; locations are the "
                 "policy's mean, trained by backpropagating the classification loss through "
                 "the sensor, no REINFORCE) "
                 "or hybrid (the soft sensor, sampled locations, REINFORCE plus the "
                 "backpropagated term); stored in the model.  With --init a soft model stays "
                 "soft; soft or hybrid on a hard model read its weights with the soft "
                 "sensor (fine-tuning a hard model's glimpses by backpropagation)"},
        {"--baseline", OPT_CHOICE, &pp->baseline, .choices = "linear|scalar|none",
         .values = baseline_values, .meta = "B", .section = "policy",
         .help = "REINFORCE's baseline"},
        {"--reward-scale", OPT_FLOAT, &pp->reward_scale, ANY, .meta = "F",
         .help = "weight of the REINFORCE term"},
        {"--discount", OPT_FLOAT, &pp->discount, ANY, .meta = "F", .help = "reward discount"},
        {"--reward", OPT_CHOICE, &pp->reward, .choices = "per-object|all-correct",
         .values = reward_values, .meta = "R",
         .help = "with several objects: a reward for each right label, or one when all are "
                 "right"},
        {"--reinforce-core", OPT_FLAG, reinforce_core,
         .help = "let REINFORCE train the core too (default: the location network only)"},
        {"--detach-soft", OPT_FLAG, &pp->soft_detach_core,
         .help = "soft and hybrid sensors: the gradient backpropagated through the sensor to "
                 "each location trains the location network only, not the core and glimpse "
                 "network through time (steadier; default: both)"},
        {"--optim", OPT_CHOICE, &tp->optimizer, .choices = "adam|sgd", .values = optim_values,
         .meta = "O", .section = "optimizer", .help = "the optimizer"},
        {"--lr", OPT_FLOAT, &tp->lr, ANY, .meta = "F", .help = "learning rate"},
        {"--lr-final", OPT_FLOAT, lr_final, ANY, .meta = "F", .def = "= --lr",
         .help = "learning rate reached by a linear decay"},
        {"--decay-epochs", OPT_INT, &o->decay_epochs, 0, COUNT, .meta = "N", .def = "= --epochs",
         .help = "the linear lr decay's length in epochs"},
        {"--momentum", OPT_FLOAT, &tp->momentum, ANY, .meta = "F", .help = "SGD momentum"},
        {"--nesterov", OPT_FLAG, &tp->nesterov, .help = "SGD: Nesterov momentum"},
        {"--clip", OPT_FLOAT, &tp->clip_norm, ANY, .meta = "F",
         .help = "clip the gradient's norm to F (0 = off)"},
        {"--weight-decay", OPT_FLOAT, &tp->weight_decay, ANY, .meta = "F",
         .help = "decoupled weight decay, AdamW style (0 = off)"},
        {"--average", OPT_FLOAT, &tp->average_decay, 0, 1, .meta = "F", .flags = OPT_OPEN_HI,
         .help = "keep a moving average of the weights with this decay per step, e.g. 0.9998 "
                 "(0 = off): the validation error and --out are then the average's, and the CSV "
                 "gains val_error_last, the last weights' validation error; --resume with the "
                 "same F"},
        {"--label-smoothing", OPT_FLOAT, &tp->label_smoothing, 0, 1, .meta = "E",
         .flags = OPT_OPEN_HI,
         .help = "train the classifier toward 1 - E on the label and E / K on each of the K "
                 "classes instead of the label alone (0 = off)"},
        {"--beta1", OPT_FLOAT, &tp->beta1, ANY, .meta = "F", .help = "Adam's first-moment decay"},
        {"--beta2", OPT_FLOAT, &tp->beta2, ANY, .meta = "F", .help = "Adam's second-moment decay"},
        {"--adam-eps", OPT_FLOAT, &tp->eps, ANY, .meta = "F", .help = "Adam's epsilon"},
        {"--products", OPT_CHOICE, &tp->products, .choices = "float|bf16", .meta = "P",
         .help = "the number format of the layers' matrix products in training: float, or "
                 "bf16 (operands rounded to bfloat16, float sums and weights; CPUs with "
                 "AVX512_BF16 only; validation and the saved model stay float)"},
        {"--stop-cost", OPT_FLOAT, &o->stop_cost, 0, 1, .meta = "C", .section = "stopping",
         .def = "none",
         .help = "after training, fit a stop unit to the kept model (ram_model_fit_stop(): a "
                 "Bernoulli unit after each glimpse, trained by REINFORCE with a reward of 1 for "
                 "a right label less C per glimpse taken) on the training images, print its "
                 "validation error and mean glimpses, and save it with the model in --out; "
                 "ram-eval --stop-unit uses it.  With --init MODEL --epochs 0, only the fit"},
    };
    memcpy(t, opts, sizeof opts);
    return sizeof opts / sizeof *opts;
}

/* The combinations the table cannot say; TOOL_OK or TOOL_USAGE. */
static int check(const tool_info *tool, const tool_opt *t, size_t n, train_options *o) {
    int last = 0;
    for (size_t i = 0; i < n; i++) {
        /* No weight depends on the count of glimpses: --init may change it. */
        if (o->init && t[i].seen && t[i].dst == &o->mp.glimpses) {
            o->init_glimpses = o->mp.glimpses;
        } else if (o->init && t[i].seen && t[i].dst == &o->mp.emit_every) {
            o->init_emit_every = o->mp.emit_every;
        } else if ((t[i].flags & OPT_GROUP) && t[i].seen > last) {
            last = t[i].seen;
            o->model_flag = t[i].name;
        }
    }
    if (o->init && o->model_flag)
        return opts_usage_error(
            tool, "--init takes the model's architecture, std and range from %s; drop %s", o->init,
            o->model_flag);
    if (o->shift && o->dataset != DATASET_MNIST)
        return opts_usage_error(tool, "--shift is for --dataset mnist; the other sets already "
                                      "place each digit afresh every epoch");
    if ((o->mp.zoom_min > 0) != (o->mp.zoom_max > 0) ||
        (o->mp.zoom_max > 0 && !(o->mp.zoom_min < o->mp.zoom_max)))
        return opts_usage_error(tool, "--zoom-min A and --zoom-max B go together, with A < B");
    const int pieces = dataset_pieces((dataset_kind)o->dataset);
    if (o->clutter >= 0 && !pieces)
        return opts_usage_error(tool, "--clutter is for --dataset cluttered60 or cluttered100");
    if (o->clutter > pieces)
        return opts_usage_error(tool, "--clutter %d: --dataset %s has %d clutter pieces",
                                o->clutter, dataset_name((dataset_kind)o->dataset), pieces);
    if ((o->rotate > 0 || o->zoom > 0) && dataset_objects((dataset_kind)o->dataset) > 1)
        return opts_usage_error(tool, "--rotate and --zoom warp one digit: not for --dataset %s",
                                dataset_name((dataset_kind)o->dataset));
    if (o->stop_cost >= 0 && o->mp.objects > 1)
        return opts_usage_error(tool,
                                "--stop-cost: a stop unit is for one label per image, not "
                                "--objects %d",
                                o->mp.objects);
    if (o->epochs == 0 && !(o->init && o->stop_cost >= 0))
        return opts_usage_error(tool, "--epochs 0 only fits a stop unit: it needs --init MODEL "
                                      "and --stop-cost C");
    return TOOL_OK;
}

int train_parse(const tool_info *tool, int argc, char **argv, train_options *o) {
    memset(o, 0, sizeof *o);
    o->data = "data/mnist";
    o->out = "ram-mnist.ram";
    o->init_emit_every = -1;
    o->epochs = 100;
    o->batch = 64;
    o->threads = 2;
    o->val = 10000;
    o->seed = 1;
    o->decay_epochs = -1;
    o->prefetch = 2;
    o->clutter = -1;
    o->stop_cost = -1;
    ram_model_params_init(&o->mp);
    ram_policy_params_init(&o->pp);
    ram_trainer_params_init(&o->tp);
    float lr_final = -1;
    int reinforce_core = 0, sensor = SENSOR_HARD;
    tool_opt t[80];
    const size_t n = train_table(o, &lr_final, &reinforce_core, &sensor, t);
    int r = opts_parse(tool, t, n, argc, argv);
    if (!r) r = check(tool, t, n, o);
    if (r) return r;
    o->val_given = opts_find(t, n, "--val")->seen != 0;
    o->dataset_given = opts_find(t, n, "--dataset")->seen != 0;
    o->fit_given = opts_find(t, n, "--fit")->seen != 0;
    if (!o->train_images != !o->train_labels)
        return opts_usage_error(tool, "--train-images and --train-labels go together");
    if (o->train_images && opts_find(t, n, "--data")->seen)
        return opts_usage_error(tool, "--data or --train-images, not both");
    if (o->train_images) o->data = o->train_images; /* what messages name */
    if (!o->mp.conv_channels &&
        (opts_find(t, n, "--conv-kernel")->seen || opts_find(t, n, "--conv-stride")->seen))
        return opts_usage_error(tool, "--conv-kernel and --conv-stride shape the layer --conv C "
                                      "adds; give --conv too");
    if (reinforce_core) o->pp.detach_core = 0;
    o->mp.sensor = sensor == SENSOR_HARD ? RAM_SENSOR_HARD : RAM_SENSOR_SOFT;
    o->pp.soft_training = sensor == SENSOR_HYBRID ? RAM_SOFT_HYBRID : RAM_SOFT_BACKPROP;
    if (!o->checkpoint) {
        snprintf(o->checkpoint_default, sizeof o->checkpoint_default, "%s.ckpt", o->out);
        o->checkpoint = o->checkpoint_default;
    }
    o->tp.lr_final = lr_final >= 0 ? lr_final : o->tp.lr;
    o->tp.max_batch = o->batch;
    o->tp.threads = o->threads;
    o->mp.seed = o->seed;
    o->pp.seed = o->seed * 0x9e3779b97f4a7c15ULL + 1;
    return TOOL_OK;
}
