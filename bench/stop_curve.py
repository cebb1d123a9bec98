#!/usr/bin/env python3
"""Stopping when sure, measured: a model's error against the glimpses it
takes on average, for a range of stop thresholds (ram-eval
--stop-threshold) and, with --costs, for learned stop units fitted at a
range of costs per glimpse (ram-train --init MODEL --epochs 0 --stop-cost
C, then ram-eval --stop-unit), on the validation images of its set and on
the fixed 10,000 test images, beside the same model run for all its
glimpses.

Each rule's setting is chosen on validation alone: the threshold (and the
cost) with the fewest mean glimpses whose validation error is at most the
all-glimpse validation error plus --budget points (0.10 by default).  The
test figures of that setting are then read once, with the rest of the
curve.  The units are fitted on the training images, never on these.

Usage:
    python3 bench/stop_curve.py --build build --data data/mnist \\
        --model models/mnist-6glimpses.ram [--dataset mnist] [--work DIR] \\
        [--thresholds 0.5,0.8,...] [--costs 0.001,0.002,...] [--budget 0.10] \\
        [--json out.json] [--plot out.png]

The validation split (ram-train's: the last 10,000 training digits, placed
as ram-train places them) is exported once with ram-data into --work (a
temporary folder by default).  --plot draws the curve with gnuplot
(Debian: gnuplot-nox).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

DEFAULT_THRESHOLDS = [0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--data", required=True, help="the MNIST IDX directory")
    ap.add_argument("--model", required=True)
    ap.add_argument("--dataset", default="mnist")
    ap.add_argument("--work", help="where the validation split is exported (kept)")
    ap.add_argument("--thresholds", help="comma-separated, in [0, 1]")
    ap.add_argument("--costs", help="comma-separated costs per glimpse: fit a stop unit for "
                    "each (the fitted models are kept in --work)")
    ap.add_argument("--budget", type=float, default=0.10,
                    help="points of validation error the chosen threshold may add")
    ap.add_argument("--threads", type=int, default=1, help="ram-eval --threads")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--plot", help="draw the curve into this PNG (gnuplot)")
    a = ap.parse_args()
    thresholds = ([float(t) for t in a.thresholds.split(",")] if a.thresholds
                  else DEFAULT_THRESHOLDS)
    work = a.work or tempfile.mkdtemp(prefix="stop-curve-")
    os.makedirs(work, exist_ok=True)
    val_dir = os.path.join(work, a.dataset + "-val")
    split = a.dataset + "-val"
    if not os.path.exists(os.path.join(val_dir, split + "-labels-idx1-ubyte")):
        subprocess.run([os.path.join(a.build, "ram-data"), "--dataset", a.dataset, "--data",
                        a.data, "--split", "val", "--out", val_dir], check=True,
                       capture_output=True)
    def ram_eval(model, where):
        return [os.path.join(a.build, "ram-eval"), "--model", model, "--json",
                "--threads", str(a.threads)] + where
    on_val = ["--data", val_dir, "--split", split]
    on_test = ["--data", a.data, "--dataset", a.dataset]

    def measure(rule, value, extra, model=a.model):
        v = run_json(ram_eval(model, on_val + extra))
        t = run_json(ram_eval(model, on_test + extra))
        row = {"rule": rule, rule_key[rule]: value,
               "val_error": v["test_error"], "val_mean_glimpses":
               v.get("mean_glimpses", v["glimpses"]),
               "test_error": t["test_error"],
               "test_mean_glimpses": t.get("mean_glimpses", t["glimpses"]),
               "test_stopped_at": t.get("stopped_at"),
               "test_seconds": t["seconds"]}
        print("%-14s val %.2f %% at %.2f glimpses   test %.2f %% at %.2f glimpses   %.3f s"
              % ("all" if value is None else "%s %g" % (rule_key[rule], value),
                 100 * row["val_error"], row["val_mean_glimpses"], 100 * row["test_error"],
                 row["test_mean_glimpses"], row["test_seconds"]), flush=True)
        return row

    rule_key = {"threshold": "threshold", "unit": "cost"}
    rows = [measure("threshold", None, [])]
    for t in thresholds:
        rows.append(measure("threshold", t, ["--stop-threshold", repr(t)]))
    for c in ([float(c) for c in a.costs.split(",")] if a.costs else []):
        fitted = os.path.join(work, "%s-stop-%g.ram" % (os.path.basename(a.model)[:-4], c))
        subprocess.run([os.path.join(a.build, "ram-train"), "--init", a.model, "--epochs", "0",
                        "--stop-cost", repr(c), "--data", a.data, "--dataset", a.dataset,
                        "--batch", "256", "--threads", str(a.threads), "--quiet",
                        "--out", fitted], check=True, capture_output=True)
        rows.append(measure("unit", c, ["--stop-unit"], fitted))
    full = rows[0]
    summary = {"model": a.model, "dataset": a.dataset, "glimpses": full["test_mean_glimpses"],
               "budget_points": a.budget, "rows": rows}
    for rule, key in (("threshold", "chosen"), ("unit", "chosen_unit")):
        ok = [r for r in rows[1:] if r["rule"] == rule and
              r["val_error"] <= full["val_error"] + a.budget / 100 + 1e-12]
        chosen = min(ok, key=lambda r: r["val_mean_glimpses"]) if ok else None
        summary[key] = chosen
        if not any(r["rule"] == rule for r in rows[1:]):
            continue
        if not chosen:
            print("\n%s: no setting keeps the validation error within %.2f points"
                  % (rule, a.budget))
            continue
        fewer = 1 - chosen["test_mean_glimpses"] / full["test_mean_glimpses"]
        print("\nchosen on validation: %s %g (validation %.2f %% against %.2f %% with "
              "every glimpse)\ntest: %.2f %% at %.2f glimpses against %.2f %% at %d: "
              "%.0f %% fewer glimpses, %+.2f points"
              % (rule_key[rule], chosen[rule_key[rule]], 100 * chosen["val_error"],
                 100 * full["val_error"], 100 * chosen["test_error"],
                 chosen["test_mean_glimpses"], 100 * full["test_error"],
                 full["test_mean_glimpses"], 100 * fewer,
                 100 * (chosen["test_error"] - full["test_error"])))
        suffix = "" if rule == "threshold" else "_unit"
        summary["fewer_glimpses" + suffix] = fewer
        summary["added_points" + suffix] = 100 * (chosen["test_error"] - full["test_error"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    if a.plot:
        plot(a, rows, summary["chosen"])
    if not a.work:
        shutil.rmtree(work)
    return 0


def plot(a, rows, chosen):
    if not shutil.which("gnuplot"):
        print("stop_curve: no gnuplot (Debian: gnuplot-nox): no plot", file=sys.stderr)
        return
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as d:
        # two blocks (gnuplot's index 0 and 1): the thresholds, the units
        for rule, key in (("threshold", "threshold"), ("unit", "cost")):
            for r in rows[1:]:
                if r["rule"] == rule:
                    d.write("%g %g %g %g %g\n" % (r["val_mean_glimpses"], 100 * r["val_error"],
                                                   r["test_mean_glimpses"],
                                                   100 * r["test_error"], r[key]))
            d.write("\n\n")
    units = any(r["rule"] == "unit" for r in rows[1:])
    full = rows[0]
    name = os.path.basename(a.model)
    script = """
