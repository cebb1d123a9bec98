/*
 * idx: read and write IDX files (the format of the MNIST distribution) for the
 * libram tools.  Not part of libram; copy it if you need it.
 *
 * The loaders read the two layouts MNIST uses: unsigned-byte images
 * (magic 0x00000803, N x H x W) and unsigned-byte labels (magic 0x00000801, N).
 * idx_map() also maps colour images (0x00000804, N x H x W x C) and describes
 * any of the three as an npy_array (npz.h), as the .npz and .npy readers do.
 * Headers are validated strictly and the file size must match the header
 * exactly, so a truncated download or a wrong file gives a clear message
 * instead of garbage.
 *
 * All functions return 0 on success and -1 on error, with a message in
 * err[0..errlen) (err may be NULL or errlen 0).  On error, out-pointers are
 * left untouched and nothing needs freeing.  Arrays returned through
 * out-pointers are malloc'ed; release them with free().
 */
#ifndef RAM_TOOLS_IDX_H
#define RAM_TOOLS_IDX_H

#include "npz.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bounds of a sane header: anything larger is rejected as corrupt. */
#define IDX_MAX_ITEMS 100000000L
#define IDX_MAX_SIDE  65536

/** Load an image file: *images = n x 1 x h x w floats, pixel / 255. */
int idx_load_images(const char *path, float **images, int *n, int *h, int *w, char *err,
                    size_t errlen);

/** Load a label file: *labels = n ints in 0..255. */
int idx_load_labels(const char *path, int **labels, int *n, char *err, size_t errlen);

/**
 * Load one MNIST split: DIR/<split>-images-idx3-ubyte and
 * DIR/<split>-labels-idx1-ubyte, where split is "train" or "t10k".  Checks
 * that the counts agree and that every label is in 0..9.
 */
int idx_load_mnist(const char *dir, const char *split, float **images, int **labels, int *n, int *h,
                   int *w, char *err, size_t errlen);

/**
 * Write n x 1 x h x w float images as an unsigned-byte IDX file: each pixel
 * is clamped to [0, 1], scaled by 255 and rounded (NaN becomes 0).  The file
 * is written to "<path>.tmp" and renamed, so `path` never holds a partial file.
 */
int idx_save_images(const char *path, const float *images, int n, int h, int w, char *err,
                    size_t errlen);

/**
 * Write an unsigned-byte IDX file of `ndims` dimensions (2 to 4; dims[0]
 * items of dims[1] x ... bytes each) item by item: item(ctx, i, bytes) fills
 * item i's bytes (0, or -1 to give up, having put the reason in err), so
 * that a set larger than memory (colour images of 1024 x 1024) is written
 * without holding it.  "<path>.tmp", renamed to `path` when complete.
 */
typedef int (*idx_item_fn)(void *ctx, int i, unsigned char *bytes);
int idx_save_items(const char *path, const uint32_t *dims, int ndims, idx_item_fn item, void *ctx,
                   char *err, size_t errlen);

/** Write n labels (each in 0..255) as an unsigned-byte IDX label file. */
int idx_save_labels(const char *path, const int *labels, int n, char *err, size_t errlen);

/**
 * Describe an unsigned-byte IDX file held in data[size] (a->data points into
 * it): labels (1 dimension, N), grey images (3: N x H x W) or colour images
 * (4: N x H x W x C, C 1, 3 or 4), kind 'u', 1-byte items.  Validated as the
 * loaders validate files: the size must be exactly what the header says.
 * The reason in err does not name a file.
 */
int idx_parse(const unsigned char *data, size_t size, npy_array *a, char *err, size_t errlen);

/**
 * Memory-map the IDX file at `path` into *map and idx_parse() it: 0, or -1
 * with "path: reason" in err and nothing to close.  npz_close(map) when done.
 */
int idx_map(const char *path, npz_file *map, npy_array *a, char *err, size_t errlen);

/* Whether directory `dir` holds split `split` (train or t10k, MNIST's
 * names) as colour IDX files, <split>-images-idx4-ubyte (N x H x W x C)
 * and <split>-labels-idx1-ubyte, which the tools read as a pair of files
 * (--train-images / --test-images); 1 with their paths in images and
 * labels (cap bytes each), else 0. */
int idx_colour_split(const char *dir, const char *split, char *images, char *labels, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RAM_TOOLS_IDX_H */
