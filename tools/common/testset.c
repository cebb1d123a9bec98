/* What ram-eval and ram-glimpses share (see testset.h). */
#include "testset.h"

#include "datasets.h"
#include "idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *testset_policy_name(int source) {
    static const char *const names[] = {"mean", "sampled", "random", "center"};
    return source >= 0 && source < 4 ? names[source] : "?";
}

#define SPLIT_HELP                                                                                 \
    "test (also called t10k, the name of MNIST's files) or train; train places all 60000 "         \
    "digits as ram-train places its validation images (whose set is the last --val of them).  "    \
    "With --dataset mnist, any other NAME reads the pair DIR/NAME-*-ubyte (e.g. one exported by "  \
    "ram-data)"

size_t testset_table(testset_options *c, tool_opt *t) {
    *c = (testset_options){.split = "test", .source = RAM_LOCS_MEAN, .seed = 1};
    const tool_opt opts[TESTSET_OPTIONS] = {
        {"--model", OPT_STRING, &c->model, .meta = "FILE", .flags = OPT_REQUIRED,
         .help = "model or checkpoint saved by libram"},
        {"--data", OPT_STRING, &c->data, .meta = "PATH",
         .help = "directory with the MNIST IDX files, an image folder, a CSV/TSV list or an "
                 ".npz (as ram-train takes them; each image fitted by the model's rule); or "
                 "give --test-images and --test-labels"},
        {"--test-images", OPT_STRING, &c->images[0], .meta = "FILE",
         .help = "the test images as one file: IDX (N x H x W, or N x H x W x C for colour) or "
                 "NumPy .npy (as in an .npz), with --test-labels (IDX or .npy)"},
        {"--test-labels", OPT_STRING, &c->labels[0], .meta = "FILE",
         .help = "the labels of --test-images"},
        {"--train-images", OPT_STRING, &c->images[1], .meta = "FILE",
         .help = "with --split train: the training images as one file (as --test-images)"},
        {"--train-labels", OPT_STRING, &c->labels[1], .meta = "FILE",
         .help = "the labels of --train-images"},
        {"--dataset", OPT_CHOICE, &c->dataset, .choices = DATASET_CHOICES, .meta = "NAME",
         .help = "the set: a translated, cluttered or two-digit one is the fixed set made from "
                 "the MNIST digits of the split; must match the model"},
        {"--policy", OPT_CHOICE, &c->source, .choices = POLICY_CHOICES, .meta = "P",
         .help = "where glimpses go: the policy mean (deterministic), sampled from the Gaussian "
                 "policy, random (uniform, ablation) or the center (ablation)"},
        {"--split", OPT_STRING, &c->split, .meta = "NAME", .help = SPLIT_HELP},
        {"--seed", OPT_LONG, &c->seed, 0, 9223372036854775807.0, .meta = "N",
         .help = "seed for sampled and random locations"},
        {"--on-bad", OPT_CHOICE, &c->on_bad, .choices = FOLDER_ON_BAD_CHOICES, .meta = "A",
         .help = FOLDER_ON_BAD_HELP},
        {"--stream", OPT_FLAG, &c->stream, .help = FOLDER_STREAM_HELP},
        {"--cache", OPT_STRING, &c->cache, .meta = "DIR", .help = FOLDER_CACHE_HELP},
    };
    memcpy(t, opts, sizeof opts);
    return TESTSET_OPTIONS;
}

