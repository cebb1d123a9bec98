/* npz: NumPy .npz files (np.savez: a zip of stored .npy members) read by
 * memory-mapping them, for folder.h: members x_<split> (images: uint8 or
 * float32, N x H x W or N x H x W x C) and y_<split> (integer labels, N), as
 * Keras' mnist.npz has them. */
#ifndef RAM_TOOLS_NPZ_H
#define RAM_TOOLS_NPZ_H

#include <stddef.h>

/* One .npy array inside the mapped file. */
typedef struct npy_array {
    const unsigned char *data; /* little-endian items, C order, maybe unaligned */
    char kind;                 /* 'u', 'i' or 'f' */
    int item;                  /* bytes per item */
    int ndim;
    long shape[4];
    size_t count; /* items */
} npy_array;

typedef struct npz_file {
    unsigned char *map;
    size_t len;
} npz_file;

/* Whether `path` is named *.npz and is a regular file. */
int npz_is_npz(const char *path);

/* Map the file: 0, or -1 with "prog: ..." on stderr (quiet for a NULL prog). */
int npz_open(const char *prog, const char *path, npz_file *z);
void npz_close(npz_file *z);

/* Whether the file at `path` is a zip with a member `name` (quietly). */
int npz_has(const char *path, const char *name);

/* Member NAME.npy: 0, 1 when there is none, -1 (said on stderr) when it is
 * compressed, damaged or of a type these tools do not read. */
int npz_array(const char *prog, const char *path, const npz_file *z, const char *name,
              npy_array *a);

/* Item i as a double. */
double npy_value(const npy_array *a, size_t i);

#endif
