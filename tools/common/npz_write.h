/* npz_write: NumPy .npz files as np.savez writes them (a zip of stored .npy
 * members), for ram-data --format npz.  Stored, not deflated, so that the
 * tools (npz.h) and np.load(..., mmap_mode) can use the bytes where they lie.
 * Members are streamed: a set of any size needs one image in memory.
 *
 * The file is written to "<path>.tmp" and renamed to `path` by
 * npz_write_end(): `path` never holds a partial file.  Zip64 records are
 * written only when a size or offset needs them.  Functions return 0, or -1
 * with "file: reason" in err, after which only npz_write_abort() is left to
 * call. */
#ifndef RAM_TOOLS_NPZ_WRITE_H
#define RAM_TOOLS_NPZ_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct npz_entry {
    char name[64];         /* NAME.npy */
    uint64_t offset, size; /* of the local header; of the .npy */
    uint32_t crc;
} npz_entry;

typedef struct npz_writer {
    FILE *f;
    char path[4096], tmp[4200];
    npz_entry *entries;
    int n, cap;
    uint64_t at;         /* bytes written so far */
    uint64_t data, left; /* the open member: where its CRC field is, bytes still due */
    int open;            /* a member is being written */
    int zip64;           /* force zip64 records (tests set it after npz_write_begin) */
} npz_writer;

/* Create "<path>.tmp". */
int npz_write_begin(npz_writer *w, const char *path, char *err, size_t errlen);

/* Start member NAME.npy: an .npy header of dtype `descr` ("|u1", "<i8",
 * "<f4"...) and shape[ndim] (C order); its items follow by npz_write_data,
 * exactly as many bytes as the shape holds. */
int npz_write_member(npz_writer *w, const char *name, const char *descr, int ndim,
                     const long *shape, char *err, size_t errlen);
int npz_write_data(npz_writer *w, const void *bytes, size_t len, char *err, size_t errlen);

/* Finish the last member, write the zip directory and rename into place. */
int npz_write_end(npz_writer *w, char *err, size_t errlen);

/* Remove the temporary file and free the writer (also after npz_write_end). */
void npz_write_abort(npz_writer *w);

#endif
