/* zoom: the pixel side of a retina square of `side` pixels zoomed by
 * `zoom` (ram_state_zooms()), as the hard sensor cuts it: rounded to whole
 * pixels, at least one (ram_model_params.zoom_min in ram.h).  For the
 * tools' pictures and on-digit counts. */
#ifndef RAM_TOOLS_ZOOM_H
#define RAM_TOOLS_ZOOM_H

#include <math.h>

static inline double zoomed_side(double side, float zoom) {
    return fmax(1.0, floor(side * (double)zoom + 0.5));
}

#endif
