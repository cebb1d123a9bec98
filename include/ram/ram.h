/*
 * libram: the Recurrent Attention Model (Mnih et al., NIPS 2014) in C.
 *
 * This header is the whole public contract of libram.  Everything not declared
 * here is internal and may change at any time.
 *
 * ABI stability
 *   Versions with the same RAM_VERSION_MAJOR (and, while MAJOR is 0, the same
 *   SOVERSION of libram.so) are ABI compatible: status values never change,
 *   functions are never removed, and params structs only grow at their end.
 *   Every params struct starts with `struct_size`.  The ram_X_params_init(p)
 *   macros pass the size of the struct the caller was compiled with to
 *   ram_X_params_init_sized(), which fills only that many bytes; every
 *   function taking params reads only struct_size bytes and uses defaults for
 *   fields added later.  (Bindings from other languages call the _sized
 *   functions with the size of their own struct.)  The `glimpse` member
 *   embedded in ram_model_params keeps its 0.1 layout for the whole major
 *   version; new retina fields will be appended to ram_model_params itself.
 *   The header has two parts: the API most programs use, then a marked
 *   advanced part (threaded states, precision, the BLAS's threads, REINFORCE
 *   building blocks, the gradient hook) whose costs may change between
 *   releases; both keep this ABI promise.
 *
 * Errors
 *   Every function that can fail returns a ram_status.  RAM_OK is 0.  On
 *   failure, ram_last_error() returns a human-readable message for the calling
 *   thread, and out-pointers are left untouched unless documented otherwise.
 *   No libram function aborts the process or prints on bad input.
 *
 * Threads
 *   libram keeps no global mutable state (a constant table is built once,
 *   under pthread_once; an atomic counter numbers weight changes for
 *   ram_state_set_precision()), and the last-error message is per thread.  Handles:
 *   - ram_model and ram_glimpse MAY be shared: any number of threads may at
 *     once call the functions that only read them (ram_model_classify(),
 *     ram_model_classify_ex(), ram_model_get_params(), ram_model_param_count(),
 *     ram_model_save(), ram_state_create(), ram_state_create_threads(),
 *     ram_policy_create(), ram_glimpse_extract(), ram_glimpse_size()), as
 *     long as no thread writes the model meanwhile: while a ram_trainer's
 *     train_batch(), load_checkpoint() or swap_average() runs, nothing else
 *     may use its model.
 *   - ram_state MUST NOT be shared: one per thread (it is the workspace).
 *     A state from ram_state_create_threads() has worker threads of its
 *     own, internal and synchronised by it; it is still used by one calling
 *     thread at a time.
 *   - ram_policy MUST NOT be shared: its RNG advances when it samples
 *     (ram_policy_sample(), ram_model_classify_ex() with SAMPLED or RANDOM,
 *     training).  Give each thread its own policy.
 *   - ram_trainer MUST NOT be shared: one thread at a time for all its
 *     functions.  Its `threads` workers are internal and synchronised by it.
 *   - Different handles are independent: separate models, policies and
 *     trainers may be used by separate threads at the same time, and files
 *     may be loaded by many threads at once.
 *   - ram_set_blas_threads() is process-wide: call it at start-up.
 *   Results do not depend on scheduling: classification of an image batch
 *   is the same in any thread, and training with the same seeds, data, calls
 *   and `threads` value gives byte-identical model and checkpoint files
 *   (tests/check_threads.c, run under ThreadSanitizer).
 *
 * Memory
 *   Objects are created by the _create() and _load() functions and released
 *   by the matching _free() functions,
 *   which accept NULL.  Arrays passed in are borrowed for the duration of the
 *   call only, unless documented otherwise.
 *
 * Layouts
 *   Images are float32, N x C x H x W, row-major (NCHW), values typically in
 *   [0, 1]; or, through the functions named _u8 (the end of this header),
 *   8-bit, N x C x H x W bytes, each byte b standing for the float
 *   (float)b / 255.0f exactly.  Locations are (x, y) pairs in [-1, 1]: x is horizontal (columns,
 *   -1 = left edge), y vertical (rows, -1 = top edge), (0, 0) the image centre.
 */
/** @file ram.h
 *  @brief libram's public API: the rules above hold for every declaration below. */
#ifndef RAM_RAM_H
#define RAM_RAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the exported functions (visibility or dllexport). */
#if defined(_WIN32) && defined(RAM_BUILDING_SHARED)
#define RAM_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define RAM_API __attribute__((visibility("default")))
#else
#define RAM_API
#endif

/* ---- version ------------------------------------------------------------ */

#define RAM_VERSION_MAJOR 0 /**< changes when the ABI breaks (with the SOVERSION) */
#define RAM_VERSION_MINOR 2 /**< changes when functions or fields are added */
#define RAM_VERSION_PATCH 0 /**< changes for fixes only */
/** This header's version as MAJOR*10000 + MINOR*100 + PATCH. */
#define RAM_VERSION_NUMBER (RAM_VERSION_MAJOR * 10000 + RAM_VERSION_MINOR * 100 + RAM_VERSION_PATCH)
#define RAM_VERSION_STRING "0.2.0" /**< this header's version as a string */

/** Version of the loaded library as MAJOR*10000 + MINOR*100 + PATCH; compare
 *  with RAM_VERSION_NUMBER to check that header and library agree. */
RAM_API unsigned ram_version_number(void);
/** Version of the loaded library as "MAJOR.MINOR.PATCH" (static string). */
RAM_API const char *ram_version_string(void);

/* ---- status ------------------------------------------------------------- */

/** Status codes.  The numeric values are part of the ABI and never change. */
typedef enum ram_status {
    RAM_OK = 0,
    RAM_ERR_INVALID_ARGUMENT = 1, /**< NULL, out-of-range or inconsistent argument */
    RAM_ERR_OUT_OF_MEMORY = 2,    /**< an allocation failed */
    RAM_ERR_IO = 3,               /**< open/read/write/rename failed (see errno text) */
    RAM_ERR_FORMAT = 4,           /**< not a libram file, or a malformed one */
    RAM_ERR_VERSION = 5,          /**< a libram file of an unsupported format version */
    RAM_ERR_CORRUPT = 6,          /**< truncated file or checksum mismatch */
    RAM_ERR_NUMERIC = 7,          /**< NaN/Inf in the input, or training diverged */
    RAM_ERR_MISMATCH = 8,         /**< file or object does not match this configuration */
    RAM_ERR_BUFFER_TOO_SMALL = 9, /**< an output buffer is shorter than needed */
    RAM_ERR_THREAD = 10           /**< a worker thread could not be started */
} ram_status;

/** Static English name of a status ("ok", "invalid argument", ...); never NULL. */
RAM_API const char *ram_status_string(ram_status status);
/** Detail of the last failure on the calling thread ("" if none).  The string
 *  is valid until the next libram call on this thread. */
RAM_API const char *ram_last_error(void);

/* ---- opaque handles ----------------------------------------------------- */

typedef struct ram_glimpse ram_glimpse; /**< the retina: patch size, scales */
typedef struct ram_model ram_model;     /**< architecture + weights */
typedef struct ram_state ram_state;     /**< per-thread inference workspace */
typedef struct ram_policy ram_policy;   /**< location policy, baseline, REINFORCE */
typedef struct ram_trainer ram_trainer; /**< optimizer, workspaces, worker threads */

/* ---- glimpse sensor ----------------------------------------------------- */

/** Retina parameters: what a glimpse sees at a location. */
typedef struct ram_glimpse_params {
    size_t struct_size; /**< set by ram_glimpse_params_init() */
    int patch;          /**< side of each patch after pooling, pixels (8) */
    int depth;          /**< number of scales (1) */
    float scale;        /**< each scale is `scale` times wider than the previous (2) */
} ram_glimpse_params;

/** Fill `p` with defaults: the paper's MNIST retina (8x8, 1 scale, factor 2). */
RAM_API void ram_glimpse_params_init_sized(ram_glimpse_params *p, size_t size);
/** Fill the caller's ram_glimpse_params with defaults (passes its size). */
#define ram_glimpse_params_init(p) ram_glimpse_params_init_sized((p), sizeof *(p))
/** Create a sensor.  Errors: INVALID_ARGUMENT (patch not in [1, 1024], depth
 *  not in [1, 16], scale < 1 or not finite, a scale wider than 2^20 pixels),
 *  OUT_OF_MEMORY. */
RAM_API ram_status ram_glimpse_create(const ram_glimpse_params *p, ram_glimpse **out);
/** Free a sensor (NULL is a no-op). */
RAM_API void ram_glimpse_free(ram_glimpse *g);
/** Number of floats one glimpse of a `channels`-channel image takes:
 *  channels * depth * patch * patch. */
RAM_API size_t ram_glimpse_size(const ram_glimpse *g, int channels);
/**
 * Cut glimpses.  Scale k (0-based) covers a square of side
 * round(patch * scale^k) pixels centred on the location, average-pooled to
 * patch x patch; pixels outside the image count as 0.  Location x maps to the
 * column coordinate (x + 1) * W / 2 (so -1 is the left edge of pixel 0 and +1
 * the right edge of pixel W-1); y likewise on rows.
 *
 * images: n x c x h x w; locs: n x 2 (x, y), any finite value (far outside
 * [-1, 1] simply reads zeros); out: n x ram_glimpse_size(g, c) floats, laid out
 * as [channel][scale][row][col] per image; out_len is the capacity of `out`
 * in floats.  Errors: INVALID_ARGUMENT, BUFFER_TOO_SMALL, NUMERIC (NaN/Inf
 * location).  Thread-safe on a shared `g`.
 */
RAM_API ram_status ram_glimpse_extract(const ram_glimpse *g, const float *images, int n, int c,
                                       int h, int w, const float *locs, float *out, size_t out_len);

