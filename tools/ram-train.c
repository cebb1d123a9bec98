/* ram-train: train a Recurrent Attention Model on MNIST (IDX files) or on
 * users' images (tools/common/folder.h); the loop and the options are
 * tools/common/train.c's, shared with ram-train-mpi. */
#include "blas.h"
#include "train.h"

int main(int argc, char **argv) {
    train_options o;
    int parsed = train_parse(&train_tool, argc, argv, &o);
    if (parsed) return opts_exit(parsed);
    tool_blas_init(train_tool.name, argv); /* one BLAS thread, kernels fit for the CPU */
    return train_run(&train_tool, &o, NULL);
}
