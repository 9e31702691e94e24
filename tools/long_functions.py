#!/usr/bin/env python3
"""tools/long_functions.py — lists the C++ / CUDA functions longer than a limit (STYLE habit 12:
functions under ~60 lines), longest first: lines from the signature to the closing brace.

    /usr/bin/python3 tools/long_functions.py [--limit 60] [--tests] [DIR ...]

Default folders: the library and examples (autograd ops nn cuda examples tools bench); --tests
adds tests/. A function is a brace block at namespace or class scope whose header ends in `)`
(with qualifiers, a trailing return type or a constructor's initialiser list), so TEST_CASE
bodies count as functions too; lambdas and local classes count toward their function.
Deliberately not here: a real C++ parser (macros that open braces at namespace scope can fool it).
"""
import argparse
import os
import re
import sys

SOURCE = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".inc")
SCOPE = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|enum|extern\s+\"C\")\b",
                   re.S)
FUNC_TAIL = re.compile(
    r"\)\s*(?:const|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&&|&|throw\s*\(\s*\)|"
    r"->\s*[\w:<>,\s*&\[\]]+|\s)*$", re.S)
CTOR_INIT = re.compile(r"\)\s*(?:noexcept\s*)?:[^:].*[)}]\s*$", re.S)


def strip(text):
    """Comments and string / char literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isdigit():
                out.append(c)  # a digit separator: 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(s, i):
    """Index of the brace closing the one at i."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def name_of(header):
    head = re.sub(r"\s+", " ", re.sub(r"__launch_bounds__\s*\([^)]*\)", "", header)).strip()
    paren = head.find("(")
    before = head[:paren] if paren >= 0 else head
    m = re.search(r"([~\w:]+(?:<[^<>]*>)?(?:operator\s*\S+)?)\s*$", before)
    return m.group(1) if m else head[:60]


def functions(path):
    s = strip(open(path, encoding="utf-8", errors="replace").read())
    line_at = [0] * (len(s) + 1)
    ln = 1
    for k, ch in enumerate(s):
        line_at[k] = ln
        if ch == "\n":
            ln += 1
    line_at[len(s)] = ln
    found = []
    seg_start, i = 0, 0
    while i < len(s):
        c = s[i]
        if c == ";" or c == "}":
            seg_start = i + 1
        elif c == "{":
            header = s[seg_start:i]
            h = header.strip()
            h_noattr = re.sub(r"^\s*#.*$", "", h, flags=re.M).strip()
            if SCOPE.match(h_noattr) or h_noattr.endswith(("public:", "private:", "protected:")):
                seg_start = i + 1  # enter the scope
            elif FUNC_TAIL.search(h_noattr) or CTOR_INIT.search(h_noattr):
                end = matching(s, i)
                off = seg_start + (len(header) - len(header.lstrip()))
                # the header's own first line (past preprocessor lines and labels)
                start_line = line_at[off]
                for hl in header[off - seg_start:].split("\n"):
                    if hl.strip().startswith("#") or re.fullmatch(r"\s*(public|private|protected)\s*:\s*", hl):
                        start_line += 1
                    else:
                        break
                found.append((line_at[end] - start_line + 1, start_line, name_of(h_noattr)))
                i = end
                seg_start = end + 1
            else:
                i = matching(s, i)  # an initialiser at namespace / class scope
        i += 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--tests", action="store_true", help="include tests/")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = a.dirs or ["autograd", "ops", "nn", "cuda", "examples", "tools", "bench"]
    if a.tests and not a.dirs:
        dirs.append("tests")
    rows = []
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = sorted(x for x in subdirs if x not in ("fixtures", "build"))
            for f in sorted(files):
                if f.endswith(SOURCE):
                    p = os.path.join(base, f)
                    for n, line, name in functions(p):
                        if n > a.limit:
                            rows.append((n, os.path.relpath(p, root), line, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for n, p, line, name in rows:
        print(f"{n:5d}  {p}:{line}  {name}")
    print(f"{len(rows)} functions over {a.limit} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
