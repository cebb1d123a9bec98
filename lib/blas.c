/* What libram asks of the BLAS beyond CBLAS: its thread count, a description
 * of it, a one-time check that it runs kernels fit for the CPU, and one
 * product per thread that maps OpenBLAS's buffer (ram_blas_prepare_thread).
 *
 * Why the check: a DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels at load
 * time from the CPUs it recognises.  Version 0.3.21 does not recognise some
 * newer CPUs and falls back to its SSE3 "Prescott" kernels, 5-8x slower than
 * the AVX2/AVX-512 ones, with no message; and a machine may preset
 * OPENBLAS_CORETYPE=Haswell, whose AVX2 kernels run sgemm at half the speed
 * of the AVX-512 ones on a CPU that has them (106 against 197 GFLOP/s at
 * 2048^3 on one Zen 5 core; training 13,000 against 21,800 samples/s).
 * libram cannot switch the kernels after load (OPENBLAS_CORETYPE is read
 * once, when OpenBLAS starts), so it says so through the log callback, once,
 * with the remedy. */
/* MAP_ANONYMOUS (glibc hides it under strict C11; BSD and macOS show it) */
#define _DEFAULT_SOURCE
#include "internal.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

/* OpenBLAS's own entry points, looked up weakly so that any CBLAS links. */
extern void openblas_set_num_threads(int) __attribute__((weak));
extern char *openblas_get_config(void) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));
extern int openblas_get_parallel(void) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

void ram_set_blas_threads(int n) {
    if (openblas_set_num_threads && n > 0) openblas_set_num_threads(n);
}

/* OpenBLAS core names whose kernels predate AVX2 (x86-64 only). */
static const char *const pre_avx2_cores[] = {
    "prescott",    "core2",     "penryn",     "dunnington",  "nehalem",      "atom",      "katmai",
    "coppermine",  "northwood", "banias",     "opteron",     "opteron_sse3", "barcelona", "bobcat",
    "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"};

/* OpenBLAS core names whose kernels stop at AVX2. */
static const char *const avx2_cores[] = {"haswell", "zen", "skylake"};

int ram_blas_core_is_slow(const char *core, int cpu_avx) {
    if (!core || cpu_avx < 1) return 0;
    for (size_t i = 0; i < sizeof pre_avx2_cores / sizeof *pre_avx2_cores; i++)
        if (!strcasecmp(core, pre_avx2_cores[i])) return 1;
    for (size_t i = 0; cpu_avx >= 2 && i < sizeof avx2_cores / sizeof *avx2_cores; i++)
        if (!strcasecmp(core, avx2_cores[i])) return 1;
    return 0;
}

static char blas_info[256];
static int blas_slow;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_inspect(void) {
    const char *core = openblas_get_corename ? openblas_get_corename() : NULL;
    const char *threading = "";
    if (openblas_get_parallel) {
        int mode = openblas_get_parallel();
        threading = mode == 2 ? ", OpenMP threads" : mode == 1 ? ", pthreads" : ", sequential";
    }
    if (openblas_get_config)
        snprintf(blas_info, sizeof blas_info, "%s (kernels: %s%s)", openblas_get_config(),
                 core ? core : "?", threading);
    else
        snprintf(blas_info, sizeof blas_info, "a CBLAS other than OpenBLAS");
    blas_slow = ram_blas_core_is_slow(core, ram_cpu_x86_avx());
    if (blas_slow)
        ram_log(RAM_LOG_WARN,
                "OpenBLAS runs its %s kernels on a CPU with %s: libram's matrix products will "
                "%s.  Start the program with OPENBLAS_CORETYPE=%s (docs/performance.md).",
                core, ram_cpu_x86_avx() == 2 ? "AVX-512" : "AVX2",
                ram_blas_core_is_slow(core, 1) ? "be several times slower"
                                               : "run at about half their speed",
                ram_blas_coretype());
}

/* Why a warning: OpenBLAS starts a thread per core by default, and called
 * from each of libram's worker threads its threads and the workers compete
 * for the same cores.  The paper's MNIST network, trained at batch 128 by
 * two workers on two Zen 5 cores, ran 6,389 samples/s so against 35,914
 * with OpenBLAS at one thread.  libram does not change the process-wide
 * setting itself (the caller's own BLAS work may want its threads). */
void ram_blas_check_threads(int workers) {
    static atomic_int warned;
    if (workers < 2 || !openblas_get_num_threads) return;
    const int own = openblas_get_num_threads();
    if (own < 2 || atomic_exchange(&warned, 1)) return;
    ram_log(RAM_LOG_WARN,
            "OpenBLAS runs %d threads of its own inside each of libram's %d worker threads: "
            "its matrix products will be several times slower.  Call ram_set_blas_threads(1) "
            "at start-up (docs/performance.md).",
            own, workers);
}

void ram_blas_check_once(void) {
    pthread_once(&blas_once, blas_inspect);
}

const char *ram_blas_info(int *slow) {
    ram_blas_check_once();
    if (slow) *slow = blas_slow;
    return blas_info;
}

/* The core types of OpenBLAS's AVX-512 and AVX2 kernels: the ones the slow
 * check knows fit a processor it has found running older ones. */
const char *ram_blas_coretype(void) {
    const int avx = ram_cpu_x86_avx();
    return avx == 2 ? "SKYLAKEX" : avx == 1 ? "HASWELL" : NULL;
}

/* OpenBLAS packs each sgemm's operands into a buffer it maps once per
 * concurrent caller and never touches beyond what it packs, and its Zen
 * sgemm kernel prefetches (prefetcht1) ahead of the packed panels.  A
 * prefetch into a page that was never touched costs a page walk each time
 * on a Zen 1 (no mapping to cache), and with libram's panels (256 x 256 and
 * the like) the prefetches keep landing there: a single-threaded 256^3
 * sgemm ran at 9.8 GFLOP/s in a fresh process and at 35 once a larger
 * product had been packed into the same buffer, and ram-train's epochs took
 * 2.2x as long on one thread (docs/performance.md).  So each thread packs
 * one 256 x 2048 x 512 product before its first sgemm (about 0.5 GFLOP,
 * 15 ms on one core; the shape that made every product libram runs fast),
 * which maps the buffer's pages for good.
 *
 * OpenBLAS keeps one buffer per concurrent caller, not per thread: a new
 * thread reuses a mapped buffer.  Threads that start together (a trainer's
 * or a state's workers) pack their first products together, so each packs
 * into a buffer of its own.  Programs that make thread after thread (one
 * per request, or the OOM test's hundreds of trainers) would pay 15 ms per
 * thread for buffers already mapped, so the process stops after twice as
 * many warm-ups as it has processors.  Its operands come from mmap, not
 * malloc: one region of zeros read as both A and B, then C; unmapped after.  If
 * the mapping fails, the hint is not given: slower, never wrong, and no
 * allocation of libram's can fail for it. */
void ram_blas_prepare_thread(void) {
    static _Thread_local int prepared;
    static atomic_int warmups;
    if (prepared) return;
    prepared = 1;
    if (!openblas_get_config) return; /* another BLAS: not known to need it */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1 || cpus > 64) cpus = cpus < 1 ? 1 : 64;
    if (atomic_fetch_add(&warmups, 1) >= 2 * cpus) return;
    enum { M = 256, N = 2048, K = 512 };
    const size_t ab = sizeof(float) * N * K, bytes = ab + sizeof(float) * M * N;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    const float *zeros = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, zeros, K, zeros, K, 0.0f,
                (float *)((char *)p + ab), N);
    munmap(p, bytes);
}
