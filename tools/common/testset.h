/* testset: what ram-eval and ram-glimpses share: the options that choose a
 * model, a data set and where the glimpses go, and loading them. */
#ifndef RAM_TOOLS_TESTSET_H
#define RAM_TOOLS_TESTSET_H

#include "folder.h"
#include "opts.h"

#include <ram/ram.h>

#include <stddef.h>
#include <stdint.h>

/* The names of ram_loc_source, in its order, for an OPT_CHOICE --policy. */
#define POLICY_CHOICES "mean|sampled|random|center"
const char *testset_policy_name(int source);

typedef struct testset_options {
    const char *model, *data, *split;
    const char *split_file;                /* the split's file prefix (dataset_split_file) */
    int dataset;                           /* dataset_kind */
    int source;                            /* ram_loc_source */
    int on_bad;                            /* image folders: FOLDER_FAIL or FOLDER_SKIP */
    int stream;                            /* image folders: FOLDER_STREAM or FOLDER_AUTO */
    const char *cache;                     /* --cache: streamed images' folder, or NULL */
    const char *images[2], *labels[2];     /* --test-images ... ([0]), --train-images ... */
    const char *pair_images, *pair_labels; /* the split's pair (testset_check), or NULL */
    uint64_t seed;
} testset_options;

/* The shared options' table entries into t (room for TESTSET_OPTIONS), with
 * their defaults set in c; returns how many. */
#define TESTSET_OPTIONS 13
size_t testset_table(testset_options *c, tool_opt *t);
/* After parsing: the split's name checked against the set, and the pair
 * of files it names, if any (c->data then names the images, for
 * messages).  TOOL_OK or TOOL_USAGE. */
int testset_check(const tool_info *tool, testset_options *c);

/* A loaded model and the set it is tested on. */
typedef struct testset {
    ram_model *model;
    ram_model_params mp;
    float *images;     /* the images (mnist) or the 28 x 28 digits to place */
    int *labels;       /* the images' classes */
    int *digit_labels; /* a two-digit set's: the labels of the digits (else NULL) */
    int n, c, h, w;
    uint64_t seed;     /* placement seed of the split */
    int from_folder;   /* --data is an image folder: its images are in `folder` */
    folder_set folder; /* (labels moved to `labels`) */
} testset;

/* Load c's model and set and check that they fit each other: 0, or -1 with
 * the reason on stderr and nothing to free. */
int testset_load(const char *prog, const testset_options *c, testset *s);
void testset_free(testset *s);

/* Image k of the set (c x h x w floats) into out: as the set places it
 * (dataset_image), or an image folder's.  0, or -1 when a streamed file
 * could not be read (said on stderr; a test set passes over nothing once
 * loaded, whatever --on-bad says). */
int testset_image(const testset *s, int dataset, int k, float *out);

/* ram_model_classify(), or ram_model_classify_ex() for other sources. */
ram_status testset_classify(const ram_model *m, ram_state *st, int source, ram_policy *pol,
                            const float *images, int n, int *labels, float *probs, float *locs);
/* testset_classify() on 8-bit images (folder_image_u8()'s bytes, n x c x h x w). */
ram_status testset_classify_u8(const ram_model *m, ram_state *st, int source, ram_policy *pol,
                               const unsigned char *images, int n, int *labels, float *probs,
                               float *locs);

/* A policy for the sources that draw random numbers (sampled, random), NULL
 * for the others; RAM_OK or the failure. */
ram_status testset_policy(const ram_model *m, int source, uint64_t seed, ram_policy **pol);

#endif
