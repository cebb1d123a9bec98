/* ram-train-mpi: ram-train's training, data-parallel on `mpirun -np N`.
 *
 * Every rank trains on its own --batch images of each global batch of N x
 * --batch (the epoch's shuffled order is the same on all ranks; the
 * remainder that does not fill a global batch is left out); the gradients
 * are averaged with one MPI_Allreduce of one flat buffer per step, through
 * the trainer's gradient hook, so that the step equals a single process's
 * step on the N x --batch images up to float rounding.  Rank 0 writes an
 * initial checkpoint (or reads --resume) and broadcasts its bytes, so all
 * ranks start from the same parameters and optimizer state, and --resume
 * works with any number of ranks.  Each rank samples locations from its own
 * RNG stream.  Rank 0 evaluates, prints and writes the model and
 * checkpoints.  A failing rank aborts the job. */
#include "blas.h"
#include "files.h"
#include "train.h"

#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mpi_rank = 0, mpi_size = 1;
static const char *const prog = "ram-train-mpi";

/* The gradient hook: the mean of all ranks' gradients, in place. */
static ram_status allreduce_mean(float *grad, size_t count, void *user) {
    (void)user;
    if (MPI_Allreduce(MPI_IN_PLACE, grad, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return RAM_ERR_IO;
    const float inv = 1.0f / (float)mpi_size;
    for (size_t i = 0; i < count; i++)
        grad[i] *= inv;
    return RAM_OK;
}

static void allreduce_sum(double *v, int n, void *user) {
    (void)user;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* Rank 0's checkpoint bytes (--resume, or one it writes now); len -1 when
 * it has none, which every rank learns from the broadcast. */
static unsigned char *rank0_checkpoint(ram_trainer *t, const train_options *o,
                                       const train_state *st, long *len) {
    const char *path = o->resume ? o->resume : o->checkpoint;
    ram_status s = RAM_OK;
    size_t n = 0;
    unsigned char *bytes = NULL;
    if (!o->resume) s = ram_trainer_save_checkpoint(t, path, st, sizeof *st);
    if (!s) bytes = file_read_all(path, &n);
    if (s || !bytes) {
        fprintf(stderr, "%s: cannot %s %s: %s\n", prog, o->resume ? "read" : "write", path,
                s ? ram_last_error() : strerror(errno));
        *len = -1;
        return NULL;
    }
    *len = (long)n;
    return bytes;
}

/* Every rank loads rank 0's checkpoint: the same parameters, optimizer state
 * and step everywhere. */
static int share_start(ram_trainer *t, ram_policy *pol, const train_options *o, train_state *st,
                       void *user) {
    (void)user;
    long len = 0;
    unsigned char *bytes = mpi_rank == 0 ? rank0_checkpoint(t, o, st, &len) : NULL;
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (len < 0) return -1;
    if (mpi_rank != 0 && !(bytes = malloc((size_t)len))) {
        fprintf(stderr, "%s: rank %d: out of memory\n", prog, mpi_rank);
        return -1;
    }
    MPI_Bcast(bytes, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    size_t ulen = 0;
    const train_data want = st->data;
    ram_status s = ram_trainer_load_checkpoint_memory(t, bytes, (size_t)len, st, sizeof *st, &ulen);
    free(bytes);
    if (s) {
        fprintf(stderr, "%s: rank %d: %s\n", prog, mpi_rank, ram_last_error());
        return -1;
    }
    if (train_check_resumed(prog, o->resume ? o->resume : o->checkpoint, ulen, st, &want))
        return -1;
    /* Rank 0 keeps the checkpoint's sampling stream; the others draw their
     * own, fresh for every (re)start. */
    if (mpi_rank != 0) ram_policy_seed(pol, o->pp.seed + (uint64_t)st->epoch * 1000003u);
    return 0;
}

int main(int argc, char **argv) {
    /* Before MPI_Init: a re-execution for the BLAS kernels (tool_blas_init)
     * after it would start a second MPI process in the rank's place, which
     * the launcher refuses ("getting local rank failed"). */
    tool_blas_init(prog, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    train_options o;
    int rc = train_parse(&train_tool_mpi, argc, argv, &o);
    if (!rc && o.time_budget > 0) {
        if (mpi_rank == 0) fprintf(stderr, "%s: --time-budget is not supported with MPI\n", prog);
        rc = TOOL_USAGE;
    }
    if (rc) {
        MPI_Finalize();
        return opts_exit(rc);
    }
    if (mpi_rank != 0) { /* rank 0 speaks and writes for all */
        o.quiet = 1;
        o.log = NULL;
    }
    o.pp.seed += (uint64_t)mpi_rank * 0x632be59bd9b4e019ULL;
    const train_hooks hooks = {.rank = mpi_rank,
                               .ranks = mpi_size,
                               .average = allreduce_mean,
                               .start = share_start,
                               .sum = allreduce_sum};
    rc = train_run(&train_tool_mpi, &o, &hooks);
    /* One rank failing must not leave the others waiting in a collective. */
    if (rc) MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
    return rc;
}
