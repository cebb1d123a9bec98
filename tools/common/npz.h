/* npz: NumPy arrays for the tools, one descriptor (npy_array) whatever file
 * they come from:
 *
 *   .npz   np.savez (a zip of stored .npy members: memory-mapped, no copy) and
 *          np.savez_compressed (deflated members, as Keras' mnist.npz has
 *          them: inflated into a buffer the descriptor owns, CRC-32 checked)
 *   .npy   np.save, memory-mapped
 *   IDX    idx_map() in idx.h describes an unsigned-byte IDX file the same way
 *
 * Images are x_<split> (uint8, uint16, float32 or float64; N x H x W,
 * N x H x W x C or N x C x H x W), labels y_<split> (N whole numbers).  The
 * readers check every header field against the file before anything is
 * read or allocated: a damaged file gets a message, never garbage. */
#ifndef RAM_TOOLS_NPZ_H
#define RAM_TOOLS_NPZ_H

#include <stddef.h>

/* How npy_image() reads an image array (npy_image_dims decides it). */
typedef enum npy_layout {
    NPY_NOT_IMAGES, /* not (yet) an array of images */
    NPY_NHW,        /* N x H x W, one channel */
    NPY_NHWC,       /* N x H x W x C: NumPy's, Keras' and PIL's order */
    NPY_NCHW        /* N x C x H x W: PyTorch's */
} npy_layout;

/* One array: items at `data`, in a mapped file or in `owned`. */
typedef struct npy_array {
    const unsigned char *data; /* little-endian items, C order, maybe unaligned */
    char kind;                 /* 'u', 'i', 'f' or 'b' (bool) */
    int item;                  /* bytes per item */
    int ndim;
    long shape[4];
    size_t count; /* items */
    /* The inflated bytes of a compressed member, which `data` points into;
     * NULL for mapped data (owned by the npz_file).  npy_array_free(). */
    unsigned char *owned;
    npy_layout layout; /* what npy_image_dims decided when the array was read */
} npy_array;

/* A memory-mapped file (.npz, .npy or IDX). */
typedef struct npz_file {
    unsigned char *map;
    size_t len;
} npz_file;

/* The largest member these tools inflate: beyond it a size field is taken
 * for damage (no data set of images for a RAM is this big compressed). */
#define NPZ_MAX_INFLATED ((size_t)16 << 30)

/* The largest label npy_labels() takes (class numbers, not counts). */
#define NPY_MAX_LABEL 65535

/* Whether `path` is named *.npz and is a regular file. */
int npz_is_npz(const char *path);

/* Map the file: 0, or -1 with "prog: ..." on stderr (quiet for a NULL prog). */
int npz_open(const char *prog, const char *path, npz_file *z);
void npz_close(npz_file *z);

/* Whether the file at `path` is a zip with a member `name` (quietly). */
int npz_has(const char *path, const char *name);

/* Member NAME.npy, stored (np.savez) only, of uint8, float32 or integers: 0,
 * 1 when there is none, -1 (said on stderr) when it is compressed, damaged or
 * of another type.  The array is mapped: nothing to free. */
int npz_array(const char *prog, const char *path, const npz_file *z, const char *name,
              npy_array *a);

/* Member NAME.npy, stored or deflated, of any type npy_array has: 0, 1 when
 * there is none, -1 with "prog: path: NAME.npy: reason" on stderr (damaged
 * zip or .npy header, bad CRC-32, a size that does not match or is over
 * NPZ_MAX_INFLATED or this machine's memory).  A deflated member is inflated
 * into a->owned: release it with npy_array_free() before npz_close(). */
int npz_read(const char *prog, const char *path, const npz_file *z, const char *name, npy_array *a);

/* Whether `path` is named *.npy and is a regular file. */
int npy_is_npy(const char *path);

/* Map the .npy file at `path` into *map and describe its array: 0, or -1
 * with "prog: path: reason" on stderr (quiet for a NULL prog) and nothing to
 * close.  Strict: magic, version 1 to 3, a header dict with descr,
 * fortran_order (False only) and shape, and exactly the bytes the shape
 * needs.  npz_close(map) when done. */
int npy_open(const char *prog, const char *path, npz_file *map, npy_array *a);

/* Parse an .npy file held in data[size] into *a (a->data points into it): 0,
 * or -1 with the reason in err. */
int npy_parse(const unsigned char *data, size_t size, npy_array *a, char *err, size_t errlen);

/* Free what the array owns (an inflated member); mapped data is the
 * npz_file's.  Safe on a zeroed or already freed descriptor. */
void npy_array_free(npy_array *a);

/* Item i as a double. */
double npy_value(const npy_array *a, size_t i);

/*
 * An array of images: 0 and its channels, height and width, or -1 (outputs
 * untouched).  N x H x W is grey (c = 1); a 4-D array is N x H x W x C or
 * N x C x H x W with C 1, 3 or 4, told apart by which of shape[3] and
 * shape[1] is such a channel count; when both are (a 3 x 3 image of 3
 * channels...), N x H x W x C, NumPy's and Keras' convention.  Items must be
 * uint8, uint16, float32 or float64.  npy_image_error() says why not.
 */
int npy_image_dims(const npy_array *x, int *c, int *h, int *w);
/* Why x is not an array of images (a sentence without the file's name), or
 * NULL if it is one. */
const char *npy_image_error(const npy_array *x);
/* The layout npy_image_dims() decides for x (NPY_NOT_IMAGES if none). */
npy_layout npy_image_layout(const npy_array *x);

/*
 * Image i of x as c x h x w floats in [0, 1] (channel planes): uint8 / 255,
 * uint16 / 65535, floats as they are.  -1 when i is out of range, x is not
 * images, or a float is NaN, infinite or outside [0, 1] (the caller names the
 * file and the image).  Reads only: safe from many threads at once.
 */
int npy_image(const npy_array *x, size_t i, float *out);

/*
 * The labels of n images: y of N or N x 1 whole numbers in
 * 0..NPY_MAX_LABEL, into out[n], and the largest into *max_label (may be
 * NULL).  Integer and float types are read (floats only when every value is
 * a whole number); bool is refused, as are negative values and N != n.  0,
 * or -1 with the reason (without the file's name) in err.
 */
int npy_labels(const npy_array *y, size_t n, int *out, int *max_label, char *err, size_t errlen);

#endif