set terminal pngcairo size 800,520 font ',11'
set output '%(out)s'
set title 'Stopping when sure: %(name)s on %(set)s'
set xlabel 'mean glimpses per image'
set ylabel 'error (%%)'
set grid
set logscale y
set ytics (0.5, 1, 2, 5, 10, 20, 50)
set xrange [0.8:%(xmax)g]
set key top right
set label 1 'every glimpse' at %(fx)g,%(fy)g offset -2,1 right
%(chosen)s
plot '%(dat)s' index 0 using 3:4 with linespoints lw 2 pt 7 title 'threshold, test', \\
     '' index 0 using 1:2 with linespoints lw 1 dt 2 pt 6 title 'threshold, validation', \\
     '' index 0 using 3:4:(sprintf('%%g', $5)) with labels offset 0,-1 font ',8' notitle, \\
     %(units)s'-' using 1:2 with points pt 9 ps 2 title 'test, every glimpse'
%(fx)g %(fy)g
e
""" % {"out": a.plot, "name": name, "set": a.dataset, "dat": d.name,
       "fx": full["test_mean_glimpses"], "fy": 100 * full["test_error"],
       "xmax": full["test_mean_glimpses"] + 0.5,
       "units": ("'' index 1 using 3:4 with linespoints lw 2 pt 5 "
                 "title 'stop unit (a cost each), test', " if units else ""),
       "chosen": ("set arrow 1 from %g,%g to %g,%g nohead dt 3 lc rgb 'gray'"
                  % (chosen["test_mean_glimpses"], 0, chosen["test_mean_glimpses"],
                     100 * chosen["test_error"]) if chosen else "")}
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.unlink(d.name)


if __name__ == "__main__":
    sys.exit(main())
