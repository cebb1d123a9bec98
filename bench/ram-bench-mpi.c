/* ram-bench-mpi: the communication side of data-parallel training, for
 * docs/scaling.md.  Under `mpirun -np N`, times MPI_Allreduce(MPI_IN_PLACE,
 * SUM) of float buffers: the MNIST model's gradient (209,164 + 257 floats,
 * what ram-train-mpi reduces every step) and a sweep of sizes.  Prints the
 * median (min-max) over --reps repetitions after a warm-up, per size, on
 * rank 0.  A benchmark prints; it never asserts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, reps = 200;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
    if (reps < 3) reps = 3;
    const long sizes[] = {209421, 1024, 16384, 65536, 262144, 1048576, 4194304};
    const int ns = (int)(sizeof sizes / sizeof *sizes);
    float *buf = malloc(sizeof(float) * sizes[ns - 1]);
    double *t = malloc(sizeof(double) * reps);
    if (!buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("MPI_Allreduce(SUM, float) on %d ranks, median (min-max) of %d after a warm-up\n"
               "%12s %10s %24s %12s\n",
               size, reps, "floats", "MB", "microseconds", "GB/s (algo)");
    for (int s = 0; s < ns; s++) {
        const int n = (int)sizes[s];
        for (int i = 0; i < n; i++)
            buf[i] = 1e-3f * (float)(i % 97);
        for (int w = 0; w < 5; w++)
            MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t[r] = MPI_Wtime() - t0;
        }
        /* The slowest rank's time is the step's. */
        MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        qsort(t, (size_t)reps, sizeof *t, cmp);
        if (rank == 0)
            printf("%12d %10.3f %10.1f (%6.1f-%6.1f) %12.2f%s\n", n, n * 4e-6, t[reps / 2] * 1e6,
                   t[0] * 1e6, t[reps - 1] * 1e6, n * 4e-9 / t[reps / 2],
                   s == 0 ? "   <- MNIST gradient" : "");
    }
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
