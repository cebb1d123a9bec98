#define _POSIX_C_SOURCE 200809L /* getline */
/*
 * ram-classify: classify PNG and JPEG files with a saved model.  Each image
 * is fitted to the model's canvas by the model's own rule (ram_image_fit),
 * so any size and channel count is taken as the model's training images
 * were.
 */
#include "blas.h"
#include "files.h"
#include "image.h"
#include "json.h"
#include "opts.h"
#ifndef RAM_TOOLS_NO_IMAGES
#include "path_figure.h"
#endif

#include <ram/ram.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tool_info tool = {
    "ram-classify", "classify image files with a Recurrent Attention Model",
    "--model FILE [options] IMAGE...",
    "Classify each PNG or JPEG IMAGE with a saved model and print one line per image: the file, "
    "its class (the model's class name, or its number when the model has none) and the "
    "probability, tab-separated; with --top K the K likeliest classes, each with its "
    "probability; with --locations the glimpse locations as x,y pairs in the retina's [-1, 1] "
    "frame.  A model of several objects (ram-train --objects) prints its label sequence instead "
    "of the top classes: each label, in the order emitted, with its probability (JSON: labels, "
    "classes, probabilities).  --json prints one JSON object per image instead.  Each image is "
    "fitted to the "
    "model's canvas by the rule stored in the model (ram-train --fit).  An IMAGE of - reads "
    "the files' names from standard input, one per line.  --glimpses OUT.png draws each image "
    "as the model saw it with its glimpses and their path (the first 64 images).  With "
    "--stop-threshold P each image stops at the first glimpse after which its top class has "
    "probability P or more (ram_model_classify_stop), or with --stop-unit where the model's "
    "stop unit says (ram-train --stop-cost), and the glimpses it took follow as the "
    "last column (JSON: glimpses); --locations and --glimpses then give those glimpses.  A file "
    "that "
    "cannot be read is named on stderr, the others are classified, and the exit status is 1."};

typedef struct options {
    const char *model, *glimpses;
    int top, json, locations;
    float stop;    /* --stop-threshold, or -1 */
    int stop_unit; /* --stop-unit */
} options;

/* Whether each image stops at a glimpse of its own. */
static bool stopping(const options *o) {
    return o->stop >= 0 || o->stop_unit;
}

typedef struct classifier {
    const options *o;
    ram_model *model;
    ram_model_params mp;
    ram_state *st;
    float *canvas, *probs, *locs, *zooms;
    int *order;  /* classes by probability */
    int *labels; /* objects > 1: the label sequence (probs: objects x classes) */
    int steps;   /* --stop-threshold: the glimpses the image took */
#ifndef RAM_TOOLS_NO_IMAGES
    path_figure figure; /* --glimpses */
#endif
} classifier;

static int parse(int argc, char **argv, options *o, int *first_file) {
    *o = (options){.top = 1, .stop = -1.0f};
    tool_opt t[] = {
        {"--model", OPT_STRING, &o->model, .meta = "FILE", .flags = OPT_REQUIRED,
         .help = "model or checkpoint saved by libram (e.g. by ram-train)"},
        {"--top", OPT_INT, &o->top, 1, 65536, .meta = "K",
         .help = "print the K likeliest classes (at most the model's)"},
        {"--locations", OPT_FLAG, &o->locations, .help = "print the glimpse locations too"},
        {"--json", OPT_FLAG, &o->json, .help = "one JSON object per image"},
        {"--glimpses", OPT_STRING, &o->glimpses, .meta = "OUT.png",
         .help = "draw the images with their glimpse paths, one panel each (the first 64), "
                 "as a PNG"},
        {"--stop-threshold", OPT_FLOAT, &o->stop, 0, 1, .meta = "P", .def = "off",
         .help = "stop each image at the first glimpse whose top class probability is at least "
                 "P, and print the glimpses taken"},
        {"--stop-unit", OPT_FLAG, &o->stop_unit,
         .help = "stop each image where the model's stop unit says (ram-train --stop-cost), "
                 "and print the glimpses taken"},
    };
    const size_t n = sizeof t / sizeof *t;
    int r = opts_parse(&tool, t, n, opts_split_files(t, n, argc, argv, first_file), argv);
    if (r) return r;
    if (*first_file >= argc) return opts_usage_error(&tool, "no IMAGE given (see --help)");
    if (o->stop >= 0 && o->stop_unit)
        return opts_usage_error(&tool, "--stop-threshold or --stop-unit, not both");
#ifdef RAM_TOOLS_NO_IMAGES
    if (o->glimpses)
        return opts_usage_error(&tool, "--glimpses: this build has no PNG writer (libpng)");
#endif
    return TOOL_OK;
}

