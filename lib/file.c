/* The file container of models and checkpoints: a little-endian chunked
 * format with a CRC-32 trailer (docs/file-format.md), parsed with every size
 * checked before it is trusted, and written atomically (temporary file,
 * fsync, rename).  What the chunks hold is serialize.c's. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RAM_FORMAT_VERSION 1
#define HEADER_SIZE        16 /* magic[8], u32 version, u32 kind */
#define CHUNK_HEADER       16 /* u32 tag, u32 reserved, u64 length */
#define MAX_FILE_SIZE      (1ULL << 32)

/* Whether n bytes reach MAX_FILE_SIZE; never where a size_t cannot count
 * that far (32-bit hosts), said without a comparison that is always false
 * there (gcc's -Wtype-limits). */
static inline bool reaches_max_file_size(size_t n) {
#if SIZE_MAX > 0xffffffffu
    return n >= MAX_FILE_SIZE;
#else
    (void)n;
    return false;
#endif
}
static const unsigned char MAGIC[8] = {0x89, 'R', 'A', 'M', '\r', '\n', 0x1a, '\n'};
#define TAG_END RAM_TAG('E', 'N', 'D', ' ')

/* ---- CRC-32 (IEEE 802.3, as zlib) ---- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t ram_crc32(const unsigned char *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    const uint32_t *table = crc_table;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* ---- writing ---- */

static void buf_reserve(ram_buf *b, size_t extra) {
    if (b->failed) return;
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return;
    }
    b->data = d;
    b->cap = cap;
}

void ram_buf_bytes(ram_buf *b, const void *p, size_t n) {
    buf_reserve(b, n);
    if (b->failed || !n) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void ram_buf_u32(ram_buf *b, uint32_t v) {
#ifndef RAM_TEST_WRITER_BIG_ENDIAN_HOST_ORDER
    unsigned char x[4] = {v & 0xff, v >> 8 & 0xff, v >> 16 & 0xff, v >> 24 & 0xff};
#else
    /* Never in libram: the mutant that tests/check_byteorder.c must catch
     * (its check_byteorder_mutant build).  A writer that stored each word
     * in host order would write these bytes on a big-endian host; written
     * out here, the mutant is the same on every host, this one included. */
    unsigned char x[4] = {v >> 24 & 0xff, v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff};
#endif
    ram_buf_bytes(b, x, 4);
}

void ram_buf_u64(ram_buf *b, uint64_t v) {
    ram_buf_u32(b, (uint32_t)v);
    ram_buf_u32(b, (uint32_t)(v >> 32));
}

void ram_buf_f32(ram_buf *b, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    ram_buf_u32(b, u);
}

void ram_buf_floats(ram_buf *b, const float *p, size_t n) {
    buf_reserve(b, 4 * n);
    for (size_t i = 0; i < n && !b->failed; i++)
        ram_buf_f32(b, p[i]);
}

void ram_file_begin(ram_buf *b) {
    ram_buf_bytes(b, MAGIC, 8);
    ram_buf_u32(b, RAM_FORMAT_VERSION);
    ram_buf_u32(b, 0);
}

void ram_file_chunk(ram_buf *b, uint32_t tag, const ram_buf *payload) {
    if (payload->failed) b->failed = true;
    ram_buf_u32(b, tag);
    ram_buf_u32(b, 0);
    ram_buf_u64(b, payload->len);
    ram_buf_bytes(b, payload->data, payload->len);
}

static ram_status write_all(int fd, const unsigned char *p, size_t n, const char *tmp) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return ram_fail(RAM_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
        p += k;
        n -= (size_t)k;
    }
    return RAM_OK;
}

