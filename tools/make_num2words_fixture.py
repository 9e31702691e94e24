#!/usr/bin/env python3
"""Writes tests/fixtures/examples/translation/num2words.tsv: the reference English and French
number words for the translation example's generator (examples/translation/numbers.cpp).

Run with Debian's python3-num2words: /usr/bin/python3 tools/make_num2words_fixture.py
Deterministic: every number below 200, the edge cases of hundreds and thousands in both
languages, and seeded random numbers from every magnitude (about 3,000 rows).
Columns: number, English, French (tab-separated, UTF-8, one header line)."""

import os
import random

from num2words import num2words

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "examples", "translation", "num2words.tsv")


def numbers():
    picked = set(range(200))
    # Multiples of 10 and 100 below 1000, and the n-hundred-and-one / -eighty / -ninety-one.
    for h in range(10):
        for low in (0, 1, 10, 11, 20, 21, 71, 80, 81, 90, 91, 99):
            picked.add(h * 100 + low)
    # Every thousands prefix that is special, combined with special remainders.
    prefixes = [1, 2, 10, 11, 20, 21, 31, 61, 70, 71, 72, 80, 81, 90, 91, 99, 100, 101, 180,
                200, 201, 221, 271, 280, 281, 300, 571, 800, 880, 891, 900, 999]
    lows = [0, 1, 2, 21, 71, 80, 81, 99, 100, 101, 180, 200, 201, 280, 300, 999]
    for p in prefixes:
        for low in lows:
            picked.add(p * 1000 + low)
    picked.add(999999)
    rng = random.Random(20240601)
    # Seeded random numbers in every magnitude: [10^k, 10^(k+1)).
    for k in range(6):
        lo, hi = 10 ** k, 10 ** (k + 1) - 1
        for _ in range(350):
            picked.add(rng.randint(lo, hi))
    return sorted(picked)


def main():
    rows = ["number\tenglish\tfrench"]
    for n in numbers():
        rows.append(f"{n}\t{num2words(n)}\t{num2words(n, lang='fr')}")
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows) - 1} rows to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
