#!/usr/bin/env bash
# Cross-build libram for another Debian architecture and, where qemu-user
# can run that architecture's programs, run the unit-test programs under it:
# all of them, or only those that start no thread when this host's qemu
# cannot start one (docs/packaging.md, "Architectures").  Not part of
# scripts/test.sh: it needs the target's cross compiler and libraries, and
# an emulated run takes minutes.
#
# Usage: scripts/cross-check.sh ARCH [--compile-only | --only "TEST..."]
#   ARCH: arm64, armhf, i386, ppc64el, riscv64 or s390x (Debian's names)
#   --compile-only   build everything, run nothing
#   --only "T..."    run only these test programs (e.g. "check_byteorder
#                    check_byteorder_mutant" on a big-endian target)
#
# Needs (Debian 12, as root; ARCH's foreign architecture added first with
# dpkg --add-architecture ARCH and apt-get update):
#   apt-get install gcc-TRIPLET qemu-user libopenblas-dev:ARCH check:ARCH
# (TRIPLET below; libpng-dev:ARCH and libjpeg62-turbo-dev:ARCH give the tools
# their image readers).  The build goes to build-cross-ARCH/.
#
# Environment: RAM_CROSS_TIMEOUT, seconds per emulated test program (900);
# RAM_LOCK, a lock file that each build and test command is run under
# (flock), for machines whose builds must take turns.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

arch="${1:-}"
run=1 only=""
case "${2:-}" in
--compile-only) run=0 ;;
--only) only="${3:?--only wants a list of test programs}" ;;
"") ;;
*)
    echo "cross-check: unknown option ${2}" >&2
    exit 2
    ;;
esac
case "$arch" in
arm64) triplet=aarch64-linux-gnu qemu=qemu-aarch64 cpu=aarch64 ;;
armhf) triplet=arm-linux-gnueabihf qemu=qemu-arm cpu=arm ;;
i386) triplet=i686-linux-gnu qemu=qemu-i386 cpu=i686 ;;
ppc64el) triplet=powerpc64le-linux-gnu qemu=qemu-ppc64le cpu=ppc64le ;;
riscv64) triplet=riscv64-linux-gnu qemu=qemu-riscv64 cpu=riscv64 ;;
s390x) triplet=s390x-linux-gnu qemu=qemu-s390x cpu=s390x ;;
*)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
# Debian's i386 libraries live under i386-linux-gnu, its compiler is i686-.
libdir_triplet="$triplet"
[ "$arch" = i386 ] && libdir_triplet=i386-linux-gnu

locked() {
    if [ -n "${RAM_LOCK:-}" ]; then flock "$RAM_LOCK" "$@"; else "$@"; fi
}

cc="$triplet-gcc"
command -v "$cc" >/dev/null || {
    echo "cross-check: no $cc; apt-get install gcc-$triplet" >&2
    exit 2
}
pc="/usr/lib/$libdir_triplet/pkgconfig:/usr/share/pkgconfig"
for need in openblas check; do
    PKG_CONFIG_LIBDIR="$pc" pkg-config --exists "$need" || {
        echo "cross-check: no $need for $arch; apt-get install libopenblas-dev:$arch check:$arch" >&2
        exit 2
    }
done

# The tools need the target's zlib; where its -dev package cannot be had
# (a multiarch library must be the very version of the host's, and a
# mirror may lack the target's security updates) the library and the unit
# tests are built without them (and without ram-bench, which uses them).
tools=ON
if ! PKG_CONFIG_LIBDIR="$pc" pkg-config --exists zlib; then
    tools=OFF
    echo "cross-check: no zlib for $arch (zlib1g-dev:$arch): building without the tools"
fi

build="build-cross-$arch"
echo "==== $arch: configure and build in $build/ with $cc ($($cc -dumpfullversion))"
# MPI is switched off: find_package would find the build machine's own.
locked env PKG_CONFIG_LIBDIR="$pc" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$cpu" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_LIBRARY_ARCHITECTURE="$libdir_triplet" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
    -DCMAKE_CROSSCOMPILING_EMULATOR="$qemu" -DRAM_BUILD_EXAMPLES="$tools" >/dev/null
locked cmake --build "$build" -j2
want=("$build"/libram.so.0)
[ "$tools" = ON ] && want+=("$build"/ram-bench "$build"/ram-eval)
for prog in "${want[@]}"; do
    [ -e "$prog" ] || { echo "cross-check: $prog was not built" >&2; exit 1; }
