/* Start-up for the tools: make sure OpenBLAS runs kernels fit for the CPU. */
#ifndef RAM_TOOLS_BLAS_H
#define RAM_TOOLS_BLAS_H

/* Call first thing in main().  Sets one BLAS thread (libram's threads do the
 * splitting) and routes libram's warnings to stderr prefixed by the tool's
 * name.  If OpenBLAS runs kernels older than the CPU (ram_blas_info()), the
 * tool re-executes itself once with OPENBLAS_CORETYPE set to the right core,
 * because OpenBLAS reads it only at load time; RAM_KEEP_BLAS=1 disables that. */
void tool_blas_init(const char *tool, char **argv);

#endif