int testset_check(const tool_info *tool, testset_options *c) {
    /* A pair of files is the split --split names, and --data is not used. */
    for (int k = 0; k < 2; k++)
        if (!c->images[k] != !c->labels[k])
            return opts_usage_error(tool, "--%s-images and --%s-labels go together",
                                    k ? "train" : "test", k ? "train" : "test");
    const int train = !strcmp(c->split, "train");
    if (c->images[0] || c->images[1]) {
        if (c->data) return opts_usage_error(tool, "--data or a pair of files, not both");
        if (strcmp(c->split, "test") && strcmp(c->split, "t10k") && !train)
            return opts_usage_error(tool, "a pair of files is --split test or train");
        if (!c->images[train])
            return opts_usage_error(tool, "--split %s needs --%s-images and --%s-labels", c->split,
                                    train ? "train" : "test", train ? "train" : "test");
        c->pair_images = c->images[train];
        c->pair_labels = c->labels[train];
        c->data = c->pair_images; /* what messages name */
        return TOOL_OK;
    }
    if (!c->data) return opts_usage_error(tool, "--data or --test-images is required");
    static char colour_images[4096], colour_labels[4096];
    if (idx_colour_split(c->data, train ? "train" : "t10k", colour_images, colour_labels,
                         sizeof colour_images)) {
        c->pair_images = colour_images; /* a directory of colour IDX files: their pair */
        c->pair_labels = colour_labels;
        return TOOL_OK;
    }
    /* The placement seed belongs to the split: only test and train have one. */
    c->split_file = dataset_split_file((dataset_kind)c->dataset, c->split);
    if (!c->split_file)
        return opts_usage_error(tool, "--dataset %s needs --split test or train",
                                dataset_name((dataset_kind)c->dataset));
    return TOOL_OK;
}

static void report(const char *prog, const char *what, ram_status s) {
    fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, ram_last_error(), ram_status_string(s));
}

/* The model's class names (NULL when it has none) into names[classes]. */
static const char *const *model_names(const testset *s, const char **names) {
    for (int k = 0; k < s->mp.classes; k++)
        if (!(names[k] = ram_model_class_name(s->model, k))) return NULL;
    return names;
}

/* The set's labels, taken from the folder set. */
static int take_labels(const char *prog, testset *s) {
    s->from_folder = 1;
    s->n = s->folder.n;
    s->c = s->folder.c;
    s->h = s->folder.h;
    s->w = s->folder.w;
    if (!(s->labels = malloc(sizeof *s->labels * (size_t)s->n))) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    for (int k = 0; k < s->n; k++)
        s->labels[k] = folder_label(&s->folder, k);
    return 0;
}

/* A pair of files (--test-images ...), fitted to the loaded model. */
static int load_pair(const char *prog, const testset_options *c, testset *s) {
    if (c->dataset != DATASET_MNIST) {
        fprintf(stderr, "%s: --dataset is for MNIST's IDX files in --data\n", prog);
        return -1;
    }
    if (folder_load_pair(prog, c->pair_images, c->pair_labels, s->model, NULL, s->mp.classes, 0,
                         &s->folder))
        return -1;
    return take_labels(prog, s);
}

/* Split c->split of an image folder, fitted to the loaded model. */
static int load_folder(const char *prog, const testset_options *c, testset *s) {
    const char *split = !strcmp(c->split, "t10k") ? "test" : c->split;
    if (strcmp(split, "test") && strcmp(split, "train") && strcmp(split, "val")) {
        fprintf(stderr, "%s: %s is an image folder: --split test, train or val\n", prog, c->data);
        return -1;
    }
    if (c->dataset != DATASET_MNIST) {
        fprintf(stderr, "%s: %s is an image folder: --dataset is for MNIST's IDX files\n", prog,
                c->data);
        return -1;
    }
    if (!folder_has_split(c->data, split)) {
        fprintf(stderr, "%s: %s has no %s split\n", prog, c->data, split);
        return -1;
    }
    const char **names = malloc(sizeof *names * (size_t)s->mp.classes);
    if (!names) return -1;
    const char *const *have = model_names(s, names);
    int rc = folder_load(prog, c->data, split, s->model, have, have ? s->mp.classes : 0, c->on_bad,
                         0, c->stream, c->cache, &s->folder);
    free(names);
    if (rc) return -1;
    folder_report(prog, c->data, &s->folder);
    if (!have && s->folder.classes != s->mp.classes) {
        fprintf(stderr, "%s: %s has %d class folders but the model %d classes\n", prog, c->data,
                s->folder.classes, s->mp.classes);
        return -1;
    }
    return take_labels(prog, s);
}

