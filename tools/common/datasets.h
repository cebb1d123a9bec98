/*
 * datasets: the benchmark data sets of the RAM paper, made deterministically
 * from MNIST digits and a seed, one image at a time (so training images can be
 * regenerated every epoch at no memory cost, as DeepMind's mnist-cluttered
 * generator does).  Part of the tools, not of libram.
 *
 *   mnist          the 28x28 digits as they are
 *   translated60   each digit at a uniformly random position in a 60x60 canvas
 *   cluttered60    translated60 plus 4 random 8x8 crops of other digits
 *   cluttered100   100x100, 8 crops
 *   pairs100       two digits of different labels on a 100x100 canvas, their
 *                  28x28 boxes apart; the class is the unordered pair (45)
 *   sum100         the same images; the class is the sum of the two (19)
 *
 * Clutter crops come from other digits of the same split; pixels are added
 * and clipped to [0, 1].  A two-digit image's second digit comes from the
 * same split too (dataset_partner).
 */
#ifndef RAM_TOOLS_DATASETS_H
#define RAM_TOOLS_DATASETS_H

#include <ram/ram.h>

#include <stddef.h>
#include <stdint.h>

typedef enum dataset_kind {
    DATASET_MNIST,
    DATASET_TRANSLATED60,
    DATASET_CLUTTERED60,
    DATASET_CLUTTERED100,
    DATASET_PAIRS100,
    DATASET_SUM100
} dataset_kind;

/* Seeds of the fixed evaluation sets.  Training images use the run's seed and
 * the epoch number, so every epoch sees fresh placements and clutter. */
#define DATASET_TEST_SEED 20141208u /* NIPS 2014 */
#define DATASET_VAL_SEED  20140624u /* arXiv v1 */

/* The names, in the order of dataset_kind, for an OPT_CHOICE --dataset. */
#define DATASET_CHOICES "mnist|translated60|cluttered60|cluttered100|pairs100|sum100"

/* Parse a name ("mnist", "translated60", ...); returns -1 if unknown. */
int dataset_parse(const char *name, dataset_kind *kind);
const char *dataset_name(dataset_kind kind);
/* Side of the square canvas (28, 60 or 100) and number of clutter pieces. */
int dataset_side(dataset_kind kind);
int dataset_pieces(dataset_kind kind);
/* Digits in an image (1, or 2 for pairs100 and sum100) and the classes of
 * the set's label: 10 for the one-digit sets, 45 pairs, 19 sums (0..18). */
int dataset_objects(dataset_kind kind);
int dataset_classes(dataset_kind kind);

/*
 * pairs100's classes: the unordered pair {a, b} of two different digits is
 * class a (19 - a) / 2 + b - a - 1 for a < b, so 0 is "0-1", 8 "0-9", 9 "1-2"
 * and 44 "8-9" (the byte order of the names, too).  dataset_pair_class gives
 * -1 unless a and b are different digits 0..9; dataset_pair_digits -1 for a
 * class outside 0..44, else 0 with *a < *b.
 */
int dataset_pair_class(int a, int b);
int dataset_pair_digits(int pair, int *a, int *b);
/* The name of class k of a two-digit set as the tools store it in a model:
 * "3-7" for pairs100, "12" for sum100 (so that the classes of an .npz or an
 * image folder, which need not hold every sum, are matched by name); NULL
 * for the one-digit sets, whose models have no names. */
const char *dataset_class_name(dataset_kind kind, int k);

/*
 * Write the names of the data sets whose canvas is side x side into buf as
 * "translated60 or cluttered60" (for error messages that say which --dataset a
 * model was trained on).  Returns how many match; buf is "" when none does.
 */
int dataset_names_for_side(int side, char *buf, size_t len);

/*
 * Make image `index` of a set: digit `index` of `digits` (n x 28 x 28) placed
 * by an RNG seeded from (seed, index), with clutter from other digits of
 * `digits`, and for a two-digit set the digit dataset_partner() picks from
 * `labels` (the n digits' labels; only two-digit sets read them, so NULL
 * will do for the others).  out: side x side floats.  The same arguments
 * give the same image on every machine.
 */
