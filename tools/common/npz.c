#define _DEFAULT_SOURCE /* mmap, sysconf(_SC_PHYS_PAGES) */
/* NumPy .npz and .npy files, memory-mapped or inflated (see npz.h). */
#include "npz.h"

#include "files.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int npz_is_npz(const char *path) {
    struct stat st;
    const char *dot = strrchr(path, '.');
    return dot && !strcmp(dot, ".npz") && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int npz_open(const char *prog, const char *path, npz_file *z) {
    struct stat st;
    errno = 0;
    int fd = open(path, O_RDONLY);
    z->map = NULL;
    z->len = 0;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 22) {
        if (prog)
            fprintf(stderr, "%s: cannot read %s: %s\n", prog, path,
                    fd < 0 || errno ? strerror(errno) : "too short for a zip file");
        if (fd >= 0) close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        if (prog) fprintf(stderr, "%s: cannot map %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    z->map = m;
    z->len = (size_t)st.st_size;
    return 0;
}

void npz_close(npz_file *z) {
    if (z->map) munmap(z->map, z->len);
    z->map = NULL;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The central directory: its offset and entry count (zip64 too); 0 or -1. */
static int central(const npz_file *z, uint64_t *off, uint64_t *entries) {
    size_t e = z->len - 22, stop = z->len > 65557 ? z->len - 65557 : 0;
    while (le(z->map + e, 4) != 0x06054b50u)
        if (e-- == stop) return -1;
    *entries = le(z->map + e + 10, 2);
    *off = le(z->map + e + 16, 4);
    if (*off != 0xffffffffu && *entries != 0xffffu) return 0;
    if (e < 20 || le(z->map + e - 20, 4) != 0x07064b50u) return -1; /* zip64 locator */
    const uint64_t z64 = le(z->map + e - 12, 8);
    if (z->len < 56 || z64 > z->len - 56 || le(z->map + z64, 4) != 0x06064b50u) return -1;
    *entries = le(z->map + z64 + 32, 8);
    *off = le(z->map + z64 + 48, 8);
    return 0;
}

/* The zip64 extra field's values for the fields that are 0xffffffff. */
static void zip64_extra(const unsigned char *x, size_t len, uint64_t *usize, uint64_t *csize,
                        uint64_t *local) {
    for (size_t i = 0; i + 4 <= len;) {
        const size_t id = le(x + i, 2), n = le(x + i + 2, 2);
        const unsigned char *v = x + i + 4, *end = v + (n < len - i - 4 ? n : len - i - 4);
        if (id == 1) {
            uint64_t *fields[3] = {usize, csize, local};
            for (int k = 0; k < 3; k++)
                if (*fields[k] == 0xffffffffu && v + 8 <= end) *fields[k] = le(v, 8), v += 8;
        }
        i += 4 + n;
    }
}

/* A member's place and sizes, from the central directory. */
typedef struct zip_entry {
    const unsigned char *data; /* its stored (maybe deflated) bytes */
    uint64_t csize, usize;
    uint32_t crc;
    int method, flags;
} zip_entry;

/* Member `want`: 0, 1 when missing, -1 when the zip is damaged. */
static int find_member(const npz_file *z, const char *want, zip_entry *m) {
    uint64_t off, entries;
    if (central(z, &off, &entries)) return -1;
    for (uint64_t k = 0; k < entries; k++) {
        if (z->len < 46 || off > z->len - 46 || le(z->map + off, 4) != 0x02014b50u) return -1;
        const unsigned char *h = z->map + off;
        const size_t n = le(h + 28, 2), x = le(h + 30, 2), c = le(h + 32, 2);
        if (off + 46 + n + x + c > z->len) return -1;
        uint64_t csize = le(h + 20, 4), usize = le(h + 24, 4), local = le(h + 42, 4);
        zip64_extra(h + 46 + n, x, &usize, &csize, &local);
        if (n == strlen(want) && !memcmp(h + 46, want, n)) {
            if (local > z->len || z->len - local < 30 || le(z->map + local, 4) != 0x04034b50u)
                return -1;
            const uint64_t start =
                local + 30 + le(z->map + local + 26, 2) + le(z->map + local + 28, 2);
            if (start > z->len || csize > z->len - start) return -1;
            *m = (zip_entry){
                z->map + start,   csize, usize, (uint32_t)le(h + 16, 4), (int)le(h + 10, 2),
                (int)le(h + 8, 2)};
            return 0;
        }
        off += 46 + n + x + c;
    }
    return 1;
}

/* Where member `want` (its stored bytes) is: 0, 1 when missing, -1. */
static int member(const npz_file *z, const char *want, const unsigned char **data, uint64_t *size,
                  int *method) {
    zip_entry m;
    const int rc = find_member(z, want, &m);
    if (rc) return rc;
    *data = m.data;
    *size = m.csize;
    *method = m.method;
    return m.usize == m.csize || m.method ? 0 : -1;
}

int npz_has(const char *path, const char *name) {
    npz_file z;
    const unsigned char *data;
    uint64_t size;
    int method, rc = -1;
    if (!npz_open(NULL, path, &z)) {
        rc = member(&z, name, &data, &size, &method);
        npz_close(&z);
    }
    return rc == 0;
}

/* ---- .npy headers -------------------------------------------------------------- */

static const char *blanks(const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* The dtype string "'<f4'" at s into a; where it ends, or NULL with a reason. */
static const char *parse_descr(const char *s, npy_array *a, char *err, size_t errlen) {
    const char q = *s;
    if (q != '\'' && q != '"') {
        file_fail(err, errlen, "descr is not a plain type string (a structured dtype?)");
        return NULL;
    }
    const char *end = strchr(s + 1, q);
    if (!end) {
        file_fail(err, errlen, "descr is not closed");
        return NULL;
    }
    const int len = (int)(end - s - 1);
    const char *d = s + 1;
    if (len < 2 || len > 3 || !strchr("<|=>", d[0])) {
        file_fail(err, errlen,
                  "dtype '%.*s' is not one of these tools' (uint8, uint16, int, float32, "
                  "float64, bool)",
                  len > 16 ? 16 : len, d);
        return NULL;
    }
    const int bytes = d[2] - '0';
    if (len != 3 || !strchr("uifb", d[1]) ||
        (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)) {
        file_fail(err, errlen,
                  "dtype '%.*s' is not one of these tools' (uint8, uint16, int, float32, "
                  "float64, bool)",
                  len, d);
        return NULL;
    }
    if (d[0] == '>' && bytes > 1) {
        file_fail(err, errlen,
                  "dtype '%.3s' is big-endian: save it little-endian (x.astype(x.dtype."
                  "newbyteorder('<')))",
                  d);
        return NULL;
    }
    if ((d[1] == 'f' && bytes < 4) || (d[1] == 'b' && bytes != 1)) {
        file_fail(err, errlen, "dtype '%.3s' is not one of these tools' (float32 and float64 only)",
                  d);
        return NULL;
    }
    a->kind = d[1];
    a->item = bytes;
    return end + 1;
}

/* The shape "(60000, 28, 28)" at s into a; where it ends, or NULL. */
static const char *parse_shape(const char *s, npy_array *a, char *err, size_t errlen) {
    if (*s != '(') {
        file_fail(err, errlen, "shape is not a tuple");
        return NULL;
    }
    a->ndim = 0;
    a->count = 1;
    for (s = blanks(s + 1); *s != ')';) {
        if (*s < '0' || *s > '9') {
            file_fail(err, errlen, "shape is not a tuple of sizes");
            return NULL;
        }
        errno = 0;
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (errno || v > (long long)(SIZE_MAX >> 1) || v > 0x7fffffffffffffffLL) {
            file_fail(err, errlen, "shape has an absurd size %.20s", s);
            return NULL;
        }
        if (a->ndim == 4) {
            file_fail(err, errlen, "more than 4 dimensions");
            return NULL;
        }
        if (v && a->count > (SIZE_MAX >> 1) / (size_t)v) {
            file_fail(err, errlen, "shape's sizes multiply to more than memory can hold");
            return NULL;
        }
        a->shape[a->ndim++] = (long)v;
        a->count *= (size_t)v;
        s = blanks(*end == 'L' ? end + 1 : end);
        if (*s == ',')
            s = blanks(s + 1);
        else if (*s != ')') {
            file_fail(err, errlen, "shape is not a tuple of sizes");
            return NULL;
        }
    }
    if (a->count > (SIZE_MAX >> 1) / (size_t)a->item) {
        file_fail(err, errlen, "shape's sizes multiply to more than memory can hold");
        return NULL;
    }
    return s + 1;
}

/* The header dict h[len] (not NUL-terminated) into a: 0 or -1. */
static int parse_header(const char *h, size_t len, npy_array *a, char *err, size_t errlen) {
    char buf[4096];
    if (len >= sizeof buf)
        return file_fail(err, errlen, "header of %zu bytes: too long for a plain array", len);
    memcpy(buf, h, len);
    buf[len] = '\0';
    if (strlen(buf) != len) return file_fail(err, errlen, "header holds a NUL byte");
    int seen = 0; /* 1 descr, 2 fortran_order, 4 shape */
    const char *s = blanks(buf);
    if (*s != '{') return file_fail(err, errlen, "header is not a dict");
    for (s = blanks(s + 1); *s != '}';) {
        const char q = *s;
        const char *key = s + 1, *end = q == '\'' || q == '"' ? strchr(key, q) : NULL;
        if (!end) return file_fail(err, errlen, "header is not a dict of quoted keys");
        const size_t klen = (size_t)(end - key);
        s = blanks(end + 1);
        if (*s != ':') return file_fail(err, errlen, "header is not a dict");
        s = blanks(s + 1);
        int bit;
        if (klen == 5 && !memcmp(key, "descr", 5)) {
            bit = 1;
            s = parse_descr(s, a, err, errlen);
        } else if (klen == 13 && !memcmp(key, "fortran_order", 13)) {
            bit = 2;
            if (!strncmp(s, "True", 4))
                return file_fail(err, errlen,
                                 "fortran_order is True: save it in C order "
                                 "(np.ascontiguousarray)");
            if (strncmp(s, "False", 5))
                return file_fail(err, errlen, "fortran_order is not a bool");
            s += 5;
        } else if (klen == 5 && !memcmp(key, "shape", 5)) {
            bit = 4;
            /* the item size first: shape checks its product against it */
            if (!(seen & 1)) a->item = 1;
            s = parse_shape(s, a, err, errlen);
        } else {
            return file_fail(err, errlen, "header has an unknown key '%.*s'",
                             (int)(klen > 20 ? 20 : klen), key);
        }
        if (!s) return -1;
        if (seen & bit) return file_fail(err, errlen, "header has a key twice");
        seen |= bit;
        s = blanks(s);
        if (*s == ',')
            s = blanks(s + 1);
        else if (*s != '}')
            return file_fail(err, errlen, "header is not a dict");
    }
    if (seen != 7)
        return file_fail(err, errlen, "header lacks %s",
                         !(seen & 1)   ? "descr"
                         : !(seen & 2) ? "fortran_order"
                                       : "shape");
    if (a->count > (SIZE_MAX >> 1) / (size_t)a->item)
        return file_fail(err, errlen, "shape's sizes multiply to more than memory can hold");
    for (s = blanks(s + 1); *s == '\n' || *s == ' ' || *s == '\r';)
        s++;
    return *s ? file_fail(err, errlen, "header has bytes after its dict") : 0;
}

/* An .npy in data[size] into a; `exact`: the data must fill the rest exactly
 * (else only fit in it). */
static int parse_npy(const unsigned char *data, uint64_t size, int exact, npy_array *a, char *err,
                     size_t errlen) {
    if (size < 10 || memcmp(data, "\x93NUMPY", 6))
        return file_fail(err, errlen, "not an .npy array (no \\x93NUMPY magic)");
    if (data[6] < 1 || data[6] > 3)
        return file_fail(err, errlen, ".npy format version %d.%d (these tools read 1 to 3)",
                         data[6], data[7]);
    const int wide = data[6] > 1;
    if (size < (wide ? 12u : 10u)) return file_fail(err, errlen, "truncated .npy header");
    const uint64_t hlen = le(data + 8, wide ? 4 : 2), start = (wide ? 12 : 10) + hlen;
    if (start > size)
        return file_fail(err, errlen, "truncated: the header needs %llu bytes, there are %llu",
                         (unsigned long long)start, (unsigned long long)size);
    *a = (npy_array){.data = data + start};
    if (parse_header((const char *)data + (wide ? 12 : 10), hlen, a, err, errlen)) return -1;
    const uint64_t need = (uint64_t)a->count * (uint64_t)a->item, have = size - start;
    if (need > have)
        return file_fail(err, errlen, "truncated: shape needs %llu bytes of data, there are %llu",
                         (unsigned long long)need, (unsigned long long)have);
    if (exact && need < have)
        return file_fail(err, errlen, "%llu bytes after the data the shape needs (%llu)",
                         (unsigned long long)(have - need), (unsigned long long)need);
    a->layout = npy_image_layout(a);
    return 0;
}

int npy_parse(const unsigned char *data, size_t size, npy_array *a, char *err, size_t errlen) {
    npy_array t;
    if (parse_npy(data, size, 1, &t, err, errlen)) return -1;
    *a = t;
    return 0;
}

int npz_array(const char *prog, const char *path, const npz_file *z, const char *name,
              npy_array *a) {
    char want[64];
    snprintf(want, sizeof want, "%s.npy", name);
    const unsigned char *data;
    uint64_t size;
    int method = 0, rc = member(z, want, &data, &size, &method);
    if (rc < 0) fprintf(stderr, "%s: %s is not a valid .npz (zip) file\n", prog, path);
    if (rc) return rc;
    if (method != 0) {
        fprintf(stderr,
                "%s: %s: %s is compressed (np.savez_compressed): save it with np.savez, whose "
                "members can be memory-mapped\n",
                prog, path, want);
        return -1;
    }
    npy_array t;
    if (parse_npy(data, size, 0, &t, NULL, 0) ||
        !((t.kind == 'f' && t.item == 4) || t.kind == 'u' || t.kind == 'i')) {
        fprintf(stderr,
                "%s: %s: %s is not an .npy array of uint8, float32 or integers in C order\n", prog,
                path, want);
        return -1;
    }
    *a = t;
    return 0;
}

/* ---- deflated members ---------------------------------------------------------- */

/* The machine's memory in bytes (SIZE_MAX when unknown). */
static size_t memory_bytes(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)size)
        return SIZE_MAX;
    return (size_t)pages * (size_t)size;
}

/* Inflate m (raw deflate) into a new buffer of exactly m->usize bytes whose
 * CRC-32 is m->crc: the buffer, or NULL with the reason. */
static unsigned char *inflate_member(const zip_entry *m, char *err, size_t errlen) {
    /* deflate cannot do better than about 1032 to 1: a larger claim is damage */
    if (m->usize > NPZ_MAX_INFLATED || m->usize / 1032 > m->csize + 1) {
        file_fail(err, errlen,
                  "claims %llu bytes inflated from %llu: damaged (or over the %zu GiB "
                  "these tools inflate)",
                  (unsigned long long)m->usize, (unsigned long long)m->csize,
                  NPZ_MAX_INFLATED >> 30);
        return NULL;
    }
    if (m->usize > memory_bytes()) {
        file_fail(err, errlen,
                  "inflates to %llu bytes, more than this machine's memory: save it with "
                  "np.savez, whose members are memory-mapped",
                  (unsigned long long)m->usize);
        return NULL;
    }
    unsigned char *out = malloc(m->usize ? (size_t)m->usize : 1);
    if (!out) {
        file_fail(err, errlen, "out of memory for its %llu inflated bytes",
                  (unsigned long long)m->usize);
        return NULL;
    }
    z_stream s = {0};
    if (inflateInit2(&s, -MAX_WBITS) != Z_OK) {
        free(out);
        file_fail(err, errlen, "cannot start zlib's inflate");
        return NULL;
    }
    /* zlib counts in uInt: feed and drain in pieces of at most 1 GiB */
    const uint64_t piece = (uint64_t)1 << 30;
    uint64_t in = 0, done = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
        if (!s.avail_in && in < m->csize) {
            s.next_in = (unsigned char *)(uintptr_t)(m->data + in);
            s.avail_in = (uInt)(m->csize - in < piece ? m->csize - in : piece);
            in += s.avail_in;
        }
        if (!s.avail_out && done < m->usize) {
            s.next_out = out + done;
            s.avail_out = (uInt)(m->usize - done < piece ? m->usize - done : piece);
            done += s.avail_out;
        }
        const uInt before_in = s.avail_in, before_out = s.avail_out;
        rc = inflate(&s, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && before_in == s.avail_in && before_out == s.avail_out) break;
        if (rc == Z_BUF_ERROR) rc = Z_OK;
    }
    const uint64_t made = s.total_out;
    const char *msg = s.msg;
    inflateEnd(&s);
    if (rc != Z_STREAM_END) {
        free(out);
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
            file_fail(err, errlen, "corrupt deflate data (%s)", msg ? msg : "zlib");
        else if (rc == Z_MEM_ERROR)
            file_fail(err, errlen, "out of memory in zlib's inflate");
        else if (made >= m->usize)
            file_fail(err, errlen, "inflates to more than the %llu bytes its size field says",
                      (unsigned long long)m->usize);
        else
            file_fail(err, errlen, "truncated deflate data (%llu of %llu bytes inflated)",
                      (unsigned long long)made, (unsigned long long)m->usize);
        return NULL;
    }
    if (made != m->usize) {
        free(out);
        file_fail(err, errlen, "inflates to %llu bytes, its size field says %llu",
                  (unsigned long long)made, (unsigned long long)m->usize);
        return NULL;
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t k = 0; k < made; k += piece)
        crc = crc32(crc, out + k, (uInt)(made - k < piece ? made - k : piece));
    if ((uint32_t)crc != m->crc) {
        free(out);
        file_fail(err, errlen, "bad CRC-32 (0x%08lx, the zip says 0x%08lx): damaged",
                  (unsigned long)(uint32_t)crc, (unsigned long)m->crc);
        return NULL;
    }
    return out;
}

