#define _GNU_SOURCE
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file: a header, one state byte per image (EMPTY, WRITING, FULL), then
 * the images, each `pixels` bytes, from a page boundary.  `clean` is 1
 * only between runs: a run clears it on opening and sets it after writing
 * everything out, so a file left by a crash or a kill is made anew rather
 * than trusted (an image's bytes might not have reached the disk although
 * its state byte did). */
#define MAGIC "RAMCACH1"
enum { EMPTY = 0, WRITING = 1, FULL = 2 };

typedef struct header {
    char magic[8];
    uint64_t fingerprint, n, pixels;
    uint32_t clean, reserved;
} header;

struct image_cache {
    int fd;
    unsigned char *map;
    size_t len, data_at, pixels;
    int n;
    _Atomic unsigned char *state;
};

uint64_t cache_hash(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static image_cache *give_up(const char *prog, const char *path, const char *what, image_cache *c) {
    fprintf(stderr, "%s: warning: --cache: %s %s: %s; streaming without a cache\n", prog, what,
            path, strerror(errno));
    if (c) {
        if (c->map && c->map != MAP_FAILED) munmap(c->map, c->len);
        if (c->fd >= 0) close(c->fd);
        free(c);
    }
    return NULL;
}

image_cache *cache_open(const char *prog, const char *dir, uint64_t fingerprint, int n,
                        size_t pixels) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%016llx.ramcache", dir, (unsigned long long)fingerprint);
    if (mkdir(dir, 0777) && errno != EEXIST) return give_up(prog, dir, "cannot make", NULL);
    image_cache *c = calloc(1, sizeof *c);
    if (!c) return give_up(prog, path, "no memory for", NULL);
    c->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (c->fd < 0) return give_up(prog, path, "cannot open", c);
    if (flock(c->fd, LOCK_EX | LOCK_NB)) return give_up(prog, path, "another run is using", c);
    const long page = sysconf(_SC_PAGESIZE);
    c->n = n;
    c->pixels = pixels;
    c->data_at = (sizeof(header) + (size_t)n + (size_t)page - 1) / (size_t)page * (size_t)page;
    c->len = c->data_at + (size_t)n * pixels;
    header h = {0};
    struct stat st;
    const int trusted = !fstat(c->fd, &st) && (size_t)st.st_size == c->len &&
                        pread(c->fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
                        !memcmp(h.magic, MAGIC, 8) && h.fingerprint == fingerprint &&
                        h.n == (uint64_t)n && h.pixels == pixels && h.clean == 1;
    if (!trusted && (ftruncate(c->fd, 0) || ftruncate(c->fd, (off_t)c->len)))
        return give_up(prog, path, "cannot size", c); /* a fresh file of zeros: all EMPTY */
    c->map = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
    if (c->map == MAP_FAILED) return give_up(prog, path, "cannot map", c);
    header *hp = (header *)c->map;
    memcpy(hp->magic, MAGIC, 8);
    hp->fingerprint = fingerprint;
    hp->n = (uint64_t)n;
    hp->pixels = pixels;
    hp->clean = 0; /* in use: not to be trusted if this run does not close it */
    if (msync(c->map, (size_t)page, MS_SYNC)) return give_up(prog, path, "cannot write", c);
    c->state = (_Atomic unsigned char *)(c->map + sizeof(header));
    for (int i = 0; i < n; i++) /* a writer cut short by the end of a run: empty again */
        if (atomic_load_explicit(&c->state[i], memory_order_relaxed) == WRITING)
            atomic_store_explicit(&c->state[i], EMPTY, memory_order_relaxed);
    return c;
}

const unsigned char *cache_peek(image_cache *c, int i) {
    if (!c || i < 0 || i >= c->n ||
        atomic_load_explicit(&c->state[i], memory_order_acquire) != FULL)
        return NULL;
    return c->map + c->data_at + (size_t)i * c->pixels;
}

int cache_get(image_cache *c, int i, float *out) {
    const unsigned char *src = cache_peek(c, i);
    if (!src) return 0;
    for (size_t p = 0; p < c->pixels; p++)
        out[p] = (float)src[p] / 255.0f;
    return 1;
}

/* Image i's place in the file when this caller is to write it, else NULL
 * (there already, or being written by another thread). */
static unsigned char *claim(image_cache *c, int i) {
    if (!c || i < 0 || i >= c->n) return NULL;
    unsigned char expect = EMPTY;
    if (!atomic_compare_exchange_strong_explicit(&c->state[i], &expect, WRITING,
                                                 memory_order_acquire, memory_order_relaxed))
        return NULL;
    return c->map + c->data_at + (size_t)i * c->pixels;
}

void cache_put(image_cache *c, int i, const float *px) {
    unsigned char *dst = claim(c, i);
    if (!dst) return;
    for (size_t p = 0; p < c->pixels; p++)
        dst[p] = (unsigned char)(px[p] * 255.0f + 0.5f);
    atomic_store_explicit(&c->state[i], FULL, memory_order_release);
}

void cache_put_bytes(image_cache *c, int i, const unsigned char *px) {
    unsigned char *dst = claim(c, i);
    if (!dst) return;
    memcpy(dst, px, c->pixels);
    atomic_store_explicit(&c->state[i], FULL, memory_order_release);
}

int cache_count(const image_cache *c) {
    int full = 0;
    for (int i = 0; c && i < c->n; i++)
        full += atomic_load_explicit(&c->state[i], memory_order_relaxed) == FULL;
    return full;
}

void cache_close(image_cache *c) {
    if (!c) return;
    /* Everything to the disk first, then the mark that says so. */
    if (!msync(c->map, c->len, MS_SYNC)) {
        ((header *)c->map)->clean = 1;
        msync(c->map, sizeof(header), MS_SYNC);
    }
    munmap(c->map, c->len);
    close(c->fd);
    free(c);
}
