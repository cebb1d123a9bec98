#!/usr/bin/env bash
# Plot where a model's glimpses went: for each glimpse 1, 2, ..., the share of
# test images whose glimpse landed on the digit (ram-eval's
# on_digit_by_glimpse), one line per ram-eval JSON.
#
# Usage: scripts/plot-on-digit.sh OUT.png "TITLE" EVAL.json...
#        (each EVAL.json from ram-eval --json --dataset translated60|cluttered60|cluttered100)
#
# Needs python3 (to read the JSON) and gnuplot (Debian: gnuplot-nox).
set -euo pipefail
[ $# -ge 3 ] || { sed -n '6,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2; }
out=$1 title=$2
shift 2
command -v gnuplot >/dev/null || { echo "plot-on-digit: needs gnuplot (gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One data file per JSON and a gnuplot plot clause naming it in the legend.
python3 - "$tmp" "$@" >"$tmp/plot.gp" <<'PY'
import json, os, sys
tmp, clauses = sys.argv[1], []
for k, path in enumerate(sys.argv[2:]):
    doc = json.load(open(path))
    if "on_digit_by_glimpse" not in doc:
        sys.exit(f"plot-on-digit: {path} has no on_digit_by_glimpse (ram-eval --json on a placed set)")
    with open(f"{tmp}/{k}.dat", "w") as f:
        for g, share in enumerate(doc["on_digit_by_glimpse"], 1):
            f.write(f"{g} {100 * share}\n")
    name = os.path.basename(doc["model"]).removesuffix(".ram")
    label = (f"{name}, {doc['policy']}{' (no clutter)' if doc.get('no_clutter') else ''}: "
             f"error {100 * doc['test_error']:.2f} %, found {100 * doc['found']:.1f} %")
    clauses.append(f'"{tmp}/{k}.dat" using 1:2 with linespoints lw 2 title "{label}"')
print("plot " + ", \\\n     ".join(clauses))
PY

gnuplot <<GP
set terminal pngcairo size 900,500 font "sans,10"
set output "$out"
set title "$title"
set grid
set key outside bottom center vertical
set xlabel "glimpse"
set ylabel "% of test images with this glimpse on the digit"
set yrange [0:100]
set xtics 1
load "$tmp/plot.gp"
GP
echo "wrote $out"
