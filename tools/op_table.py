#!/usr/bin/python3
"""tools/op_table.py — writes docs/ops.md, the table of every op tapegrad's public headers declare
(ops/ops.hpp, ops/attention/attention.hpp, ops/functional/functional.hpp, and ops/pending_*.hpp until their
declarations are folded into ops.hpp): each function of namespace tg (or a public namespace
inside it) that returns tensors, found by a scan of the headers' braces, so a new op of any
return type gets its row. For each: its PyTorch name, the file that defines it, whether it has a
gradient, whether tools/gradcheck and tests/ops/test_parity.cpp (PyTorch fixtures) cover it, and
on CUDA whether the parity suite (tests/cuda/) runs it against the CPU and whether it goes
through CPU copies (`via_cpu`).
Every column is read from the sources, so the table cannot claim what the code does not hold;
tests/ops/test_op_table.cpp reads the headers with a scan of its own and fails naming any
declared op without a row, or a row for an op no longer declared (then run this script again).

  /usr/bin/python3 tools/op_table.py            rewrites docs/ops.md
  /usr/bin/python3 tools/op_table.py --check    exits 1 when docs/ops.md is stale
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The public op headers; ops/pending_*.hpp hold declarations waiting to be folded into ops.hpp.
HEADERS = ["ops/ops.hpp", "ops/index/index.hpp", "ops/attention/attention.hpp",
           "ops/functional/functional.hpp"]
# Return types of namespace-level functions that are not ops (shape helpers, switches): every
# other function declared in namespace tg, or in a public namespace inside it (named with its
# prefix: func::vjp), is an op and gets a row.
NOT_OP_RETURNS = {"void", "bool", "Shape", "int64_t", "int", "size_t", "double", "float",
                  "std::string", "DType", "Device", "const char*", "std::vector<int64_t>"}
# Namespaces inside tg that hold no public ops.
PRIVATE_NAMESPACES = {"detail", "indexing"}
# Ops without a gradient (bool or integer results, sampling); everything else is differentiable.
NO_GRAD = {"eq", "ne", "lt", "le", "gt", "ge", "argmax", "argmin", "argsort", "isnan", "isinf",
           "isfinite", "isclose", "logical_not", "logical_and", "logical_or", "logical_xor", "all",
           "any", "multinomial", "one_hot", "floor", "ceil", "round", "trunc", "sign", "nonzero",
           "floor_divide"}  # torch 1.13: "derivative for aten::floor_divide is not implemented"
# Families without a gradient, for ops not yet named above (bitwise_and, logical_*, is*, arg*).
NO_GRAD_PREFIXES = ("bitwise_", "logical_", "is", "arg")
# Functions that differentiate a function (torch.autograd.functional), not ops with a gradient.
DERIVATIVES = {"func::vjp", "func::jvp", "func::vhp", "func::hvp", "func::jacobian",
               "func::hessian"}
# Where tapegrad's name differs from PyTorch's.
TORCH = {"rdiv": "torch.div(a, x) (a scalar)", "rsub": "torch.rsub", "apply_rotary":
         "(Hugging Face's apply_rotary_pos_emb)", "rearrange": "einops.rearrange",
         "attention": "(the seed articles' attention)", "additive_attention": "(Bahdanau attention)",
         "scaled_dot_product_attention": "F.scaled_dot_product_attention",
         "scaled_dot_product_attention_packed": "(F.scaled_dot_product_attention on packed qkv)",
         "scaled_dot_product_attention_kv_packed": "(F.scaled_dot_product_attention, packed kv)",
         "sum_to": "Tensor.sum_to_size"}
FUNCTIONAL = {"softmax", "log_softmax", "gelu", "silu", "softplus", "leaky_relu", "elu", "selu",
              "celu", "mish", "hardswish", "hardsigmoid", "hardtanh", "relu6", "logsigmoid",
              "softsign", "glu", "layer_norm", "rms_norm", "embedding", "dropout", "cross_entropy",
              "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "nll_loss", "kl_div", "cosine_similarity",
              "normalize", "linear", "pad", "one_hot"}


def header_files():
    pending = sorted(os.path.relpath(p, ROOT)
                     for p in glob.glob(os.path.join(ROOT, "ops", "pending_*.hpp")))
    return HEADERS + pending


def strip_comments(text):
    """Comments, string contents and preprocessor lines removed."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)  # preprocessor lines