void dataset_make(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                  uint64_t seed, float *out);
/* dataset_make with another picture of digit `index` placed (28 x 28 at
 * `digit`, e.g. a dataset_warp of it): the same placement and clutter (and
 * the same second digit, as it is). */
void dataset_make_with(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                       const float *digit, uint64_t seed, float *out);
/* dataset_make_with() with only the first `pieces` of the image's clutter
 * pieces (0: none; -1 or the set's count: all), the digit placed where
 * dataset_make() puts it whatever `pieces` (ram-train --clutter, a
 * curriculum); `digit` NULL: digit `index` itself. */
void dataset_make_some(dataset_kind kind, const float *digits, const int *labels, int n, int index,
                       const float *digit, int pieces, uint64_t seed, float *out);
/* dataset_make() without the clutter: the digit where dataset_make() puts
 * it, on an empty canvas (to tell how much of a model's error is the
 * clutter's: ram-eval --no-clutter).  The two-digit sets have no clutter. */
void dataset_make_uncluttered(dataset_kind kind, const float *digits, const int *labels, int n,
                              int index, uint64_t seed, float *out);
/* Where dataset_make() put digit `index` of a set: the top-left pixel (x, y)
 * of its 28 x 28 box on the canvas ((0, 0) for mnist).  For diagnostics such
 * as ram-eval's count of glimpses that landed on the digit. */
void dataset_digit_origin(dataset_kind kind, int n, int index, uint64_t seed, int *x, int *y);

/*
 * Two-digit sets (pairs100, sum100).  Image `index` holds digit `index` and
 * its partner: digit `other` of the n drawn uniformly from the n - 1 others
 * by an RNG seeded from (seed, index) (a stream of its own, not the
 * placement's), drawn again until labels[other] != labels[index]; after
 * DATASET_PARTNER_DRAWS draws that all failed, the first digit after the
 * last one drawn (cyclically) whose label differs.  -1 for a one-digit set,
 * or when no digit's label differs (dataset_check_labels refuses those).
 *
 * Placement: the two boxes' top-left pixels (x1, y1) of digit `index` and
 * (x2, y2) of its partner, each uniform in 0 .. 72, drawn in that order from
 * the placement stream, all four drawn again until the boxes do not overlap
 * (|x1 - x2| >= 28 or |y1 - y2| >= 28): uniform over the placements that
 * keep the digits apart.  After DATASET_PLACE_DRAWS overlapping draws (a
 * chance below 10^-400) the boxes go to (0, 0) and (72, 72).
 *
 * Reading order: left to right by the boxes' left edge x; at the same x
 * (the boxes are then one above the other) the upper one first.
 */
#define DATASET_PARTNER_DRAWS 100
#define DATASET_PLACE_DRAWS   1000
int dataset_partner(dataset_kind kind, const int *labels, int n, int index, uint64_t seed);
/* Image `index`'s boxes (top-left pixels) in reading order: how many (1 or
 * 2); x[0], y[0] is dataset_digit_origin()'s for a one-digit set. */
int dataset_digit_boxes(dataset_kind kind, int n, int index, uint64_t seed, int x[2], int y[2]);
/* Image `index`'s digit labels in reading order into digit[0..count):
 * the count (1 or 2), or -1 when the partner is missing. */
int dataset_digit_labels(dataset_kind kind, const int *labels, int n, int index, uint64_t seed,
                         int digit[2]);
/* Image `index`'s class: labels[index] for a one-digit set, the pair's
 * class (pairs100) or the sum (sum100) for a two-digit one; -1 when the
 * partner is missing. */
int dataset_label(dataset_kind kind, const int *labels, int n, int index, uint64_t seed);
/* Whether the n digit labels can make the set: for a two-digit set every
 * label a digit 0..9 and at least two different ones.  0, or -1 after
 * "prog: message" on stderr naming `what` (e.g. "the training digits"). */
int dataset_check_labels(const char *prog, dataset_kind kind, const int *labels, int n,
                         const char *what);

