/* npz_write: stored .npz files (see npz_write.h). */
#define _DEFAULT_SOURCE /* fseeko */
#include "npz_write.h"

#include "files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

#define ZIP_MAX32 0xffffffffu
/* 1980-01-01 00:00, the earliest zip date: the same bytes on every run */
#define ZIP_DATE 0x21

static unsigned char *put(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        *p++ = (unsigned char)(v >> 8 * i);
    return p;
}

static int out(npz_writer *w, const void *b, size_t len, char *err, size_t errlen) {
    if (fwrite(b, 1, len, w->f) != len)
        return file_fail(err, errlen, "%s: write error: %s", w->tmp, strerror(errno));
    w->at += len;
    return 0;
}

int npz_write_begin(npz_writer *w, const char *path, char *err, size_t errlen) {
    *w = (npz_writer){0};
    if (snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path)
        return file_fail(err, errlen, "%s: path too long", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
    if (!(w->f = fopen(w->tmp, "wb")))
        return file_fail(err, errlen, "%s: cannot create: %s", w->tmp, strerror(errno));
    return 0;
}

/* Close the open member: all its bytes written, its CRC-32 put in place. */
static int close_member(npz_writer *w, char *err, size_t errlen) {
    if (!w->open) return 0;
    w->open = 0;
    npz_entry *e = &w->entries[w->n - 1];
    if (w->left)
        return file_fail(err, errlen, "%s: %s: %llu bytes short of its shape", w->tmp, e->name,
                         (unsigned long long)w->left);
    unsigned char b[4];
    put(b, e->crc, 4);
    if (fseeko(w->f, (off_t)w->data, SEEK_SET) || fwrite(b, 1, 4, w->f) != 4 ||
        fseeko(w->f, 0, SEEK_END))
        return file_fail(err, errlen, "%s: write error: %s", w->tmp, strerror(errno));
    return 0;
}

/* The .npy header (version 1.0) of an array, padded so that the data
 * starts at a multiple of 64 bytes as NumPy pads it: its length, 0 if too long. */
static size_t npy_header(unsigned char *h, size_t cap, const char *descr, int ndim,
                         const long *shape) {
    char dict[512], dims[256] = "";
    size_t k = 0;
    for (int i = 0; i < ndim; i++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%ld%s", shape[i],
                              ndim == 1      ? ","
                              : i + 1 < ndim ? ", "
                                             : "");
    const int d = snprintf(dict, sizeof dict,
                           "{'descr': '%s', 'fortran_order': False, "
                           "'shape': (%s), }",
                           descr, dims);
    size_t total = 10 + (size_t)d + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap || total - 10 > 65535) return 0;
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    put(h + 8, total - 10, 2);
    memcpy(h + 10, dict, (size_t)d);
    memset(h + 10 + d, ' ', total - 10 - (size_t)d - 1);
    h[total - 1] = '\n';
    return total;
}

int npz_write_member(npz_writer *w, const char *name, const char *descr, int ndim,
                     const long *shape, char *err, size_t errlen) {
    if (close_member(w, err, errlen)) return -1;
    if (ndim < 1 || ndim > 4 || strlen(name) > 59 || strlen(descr) > 4)
        return file_fail(err, errlen, "%s: %s: a bad member", w->tmp, name);
    int item = descr[2] - '0';
    uint64_t bytes = (uint64_t)item;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] && bytes > UINT64_MAX / 2 / (uint64_t)shape[i]))
            return file_fail(err, errlen, "%s: %s: a bad shape", w->tmp, name);
        bytes *= (uint64_t)shape[i];
    }
    if (w->n == w->cap) {
        const int cap = w->cap ? 2 * w->cap : 8;
        npz_entry *e = realloc(w->entries, sizeof *e * (size_t)cap);
        if (!e) return file_fail(err, errlen, "%s: out of memory", w->tmp);
        w->entries = e;
        w->cap = cap;
    }
    unsigned char h[1024];
    const size_t hlen = npy_header(h, sizeof h, descr, ndim, shape);
    if (!hlen) return file_fail(err, errlen, "%s: %s: header too long", w->tmp, name);
    npz_entry *e = &w->entries[w->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s.npy", name);
    e->offset = w->at;
    e->size = hlen + bytes;
    const int big = w->zip64 || e->size >= ZIP_MAX32 || e->offset >= ZIP_MAX32;
    const size_t nlen = strlen(e->name);
    unsigned char l[30 + 64 + 20], *p = l;
    p = put(p, 0x04034b50u, 4);
    p = put(p, big ? 45 : 20, 2); /* version needed: 4.5 for zip64 */
    p = put(p, 0, 2);             /* flags */
    p = put(p, 0, 2);             /* stored */
    p = put(p, 0, 2);
    p = put(p, ZIP_DATE, 2);
    p = put(p, 0, 4); /* CRC-32: put in place by close_member */
    p = put(p, big ? ZIP_MAX32 : e->size, 4);
    p = put(p, big ? ZIP_MAX32 : e->size, 4);
    p = put(p, nlen, 2);
    p = put(p, big ? 20 : 0, 2);
    memcpy(p, e->name, nlen);
    p += nlen;
    if (big) {
        p = put(p, 1, 2);
        p = put(p, 16, 2);
        p = put(p, e->size, 8);
        p = put(p, e->size, 8);
    }
    w->data = e->offset + 14;
    if (out(w, l, (size_t)(p - l), err, errlen)) return -1;
    e->crc = (uint32_t)crc32(0L, h, (uInt)hlen);
    w->open = 1;
    w->left = bytes;
    return out(w, h, hlen, err, errlen);
}

