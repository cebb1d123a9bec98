/* PNG (libpng) and JPEG (libjpeg) decoding for the tools (see image.h). */
#include "image.h"

#include "files.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef RAM_TOOLS_NO_IMAGES
#include <jpeglib.h>
#include <png.h>
#endif

int image_is_image_name(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot &&
           (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* The header's size, checked before anything of that size is allocated. */
static int check_size(unsigned long w, unsigned long h, long max_pixels, char *err, size_t errlen) {
    if (w == 0 || h == 0) return file_fail(err, errlen, "declares a size of %lux%lu", w, h);
    if ((uint64_t)w * h > (uint64_t)max_pixels)
        return file_fail(err, errlen, "declares %lux%lu pixels, more than the %ld this reads", w, h,
                         max_pixels);
    return 0;
}

/* Interleaved rows (c samples of `bytes` each per pixel) into float CHW. */
static void to_chw(const unsigned char *rows, size_t stride, int bytes, image *img) {
    const size_t plane = (size_t)img->h * img->w;
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < img->w; x++)
            for (int k = 0; k < img->c; k++) {
                const unsigned char *s = rows + y * stride + ((size_t)x * img->c + k) * bytes;
                img->px[k * plane + (size_t)y * img->w + x] =
                    bytes == 2 ? (float)(s[0] << 8 | s[1]) / 65535.0f : (float)s[0] / 255.0f;
            }
}

/* What both decoders hold, in memory a longjmp cannot lose. */
typedef struct decoder {
    const unsigned char *data;
    size_t size, off;
    unsigned char *rows;
    unsigned char **row_ptrs;
    image out;
    int probe; /* the header only: out's size, no pixels */
    char msg[200];
} decoder;

#ifndef RAM_TOOLS_NO_IMAGES

/* libpng often warns what is wrong before it fails ("Image width is zero in
 * IHDR", then "Invalid IHDR data"): the error is told with the first warning. */
static void png_note(png_structp png, png_const_charp msg) {
    decoder *d = png_get_error_ptr(png);
    if (!d->msg[0]) snprintf(d->msg, sizeof d->msg, "%s", msg);
}

static void png_fail(png_structp png, png_const_charp msg) {
    decoder *d = png_get_error_ptr(png);
    char warning[sizeof d->msg];
    snprintf(warning, sizeof warning, "%s", d->msg);
    snprintf(d->msg, sizeof d->msg, "%.90s%s%.90s%s", msg, warning[0] ? " after \"" : "", warning,
             warning[0] ? "\"" : "");
    png_longjmp(png, 1);
}

static void png_read_mem(png_structp png, png_bytep out, size_t len) {
    decoder *d = png_get_io_ptr(png);
    if (len > d->size - d->off) png_error(png, "truncated file");
    memcpy(out, d->data + d->off, len);
    d->off += len;
}

/* After png_read_info: the transformations to 8 or 16-bit grey, grey+alpha,
 * RGB or RGBA, and the buffers for the whole image, whose rows are *stride
 * bytes.  0, 1 when only the header was asked for, or -1. */
static int png_setup(png_structp png, png_infop info, decoder *d, long max_pixels, size_t *stride,
                     char *err, size_t errlen) {
    png_uint_32 w, h;
    int depth, type;
    png_get_IHDR(png, info, &w, &h, &depth, &type, NULL, NULL, NULL);
    if (check_size(w, h, max_pixels, err, errlen)) return -1;
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    *stride = png_get_rowbytes(png, info);
    /* Deflate packs at most about 1032 bytes into one: a shorter file
     * cannot hold the image, and is refused before its buffer is made. */
    if (*stride * h / 1032 > d->size) return file_fail(err, errlen, "is truncated");
    d->out = (image){png_get_channels(png, info), (int)h, (int)w, NULL, 0};
    if (d->probe) return 1;
    d->rows = malloc(*stride * h);
    d->row_ptrs = malloc(sizeof *d->row_ptrs * h);
    d->out.px = malloc(sizeof(float) * d->out.c * h * w);
    if (!d->rows || !d->row_ptrs || !d->out.px)
        return file_fail(err, errlen, "is too large to read");
    for (png_uint_32 y = 0; y < h; y++)
        d->row_ptrs[y] = d->rows + y * *stride;
    return 0;
}

static int decode_png(decoder *d, long max_pixels, char *err, size_t errlen) {
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_fail, png_note);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = -1;
    if (!info) {
        file_fail(err, errlen, "out of memory");
    } else if (setjmp(png_jmpbuf(png))) {
        file_fail(err, errlen, "is not a valid PNG (%s)", d->msg);
    } else {
        png_set_read_fn(png, d, png_read_mem);
        png_set_user_limits(png, 0x7fffffff, 0x7fffffff); /* the pixel limit is ours */
        png_read_info(png, info);
        size_t stride = 0;
        const int set = png_setup(png, info, d, max_pixels, &stride, err, errlen);
        if (set == 1) rc = 0;
        if (set == 0) {
            png_read_image(png, d->row_ptrs);
            png_read_end(png, NULL);
            d->out.bits = png_get_bit_depth(png, info) == 16 ? 16 : 8;
            to_chw(d->rows, stride, d->out.bits / 8, &d->out);
            rc = 0;
        }
    }
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    return rc;
}

typedef struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    decoder *d;
} jpeg_fail;

