/* idx: IDX (MNIST) file reader and writer for the libram tools; see idx.h. */
#define _DEFAULT_SOURCE /* mmap */
#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
#define IDX_MAGIC_COLOUR 0x00000804u

/* Payloads are converted through a fixed buffer so a 47 MB file never needs
 * a second full-size copy in memory. */
#define IDX_CHUNK 65536

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint32_t get_be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static void put_be32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* Read and check the header of an unsigned-byte IDX file with `ndims`
 * dimensions and `magic` into dims, and their product into *total. */
static int read_header(FILE *f, const char *path, uint32_t magic, int ndims, uint32_t *dims,
                       uint64_t *total, char *err, size_t errlen) {
    unsigned char hdr[4 + 4 * 3];
    size_t hlen = 4 + 4 * (size_t)ndims;
    size_t got = fread(hdr, 1, hlen, f);
    if (got < 4 || (got >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b)) {
        if (ferror(f)) return fail(err, errlen, "%s: read error: %s", path, strerror(errno));
        if (got >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b)
            return fail(err, errlen, "%s: gzip-compressed; decompress it first (gunzip)", path);
        return fail(err, errlen, "%s: not an IDX file: only %zu bytes", path, got);
    }
    uint32_t m = get_be32(hdr);
    if (m != magic) {
        const char *want = magic == IDX_MAGIC_IMAGES ? "images" : "labels";
        if (m == IDX_MAGIC_IMAGES || m == IDX_MAGIC_LABELS)
            return fail(err, errlen, "%s: an IDX %s file (magic 0x%08x), expected %s (0x%08x)",
                        path, m == IDX_MAGIC_IMAGES ? "images" : "labels", (unsigned)m, want,
                        (unsigned)magic);
        if (hdr[0] == 0 && hdr[1] == 0 && hdr[2] != 0x08)
            return fail(err, errlen,
                        "%s: IDX element type 0x%02x not supported (only 0x08, "
                        "unsigned byte)",
                        path, hdr[2]);
        return fail(err, errlen, "%s: bad magic 0x%08x, expected IDX %s (0x%08x)", path,
                    (unsigned)m, want, (unsigned)magic);
    }
    if (got < hlen)
        return ferror(f)
                   ? fail(err, errlen, "%s: read error: %s", path, strerror(errno))
                   : fail(err, errlen, "%s: truncated header (%zu of %zu bytes)", path, got, hlen);
    *total = 1;
    for (int i = 0; i < ndims; i++) {
        dims[i] = get_be32(hdr + 4 + 4 * i);
        uint32_t max = i == 0 ? (uint32_t)IDX_MAX_ITEMS : (uint32_t)IDX_MAX_SIDE;
        if (dims[i] == 0 || dims[i] > max)
            return fail(err, errlen, "%s: dimension %d is %lu (must be 1..%lu): corrupt header",
                        path, i, (unsigned long)dims[i], (unsigned long)max);
        *total *= dims[i]; /* <= 1e8 * 2^16 * 2^16 < 2^63: cannot overflow */
    }
    if (*total > SIZE_MAX / sizeof(float))
        return fail(err, errlen, "%s: %llu pixels do not fit in memory", path,
                    (unsigned long long)*total);
    return 0;
}

/* The file's size must be the header's hlen bytes and the payload's total;
 * leaves f at the payload.  ftell can fail on pipes; the read loop and the
 * EOF check of read_payload() still catch truncated and oversized files then. */
static int check_size(FILE *f, const char *path, size_t hlen, uint64_t total, char *err,
                      size_t errlen) {
    if (fseek(f, 0, SEEK_END) != 0) {
        clearerr(f);
        return 0;
    }
    long size = ftell(f);
    if (size >= 0) {
        uint64_t want = hlen + total;
        if ((uint64_t)size != want)
            return fail(err, errlen, "%s: %s: header promises %llu bytes, file has %ld%s", path,
                        (uint64_t)size < want ? "truncated" : "trailing data",
                        (unsigned long long)want, size,
                        (uint64_t)size < want ? " (incomplete download?)" : "");
    }
    if (fseek(f, (long)hlen, SEEK_SET) != 0)
        return fail(err, errlen, "%s: seek failed: %s", path, strerror(errno));
    return 0;
}

