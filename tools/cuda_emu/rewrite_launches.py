#!/usr/bin/env python3
"""tools/cuda_emu/rewrite_launches.py — turns a .cu file into C++ for the host emulator.

    rewrite_launches.py SRC.cu OUT.cpp      write the rewritten copy (CMake runs this)
    rewrite_launches.py --list SRC.cu ...   print every launch found, change nothing

Four rewrites, everything else is copied as it is (a `#line` directive keeps compiler messages
and __FILE__/__LINE__ pointing at SRC, and each rewrite keeps the line count):

  kernel<T, 128>  <<<grid, block, smem, stream>>>  (a, b);
    -> ::tg_emu::launch("kernel<T, 128>", TG_EMU_KEY(kernel<T, 128>),
                        ::tg_emu::Cfg(grid, block, smem, stream),
                      [](auto... tg_a) { kernel<T, 128>(tg_a...); }, a, b);
  extern __shared__ __align__(16) float smem[];
    -> float* smem = reinterpret_cast<float*>(::tg_emu::dynamic_smem());
  __shared__ double a[32], b[8];        (the macro __shared__ makes them statics)
    -> the same, then on the same line
       [[maybe_unused]] const bool tg_emu_shared_1 = ::tg_emu::shared_poison(a); (and b):
       the first thread of each block to get there fills them with 0xff bytes (NaN), as
       shared memory holds no earlier block's values on a GPU
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(d), "l"(s), "n"(4), "r"(n));
    -> ::tg_emu::cp_async(d, s, 4, n);   (and commit_group, wait_group N, wait_all: PTX_TABLE)
       inline PTX the table does not know is an error naming it

The kernel is a (qualified) name with optional template arguments, as in every cuda/*.cu.
TG_EMU_KEY is the kernel's address for the dynamic shared memory opt-in check; it is null (no
check) for a function template whose arguments the launch deduces. The arguments are forwarded
through a function template, so a braced list must name its type (`Foo{1, 2}`, not `{1, 2}`).
Comments and string literals are skipped. Anything else before
`<<<` is an error, reported with the file and line.
"""
import pathlib
import re
import sys


