#!/usr/bin/env bash
# Train a cluttered 60x60 MNIST model from scratch in one command, in two
# legs: first the digit alone where the set puts it (--clutter 0), so that
# the location policy learns to find a digit while nothing else is there to
# find; then all four clutter pieces, starting from the first leg's best
# model, with REINFORCE also training the core. Each leg keeps its best
# model by validation error; the second leg's is the result.
#
# Usage: scripts/train-cluttered60.sh [options] DATA_DIR OUT_DIR [-- ARGS]
#   --first-epochs N    epochs of the first leg (default: 80)
#   --epochs N          epochs of the second leg (default: 640)
#   --budget SEC        stop the second leg after SEC seconds of training
#                       (counted afresh when a leg resumes) (default: none)
#   --threads N         worker threads (default: 2)
#   --seed N            seed of the first leg; the second takes N + 1
#                       (default: 1)
#   --conv C            a convolutional layer of C channels (3 x 3 filters)
#                       between the retina and the glimpse network
#                       (ram-train --conv; default: 0, none)
#   --ram-train PATH    the ram-train to run (default: build/ram-train, else
#                       ram-train on the PATH)
#   -- ARGS             more ram-train options for both legs (not the
#                       network's: the second leg takes the first's), e.g.
#                       --quiet or --val N
#
# OUT_DIR receives first-leg.{ram,csv,log}, cluttered60.{ram,csv,log} and
# each leg's checkpoint; a leg interrupted is taken up again by running the
# same command (it resumes from its checkpoint). DATA_DIR holds the MNIST
# IDX files (scripts/fetch-mnist.sh).
set -euo pipefail

die() {
    echo "train-cluttered60: $*" >&2
    exit 2
}

first_epochs=80 epochs=640 budget="" threads=2 seed=1 conv=0 ram_train=""
while [ $# -gt 0 ]; do
    case "$1" in
    --first-epochs) first_epochs="${2:?}"; shift 2 ;;
    --epochs) epochs="${2:?}"; shift 2 ;;
    --budget) budget="${2:?}"; shift 2 ;;
    --threads) threads="${2:?}"; shift 2 ;;
    --seed) seed="${2:?}"; shift 2 ;;
    --conv) conv="${2:?}"; shift 2 ;;
    --ram-train) ram_train="${2:?}"; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || die "usage: train-cluttered60.sh [options] DATA_DIR OUT_DIR [-- ARGS]"
data="$1" out="$2"
shift 2
extra=()
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || die "after DATA_DIR OUT_DIR, only -- and ram-train options"
    shift
    extra=("$@")
fi
if [ -z "$ram_train" ]; then
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    if [ -x "$here/build/ram-train" ]; then
        ram_train="$here/build/ram-train"
    else
        ram_train="$(command -v ram-train)" || die "no ram-train: build first or pass --ram-train"
    fi
fi
mkdir -p "$out"

# The network: 8 glimpses of three squares (12, 24 and 48 pixels), an LSTM
# core, a location unit of 20 pixels: the committed cluttered60 model's
# (with --conv, a convolutional layer before its glimpse network).
common=(--data "$data" --dataset cluttered60 --batch 64 --threads "$threads"
    --weight-decay 0.01 --average 0.9998 ${extra[@]+"${extra[@]}"})

# A leg whose model exists is done; one whose checkpoint exists resumes.
run_leg() {
    local name="$1"
    shift
    if [ -f "$out/$name.ram" ] && [ ! -f "$out/$name.ram.ckpt" ]; then
        echo "train-cluttered60: $out/$name.ram exists, leg done"
        return
    fi
    local start=$SECONDS resume=() append=()
    if [ -f "$out/$name.ram.ckpt" ]; then
        resume=(--resume "$out/$name.ram.ckpt") append=(-a)
    fi
    "$ram_train" "${common[@]}" ${resume[@]+"${resume[@]}"} "$@" \
        --out "$out/$name.ram" --log "$out/$name.csv" 2>&1 | tee ${append[@]+"${append[@]}"} "$out/$name.log"
    # The checkpoint goes once the leg has ended: its model is final.
    rm -f "$out/$name.ram.ckpt"
    echo "train-cluttered60: leg $name took $((SECONDS - start)) s"
}

run_leg first-leg --clutter 0 --glimpses 8 --patch 12 --depth 3 --core lstm \
    --unit-pixels 20 --std 0.15 --epochs "$first_epochs" --lr 1e-3 --lr-final 1e-4 \
    --seed "$seed" --conv "$conv"
run_leg cluttered60 --init "$out/first-leg.ram" --epochs "$epochs" --lr 5e-4 \
    --lr-final 2e-6 --reinforce-core --seed $((seed + 1)) ${budget:+--time-budget "$budget"}
echo "train-cluttered60: model in $out/cluttered60.ram"
