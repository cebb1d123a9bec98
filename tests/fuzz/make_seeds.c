/* Writes the seed corpora of the fuzz targets (see README.md here):
 *   DIR/model/       small models covering each architecture option, and a
 *                    checkpoint (fuzz_model_file, fuzz_model_memory);
 *   DIR/checkpoint/  checkpoints for each optimizer and baseline type
 *                    (fuzz_checkpoint);
 *   DIR/idx/         tiny IDX image and label files, and the two joined as
 *                    fuzz_idx splits its input; a 4-D colour one (fuzz_idx).
 * Usage: make_seeds DIR (the subdirectories must exist).  Public API only. */
#include <ram/ram.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(ram_status s, const char *what) {
    if (s) {
        fprintf(stderr, "make_seeds: %s: %s\n", what, ram_last_error());
        exit(1);
    }
}

static ram_model *tiny(int form, int core, int bound, int depth, int channels) {
    ram_model_params p;
    ram_model_params_init(&p);
    p.channels = channels;
    p.height = p.width = 8;
    p.glimpse.patch = 2;
    p.glimpse.depth = depth;
    p.form = (ram_glimpse_form)form;
    p.core = (ram_core_type)core;
    p.bound = (ram_loc_bound)bound;
    p.glimpse_hidden = 4;
    p.loc_hidden = 3;
    p.glimpse_out = 5;
    p.core_hidden = 4;
    p.glimpses = 2;
    p.classes = 3;
    p.loc_range_pixels = 3;
    ram_model *m;
    check(ram_model_create(&p, &m), "model_create");
    return m;
}

static void save_checkpoint(const char *path, int core, ram_optimizer opt,
                            ram_baseline_type baseline, int steps, float average_decay) {
    ram_model *m = tiny(RAM_GLIMPSE_ADDITIVE, core, RAM_BOUND_TANH, 1, 1);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.baseline = baseline;
    ram_policy *pol;
    check(ram_policy_create(&pp, m, &pol), "policy_create");
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.optimizer = opt;
    tp.max_batch = 1;
    tp.average_decay = average_decay; /* > 0: the file has an AVRG chunk */
    ram_trainer *t;
    check(ram_trainer_create(m, pol, &tp, &t), "trainer_create");
    float img[64];
    for (int i = 0; i < 64; i++)
        img[i] = (float)(i % 9) / 8.0f;
    int label = 1;
    for (int k = 0; k < steps; k++) /* non-zero optimizer state */
        check(ram_trainer_train_batch(t, img, &label, 1, NULL), "train_batch");
    check(ram_trainer_save_checkpoint(t, path, "seed", 4), path);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
}

static void write_bytes(const char *path, const unsigned char *a, size_t na, const unsigned char *b,
                        size_t nb) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || fclose(f) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    const struct {
        const char *name;
        int form, core, bound, depth, channels;
    } seeds[] = {
        {"rnn-additive", RAM_GLIMPSE_ADDITIVE, RAM_CORE_RNN, RAM_BOUND_TANH, 1, 1},
        {"lstm-concat", RAM_GLIMPSE_CONCAT, RAM_CORE_LSTM, RAM_BOUND_HARDTANH, 2, 1},
        {"rnn-concat-rgb", RAM_GLIMPSE_CONCAT, RAM_CORE_RNN, RAM_BOUND_TANH, 1, 3},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        ram_model *m =
            tiny(seeds[i].form, seeds[i].core, seeds[i].bound, seeds[i].depth, seeds[i].channels);
        snprintf(path, sizeof path, "%s/model/%s.ram", argv[1], seeds[i].name);
        check(ram_model_save(m, path), path);
        ram_model_free(m);
    }
    { /* DRAM's parts: the DRAM chunk and the full tensor table */
        ram_model_params p;
        ram_model_params_init(&p);
        ram_model *m = tiny(RAM_GLIMPSE_MULTIPLICATIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, 1);
        check(ram_model_get_params(m, &p), "model_get_params");
        ram_model_free(m);
        p.core_layers = 2;
        p.context = 3;
        p.objects = 2;
        p.emit_every = 1;
        check(ram_model_create(&p, &m), "model_create (DRAM)");
        snprintf(path, sizeof path, "%s/model/dram.ram", argv[1]);
        check(ram_model_save(m, path), path);
        ram_model_free(m);
    }
    snprintf(path, sizeof path, "%s/model/checkpoint.ramckpt", argv[1]);
    save_checkpoint(path, RAM_CORE_LSTM, RAM_OPT_ADAM, RAM_BASELINE_LINEAR, 0, 0.0f);

    const struct {
        const char *name;
        int core;
        ram_optimizer opt;
        ram_baseline_type baseline;
        float average_decay;
    } ckpts[] = {
        {"lstm-adam-linear", RAM_CORE_LSTM, RAM_OPT_ADAM, RAM_BASELINE_LINEAR, 0.0f},
        {"rnn-sgd-scalar", RAM_CORE_RNN, RAM_OPT_SGD, RAM_BASELINE_SCALAR, 0.0f},
        {"rnn-adam-none", RAM_CORE_RNN, RAM_OPT_ADAM, RAM_BASELINE_NONE, 0.0f},
        {"rnn-adam-linear-average", RAM_CORE_RNN, RAM_OPT_ADAM, RAM_BASELINE_LINEAR, 0.5f},
    };
    for (size_t i = 0; i < sizeof ckpts / sizeof *ckpts; i++) {
        snprintf(path, sizeof path, "%s/checkpoint/%s.ramckpt", argv[1], ckpts[i].name);
        save_checkpoint(path, ckpts[i].core, ckpts[i].opt, ckpts[i].baseline, 2,
                        ckpts[i].average_decay);
    }

    /* IDX: 2 images of 3 x 4 pixels and their 2 labels (big-endian header). */
    const unsigned char images[16 + 24] = {
        0,  0,  8,   3,   0,   0,   0,   2,   0,   0,   0,   3,   0, 0, 0, 4, 0, 17, 34, 51,
        68, 85, 102, 119, 136, 153, 170, 187, 204, 221, 238, 255, 1, 2, 3, 4, 5, 6,  7,  8};
    const unsigned char labels[8 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 7, 3};
    const unsigned char cut[2] = {0, sizeof images};
    snprintf(path, sizeof path, "%s/idx/images", argv[1]);
    write_bytes(path, images, sizeof images, NULL, 0);
    snprintf(path, sizeof path, "%s/idx/labels", argv[1]);
    write_bytes(path, labels, sizeof labels, NULL, 0);
    unsigned char joined[2 + sizeof images];
    memcpy(joined, cut, 2);
    memcpy(joined + 2, images, sizeof images);
    snprintf(path, sizeof path, "%s/idx/mnist-split", argv[1]);
    write_bytes(path, joined, sizeof joined, labels, sizeof labels);

    /* IDX colour images (idx_map): 2 of 2 x 3 pixels of 3 channels. */
    unsigned char colour[20 + 36] = {0, 0, 8, 4, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3};
    for (int k = 0; k < 36; k++)
        colour[20 + k] = (unsigned char)(k * 7);
    snprintf(path, sizeof path, "%s/idx/colour", argv[1]);
    write_bytes(path, colour, sizeof colour, NULL, 0);
    return 0;
}
