"""bench/report.py — turns the rounds of bench/run.sh into one table.

Input lines: `<round> metric <name> <value> <unit>` (round 0 is the warm-up and is dropped);
anything else is ignored. For each row the table shows the medians over rounds of the tapegrad
value and of its baseline, and the ratio tapegrad / baseline computed per round, as median
[min, max]. A row's goal applies to the ratio ("ratio") or to the tapegrad value ("value").
Adding a row: append to ROWS; the metrics come from bench.cpp and bench_torch.py.
"""
import collections
import statistics
import sys

SIZES = (64, 128, 256, 512, 1024, 2048)

# (label, tapegrad metric, baseline metric, baseline name, goal, reference metric)
# goal: (what, op, bound) with what "ratio" (tapegrad / baseline) or "value" (tapegrad alone).
ROWS = []
for n in SIZES:
    ROWS.append((f"matmul f32 {n}^3 GFLOP/s", f"matmul.tg.{n}", f"matmul.blas.{n}", "sgemm",
                 ("ratio", ">=", 0.95), f"matmul.torch.{n}"))
ROWS += [
    ("mul 4 elems fwd us", "tiny.fwd.tg", "tiny.fwd.torch", "torch", None, None),
    ("mul 4 elems fwd+bwd us", "tiny.fwd_bwd.tg", "tiny.fwd_bwd.torch", "torch", ("value", "<=", 1.0), None),
    ("10 chained mul fwd+bwd us", "chain10.fwd_bwd.tg", "chain10.fwd_bwd.torch", "torch", None, None),
]


def load(path):
    data = collections.defaultdict(dict)  # metric -> round -> value
    units = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[1] == "metric" and parts[0] != "0":
                data[parts[2]][int(parts[0])] = float(parts[3])
                units[parts[2]] = parts[4]
    return data, units


def fmt_num(v):
    return "n/a" if v is None else (f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}")


def row_cells(row, data):
    label, a, b, b_name, goal, ref = row
    av, bv = data.get(a, {}), data.get(b, {})
    a_med = statistics.median(av.values()) if av else None
    b_med = statistics.median(bv.values()) if bv else None
    ratios = [av[r] / bv[r] for r in av if r in bv and bv[r] > 0]
    ratio = (f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
             if ratios else "n/a")
    verdict, goal_s = "", ""
    if goal:
        what, op, bound = goal
        goal_s = f"{what} {op} {bound:g}"
        x = statistics.median(ratios) if what == "ratio" and ratios else (a_med if what == "value" else None)
        if x is not None:
            ok = x >= bound if op == ">=" else x <= bound
            verdict = "ok" if ok else "MISS"
    ref_v = statistics.median(data[ref].values()) if ref and data.get(ref) else None
    ref_s = f"torch {fmt_num(ref_v)}" if ref else ""
    return [label, fmt_num(a_med), f"{fmt_num(b_med)} {b_name}", ratio, goal_s, verdict, ref_s]


def main():
    data, _ = load(sys.argv[1])
    rounds = sorted({r for v in data.values() for r in v})
    head = ["row", "tapegrad", "baseline", "tg/base median [min, max]", "goal", "", "reference"]
    rows = [r for r in ROWS if r[1] in data or r[2] in data]  # a FILTER run shows its rows only
    table = [head] + [row_cells(r, data) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    note = f", {sys.argv[2]}" if len(sys.argv) > 2 else ""
    print(f"tapegrad benchmarks: {len(rounds)} rounds, 1 thread{note}; medians over rounds; ratio = tapegrad / "
          "baseline per round (GFLOP/s: higher is better; us: lower is better)")
    for i, line in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) if j in (1, 2) else c.ljust(w)
                        for j, (c, w) in enumerate(zip(line, widths))).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
