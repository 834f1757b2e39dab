#!/usr/bin/env python3
"""The longest functions in the crate's sources, and a gate: no function in src/ may exceed a line limit.

    scripts/fn-lengths.py [--top N] [--max LINES] [PATH ...]    (default: src/, top 15, max 100)

A function's length runs from the line of its `fn` keyword to the line of the brace that closes its body, counted
by matching braces outside comments, strings (raw ones too) and character literals. Test functions count like any
other. Exits 1 when a function is longer than --max, naming it; prints the longest --top functions either way.
"""
import argparse
import os
import re
import sys

FN = re.compile(rb"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_mask(src: bytes) -> bytearray:
    """A copy of `src` with comments, strings and char literals blanked (newlines kept), so braces can be counted."""
    out = bytearray(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != 0x0A:
                out[k] = 0x20

    while i < n:
        c = src[i]
        if src.startswith(b"//", i):
            j = src.find(b"\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith(b"/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith(b"/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith(b"*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == ord("r") and re.match(rb'r(#*)"', src[i : i + 260]) and (i == 0 or not src[i - 1 : i].isalnum()):
            m = re.match(rb'r(#*)"', src[i:])
            close = b'"' + m.group(1)
            j = src.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            blank(i, j)
            i = j
        elif c == ord('"'):
            j = i + 1
            while j < n and src[j] != ord('"'):
                j += 2 if src[j] == ord("\\") else 1
            blank(i, j + 1)
            i = j + 1
        elif c == ord("'"):
            # A char literal ('x', '\n', '\u{..}', '{'), not a lifetime ('a).
            m = re.match(rb"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", src[i : i + 12], re.S)
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return out


def functions(path: str):
    """(name, first line, line count) of every function with a body in one file."""
    src = open(path, "rb").read()
    code = bytes(code_mask(src))
    for m in FN.finditer(code):
        j, depth = m.end(), 0
        # The body starts at the first `{` outside parentheses/brackets/angles before any `;` (a declaration).
        while j < len(code):
            ch = code[j]
            if ch in b"([":
                depth += 1
            elif ch in b")]":
                depth -= 1
            elif ch == ord(";") and depth == 0:
                j = -1
                break
            elif ch == ord("{") and depth == 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        level, k = 0, j
        while k < len(code):
            if code[k] == ord("{"):
                level += 1
            elif code[k] == ord("}"):
                level -= 1
                if level == 0:
                    break
            k += 1
        first = code.count(b"\n", 0, m.start()) + 1
        last = code.count(b"\n", 0, k) + 1
        yield m.group(1).decode(), first, last - first + 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("paths", nargs="*", default=["src"])
    args = ap.parse_args()
    found = []
    for root in args.paths:
        walk = [(root, [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
        for d, _, files in walk:
            for f in files:
                p = d if os.path.isfile(d) else os.path.join(d, f)
                if p.endswith(".rs"):
                    found += [(lines, p, name, first) for name, first, lines in functions(p)]
    found.sort(reverse=True)
    for lines, p, name, first in found[: args.top]:
        print(f"{lines:5}  {p}:{first}  {name}")
    over = [f for f in found if f[0] > args.max]
    for lines, p, name, first in over:
        print(f"too long: {p}:{first} `{name}` is {lines} lines (at most {args.max}): split it", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
