/* libFuzzer target for the PNG and JPEG reader of the tools,
 * tools/common/image.c (libpng and libjpeg behind it).  Each input is decoded
 * from memory with a pixel limit of 2^20 (so that a declared size is refused
 * before a large buffer is made); whatever decodes must have 1 to 4
 * channels, a size within the limit and every sample in [0, 1]; whatever
 * fails must leave the image alone and say why.  See tests/fuzz/README.md. */
#include "image.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET     "fuzz_image"
#define MAX_PIXELS (1L << 20)

static void fail(const char *what, const char *err) {
    fprintf(stderr, TARGET ": %s (%s)\n", what, err);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256] = "";
    image img = {-1, -1, -1, NULL, 0};
    if (image_decode(data, size, MAX_PIXELS, &img, err, sizeof err)) {
        if (!err[0]) fail("a failure without a message", "");
        if (img.c != -1 || img.h != -1 || img.w != -1 || img.px)
            fail("a failure changed the image", err);
        return 0;
    }
    if (img.c < 1 || img.c > 4 || img.h < 1 || img.w < 1 || (long)img.h * img.w > MAX_PIXELS ||
        !img.px)
        fail("decoded a shape out of range", "");
    for (size_t i = 0; i < (size_t)img.c * img.h * img.w; i++)
        if (!(img.px[i] >= 0.0f && img.px[i] <= 1.0f)) fail("a sample out of [0, 1]", "");
    image_free(&img);
    return 0;
}
