/* libFuzzer target for the NumPy .npz and .npy readers of the tools,
 * tools/common/npz.c: the zip directory (zip64 too), deflated members
 * (inflate, sizes, CRC-32) and the .npy headers of members and of whole
 * inputs.  Each input is written to an in-memory file (memfd) and mapped
 * through /proc/self/fd/N; every array found must lie inside the mapping or
 * its own inflated buffer, all its items are read, and its images and labels
 * are decoded (every pixel in [0, 1]).  See tests/fuzz/README.md. */
#define _GNU_SOURCE
#include "npz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static volatile double sink;
static char fdpath[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    memfd = memfd_create("fuzz_npz", 0);
    if (memfd < 0) abort();
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", memfd);
    return 0;
}

/* Decode what the array holds as images and as labels: nothing may crash,
 * and what is accepted must be in range. */
static void decode(const npy_array *a) {
    int c, h, w;
    if (npy_image_dims(a, &c, &h, &w) == 0) {
        if (npy_image_layout(a) == NPY_NOT_IMAGES || npy_image_error(a)) abort();
        const size_t px = (size_t)c * h * w;
        if (px <= 1 << 20) {
            float *img = malloc(px * sizeof *img);
            for (size_t i = 0; img && i < (size_t)a->shape[0] && i < 4; i++)
                if (npy_image(a, i, img) == 0)
                    for (size_t k = 0; k < px; k++)
                        if (!(img[k] >= 0.0f && img[k] <= 1.0f)) abort();
            free(img);
        }
    } else if (!npy_image_error(a)) {
        abort(); /* refused without a reason */
    }
    if (a->ndim >= 1 && a->shape[0] >= 0 && a->shape[0] <= 1 << 16) {
        const size_t n = (size_t)a->shape[0];
        int *labels = malloc((n ? n : 1) * sizeof *labels), top = -1;
        char err[256] = "";
        if (labels && npy_labels(a, n, labels, &top, err, sizeof err) == 0) {
            for (size_t i = 0; i < n; i++)
                if (labels[i] < 0 || labels[i] > NPY_MAX_LABEL || labels[i] > top) abort();
        } else if (labels && !err[0]) {
            abort();
        }
        free(labels);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size) abort();
    /* the input as an .npy file */
    npy_array a;
    char err[256] = "";
    if (npy_parse(data, size, &a, err, sizeof err) == 0) {
        if (a.data < data || (size_t)(a.data - data) + a.count * (size_t)a.item != size) abort();
        decode(&a);
    } else if (!err[0]) {
        abort();
    }
    npz_file z;
    if (npz_open(NULL, fdpath, &z)) return 0;
    static const char *const names[] = {"x_train", "y_train", "x_test", "y_test", "x_val"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        if (npz_array("fuzz_npz", fdpath, &z, names[k], &a) == 0) {
            if (a.data < z.map || (size_t)(a.data - z.map) + a.count * (size_t)a.item > z.len) {
                fprintf(stderr, "fuzz_npz: %s lies outside the file\n", names[k]);
                abort();
            }
            for (size_t i = 0; i < a.count; i++)
                sink += npy_value(&a, i); /* every item read: ASan checks each */
        }
        if (npz_read("fuzz_npz", fdpath, &z, names[k], &a) == 0) {
            const int mapped = a.data >= z.map && a.data < z.map + z.len;
            if (!a.owned == !mapped) abort(); /* either mapped or inflated */
            if (mapped && (size_t)(a.data - z.map) + a.count * (size_t)a.item > z.len) abort();
            for (size_t i = 0; i < a.count; i++)
                sink += npy_value(&a, i);
            decode(&a);
            npy_array_free(&a);
        }
    }
    npz_close(&z);
    return 0;
}
