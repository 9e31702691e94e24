#!/usr/bin/env python3
"""tools/results.py — the README's results table, made from the runs' metrics.json files.

    /usr/bin/python3 tools/results.py [--runs runs/results] [--write README.md]
    /usr/bin/python3 tools/results.py --pairs    each bf16 run beside the float32 run of its seed

Reads <runs>/<row>/seed<k>/metrics.json for the rows below (tools/results.sh trains them) and
prints one Markdown table, task | baseline | result | time | command: per row the baseline the
program computed on the same split, the result as mean and [min, max] over the seeds found, the
mean training time (train_seconds) with the thread count, process count and OpenBLAS core the
runs used (a time says as much about the machine as about the recipe), and the command. With
--write FILE the table replaces the text between FILE's lines `<!-- results: begin -->` and
`<!-- results: end -->`. Standard library only. A row with no finished run is left out.
Each task but the 2-process one has a bf16 row beside it (folder <row>_bf16, the same command
with `--precision bf16`); a run counts for a row only when its metrics.json names the row's
precision (runs from before the option are f32).
"""
import argparse
import glob
import json
import os
import statistics
import sys

# (folder, task, metric key, baseline key, unit, scale to the unit, decimals, baseline's name,
#  command); a unit of "%" is printed after the numbers
ROWS = [
    ("spam", "text classification, SpamAssassin", "test_accuracy", "baseline_accuracy",
     "test accuracy %", 100.0, 2, "Naive Bayes", "bash tools/train_classifier.sh"),
    ("spam_np2", "the same on 2 processes, `--batch-size 16`", "test_accuracy",
     "baseline_accuracy", "test accuracy %", 100.0, 2, "Naive Bayes",
     "mpirun -np 2 ./build/examples/text_classification --batch-size 16 --threads 1"),
    ("fortunes", "text classification, 7 fortune categories", "test_accuracy",
     "baseline_accuracy", "test accuracy %", 100.0, 2, "Naive Bayes",
     "bash tools/train_classifier.sh --dataset fortunes"),
    ("translation", "translation, English number words to French", "heldout_exact_match_beam",
     None, "held-out exact match (beam 4) %", 1.0, 2, None, "bash tools/train_translation.sh"),
    ("gpt", "character GPT, fortunes", "heldout_nats_per_char", "baseline_heldout_nats_per_char",
     "held-out nats/char", 1.0, 4, "Kneser-Ney 5-gram", "bash tools/train_gpt.sh"),
    ("gpt_llama", "character llama (rotary, RMSNorm, SwiGLU, 2 kv heads), fortunes",
     "heldout_nats_per_char", "baseline_heldout_nats_per_char", "held-out nats/char", 1.0, 4,
     "Kneser-Ney 5-gram", "bash tools/train_gpt.sh --arch llama --kv-heads 2"),
]
BF16 = ("spam", "fortunes", "translation", "gpt", "gpt_llama")  # the rows with a bf16 twin


def rows():
    """ROWS with each bf16 twin after its f32 row, as (precision, row)."""
    out = []
    for row in ROWS:
        out.append(("f32", row))
        if row[0] in BF16:
            folder, task, *mid, command = row
            out.append(("bf16", (f"{folder}_bf16", f"{task}, bf16 autocast", *mid,
                                 f"{command} --precision bf16")))
    return out


