#!/usr/bin/env bash
# Plot training curves from ram-train --log CSV files as a PNG: train and
# validation error (%) per epoch, one colour per run, train dashed and
# validation solid, the best validation error in the legend; for a run with
# `ram-train --average`, whose validation error is the weight average's, the
# last weights' validation error (val_error_last) dotted.  Rows of an epoch
# logged twice (a run resumed after a crash) count once, the later one.
#
# Usage: scripts/plot-curves.sh [options] [OUT.png] RUN.csv [RUN2.csv ...]
#   -o FILE      output PNG, also given as a first argument ending in .png
#                (default: the first CSV with .png instead of .csv)
#   -t TITLE     plot title (default: "RAM training curves")
#   --linear     linear y axis (default: logarithmic)
#   --hours      x axis in hours of training instead of epochs
#   --size WxH   image size in pixels (default: 1000x600, taller with more
#                than three runs, whose legend goes below the plot)
#
# Needs gnuplot (Debian/Ubuntu: apt-get install gnuplot-nox).  The CSVs may
# still be growing: only complete rows are plotted.
set -euo pipefail

die() {
    echo "plot-curves: $*" >&2
    exit 1
}

usage() {
    sed -n '7,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

out="" title="RAM training curves" logscale=1 xaxis=epoch size=""
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) [ $# -ge 2 ] || die "-o needs a file name"; out="$2"; shift 2 ;;
        -t) [ $# -ge 2 ] || die "-t needs a title"; title="$2"; shift 2 ;;
        --linear) logscale=0; shift ;;
        --hours) xaxis=hours; shift ;;
        --size)
            [ $# -ge 2 ] || die "--size needs WxH"
            [[ "$2" =~ ^([0-9]{2,5})x([0-9]{2,5})$ ]] || die "--size must look like 1000x600"
            size="${BASH_REMATCH[1]},${BASH_REMATCH[2]}"
            shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; files+=("$@"); break ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) files+=("$1"); shift ;;
    esac
