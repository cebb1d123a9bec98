/* What this processor can do, asked once per process, and the pause of a
 * spin loop: the library's only processor-specific code outside the kernel
 * files (kernels_x86.c, kernels_neon.c), each with a portable answer on
 * other processors. */
#include "internal.h"

#include <stdatomic.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

/* F16C, from CPUID leaf 1 (clang 14's __builtin_cpu_supports does not know
 * it), asked once: CPUID traps to the hypervisor in a VM, microseconds.  The
 * race on the first calls is benign: every thread stores the same value. */
static bool has_f16c(void) {
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a, b, c, d;
        k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

/* The float and the half kernels need the same features (every AVX2
 * processor has F16C), so a float layer and a half layer always take the
 * same kind of kernel.  Asked once and kept: every layer of every call asks
 * (the same benign race as has_f16c()'s). */
bool ram_cpu_x86_kernels(void) {
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        k = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("popcnt") && has_f16c()
                ? 2
                : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

/* __builtin_cpu_supports() reports AVX-512 only when the system saves the
 * registers (XCR0), so a kernel without that support never sees them. */
bool ram_cpu_x86_avx512(void) {
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes (the same benign race) */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        k = ram_cpu_x86_kernels() && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
                ? 2
                : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

/* AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5), for the training
 * products of gemm.c; asked once (the same benign race). */
bool ram_cpu_x86_avx512_bf16(void) {
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a = 0, b, c, d;
        k = ram_cpu_x86_avx512() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5) & 1 ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

int ram_cpu_x86_avx(void) {
    static _Atomic int known; /* 0: not asked yet; else the answer + 1 (the same benign race) */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        __builtin_cpu_init();
        k = 1 + (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ? 0
                 : __builtin_cpu_supports("avx512f")                               ? 2
                                                                                   : 1);
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k - 1;
}

void ram_cpu_relax(void) {
    _mm_pause();
}
#else
bool ram_cpu_x86_kernels(void) {
    return false;
}

bool ram_cpu_x86_avx512(void) {
    return false;
}

bool ram_cpu_x86_avx512_bf16(void) {
    return false;
}

int ram_cpu_x86_avx(void) {
    return 0;
}

void ram_cpu_relax(void) {
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    __asm__ __volatile__("yield");
#endif
}
#endif