FUNC = re.compile(r"(?:template\s*<[^;{]*?>\s*)?(?:(?:inline|static|constexpr)\s+)*"
                  r"(?P<ret>[A-Za-z_][\w:<>, ]*?[\w>*&])\s*(?<![\w:])(?P<name>[a-z_]\w*)\s*\(",
                  re.S)


def op_of(statement, namespaces):
    """The op a namespace-level statement declares, or None."""
    if not namespaces or namespaces[0] != "tg" or PRIVATE_NAMESPACES & set(namespaces):
        return None
    m = FUNC.match(statement.strip())
    if not m:
        return None
    ret = re.sub(r"\s+", " ", m.group("ret")).strip()
    if ret in NOT_OP_RETURNS or ret.split()[0] in ("using", "struct", "class", "enum", "return"):
        return None
    return "::".join(namespaces[1:] + [m.group("name")])


def declarations(text):
    """The ops a header declares, in order. A scan of its braces keeps the statements at
    namespace level (a '{' inside parentheses is a default argument, not a body)."""
    stack, stmt, paren, found = [], "", 0, []
    for c in strip_comments(text):
        if any(kind == "block" for kind, _ in stack):  # inside a body: only its braces count
            if c == "{":
                stack.append(("block", []))
            elif c == "}":
                stack.pop()
            continue
        names = [n for _, ns in stack for n in ns]
        paren += (c == "(") - (c == ")")
        if c == "{" and paren == 0:
            m = re.fullmatch(r"\s*(?:inline\s+)?namespace\s+([\w:]+)\s*", stmt)
            stack.append(("ns", m.group(1).split("::")) if m else ("block", []))
            if not m:
                found.append(op_of(stmt, names))
            stmt = ""
        elif c in ";}" and paren == 0:
            if c == ";":
                found.append(op_of(stmt, names))
            else:
                stack.pop()
            stmt = ""
        else:
            stmt += c
    return [op for op in found if op]


def declared():
    names = []
    for h in header_files():
        with open(os.path.join(ROOT, h), encoding="utf-8") as f:
            for n in declarations(f.read()):
                if n not in names:
                    names.append(n)
    return names


def op_sources():
    """ops/*.cpp, then each op family's folder ops/<family>/*.cpp (not the kernels, cpu/)."""
    top = sorted(glob.glob(os.path.join(ROOT, "ops", "*.cpp")))
    rooms = sorted(p for p in glob.glob(os.path.join(ROOT, "ops", "*", "*.cpp"))
                   if os.path.basename(os.path.dirname(p)) != "cpu")
    return top + rooms


def defined_in(names):
    where = {}
    for path in op_sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n in names:
            short = n.split("::")[-1]
            defines = (r"^(?:template <[^>]*>\s*)?[A-Za-z_][\w:<>, ]*[\w>]&?\s+" + re.escape(short)
                       + r"\(")
            by_macro = r"^[A-Z][A-Z0-9_]*\(" + re.escape(short) + r"[,)]"  # TG_BITWISE(name, ...)
            if n not in where and (re.search(defines, text, re.M) or re.search(by_macro, text, re.M)):
                where[n] = os.path.relpath(path, ROOT)
    return where


def mentioned(path, names):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    return {n for n in names
            if re.search(r"(?<![A-Za-z_0-9.])" + re.escape(n.split("::")[-1]) + r"\(", text)}


