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
#             (30) seconds from the committed seed corpus, no finding allowed.
# RAM_PASSES="asan tsan valgrind fuzz" picks passes (with RAM_TEST_ALL=1).
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
    step "Release build and the whole suite (build/)"
    build build -DCMAKE_BUILD_TYPE=Release
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
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        ctest --test-dir build-tsan --output-on-failure \
        -R '^(check_threads|check_trainer|check_api|crash_safety|tools_smoke)$'
}

pass_valgrind() {
    step "valgrind --leak-check=full: the unit tests (build/)"
    [ -x build/tests/check_api ] || build build -DCMAKE_BUILD_TYPE=Release
    local t status=0
    # CK_FORK=no: each suite in one process, so valgrind checks all of it.
    # crash_safety forks and kills its own children: fewer kills under valgrind.
    for t in build/tests/check_* build/tests/crash_safety; do
        [ -x "$t" ] || continue
        echo "-- $t"
        (cd build/tests && CK_FORK=no CK_DEFAULT_TIMEOUT=600 RAM_CRASH_KILLS=5 \
            valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --error-exitcode=1 "./$(basename "$t")" >/dev/null) || status=1
    done
    [ "$status" = 0 ] || { echo "valgrind found errors (above)" >&2; return 1; }
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
        --target fuzz_model_file fuzz_model_memory fuzz_checkpoint fuzz_idx
    local scratch
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/ram-fuzz.XXXXXX")"
    for t in model_file:model model_memory:model checkpoint:checkpoint idx:idx; do
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
        grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|Done )' \
            "$scratch/${t%%:*}.log" || true
    done
    rm -rf "$scratch"
}

case "$sanitize" in
0 | "" | OFF | off)
    start=$SECONDS
    pass_release
    if [ "$all" = 1 ]; then
        for p in ${RAM_PASSES:-asan tsan valgrind fuzz}; do
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
