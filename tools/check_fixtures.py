#!/usr/bin/python3
"""tools/check_fixtures.py — reruns the fixture generators into a scratch directory and compares
what they write with the committed tests/fixtures/<family>/<case>.safetensors, tensor by tensor.

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/check_fixtures.py [generator ...]
(generators: make_fixtures, make_nn_fixtures, make_indexing_fixtures, make_mha_fixtures,
make_transformer_fixtures, make_higher_order_fixtures, make_reduce_fixtures,
make_integer_fixtures, make_half_fixtures, make_half_matmul_fixtures, make_half_fixtures_rows,
make_lora_fixtures, make_autocast_fixtures; default all; make_hf_fixtures writes model folders,
compared by its own test). For each case file it prints "identical" (the same bytes), or
each tensor whose dtype, shape or bytes differ, with the largest absolute difference and how many
elements differ, and each tensor or metadata key on one side only. Exit status 1 when anything
differs. It never writes into tests/fixtures: to accept new values, run the generator itself.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
COMMITTED = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
GENERATORS = ["make_fixtures", "make_nn_fixtures", "make_indexing_fixtures", "make_mha_fixtures",
              "make_transformer_fixtures", "make_higher_order_fixtures", "make_reduce_fixtures",
              "make_integer_fixtures", "make_half_fixtures", "make_half_matmul_fixtures",
              "make_half_fixtures_rows", "make_lora_fixtures", "make_autocast_fixtures"]


def case_files(root):
    """family/case.safetensors paths under root; of safetensors/, only the generated subfolders
    (its top-level files test the reader itself and are written by make_safetensors_fixture.py)."""
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if f.endswith(".safetensors") and os.path.dirname(rel) != "safetensors":
                out.append(rel)
    return sorted(out)


def tensor_diff(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.tobytes() == b.tobytes():
        return None
    if a.dtype.kind == "f":
        bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))[bad]
        return f"{int(bad.sum())} of {a.size} elements differ, max |diff| {d.max():.3g}"
    return f"{int((a != b).sum())} of {a.size} elements differ"


def compare(rel, scratch):
    """Lines describing every difference of one case file (empty when identical)."""
    new_path, old_path = os.path.join(scratch, rel), os.path.join(COMMITTED, rel)
    if not os.path.exists(old_path):
        return ["not committed"]
    with open(new_path, "rb") as f, open(old_path, "rb") as g:
        if f.read() == g.read():
            return []
    (new, new_meta), (old, old_meta) = fixture_io.read(new_path), fixture_io.read(old_path)
    lines = [f"tensor {n}: only {'generated' if n in new else 'committed'}"
             for n in sorted(set(new) ^ set(old))]
    for n in sorted(set(new) & set(old)):
        d = tensor_diff(new[n], old[n])
        if d:
            lines.append(f"tensor {n}: {d}")
    for k in sorted(set(new_meta) | set(old_meta)):
        if new_meta.get(k) != old_meta.get(k):
            lines.append(f"metadata {k}: {new_meta.get(k)!r} vs committed {old_meta.get(k)!r}")
    return lines or ["same tensors and metadata, different bytes (tensor order or padding)"]


def main():
    gens = sys.argv[1:] or GENERATORS
    status = 0
    for gen in gens:
        with tempfile.TemporaryDirectory(prefix="tg_fixtures_") as scratch:
            subprocess.run([sys.executable, os.path.join(HERE, gen + ".py"), "--out", scratch],
                           check=True, stdout=subprocess.DEVNULL)
            files = case_files(scratch)
            same = 0
            for rel in files:
                lines = compare(rel, scratch)
                if not lines:
                    same += 1
                    continue
                status = 1
                print(f"{gen}: {rel}")
                for line in lines:
                    print("    " + line)
            print(f"{gen}: {same} of {len(files)} case files identical to the committed ones")
    return status


if __name__ == "__main__":
    sys.exit(main())
