#define _GNU_SOURCE
#include "blas.h"

#include <ram/ram.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *tool_name = "ram";

static void log_line(ram_log_level level, const char *message, void *user) {
    (void)user;
    fprintf(stderr, "%s: %s: %s\n", tool_name, level == RAM_LOG_WARN ? "warning" : "note", message);
}

static void log_nothing(ram_log_level level, const char *message, void *user) {
    (void)level, (void)message, (void)user;
}

void tool_blas_init(const char *tool, char **argv) {
    tool_name = tool;
    ram_set_blas_threads(1);
    /* The check logs its warning once; hold it back until we know whether a
     * re-execution will fix the cause. */
    ram_set_log_callback(log_nothing, NULL);
    int slow = 0;
    ram_blas_info(&slow);
    ram_set_log_callback(log_line, NULL);
    if (!slow) return;
    const char *keep = getenv("RAM_KEEP_BLAS");
    if ((keep && *keep == '1') || getenv("RAM_BLAS_REEXECUTED")) {
        fprintf(stderr, "%s: warning: slow BLAS kernels: %s\n", tool, ram_blas_info(NULL));
        return;
    }
    const char *core = ram_blas_coretype();
    if (!core) return; /* slow kernels are only ever reported where a core fits */
    /* Whose choice the old kernels were: OpenBLAS's, or a preset's. */
    const char *preset = getenv("OPENBLAS_CORETYPE");
    char who[160] = "OpenBLAS chose kernels older than this CPU";
    if (preset && *preset)
        snprintf(who, sizeof who,
                 "OPENBLAS_CORETYPE=%.64s in the environment gives kernels older than this CPU",
                 preset);
    fprintf(stderr, "%s: %s (%s); running again with OPENBLAS_CORETYPE=%s%s\n", tool, who,
            ram_blas_info(NULL), core, preset && *preset ? " (RAM_KEEP_BLAS=1 keeps yours)" : "");
    setenv("OPENBLAS_CORETYPE", core, 1);
    setenv("RAM_BLAS_REEXECUTED", "1", 1);
    /* The binary's own path, not /proc/self/exe: the kernel names the
     * process after the file executed, and ps, pgrep and top should still
     * see the tool's name, not "exe". */
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0) {
        self[len] = '\0';
        execv(self, argv);
    }
    execv("/proc/self/exe", argv);
    /* Still here: exec failed; carry on with the slow kernels. */
    fprintf(stderr, "%s: warning: could not re-execute (%s); continuing with slow BLAS kernels\n",
            tool, ram_blas_info(NULL));
}