int npz_read(const char *prog, const char *path, const npz_file *z, const char *name,
             npy_array *a) {
    char want[64], why[256] = "";
    if (snprintf(want, sizeof want, "%s.npy", name) >= (int)sizeof want) return 1;
    zip_entry m;
    const int rc = find_member(z, want, &m);
    if (rc < 0) fprintf(stderr, "%s: %s is not a valid .npz (zip) file\n", prog, path);
    if (rc) return rc;
    npy_array t;
    if (m.flags & 1)
        file_fail(why, sizeof why, "encrypted");
    else if (m.method == 0 && m.usize != m.csize)
        file_fail(why, sizeof why, "stored, but its two size fields disagree (%llu, %llu)",
                  (unsigned long long)m.csize, (unsigned long long)m.usize);
    else if (m.method == 0) {
        if (!parse_npy(m.data, m.csize, 1, &t, why, sizeof why)) {
            *a = t;
            return 0;
        }
    } else if (m.method != 8)
        file_fail(why, sizeof why, "compressed by zip method %d (these tools inflate 8, deflate)",
                  m.method);
    else {
        unsigned char *buf = inflate_member(&m, why, sizeof why);
        if (buf && !parse_npy(buf, m.usize, 1, &t, why, sizeof why)) {
            t.owned = buf;
            *a = t;
            return 0;
        }
        free(buf);
    }
    fprintf(stderr, "%s: %s: %s: %s\n", prog, path, want, why);
    return -1;
}