/** How a sensor reads each scale's square. */
typedef enum ram_sensor {
    /** Average pooling of the square's pixels (the paper's retina): the
     *  glimpse is piecewise constant in the location, so the location is
     *  trained by REINFORCE. */
    RAM_SENSOR_HARD = 0,
    /** The exact average of the image over each cell of the same square:
     *  the square (of side round(patch * scale^k)) is centred exactly on
     *  the location, not on a pixel, and cut into patch x patch cells of
     *  side c = round(patch * scale^k) / patch pixels, whose edges may fall
     *  between pixel edges; value (i, j) is the integral of the image
     *  (pixel (r, x) a constant over [x, x + 1) x [r, r + 1)) over cell
     *  (i, j), divided by c^2, so that a pixel partly inside a cell counts
     *  by the part inside.  Where c = 1 (the first scale) that average is
     *  the image interpolated bilinearly between the four nearest pixel
     *  centres at the cell's centre, and is computed so.  Pixels outside
     *  the image read as 0.  Continuous and piecewise bilinear in the
     *  location, so its gradient can be backpropagated
     *  (ram_glimpse_backward_location()).  Where the square's edges are on
     *  pixel edges and c is a whole number, it reads what the hard sensor
     *  reads (to rounding).  A value costs as many pixel reads as its cell
     *  covers, as with the hard sensor, whatever the image's size. */
    RAM_SENSOR_SOFT = 1
} ram_sensor;

/** As ram_glimpse_create(), with the given sensor.  (The choice is not a
 *  field of ram_glimpse_params: that struct is embedded in
 *  ram_model_params, whose layout it may not change; a model's sensor is
 *  ram_model_params.sensor.)  Errors: as ram_glimpse_create(), and
 *  INVALID_ARGUMENT for an unknown sensor. */
RAM_API ram_status ram_glimpse_create_sensor(const ram_glimpse_params *p, ram_sensor sensor,
                                             ram_glimpse **out);
/** Reads per cell side of a hard sensor, as ram_model_params.cell_samples
 *  (0, the default: every pixel of a cell; k in [1, 64]: at most k x k a
 *  cell), so that a standalone sensor reads what a model's does.  Not
 *  thread-safe with extractions by the same sensor.  INVALID_ARGUMENT for
 *  NULL, k outside [0, 64], or k > 0 on a soft sensor. */
RAM_API ram_status ram_glimpse_set_cell_samples(ram_glimpse *g, int k);
/** Cells as contrast magnitudes, as ram_model_params.contrast (0, the
 *  default: pixel values; 1: |v - mean| / (4 spread)), so that a standalone
 *  sensor reads what a model's does.  Not thread-safe with extractions by
 *  the same sensor.  INVALID_ARGUMENT for NULL, a value other than 0 or 1,
 *  or 1 on a soft sensor. */
RAM_API ram_status ram_glimpse_set_contrast(ram_glimpse *g, int on);
/** Every square of the sensor's glimpses times `zoom` (1: as created), as
 *  a model with zoom (ram_model_params.zoom_min) cuts a glimpse whose
 *  factor is `zoom` (ram_state_zooms()): the hard sensor's sides rounded to
 *  whole pixels (at least 1), the soft sensor's exact.  Not thread-safe
 *  with extractions by the same sensor.  INVALID_ARGUMENT for NULL or a
 *  zoom outside [1/64, 16]. */
RAM_API ram_status ram_glimpse_set_zoom(ram_glimpse *g, float zoom);
/** A sensor's kind (HARD for NULL and for ram_glimpse_create()'s). */
RAM_API ram_sensor ram_glimpse_sensor(const ram_glimpse *g);
/**
 * The gradient through a soft sensor: given dout, the gradient of some loss
 * with respect to the glimpses ram_glimpse_extract() cut at `locs` (n x
 * ram_glimpse_size(g, c) floats, same layout; dout_len its length), writes
 * dlocs (n x 2): the loss's gradient with respect to each location (x, y),
 * sum_k dout_k * d out_k / d loc.  A value's derivative along x is the
 * difference of the image under its cell's two x edges (each edge's column
 * weighted as in the value), over c^2; along y likewise.  At a kink (a
 * cell's edge exactly on a pixel edge) the derivative from the right
 * (toward +x, +y) is used.  Costs about as much as an extraction: it
 * depends on the patch and scales, not the image.  Errors:
 * INVALID_ARGUMENT (NULL, a dimension < 1, a HARD sensor, which is not
 * differentiable in the location), BUFFER_TOO_SMALL (dout), NUMERIC (a
 * NaN/Inf location).
 * Thread-safe on a shared `g`.
 */
RAM_API ram_status ram_glimpse_backward_location(const ram_glimpse *g, const float *images, int n,
                                                 int c, int h, int w, const float *locs,
                                                 const float *dout, size_t dout_len, float *dlocs);

/* ---- model -------------------------------------------------------------- */

/** How the glimpse network combines "what" (h_g) and "where" (h_l). */
typedef enum ram_glimpse_form {
    /** g = ReLU(Linear(h_g) + Linear(h_l)): the paper's form, two weight
     *  matrices with a bias each. */
    RAM_GLIMPSE_ADDITIVE = 0,
    /** g = ReLU(Linear([h_g; h_l])): Torch's form, one matrix over the
     *  concatenation and one bias.  Same function family as ADDITIVE; the
     *  parameterisation (and so the initialisation) differs. */
    RAM_GLIMPSE_CONCAT = 1,
    /** g = ReLU(Linear(h_g)) (.) ReLU(Linear(h_l)), elementwise: DRAM's form
     *  (Ba et al. 2015), "what" gated by "where".  The weights are those of
     *  ADDITIVE (two matrices with a bias each). */
    RAM_GLIMPSE_MULTIPLICATIVE = 2
} ram_glimpse_form;

/** The recurrent core. */
typedef enum ram_core_type {
    RAM_CORE_RNN = 0, /**< h_t = ReLU(W_x g_t + W_h h_{t-1} + b) */
    RAM_CORE_LSTM = 1 /**< standard LSTM (input, forget, cell, output gates) */
} ram_core_type;

/** How the location network's mean is kept in [-1, 1]. */
typedef enum ram_loc_bound {
    RAM_BOUND_HARDTANH = 0, /**< clamp the mean to [-1, 1] (Torch) */
    RAM_BOUND_TANH = 1      /**< tanh: never saturates to a zero gradient exactly */
} ram_loc_bound;