/*
 * Training augmentation for plain images (ram-train --shift): image `index`
 * (h x w at `img`) copied to `out` moved by (dx, dy), each uniform in
 * [-shift, shift] and drawn from (seed, index); pixels moved out are dropped,
 * those moved in are 0.
 */
void dataset_shift_copy(const float *img, int h, int w, int shift, uint64_t seed, int index,
                        float *out);

/*
 * Training augmentation for every set (ram-train --rotate, --zoom): image
 * `index` (h x w at `img`: the digit, before it is placed) rotated about its
 * centre by an angle uniform in [-rotate, rotate] degrees and scaled by a
 * factor uniform in [1 - zoom, 1 + zoom], both drawn from (seed, index) on a
 * stream of their own (so the placement and clutter stay those of the unwarped
 * image); bilinear, zeros outside.
 */
void dataset_warp(const float *img, int h, int w, float rotate, float zoom, uint64_t seed,
                  int index, float *out);

/*
 * Training augmentation for every set (ram-train --flip): image `index`
 * (c planes of h x w at `img`) mirrored left to right in place, or left as
 * it is, with probability 1/2 each, drawn from (seed, index) on a stream of
 * its own.
 */
void dataset_flip(float *img, int c, int h, int w, uint64_t seed, int index);

/*
 * Image k of a set: plain images (`images`, n of `pixels` each, any size) as
 * they are for mnist, else dataset_make() from n 28 x 28 digits (labeled by
 * `labels`, which only two-digit sets read).
 */
void dataset_image(dataset_kind kind, const float *images, const int *labels, int pixels, int n,
                   int k, uint64_t seed, float *out);

/*
 * The file prefix of a split as the tools name it: "test" (and "t10k", the
 * name of MNIST's files) is "t10k", "train" is "train"; with mnist any other
 * name is a pair of IDX files DIR/NAME-*-ubyte (e.g. written by ram-data).
 * NULL for a name the set has no placement for (only test and train have one).
 */
const char *dataset_split_file(dataset_kind kind, const char *split);
/* The placement seed of a split's images (DATASET_VAL_SEED for train). */
uint64_t dataset_split_seed(const char *split_file);

/*
 * What the tools (ram-eval, ram-glimpses, ram-data) do before using a set,
 * with the same messages everywhere.  `prog` is the tool's name: errors go to
 * stderr as "prog: message" lines and the functions return -1 (0 if all is well).
 *
 * dataset_load: read MNIST split `split` of `dir` (idx_load_mnist) as the
 * digits of set `kind`.  *h x *w is the size of the set's images: the files'
 * own for mnist, else the canvas, whose digits must be 28 x 28.  When a file
 * of MNIST itself (train or t10k) is missing, also says how to get it.  On success the caller frees
 * *digits and *labels; on error there is nothing to free.
 *
 * dataset_check_model: check that the model in file `model` (parameters `mp`)
 * takes the h x w images dataset_load gave for `kind` from dir/split, and
 * for a two-digit set that it has the set's classes (or, with two objects, the
 * 10 of the digits); if not, say which
 * --dataset fits the model when one does.
 */
int dataset_load(const char *prog, const char *dir, const char *split, dataset_kind kind,
                 float **digits, int **labels, int *n, int *h, int *w);
/*
 * A large colour image for RAMs that must find a small object on a big,
 * busy canvas (ram-data --colour): the 28 x 28 digit at `digit` scaled by
 * `scale` (bilinear) to a 28*scale box at a random position of a side x side
 * canvas, drawn in a colour that contrasts with a textured background (smooth
 * noise between two colours plus faint stripes).  Colours, texture and
 * position come from (seed, index) alone, with no libm call, so the same
 * arguments give the same image everywhere.  side >= 28 * scale, scale >= 1.
 * out: 3 x side x side floats in [0, 1], channel planes (RGB).
 */
void dataset_make_colour(const float *digit, int side, int scale, uint64_t seed, int index,
                         float *out);

int dataset_check_model(const char *prog, const char *model, const ram_model_params *mp,
                        dataset_kind kind, const char *dir, const char *split, int h, int w);

#endif
