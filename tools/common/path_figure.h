/* path_figure: ram-classify's --glimpses picture: each classified image as
 * the model saw it (fitted to its canvas, in its own colours), with every
 * glimpse's squares, the path between them and a caption, one panel per
 * image in a grid.  Panels are kept as small RGB thumbnails, so a figure of
 * many large images costs little memory. */
#ifndef RAM_TOOLS_PATH_FIGURE_H
#define RAM_TOOLS_PATH_FIGURE_H

#include <ram/ram.h>

#define PATH_FIGURE_PANEL 256 /* a panel's longer side, display pixels */
#define PATH_FIGURE_MAX   64  /* panels drawn; later images are counted, not drawn */

typedef struct path_panel path_panel;

typedef struct path_figure {
    int c, h, w, glimpses, depth;
    int side[16];       /* the sensor's square sides, image pixels */
    int n, left_out;    /* panels kept; images past PATH_FIGURE_MAX */
    path_panel *panels; /* PATH_FIGURE_MAX of them */
} path_figure;

/* An empty figure for images of the model `mp` describes; 0, or -1 with a
 * message on stderr (out of memory). */
int path_figure_init(path_figure *f, const ram_model_params *mp, const char *prog);

/* One image: `canvas` is the model's input (c x h x w floats in [0, 1]),
 * `locs` its glimpse locations (glimpses x 2, the [-1, 1] frame) and
 * `zooms` their zoom factors (glimpses; ram_state_zooms()), of which the
 * first `taken` are drawn (0: all; an image that stopped early),
 * `caption` and `file` the two lines under it (cut to the panel's width).
 * 0, or -1 with a message on stderr. */
int path_figure_add(path_figure *f, const float *canvas, const float *locs, const float *zooms,
                    int taken, const char *caption, const char *file, const char *prog);

/* The figure as a PNG at `path` (written whole or not at all); 0, or -1 with
 * a message on stderr.  Says on stderr how many images were left out. */
int path_figure_write(const path_figure *f, const char *path, const char *prog);

void path_figure_free(path_figure *f);

#endif
