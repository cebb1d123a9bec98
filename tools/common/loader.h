/* loader: a thread that makes the next batches of an epoch while the caller
 * trains on the current one, through a bounded queue (ram-train on image
 * files that are streamed).
 *
 * The batches come out in their order, whatever the timing, so a run is the
 * same with and without the loader. */
#ifndef RAM_TOOLS_LOADER_H
#define RAM_TOOLS_LOADER_H

#include <stddef.h>

/* A batch's room: max_batch images of `image_bytes` each (floats, or the
 * bytes of an 8-bit set) at `images`, max_batch pointers at `each` (an
 * 8-bit batch's images, in `images` or anywhere that outlives the batch)
 * and max_batch labels. */
typedef struct loader_batch {
    void *images;
    const unsigned char **each;
    int *labels;
} loader_batch;

/* Makes batch `index` into b: returns how many images it made (some may
 * have been skipped), or -1 to stop the epoch (the reason said on stderr).
 * Runs on the loader's thread. */
typedef int (*loader_fill_fn)(void *user, long index, loader_batch *b);

typedef struct loader loader;

/* Start making batches 0..count-1, at most `depth` (>= 1) ahead of the
 * caller; each has room for max_batch images of `image_bytes`.  0, or -1
 * with "prog: ..." on stderr. */
int loader_start(const char *prog, int depth, int max_batch, size_t image_bytes, long count,
                 loader_fill_fn fill, void *user, loader **out);

/* The next batch and its image count: waits for it.  *b stays valid until
 * the next call.  0, or -1 when the fill function failed (nothing more
 * comes). */
int loader_next(loader *l, const loader_batch **b, int *n);

/* Stop (at any point) and join the thread; NULL is a no-op. */
void loader_free(loader *l);

#endif
