#!/usr/bin/env python3
"""Lists pairs of source files in one crate that import each other, and longer
circles of files (a imports b imports c imports a).

A file's module path comes from where it lies (src/a/b.rs and src/a/b/mod.rs are
crate::a::b). A file imports every module that a `crate::…` or `super::…` path in it
names, down to the deepest module that is a file; a path into a file's own inline
`mod tests` is not counted, nor are lines of test code after `#[cfg(test)]`.
Exit status 1 when any pair exists, so CI can keep the tree free of them.

usage: scripts/import-cycles.py [CRATES_DIR]   (default: crates)
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")
# `use crate::{a::x, b::y}` and `use super::{…}`: the groups name several modules.
GROUP = re.compile(r"\b(crate|super)::\{([^;]*)\}", re.S)


def modules(src):
    """Module path (tuple) of every .rs file under src."""
    out = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[0] == "bin":
                continue
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            out[os.path.join(dirpath, f)] = tuple(parts)
    return out


def code_of(path):
    """The file's text up to its first `#[cfg(test)]` (test code may import anything)."""
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]")
    text = text if cut < 0 else text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def targets(path, me, known):
    """The file modules that `path` (module `me`) names."""
    text = code_of(path)
    names = []
    for m in GROUP.finditer(text):
        for item in re.split(r",(?![^{]*\})", m.group(2)):
            item = item.strip().split(" as ")[0]
            if item:
                names.append((m.group(1), [p for p in re.split(r"::", item) if p]))
    for m in PATH.finditer(text):
        names.append((m.group(1), [p for p in m.group(2).split("::") if p]))
    found = set()
    for root, parts in names:
        base = () if root == "crate" else me[:-1]
        # `super::` in a mod.rs is the parent of the folder's module.
        if root == "super" and path.endswith(("mod.rs", "lib.rs")):
            base = me[:-1]
        full = base + tuple(p for p in parts if re.match(r"^[a-z_][a-z0-9_]*$", p))
        while full and full not in known:
            full = full[:-1]
        if full and full != me and not (me[: len(full)] == full):
            found.add(full)
    return found


def main():
    crates = sys.argv[1] if len(sys.argv) > 1 else "crates"
    pairs = []
    for c in sorted(os.listdir(crates)):
        src = os.path.join(crates, c, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        known = {m: p for p, m in mods.items()}
        edges = {m: targets(p, m, known) for p, m in mods.items()}
        for a, outs in edges.items():
            for b in outs:
                if a < b and a in edges.get(b, ()):
                    pairs.append(f"{c}: {known[a]} <-> {known[b]}")
        for comp in circles(edges):
            if len(comp) > 2:
                pairs.append(f"{c}: circle " + " -> ".join(known[m] for m in comp))
    for p in sorted(pairs):
        print(p)
    print(f"{len(pairs)} pairs or circles of files import each other")
    return 1 if pairs else 0


def circles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
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
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