def mask_comments_and_strings(s):
    """s with comments and string/char literal contents replaced by spaces (newlines kept)."""
    out = list(s)
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith('//', i):
            j = s.find('\n', i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = ' '
            i = j
        elif s.startswith('/*', i):
            j = s.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if s[k] != '\n':
                    out[k] = ' '
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and s[j] != c:
                j += 2 if s[j] == '\\' else 1
            for k in range(i + 1, min(j, n)):
                if s[k] != '\n':
                    out[k] = ' '
            i = j + 1
        else:
            i += 1
    return ''.join(out)


class RewriteError(Exception):
    pass


def line_of(s, pos):
    return s.count('\n', 0, pos) + 1


def callee_start(code, end):
    """Start of `name<targs>` that ends just before `end` (exclusive), skipping whitespace."""
    i = end
    while i > 0 and code[i - 1].isspace():
        i -= 1
    if i > 0 and code[i - 1] == '>':  # template arguments: balanced <...> backwards
        depth = 0
        while i > 0:
            i -= 1
            if code[i] == '>':
                depth += 1
            elif code[i] == '<':
                depth -= 1
                if depth == 0:
                    break
        if depth != 0:
            return None
        while i > 0 and code[i - 1].isspace():
            i -= 1
    j = i
    while j > 0 and (code[j - 1].isalnum() or code[j - 1] in '_:'):
        j -= 1
    if j == i or not (code[j].isalpha() or code[j] in '_:'):
        return None
    return j


def matching_paren(code, i):
    """Index of the ) closing the ( at code[i], with (), [] and {} nested inside."""
    pairs = {'(': ')', '[': ']', '{': '}'}
    stack = []
    for k in range(i, len(code)):
        ch = code[k]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ')]}':
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return k
    return None


def config_end(code, i):
    """Index of the `>>>` closing the `<<<` at i, outside any brackets."""
    stack = []
    k = i + 3
    while k < len(code):
        if not stack and code.startswith('>>>', k):
            return k
        ch = code[k]
        if ch in '([{':
            stack.append(ch)
        elif ch in ')]}':
            if not stack:
                return None
            stack.pop()
        k += 1
    return None


def collapse(text):
    return ' '.join(text.split())


def rewrite_launches(src, code, path):
    """(new source, list of (line, kernel)) with every launch rewritten."""
    out, launches, pos = [], [], 0
    for m in re.finditer(r'<<<', code):
        i = m.start()
        if i < pos:
            continue
        line = line_of(code, i)
        start = callee_start(code, i)
        if start is None:
            raise RewriteError(f'{path}:{line}: cannot find the kernel name before <<<')
        cfg_end = config_end(code, i)
        if cfg_end is None:
            raise RewriteError(f'{path}:{line}: no >>> closing the launch configuration')
        k = cfg_end + 3
        while k < len(code) and code[k].isspace():
            k += 1
        if k >= len(code) or code[k] != '(':
            raise RewriteError(f'{path}:{line}: expected ( after >>>')
        close = matching_paren(code, k)
        if close is None:
            raise RewriteError(f'{path}:{line}: unbalanced kernel arguments')
        semi = close + 1
        while semi < len(code) and code[semi].isspace():
            semi += 1
        if semi >= len(code) or code[semi] != ';':
            raise RewriteError(f'{path}:{line}: expected ; after the kernel arguments')
        name_text = src[start:i]
        name = collapse(code[start:i])
        cfg = src[i + 3:cfg_end]
        args = src[k + 1:close]  # verbatim, newlines included
        # Newlines of the parts that do not survive verbatim, to keep the line count.
        gap = '\n' * (name_text.count('\n') + src.count('\n', cfg_end, k + 1) +
                      src.count('\n', close, semi + 1))
        quoted = name.replace('\\', '\\\\').replace('"', '\\"')
        call = (f'::tg_emu::launch("{quoted}", TG_EMU_KEY({name}), ::tg_emu::Cfg({cfg}), '
                f'[](auto... tg_a) {{ {name}(tg_a...); }}')
        call += (', ' + args if args.strip() else args) + ');' + gap
        out.append(src[pos:start])
        out.append(call)
        pos = semi + 1
        launches.append((line, name))
    out.append(src[pos:])
    return ''.join(out), launches


DYN_SMEM = re.compile(r'extern\s+__shared__\s+([^;\[\]]+?)\s*\[\s*\]\s*;')
ALIGN = re.compile(r'(__align__|alignas)\s*\(\s*\w+\s*\)')


def rewrite_dynamic_smem(src, code, path):
    out, pos = [], 0
    for m in DYN_SMEM.finditer(code):
        decl = collapse(ALIGN.sub(' ', code[m.start(1):m.end(1)]))
        parts = re.match(r'(.*?)\s*\b(\w+)$', decl)
        if not parts or not parts.group(1):
            raise RewriteError(f'{path}:{line_of(code, m.start())}: cannot parse {m.group(0)}')
        ty, var = parts.group(1), parts.group(2)
        gap = '\n' * src.count('\n', m.start(), m.end())
        out.append(src[pos:m.start()])
        out.append(f'{ty}* {var} = reinterpret_cast<{ty}*>(::tg_emu::dynamic_smem());{gap}')
        pos = m.end()
    out.append(src[pos:])
    return ''.join(out)


STATIC_SMEM = re.compile(r'(?<!\w)__shared__(?!\w)')


def split_top(text, sep=','):
    """text split at `sep` outside (), [], {} and <>."""
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([{<':
            depth += 1
        elif ch in ')]}>':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return parts


def declarator_name(decl):
    """The variable a declarator names: the identifier before its first [ or =, else the last."""
    head = re.split(r'[\[=]', decl, maxsplit=1)[0]
    names = re.findall(r'[A-Za-z_]\w*', head)
    return names[-1] if names else None


def rewrite_static_smem(src, code, path):
    out, pos, count = [], 0, 0
    for m in STATIC_SMEM.finditer(code):
        if re.search(r'extern\s*$', code[:m.start()]):
            continue  # dynamic shared memory: rewritten before
        end = code.find(';', m.end())
        if end < 0:
            raise RewriteError(f'{path}:{line_of(code, m.start())}: no ; after __shared__')
        decl = ALIGN.sub(' ', code[m.end():end])
        names = [declarator_name(d) for d in split_top(decl)]
        if not all(names):
            raise RewriteError(f'{path}:{line_of(code, m.start())}: cannot parse the __shared__ '
                               'declaration')
        poison = ''
        for name in names:
            count += 1
            poison += (f' [[maybe_unused]] const bool tg_emu_shared_{count} = '
                       f'::tg_emu::shared_poison({name});')
        out.append(src[pos:end + 1])
        out.append(poison)
        pos = end + 1
    out.append(src[pos:])
    return ''.join(out)


# Inline PTX the emulator runs: (regex over the instruction text, whitespace collapsed; the call,
# with {0}, {1}... the asm operands in order and {g1}... the regex groups).
PTX_TABLE = [
    (r'cp\.async\.c[ag]\.shared\.global(?:\.L2::\d+B)? \[%0\], \[%1\], %2, %3;',
     '::tg_emu::cp_async({0}, {1}, {2}, {3});'),
    (r'cp\.async\.c[ag]\.shared\.global(?:\.L2::\d+B)? \[%0\], \[%1\], %2;',
     '::tg_emu::cp_async({0}, {1}, {2}, {2});'),
    (r'cp\.async\.commit_group;', '::tg_emu::cp_async_commit();'),
    (r'cp\.async\.wait_group %0;', '::tg_emu::cp_async_wait({0});'),
    (r'cp\.async\.wait_group (\d+);', '::tg_emu::cp_async_wait({g1});'),
    (r'cp\.async\.wait_all;', '::tg_emu::cp_async_wait(0);'),
]
ASM = re.compile(r'(?<!\w)(?:asm|__asm__)(?:\s+(?:volatile|__volatile__))?\s*\(')


def split_ranges(code, lo, hi, sep):
    """[lo, hi) of code split at `sep` outside brackets, as (start, end) pairs."""
    out, depth, start = [], 0, lo
    for k in range(lo, hi):
        ch = code[k]
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        elif ch == sep and depth == 0:
            out.append((start, k))
            start = k + 1
    out.append((start, hi))
    return out


def rewrite_asm(src, code, path):
    out, pos = [], 0
    for m in ASM.finditer(code):
        line = line_of(code, m.start())
        close = matching_paren(code, m.end() - 1)
        semi = close + 1 if close is not None else -1
        while 0 <= semi < len(code) and code[semi].isspace():
            semi += 1
        if close is None or semi >= len(code) or code[semi] != ';':
            raise RewriteError(f'{path}:{line}: cannot parse the asm statement')
        sections = split_ranges(code, m.end(), close, ':')
        ptx = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', src[sections[0][0]:sections[0][1]]))
        ptx = ' '.join(ptx.replace('\\n', ' ').replace('\\t', ' ').split())
        operands = []
        for lo, hi in sections[1:3]:
            for a, b in split_ranges(code, lo, hi, ','):
                text = src[a:b].strip()
                if text:
                    operands.append(re.sub(r'^"[^"]*"\s*\((.*)\)$', r'\1', text, flags=re.S))
        for pattern, call in PTX_TABLE:
            pm = re.fullmatch(pattern, ptx)
            if pm:
                groups = {f'g{i}': g for i, g in enumerate(pm.groups(), 1)}
                stmt = call.format(*operands, **groups)
                break
        else:
            raise RewriteError(f'{path}:{line}: inline PTX "{ptx}" is not emulated '
                               '(add it to PTX_TABLE in tools/cuda_emu/rewrite_launches.py)')
        out.append(src[pos:m.start()])
        out.append(stmt + '\n' * src.count('\n', m.start(), semi + 1))
        pos = semi + 1
    out.append(src[pos:])
    return ''.join(out)


def rewrite(path):
    src = pathlib.Path(path).read_text()
    src = rewrite_asm(src, mask_comments_and_strings(src), path)
    new, launches = rewrite_launches(src, mask_comments_and_strings(src), path)
    new = rewrite_dynamic_smem(new, mask_comments_and_strings(new), path)
    new = rewrite_static_smem(new, mask_comments_and_strings(new), path)
    if '<<<' in mask_comments_and_strings(new):
        raise RewriteError(f'{path}: a <<< was left after rewriting')
    return new, launches


def main(argv):
    try:
        if argv[1:2] == ['--list']:
            for path in argv[2:]:
                _, launches = rewrite(path)
                for line, name in launches:
                    print(f'{path}:{line}: {name}')
            return 0
        if len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        src, dst = argv[1], argv[2]
        new, _ = rewrite(src)
        abs_src = str(pathlib.Path(src).resolve())
        header = (f'// Generated from {abs_src} by tools/cuda_emu/rewrite_launches.py: do not edit.\n'
                  '#include <cuda_runtime.h>  // nvcc includes it implicitly\n'
                  f'#line 1 "{abs_src}"\n')
        pathlib.Path(dst).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(dst).write_text(header + new)
        return 0
    except RewriteError as e:
        print(f'rewrite_launches.py: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
