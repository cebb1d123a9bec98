/* cache: the decoded images of a streamed set, kept in a file (ram-train's
 * --cache DIR), so that decoding is paid once, not every epoch: a 512 x 512
 * PNG takes longer to decode than to train on, so a streamed folder of
 * them trains at its decoder's pace, and from the cache at the pace of a
 * memory-mapped array.  Each image is stored as the bytes a kept set holds
 * (fitted, rounded), so reading it back gives the very pixels decoding
 * would.  Part of the tools. */
#ifndef RAM_TOOLS_CACHE_H
#define RAM_TOOLS_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct image_cache image_cache;

/* The cache of `n` images of `pixels` bytes whose files and fitting
 * `fingerprint` identifies, in DIR/<fingerprint>.ramcache: opened when it
 * matches and was closed cleanly (its images then read at once), else made
 * anew (an interrupted run's file is not trusted).  NULL, with a warning on
 * stderr, when the folder cannot be made or the file cannot be opened,
 * sized or locked (another run using it): the set is then streamed without
 * a cache, never wrong. */
image_cache *cache_open(const char *prog, const char *dir, uint64_t fingerprint, int n,
                        size_t pixels);

/* Image i as floats (byte / 255) into out: 1 when it is in the cache, 0
 * when not (out untouched).  Safe from several threads at once. */
int cache_get(image_cache *c, int i, float *out);

/* Image i's bytes in the cache (c x h x w, byte / 255 being the pixel),
 * valid until cache_close(); NULL when it is not in the cache.  Safe from
 * several threads at once. */
const unsigned char *cache_peek(image_cache *c, int i);
/* Keep image i (px: floats that are whole multiples of 1/255, as a
 * streamed set rounds them).  The first caller for an image writes it;
 * others return at once.  Safe from several threads at once. */
void cache_put(image_cache *c, int i, const float *px);

/* cache_put() of the bytes themselves. */
void cache_put_bytes(image_cache *c, int i, const unsigned char *px);
/* How many images the cache holds (for the progress report). */
int cache_count(const image_cache *c);

/* Write the cache out and mark it clean; NULL is a no-op. */
void cache_close(image_cache *c);

/* FNV-1a, 64 bits, over `len` bytes, continuing from h (start with
 * CACHE_HASH_START): for building fingerprints. */
#define CACHE_HASH_START 0xcbf29ce484222325ull
uint64_t cache_hash(uint64_t h, const void *data, size_t len);

#endif