/** Model architecture; fixed at creation, stored in the model file. */
typedef struct ram_model_params {
    size_t struct_size;         /**< set by ram_model_params_init() */
    int channels;               /**< image channels (1) */
    int height;                 /**< image height in pixels (28) */
    int width;                  /**< image width in pixels (28) */
    ram_glimpse_params glimpse; /**< retina (8x8, 1 scale, factor 2) */
    ram_glimpse_form form;      /**< glimpse-network form (ADDITIVE) */
    int glimpse_hidden;         /**< units of h_g = ReLU(Linear(rho)) (128) */
    int loc_hidden;             /**< units of h_l = ReLU(Linear(l)) (128) */
    int glimpse_out;            /**< units of g (256) */
    int core_hidden;            /**< units of the recurrent state h (256) */
    ram_core_type core;         /**< the recurrent core: a ReLU RNN or an LSTM (default: RNN) */
    int glimpses;               /**< number of glimpses T (6) */
    int classes;                /**< number of classes (10) */
    ram_loc_bound bound;        /**< how the location mean is bounded (TANH) */
    float loc_std;              /**< std of the Gaussian location policy (0.17) */
    /** How far from the image centre, in pixels, a glimpse at +-1 is centred
     *  (Torch's unitPixels).  0 means the image edge (width/2, height/2).
     *  Negative, the default (-1): half the shorter side less one pixel,
     *  min(width, height) / 2 - 1, set by ram_model_create() and reported by
     *  ram_model_get_params() (13 for 28 x 28: glimpse centres stay within
     *  pixels 1..27; 29 for 60 x 60). */
    float loc_range_pixels;
    float init_scale; /**< weights ~ U(-init_scale, init_scale) (0.1) */
    uint64_t seed;    /**< initialisation seed (1) */
    /** The retina's sensor (HARD).  With SOFT the glimpses are exact cell
     *  averages, continuous in the location, and a trainer backpropagates
     *  through them into the location network
     *  (ram_policy_params.soft_training).  Stored in the model file; a file
     *  without it is HARD. */
    ram_sensor sensor;
    /** Layers of the recurrent core: 1 (RAM) or 2 (DRAM, Ba et al. 2015).
     *  With 2, the lower layer r1 reads g and feeds the classifier, as the
     *  single layer does; the upper layer r2 (core_hidden units too) reads
     *  r1 at the same step and feeds the location network and the
     *  baseline.  (1) */
    int core_layers;
    /** The upper layer's cell when core_layers is 2 (the lower one is
     *  `core`); ignored with one layer.  (RNN) */
    ram_core_type upper_core;
    /** The context network: 0 for none, else the side S (1 to 256) of the
     *  square to which the whole image is average-pooled (channels x S x
     *  S values: cell (i, j) is the mean of rows [i H / S, (i + 1) H / S)
     *  and columns likewise, or the one pixel under its centre where the
     *  image is smaller than S); a fully connected ReLU layer of
     *  core_hidden units on that is the initial state of the core's top
     *  layer (r2, or the single layer), so that the first location already
     *  depends on the image.  Its cost after the pooling does not depend on
     *  the image size.  (0) */
    int context;
    /** Objects S per image (1 to 64): the classifier (one, shared) emits a
     *  label after every emit_every glimpses, label s (0-based) from the
     *  core's state after glimpse (s + 1) * emit_every; training minimises
     *  the sum of the S cross-entropies (ram_trainer_train_batch_seq()).
     *  S = 1 is the single label after the last glimpse.  (1) */
    int objects;
    /** K, the glimpses between labels: objects * emit_every must equal
     *  glimpses.  0, the default, means glimpses / objects, set by
     *  ram_model_create() and reported by ram_model_get_params(). */
    int emit_every;
    /** Reads per cell side of the hard sensor and of the context's pooling:
     *  0 (every pixel of a cell is averaged, the paper's retina), or k in
     *  [1, 64]: a scale whose cells are wider than k pixels (side > k x
     *  patch) averages, in each cell, the k x k pixels at the centres of a
     *  k x k grid over it (pixel floor((2m + 1) rows / 2k) of its rows, and
     *  of its columns likewise; outside the image they read 0), so that a
     *  glimpse reads at most depth x patch^2 x k^2 pixels a channel, and the
     *  context at most S^2 x k^2, whatever the scale and the image: a
     *  retina whose widest square covers a 1024 x 1024 image costs what it
     *  costs on a 60 x 60 one.  Scales with cells of k pixels or fewer are
     *  averaged whole, bit for bit as with 0.  A subsample, not an average:
     *  detail finer than a cell / k can alias.  Hard sensor only
     *  (INVALID_ARGUMENT with the soft one).  (0) */
    int cell_samples;
    /** What a cell of the hard sensor and of the context holds: 0, its
     *  channel's average pixel value (the paper's retina); 1, that average's
     *  contrast magnitude |v - m| / (4 sqrt(s^2 + 1e-4)), with m and s^2 the
     *  mean and variance of the channel's pixels at the centres of a 32 x 32
     *  grid over the image (fewer rows or columns on a smaller image), read
     *  once per glimpse: a fixed cost, whatever the image.  A retina that no
     *  longer knows the image's colours or light from dark: what a set of
     *  objects in any colour on any background needs (a digit in a random
     *  colour on a random texture is learnt with it and not without), and a
     *  loss where colour or polarity tells the classes apart.  A NaN or
     *  Inf pixel on the grid makes every cell of the image's glimpses NaN
     *  (classify: NUMERIC).  Hard sensor only (INVALID_ARGUMENT with the
     *  soft one).  (0) */
    int contrast;
    /** Zoom as an action: 0 and 0 for none (the default), or a range 1/64
     *  <= zoom_min < zoom_max <= 16.  The location policy then has a third
     *  output z in [-1, 1], bounded, sampled and trained exactly as x and y
     *  are (the same std; REINFORCE, or backpropagation through a soft
     *  sensor), and the glimpse at that step has every square's side
     *  multiplied by the factor exp(log zoom_min + (z + 1) / 2 (log
     *  zoom_max - log zoom_min)): z = -1 looks closest, z = 0 at the
     *  geometric middle of the range.  The hard sensor rounds each zoomed
     *  side to whole pixels, at least one (area pooling when the patch does
     *  not divide it; a square narrower than the patch reads, in each cell,
     *  the pixel under the cell's centre); the soft sensor's squares are
     *  exact, so its gradient reaches z.
     *  The glimpse network's location layer reads (x, y, z).  Stored in the
     *  model file; a file without it has no zoom.  (0) */
    float zoom_min;
    /** The largest zoom factor, with zoom_min (0 with it for none).  Models
     *  with zoom are 0.2.0's: older readers refuse their files.  (0) */
    float zoom_max;
    /** A convolutional layer between the retina and the glimpse network:
     *  0 for none (the default: h_g reads the glimpse's values, the
     *  paper's network), else its channels C (1 to 4096).  The glimpse's
     *  channels x depth planes of patch x patch values (every scale of
     *  every image channel, all centred on the location) are its input
     *  planes; C filters of conv_kernel x conv_kernel x planes weights and
     *  a bias each, at conv_stride, no padding, then ReLU, give C x Q x Q
     *  values, Q = (patch - conv_kernel) / conv_stride + 1, which h_g
     *  reads instead of the glimpse.  Filters that see every position of
     *  the patch the same way: a digit a few pixels off the glimpse's
     *  centre is read as it is read at the centre.  Stored in the model
     *  file; models with it are 0.2.0's: older readers refuse their
     *  files. */
    int conv_channels;
    /** The filters' side, 1 to patch (3); with conv_channels only. */
    int conv_kernel;
    /** The filters' step, 1 to patch (1); with conv_channels only. */
    int conv_stride;
} ram_model_params;

/** Fill `p` with defaults: the paper's MNIST model (28x28x1, 8x8 retina with
 *  one scale, 6 glimpses, h_g = h_l = 128, g = h = 256, RNN core). */
RAM_API void ram_model_params_init_sized(ram_model_params *p, size_t size);
/** Fill the caller's ram_model_params with defaults (passes its size). */
#define ram_model_params_init(p) ram_model_params_init_sized((p), sizeof *(p))
/** Create a model with freshly initialised weights.  Errors: INVALID_ARGUMENT
 *  (a size < 1; channels > 4096; height, width, hidden sizes > 65536 and
 *  core_hidden > 16384; more than 1e9 values per image or 2^24 per glimpse;
 *  a convolutional layer with more than 2^24 outputs or unrolled inputs per
 *  glimpse, or a kernel or stride outside 1 to patch;
 *  glimpses > 64; classes < 2 or > 65536; loc_std not in [1e-4, 10]; loc_range_pixels
 *  above 1e6, -Inf or NaN; init_scale not in [0, 10]; an unknown enum value),
 *  OUT_OF_MEMORY. */
RAM_API ram_status ram_model_create(const ram_model_params *p, ram_model **out);
/** Free a model (NULL is a no-op).  No state, policy or trainer may use it afterwards. */
RAM_API void ram_model_free(ram_model *m);
/** Copy the model's architecture into `p` (p->struct_size must be set, e.g.
 *  by ram_model_params_init()). */
RAM_API ram_status ram_model_get_params(const ram_model *m, ram_model_params *p);
/** Number of trainable float parameters of the model (baseline excluded). */
RAM_API size_t ram_model_param_count(const ram_model *m);
/** A new model that is `m` taking `glimpses` glimpses (1 to 64), a label
 *  every `emit_every` of them (0: glimpses / objects), into *out.  No weight
 *  depends on the number of glimpses, so a model trained with T glimpses can
 *  be fine-tuned or run with more or fewer; a model of several objects
 *  needs objects x emit_every = glimpses.  The copy has m's weights, class
 *  names and fit rule, but no stop unit (its weights are one per glimpse:
 *  fit it again).  `m` is not changed.  Errors: INVALID_ARGUMENT (NULL, a
 *  count out of range or that does not make the glimpses from the model's
 *  objects), OUT_OF_MEMORY. */
RAM_API ram_status ram_model_with_glimpses(const ram_model *m, int glimpses, int emit_every,
                                           ram_model **out);
/** Copy `m` with another sensor (ram_model_params.sensor) into *out, for a
 *  hard model to be fine-tuned or run with the soft sensor (or back): no
 *  weight depends on the sensor, and where each scale's square has edges on
 *  pixel edges and cells of a whole number of pixels the soft sensor reads
 *  what the hard one reads, so the copy starts where the model is.  The
 *  copy has m's weights, class names and fit rule, but no stop unit (fit it
 *  again).  `m` is not changed.  Errors: INVALID_ARGUMENT (NULL, an unknown
 *  sensor, or the soft sensor for a model with cell_samples or contrast,
 *  which only the hard one reads), OUT_OF_MEMORY. */
RAM_API ram_status ram_model_with_sensor(const ram_model *m, ram_sensor sensor, ram_model **out);

/** Create an inference workspace for up to `max_batch` (<= 2^20) images at a time.
 *  One per thread; it borrows nothing from the model, but may only be used
 *  with models of the same architecture.
 *
 *  Classify calls skip zeros.  Where a layer's input is a ReLU's output
 *  (the glimpse network's second layer, the core's input weights and, with
 *  the RNN core, its recurrent weights) and enough of an image's inputs to
 *  it are zero, the layer reads only the weights of the nonzero inputs,
 *  from a column-major copy of those layers that the state keeps; the
 *  images of a call with fewer zeros go through one matrix product
 *  together.  How many zeros are enough is libram's choice, made from the
 *  image alone (docs/performance.md has the figures behind it), so results
 *  never depend on earlier calls.  A trained model's ReLU outputs are
 *  mostly zeros, so it reads a fraction of the weights.  Each such output
 *  is one sum over the nonzero inputs in order, so its last bits may differ
 *  from the same image's in a call whose other kernel it took.
 *  The copy is made like ram_state_set_precision()'s: at the first call,
 *  and again after the model's weights change (a pass over those layers, no
 *  allocation).  Memory: 4 bytes per weight of those layers (0.75 MB for
 *  the paper's MNIST model), and for max_batch above 8 a buffer of
 *  max_batch x (the widest of those layers' inputs + the widest output)
 *  floats for the images gathered for the matrix product (max_batch x 512
 *  for the MNIST model); only on processors whose kernels skip zeros
 *  (every kernel set but "portable": ram_kernels_name()).
 *
 *  Errors: INVALID_ARGUMENT (NULL m or out, max_batch not in [1, 2^20]),
 *  OUT_OF_MEMORY. */
RAM_API ram_status ram_state_create(const ram_model *m, int max_batch, ram_state **out);

/** Free an inference workspace (NULL is a no-op); joins its worker threads. */
RAM_API void ram_state_free(ram_state *s);