done
echo "built: $(file -bL "$build/libram.so.0" | cut -d, -f1-2)"

if [ "$run" = 0 ]; then
    echo "==== $arch: compile only, nothing run"
    exit 0
fi
command -v "$qemu" >/dev/null || {
    echo "cross-check: no $qemu (apt-get install qemu-user): built, nothing run" >&2
    exit 0
}

# qemu-user as Debian 12 ships it cannot run every program: on some hosts
# qemu-aarch64 hangs in pthread_create and qemu-s390x stops every program
# with "stack smashing detected".  So first a program that does nothing,
# then one thread, each with a short timeout, to say what can run.
probe="$build/cross-probe"
mkdir -p "$probe"
printf '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n' >"$probe/hello.c"
printf '%s\n' '#include <pthread.h>' 'static void *f(void *p) { return p; }' \
    'int main(void) { pthread_t t; if (pthread_create(&t, 0, f, 0)) return 1;' \
    '  return pthread_join(t, 0); }' >"$probe/thread.c"
"$cc" -O2 "$probe/hello.c" -o "$probe/hello"
"$cc" -O2 -pthread "$probe/thread.c" -o "$probe/thread"
if ! timeout 30 "$qemu" "$probe/hello" >/dev/null 2>&1; then
    echo "==== $arch: $qemu cannot run a program that only prints (this host's qemu-user):"
    timeout 30 "$qemu" "$probe/hello" 2>&1 | head -3 || true
    echo "built, nothing run"
    exit 0
fi
threads=1
timeout 30 "$qemu" "$probe/thread" >/dev/null 2>&1 || threads=0
[ "$threads" = 1 ] || echo "note: $qemu cannot start a thread here: only single-threaded tests run"

# The unit tests that start no thread of libram's (the threaded states, the
# trainer's workers and the thread tests do); OpenBLAS is held to one thread.
# check_byteorder_mutant must fail (its file writer is the wrong byte order's):
# it passes here when both its checks fail, as under ctest.
single=(check_error check_rng check_glimpse check_layers check_kernels check_serialize
    check_byteorder check_byteorder_mutant check_reinforce check_badinput check_fit
    check_soft_glimpse)
threaded=(check_api check_model check_precision check_team check_threads check_trainer check_oom
    check_datasets check_soft_model check_dram check_bytes check_stop check_stop_unit)
# A new test program must be put in one of the lists, not be skipped unseen.
for exe in "$build"/tests/check_*; do
    t="$(basename "$exe")"
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    case "$t" in *.*) continue ;; esac # a test's scratch file, not a program
    case " ${single[*]} ${threaded[*]} " in
    *" $t "*) ;;
    *)
        echo "cross-check: $t is in neither list of scripts/cross-check.sh (single, threaded)" >&2
        exit 1
        ;;
    esac
done
tests=("${single[@]}")
[ "$threads" = 1 ] && tests+=("${threaded[@]}")
if [ -n "$only" ]; then
    read -r -a tests <<<"$only"
fi
timeout_s="${RAM_CROSS_TIMEOUT:-900}"
pass=() fail=()
echo "==== $arch: ${#tests[@]} test programs under $qemu (up to ${timeout_s}s each)"
for t in "${tests[@]}"; do
    exe="$build/tests/$t"
    [ -x "$exe" ] || continue
    start=$(date +%s)
    (cd "$build/tests" && locked env OPENBLAS_NUM_THREADS=1 CK_DEFAULT_TIMEOUT="$timeout_s" \
        timeout "$timeout_s" "$qemu" "./$t" >"$t.cross.log" 2>&1) && ok=1 || ok=0
    if [ "$t" = check_byteorder_mutant ]; then
        ok=0
        grep -q 'Checks: 2, Failures: 2, Errors: 0' "$build/tests/$t.cross.log" && ok=1
    fi
    if [ "$ok" = 1 ]; then
        pass+=("$t")
        echo "  pass  $t ($(($(date +%s) - start)) s): $(grep -m1 -o 'Checks: .*' "$build/tests/$t.cross.log" || true)"
    else
        fail+=("$t")
        echo "  FAIL  $t ($(($(date +%s) - start)) s), $build/tests/$t.cross.log:"
        tail -5 "$build/tests/$t.cross.log" | sed 's/^/        /'
    fi
done
[ "$threads" = 1 ] || echo "not run (they start threads): ${threaded[*]}"
echo "==== $arch: ${#pass[@]} passed, ${#fail[@]} failed"
[ ${#fail[@]} -eq 0 ]