/*
 * Open `path`, validate an unsigned-byte IDX header with `ndims` dimensions
 * and `magic`, and check that the file holds exactly the payload the header
 * promises.  The size is checked before anything is allocated, so a corrupt
 * header cannot make the caller allocate gigabytes.  On success *out is left
 * positioned at the first payload byte.
 */
static int open_idx(const char *path, uint32_t magic, int ndims, uint32_t *dims, uint64_t *payload,
                    FILE **out, char *err, size_t errlen) {
    if (!path || !*path) return fail(err, errlen, "no file name given");
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    uint64_t total = 0;
    if (read_header(f, path, magic, ndims, dims, &total, err, errlen) != 0 ||
        check_size(f, path, 4 + 4 * (size_t)ndims, total, err, errlen) != 0) {
        fclose(f);
        return -1;
    }
    *payload = total;
    *out = f;
    return 0;
}

/* Read `total` payload bytes into exactly one of fout (as byte / 255) or
 * iout (as int), then insist on end of file. */
static int read_payload(FILE *f, const char *path, uint64_t total, float *fout, int *iout,
                        char *err, size_t errlen) {
    unsigned char buf[IDX_CHUNK];
    uint64_t done = 0;
    while (done < total) {
        size_t want = total - done < IDX_CHUNK ? (size_t)(total - done) : IDX_CHUNK;
        size_t got = fread(buf, 1, want, f);
        for (size_t i = 0; i < got; i++) {
            if (fout)
                fout[done + i] = (float)buf[i] / 255.0f;
            else
                iout[done + i] = buf[i];
        }
        done += got;
        if (got < want) {
            if (ferror(f)) return fail(err, errlen, "%s: read error: %s", path, strerror(errno));
            return fail(err, errlen, "%s: truncated: %llu of %llu payload bytes", path,
                        (unsigned long long)done, (unsigned long long)total);
        }
    }
    if (fgetc(f) != EOF)
        return fail(err, errlen, "%s: trailing data after %llu payload bytes", path,
                    (unsigned long long)total);
    if (ferror(f)) return fail(err, errlen, "%s: read error: %s", path, strerror(errno));
    return 0;
}

/* A whole file of `ndims` dimensions into a new array: floats (byte / 255)
 * or ints. */
static int load(const char *path, uint32_t magic, int ndims, uint32_t *dims, int as_float,
                void **out, char *err, size_t errlen) {
    uint64_t total = 0;
    FILE *f = NULL;
    if (open_idx(path, magic, ndims, dims, &total, &f, err, errlen) != 0) return -1;
    void *data = malloc((size_t)total * (as_float ? sizeof(float) : sizeof(int)));
    if (!data) {
        fclose(f);
        return fail(err, errlen, "%s: out of memory for %llu %s", path, (unsigned long long)total,
                    as_float ? "pixels" : "labels");
    }
    int rc =
        read_payload(f, path, total, as_float ? data : NULL, as_float ? NULL : data, err, errlen);
    fclose(f);
    if (rc != 0) {
        free(data);
        return -1;
    }
    *out = data;
    return 0;
}

int idx_load_images(const char *path, float **images, int *n, int *h, int *w, char *err,
                    size_t errlen) {
    if (!images || !n || !h || !w)
        return fail(err, errlen, "idx_load_images: NULL output argument");
    uint32_t dims[3];
    void *px;
    if (load(path, IDX_MAGIC_IMAGES, 3, dims, 1, &px, err, errlen) != 0) return -1;
    *images = px;
    *n = (int)dims[0];
    *h = (int)dims[1];
    *w = (int)dims[2];
    return 0;
}

int idx_load_labels(const char *path, int **labels, int *n, char *err, size_t errlen) {
    if (!labels || !n) return fail(err, errlen, "idx_load_labels: NULL output argument");
    uint32_t dims[1];
    void *lab;
    if (load(path, IDX_MAGIC_LABELS, 1, dims, 0, &lab, err, errlen) != 0) return -1;
    *labels = lab;
    *n = (int)dims[0];
    return 0;
}

