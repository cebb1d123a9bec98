#!/usr/bin/env bash
# Data-parallel training on Open MPI, 2 ranks on this machine (loopback TCP):
#   1. exactness: tests/mpi_exact.c (N ranks x batch B == one process x N B);
#   2. ram-train-mpi trains, writes a model and checkpoints, and --resume
#      continues with another number of ranks (2 -> 1 -> 2);
#   3. faults: a rank killed with SIGKILL mid-run stops the job with an
#      error, and the last checkpoint is intact and resumable.
# On a tiny synthetic MNIST-shaped data set made here.  Exit 77 (CTest:
# skipped, and it says so) when mpirun or the MPI programs are missing.
#
# Usage: mpi.sh BUILD_DIR
set -euo pipefail
bin="$1"
if ! command -v mpirun >/dev/null || [ ! -x "$bin/tests/mpi_exact" ] || [ ! -x "$bin/ram-train-mpi" ]; then
    echo "SKIP: Open MPI not installed (Debian: libopenmpi-dev openmpi-bin); MPI tests not run"
    exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-mpi.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mpi: FAIL: $*" >&2; exit 1; }

# CI runs as root, in containers: allow root, TCP over loopback only, no
# single-copy shared memory (ptrace is often not allowed there).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_pml=ob1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm_rsh_agent=false
mpi() { mpirun --oversubscribe -np "$@" </dev/null; }
# In the sanitizer build, leak checking is off for these processes only: Open
# MPI keeps ~120 KB in ~3,300 blocks until exit, allocated in plug-ins it has
# unloaded by then, so LeakSanitizer cannot even name them to suppress them.
# (Every other test checks libram for leaks; ASan's other checks stay on.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# 1. Exactness.
mpi 2 "$bin/tests/mpi_exact" >"$tmp/exact.txt" 2>&1 || fail "mpi_exact: $(cat "$tmp/exact.txt")"
cat "$tmp/exact.txt"

# A tiny MNIST-shaped data set (tests/synthetic-idx.sh).
source "$(dirname "${BASH_SOURCE[0]}")/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp/data" train 1100 1
make_split "$tmp/data" t10k 100 2

# 2. Train on 2 ranks, resume on 1, then on 2 again (averaging the weights:
#    every rank keeps the same average, rank 0 validates and saves it).
train=("$bin/ram-train-mpi" --data "$tmp/data" --val 100 --batch 16 --threads 1 --quiet
       --glimpses 3 --hidden 32 --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16
       --average 0.9 --out "$tmp/m.ram" --log "$tmp/log.csv")
mpi 2 "${train[@]}" --epochs 1 2>"$tmp/t1.txt" || fail "2 ranks: $(cat "$tmp/t1.txt")"
grep -q "2 ranks, batch 16 per rank (32 per step), 31 steps per epoch" "$tmp/t1.txt" ||
    fail "2 ranks: unexpected header: $(cat "$tmp/t1.txt")"
[ -s "$tmp/m.ram" ] && [ -s "$tmp/m.ram.ckpt" ] || fail "no model or checkpoint written"
mpi 1 "${train[@]}" --epochs 2 --resume "$tmp/m.ram.ckpt" 2>"$tmp/t2.txt" ||
    fail "resume on 1 rank: $(cat "$tmp/t2.txt")"
grep -q "resumed from .*: 1 epochs done" "$tmp/t2.txt" || fail "resume on 1 rank did not say so"
mpi 2 "${train[@]}" --epochs 3 --resume "$tmp/m.ram.ckpt" 2>"$tmp/t3.txt" ||
    fail "resume on 2 ranks: $(cat "$tmp/t3.txt")"
grep -q "resumed from .*: 2 epochs done" "$tmp/t3.txt" || fail "resume on 2 ranks did not say so"
[ "$(wc -l <"$tmp/log.csv")" -eq 4 ] || fail "log should have a header and 3 epochs"
[ "$(awk -F, 'NF == 9' "$tmp/log.csv" | wc -l)" -eq 4 ] || fail "log without val_error_last"
"$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --json >"$tmp/eval.json" ||
    fail "ram-eval of the MPI-trained model"
echo "mpi: trained on 2 ranks, resumed on 1 and on 2: $(tr -d '\n' <"$tmp/eval.json" | cut -c1-120)"

# 3. Kill rank 1 after the first checkpoint of a longer run.
rm -f "$tmp/m.ram.ckpt"
mpi 2 "${train[@]}" --epochs 1000 2>"$tmp/k.txt" &
job=$!
for _ in $(seq 600); do [ -s "$tmp/m.ram.ckpt" ] && break; sleep 0.1; done
[ -s "$tmp/m.ram.ckpt" ] || fail "no checkpoint within 60 s: $(cat "$tmp/k.txt")"
sleep 0.5
victim=$(pgrep -n -x ram-train-mpi) || fail "no rank process to kill"
kill -9 "$victim"
set +e
timeout 60 tail --pid="$job" -f /dev/null
wait "$job"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "the job went on after a rank was killed"
"$bin/ram-eval" --model "$tmp/m.ram.ckpt" --data "$tmp/data" --json >/dev/null ||
    fail "the last checkpoint does not load"
# (The log has every epoch the checkpoint has, and maybe one more.)
more=$(($(tail -1 "$tmp/log.csv" | cut -d, -f1) + 2))
mpi 2 "${train[@]}" --epochs "$more" --resume "$tmp/m.ram.ckpt" 2>"$tmp/r.txt" ||
    fail "resume after the kill: $(cat "$tmp/r.txt")"
grep -q "resumed from" "$tmp/r.txt" || fail "resume after the kill did not say so"
echo "mpi: a rank killed (pid $victim): job exit status $rc; the checkpoint loaded and resumed"
echo "mpi: all passed"