/* Load the model and what one image needs: 0, or -1 with the reason. */
static int open_model(classifier *c) {
    ram_status s = ram_model_load(c->o->model, &c->model);
    if (s == RAM_OK) s = ram_model_get_params(c->model, &c->mp);
    if (s == RAM_OK) s = ram_state_create(c->model, 1, &c->st);
    if (s != RAM_OK) {
        fprintf(stderr, "ram-classify: %s: %s (%s)\n", c->o->model, ram_last_error(),
                ram_status_string(s));
        return -1;
    }
    const size_t canvas = (size_t)c->mp.channels * c->mp.height * c->mp.width;
    c->canvas = malloc(sizeof *c->canvas * canvas);
    c->probs = malloc(sizeof *c->probs * (size_t)c->mp.classes * (size_t)c->mp.objects);
    c->labels = malloc(sizeof *c->labels * (size_t)c->mp.objects);
    c->locs = malloc(sizeof *c->locs * 2 * (size_t)c->mp.glimpses);
    c->zooms = malloc(sizeof *c->zooms * (size_t)c->mp.glimpses);
    c->order = malloc(sizeof *c->order * (size_t)c->mp.classes);
    if (c->o->stop_unit && ram_model_stop_unit(c->model, NULL, NULL) != RAM_OK) {
        fprintf(stderr, "ram-classify: %s: --stop-unit: %s\n", c->o->model, ram_last_error());
        return -1;
    }
    if (stopping(c->o) && c->mp.objects > 1) {
        fprintf(stderr, "ram-classify: %s names %d objects per image: stopping is for one\n",
                c->o->model, c->mp.objects);
        return -1;
    }
    if (c->o->top > 1 && c->mp.objects > 1) {
        fprintf(stderr, "ram-classify: %s names %d objects per image: --top is for one\n",
                c->o->model, c->mp.objects);
        return -1;
    }
#ifndef RAM_TOOLS_NO_IMAGES
    if (c->o->glimpses && (file_check_writable(tool.name, "--glimpses", c->o->glimpses) ||
                           path_figure_init(&c->figure, &c->mp, tool.name)))
        return -1;
#endif
    if (c->canvas && c->probs && c->locs && c->zooms && c->order && c->labels) return 0;
    fprintf(stderr, "ram-classify: out of memory\n");
    return -1;
}

/* Class k's name, or its number in buf. */
static const char *class_name(const classifier *c, int k, char *buf, size_t len) {
    const char *name = ram_model_class_name(c->model, k);
    if (name) return name;
    snprintf(buf, len, "%d", k);
    return buf;
}

/* c->order: the classes by probability, the likeliest first (ties by number). */
static void rank(classifier *c) {
    for (int k = 0; k < c->mp.classes; k++) {
        int i = k;
        for (; i > 0 && c->probs[c->order[i - 1]] < c->probs[k]; i--)
            c->order[i] = c->order[i - 1];
        c->order[i] = k;
    }
}