int npz_write_data(npz_writer *w, const void *bytes, size_t len, char *err, size_t errlen) {
    if (!w->open || len > w->left)
        return file_fail(err, errlen, "%s: more data than the member's shape holds", w->tmp);
    npz_entry *e = &w->entries[w->n - 1];
    const unsigned char *b = bytes;
    uLong crc = e->crc;
    for (size_t k = 0; k < len; k += 1u << 30) /* crc32 counts in uInt */
        crc = crc32(crc, b + k, (uInt)(len - k < 1u << 30 ? len - k : 1u << 30));
    e->crc = (uint32_t)crc;
    w->left -= len;
    return out(w, bytes, len, err, errlen);
}

int npz_write_end(npz_writer *w, char *err, size_t errlen) {
    if (close_member(w, err, errlen)) return -1;
    const uint64_t cd = w->at;
    for (int i = 0; i < w->n; i++) {
        const npz_entry *e = &w->entries[i];
        const int big_size = w->zip64 || e->size >= ZIP_MAX32;
        const int big_off = w->zip64 || e->offset >= ZIP_MAX32;
        const size_t nlen = strlen(e->name), xlen = (big_size ? 16 : 0) + (big_off ? 8 : 0);
        unsigned char c[46 + 64 + 28], *p = c;
        p = put(p, 0x02014b50u, 4);
        p = put(p, 3u << 8 | 45, 2); /* made by: Unix, zip 4.5 */
        p = put(p, big_size || big_off ? 45 : 20, 2);
        p = put(p, 0, 2);
        p = put(p, 0, 2);
        p = put(p, 0, 2);
        p = put(p, ZIP_DATE, 2);
        p = put(p, e->crc, 4);
        p = put(p, big_size ? ZIP_MAX32 : e->size, 4);
        p = put(p, big_size ? ZIP_MAX32 : e->size, 4);
        p = put(p, nlen, 2);
        p = put(p, xlen ? xlen + 4 : 0, 2);
        p = put(p, 0, 2);              /* comment */
        p = put(p, 0, 2);              /* disk */
        p = put(p, 0, 2);              /* internal attributes */
        p = put(p, 0100644u << 16, 4); /* a regular file, rw-r--r-- */
        p = put(p, big_off ? ZIP_MAX32 : e->offset, 4);
        memcpy(p, e->name, nlen);
        p += nlen;
        if (xlen) {
            p = put(p, 1, 2);
            p = put(p, xlen, 2);
            if (big_size) p = put(put(p, e->size, 8), e->size, 8);
            if (big_off) p = put(p, e->offset, 8);
        }
        if (out(w, c, (size_t)(p - c), err, errlen)) return -1;
    }
    const uint64_t cd_size = w->at - cd, z64 = w->at;
    const int big = w->zip64 || w->n >= 0xffff || cd >= ZIP_MAX32 || cd_size >= ZIP_MAX32;
    unsigned char end[56 + 20 + 22], *p = end;
    if (big) {
        p = put(p, 0x06064b50u, 4);
        p = put(p, 44, 8); /* the record's size after this field */
        p = put(p, 3u << 8 | 45, 2);
        p = put(p, 45, 2);
        p = put(p, 0, 4);
        p = put(p, 0, 4);
        p = put(p, (uint64_t)w->n, 8);
        p = put(p, (uint64_t)w->n, 8);
        p = put(p, cd_size, 8);
        p = put(p, cd, 8);
        p = put(p, 0x07064b50u, 4); /* the locator */
        p = put(p, 0, 4);
        p = put(p, z64, 8);
        p = put(p, 1, 4);
    }
    p = put(p, 0x06054b50u, 4);
    p = put(p, 0, 2);
    p = put(p, 0, 2);
    p = put(p, big ? 0xffff : (uint64_t)w->n, 2);
    p = put(p, big ? 0xffff : (uint64_t)w->n, 2);
    p = put(p, big ? ZIP_MAX32 : cd_size, 4);
    p = put(p, big ? ZIP_MAX32 : cd, 4);
    p = put(p, 0, 2);
    if (out(w, end, (size_t)(p - end), err, errlen)) return -1;
    FILE *f = w->f;
    w->f = NULL;
    if (fflush(f) != 0 || ferror(f)) {
        const int e = errno;
        fclose(f);
        return file_fail(err, errlen, "%s: write error: %s", w->tmp, strerror(e));
    }
    if (fclose(f) != 0)
        return file_fail(err, errlen, "%s: write error: %s", w->tmp, strerror(errno));
    if (rename(w->tmp, w->path) != 0)
        return file_fail(err, errlen, "%s: cannot rename to %s: %s", w->tmp, w->path,
                         strerror(errno));
    w->tmp[0] = '\0'; /* nothing left to remove */
    return 0;
}

void npz_write_abort(npz_writer *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
    if (w->tmp[0]) remove(w->tmp);
    w->tmp[0] = '\0';
    free(w->entries);
    w->entries = NULL;
    w->n = w->cap = 0;
}
