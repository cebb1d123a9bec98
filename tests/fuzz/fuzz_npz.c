/* libFuzzer target for the NumPy .npz reader of the tools, tools/common/npz.c:
 * the zip directory (zip64 too) and the .npy headers of its members, read
 * from a memory-mapped file.  Each input is written to an in-memory file
 * (memfd) and mapped through /proc/self/fd/N; every array found must lie
 * inside the mapping, and all its items are read.  See tests/fuzz/README.md. */
#define _GNU_SOURCE
#include "npz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size) abort();
    npz_file z;
    if (npz_open(NULL, fdpath, &z)) return 0;
    static const char *const names[] = {"x_train", "y_train", "x_test", "y_test", "x_val"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        npy_array a;
        if (npz_array("fuzz_npz", fdpath, &z, names[k], &a) != 0) continue;
        if (a.data < z.map || (size_t)(a.data - z.map) + a.count * (size_t)a.item > z.len) {
            fprintf(stderr, "fuzz_npz: %s lies outside the file\n", names[k]);
            abort();
        }
        for (size_t i = 0; i < a.count; i++)
            sink += npy_value(&a, i); /* every item read: ASan checks each */
    }
    npz_close(&z);
    return 0;
}
