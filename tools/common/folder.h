/* folder: an image folder as a data set, for ram-train, ram-eval and
 * ram-glimpses (`--data PATH` naming a folder of class folders; also a
 * CSV/TSV list of images, list.h, or a NumPy .npz, npz.h).
 *
 *   PATH/train/<class>/<file>.png|jpg|jpeg, PATH/test/<class>/..., optional PATH/val/
 *   (a folder with a train or test subfolder is taken to be laid out so)
 *   or PATH/<class>/...: split by name, an image is in the test split when
 *   the FNV-1a hash of "<class>/<file>" is 0 modulo 5 (a fifth), else in train.
 *
 * Class names are the folder names in byte order.  Every image is fitted to
 * the canvas with ram_image_fit() and kept as bytes (c x h x w each). */
#ifndef RAM_TOOLS_FOLDER_H
#define RAM_TOOLS_FOLDER_H

#include "cache.h"
#include "npz.h"

#include <ram/ram.h>

#include <stdint.h>

enum { FOLDER_FAIL = 0, FOLDER_SKIP = 1 }; /* --on-bad */
#define FOLDER_ON_BAD_CHOICES "fail|skip"
#define FOLDER_FIT_CHOICES    "pad|resize|letterbox|crop" /* ram_fit's order */
#define FOLDER_ON_BAD_HELP                                                                         \
    "image folders: a file that is not a readable image stops the run (fail) or is passed over "   \
    "and counted (skip)"
#define FOLDER_FIT_HELP                                                                            \
    "image folders: how an image of another size is fitted to the canvas (stored in the model; "   \
    "ram-eval and ram-classify fit as it says)"

/* The --stream choice. */
enum { FOLDER_AUTO = 0, FOLDER_STREAM = 1 };
#define FOLDER_STREAM_HELP                                                                         \
    "image folders and lists: decode each image when it is needed instead of keeping them all "    \
    "in memory (done anyway when they would take more than half of it); arrays (.npz) are always " \
    "read from their memory-mapped file"

#define FOLDER_CACHE_HELP                                                                          \
    "streamed image folders and lists: keep each decoded image in a file in this folder, so that " \
    "later epochs and runs read it back instead of decoding it again (made anew when a file, the " \
    "canvas or the fit changes)"

/* A split's images, read by folder_image().  Image files are decoded once
 * and kept in memory as bytes, or, when streamed, decoded on each read;
 * arrays stay in their memory-mapped file.  Either way folder_image() gives
 * the same pixels. */
typedef struct folder_set {
    int n, c, h, w; /* images and the canvas */
    int classes;
    char **names; /* the class names, sorted */
    int skipped;  /* bad files passed over (FOLDER_SKIP) */
    int streamed; /* image files decoded on each read */
    /* The rest is folder.c's. */
    int mapped;     /* an array in `map` (x) */
    int ac, ah, aw; /* the array's images */
    int on_bad;
    const char *prog, *path;
    unsigned char *bytes; /* kept files: n x c x h x w, round(255 * pixel) */
    char **paths;         /* streamed files */
    int *labels, *order;  /* image k is number order[k] of the split */
    ram_model *fit;       /* the canvas and the fit rule */
    npz_file map;
    npy_array x;
    image_cache *cache; /* streamed files' decoded images (--cache), or NULL */
} folder_set;

/* Whether `dir` is an image folder rather than a directory of IDX files: it
 * has a subdirectory and no *-ubyte file. */
int folder_is_images(const char *dir);

/* Whether the folder has split `split` (train, test, val): val only as PATH/val. */
int folder_has_split(const char *dir, const char *split);

/* The size and channel count (1 for grey, 3 for colour) of the first image of
 * split `split`: 0, or -1 with "prog: ..." on stderr. */
int folder_probe(const char *prog, const char *dir, const char *split, int *c, int *h, int *w);

/* Split `split` of `dir`, each image fitted to `fit`'s canvas by its rule.
 * names/count: the classes to map the folders to (a model's, or the training
 * split's), or NULL to take the split's own folders (at least two).  The
 * images are in class and file order, or shuffled by `shuffle` (a seed) when
 * it is not 0.  stream: FOLDER_STREAM or FOLDER_AUTO (streamed only when
 * kept images would take more than half of the memory); a streamed file's
 * header is checked now, its pixels when it is read.  cache: a folder for
 * the decoded images of a streamed set (cache.h), or NULL.  `prog` must
 * outlive the set.  0, or -1 with "prog: ..." on stderr and nothing to free. */
int folder_load(const char *prog, const char *dir, const char *split, const ram_model *fit,
                const char *const *names, int count, int on_bad, uint64_t shuffle, int stream,
                const char *cache, folder_set *s);

/* A pair of files as a split (ram-train's --train-images and
 * --train-labels, ...): images and labels, each an IDX file or a NumPy
 * .npy (by its name), memory-mapped.  Images: unsigned bytes N x H x W or
 * N x H x W x C (IDX), or the .npz arrays' types and layouts (.npy); labels
 * N whole numbers.  Other arguments as folder_load's. */
int folder_load_pair(const char *prog, const char *images, const char *labels, const ram_model *fit,
                     const char *const *names, int count, uint64_t shuffle, folder_set *s);

/* folder_probe for a pair's image file. */
int folder_probe_pair(const char *prog, const char *images, int *c, int *h, int *w);

/* Image k as floats in [0, 1] into out[c * h * w]: 0; 1 when it could not
 * be read and --on-bad is skip, -1 when it could not (both said on stderr,
 * naming the file: only a streamed file can fail, when its data is damaged).
 * Safe to call from several threads at once. */
int folder_image(const folder_set *s, int k, float *out);

/* Whether every pixel of the set is a byte / 255 (image files, kept or
 * streamed, and 8-bit arrays; not 16-bit or float arrays), so that
 * folder_image_u8() can give its images. */
int folder_has_bytes(const folder_set *s);
/* Image k as c * h * w bytes standing for folder_image()'s floats (byte /
 * 255): *px points at them, in the set itself when they are there as they
 * are (kept files, the cache of a streamed set, an 8-bit array of one
 * channel or of channel planes at the canvas's size: valid while the set
 * is), else in buf, which holds c * h * w bytes.  Returns as folder_image();
 * only for a set folder_has_bytes() says yes to. */
int folder_image_u8(const folder_set *s, int k, unsigned char *buf, const unsigned char **px);
/* Images ks[0..n) will be read soon: the pages of an array larger than
 * half of the memory are asked of the kernel now (madvise), so that reading
 * them later does not wait for the disk.  No-op for other sets. */
void folder_prefetch(const folder_set *s, const int *ks, int n);

/* The label of image k. */
int folder_label(const folder_set *s, int k);

/* Say what was skipped, if anything ("prog: skipped N bad files of DIR"). */
void folder_report(const char *prog, const char *dir, const folder_set *s);

void folder_free(folder_set *s);

#endif
