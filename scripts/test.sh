#!/usr/bin/env bash
# Build libram and run its whole test suite (unit tests, exported-symbol check,
# install + downstream-consumer check, tools, crash safety).  No MNIST needed.
#
# Usage: scripts/test.sh                  Release build in build/ and the suite
#        CI=true scripts/test.sh          the same, then every reliability pass
#        RAM_TEST_ALL=1 scripts/test.sh   (what .ci/run does; see below)
#        RAM_SANITIZE=1 scripts/test.sh   only the ASan + UBSan pass (build-asan/)
#        RAM_SANITIZE=thread scripts/test.sh  only the ThreadSanitizer pass
#
# The reliability passes (docs/reliability.md), each in a build directory of
# its own:
#   asan      build-asan/: everything built with -fsanitize=address,undefined,
#             the whole suite (leaks are errors too, through LeakSanitizer);
#   tsan      build-tsan/: -fsanitize=thread, the tests that run threads;
#   valgrind  build/'s unit tests under valgrind --leak-check=full;
#   fuzz      build-fuzz/ (clang): each libFuzzer target for RAM_FUZZ_SECONDS
#             (30) seconds from the committed seed corpus, no finding allowed;
#   cross     build-cross-arm64/, build-cross-s390x/: the tree cross-built for
#             arm64 and s390x (scripts/cross-check.sh), arm64's unit tests run
#             under qemu-aarch64, s390x's byte-order tests under qemu-s390x
#             (big-endian); the cross compilers and the two architectures'
#             libraries are installed first (scripts/deps.sh --cross), and the
#             pass is skipped, saying why, where they cannot be.
# RAM_PASSES="asan tsan valgrind fuzz cross" picks passes (with RAM_TEST_ALL=1).
#
# On Debian/Ubuntu, missing build dependencies are installed first
# (scripts/deps.sh: apt-get, through sudo when not root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

all=0
if [ "${CI:-}" = true ] || [ "${RAM_TEST_ALL:-0}" = 1 ]; then all=1; fi
sanitize="${RAM_SANITIZE:-0}"
if [ "$all" = 1 ]; then
    "$root/scripts/deps.sh" --reliability
else
    "$root/scripts/deps.sh"
fi

export OPENBLAS_NUM_THREADS=1 # the tests set it too; the fuzz runs need it here
jobs=2