/* Errors and warnings alike end the decoding: a warning is a damaged file
 * (libjpeg would fill what is missing with grey). */
static void jpeg_stop(j_common_ptr j) {
    jpeg_fail *f = (jpeg_fail *)j->err;
    char msg[JMSG_LENGTH_MAX];
    f->mgr.format_message(j, msg);
    snprintf(f->d->msg, sizeof f->d->msg, "%s", msg);
    longjmp(f->jump, 1);
}

static void jpeg_emit(j_common_ptr j, int level) {
    if (level < 0) jpeg_stop(j);
}

/* After jpeg_read_header: refused colour spaces and sizes, the buffers
 * (rows of *stride bytes).  0, 1 when only the header was asked for, or -1. */
static int jpeg_setup(struct jpeg_decompress_struct *j, decoder *d, long max_pixels, size_t *stride,
                      char *err, size_t errlen) {
    if (j->jpeg_color_space == JCS_CMYK || j->jpeg_color_space == JCS_YCCK)
        return file_fail(err, errlen, "is a CMYK JPEG; convert it to RGB first");
    if (check_size(j->image_width, j->image_height, max_pixels, err, errlen)) return -1;
    j->out_color_space = j->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    if (d->probe) {
        jpeg_calc_output_dimensions(j);
        d->out =
            (image){j->output_components, (int)j->output_height, (int)j->output_width, NULL, 0};
        return 1;
    }
    jpeg_start_decompress(j);
    *stride = (size_t)j->output_width * j->output_components;
    d->out = (image){j->output_components, (int)j->output_height, (int)j->output_width, NULL, 0};
    d->rows = malloc(*stride * j->output_height);
    d->out.px = malloc(sizeof(float) * *stride * j->output_height);
    if (!d->rows || !d->out.px) return file_fail(err, errlen, "is too large to read");
    return 0;
}

static int decode_jpeg(decoder *d, long max_pixels, char *err, size_t errlen) {
    struct jpeg_decompress_struct j;
    jpeg_fail f = {.d = d};
    j.err = jpeg_std_error(&f.mgr);
    f.mgr.error_exit = jpeg_stop;
    f.mgr.emit_message = jpeg_emit;
    int rc = -1;
    if (setjmp(f.jump)) {
        file_fail(err, errlen, "is not a valid JPEG (%s)", d->msg);
        jpeg_destroy_decompress(&j);
        return -1;
    }
    jpeg_create_decompress(&j);
    jpeg_mem_src(&j, d->data, (unsigned long)d->size);
    jpeg_read_header(&j, TRUE);
    size_t stride = 0;
    const int set = jpeg_setup(&j, d, max_pixels, &stride, err, errlen);
    if (set == 1) rc = 0;
    if (set == 0) {
        while (j.output_scanline < j.output_height) {
            JSAMPROW row = d->rows + (size_t)j.output_scanline * stride;
            jpeg_read_scanlines(&j, &row, 1);
        }
        jpeg_finish_decompress(&j);
        d->out.bits = 8;
        to_chw(d->rows, stride, 1, &d->out);
        rc = 0;
    }
    jpeg_destroy_decompress(&j);
    return rc;
}

#else
static int decode_png(decoder *d, long max_pixels, char *err, size_t errlen) {
    (void)d, (void)max_pixels;
    return file_fail(err, errlen, "cannot be read: the tools were built without libpng");
}
static int decode_jpeg(decoder *d, long max_pixels, char *err, size_t errlen) {
    (void)d, (void)max_pixels;
    return file_fail(err, errlen, "cannot be read: the tools were built without libjpeg");
}
#endif

static int decode(const unsigned char *data, size_t size, long max_pixels, int probe, image *img,
                  char *err, size_t errlen) {
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    decoder d = {.data = data, .size = size, .probe = probe};
    int rc;
    if (size >= 8 && !memcmp(data, png_sig, 8))
        rc = decode_png(&d, max_pixels, err, errlen);
    else if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
        rc = decode_jpeg(&d, max_pixels, err, errlen);
    else
        rc = file_fail(err, errlen, "is neither a PNG nor a JPEG file");
    free(d.rows);
    free(d.row_ptrs);
    if (rc) {
        free(d.out.px);
        return -1;
    }
    *img = d.out;
    return 0;
}

int image_decode(const unsigned char *data, size_t size, long max_pixels, image *img, char *err,
                 size_t errlen) {
    return decode(data, size, max_pixels, 0, img, err, errlen);
}

static int load(const char *path, int probe, image *img, char *err, size_t errlen) {
    size_t len = 0;
    unsigned char *data = file_read_all(path, &len);
    if (!data)
        return file_fail(err, errlen, "cannot read %s: %s", path,
                         errno == EINVAL ? "not a regular file" : strerror(errno));
    char why[256];
    int rc = decode(data, len, IMAGE_MAX_PIXELS, probe, img, why, sizeof why);
    free(data);
    if (rc) file_fail(err, errlen, "%s %s", path, why);
    return rc;
}

int image_load(const char *path, image *img, char *err, size_t errlen) {
    return load(path, 0, img, err, errlen);
}

int image_probe(const char *path, image *img, char *err, size_t errlen) {
    return load(path, 1, img, err, errlen);
}

void image_free(image *img) {
    free(img->px);
    img->px = NULL;
}