/**
 * Classify n images (n x C x H x W, the model's shape) with mean locations:
 * deterministic, no sampling.  Allocates nothing.
 *
 * st: a workspace from ram_state_create() with max_batch >= n.
 * labels: out, n ints (argmax class), or NULL.
 * probs: out, n x classes class probabilities, or NULL.
 * (A model of several objects, ram_model_params.objects > 1: its last
 * label; ram_model_classify_seq() gives every one.)
 * locs: out, n x glimpses x 2 locations (x, y) in the *retina's* frame
 *       (the policy's [-1, 1] scaled by loc_range_pixels * 2 / width, and
 *       height for y), as passed to ram_glimpse_extract() on the image; within
 *       [-1, 1] unless loc_range_pixels exceeds half the image; or NULL.
 * Errors: INVALID_ARGUMENT (NULL, n < 1, n > max_batch, state of another
 * architecture), NUMERIC (a NaN/Inf pixel where a glimpse looked; pixels no
 * glimpse reads are never touched, so the cost does not grow with the image
 * and such pixels cannot matter).  On error the outputs are unspecified.
 * Thread-safe on a shared model with one state per thread.
 */
RAM_API ram_status ram_model_classify(const ram_model *m, ram_state *st, const float *images, int n,
                                      int *labels, float *probs, float *locs);

/** Where ram_model_classify_ex() takes its locations from. */
typedef enum ram_loc_source {
    RAM_LOCS_MEAN = 0,    /**< the policy mean (as ram_model_classify) */
    RAM_LOCS_SAMPLED = 1, /**< sampled from the Gaussian policy, the policy's RNG */
    RAM_LOCS_RANDOM = 2,  /**< uniform in [-1, 1]^2 from the policy's RNG: ablation */
    RAM_LOCS_CENTER = 3   /**< (0, 0) at every step: ablation */
} ram_loc_source;

/** As ram_model_classify(), with the locations taken from `source`.  `pol`
 *  supplies the RNG (and std) for SAMPLED and RANDOM and is otherwise ignored
 *  (may be NULL); it is advanced, so it must not be shared between threads. */
RAM_API ram_status ram_model_classify_ex(const ram_model *m, ram_state *st, const float *images,
                                         int n, ram_loc_source source, ram_policy *pol, int *labels,
                                         float *probs, float *locs);

/**
 * Stopping when sure: each of n images takes glimpses until the classifier,
 * applied to the core's state after each glimpse, gives its top class a
 * probability of at least `threshold`, or until the model's last glimpse;
 * its label and probabilities are those of the glimpse it stopped at.
 * Locations are the policy's means.  In a batch the finished images leave
 * the work, so that a batch of easy images costs less than T glimpses each.
 * threshold: in [0, 1] (1: hardly ever early; 0: every image stops after
 * its first glimpse).  labels, probs: as ram_model_classify() (NULL for
 * none); steps: out, n ints, the glimpses each image took (1 to glimpses),
 * or NULL.  The classifier is trained on the last glimpse's state only
 * (unless the model was trained otherwise), so how early an image may stop
 * without a loss of accuracy is a property of the model: choose the
 * threshold on validation images (ram-eval --stop-threshold reports the
 * error and the mean glimpses).  Errors: as ram_model_classify(), and
 * INVALID_ARGUMENT for a threshold outside [0, 1] or a model of several
 * objects.  Thread-safe on a shared model with one state per thread.
 */
RAM_API ram_status ram_model_classify_stop(const ram_model *m, ram_state *st, const float *images,
                                           int n, float threshold, int *labels, float *probs,
                                           int *steps);

/**
 * @name A learned stop unit
 * A Bernoulli unit after each glimpse, fitted by REINFORCE to a trained
 * model, that says whether to stop there.  After glimpse t (0-based) of T
 * it reads the classifier's probabilities q at that step: the features are
 * -log(1 - q_max) (how sure, at most 20), the margin q_max - q_second, the
 * entropy of q over log(classes), and a one-hot of t (a bias per step); it
 * stops with probability sigmoid(w . features).  Fitting maximises the
 * expected reward [the label at the stop is right] - cost x (glimpses
 * taken) over the given images, stopping at a step drawn from the unit
 * (REINFORCE with ram_reinforce_bernoulli(); each decision's baseline is the
 * reward of stopping there), so `cost` is the knob between error and
 * glimpses: one more image right in 100 is worth 1 / (100 cost) glimpses.
 * In evaluation an image stops at the first glimpse where the unit's
 * probability passes 1/2.  The threshold rule of ram_model_classify_stop()
 * is the special case w = (1, 0, 0, log(1 - P), ...) (strictly above P).
 * The unit is kept in the model (and its file); it describes the weights it
 * was fitted to, so a training step (ram_trainer_train_batch() and its
 * forms) removes it.
 * @{
 */
/** How ram_model_fit_stop() fits the unit. */
typedef struct ram_stop_params {
    size_t struct_size; /**< set by ram_stop_params_init() */
    float cost;         /**< reward lost per glimpse taken, >= 0 (0.01) */
    int epochs;         /**< passes over the images, more if needed for 1,000 updates (30) */
    int batch;          /**< images per update (256) */
    float lr;           /**< Adam's step size (0.05) */
    uint64_t seed;      /**< seed of the sampled stops and the order (1) */
} ram_stop_params;
/** Fill `p` with the defaults above. */
RAM_API void ram_stop_params_init_sized(ram_stop_params *p, size_t size);
/** Fill the caller's ram_stop_params with defaults (passes its size). */
#define ram_stop_params_init(p) ram_stop_params_init_sized((p), sizeof *(p))
/** Number of the unit's weights for a model of `glimpses` glimpses
 *  (3 + glimpses: the three confidence features, then one per step). */
#define RAM_STOP_WEIGHTS(glimpses) (3 + (glimpses))

/**
 * The classifier's probabilities after every glimpse of n images (mean
 * locations): probs, out, n x glimpses x classes floats (image i's step t
 * at (i x glimpses + t) x classes); the last step's are what
 * ram_model_classify() gives.  What ram_model_fit_stop() learns from.
 * Errors: as ram_model_classify_stop() (a model of one object).
 */
RAM_API ram_status ram_model_step_probs(const ram_model *m, ram_state *st, const float *images,
                                        int n, float *probs);
/**
 * Fit the model's stop unit to n images' per-step probabilities (from
 * ram_model_step_probs(), n x glimpses x classes) and labels, replacing any
 * unit it had; sp NULL for the defaults.  The fit starts from the threshold
 * rule at 0.9 (a soft one) and runs Adam.  Fit on training images and
 * judge on others (ram_model_classify_stop_unit()).  Deterministic for a
 * seed.  Errors:
 * INVALID_ARGUMENT (NULL, n < 1, a label outside the classes, a cost < 0
 * or not finite, epochs or batch < 1, lr <= 0, a model of several objects
 * or of one glimpse), NUMERIC (a probability not finite or outside
 * [0, 1]), OUT_OF_MEMORY; on failure the model is unchanged.
 */
RAM_API ram_status ram_model_fit_stop(ram_model *m, const float *probs, const int *labels, int n,
                                      const ram_stop_params *sp);
/** The model's stop unit: its weights (RAM_STOP_WEIGHTS(glimpses) floats
 *  into `w`, which may be NULL) and the cost it was fitted with (`cost`,
 *  may be NULL).  Errors: INVALID_ARGUMENT (NULL model, or a model without
 *  a unit: the message says so). */
RAM_API ram_status ram_model_stop_unit(const ram_model *m, float *w, float *cost);
/** Give the model a stop unit of RAM_STOP_WEIGHTS(glimpses) weights `w`
 *  (finite) and its cost (>= 0, for the record), or remove it (w NULL).
 *  Errors: INVALID_ARGUMENT, and as ram_model_fit_stop() for the model. */
RAM_API ram_status ram_model_set_stop_unit(ram_model *m, const float *w, float cost);
/** As ram_model_classify_stop(), each image stopping where the model's stop
 *  unit says (INVALID_ARGUMENT for a model without one). */
RAM_API ram_status ram_model_classify_stop_unit(const ram_model *m, ram_state *st,
                                                const float *images, int n, int *labels,
                                                float *probs, int *steps);
/** ram_model_classify_stop_unit() on 8-bit images (each byte b the value b / 255). */
RAM_API ram_status ram_model_classify_stop_unit_u8(const ram_model *m, ram_state *st,
                                                   const uint8_t *images, int n, int *labels,
                                                   float *probs, int *steps);
/** @} */

/** The zoom factors of the glimpses of the last classify call on `st`
 *  (ram_model_classify(), _ex(), _seq() and their byte forms), for a model
 *  with zoom (ram_model_params.zoom_min): n x glimpses floats into
 *  `zooms`, n the call's image count, glimpse t of image i at [i x glimpses
 *  + t] (1 for every glimpse of a model without zoom).  Errors:
 *  INVALID_ARGUMENT (NULL, or n not the last call's count; after a failed
 *  call or a stopping call, which reports no locations, there is none). */
RAM_API ram_status ram_state_zooms(const ram_state *st, int n, float *zooms);

/** Save the model (architecture + weights) to `path` in the format described
 *  in docs/file-format.md.  Written to `path`.tmp-XXXXXX then renamed, so
 *  `path` is always either the old file or the complete new one. */
RAM_API ram_status ram_model_save(const ram_model *m, const char *path);
/** Load a model saved by ram_model_save() (or a checkpoint, whose model part
 *  is read).  Every size is checked before it is trusted.  Errors:
 *  INVALID_ARGUMENT (NULL path or out), IO, FORMAT (not a libram model),
 *  VERSION, CORRUPT (truncated or checksum), OUT_OF_MEMORY. */
RAM_API ram_status ram_model_load(const char *path, ram_model **out);
/** As ram_model_load(), from the `size` bytes of a whole file already in
 *  memory (read elsewhere, embedded, received).  The bytes are borrowed for
 *  the call only and checked exactly as a file would be; nothing is written.
 *  Errors: INVALID_ARGUMENT (NULL `out`, or NULL `data` with size > 0),
 *  FORMAT, VERSION, CORRUPT, OUT_OF_MEMORY; `*out` is untouched on error. */
