#!/usr/bin/env bash
# Plot ram-bench's scaling figures as a PNG: inference microseconds per image
# against image size (left) and against the number of glimpses (right), at
# batch 1 and batch 256, one thread.
#
# Usage: build/ram-bench --json > bench.json
#        scripts/plot-bench.sh bench.json docs/performance-scaling.png
#
# Needs python3 (to read the JSON) and gnuplot (Debian: gnuplot-nox).
set -euo pipefail
[ $# -eq 2 ] || { sed -n '6,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2; }
json=$1 out=$2
command -v gnuplot >/dev/null || { echo "plot-bench: needs gnuplot (gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$json" "$tmp" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for key, col in (("scaling_size", "size"), ("scaling_glimpses", "glimpses")):
    with open(f"{sys.argv[2]}/{key}.dat", "w") as f:
        for row in doc[key]:
            f.write(f"{row[col]} {row['b1_us']} {row['b256_us']}\n")
EOF

gnuplot <<EOF
set terminal pngcairo size 1100,450 font "sans,10"
set output "$out"
set multiplot layout 1,2 title "libram inference cost, 1 thread (ram-bench)"
set grid
set key bottom right
set ylabel "microseconds per image"
set yrange [0:*]
set title "against image size (12x12 patch, 3 scales, 8 glimpses)"
set xlabel "image side (pixels)"
set logscale x 2
set xrange [22:640]
set xtics (28, 60, 100, 256, 512)
plot "$tmp/scaling_size.dat" using 1:2 with linespoints lw 2 pt 7 title "batch 1", \
     "" using 1:3 with linespoints lw 2 pt 5 title "batch 256"
unset logscale x
set xrange [*:*]
set xtics autofreq
set title "against glimpses (60x60 image)"
set xlabel "glimpses"
plot "$tmp/scaling_glimpses.dat" using 1:2 with linespoints lw 2 pt 7 title "batch 1", \
     "" using 1:3 with linespoints lw 2 pt 5 title "batch 256"
unset multiplot
EOF
echo "wrote $out"
