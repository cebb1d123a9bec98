/* image: PNG and JPEG files read as float CHW images in [0, 1], for the tools
 * that take users' own images (image folders, ram-classify). */
#ifndef RAM_TOOLS_IMAGE_H
#define RAM_TOOLS_IMAGE_H

#include <stddef.h>

/* Larger images are refused from the header, before anything is allocated. */
#define IMAGE_MAX_PIXELS (1L << 28)

typedef struct image {
    int c, h, w; /* channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA */
    float *px;   /* c x h x w: 8-bit samples / 255, 16-bit / 65535 */
    int bits;    /* 8 or 16: the file's samples (0 when not decoded from a file) */
} image;

/* Whether `name` ends in .png, .jpg or .jpeg (any case). */
int image_is_image_name(const char *name);

/* Decode a PNG or JPEG (told by its first bytes) from memory.  0, or -1 with
 * the reason in err (not naming the file) and *img untouched.  A truncated
 * or corrupt file, a size of 0 or above max_pixels and CMYK/YCCK
 * JPEGs are refused. */
int image_decode(const unsigned char *data, size_t size, long max_pixels, image *img, char *err,
                 size_t errlen);

/* image_decode() of the file at `path` (at most IMAGE_MAX_PIXELS); err then
 * names the file. */
int image_load(const char *path, image *img, char *err, size_t errlen);

/* image_load()'s checks of the file's header alone (signature, size, colour
 * space): img's c, h and w, and img->px NULL.  A file it accepts can still
 * fail image_load() later, when its compressed data is damaged. */
int image_probe(const char *path, image *img, char *err, size_t errlen);

void image_free(image *img);

#endif
