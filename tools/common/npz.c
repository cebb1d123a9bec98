#define _POSIX_C_SOURCE 200809L /* mmap */
/* NumPy .npz files, memory-mapped (see npz.h). */
#include "npz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Where member `want` (its stored bytes) is: 0, 1 when missing, -1. */
static int member(const npz_file *z, const char *want, const unsigned char **data, uint64_t *size,
                  int *method) {
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
            *data = z->map + start;
            *size = csize;
            *method = (int)le(h + 10, 2);
            return usize == csize || *method ? 0 : -1;
        }
        off += 46 + n + x + c;
    }
    return 1;
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

/* The header dict's fields (a NUL-terminated copy of it) into a. */
static int parse_header(const char *h, npy_array *a) {
    const char *d = strstr(h, "'descr':"), *f = strstr(h, "'fortran_order':");
    const char *s = strstr(h, "'shape':");
    if (!d || !f || !s) return -1;
    d += strspn(d + 8, " ") + 8;
    f += strspn(f + 16, " ") + 16;
    s += strspn(s + 8, " ") + 8;
    if (strncmp(d, "'<", 2) && strncmp(d, "'|", 2)) return -1;
    if (!d[2] || !strchr("uif", d[2]) || d[3] < '1' || d[3] > '8' || d[4] != '\'') return -1;
    if (strncmp(f, "False", 5) || *s != '(') return -1;
    a->kind = d[2];
    a->item = d[3] - '0';
    a->count = 1;
    for (s++; *s && *s != ')';) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s || v < 0 || a->ndim == 4 || (v && a->count > SIZE_MAX / (size_t)v)) return -1;
        a->shape[a->ndim++] = v;
        a->count *= (size_t)v;
        for (s = end; *s == ',' || *s == ' ';)
            s++;
    }
    return *s == ')' ? 0 : -1;
}

/* An .npy array (format version 1 to 3) in data[size] into a. */
static int parse_npy(const unsigned char *data, uint64_t size, npy_array *a) {
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) || data[6] < 1 || data[6] > 3) return -1;
    const int wide = data[6] > 1;
    const uint64_t hlen = le(data + 8, wide ? 4 : 2), start = (wide ? 12 : 10) + hlen;
    if (start > size) return -1;
    char *h = malloc(hlen + 1);
    if (!h) return -1;
    memcpy(h, data + (wide ? 12 : 10), hlen);
    h[hlen] = '\0';
    *a = (npy_array){.data = data + start};
    const int rc = parse_header(h, a);
    free(h);
    const int known =
        (a->kind == 'f' && a->item == 4) ||
        (a->kind != 'f' && (a->item == 1 || a->item == 2 || a->item == 4 || a->item == 8));
    return !rc && known && a->count <= (size - start) / (size_t)a->item ? 0 : -1;
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
    if (parse_npy(data, size, a)) {
        fprintf(stderr,
                "%s: %s: %s is not an .npy array of uint8, float32 or integers in C order\n", prog,
                path, want);
        return -1;
    }
    return 0;
}

double npy_value(const npy_array *a, size_t i) {
    const unsigned char *p = a->data + i * (size_t)a->item;
    if (a->kind == 'f') {
        float f;
        memcpy(&f, p, 4); /* '<f4': a little-endian host's float */
        return f;
    }
    const uint64_t u = le(p, a->item);
    if (a->kind == 'u' || a->item == 8) return a->kind == 'u' ? (double)u : (double)(int64_t)u;
    const uint64_t sign = (uint64_t)1 << (8 * a->item - 1);
    return (double)(int64_t)((u ^ sign) - sign);
}