ram_status ram_file_finish_and_write(ram_buf *b, const char *path) {
    ram_status s = RAM_OK;
    ram_buf_u32(b, TAG_END);
    ram_buf_u32(b, 0);
    ram_buf_u64(b, 4);
    if (!b->failed) ram_buf_u32(b, ram_crc32(b->data, b->len - CHUNK_HEADER));
    if (b->failed) {
        free(b->data);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory building the file", path);
    }
    if (reaches_max_file_size(b->len)) { /* the loader would refuse it */
        free(b->data);
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: %zu bytes: files must stay under 4 GiB",
                        path, b->len);
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        free(b->data);
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp-XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        s = ram_fail(RAM_ERR_IO, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
        goto out;
    }
    fchmod(fd, 0644); /* mkstemp makes 0600; a model is meant to be shared */
    s = write_all(fd, b->data, b->len, tmp);
    /* fsync before rename: otherwise a crash can leave the new name pointing
     * at an empty file on some file systems. */
    if (!s && fsync(fd) != 0)
        s = ram_fail(RAM_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && !s)
        s = ram_fail(RAM_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (!s && rename(tmp, path) != 0)
        s = ram_fail(RAM_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (s) {
        unlink(tmp);
    } else { /* make the rename itself durable */
        char *slash = strrchr(tmp, '/');
        const char *dir = ".";
        if (slash) {
            slash[slash == tmp ? 1 : 0] = '\0';
            dir = tmp;
        }
        int dfd = open(dir, O_RDONLY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
out:
    free(tmp);
    free(b->data);
    b->data = NULL;
    return s;
}

/* ---- reading ---- */

static const unsigned char *rd_take(ram_reader *r, size_t n) {
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p + r->pos;
    r->pos += n;
    return p;
}

uint32_t ram_rd_u32(ram_reader *r) {
    const unsigned char *p = rd_take(r, 4);
    if (!p) return 0;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t ram_rd_u64(ram_reader *r) {
    uint64_t lo = ram_rd_u32(r);
    return lo | (uint64_t)ram_rd_u32(r) << 32;
}

float ram_rd_f32(ram_reader *r) {
    uint32_t u = ram_rd_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

bool ram_rd_floats(ram_reader *r, float *dst, size_t n) {
    if (r->bad || (r->len - r->pos) / 4 < n) {
        r->bad = true;
        return false;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = ram_rd_f32(r);
    return true;
}

ram_status ram_file_read(const char *path, unsigned char **data, size_t *len) {
    if (!path || !data || !len) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return ram_fail(RAM_ERR_IO, "%s: %s", path, strerror(errno));
    /* Read in growing blocks rather than trusting a size from stat: works on
     * pipes, and a file that shrinks under us is seen as truncated. */
    size_t cap = 1 << 16, n = 0;
    unsigned char *d = malloc(cap);
    ram_status s = RAM_OK;
    while (d) {
        if (n == cap) {
            if (reaches_max_file_size(cap)) {
                s = ram_fail(RAM_ERR_FORMAT, "%s: larger than %llu bytes: not a libram file", path,
                             (unsigned long long)MAX_FILE_SIZE);
                break;
            }
            unsigned char *nd = realloc(d, cap * 2);
            if (!nd) {
                s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
                break;
            }
            d = nd;
            cap *= 2;
        }
        size_t k = fread(d + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) s = ram_fail(RAM_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (!d) return ram_fail(RAM_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
    if (s) {
        free(d);
        return s;
    }
    s = ram_file_verify(d, n, path);
    if (s) {
        free(d);
        return s;
    }
    *data = d;
    *len = n;
    return RAM_OK;
}

ram_status ram_file_verify(const unsigned char *d, size_t n, const char *path) {
    if (!d && n) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "verify: NULL argument");
    if (n < HEADER_SIZE || memcmp(d, MAGIC, 8) != 0) {
        /* A prefix of the magic is a truncated libram file, not a foreign one. */
        bool prefix = n > 0 && memcmp(d, MAGIC, n < 8 ? n : 8) == 0;
        return ram_fail(prefix ? RAM_ERR_CORRUPT : RAM_ERR_FORMAT,
                        prefix ? "%s: truncated libram file" : "%s: not a libram file (bad magic)",
                        path);
    }
    ram_reader r = {d, n, 8, false};
    uint32_t version = ram_rd_u32(&r);
    ram_rd_u32(&r); /* kind: reserved */
    if (version != RAM_FORMAT_VERSION)
        return ram_fail(RAM_ERR_VERSION, "%s: file format version %u, this libram reads %d", path,
                        version, RAM_FORMAT_VERSION);
    /* Walk the chunks to the END chunk, which must close the file. */
    for (;;) {
        size_t at = r.pos;
        uint32_t tag = ram_rd_u32(&r);
        uint32_t reserved = ram_rd_u32(&r);
        uint64_t clen = ram_rd_u64(&r);
        if (r.bad || clen > r.len - r.pos)
            return ram_fail(RAM_ERR_CORRUPT, "%s: truncated (chunk at byte %zu runs past the end)",
                            path, at);
        if (tag == TAG_END) {
            /* The END header is outside the CRC, so check all of it here. */
            if (clen != 4 || reserved != 0 || r.pos + 4 != n)
                return ram_fail(RAM_ERR_CORRUPT, "%s: malformed end chunk at byte %zu", path, at);
            uint32_t want = ram_rd_u32(&r), got = ram_crc32(d, at);
            if (want != got)
                return ram_fail(RAM_ERR_CORRUPT,
                                "%s: checksum mismatch (stored %08x, computed %08x)", path, want,
                                got);
            return RAM_OK;
        }
        r.pos += clen;
    }
}

bool ram_file_find(const unsigned char *data, size_t len, uint32_t tag, ram_reader *chunk) {
    ram_reader r = {data, len, HEADER_SIZE, false};
    for (;;) {
        uint32_t t = ram_rd_u32(&r);
        ram_rd_u32(&r);
        uint64_t clen = ram_rd_u64(&r);
        if (r.bad || clen > r.len - r.pos || t == TAG_END) return false;
        if (t == tag) {
            *chunk = (ram_reader){data + r.pos, (size_t)clen, 0, false};
            return true;
        }
        r.pos += clen;
    }
}
