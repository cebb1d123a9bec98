/* Fitting a caller's image to a model's canvas: channel conversion and the
 * model's fit rule (pad, resize, letterbox, crop), so that a model trained
 * on images of one size applies to an image file of any size the way its
 * training images were fitted. */
#include "internal.h"

#include <math.h>

/* Channel ch of the model's C channels at pixel (y, x) of the c-channel
 * image: the conversions of ram_image_fit()'s contract. */
static float pixel(const float *img, int c, int h, int w, int C, int ch, int y, int x) {
    const size_t plane = (size_t)h * w, at = (size_t)y * w + x;
    if (c == C) return img[ch * plane + at];
    if (c <= 2) return img[at]; /* grey, or grey + alpha: the grey */
    if (C == 1)                 /* colour (3, or RGBA): BT.601 luma */
        return 0.299f * img[at] + 0.587f * img[plane + at] + 0.114f * img[2 * plane + at];
    return img[ch * plane + at]; /* RGBA to RGB: alpha dropped */
}

static bool convertible(int c, int C) {
    return c == C || c == 1 || c == 2 || (C == 1 && (c == 3 || c == 4)) || (C == 3 && c == 4);
}

/* Bilinear at (sy, sx) in pixel-centre coordinates, edges repeated. */
static float bilinear(const float *img, int c, int h, int w, int C, int ch, double sy, double sx) {
    const double fy0 = floor(sy), fx0 = floor(sx);
    const double fy = sy - fy0, fx = sx - fx0;
    int y0 = (int)fy0, x0 = (int)fx0, y1 = y0 + 1, x1 = x0 + 1;
    y0 = y0 < 0 ? 0 : y0 >= h ? h - 1 : y0;
    y1 = y1 < 0 ? 0 : y1 >= h ? h - 1 : y1;
    x0 = x0 < 0 ? 0 : x0 >= w ? w - 1 : x0;
    x1 = x1 < 0 ? 0 : x1 >= w ? w - 1 : x1;
    const double top =
        (1 - fx) * pixel(img, c, h, w, C, ch, y0, x0) + fx * pixel(img, c, h, w, C, ch, y0, x1);
    const double bottom =
        (1 - fx) * pixel(img, c, h, w, C, ch, y1, x0) + fx * pixel(img, c, h, w, C, ch, y1, x1);
    return (float)((1 - fy) * top + fy * bottom);
}

ram_status ram_image_fit(const ram_model *m, const float *image, int c, int h, int w, float *out,
                         size_t out_len) {
    if (!m || !image || !out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "image_fit: NULL argument");
    const int C = m->p.channels, H = m->p.height, W = m->p.width;
    if (c < 1 || h < 1 || w < 1 || (double)c * h * w > 4e9)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "image_fit: image of %d x %d x %d", c, h, w);
    if (!convertible(c, C))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "image_fit: cannot convert %d channels to the model's %d", c, C);
    if (out_len < (size_t)C * H * W)
        return ram_fail(RAM_ERR_BUFFER_TOO_SMALL, "image_fit: out has %zu floats, %zu needed",
                        out_len, (size_t)C * H * W);
    /* The image, scaled to nw x nh, lands at (ox, oy) of the canvas. */
    double nw = w, nh = h;
    if (m->fit == RAM_FIT_RESIZE) {
        nw = W;
        nh = H;
    } else if (m->fit == RAM_FIT_LETTERBOX || m->fit == RAM_FIT_CROP) {
        const double sx = (double)W / w, sy = (double)H / h;
        const double s = m->fit == RAM_FIT_LETTERBOX ? fmin(sx, sy) : fmax(sx, sy);
        nw = fmax(1.0, round(w * s));
        nh = fmax(1.0, round(h * s));
    }
    const double ox = floor((W - nw) / 2), oy = floor((H - nh) / 2);
    const double kx = w / nw, ky = h / nh;
    for (int ch = 0; ch < C; ch++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float *o = out + ((size_t)ch * H + y) * W + x;
                const double px = x - ox, py = y - oy;
                if (px < 0 || py < 0 || px >= nw || py >= nh) {
                    *o = 0.0f;
                } else if (m->fit == RAM_FIT_PAD) { /* whole pixels: an exact copy */
                    *o = pixel(image, c, h, w, C, ch, (int)py, (int)px);
                } else {
                    *o = bilinear(image, c, h, w, C, ch, (py + 0.5) * ky - 0.5,
                                  (px + 0.5) * kx - 0.5);
                }
            }
    return RAM_OK;
}