def unary_list():
    """ops/kern/unary_list.inc's lines as (name, fn, the tg op its sample calls): the list defines
    its Plain and Round ops (ops/unary/unary.cpp), and its sample calls are gradcheck cases and CUDA
    parity rows (tools/unary_samples.hpp expands them)."""
    rows = []
    with open(os.path.join(ROOT, "ops", "kern", "unary_list.inc"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r'X\(\w+, (\w+), "[^"]*", \w+, \w+, (\w+), \w+, tg::(\w+)\(', line)
            if m:
                rows.append(m.groups())
    return rows


# via_cpu helpers that serve several ops.
VIA_HELPERS = {"triangle": ["tril", "triu"]}


def via_cpu(names):
    """Ops whose CUDA inputs run on CPU copies: the functions via_cpu calls in ops/*.cpp."""
    out = set()
    for path in op_sources():
        with open(path, encoding="utf-8") as f:
            for fn in re.findall(r"via_cpu\([^;]*?&(?:tg::)?([a-z_0-9]+)", f.read()):
                out |= set(VIA_HELPERS.get(fn, [fn])) & set(names)
    return out


def torch_name(n):
    if n in TORCH:
        return TORCH[n]
    if n.startswith("func::"):
        return "torch.autograd.functional." + n[len("func::"):]
    if n.endswith("_"):  # in-place writes are Tensor methods
        return "Tensor." + n
    return f"F.{n}" if n in FUNCTIONAL else f"torch.{n}"


def gradient(n):
    if n in DERIVATIVES:
        return "derivatives"
    return "no" if n in NO_GRAD or n.startswith(NO_GRAD_PREFIXES) else "yes"


def table():
    names = declared()
    where = defined_in(names)
    listed = unary_list()
    for name, fn, _ in listed:
        if fn in ("Plain", "Round") and name in names:
            where.setdefault(name, "ops/unary/unary.cpp")
    sampled = {op for _, _, op in listed}
    gc = set(sampled)
    for p in glob.glob(os.path.join(ROOT, "tools", "gradcheck", "*.cpp")):
        gc |= mentioned(os.path.relpath(p, ROOT), names)
    parity = mentioned("tests/ops/test_parity.cpp", names)
    on_gpu = set(sampled)
    for p in glob.glob(os.path.join(ROOT, "tests", "cuda", "*.cpp")):
        on_gpu |= mentioned(os.path.relpath(p, ROOT), names)
    copies = via_cpu(names)
    lines = ["# The op table",
             "",
             "Every op the public headers declare (`ops/ops.hpp`, `ops/attention/attention.hpp`, "
             "`ops/functional/functional.hpp`: each function of namespace tg that returns tensors), "
             "generated by `/usr/bin/python3 tools/op_table.py` from the sources "
             "(tests/ops/test_op_table.cpp reads the headers itself and fails naming any op "
             "without a row). *file*: where the op is defined (forward and backward side by "
             "side); *gradient*: differentiable, or a bool / integer / sampled result "
             "(*derivatives*: a function that differentiates a function); *gradcheck*: a case of "
             "`tools/gradcheck` (`--all` runs them in float64, and tests/tools fails when a "
             "differentiable op has none); *PyTorch fixture*: checked against torch 1.13 values in "
             "tests/ops/test_parity.cpp (the attention ops and layers have their own fixture "
             "tests, tests/ops/test_attention*.cpp, tests/nn/); *CUDA*: *parity* when the "
             "parity suite (tests/cuda/, on a GPU or the host emulator) runs the op on the device "
             "against the CPU, forward and backward; *CPU copies* when its CUDA inputs run on CPU "
             "copies (`via_cpu`, ops/core/cuda_dispatch.hpp) instead of device kernels. Every op takes "
             "CUDA tensors: ops without kernels of their own are composed of ops that have them. "
             "CUDA paths: docs/cuda.md.",
             "",
             "| op | PyTorch | file | gradient | gradcheck | PyTorch fixture | CUDA |",
             "|---|---|---|---|---|---|---|"]
    for n in names:
        lines.append(f"| `{n}` | {torch_name(n)} | {where.get(n, 'ops/ops.hpp (inline)')} | "
                     f"{gradient(n)} | {'yes' if n in gc else ''} | "
                     f"{'yes' if n in parity else ''} | "
                     f"{', '.join(w for w, c in (('parity', n in on_gpu), ('CPU copies', n in copies)) if c)} |")
    return "\n".join(lines) + "\n"


# docs/ops.md's hand-written part, after the generated table: kept as it is by every run.
KEPT = "\n## Where tapegrad differs from PyTorch 1.13"


def kept_part(path):
    """The hand-written tail of the existing docs/ops.md (from KEPT on), or ''."""
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text[text.index(KEPT):] if KEPT in text else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = os.path.join(ROOT, "docs", "ops.md")
    text = table() + kept_part(path)
    if a.check:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit("docs/ops.md is stale: run /usr/bin/python3 tools/op_table.py")
        return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"wrote {path}: {table().count(chr(10)) - 10} ops")


if __name__ == "__main__":
    main()