int idx_load_mnist(const char *dir, const char *split, float **images, int **labels, int *n, int *h,
                   int *w, char *err, size_t errlen) {
    if (!dir || !*dir || !split || !*split)
        return fail(err, errlen, "idx_load_mnist: empty directory or split name");
    if (!images || !labels || !n || !h || !w)
        return fail(err, errlen, "idx_load_mnist: NULL output argument");
    char ipath[4096], lpath[4096];
    int a = snprintf(ipath, sizeof ipath, "%s/%s-images-idx3-ubyte", dir, split);
    int b = snprintf(lpath, sizeof lpath, "%s/%s-labels-idx1-ubyte", dir, split);
    if (a < 0 || (size_t)a >= sizeof ipath || b < 0 || (size_t)b >= sizeof lpath)
        return fail(err, errlen, "idx_load_mnist: path too long");

    float *img = NULL;
    int *lab = NULL;
    int ni, nl, hh, ww;
    if (idx_load_images(ipath, &img, &ni, &hh, &ww, err, errlen) != 0) return -1;
    if (idx_load_labels(lpath, &lab, &nl, err, errlen) != 0) {
        free(img);
        return -1;
    }
    if (ni != nl) {
        free(img);
        free(lab);
        return fail(err, errlen, "%s has %d images but %s has %d labels", ipath, ni, lpath, nl);
    }
    for (int i = 0; i < nl; i++) {
        if (lab[i] > 9) {
            int bad = lab[i];
            free(img);
            free(lab);
            return fail(err, errlen, "%s: label %d of item %d is not a digit 0..9", lpath, bad, i);
        }
    }
    *images = img;
    *labels = lab;
    *n = ni;
    *h = hh;
    *w = ww;
    return 0;
}

