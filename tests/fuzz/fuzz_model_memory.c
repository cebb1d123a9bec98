/* libFuzzer target for ram_model_load_memory(), the public in-memory model
 * loader, and for inference on whatever it accepts.
 *
 * Each input is loaded as it is (almost always stopped by the CRC) and once
 * more rewrapped with a correct checksum (fuzz_wrap.h), so that mutated
 * architectures and weights reach the parser.  A model that loads must
 *  - report the status contract: RAM_OK with a model, or an error with
 *    *out untouched and a message;
 *  - classify an image of its own shape (when that image is small enough to
 *    allocate here): hostile but valid architectures (odd retina scales,
 *    huge location ranges, big weights) must not reach undefined behaviour
 *    in the forward pass.  The status may be RAM_OK or RAM_ERR_NUMERIC
 *    (weights so large the activations overflow).
 * AddressSanitizer, UBSan and LeakSanitizer turn anything else into a crash.
 * See tests/fuzz/README.md. */
#include "fuzz_wrap.h"

#define TARGET "fuzz_model_memory"

static void classify_once(const ram_model *m) {
    ram_model_params p;
    ram_model_params_init(&p);
    if (ram_model_get_params(m, &p) != RAM_OK) fuzz_fail(TARGET, "get_params failed");
    const size_t img = (size_t)p.channels * p.height * p.width;
    if (img > 1 << 16) return; /* not the parser's business: keep execs fast */
    float *x = malloc(sizeof(float) * (img * 2 + (size_t)p.classes * 2 + (size_t)p.glimpses * 4));
    if (!x) fuzz_fail(TARGET, "out of memory");
    for (size_t i = 0; i < 2 * img; i++)
        x[i] = (float)(i % 7) / 6.0f;
    float *probs = x + 2 * img, *locs = probs + 2 * (size_t)p.classes;
    int labels[2];
    ram_state *st = NULL;
    ram_status s = ram_state_create(m, 2, &st);
    if (s == RAM_OK) {
        s = ram_model_classify(m, st, x, 2, labels, probs, locs);
        if (s != RAM_OK && s != RAM_ERR_NUMERIC) fuzz_fail(TARGET, "classify failed");
        if (s == RAM_OK && (labels[0] < 0 || labels[0] >= p.classes))
            fuzz_fail(TARGET, "classify returned a label out of range");
        ram_state_free(st);
    } else if (s != RAM_ERR_OUT_OF_MEMORY) {
        fuzz_fail(TARGET, "state_create failed on a loaded model");
    }
    free(x);
}

static void load(const unsigned char *data, size_t size) {
    ram_model *const sentinel = (ram_model *)&sentinel;
    ram_model *m = sentinel;
    ram_status s = ram_model_load_memory(data, size, &m);
    if (s == RAM_OK) {
        if (!m || m == sentinel) fuzz_fail(TARGET, "RAM_OK without a model");
        classify_once(m);
        ram_model_free(m);
    } else {
        if (m != sentinel) fuzz_fail(TARGET, "a failed load changed *out");
        if (!ram_last_error()[0]) fuzz_fail(TARGET, "a failed load left no message");
        if (s != RAM_ERR_FORMAT && s != RAM_ERR_VERSION && s != RAM_ERR_CORRUPT &&
            s != RAM_ERR_OUT_OF_MEMORY)
            fuzz_fail(TARGET, "a status the header does not document for this call");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load(data, size);
    size_t len;
    unsigned char *wrapped = fuzz_rewrap(data, size, &len);
    load(wrapped, len);
    free(wrapped);
    return 0;
}