static void print_text(const classifier *c, const char *path, int top) {
    char buf[16];
    const int K = c->mp.classes;
    fputs(path, stdout);
    if (c->mp.objects > 1)
        for (int s = 0; s < c->mp.objects; s++)
            printf("\t%s\t%.4f", class_name(c, c->labels[s], buf, sizeof buf),
                   (double)c->probs[s * K + c->labels[s]]);
    else
        for (int i = 0; i < top; i++)
            printf("\t%s\t%.4f", class_name(c, c->order[i], buf, sizeof buf),
                   (double)c->probs[c->order[i]]);
    const int taken = stopping(c->o) ? c->steps : c->mp.glimpses;
    if (c->o->locations) {
        putchar('\t');
        for (int g = 0; g < taken; g++)
            printf("%s%.4f,%.4f", g ? " " : "", (double)c->locs[2 * g], (double)c->locs[2 * g + 1]);
    }
    if (stopping(c->o)) printf("\t%d", c->steps);
    putchar('\n');
}

static void print_json(const classifier *c, const char *path, int top) {
    char buf[16];
    printf("{\"file\": ");
    json_string(stdout, path);
    if (c->mp.objects > 1) {
        const int S = c->mp.objects, K = c->mp.classes;
        printf(", \"labels\": [");
        for (int s = 0; s < S; s++)
            printf("%s%d", s ? ", " : "", c->labels[s]);
        printf("], \"classes\": [");
        for (int s = 0; s < S; s++) {
            printf("%s", s ? ", " : "");
            json_string(stdout, class_name(c, c->labels[s], buf, sizeof buf));
        }
        printf("], \"probabilities\": [");
        for (int s = 0; s < S; s++)
            printf("%s%.6f", s ? ", " : "", (double)c->probs[s * K + c->labels[s]]);
        printf("]");
        top = 0; /* no "label" nor "top" */
    }
    if (top > 0) printf(", \"label\": %d, \"class\": ", c->order[0]);
    if (top > 0) {
        json_string(stdout, class_name(c, c->order[0], buf, sizeof buf));
        printf(", \"probability\": %.6f", (double)c->probs[c->order[0]]);
    }
    if (top > 1) {
        printf(", \"top\": [");
        for (int i = 0; i < top; i++) {
            printf("%s{\"label\": %d, \"class\": ", i ? ", " : "", c->order[i]);
            json_string(stdout, class_name(c, c->order[i], buf, sizeof buf));
            printf(", \"probability\": %.6f}", (double)c->probs[c->order[i]]);
        }
        printf("]");
    }
    if (stopping(c->o)) printf(", \"glimpses\": %d", c->steps);
    if (c->o->locations) {
        printf(", \"locations\": [");
        for (int g = 0; g < (stopping(c->o) ? c->steps : c->mp.glimpses); g++)
            printf("%s[%.6f, %.6f]", g ? ", " : "", (double)c->locs[2 * g],
                   (double)c->locs[2 * g + 1]);
        printf("]");
    }
    printf("}\n");
}

