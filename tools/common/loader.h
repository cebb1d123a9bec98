/* loader: a thread that makes the next batches of an epoch while the caller
 * trains on the current one, through a bounded queue (ram-train on image
 * files that are streamed).
 *
 * The batches come out in their order, whatever the timing, so a run is the
 * same with and without the loader. */
#ifndef RAM_TOOLS_LOADER_H
#define RAM_TOOLS_LOADER_H

#include <stddef.h>

/* Makes batch `index` into images[max_batch * pixels] and labels: returns
 * how many images it made (some may have been skipped), or -1 to stop the
 * epoch (the reason said on stderr).  Runs on the loader's thread. */
typedef int (*loader_fill_fn)(void *user, long index, float *images, int *labels);

typedef struct loader loader;

/* Start making batches 0..count-1, at most `depth` (>= 1) ahead of the
 * caller; each holds max_batch images of `pixels` floats.  0, or -1 with
 * "prog: ..." on stderr. */
int loader_start(const char *prog, int depth, int max_batch, size_t pixels, long count,
                 loader_fill_fn fill, void *user, loader **out);

/* The next batch: waits for it.  *images and *labels stay valid until the
 * next call.  0, or -1 when the fill function failed (nothing more comes). */
int loader_next(loader *l, const float **images, const int **labels, int *n);

/* Stop (at any point) and join the thread; NULL is a no-op. */
void loader_free(loader *l);

#endif