step() { printf '\n==== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

# build DIR CMAKE-ARGS...: configure and build.
build() {
    local dir="$1"
    shift
    cmake -S . -B "$dir" "$@"
    cmake --build "$dir" -j"$jobs"
}

pass_release() {
    # RelWithDebInfo: optimised as Release, plus the DWARF the abi test reads
    # (tests/check-abi.sh skips, and says so, without it).
    step "Release build (with debug info) and the whole suite (build/)"
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    ctest --test-dir build --output-on-failure
}

pass_asan() {
    # RelWithDebInfo: sanitizer reports with line numbers, at a usable speed.
    step "AddressSanitizer + UBSan: the whole suite (build-asan/)"
    build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAM_SANITIZE=address,undefined
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 ctest --test-dir build-asan --output-on-failure
}

pass_tsan() {
    # Only the tests that start threads: TSan finds races between threads
    # and has nothing to check in the single-threaded suites.
    step "ThreadSanitizer: the threaded tests (build-tsan/)"
    build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAM_SANITIZE=thread
    # setarch -R: without address-space randomisation, as TSan's fixed shadow
    # layout fails on kernels with a large vm.mmap_rnd_bits.
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R \
        ctest --test-dir build-tsan --output-on-failure \
        -R '^(check_threads|check_team|check_trainer|check_api|check_precision|check_stop|crash_safety|tools_smoke|tools_stream)$'
}

# One test program under valgrind (run by pass_valgrind through xargs).
valgrind_one() {
    cd build/tests
    if CK_FORK=no CK_DEFAULT_TIMEOUT=900 RAM_CRASH_KILLS=5 \
        CK_EXCLUDE_TAGS=long \
        valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --error-exitcode=1 "./$1" >"$1.valgrind.log" 2>&1; then
        echo "-- $1: clean"
    else
        cat "$1.valgrind.log"
        echo "-- $1: FAILED under valgrind" >&2
        return 1
    fi
}

pass_valgrind() {
    # CK_FORK=no: each suite runs in one process, so valgrind sees all of it.
    # Left out (Check tag "long"): two long tests whose code shorter ones run
    # (10 of the 13 minutes the suite took under valgrind); crash_safety kills
    # 5 runs instead of 60.
    step "valgrind --leak-check=full: the unit tests (build/)"
    [ -x build/tests/check_api ] || build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    export -f valgrind_one
    # check_byteorder_mutant fails by design (ctest expects its failures).
    (cd build/tests && find . -maxdepth 1 -type f -perm -u+x \
        \( -name 'check_*' -o -name crash_safety \) ! -name check_byteorder_mutant \
        -printf '%f\n') | sort |
        xargs -P "$jobs" -I{} bash -c 'valgrind_one {}'
}

pass_fuzz() {
    local secs="${RAM_FUZZ_SECONDS:-30}" t corpus
    if ! command -v clang >/dev/null; then
        echo "test.sh: clang not found: skipping the fuzz smoke runs" >&2
        return 0
    fi
    step "libFuzzer smoke runs, ${secs} s per target (build-fuzz/)"
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRAM_FUZZ=ON -DRAM_SANITIZE=address,undefined -DRAM_BUILD_TESTS=OFF
    cmake --build build-fuzz -j"$jobs" \
        --target fuzz_model_file fuzz_model_memory fuzz_checkpoint fuzz_idx fuzz_image fuzz_npz
    local scratch
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/ram-fuzz.XXXXXX")"
    for t in model_file:model model_memory:model checkpoint:checkpoint idx:idx image:image npz:npz; do
        corpus="tests/fuzz/corpus/${t#*:}"
        mkdir -p "$scratch/${t%%:*}"
        echo "-- fuzz_${t%%:*} (${secs} s)"
        if ! build-fuzz/tests/fuzz/fuzz_"${t%%:*}" -max_total_time="$secs" -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$scratch/" \
            "$scratch/${t%%:*}" "$corpus" >"$scratch/${t%%:*}.log" 2>&1; then
            tail -40 "$scratch/${t%%:*}.log" >&2
            echo "test.sh: fuzz_${t%%:*} found a problem; the input is in $scratch" >&2
            return 1
        fi
        grep -E '^(#[0-9]+[[:space:]]+DONE|Done )' \
            "$scratch/${t%%:*}.log" || true
    done
    rm -rf "$scratch"
}

pass_cross() {
    step "cross-builds: arm64 (unit tests under qemu-aarch64), s390x (byte order under qemu-s390x)"
    if ! "$root/scripts/deps.sh" --cross; then
        echo "test.sh: WARNING: the cross compilers or the arm64/s390x libraries could not be" \
            "installed: cross pass skipped" >&2
        return 0
    fi
    "$root/scripts/cross-check.sh" arm64
    "$root/scripts/cross-check.sh" s390x --only "check_byteorder check_byteorder_mutant check_serialize"
}

case "$sanitize" in
0 | "" | OFF | off)
    start=$SECONDS
    pass_release
    if [ "$all" = 1 ]; then
        for p in ${RAM_PASSES:-asan tsan valgrind fuzz cross}; do
            "pass_$p"
        done
    fi
    step "all passed in $((SECONDS - start)) s"
    ;;
1 | ON | on | address,undefined | undefined,address) pass_asan ;;
thread) pass_tsan ;;
*)
    echo "test.sh: RAM_SANITIZE=$sanitize: use 1 (address,undefined) or thread" >&2
    exit 2
    ;;
esac
