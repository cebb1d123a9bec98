/* Writes the seed corpus of fuzz_model_file: small models covering each
 * architecture option, and one checkpoint (PLCY, OPTM, USER chunks).
 * Usage: make_seeds DIR.  Public API only. */
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
        snprintf(path, sizeof path, "%s/%s.ram", argv[1], seeds[i].name);
        check(ram_model_save(m, path), path);
        ram_model_free(m);
    }

    ram_model *m = tiny(RAM_GLIMPSE_ADDITIVE, RAM_CORE_LSTM, RAM_BOUND_TANH, 1, 1);
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_policy *pol;
    check(ram_policy_create(&pp, m, &pol), "policy_create");
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.max_batch = 1;
    ram_trainer *t;
    check(ram_trainer_create(m, pol, &tp, &t), "trainer_create");
    snprintf(path, sizeof path, "%s/checkpoint.ramckpt", argv[1]);
    check(ram_trainer_save_checkpoint(t, path, "seed", 4), path);
    ram_trainer_free(t);
    ram_policy_free(pol);
    ram_model_free(m);
    return 0;
}
