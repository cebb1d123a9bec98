#!/usr/bin/env bash
# Install what libram needs on Debian/Ubuntu (apt-get; through sudo when not
# root).  Only missing packages are installed, except under CI=true, where
# the install always runs so that a fresh machine is never assumed.
#
# Usage: scripts/deps.sh                build + test dependencies
#        scripts/deps.sh --demo         also what the demo needs (MNIST download, plots)
#        scripts/deps.sh --reliability  also what scripts/test.sh's sanitizer, valgrind
#                                       and fuzzing passes need (clang 14 with libFuzzer
#                                       and the sanitizer runtimes, valgrind), and PyTorch,
#                                       so that CI tests the PyTorch bridge too (its tests
#                                       are skipped where PyTorch is not installed)
#        scripts/deps.sh --cross        only what scripts/cross-check.sh needs for arm64
#                                       and s390x: their cross compilers, qemu-user, and
#                                       the two architectures' libopenblas-dev and check
#                                       (dpkg --add-architecture first)
set -euo pipefail

if [ "${1:-}" = "--cross" ]; then
    command -v dpkg >/dev/null || { echo "deps.sh: not Debian; --cross needs dpkg" >&2; exit 1; }
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "deps.sh: need root or sudo for --cross" >&2; exit 1; }
        sudo=(sudo)
    fi
    # The multiarch libraries must be the very versions of the host's: one
    # apt-get update after adding the architectures.  The tools' image and
    # zlib libraries come second, each architecture on its own and allowed
    # to fail (a mirror without the target's security updates cannot match
    # the host's zlib1g): cross-check.sh then builds without the tools.
    cross=(qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libopenblas-dev:arm64 check:arm64
        gcc-s390x-linux-gnu libc6-dev-s390x-cross libopenblas-dev:s390x check:s390x)
    echo "deps.sh: installing the cross-check's ${cross[*]}"
    "${sudo[@]}" dpkg --add-architecture arm64
    "${sudo[@]}" dpkg --add-architecture s390x
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${cross[@]}"
    for a in arm64 s390x; do
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            "zlib1g-dev:$a" "libpng-dev:$a" "libjpeg62-turbo-dev:$a" ||
            echo "deps.sh: no zlib/libpng/libjpeg for $a: its cross-build leaves the tools out" >&2
    done
    exit 0
fi

# abigail-tools: the abi test; doxygen: the api_docs test; scikit-learn, tqdm,
# Pillow: the Python estimator's and data readers' tests; Open MPI:
# ram-train-mpi and the mpi test; libpng and libjpeg: the tools' image readers;
# zlib: their .npz reader (np.savez_compressed) and writer.
packages=(build-essential cmake pkg-config libopenblas-dev check libpng-dev libjpeg62-turbo-dev zlib1g-dev
    python3 python3-numpy python3-pytest python3-sklearn python3-tqdm python3-pil abigail-tools
    doxygen libopenmpi-dev openmpi-bin)
[ "${1:-}" = "--demo" ] && packages+=(curl ca-certificates gnuplot-nox)
[ "${1:-}" = "--reliability" ] && packages+=(clang libclang-rt-14-dev valgrind python3-torch)

command -v dpkg-query >/dev/null || { echo "deps.sh: not Debian; install: ${packages[*]}" >&2; exit 0; }
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ "${CI:-}" = true ] && missing=("${packages[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "deps.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