void npy_array_free(npy_array *a) {
    if (!a || !a->owned) return;
    free(a->owned);
    a->owned = NULL;
    a->data = NULL;
    a->count = 0;
}

/* ---- .npy files ---------------------------------------------------------------- */

int npy_is_npy(const char *path) {
    struct stat st;
    const char *dot = strrchr(path, '.');
    return dot && !strcmp(dot, ".npy") && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int npy_open(const char *prog, const char *path, npz_file *map, npy_array *a) {
    char why[256];
    struct stat st;
    map->map = NULL;
    map->len = 0;
    const int fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (prog) fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 10) {
        close(fd);
        if (prog)
            fprintf(stderr, "%s: %s: %s\n", prog, path,
                    S_ISREG(st.st_mode) ? "truncated: too short for an .npy file"
                                        : "not a regular file");
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        if (prog) fprintf(stderr, "%s: cannot map %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    npz_file f = {m, (size_t)st.st_size};
    if (npy_parse(f.map, f.len, a, why, sizeof why)) {
        if (prog) fprintf(stderr, "%s: %s: %s\n", prog, path, why);
        npz_close(&f);
        return -1;
    }
    *map = f;
    return 0;
}

/* ---- items --------------------------------------------------------------------- */

double npy_value(const npy_array *a, size_t i) {
    const unsigned char *p = a->data + i * (size_t)a->item;
    if (a->kind == 'f' && a->item == 8) {
        double d;
        memcpy(&d, p, 8); /* '<f8': a little-endian host's double */
        return d;
    }
    if (a->kind == 'f') {
        float f;
        memcpy(&f, p, 4); /* '<f4': a little-endian host's float */
        return f;
    }
    const uint64_t u = le(p, a->item);
    if (a->kind == 'b') return u != 0;
    if (a->kind == 'u' || a->item == 8) return a->kind == 'u' ? (double)u : (double)(int64_t)u;
    const uint64_t sign = (uint64_t)1 << (8 * a->item - 1);
    return (double)(int64_t)((u ^ sign) - sign);
}

/* The largest image side and size the tools take: larger is a mistake
 * (a wrong reshape), not a picture. */
#define NPY_MAX_SIDE   65536
#define NPY_MAX_PIXELS ((size_t)1 << 28)

static int plausible_channels(long c) {
    return c == 1 || c == 3 || c == 4;
}

/* The layout and c, h, w of x, or the reason it has none. */
static const char *image_shape(const npy_array *x, npy_layout *layout, int *c, int *h, int *w) {
    if (!((x->kind == 'u' && (x->item == 1 || x->item == 2)) || (x->kind == 'f')))
        return x->kind == 'b' ? "images of bool: save them as uint8 (0 and 255)"
                              : "images must be uint8, uint16, float32 or float64";
    long s[3];
    if (x->ndim == 3) {
        *layout = NPY_NHW;
        s[0] = 1, s[1] = x->shape[1], s[2] = x->shape[2];
    } else if (x->ndim == 4 && plausible_channels(x->shape[3])) {
        *layout = NPY_NHWC;
        s[0] = x->shape[3], s[1] = x->shape[1], s[2] = x->shape[2];
    } else if (x->ndim == 4 && plausible_channels(x->shape[1])) {
        *layout = NPY_NCHW;
        s[0] = x->shape[1], s[1] = x->shape[2], s[2] = x->shape[3];
    } else if (x->ndim == 4) {
        return "4-D, but neither shape[3] (N x H x W x C) nor shape[1] (N x C x H x W) is a "
               "channel count 1, 3 or 4";
    } else if (x->ndim == 2) {
        return "2-D: images must be N x H x W, N x H x W x C or N x C x H x W (reshape flat "
               "rows, e.g. x.reshape(-1, 28, 28))";
    } else {
        return "images must be N x H x W, N x H x W x C or N x C x H x W";
    }
    if (x->shape[0] < 1) return "holds no images (N is 0)";
    if (s[1] < 1 || s[2] < 1 || s[1] > NPY_MAX_SIDE || s[2] > NPY_MAX_SIDE ||
        (size_t)s[0] * (size_t)s[1] * (size_t)s[2] > NPY_MAX_PIXELS)
        return "images of an absurd size (a side of 0 or over 65536 pixels, or over 2^28 values)";
    *c = (int)s[0];
    *h = (int)s[1];
    *w = (int)s[2];
    return NULL;
}

const char *npy_image_error(const npy_array *x) {
    npy_layout l;
    int c, h, w;
    return image_shape(x, &l, &c, &h, &w);
}

npy_layout npy_image_layout(const npy_array *x) {
    npy_layout l = NPY_NOT_IMAGES;
    int c, h, w;
    return image_shape(x, &l, &c, &h, &w) ? NPY_NOT_IMAGES : l;
}

int npy_image_dims(const npy_array *x, int *c, int *h, int *w) {
    npy_layout l;
    int cc, hh, ww;
    if (image_shape(x, &l, &cc, &hh, &ww)) return -1;
    *c = cc;
    *h = hh;
    *w = ww;
    return 0;
}

int npy_image(const npy_array *x, size_t i, float *out) {
    npy_layout l;
    int c, h, w;
    if (image_shape(x, &l, &c, &h, &w) || i >= (size_t)x->shape[0]) return -1;
    const size_t plane = (size_t)h * (size_t)w, pixels = plane * (size_t)c;
    const unsigned char *p = x->data + i * pixels * (size_t)x->item;
    /* Item k of the image (in the file's order) goes to out[to(k)]: channel
     * planes, so NHWC is transposed and NHW and NCHW are copied. */
    for (size_t k = 0; k < pixels; k++) {
        const size_t to = l == NPY_NHWC ? (k % (size_t)c) * plane + k / (size_t)c : k;
        const unsigned char *q = p + k * (size_t)x->item;
        float v;
        if (x->kind == 'u' && x->item == 1) {
            v = (float)q[0] / 255.0f;
        } else if (x->kind == 'u') {
            v = (float)(q[0] | q[1] << 8) / 65535.0f;
        } else if (x->item == 4) {
            memcpy(&v, q, 4);
            if (!(v >= 0.0f && v <= 1.0f)) return -1; /* NaN fails both */
        } else {
            double d;
            memcpy(&d, q, 8);
            if (!(d >= 0.0 && d <= 1.0)) return -1;
            v = (float)d;
        }
        out[to] = v;
    }
    return 0;
}

int npy_labels(const npy_array *y, size_t n, int *out, int *max_label, char *err, size_t errlen) {
    if (!(y->ndim == 1 || (y->ndim == 2 && y->shape[1] == 1)))
        return file_fail(err, errlen, "labels must be N or N x 1 numbers (a %d-D array)", y->ndim);
    if (y->kind == 'b')
        return file_fail(err, errlen, "labels of bool: classes are whole numbers 0, 1, ...");
    if (y->kind == 'f' && y->item < 4)
        return file_fail(err, errlen,
                         "labels must be integers (or whole float32 or float64 numbers)");
    if ((size_t)y->shape[0] != n)
        return file_fail(err, errlen, "%ld labels for %zu images", y->shape[0], n);
    int top = -1;
    for (size_t i = 0; i < n; i++) {
        const double v = npy_value(y, i);
        /* NaN fails the range test, which comes first: the cast needs a range */
        if (y->kind == 'f' && !(v > -1e15 && v < 1e15 && v == (double)(long long)v))
            return file_fail(err, errlen,
                             "label %g of image %zu is not a whole number (the labels are "
                             "floats: class numbers must be integers)",
                             v, i);
        if (v < 0) return file_fail(err, errlen, "label %.0f of image %zu is negative", v, i);
        if (v > NPY_MAX_LABEL)
            return file_fail(err, errlen, "label %.0f of image %zu is over %d: a class number?", v,
                             i, NPY_MAX_LABEL);
        out[i] = (int)v;
        if (out[i] > top) top = out[i];
    }
    if (max_label) *max_label = top;
    return 0;
}