/* A two-digit set's labels: the images' classes, from the digits' labels
 * (kept in digit_labels, which make the images). */
static int pair_labels(const char *prog, dataset_kind kind, testset *s) {
    if (dataset_objects(kind) < 2) return 0;
    int *classes = malloc(sizeof *classes * (size_t)(s->n > 0 ? s->n : 1));
    if (!classes) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    for (int k = 0; k < s->n; k++)
        classes[k] = dataset_label(kind, s->labels, s->n, k, s->seed);
    s->digit_labels = s->labels;
    s->labels = classes;
    return 0;
}

int testset_load(const char *prog, const testset_options *c, testset *s) {
    memset(s, 0, sizeof *s);
    s->c = 1;
    ram_status st = ram_model_load(c->model, &s->model);
    if (st != RAM_OK) {
        fprintf(stderr, "%s: cannot load model %s: %s (%s)\n", prog, c->model, ram_last_error(),
                ram_status_string(st));
        return -1;
    }
    ram_model_params_init(&s->mp);
    if ((st = ram_model_get_params(s->model, &s->mp)) != RAM_OK) {
        report(prog, "ram_model_get_params", st);
    } else if (c->pair_images) {
        if (!load_pair(prog, c, s)) return 0;
    } else if (folder_is_images(c->data)) {
        if (!load_folder(prog, c, s)) return 0;
    } else if (!dataset_load(prog, c->data, c->split_file, (dataset_kind)c->dataset, &s->images,
                             &s->labels, &s->n, &s->h, &s->w)) {
        s->seed = dataset_split_seed(c->split_file);
        if (!dataset_check_model(prog, c->model, &s->mp, (dataset_kind)c->dataset, c->data,
                                 c->split_file, s->h, s->w) &&
            !pair_labels(prog, (dataset_kind)c->dataset, s))
            return 0;
    }
    testset_free(s);
    return -1;
}

void testset_free(testset *s) {
    ram_model_free(s->model);
    free(s->images);
    free(s->labels);
    free(s->digit_labels);
    folder_free(&s->folder);
    memset(s, 0, sizeof *s);
}

int testset_image(const testset *s, int dataset, int k, float *out) {
    if (s->from_folder) return folder_image(&s->folder, k, out) ? -1 : 0;
    dataset_image((dataset_kind)dataset, s->images, s->digit_labels, s->h * s->w, s->n, k, s->seed,
                  out);
    return 0;
}

ram_status testset_classify(const ram_model *m, ram_state *st, int source, ram_policy *pol,
                            const float *images, int n, int *labels, float *probs, float *locs) {
    if (source == RAM_LOCS_MEAN) return ram_model_classify(m, st, images, n, labels, probs, locs);
    return ram_model_classify_ex(m, st, images, n, (ram_loc_source)source, pol, labels, probs,
                                 locs);
}

ram_status testset_classify_u8(const ram_model *m, ram_state *st, int source, ram_policy *pol,
                               const unsigned char *images, int n, int *labels, float *probs,
                               float *locs) {
    if (source == RAM_LOCS_MEAN)
        return ram_model_classify_u8(m, st, images, n, labels, probs, locs);
    return ram_model_classify_ex_u8(m, st, images, n, (ram_loc_source)source, pol, labels, probs,
                                    locs);
}

ram_status testset_policy(const ram_model *m, int source, uint64_t seed, ram_policy **pol) {
    *pol = NULL;
    if (source != RAM_LOCS_SAMPLED && source != RAM_LOCS_RANDOM) return RAM_OK;
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = seed;
    return ram_policy_create(&pp, m, pol);
}