RAM_API ram_status ram_model_load_memory(const void *data, size_t size, ram_model **out);

/* ---- the model's classes and canvas ------------------------------------------- */

/** Class names: what a label number means.  A model has none until they are
 *  set; they are saved with it (model files and checkpoints) and loaded with
 *  it.  `names`: `count` = the model's classes NUL-terminated UTF-8 strings
 *  of 1 to 1024 bytes each (copied); NULL clears them.  Changes the model:
 *  not while another thread uses it.  Errors: INVALID_ARGUMENT (NULL model,
 *  count other than classes, a NULL, empty or too long name), OUT_OF_MEMORY;
 *  on error the model's names are unchanged. */
RAM_API ram_status ram_model_set_class_names(ram_model *m, const char *const *names, int count);
/** The name of class k, valid until the names change or the model is freed;
 *  NULL when the model has no names, for a NULL model or k out of range. */
RAM_API const char *ram_model_class_name(const ram_model *m, int k);

/** How an image of another size is fitted to the model's canvas (width x
 *  height): the model stores its rule, so that whoever applies it to new
 *  images (ram_image_fit(), the tools) fits them as its training images
 *  were.  Glimpses are measured in pixels, so PAD, the default, keeps the
 *  scale the model learnt. */
typedef enum ram_fit {
    RAM_FIT_PAD = 0,       /**< centred at its own size, zeros around; a larger
                                image keeps its centre */
    RAM_FIT_RESIZE = 1,    /**< resized (bilinear) to the canvas; the aspect
                                ratio is not kept */
    RAM_FIT_LETTERBOX = 2, /**< resized keeping the aspect ratio to fit inside
                                the canvas, zeros around */
    RAM_FIT_CROP = 3       /**< resized keeping the aspect ratio to cover the
                                canvas; the centre is kept */
} ram_fit;

/** Set the model's fit rule (saved with it; a model file without one means
 *  PAD).  Changes the model: not while another thread uses it.  Errors:
 *  INVALID_ARGUMENT (NULL, unknown rule). */
RAM_API ram_status ram_model_set_fit(ram_model *m, ram_fit fit);
/** The model's fit rule (PAD for NULL). */
RAM_API ram_fit ram_model_fit(const ram_model *m);

/**
 * Fit one image of any size and channel count to the model's input: its
 * canvas (channels x height x width of ram_model_params) by the model's fit
 * rule.  image: c x h x w floats (CHW); out: out_len >= channels * height *
 * width floats.  Channels: the same count is copied; grey (1) becomes colour
 * by repetition; colour (3, or 4 with alpha) becomes grey by the luma of
 * ITU-R BT.601 (0.299 R + 0.587 G + 0.114 B); an alpha channel (2 = grey +
 * alpha, 4 = RGBA) is dropped.  Resizing is bilinear on pixel centres (the
 * image's edge pixels repeat outside it).  Reads only the image, allocates
 * nothing; thread-safe on a shared model.  Errors: INVALID_ARGUMENT (NULL,
 * a size < 1, a channel count it cannot convert), BUFFER_TOO_SMALL.
 */
RAM_API ram_status ram_image_fit(const ram_model *m, const float *image, int c, int h, int w,
                                 float *out, size_t out_len);

/* ---- location policy and REINFORCE --------------------------------------- */

/** The REINFORCE baseline b_t subtracted from the return. */
typedef enum ram_baseline_type {
    RAM_BASELINE_LINEAR = 0, /**< b_t = w . h_{t-1} + c (paper), fitted by MSE */
    RAM_BASELINE_SCALAR = 1, /**< one learned scalar b (Torch) */
    RAM_BASELINE_NONE = 2    /**< no baseline (b = 0): high variance */
} ram_baseline_type;

/** How a trainer trains the locations of a SOFT-sensor model
 *  (ram_trainer_create() refuses other values). */
typedef enum ram_soft_training {
    /** Deterministic locations (the location network's mean, no
     *  sampling); the classification loss's gradient reaches the location
     *  network, the core and everything before them through the sensor,
     *  backpropagated through time; no REINFORCE term, and the baseline is
     *  not trained. */
    RAM_SOFT_BACKPROP = 0,
    /** Sampled locations, as for the hard sensor, with the REINFORCE term
     *  and the baseline, plus the backpropagated term through the sensor
     *  (through the clamp of the sample: none where it is at +-1). */
    RAM_SOFT_HYBRID = 1
} ram_soft_training;

/** The REINFORCE reward of a model of S > 1 objects (ram_model_params.objects). */
typedef enum ram_reward_mode {
    /** 1 for each correct label: the return at step t is the sum over the
     *  labels emitted at or after t (label s after step e_s = (s + 1) K - 1,
     *  0-based) of discount^(e_s - t) [label s correct]; with one object,
     *  the reward of RAM. */
    RAM_REWARD_PER_OBJECT = 0,
    /** 1 when every label is correct: the return at step t is
     *  discount^(T - 1 - t) [all S correct]. */
    RAM_REWARD_ALL_CORRECT = 1
} ram_reward_mode;

/** Location policy and REINFORCE settings (not stored in model files). */
typedef struct ram_policy_params {
    size_t struct_size; /**< set by ram_policy_params_init() */
    float std;          /**< Gaussian std in [1e-4, 10]; <= 0 means the model's loc_std (0) */
    ram_baseline_type baseline; /**< (LINEAR) */
    int hidden;         /**< size of h for the LINEAR baseline; 0 = model's, negative refused (0) */
    int steps;          /**< decisions per episode; 0 = model's glimpses, negative refused (0) */
    float reward_scale; /**< alpha: scales the REINFORCE gradient (1) */
    float discount;     /**< gamma: return at step t (0-based) is gamma^(T-1-t) r (1) */
    /** 1: the REINFORCE gradient trains the location network only (most
     *  PyTorch ports); 0: it also flows from mu_t back into the core and glimpse
     *  networks through time (Torch).  (1) */
    int detach_core;
    uint64_t seed; /**< sampling RNG seed (1) */
    /** How a trainer moves the locations of a model with the SOFT sensor;
     *  ignored for a HARD one, whose locations are always REINFORCE's.
     *  (BACKPROP) */
    ram_soft_training soft_training;
    /** What a model of several objects is rewarded for (ignored for one):
     *  (PER_OBJECT) */
    ram_reward_mode reward;
    /** A model with the SOFT sensor (ignored for a HARD one): 1, the loss's
     *  gradient backpropagated through the sensor to each location trains
     *  the location network only; 0, it also flows from the location back
     *  into the core and the glimpse network through time.  The recurrent
     *  path that 0 adds (a location moves the next glimpse, which moves the
     *  core, which moves the next location) can make training unsteady: 1
     *  kept 8-glimpse MNIST and the fine-tuning of a hard cluttered60 model
     *  steady where 0 diverged (docs/training.md).  (0, as before the field
     *  was added) */
    int soft_detach_core;
} ram_policy_params;

/** Fill `p` with defaults: std, hidden and steps 0 (take the model's), LINEAR
 *  baseline, reward scale 1, no discount, REINFORCE detached from the core. */
RAM_API void ram_policy_params_init_sized(ram_policy_params *p, size_t size);
/** Fill the caller's ram_policy_params with defaults (passes its size). */
#define ram_policy_params_init(p) ram_policy_params_init_sized((p), sizeof *(p))
/** Create a policy.  With a model, zero `hidden` and `steps` and a
 *  non-positive `std` take the model's values; model may be NULL when std,
 *  hidden and steps are all given.  The policy does not keep `m`.  Errors:
 *  INVALID_ARGUMENT (negative hidden or steps, values out of range, a
 *  missing model), OUT_OF_MEMORY. */
RAM_API ram_status ram_policy_create(const ram_policy_params *p, const ram_model *m,
                                     ram_policy **out);
/** Free a policy (NULL is a no-op). */
RAM_API void ram_policy_free(ram_policy *pol);
/** Reseed the policy's RNG (the only randomness used by sampling). */
RAM_API void ram_policy_seed(ram_policy *pol, uint64_t seed);

/* ---- trainer -------------------------------------------------------------- */

/** The trainer's optimizer. */
typedef enum ram_optimizer {
    RAM_OPT_SGD = 0, /**< SGD with momentum (Nesterov optional) */
    RAM_OPT_ADAM = 1 /**< Adam (Kingma & Ba) */
} ram_optimizer;

/** The number format of a trainer's matrix products (the linear layers'
 *  forward, input-gradient and weight-gradient products).  The weights, the
 *  optimizer's state, the sums and everything else stay float either way. */
typedef enum ram_products {
    /** Float products: cblas_sgemm, or on the avx512 kernel set libram's
     *  own kernels for products with every side at least 16 (faster at a
     *  worker's rows; the same sums to float rounding). */
    RAM_PRODUCTS_FLOAT = 0,
    /** Products with both operands rounded to bfloat16 (8 bits of
     *  significand) and float sums, on CPUs with AVX512_BF16 (from AMD Zen 4
     *  and Intel Cooper Lake); ram_trainer_create() fails with
     *  INVALID_ARGUMENT elsewhere (ram_bf16_products_supported() tells).
     *  Products with a side under 16 (the location and classifier layers)
     *  stay float, and so does ram_trainer_evaluate().  Faster where the
     *  products are most of a step; what it does to accuracy is measured in
     *  docs/training.md. */
    RAM_PRODUCTS_BF16 = 1
} ram_products;

/** Whether this process runs RAM_PRODUCTS_BF16: 1 where the CPU has
 *  AVX512_BF16 with AVX-512 F, BW and VL (their registers saved by the
 *  system) and the avx512 kernel set runs (not when RAM_KERNELS names a
 *  narrower one: ram_kernels_name()), else 0. */