def load(runs, folder):
    out = []
    for path in sorted(glob.glob(os.path.join(runs, folder, "seed*", "metrics.json"))):
        with open(path, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def spread(values, scale, decimals, unit_pct):  # metrics.json: accuracies 0..1, exact match in %
    v = [x * scale for x in values]
    pct = " %" if unit_pct else ""
    mean = f"{statistics.fmean(v):.{decimals}f}{pct}"
    if len(v) == 1:
        return mean
    return f"{mean} [{min(v):.{decimals}f}, {max(v):.{decimals}f}]"


def minutes(seconds):
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def table(runs, kept=None):
    """kept: task -> the line an earlier table printed, kept for a row with no run here."""
    kept = kept or {}
    lines = ["| task | baseline, same split | result: mean [min, max] over seeds | training time |"
             " command |",
             "|---|---|---|---|---|"]
    for precision, row in rows():
        folder, task, key, base_key, unit, scale, dec, base_name, command = row
        ms = [m for m in load(runs, folder) if isinstance(m.get(key), (int, float))
              and m.get("precision", "f32") == precision]
        if not ms:
            if task in kept:  # measured by an earlier run of this script on another machine
                lines.append(kept[task])
            continue
        pct = unit.endswith(" %")
        unit = unit[:-2] if pct else unit
        seeds = ", ".join(str(m.get("seed", m.get("training", {}).get("seed", "?"))) for m in ms)
        result = f"{unit} {spread([m[key] for m in ms], scale, dec, pct)} (seed{'s' if len(ms) > 1 else ''} {seeds})"
        base = "—"  # the program computes none
        if base_key:
            base = f"{base_name} {spread([m[base_key] for m in ms], scale, dec, pct)}"
        times = [m["train_seconds"] for m in ms if isinstance(m.get("train_seconds"), (int, float))]
        env = [m.get("environment", {}) for m in ms]
        threads = sorted({str(e.get("threads", "?")) for e in env})
        world = sorted({int(e.get("world_size", 1)) for e in env})
        cores = sorted({e.get("blas_core", "?") for e in env})
        where = f"{'/'.join(threads)} thread{'s' if threads != ['1'] else ''}"
        if world != [1]:
            where = f"{'/'.join(map(str, world))} processes × {where}"
        time = f"{minutes(statistics.fmean(times))} ({where}, OpenBLAS {', '.join(cores)})" if times else ""
        lines.append(f"| {task} | {base} | {result} | {time} | `{command}` |")
    return "\n".join(lines) + "\n"


def pairs(runs):
    """Per seed, each bf16 row beside its float32 row: seed | float32 | bf16 | bf16 - float32."""
    lines = ["| task | seed | float32 | bf16 | bf16 − float32 |", "|---|---|---|---|---|"]
    for row in ROWS:
        folder, task, key, _, unit, scale, dec, _, _ = row
        if folder not in BF16:
            continue
        got = {}
        for precision, f in (("f32", folder), ("bf16", f"{folder}_bf16")):
            for m in load(runs, f):
                if isinstance(m.get(key), (int, float)) and m.get("precision", "f32") == precision:
                    got.setdefault(m.get("seed", m.get("training", {}).get("seed")), {})[precision] = m[key] * scale
        for seed in sorted(k for k in got if k is not None):
            a, b = got[seed].get("f32"), got[seed].get("bf16")
            cell = lambda v: "—" if v is None else f"{v:.{dec}f}"
            diff = "—" if a is None or b is None else f"{b - a:+.{dec}f}"
            lines.append(f"| {task} ({unit}) | {seed} | {cell(a)} | {cell(b)} | {diff} |")
    return "\n".join(lines) + "\n"


def old_rows(path):
    """task -> line of the table between the markers of `path` (empty when absent)."""
    begin, end = "<!-- results: begin -->", "<!-- results: end -->"
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except FileNotFoundError:
        return {}
    if begin not in doc or end not in doc:
        return {}
    block = doc.split(begin, 1)[1].split(end, 1)[0]
    return {line.split("|")[1].strip(): line for line in block.splitlines()
            if line.startswith("| ") and not line.startswith("| task ")}


def write(path, text):
    begin, end = "<!-- results: begin -->", "<!-- results: end -->"
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        sys.exit(f"results.py: {path} has no '{begin}' ... '{end}' block")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{text}{end}{tail}"
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)  # atomic: a kill leaves the old file or the new one


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default="runs/results")
    ap.add_argument("--write", metavar="FILE")
    ap.add_argument("--pairs", action="store_true",
                    help="print each bf16 run beside the float32 run of its seed instead")
    a = ap.parse_args()
    if a.pairs:
        sys.stdout.write(pairs(a.runs))
        return
    text = table(a.runs, old_rows(a.write) if a.write else None)
    if text.count("\n") <= 2:
        sys.exit(f"results.py: no finished run under {a.runs} (run bash tools/results.sh)")
    if a.write:
        write(a.write, text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
