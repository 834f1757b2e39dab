#!/usr/bin/env python3
"""The module import graph of src/, drawn from the code: which module imports which.

Each file of src/ is one node, named by its module path (`src/txn/apply.rs` is `txn::apply`, `src/txn/mod.rs` is
`txn`; `src/main.rs` is `main`, the CLI). An edge A -> B is any `crate::...` path in A (a `use`, a `pub use` or a
path written inline such as `crate::names::shown(..)` or `super::x::f(..)`), a top-level `use super::...` / `use
self::...` line, or a `use child::...` line of a folder's `mod.rs`, that names the module B or something in it; the
longest module path that the named path starts with wins, so `crate::workspace::fs::Dir` is an edge to
`workspace::fs`, not to `workspace`. Comments are skipped, and so is everything from a file's first top-level
`#[cfg(test)]` on, and files that are test modules (`tests.rs`, `*_tests.rs`): tests may reach any layer. `main.rs`
names the library as `local_llm_delegator::`.

It prints every circle (a strongly connected set of modules, with one cycle through it; an import of a module's own
parent or ancestor, how a module folder's children see its items, does not count) and every import from a lower
layer to a higher one (the layers are defined below, from the ground floor up; a module's layer is that of the
longest prefix listed), then the graph: as text (`A -> B, C`, the default) or as DOT (`--dot`, for Graphviz). Exits
1 when there is a circle, 2 when there is none but a lower layer imports a higher one or a module is in no layer,
else 0.

    scripts/import-graph.py            # circles, layer violations, the graph as text
    scripts/import-graph.py --dot | dot -Tsvg > graph.svg
    scripts/import-graph.py --quiet    # only circles and violations
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
CRATE = "local_llm_delegator"

# From the ground floor up. A module may import its own layer or lower ones, never a higher one.
LAYERS = [
    ("ground floor", ["error", "names", "screen", "digest", "secret"]),
    # What this machine can do to confine a check: bubblewrap found and probed, the launch it makes (imports only
    # the ground floor), so that the policy's machine-dependent defaults can ask it.
    ("machine", ["confine"]),
    ("patch engine", ["patch"]),
    ("workspace/policy", ["workspace", "policy", "trust", "project"]),
    # The transaction, and what a request runs besides it: the checks (confined, in a sandbox copy) and the model.
    (
        "txn",
        ["txn", "checks", "sandbox"]
        + ["prompt", "locate_rank", "provider", "task", "proposal", "ledger", "spill", "payoff"],
    ),
    ("service", ["service", "calibrate", "doctor"]),
    ("mcp/cli", ["mcp", "main", "lib", "render"]),
]


def module_of(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


def sources():
    for path in sorted(SRC.rglob("*.rs")):
        if path.name == "tests.rs" or path.name.endswith("_tests.rs"):
            continue
        yield path


PATH_RE = re.compile(r"\b(crate|%s)::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)" % CRATE)
GROUP_RE = re.compile(r"\b(crate|%s)::((?:[a-z_][a-z0-9_]*::)*)\{([^}]*)\}" % CRATE)
SUPER_RE = re.compile(r"^(?:pub(?:\([a-z]+\))? )?use (super|self)::([A-Za-z_][A-Za-z0-9_:]*|\{[^}]*\}|\*)")
# `use child::..` in a module folder's `mod.rs`: a path relative to the module itself.
CHILD_RE = re.compile(r"^(?:pub(?:\([a-z]+\))? )?use ([a-z_][a-z0-9_]*)::")


def code_lines(path: Path):
    """The file's lines that are code, up to its first top-level `#[cfg(test)]`."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#[cfg(test)]"):
            return
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        yield line.split(" //")[0]


def resolve(named: str, modules: set) -> str | None:
    """The longest module path `named` (`a::b::C`) starts with."""
    parts = named.split("::")
    for n in range(len(parts), 0, -1):
        cand = "::".join(parts[:n])
        if cand in modules:
            return cand
    return None


def parent(module: str, path: Path) -> str:
    """What `super` names in the file `path` of `module`."""
    return "::".join(module.split("::")[:-1])


def edges_of(path: Path, module: str, modules: set) -> set:
    out = set()
    text = "\n".join(code_lines(path))
    named = []
    for m in GROUP_RE.finditer(text):
        base = m.group(2)
        for item in m.group(3).split(","):
            item = item.strip().split(" as ")[0].strip()
            if item and item != "self":
                named.append(base + item)
            elif item == "self":
                named.append(base.rstrip(":"))
    for m in PATH_RE.finditer(text):
        named.append(m.group(2))
    for line in text.splitlines():
        m = SUPER_RE.match(line)
        if not m:
            continue
        base = parent(module, path) if m.group(1) == "super" else module
        rest = m.group(2)
        items = [rest] if not rest.startswith("{") else [i.strip() for i in rest[1:-1].split(",")]
        for item in items:
            item = item.split(" as ")[0].strip()
            if item in ("", "*", "self"):
                target = base
            else:
                target = f"{base}::{item}" if base else item
            named.append(target)
    # `super::x::f(..)` written inline names the parent's module `x` (or an item of the parent).
    up = parent(module, path)
    for m in re.finditer(r"(?<![A-Za-z0-9_:])super::([a-z_][a-z0-9_]*)", text):
        named.append(f"{up}::{m.group(1)}" if up else m.group(1))
    for line in text.splitlines():
        m = CHILD_RE.match(line)
        if m and m.group(1) not in ("crate", "super", "self", "std", CRATE):
            child = f"{module}::{m.group(1)}" if module else m.group(1)
            if child in modules:
                named.append(child)
    for n in named:
        target = resolve(n, modules)
        if target is not None and target != module:
            out.add(target)
    return out


def layer_of(module: str) -> int | None:
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + "::")) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def circles(graph: dict) -> list:
    """Strongly connected sets of more than one module (Tarjan), each with one cycle through it."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    # A child seeing its parent's items (`use super::..`) is how a module folder is built, not a circle.
    graph = {a: {b for b in bs if not a.startswith(b + "::")} for a, bs in graph.items()}
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_in(graph: dict, comp: list) -> list:
    """One cycle through the strongly connected set `comp`, from its first module back to it."""
    members, start = set(comp), comp[0]
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main(argv: list) -> int:
    paths = list(sources())
    modules = {module_of(p) for p in paths}
    graph = {module_of(p): edges_of(p, module_of(p), modules) for p in paths}
    found = circles(graph)
    upward = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                upward.append((a, LAYERS[la][0], b, LAYERS[lb][0]))
    unplaced = sorted(m for m in graph if layer_of(m) is None)
    if "--dot" in argv:
        print("digraph imports {")
        print("  rankdir=BT; node [shape=box, fontname=monospace];")
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f'  "{a}" -> "{b}";')
        print("}")
    else:
        print(f"{len(graph)} modules, {sum(len(v) for v in graph.values())} imports")
        for comp in found:
            print("circle: " + " -> ".join(cycle_in(graph, comp)) + f"   ({len(comp)} modules: {', '.join(comp)})")
        for a, la, b, lb in upward:
            print(f"upward: {a} ({la}) -> {b} ({lb})")
        for m in unplaced:
            print(f"no layer: {m}")
        print(f"{len(found)} circle(s), {len(upward)} upward import(s)")
        if "--quiet" not in argv:
            for a in sorted(graph):
                print(f"{a} -> {', '.join(sorted(graph[a]))}")
    if found:
        return 1
    # An upward import, or a module no layer names (place it in LAYERS), fails the stage too.
    return 2 if upward or unplaced else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