/* Open "<path>.tmp" for writing and emit the header; see finish_write(). */
static FILE *begin_write(const char *path, char *tmp, size_t tmplen, const unsigned char *hdr,
                         size_t hlen, char *err, size_t errlen) {
    if (!path || !*path) {
        fail(err, errlen, "no file name given");
        return NULL;
    }
    int k = snprintf(tmp, tmplen, "%s.tmp", path);
    if (k < 0 || (size_t)k >= tmplen) {
        fail(err, errlen, "%s: path too long", path);
        return NULL;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fail(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return NULL;
    }
    if (fwrite(hdr, 1, hlen, f) != hlen) {
        fail(err, errlen, "%s: write error: %s", tmp, strerror(errno));
        fclose(f);
        remove(tmp);
        return NULL;
    }
    return f;
}

/* Close, and rename into place only if every write succeeded. */
static int finish_write(FILE *f, int ok, const char *tmp, const char *path, char *err,
                        size_t errlen) {
    int saved = errno;
    if (fflush(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ferror(f) && ok) ok = 0;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        remove(tmp);
        return fail(err, errlen, "%s: write error: %s", tmp, strerror(saved));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return fail(err, errlen, "%s: cannot rename to %s: %s", tmp, path, strerror(e));
    }
    return 0;
}

int idx_save_images(const char *path, const float *images, int n, int h, int w, char *err,
                    size_t errlen) {
    if (!images) return fail(err, errlen, "idx_save_images: NULL images");
    if (n < 1 || n > IDX_MAX_ITEMS || h < 1 || h > IDX_MAX_SIDE || w < 1 || w > IDX_MAX_SIDE)
        return fail(err, errlen, "idx_save_images: bad shape %d x %d x %d", n, h, w);
    unsigned char hdr[16];
    put_be32(hdr, IDX_MAGIC_IMAGES);
    put_be32(hdr + 4, (uint32_t)n);
    put_be32(hdr + 8, (uint32_t)h);
    put_be32(hdr + 12, (uint32_t)w);
    char tmp[4200];
    FILE *f = begin_write(path, tmp, sizeof tmp, hdr, sizeof hdr, err, errlen);
    if (!f) return -1;

    uint64_t total = (uint64_t)n * (uint64_t)h * (uint64_t)w;
    unsigned char buf[IDX_CHUNK];
    int ok = 1;
    for (uint64_t done = 0; done < total && ok;) {
        size_t k = total - done < IDX_CHUNK ? (size_t)(total - done) : IDX_CHUNK;
        for (size_t i = 0; i < k; i++) {
            float v = images[done + i];
            /* !(v > 0) also maps NaN to 0; + 0.5 rounds without needing libm */
            v = !(v > 0.0f) ? 0.0f : v > 1.0f ? 1.0f : v;
            buf[i] = (unsigned char)(v * 255.0f + 0.5f);
        }
        if (fwrite(buf, 1, k, f) != k) ok = 0;
        done += k;
    }
    return finish_write(f, ok, tmp, path, err, errlen);
}

int idx_save_items(const char *path, const uint32_t *dims, int ndims, idx_item_fn item, void *ctx,
                   char *err, size_t errlen) {
    if (!dims || !item || ndims < 2 || ndims > 4)
        return fail(err, errlen, "idx_save_items: bad arguments");
    if (dims[0] < 1 || dims[0] > IDX_MAX_ITEMS)
        return fail(err, errlen, "idx_save_items: bad count %u", (unsigned)dims[0]);
    uint64_t per = 1;
    for (int d = 1; d < ndims; d++) {
        if (dims[d] < 1 || dims[d] > IDX_MAX_SIDE)
            return fail(err, errlen, "idx_save_items: bad dimension %d: %u", d, (unsigned)dims[d]);
        per *= dims[d];
    }
    if (per > SIZE_MAX / 2) return fail(err, errlen, "idx_save_items: items too large");
    unsigned char hdr[4 + 4 * 4] = {0, 0, 8, (unsigned char)ndims};
    for (int d = 0; d < ndims; d++)
        put_be32(hdr + 4 + 4 * d, dims[d]);
    unsigned char *bytes = malloc((size_t)per);
    if (!bytes)
        return fail(err, errlen, "idx_save_items: out of memory for %llu bytes",
                    (unsigned long long)per);
    char tmp[4200];
    FILE *f = begin_write(path, tmp, sizeof tmp, hdr, 4 + 4 * (size_t)ndims, err, errlen);
    if (!f) {
        free(bytes);
        return -1;
    }
    int ok = 1;
    for (uint32_t i = 0; i < dims[0] && ok; i++) {
        if (item(ctx, (int)i, bytes)) { /* the reason is the caller's */
            fclose(f);
            remove(tmp);
            free(bytes);
            return -1;
        }
        ok = fwrite(bytes, 1, (size_t)per, f) == (size_t)per;
    }
    free(bytes);
    return finish_write(f, ok, tmp, path, err, errlen);
}

int idx_save_labels(const char *path, const int *labels, int n, char *err, size_t errlen) {
    if (!labels) return fail(err, errlen, "idx_save_labels: NULL labels");
    if (n < 1 || n > IDX_MAX_ITEMS) return fail(err, errlen, "idx_save_labels: bad count %d", n);
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] > 255)
            return fail(err, errlen, "idx_save_labels: label %d of item %d not in 0..255",
                        labels[i], i);
    unsigned char hdr[8];
    put_be32(hdr, IDX_MAGIC_LABELS);
    put_be32(hdr + 4, (uint32_t)n);
    char tmp[4200];
    FILE *f = begin_write(path, tmp, sizeof tmp, hdr, sizeof hdr, err, errlen);
    if (!f) return -1;
    unsigned char buf[IDX_CHUNK];
    int ok = 1;
    for (int done = 0; done < n && ok;) {
        int k = n - done < IDX_CHUNK ? n - done : IDX_CHUNK;
        for (int i = 0; i < k; i++)
            buf[i] = (unsigned char)labels[done + i];
        if (fwrite(buf, 1, (size_t)k, f) != (size_t)k) ok = 0;
        done += k;
    }
    return finish_write(f, ok, tmp, path, err, errlen);
}

