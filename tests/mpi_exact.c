/* Data-parallel exactness, on real MPI (run by tests/mpi.sh under
 * `mpirun -np N`): N ranks with B images each per step, averaging their
 * gradients with MPI_Allreduce in the trainer's gradient hook, end with the
 * model that one process training on the same N x B images per step ends
 * with, up to float rounding.
 *
 * Location noise comes from a separate RNG stream on every rank (as in
 * ram-train-mpi), which no single process can reproduce, so it is taken out
 * here: the smallest std (1e-4) and no REINFORCE term (reward scale 0).
 * What is checked is the rest of the data-parallel step: the gradient
 * averaging, the identical optimizer steps on every rank, and the broadcast
 * start.  SGD, so that rounding differences are not amplified by Adam's
 * division by the second moment.
 *
 * Passes: every rank's model gives bit-identical probabilities on a fixed
 * set of images; rank 0's differ from the single process's by < 1e-5 and
 * from the untrained model's by > 1e-3 (it did train). */
#include <ram/ram.h>

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIDE = 16, IMG = SIDE * SIDE, B = 8, STEPS = 12, K = 4, NEVAL = 32 };

static int rank, size;

static ram_status allreduce_mean(float *grad, size_t count, void *user) {
    (void)user;
    if (MPI_Allreduce(MPI_IN_PLACE, grad, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))
        return RAM_ERR_IO;
    for (size_t i = 0; i < count; i++)
        grad[i] /= (float)size;
    return RAM_OK;
}

static void die(const char *what) {
    fprintf(stderr, "mpi_exact: rank %d: FAIL: %s: %s\n", rank, what, ram_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        if ((call) != RAM_OK) die(#call);                                                          \
    } while (0)

/* Sample i of the data set: the label's quarter of the image is bright. */
static void sample(long i, float *img, int *label) {
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
    *label = (int)(i % K);
    for (int p = 0; p < IMG; p++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        img[p] = (float)(x >> 40) / 16777216.0f * 0.5f + (p % SIDE / 4 == *label ? 0.5f : 0.0f);
    }
}

typedef struct run {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
} run;

static void make_run(run *r, int batch, uint64_t policy_seed) {
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = SIDE;
    mp.glimpse.patch = 4;
    mp.glimpse.depth = 2;
    mp.glimpse_hidden = mp.loc_hidden = 16;
    mp.glimpse_out = mp.core_hidden = 32;
    mp.glimpses = 3;
    mp.classes = K;
    mp.core = RAM_CORE_LSTM;
    mp.seed = 42;
    TRY(ram_model_create(&mp, &r->m));
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.std = 1e-4f;
    pp.reward_scale = 0.0f;
    pp.seed = policy_seed;
    TRY(ram_policy_create(&pp, r->m, &r->pol));
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.optimizer = RAM_OPT_SGD;
    tp.lr = 0.05f;
    tp.max_batch = batch;
    tp.threads = 1;
    TRY(ram_trainer_create(r->m, r->pol, &tp, &r->t));
}

static void free_run(run *r) {
    ram_trainer_free(r->t);
    ram_policy_free(r->pol);
    ram_model_free(r->m);
}

static void probs_of(const ram_model *m, const float *x, float *probs) {
    ram_state *st;
    TRY(ram_state_create(m, NEVAL, &st));
    TRY(ram_model_classify(m, st, x, NEVAL, NULL, probs, NULL));
    ram_state_free(st);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ram_set_blas_threads(1);
    const int global = B * size;
    float *batch = malloc(sizeof(float) * IMG * global),
          *eval = malloc(sizeof(float) * IMG * NEVAL);
    float *mine = malloc(sizeof(float) * NEVAL * K),
          *all = malloc(sizeof(float) * NEVAL * K * size);
    float *ref = malloc(sizeof(float) * NEVAL * K), *fresh = malloc(sizeof(float) * NEVAL * K);
    int *labels = malloc(sizeof(int) * global), y;
    for (int i = 0; i < NEVAL; i++)
        sample(1000000 + i, eval + (size_t)i * IMG, &y);

    /* The data-parallel run: rank r takes images [r B, (r + 1) B) of each
     * global batch. */
    run d;
    make_run(&d, B, 1000 + (uint64_t)rank); /* a sampling stream per rank */
    TRY(ram_trainer_set_gradient_hook(d.t, allreduce_mean, NULL));
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < global; i++)
            sample((long)s * global + i, batch + (size_t)i * IMG, &labels[i]);
        TRY(ram_trainer_train_batch(d.t, batch + (size_t)rank * B * IMG, labels + rank * B, B,
                                    NULL));
    }
    probs_of(d.m, eval, mine);
    MPI_Gather(mine, NEVAL * K, MPI_FLOAT, all, NEVAL * K, MPI_FLOAT, 0, MPI_COMM_WORLD);

    int ok = 1;
    if (rank == 0) {
        for (int r = 1; r < size; r++)
            if (memcmp(all, all + (size_t)r * NEVAL * K, sizeof(float) * NEVAL * K)) {
                fprintf(stderr, "mpi_exact: FAIL: rank %d's model differs from rank 0's\n", r);
                ok = 0;
            }
        /* The single process on the same N x B images per step. */
        run one;
        make_run(&one, global, 1000);
        probs_of(one.m, eval, fresh);
        for (int s = 0; s < STEPS; s++) {
            for (int i = 0; i < global; i++)
                sample((long)s * global + i, batch + (size_t)i * IMG, &labels[i]);
            TRY(ram_trainer_train_batch(one.t, batch, labels, global, NULL));
        }
        probs_of(one.m, eval, ref);
        double diff = 0, moved = 0;
        for (int i = 0; i < NEVAL * K; i++) {
            diff = fmax(diff, fabs(mine[i] - ref[i]));
            moved = fmax(moved, fabs(ref[i] - fresh[i]));
        }
        printf("mpi_exact: %d ranks x batch %d, %d steps: ranks identical: %s; max |p - p_single| "
               "= %.3g (tolerance 1e-5); training moved p by %.3g\n",
               size, B, STEPS, ok ? "yes" : "NO", diff, moved);
        if (!(diff < 1e-5) || !(moved > 1e-3)) ok = 0;
        free_run(&one);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free_run(&d);
    free(batch);
    free(eval);
    free(mine);
    free(all);
    free(ref);
    free(fresh);
    free(labels);
    MPI_Finalize();
    return ok ? 0 : 1;
}
