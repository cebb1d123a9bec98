/* libFuzzer target for the IDX (MNIST) reader of the example tools,
 * tools/common/idx.c.  The reader takes paths, so each input is written to an
 * in-memory file (memfd) and read through /proc/self/fd/N, as images and as
 * labels; it is also split in two (at an offset taken from its first two
 * bytes) into an image and a label file in a scratch directory for
 * idx_load_mnist().  Whatever loads must match its header (sizes in range,
 * pixels in [0, 1], labels 0..255, digits for MNIST); whatever fails must
 * leave the out-arguments alone and a message.  The input is also parsed in
 * memory (idx_parse, 1-, 3- and 4-D) and mapped (idx_map): both must agree,
 * and every image they describe is decoded.  See tests/fuzz/README.md. */
#define _GNU_SOURCE
#include "idx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TARGET "fuzz_idx"

static void fail(const char *what, const char *err) {
    fprintf(stderr, TARGET ": %s (%s)\n", what, err);
    abort();
}

static int memfd = -1;
static char fdpath[64], dir[] = "/tmp/fuzz_idx-XXXXXX", ipath[128], lpath[128];

static void put(const char *path, int fd, const uint8_t *data, size_t size) {
    if (fd < 0) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fail("cannot write", path);
        return;
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        fail("cannot write the memfd", "");
}

static void cleanup(void) {
    unlink(ipath);
    unlink(lpath);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    memfd = memfd_create("fuzz_idx", 0);
    if (memfd < 0 || !mkdtemp(dir)) fail("no memfd or scratch directory", "");
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", memfd);
    snprintf(ipath, sizeof ipath, "%s/train-images-idx3-ubyte", dir);
    snprintf(lpath, sizeof lpath, "%s/train-labels-idx1-ubyte", dir);
    atexit(cleanup);
    return 0;
}

static void check_images(int rc, const float *img, int n, int h, int w, const char *err) {
    if (rc != 0) {
        if (!err[0]) fail("failure without a message", "");
        if (img || n != -1 || h != -1 || w != -1) fail("a failure changed the outputs", err);
        return;
    }
    if (!img || n < 1 || n > IDX_MAX_ITEMS || h < 1 || h > IDX_MAX_SIDE || w < 1 ||
        w > IDX_MAX_SIDE)
        fail("loaded a shape out of range", "");
    for (size_t i = 0; i < (size_t)n * h * w; i++)
        if (!(img[i] >= 0.0f && img[i] <= 1.0f)) fail("a pixel out of [0, 1]", "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256];
    put(fdpath, memfd, data, size);

    err[0] = '\0';
    float *img = NULL;
    int n = -1, h = -1, w = -1;
    int rc = idx_load_images(fdpath, &img, &n, &h, &w, err, sizeof err);
    check_images(rc, img, n, h, w, err);
    if (rc == 0 && (size_t)n * h * w + 16 != size) fail("image file size does not match", "");
    free(img);

    err[0] = '\0';
    int *lab = NULL;
    n = -1;
    rc = idx_load_labels(fdpath, &lab, &n, err, sizeof err);
    if (rc != 0) {
        if (!err[0]) fail("failure without a message", "");
        if (lab || n != -1) fail("a failure changed the outputs", err);
    } else {
        if (!lab || n < 1 || (size_t)n + 8 != size) fail("label file size does not match", "");
        for (int i = 0; i < n; i++)
            if (lab[i] < 0 || lab[i] > 255) fail("a label out of 0..255", "");
    }
    free(lab);

    /* In memory and mapped: the same verdict, the same shape. */
    npy_array a, m;
    npz_file map;
    char err2[256] = "";
    err[0] = '\0';
    rc = idx_parse(data, size, &a, err, sizeof err);
    const int rc2 = idx_map(fdpath, &map, &m, err2, sizeof err2);
    if (rc != rc2 && size >= 4) fail("idx_parse and idx_map disagree", rc ? err : err2);
    if (rc && !err[0]) fail("idx_parse: failure without a message", "");
    if (!rc) {
        if (a.kind != 'u' || a.item != 1 || (size_t)(a.data - data) + a.count != size)
            fail("idx_parse: an array that does not fill the input", "");
        int c, ih, iw;
        if (a.ndim >= 3 && npy_image_dims(&a, &c, &ih, &iw) == 0) {
            float *px = malloc(sizeof *px * (size_t)c * ih * iw);
            for (size_t i = 0; px && i < (size_t)a.shape[0] && i < 4; i++) {
                if (npy_image(&a, i, px)) fail("idx_parse: an image refused", "");
                for (size_t k = 0; k < (size_t)c * ih * iw; k++)
                    if (!(px[k] >= 0.0f && px[k] <= 1.0f)) fail("a pixel out of [0, 1]", "");
            }
            free(px);
        }
    }
    if (!rc2) {
        if (m.ndim != a.ndim || m.count != a.count) fail("idx_map: another shape", "");
        npz_close(&map);
    }

    /* Split: images first, then labels. */
    size_t cut = size >= 2 ? ((size_t)data[0] << 8 | data[1]) : 0;
    const uint8_t *rest = size >= 2 ? data + 2 : data;
    size_t rlen = size >= 2 ? size - 2 : size;
    if (cut > rlen) cut = rlen;
    put(ipath, -1, rest, cut);
    put(lpath, -1, rest + cut, rlen - cut);
    err[0] = '\0';
    img = NULL;
    lab = NULL;
    n = h = w = -1;
    rc = idx_load_mnist(dir, "train", &img, &lab, &n, &h, &w, err, sizeof err);
    check_images(rc, img, n, h, w, err);
    if (rc != 0 && lab) fail("a failure changed the labels", err);
    if (rc == 0)
        for (int i = 0; i < n; i++)
            if (lab[i] < 0 || lab[i] > 9) fail("an MNIST label that is not a digit", "");
    free(img);
    free(lab);
    return 0;
}