done
# `plot-curves.sh OUT.png RUN.csv ...`, the form scripts/demo.sh uses.
if [ -z "$out" ] && [ ${#files[@]} -gt 1 ] && [[ "${files[0],,}" == *.png ]]; then
    out="${files[0]}"
    files=("${files[@]:1}")
fi
[ ${#files[@]} -gt 0 ] || { usage >&2; exit 2; }

command -v gnuplot >/dev/null 2>&1 ||
    die "gnuplot not found; on Debian/Ubuntu install it with: apt-get install gnuplot-nox"

# pngcairo draws anti-aliased lines; the libgd 'png' terminal is the fallback
# some gnuplot builds have instead.
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    terminal="pngcairo enhanced font 'sans,11'"
elif gnuplot -e 'set terminal png' >/dev/null 2>&1; then
    terminal="png"
else
    die "this gnuplot has no PNG terminal (pngcairo or png)"
fi

[ -n "$out" ] || out="${files[0]%.csv}.png"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Escape a string for a single-quoted gnuplot string ('' is a literal ').
gp_quote() {
    printf "'%s'" "${1//\'/\'\'}"
}

# Copy each log's complete, numeric rows to a scratch file with fixed
# columns (x, train %, val %), so a half-written last line of a live log, an
# odd file name or a reordered header cannot confuse gnuplot.
plots=()
i=0
for f in "${files[@]}"; do
    [ -r "$f" ] || die "cannot read $f"
    i=$((i + 1))
    data="$tmp/run$i.dat"
    awk -F, -v xaxis="$xaxis" -v file="$f" '
        NR == 1 {
            for (k = 1; k <= NF; k++) col[$k] = k
            if (!("epoch" in col) || !("seconds" in col) || !("train_error" in col) ||
                !("val_error" in col)) {
                print "plot-curves: " file ": not a ram-train --log CSV (header: " $0 ")" \
                    > "/dev/stderr"
                bad = 1
                exit 1
            }
            ncol = NF
            has_last = "val_error_last" in col
            next
        }
        # An empty validation column: a run without validation (--val 0).
        NF == ncol && $col["epoch"] ~ /^[0-9]+$/ &&
        $col["train_error"] ~ /^[0-9.eE+-]+$/ && $col["val_error"] ~ /^[0-9.eE+-]*$/ {
            e = $col["epoch"] + 0
            x = xaxis == "hours" ? $col["seconds"] / 3600 : e
            v = $col["val_error"] == "" ? "NaN" : 100 * $col["val_error"]
            l = has_last && $col["val_error_last"] != "" ? 100 * $col["val_error_last"] : "NaN"
            row[e] = x " " 100 * $col["train_error"] " " v " " e " " l
            if (e > last) last = e
        }
        # A run resumed from a checkpoint may log an epoch twice: keep the
        # later row, in epoch order.
        END { if (!bad) for (e = 0; e <= last; e++) if (e in row) print row[e] }' \
        "$f" > "$data" || die "cannot use $f"
    [ -s "$data" ] || die "$f has no complete epoch yet"
    # Best validation error and its epoch, for the legend.
    # (awk reads all of sort's output: `head -n 1` would SIGPIPE it, fatal under pipefail)
    best="$(awk '$3 != "NaN"' "$data" | sort -g -k3,3 -s |
        awk 'NR == 1 {printf "best %.2f%% at epoch %d", $3, $4} END {if (!NR) printf "no validation"}')"
    name="$(basename -- "$f" .csv)"
    averaged=""
    if awk '$5 != "NaN" { found = 1; exit } END { exit !found }' "$data"; then
        averaged=", weight average"
    fi
    train_title="$name train"
    [ "$best" = "no validation" ] && train_title+=" (no validation)" # --val 0: training error alone
    plots+=("$(gp_quote "$data") using 1:2 with lines dashtype 2 linewidth 1.5 linecolor $i \
title $(gp_quote "$train_title")")
    if [ "$best" != "no validation" ]; then
        plots+=("$(gp_quote "$data") using 1:3 with lines linewidth 2 linecolor $i \
title $(gp_quote "$name validation$averaged ($best)")")
    fi
    if [ -n "$averaged" ]; then
        plots+=("$(gp_quote "$data") using 1:5 with lines dashtype 3 linewidth 1 linecolor $i \
title $(gp_quote "$name validation, last weights")")
    fi
done

plot_cmd="$(printf '%s, ' "${plots[@]}")"
plot_cmd="${plot_cmd%, }"
if [ "$xaxis" = hours ]; then xlabel="training time (hours)"; else xlabel="epoch"; fi
if [ "$logscale" = 1 ]; then
    yscale="set logscale y; set format y '%g'"
else
    yscale="set yrange [0:*]"
fi

# Up to three runs the legend fits in a corner; more would hide the curves,
# so it goes below the plot and the image grows to hold it.
key="top right noenhanced box opaque"
if [ "${#files[@]}" -gt 3 ]; then
    key="outside below center noenhanced box"
    [ -n "$size" ] || size="1000,$((600 + 54 * ${#files[@]}))"
fi
[ -n "$size" ] || size="1000,600"

script="$tmp/plot.gp"
cat > "$script" <<EOF
set terminal $terminal size $size
set output $(gp_quote "$out")
set title $(gp_quote "$title") noenhanced
set xlabel '$xlabel'
set ylabel 'error (%)'
$yscale
set grid xtics ytics mytics
set key $key
plot $plot_cmd
EOF
gnuplot "$script" 2> "$tmp/gnuplot.err" || {
    cat "$tmp/gnuplot.err" >&2
    die "gnuplot failed"
}
# Warnings (e.g. a zero error on a log axis) are worth seeing, not fatal.
grep -v '^$' "$tmp/gnuplot.err" >&2 || true
echo "plot-curves: wrote $out"