RAM_API int ram_bf16_products_supported(void);

/** Optimizer, schedule and threading of a trainer. */
typedef struct ram_trainer_params {
    size_t struct_size;      /**< set by ram_trainer_params_init() */
    ram_optimizer optimizer; /**< (ADAM) */
    float lr;                /**< initial learning rate (1e-3) */
    float lr_final;          /**< learning rate reached after decay_steps (1e-3, the
                                  default lr: set both when decaying) */
    long decay_steps;        /**< linear decay from lr to lr_final over this many
                                  train_batch calls; 0 = constant lr (0) */
    float momentum;          /**< SGD momentum (0.9) */
    int nesterov;            /**< SGD: Nesterov momentum (0) */
    float beta1;             /**< Adam: first-moment decay (0.9) */
    float beta2;             /**< Adam: second-moment decay (0.999) */
    float eps;               /**< Adam: denominator epsilon (1e-8) */
    float clip_norm;         /**< clip the global gradient L2 norm; 0 = off (5) */
    int max_batch;           /**< largest batch train_batch will see, <= 65536 (128) */
    int threads;             /**< worker threads splitting each batch, <= 256 (1).
                                  Results are deterministic for a given thread count. */
    float weight_decay;      /**< decoupled weight decay (AdamW, and the same for SGD):
                                  each step first scales the model's weights by
                                  1 - lr * weight_decay, biases included, the
                                  baseline's not; lr * weight_decay must be < 1.
                                  0 = off (0); also for a caller built against a
                                  header without this field. */
    float average_decay;     /**< keep an exponential moving average of the model's
                                  weights (Polyak averaging, the rule of TensorFlow's
                                  ExponentialMovingAverage with num_updates): after
                                  step k (0, 1, ...) avg += (1 - d) (w - avg) with
                                  d = min(average_decay, (1 + k) / (10 + k)), in
                                  float (so with average_decay near 1 a difference
                                  w - avg below about ulp(avg) / (2 (1 - d)) is not
                                  followed).  With noisy REINFORCE steps the average
                                  can be a better model than the last weights
                                  (docs/training.md has a measurement);
                                  ram_trainer_swap_average() puts it in the model.
                                  In [0, 1); 0 = off (0). */
    float label_smoothing;   /**< the classifier's target: (1 - e) on the label
                                  and e / K on each of the K classes, instead of
                                  the label alone (Szegedy et al. 2016), against
                                  a classifier that grows sure of the training
                                  images it already fits.  REINFORCE's reward
                                  stays whether the label is right; the stats'
                                  `nll` stays the label's cross-entropy and
                                  `loss` holds the smoothed one.  In [0, 1);
                                  0 = off (0), also for a caller built against a
                                  header without this field. */
    ram_products products;   /**< the number format of the training products
                                  (RAM_PRODUCTS_FLOAT, also for a caller built
                                  against a header without this field) */
} ram_trainer_params;

/** One train_batch() report.  Losses are batch means.  The figures that
 *  show progress are nll, accuracy and reward; `loss` is the objective the
 *  step descends, whose REINFORCE surrogate moves it up, down or below zero
 *  with no change in the classifier, so it is not one of them. */
typedef struct ram_train_stats {
    float loss;         /**< objective descended = the cross-entropy against the
                             target (nll, without label_smoothing) + baseline_mse
                             + reinforce (not a measure of progress: see above) */
    float nll;          /**< classification cross-entropy: falls as it learns */
    float baseline_mse; /**< mean over steps of (b_t - R_t)^2 */
    float reinforce;    /**< surrogate -alpha * mean sum_t (R_t - b_t) log pi(l_t) */
    float accuracy;     /**< fraction correct with *sampled* locations */
    float reward;       /**< mean final reward */
    float baseline;     /**< mean baseline value */
    float grad_norm;    /**< global gradient norm before clipping */
    float lr;           /**< learning rate used for this step */
} ram_train_stats;

/** Fill `p` with defaults: Adam at lr 1e-3, no decay, clipping at 5, batches up
 *  to 128, one thread. */
RAM_API void ram_trainer_params_init_sized(ram_trainer_params *p, size_t size);
/** Fill the caller's ram_trainer_params with defaults (passes its size). */
#define ram_trainer_params_init(p) ram_trainer_params_init_sized((p), sizeof *(p))
/**
 * Create a trainer for `m` with policy `pol`.  Both are borrowed: they must
 * outlive the trainer, and the trainer updates their weights in place.
 * Workspaces for max_batch images and threads-1 worker threads are created
 * here, so train_batch() allocates nothing.  Like a ram_state (see
 * ram_state_create()), the trainer keeps a column-major copy of the
 * ReLU-fed layers, remade before each step, so that the forward pass skips
 * zeros once the model leaves many.  Errors: INVALID_ARGUMENT
 * (including a policy whose steps/hidden do not match the model), THREAD,
 * OUT_OF_MEMORY.
 */
RAM_API ram_status ram_trainer_create(ram_model *m, ram_policy *pol, const ram_trainer_params *p,
                                      ram_trainer **out);
/** Free a trainer and join its worker threads (NULL is a no-op).  The model
 *  and policy it trained stay valid; freed while ram_trainer_swap_average()
 *  has the average in, the model keeps the average (and the last trained
 *  weights are gone). */
RAM_API void ram_trainer_free(ram_trainer *t);

/**
 * One optimisation step on n images (n <= max_batch) with integer labels in
 * [0, classes): sample locations, forward, loss = NLL + baseline MSE +
 * REINFORCE, backward through time, clip, update.  `stats` may be NULL.
 * A model of several objects takes ram_trainer_train_batch_seq() instead
 * (this function refuses it: INVALID_ARGUMENT).
 * Errors: INVALID_ARGUMENT (shape, label out of range), NUMERIC (a NaN/Inf
 * pixel where a glimpse looked, or a non-finite loss or gradient: the
 * weights are then left unchanged).  As in ram_model_classify(), pixels no
 * glimpse reads are never touched, so a step's cost does not grow with the
 * image.
 */
RAM_API ram_status ram_trainer_train_batch(ram_trainer *t, const float *images, const int *labels,
                                           int n, ram_train_stats *stats);
/** Error rate (fraction wrong) of the model on n images with mean locations,
 *  processed max_batch at a time with the trainer's threads.  Errors as
 *  train_batch() (NUMERIC for a NaN/Inf pixel a glimpse read). */
RAM_API ram_status ram_trainer_evaluate(ram_trainer *t, const float *images, const int *labels,
                                        int n, double *error);
/**
 * Exchange the model's weights with their moving average (average_decay > 0):
 * after one call the model holds the average, to evaluate, classify with or
 * save; the next call puts the trained weights back, bit for bit.  While the
 * average is in, train_batch(), save_checkpoint() and load_checkpoint() fail
 * with INVALID_ARGUMENT (they would train, save or overwrite the wrong
 * weights).  Errors: INVALID_ARGUMENT (NULL, or a trainer without averaging).
 */
RAM_API ram_status ram_trainer_swap_average(ram_trainer *t);
/** 1 while ram_trainer_swap_average() has the average in the model, else 0. */
RAM_API int ram_trainer_average_in(const ram_trainer *t);

/** Number of train_batch() steps taken so far. */
RAM_API long ram_trainer_steps(const ram_trainer *t);
/** A random permutation of 0..n-1 from the trainer's own RNG (saved in
 *  checkpoints), for shuffling data reproducibly. */
RAM_API ram_status ram_trainer_shuffle(ram_trainer *t, int *perm, int n);

/**
 * Save a checkpoint: model, policy (baseline weights, RNG), optimizer state,
 * step count, trainer RNG, the weights' moving average (when average_decay >
 * 0) and `user_len` bytes of caller data (e.g. the epoch counter),
 * atomically as ram_model_save() does.  A checkpoint is also a valid model
 * file for ram_model_load() (with the trained weights, not the average).
 */
RAM_API ram_status ram_trainer_save_checkpoint(const ram_trainer *t, const char *path,
                                               const void *user, size_t user_len);
/**
 * Restore a checkpoint into a trainer built with the same architecture, policy
 * and trainer params.  Training then continues exactly as the uninterrupted
 * run would (same thread count).  Up to user_cap bytes of caller data are
 * copied to `user`; *user_len (if not NULL) receives its full length.
 * Errors: as ram_model_load(), plus INVALID_ARGUMENT (NULL t or path, NULL
 * user with user_cap > 0, or while ram_trainer_swap_average() has the average
 * in), MISMATCH when the architecture (every
 * ram_model_params field but seed and init_scale), the baseline type or the
 * optimizer differ, and FORMAT for a model file that is not a checkpoint and
 * for state no trainer can be in (a step count above LONG_MAX, a non-finite
 * baseline weight or optimizer moment, a negative second moment, an all-zero
 * or NaN random-number state, and for a trainer that averages, a weight
 * average that is short, of the wrong length or not finite; a trainer that
 * does not average skips the file's average unread, and its checkpoints have
 * none).  The policy's std, reward scale, discount and
 * detach_core and the learning-rate schedule are the trainer's own, not the
 * file's.  A trainer with averaging takes the file's average, or starts it
 * from the loaded weights when the file has none.  On error nothing is
 * changed.
 */
RAM_API ram_status ram_trainer_load_checkpoint(ram_trainer *t, const char *path, void *user,
                                               size_t user_cap, size_t *user_len);
/** As ram_trainer_load_checkpoint(), from the `size` bytes of a whole
 *  checkpoint file already in memory (borrowed for the call only).  Errors and
 *  guarantees as ram_trainer_load_checkpoint(); NULL `data` with size > 0 is
 *  INVALID_ARGUMENT. */