/* One file read, fitted, classified and printed: 0, or -1 after saying why. */
static int classify(classifier *c, const char *path) {
    char err[4352];
    image img;
    if (image_load(path, &img, err, sizeof err)) {
        fprintf(stderr, "ram-classify: %s\n", err);
        return -1;
    }
    const size_t canvas = (size_t)c->mp.channels * c->mp.height * c->mp.width;
    ram_status s = ram_image_fit(c->model, img.px, img.c, img.h, img.w, c->canvas, canvas);
    image_free(&img);
    int label = 0;
    if (s == RAM_OK && c->mp.objects > 1)
        s = ram_model_classify_seq(c->model, c->st, c->canvas, 1, RAM_LOCS_MEAN, NULL, c->labels,
                                   c->probs, c->locs);
    else if (s == RAM_OK && stopping(c->o)) {
        s = c->o->stop_unit ? ram_model_classify_stop_unit(c->model, c->st, c->canvas, 1, &label,
                                                           c->probs, &c->steps)
                            : ram_model_classify_stop(c->model, c->st, c->canvas, 1, c->o->stop,
                                                      &label, c->probs, &c->steps);
        /* The stopped image's glimpses went where a whole pass's first ones
         * go (mean locations): that pass gives them. */
        if (s == RAM_OK && (c->o->locations || c->o->glimpses))
            s = ram_model_classify(c->model, c->st, c->canvas, 1, NULL, NULL, c->locs);
    } else if (s == RAM_OK)
        s = ram_model_classify(c->model, c->st, c->canvas, 1, &label, c->probs, c->locs);
    /* each glimpse's zoom, when the last call gave locations */
    if (s == RAM_OK && ram_state_zooms(c->st, 1, c->zooms) != RAM_OK)
        for (int g = 0; g < c->mp.glimpses; g++)
            c->zooms[g] = 1.0f;
    if (s != RAM_OK) {
        fprintf(stderr, "ram-classify: %s: %s (%s)\n", path, ram_last_error(),
                ram_status_string(s));
        return -1;
    }
    rank(c);
    const int top = c->o->top < c->mp.classes ? c->o->top : c->mp.classes;
    (c->o->json ? print_json : print_text)(c, path, top);
#ifndef RAM_TOOLS_NO_IMAGES
    if (c->o->glimpses) {
        char caption[64], buf[16];
        if (c->mp.objects > 1) {
            size_t at = 0;
            caption[0] = 0;
            for (int k = 0; k < c->mp.objects && at < sizeof caption; k++)
                at += (size_t)snprintf(caption + at, sizeof caption - at, "%s%s", k ? " " : "",
                                       class_name(c, c->labels[k], buf, sizeof buf));
        } else {
            snprintf(caption, sizeof caption, "%s %.2f",
                     class_name(c, c->order[0], buf, sizeof buf), (double)c->probs[c->order[0]]);
            if (stopping(c->o)) {
                const size_t at = strlen(caption);
                snprintf(caption + at, sizeof caption - at, ", %d of %d", c->steps, c->mp.glimpses);
            }
        }
        const char *slash = strrchr(path, '/');
        if (path_figure_add(&c->figure, c->canvas, c->locs, c->zooms, stopping(c->o) ? c->steps : 0,
                            caption, slash ? slash + 1 : path, tool.name))
            return -1;
    }
#endif
    return 0;
}

/* "-": each line of standard input names a file (empty lines skipped);
 * 0 if every one was classified. */
static int classify_stdin(classifier *c) {
    int rc = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n > 0 && classify(c, line)) rc = -1;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "ram-classify: error reading the file names from standard input\n");
        rc = -1;
    }
    free(line);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    int first = argc;
    int parsed = parse(argc, argv, &o, &first);
    if (parsed) return opts_exit(parsed);
    tool_blas_init(tool.name, argv);
    classifier c = {.o = &o};
    ram_model_params_init(&c.mp);
    int rc = TOOL_FAILED;
    if (!open_model(&c)) {
        rc = TOOL_OK;
        for (int i = first; i < argc; i++)
            if (strcmp(argv[i], "-") ? classify(&c, argv[i]) : classify_stdin(&c)) rc = TOOL_FAILED;
#ifndef RAM_TOOLS_NO_IMAGES
        if (o.glimpses && path_figure_write(&c.figure, o.glimpses, tool.name)) rc = TOOL_FAILED;
#endif
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "ram-classify: error writing output\n");
            rc = TOOL_FAILED;
        }
    }
#ifndef RAM_TOOLS_NO_IMAGES
    path_figure_free(&c.figure);
#endif
    ram_state_free(c.st);
    ram_model_free(c.model);
    free(c.canvas);
    free(c.probs);
    free(c.locs);
    free(c.zooms);
    free(c.order);
    free(c.labels);
    return rc;
}
