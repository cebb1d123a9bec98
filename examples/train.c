/* train: teach a Recurrent Attention Model a tiny made-up task with
 * ram_trainer, and watch its validation error fall.
 *
 * The task: 16 x 16 images, dark but for a little noise and one bright 4 x 4
 * block in one of the four quadrants; the class is the quadrant.  A glimpse
 * of 4 x 4 pixels at two scales sees enough of the image to find the block.
 * usage: train [EPOCHS]; exits 1 if the error did not fall. */
#include <ram/ram.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { SIDE = 16, PIXELS = SIDE * SIDE, CLASSES = 4, TRAIN = 2048, VAL = 512, BATCH = 32 };

/* A small deterministic generator, so the example prints the same numbers
 * everywhere (libram's own RNG is internal to it). */
static uint32_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void make_images(float *images, int *labels, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        float *img = images + (size_t)i * PIXELS;
        const int c = (int)(next(&seed) % CLASSES);
        const int y0 = (c / 2) * 8 + (int)(next(&seed) % 5),
                  x0 = (c % 2) * 8 + (int)(next(&seed) % 5);
        for (int p = 0; p < PIXELS; p++)
            img[p] = (float)(next(&seed) % 64) / 255.0f; /* noise */
        for (int y = y0; y < y0 + 4; y++)
            for (int x = x0; x < x0 + 4; x++)
                img[y * SIDE + x] = 1.0f;
        labels[i] = c;
    }
}

static int check(ram_status s, const char *what) {
    if (s != RAM_OK) fprintf(stderr, "%s: %s (%s)\n", what, ram_last_error(), ram_status_string(s));
    return s != RAM_OK;
}

int main(int argc, char **argv) {
    const int epochs = argc > 1 ? atoi(argv[1]) : 12;
    static float train_x[TRAIN * PIXELS], val_x[VAL * PIXELS], batch_x[BATCH * PIXELS];
    static int train_y[TRAIN], val_y[VAL], batch_y[BATCH], perm[TRAIN];
    make_images(train_x, train_y, TRAIN, 1);
    make_images(val_x, val_y, VAL, 2);

    /* A small model: 16 x 16 grey images, 3 glimpses of 4 x 4 at 2 scales. */
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = SIDE;
    mp.classes = CLASSES;
    mp.glimpses = 3;
    mp.glimpse.patch = 4;
    mp.glimpse.depth = 2;
    mp.glimpse_hidden = mp.loc_hidden = 32;
    mp.glimpse_out = mp.core_hidden = 64;
    mp.loc_range_pixels = 0; /* a location of +-1 is the image's edge */
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    ram_trainer_params tp;
    ram_trainer_params_init(&tp); /* Adam at 1e-3 */
    tp.lr = 3e-3f;
    tp.max_batch = BATCH;

    ram_model *model = NULL;
    ram_policy *policy = NULL;
    ram_trainer *trainer = NULL;
    int rc = 1;
    if (check(ram_model_create(&mp, &model), "ram_model_create") ||
        check(ram_policy_create(&pp, model, &policy), "ram_policy_create") ||
        check(ram_trainer_create(model, policy, &tp, &trainer), "ram_trainer_create"))
        goto done;
    double error, before;
    if (check(ram_trainer_evaluate(trainer, val_x, val_y, VAL, &before), "evaluate")) goto done;
    printf("before training: validation error %5.1f%%\n", 100 * before);
    for (int epoch = 1; epoch <= epochs; epoch++) {
        /* Each epoch visits the images in a new order, from the trainer's RNG. */
        if (check(ram_trainer_shuffle(trainer, perm, TRAIN), "shuffle")) goto done;
        ram_train_stats stats;
        for (int b = 0; b + BATCH <= TRAIN; b += BATCH) {
            for (int i = 0; i < BATCH; i++) {
                for (int p = 0; p < PIXELS; p++)
                    batch_x[i * PIXELS + p] = train_x[(size_t)perm[b + i] * PIXELS + p];
                batch_y[i] = train_y[perm[b + i]];
            }
            if (check(ram_trainer_train_batch(trainer, batch_x, batch_y, BATCH, &stats), "train"))
                goto done;
        }
        if (check(ram_trainer_evaluate(trainer, val_x, val_y, VAL, &error), "evaluate")) goto done;
        printf("epoch %d: validation error %5.1f%%  (nll %.3f, reward %.2f)\n", epoch, 100 * error,
               stats.nll, stats.reward);
    }
    rc = error < before / 2 ? 0 : 1; /* chance is 75 %: it must learn */
done:
    ram_trainer_free(trainer);
    ram_policy_free(policy);
    ram_model_free(model);
    return rc;
}
