/* libFuzzer target for the checkpoint loader,
 * ram_trainer_load_checkpoint_memory().
 *
 * A checkpoint is only accepted by a trainer of the same architecture,
 * baseline and optimizer, so the target builds one to fit each input: the
 * model part is loaded with ram_model_load_memory(), the baseline type and
 * optimizer are read from the PLCY and OPTM chunks (when in range), a file
 * with an AVRG chunk gets a trainer that keeps an average, and a
 * one-thread trainer is created around a copy of that model.  Each input is
 * tried as it is and rewrapped with a correct checksum (fuzz_wrap.h).  Then:
 *  - a failed load must leave the trainer as it was (weights, baseline
 *    weights, step count) with a documented status and a message;
 *  - a successful load must give the file's weights, and one training step
 *    must end (no hang on an impossible RNG state) with RAM_OK or
 *    RAM_ERR_NUMERIC.
 * See tests/fuzz/README.md. */
#include "fuzz_wrap.h"

#include <math.h>

#define TARGET "fuzz_checkpoint"

static void try_checkpoint(const unsigned char *data, size_t size) {
    /* A trainer to fit the file: nothing to try when its model part fails. */
    ram_model *m = NULL;
    if (ram_model_load_memory(data, size, &m) != RAM_OK) return;
    ram_reader pc, oc;
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 2;
    if (ram_file_find(data, size, RAM_TAG('P', 'L', 'C', 'Y'), &pc)) {
        uint32_t b = ram_rd_u32(&pc);
        if (b <= RAM_BASELINE_NONE) pp.baseline = (ram_baseline_type)b;
    }
    if (ram_file_find(data, size, RAM_TAG('O', 'P', 'T', 'M'), &oc)) {
        uint32_t o = ram_rd_u32(&oc);
        if (o <= RAM_OPT_ADAM) tp.optimizer = (ram_optimizer)o;
    }
    ram_reader ac;
    if (ram_file_find(data, size, RAM_TAG('A', 'V', 'R', 'G'), &ac)) tp.average_decay = 0.5f;
    ram_model_params mp;
    ram_model_params_init(&mp);
    ram_model_get_params(m, &mp);
    const size_t img = (size_t)mp.channels * mp.height * mp.width;
    ram_policy *pol = NULL;
    ram_trainer *t = NULL;
    if (img > 1 << 16 || ram_policy_create(&pp, m, &pol) != RAM_OK ||
        ram_trainer_create(m, pol, &tp, &t) != RAM_OK) {
        ram_policy_free(pol);
        ram_model_free(m);
        return;
    }

    /* Move the trainer's state away from the file's so a partial commit shows. */
    const size_t np = ram_model_param_count(m);
    ram_train_stats st;
    float *x = calloc(2 * img, sizeof(float));
    int y[2 * 64]; /* two images' labels, one per object (at most 64), classes >= 2 */
    for (int i = 0; i < 2 * 64; i++)
        y[i] = i % 2;
    float *w0 = malloc(sizeof(float) * (np + pol->n_bw + 1));
    ram_model *file_model = NULL;
    if (!x || !w0 || ram_model_load_memory(data, size, &file_model) != RAM_OK)
        fuzz_fail(TARGET, "out of memory or a second load differs");
    for (size_t i = 0; i < 2 * img; i++)
        x[i] = (float)(i % 5) / 4.0f;
    ram_status s0 = ram_trainer_train_batch_seq(t, x, y, 2, &st);
    if (s0 != RAM_OK && s0 != RAM_ERR_NUMERIC) fuzz_fail(TARGET, "a first step failed");
    memcpy(w0, m->w, sizeof(float) * np);
    if (pol->n_bw) memcpy(w0 + np, pol->bw, sizeof(float) * pol->n_bw);
    const long steps0 = ram_trainer_steps(t);

    char user[16];
    size_t user_len = (size_t)-1;
    ram_status s = ram_trainer_load_checkpoint_memory(t, data, size, user, sizeof user, &user_len);
    if (s == RAM_OK) {
        if (memcmp(m->w, file_model->w, sizeof(float) * np) != 0)
            fuzz_fail(TARGET, "loaded weights differ from the file's");
        if (user_len == (size_t)-1) fuzz_fail(TARGET, "user_len not set");
        if (tp.average_decay > 0) { /* the loaded average is finite, and swaps back */
            if (ram_trainer_swap_average(t) != RAM_OK) fuzz_fail(TARGET, "swap_average failed");
            for (size_t i = 0; i < np; i++)
                if (!isfinite(m->w[i])) fuzz_fail(TARGET, "a non-finite average was loaded");
            if (ram_trainer_swap_average(t) != RAM_OK ||
                memcmp(m->w, file_model->w, sizeof(float) * np) != 0)
                fuzz_fail(TARGET, "swapping the average back changed the weights");
        }
        s = ram_trainer_train_batch_seq(t, x, y, 2, &st);
        if (s != RAM_OK && s != RAM_ERR_NUMERIC) fuzz_fail(TARGET, "a step after loading failed");
    } else {
        if (!ram_last_error()[0]) fuzz_fail(TARGET, "a failed load left no message");
        if (s != RAM_ERR_FORMAT && s != RAM_ERR_VERSION && s != RAM_ERR_CORRUPT &&
            s != RAM_ERR_MISMATCH && s != RAM_ERR_OUT_OF_MEMORY)
            fuzz_fail(TARGET, "a status the header does not document for this call");
        if (memcmp(m->w, w0, sizeof(float) * np) != 0 ||
            (pol->n_bw && memcmp(pol->bw, w0 + np, sizeof(float) * pol->n_bw) != 0) ||
            ram_trainer_steps(t) != steps0 || user_len != (size_t)-1)
            fuzz_fail(TARGET, "a failed load changed the trainer");
    }
    free(x);
    free(w0);
    ram_model_free(file_model);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* As it is: exercises the container checks on the public entry point. */
    ram_trainer *none = NULL;
    if (ram_trainer_load_checkpoint_memory(none, data, size, NULL, 0, NULL) !=
        RAM_ERR_INVALID_ARGUMENT)
        fuzz_fail(TARGET, "a NULL trainer was accepted");
    try_checkpoint(data, size);
    size_t len;
    unsigned char *wrapped = fuzz_rewrap(data, size, &len);
    try_checkpoint(wrapped, len);
    free(wrapped);
    return 0;
}