/* ---- mapped files -------------------------------------------------------------- */

int idx_parse(const unsigned char *data, size_t size, npy_array *a, char *err, size_t errlen) {
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b)
        return fail(err, errlen, "gzip-compressed; decompress it first (gunzip)");
    if (size < 4) return fail(err, errlen, "not an IDX file: only %zu bytes", size);
    const uint32_t m = get_be32(data);
    if (data[0] != 0 || data[1] != 0)
        return fail(err, errlen, "bad magic 0x%08x: not an IDX file", (unsigned)m);
    if (data[2] != 0x08)
        return fail(err, errlen, "IDX element type 0x%02x not supported (only 0x08, unsigned byte)",
                    data[2]);
    if (m != IDX_MAGIC_LABELS && m != IDX_MAGIC_IMAGES && m != IDX_MAGIC_COLOUR)
        return fail(err, errlen,
                    "%d dimensions: these tools read 1 (labels), 3 (N x H x W) or 4 "
                    "(N x H x W x C)",
                    data[3]);
    const int nd = data[3];
    const size_t hlen = 4 + 4 * (size_t)nd;
    if (size < hlen) return fail(err, errlen, "truncated header (%zu of %zu bytes)", size, hlen);
    npy_array t = {.data = data + hlen, .kind = 'u', .item = 1, .ndim = nd, .count = 1};
    for (int i = 0; i < nd; i++) {
        const uint32_t d = get_be32(data + 4 + 4 * i);
        const uint32_t max = i == 0 ? (uint32_t)IDX_MAX_ITEMS : (uint32_t)IDX_MAX_SIDE;
        if (d == 0 || d > max)
            return fail(err, errlen, "dimension %d is %lu (must be 1..%lu): corrupt header", i,
                        (unsigned long)d, (unsigned long)max);
        t.shape[i] = (long)d;
        /* a count of at most 2^40 times a side of at most 2^27 cannot wrap */
        t.count *= d;
        if (t.count > (size_t)1 << 40)
            return fail(err, errlen, "dimensions of over 2^40 bytes: corrupt header");
    }
    if (nd == 4 && t.shape[3] != 1 && t.shape[3] != 3 && t.shape[3] != 4)
        return fail(err, errlen,
                    "colour images N x H x W x C need C 1, 3 or 4 channels, not %ld: corrupt "
                    "header?",
                    t.shape[3]);
    if (size - hlen != t.count)
        return fail(err, errlen, "%s: header promises %llu bytes, file has %zu%s",
                    size - hlen < t.count ? "truncated" : "trailing data",
                    (unsigned long long)(hlen + t.count), size,
                    size - hlen < t.count ? " (incomplete download?)" : "");
    t.layout = npy_image_layout(&t);
    *a = t;
    return 0;
}

int idx_map(const char *path, npz_file *map, npy_array *a, char *err, size_t errlen) {
    char why[256];
    struct stat st;
    if (!path || !*path) return fail(err, errlen, "no file name given");
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return fail(err, errlen, "%s: cannot read: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 4) {
        close(fd);
        return fail(err, errlen, "%s: %s", path,
                    S_ISREG(st.st_mode) ? "not an IDX file: under 4 bytes" : "not a regular file");
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return fail(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    npz_file f = {m, (size_t)st.st_size};
    if (idx_parse(f.map, f.len, a, why, sizeof why)) {
        npz_close(&f);
        return fail(err, errlen, "%s: %s", path, why);
    }
    *map = f;
    return 0;
}

int idx_colour_split(const char *dir, const char *split, char *images, char *labels, size_t cap) {
    if (!dir || !split) return 0;
    const int a = snprintf(images, cap, "%s/%s-images-idx4-ubyte", dir, split);
    const int b = snprintf(labels, cap, "%s/%s-labels-idx1-ubyte", dir, split);
    if (a < 0 || b < 0 || (size_t)a >= cap || (size_t)b >= cap) return 0;
    FILE *f = fopen(images, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}