RAM_API ram_status ram_trainer_load_checkpoint_memory(ram_trainer *t, const void *data, size_t size,
                                                      void *user, size_t user_cap,
                                                      size_t *user_len);

/* ---- several objects per image (DRAM) ---------------------------------------- */

/**
 * The S = ram_model_params.objects labels of each of n images, with the
 * locations taken from `source` as in ram_model_classify_ex().  labels: out,
 * n x S ints (image i's label s at i * S + s), or NULL; probs: out, n x S x
 * classes, or NULL; locs: as ram_model_classify()'s, or NULL.  For S = 1
 * this is ram_model_classify_ex(); for S > 1 that function (and
 * ram_model_classify()) gives only the last label of each image.  Errors:
 * as ram_model_classify_ex().
 */
RAM_API ram_status ram_model_classify_seq(const ram_model *m, ram_state *st, const float *images,
                                          int n, ram_loc_source source, ram_policy *pol,
                                          int *labels, float *probs, float *locs);
/**
 * ram_trainer_train_batch() for a model of S objects: labels is n x S (image
 * i's label s at i * S + s, each in [0, classes)).  The loss is the sum of
 * the S cross-entropies (their batch means), the REINFORCE reward the
 * policy's `reward` mode, the baseline fitted to the return of each step.
 * In `stats`, nll is the sum of the S mean cross-entropies, accuracy the
 * fraction of labels right, reward the mean final reward (per-object mode:
 * the number of right labels).  With S = 1 it is ram_trainer_train_batch()
 * exactly, which refuses models of S > 1 (INVALID_ARGUMENT).  Errors: as
 * ram_trainer_train_batch().
 */
RAM_API ram_status ram_trainer_train_batch_seq(ram_trainer *t, const float *images,
                                               const int *labels, int n, ram_train_stats *stats);
/**
 * ram_trainer_evaluate() for a model of S objects: labels n x S.  *error
 * (if not NULL) gets the fraction of images with any label wrong, in
 * order; *object_error (if not NULL) the fraction of labels wrong.
 * ram_trainer_evaluate() refuses models of S > 1.  Errors: as
 * ram_trainer_evaluate(), INVALID_ARGUMENT when both outputs are NULL.
 */
RAM_API ram_status ram_trainer_evaluate_seq(ram_trainer *t, const float *images, const int *labels,
                                            int n, double *error, double *object_error);

/* ---- diagnostics ------------------------------------------------------------ */

/** Severity of a log message. */
typedef enum ram_log_level {
    RAM_LOG_WARN = 1, /**< libram works, but something costs the caller (a slow BLAS) */
    RAM_LOG_INFO = 2  /**< informational */
} ram_log_level;

/** A log callback: `message` is one line without a newline, valid during the
 *  call only.  Calls are serialised; it must not call back into libram. */
typedef void (*ram_log_fn)(ram_log_level level, const char *message, void *user);

/** Route libram's diagnostics, which are never errors (errors are statuses
 *  and ram_last_error()).  By default they go to stderr as
 *  "libram: warning: ..."; fn = NULL silences them.  Process-wide, safe to
 *  call from any thread.  The messages are two one-time warnings:
 *  BLAS kernels older than the processor (ram_blas_info()), and OpenBLAS
 *  threads of its own inside libram's worker threads (ram_set_blas_threads()). */
RAM_API void ram_set_log_callback(ram_log_fn fn, void *user);

/** Describe the CBLAS libram runs on: its name, version, build options
 *  and the core type whose kernels it runs (static string).  If `slow` is
 *  not NULL it receives 1 when OpenBLAS runs kernels older than the CPU (an
 *  unrecognised CPU makes older OpenBLAS releases fall back to their SSE3
 *  kernels, several times slower; the remedy is OPENBLAS_CORETYPE=HASWELL
 *  or SKYLAKEX in the environment before the program starts).  The first
 *  model created or loaded in a process runs the same check and logs a
 *  warning when it is slow. */
RAM_API const char *ram_blas_info(int *slow);

/* ==== advanced API ==========================================================
 *
 * The declarations below are for callers who tune or extend libram: states
 * whose calls are shared by several threads, reduced precision, the BLAS's
 * own threads, the REINFORCE building blocks and the gradient hook of
 * data-parallel training.  They keep the ABI promise of the whole header
 * (never removed or changed within a major version, status values fixed),
 * but what they cost, and where documented the last bits of their results,
 * may change in any release as kernels improve.  Most programs need none
 * of them. */

/* ---- threaded states and precision ----------------------------------------- */

/** Most threads ram_state_create_threads() accepts. */
#define RAM_STATE_MAX_THREADS 64

/** As ram_state_create(), for a workspace whose classify calls are worked on
 *  by `threads` threads (1 to RAM_STATE_MAX_THREADS): threads - 1 worker
 *  threads are started here and joined by ram_state_free(); the thread that
 *  calls ram_model_classify() is the other one.  A call of up to 8 images
 *  divides every layer's outputs between the threads, so that one image
 *  (batch 1) is classified faster, not only a large batch: each thread
 *  keeps its share of the weights in its own core's cache, unless that is
 *  measured to be slower (where cores are shared, as a VM's vCPUs are, the
 *  threads' barriers can cost more than the work they divide, and a thread
 *  whose core another program holds stalls every call): the state's first
 *  32 such calls alternate, two at a time, between the threads and the
 *  calling thread alone, and the threads are used while the median of
 *  their last 8 times is at least 5 % below the median of the last 8
 *  alone.  Of two calls one way after a call the other way only the second
 *  is timed: the first wakes the threads (which sleep after 0.1 ms without
 *  work) and brings the weights to their caches.  To keep both medians
 *  current, two calls now and then go the way not chosen: while the
 *  threads are used, two in about 128, every call by them timed, and one
 *  4 times slower than the median alone makes the choice again at once;
 *  while the calling thread runs alone, two in about 1024, and one call in
 *  8 timed, so that the trials and the clock cost two threads about 0.2 %
 *  against one (fewer trials still the slower the other way is).  So the
 *  choice leaves threads that have come to lose within a few hundred
 *  calls, and takes them up again within some thousands.  A larger call gives
 *  each thread a slice of the images, in a workspace of its own.
 *
 *  Results: the same bits for every `threads` value when a call classifies
 *  8 images or fewer.  Beyond that, a slice has fewer rows than the whole
 *  batch, and BLAS may round a product of another shape differently: the
 *  last bits of probabilities may differ from a 1-thread state's.
 *
 *  Costs: the threads spin for a short while (about 0.1 ms) after each
 *  call, waiting for the next one, then sleep until it comes; inside a small call they wait for
 *  each other at four barriers per glimpse (two for one image when the
 *  first glimpse layer is small, as in the paper's MNIST model).  Memory:
 *  that of ram_state_create() for max_batch images (with its column-major
 *  copy and gather buffer), plus a workspace for 8 and max_batch x glimpses
 *  x 2 floats (x 3 with zoom).  Give the threads free cores: more threads than free cores
 *  makes calls slower, not faster.  Call
 *  ram_set_blas_threads(1) at start-up so that BLAS does not start threads of
 *  its own inside these.
 *
 *  The state as a whole still belongs to one calling thread at a time.
 *  Errors: as ram_state_create(), INVALID_ARGUMENT (threads out of range),
 *  OUT_OF_MEMORY (also when a thread cannot be started). */
RAM_API ram_status ram_state_create_threads(const ram_model *m, int max_batch, int threads,
                                            ram_state **out);
/** The precision of the weights a state classifies with (ram_state_set_precision()). */
typedef enum ram_precision {
    RAM_PRECISION_FLOAT = 0, /**< the model's float weights as they are (the default) */
    RAM_PRECISION_HALF = 1,  /**< every parameter rounded to IEEE 754 binary16 */
    RAM_PRECISION_BF16 = 2   /**< every parameter rounded to bfloat16 */
} ram_precision;

/**
 * Classify with this state at another precision of the weights.
 *
 * HALF: the state keeps its own copy of the model's parameters, each rounded
 * to the nearest IEEE 754 half-precision (binary16) number, and classifies
 * with those values; all arithmetic stays float.  Calls of up to 8 images
 * read the 16-bit numbers themselves: half the bytes of weights per
 * glimpse.  Whether that is faster depends on how cheaply the processor
 * converts halves: measure with ram-bench's "half" rows
 * (docs/performance.md).  Larger calls multiply by the same values (held as
 * floats for their matrix products), so every batch size classifies the
 * same rounded model.  Results differ from FLOAT's by that rounding (at
 * most 2^-11 of a weight's magnitude; 2^-25 absolute below 2^-14);
 * docs/results.md gives the test error of the committed models both ways.
 *
 * BF16: the same with bfloat16, a float's upper 16 bits: the float's range
 * (no model is out of it), 8 significant bits (rounding moves a weight by
 * at most 2^-9 of its magnitude, four times HALF's 2^-11).  Widening it is
 * a shift, cheaper than a half's conversion on any processor; the
 * arithmetic stays float, so the results are the same on every processor
 * (the AVX-512 BF16 dot-product instructions, which would round the
 * activations too, are not used).  ram-bench's "bf16" rows and
 * docs/results.md give its speed and the committed models' errors.
 *
 * The copy is made at the next ram_model_classify() or
 * ram_model_classify_ex() call, and again whenever that call's model is
 * another one or its weights have changed since (a trainer step,
 * ram_trainer_swap_average(), ram_trainer_load_checkpoint()): a pass over
 * the parameters, which allocates nothing.  That call then fails with
 * NUMERIC if a parameter rounds to Inf or is NaN (HALF: a magnitude beyond
 * 65504, the largest finite half).  Memory: 6 bytes per parameter (1.3 MB
 * for the paper's MNIST model), freed by setting FLOAT again.
 *
 * Errors: INVALID_ARGUMENT (NULL state, unknown precision), OUT_OF_MEMORY
 * (the state is then unchanged).
 */
RAM_API ram_status ram_state_set_precision(ram_state *st, ram_precision precision);

/* ---- the BLAS ------------------------------------------------------------ */

/** Set the BLAS library's own thread count when it is OpenBLAS (no-op
 *  otherwise).  Process-wide; libram never calls it on its own.  libram's
 *  matrices are small (batch x 256 x 256): parallelise across batches or
 *  threads (trainer `threads`, one ram_state per thread) and call
 *  ram_set_blas_threads(1) at start-up: with OpenBLAS's default of one
 *  thread per core, its threads compete with the caller's for the cores and
 *  small products get much slower (a 2-thread trainer on two cores: 5-7
 *  times slower).  When a trainer or a threaded state first runs its
 *  threads through BLAS while OpenBLAS has more than one thread, libram
 *  logs a warning saying so, once a process (ram_set_log_callback()). */
RAM_API void ram_set_blas_threads(int n);

/** The OpenBLAS core type whose kernels fit this processor, for
 *  OPENBLAS_CORETYPE when ram_blas_info() reports slow ones: "SKYLAKEX" on
 *  an x86-64 with AVX-512F (and AVX2 and FMA), "HASWELL" on one with AVX2
 *  and FMA, NULL on other processors, where libram knows of no better core
 *  to suggest (static string). */
RAM_API const char *ram_blas_coretype(void);

/* ---- the processor's kernels ---------------------------------------------- */

/** Which set of libram's own kernels (the few-row and zero-skipping layer
 *  products) this process runs, chosen once from what the processor has
 *  (static string): "avx512" (x86-64 with AVX-512 F, BW and VL besides
 *  the next set's), "avx2+fma" (x86-64 with AVX2, FMA, F16C and POPCNT),
 *  "neon" (AArch64) or "portable" (plain C, every other processor); the
 *  environment variable RAM_KERNELS names a set to use instead, if the
 *  processor can run it.  Only "portable" lacks the kernels that skip a
 *  ReLU's zeros.  Results differ between sets by float rounding (a vector
 *  set fuses its multiply-adds); the vector sets sum in the same order.
 *  New names may appear. */
RAM_API const char *ram_kernels_name(void);

/* ---- REINFORCE building blocks ---------------------------------------------- */

/** Sample n 2-D locations l = clamp(mu + std * eps, -1, 1), eps ~ N(0, I),
 *  from the policy's own RNG.  mu and l: n x 2.  Errors: INVALID_ARGUMENT,
 *  NUMERIC (a non-finite mu): then l and the RNG are unchanged. */
RAM_API ram_status ram_policy_sample(ram_policy *pol, const float *mu, int n, float *l);

/**
 * The REINFORCE estimator for the Gaussian policy.  For each of the n rows
 * and d dimensions, writes the gradient of the *loss*
 *     -alpha * (R_i - b_i) * log N(x_i | mu_i, std^2)
 * with respect to mu:  dmu = -alpha * (R_i - b_i) * (x_i - mu_i) / std^2,
 * divided by `norm` (e.g. the batch size; 1 for none).  R and b: n values
 * (b may be NULL for no baseline); x, mu, dmu: n x d.
 *
 * Errors, for all three estimators: NUMERIC for a non-finite R, b, x or mu
 * (Bernoulli: p outside (0, 1); categorical: the chosen class's p not
 * finite and > 0; only that entry of p is read), INVALID_ARGUMENT for a
 * NULL array, n < 0, d < 1, a non-finite alpha, norm <= 0 or not finite, or
 * a std so small that 1 / std^2 overflows.  On failure nothing is written.
 */
RAM_API ram_status ram_reinforce_gaussian(const float *x, const float *mu, int n, int d, float std,
                                          const float *R, const float *b, float alpha, float norm,
                                          float *dmu);
/** The same for a Bernoulli unit with probability p of x = 1:
 *  d log P(x) / dp = (x - p) / (p (1 - p)); dp = -alpha (R - b) * that / norm. */
RAM_API ram_status ram_reinforce_bernoulli(const float *x, const float *p, int n, int d,
                                           const float *R, const float *b, float alpha, float norm,
                                           float *dp);
/** The same for a categorical unit over k classes given probabilities p
 *  (n x k) and the chosen class x (n): d log p_x / dp_j = [j == x] / p_x. */
RAM_API ram_status ram_reinforce_categorical(const int *x, const float *p, int n, int k,
                                             const float *R, const float *b, float alpha,
                                             float norm, float *dp);

/** Returns per step: R[i*steps + t] = reward_scale-free discounted return
 *  gamma^(steps-1-t) * [pred_i == label_i] for t = 0..steps-1. */
RAM_API ram_status ram_policy_returns(const ram_policy *pol, const int *pred, const int *label,
                                      int n, float *R);

/* ---- the gradient hook ----------------------------------------------------- */

/**
 * A gradient hook: the reduction point for data-parallel training.
 *
 * grad: count floats, the gradient of the current step: the model's
 * parameters (in the order of the model file) followed by the baseline's
 * weights; count = ram_trainer_gradient_size().  Each entry is a mean over
 * the images of this train_batch() call, so averaging the buffers of R
 * processes that each trained on their own images gives the mean over all
 * of them, as one process with the R batches together would compute.
 * Return RAM_OK, or any other status to make train_batch() fail with it.
 */
typedef ram_status (*ram_gradient_fn)(float *grad, size_t count, void *user);

/**
 * Install a gradient hook (fn = NULL removes it).  Timing: every
 * train_batch() calls fn exactly once, on the thread that called
 * train_batch(), after the batch's gradient has been summed over the
 * trainer's threads and before it is checked for NaN/Inf, clipped and
 * applied by the optimizer.  Ownership: grad belongs to the trainer and is
 * valid only during the call; fn may read it and overwrite it in place
 * (MPI_Allreduce with MPI_IN_PLACE, then a division by the number of ranks:
 * see tools/ram-train-mpi.c).  fn must not call this
 * trainer.  When fn fails, train_batch() returns its status with the
 * weights, optimizer state and policy RNG unchanged.  libram itself never
 * links MPI.  Allocates the flat buffer once, here (train_batch() still
 * allocates nothing).  Errors: INVALID_ARGUMENT, OUT_OF_MEMORY.
 */
RAM_API ram_status ram_trainer_set_gradient_hook(ram_trainer *t, ram_gradient_fn fn, void *user);
/** Length of the gradient a hook sees: model parameters + baseline weights. */
RAM_API size_t ram_trainer_gradient_size(const ram_trainer *t);

/* ---- 8-bit images ----------------------------------------------------------- */

/**
 * @name 8-bit images
 * The functions above that take images, taking them as bytes: N x C x H x W
 * unsigned bytes (the model's or the call's shape), byte b standing for the
 * pixel value (float)b / 255.0f, correctly rounded.  A call on bytes gives
 * the very bits the same call gives on the floats converted that way
 * (outputs, locations, trained weights and checkpoints), at the cost of a
 * byte read per pixel a glimpse looks at: no image is ever converted whole,
 * so a batch of large images costs no more to hand over than its glimpses
 * cost to cut.  Errors, threads and memory as for the float functions (a
 * byte cannot be NaN or Inf, so NUMERIC comes only from the model).
 *
 * The _u8_ptrs forms take n pointers, one per image (each C x H x W bytes,
 * anywhere: in a memory-mapped file, in a data set kept in memory), so that
 * a shuffled batch is handed over without being copied together; a NULL
 * among them is INVALID_ARGUMENT.  A model of several objects
 * (ram_model_params.objects > 1) is refused by the training and evaluation
 * functions here, as by their float forms: it takes the _seq functions.
 * @{
 */
/** ram_glimpse_extract() on bytes. */
RAM_API ram_status ram_glimpse_extract_u8(const ram_glimpse *g, const uint8_t *images, int n, int c,
                                          int h, int w, const float *locs, float *out,
                                          size_t out_len);
/** ram_model_classify() on bytes. */
RAM_API ram_status ram_model_classify_u8(const ram_model *m, ram_state *st, const uint8_t *images,
                                         int n, int *labels, float *probs, float *locs);
/** ram_model_classify_ex() on bytes. */
RAM_API ram_status ram_model_classify_ex_u8(const ram_model *m, ram_state *st,
                                            const uint8_t *images, int n, ram_loc_source source,
                                            ram_policy *pol, int *labels, float *probs,
                                            float *locs);
/** ram_model_classify_stop() on 8-bit images (each byte b the value b / 255). */
RAM_API ram_status ram_model_classify_stop_u8(const ram_model *m, ram_state *st,
                                              const uint8_t *images, int n, float threshold,
                                              int *labels, float *probs, int *steps);
/** ram_trainer_train_batch() on bytes. */
RAM_API ram_status ram_trainer_train_batch_u8(ram_trainer *t, const uint8_t *images,
                                              const int *labels, int n, ram_train_stats *stats);
/** ram_trainer_train_batch() on n images of bytes, each at its own address. */
RAM_API ram_status ram_trainer_train_batch_u8_ptrs(ram_trainer *t, const uint8_t *const *images,
                                                   const int *labels, int n,
                                                   ram_train_stats *stats);
/** ram_trainer_evaluate() on bytes. */
RAM_API ram_status ram_trainer_evaluate_u8(ram_trainer *t, const uint8_t *images, const int *labels,
                                           int n, double *error);
/** ram_trainer_evaluate() on n images of bytes, each at its own address. */
RAM_API ram_status ram_trainer_evaluate_u8_ptrs(ram_trainer *t, const uint8_t *const *images,
                                                const int *labels, int n, double *error);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* RAM_RAM_H */
