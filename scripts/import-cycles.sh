#!/usr/bin/env bash
# Prints every import circle between the module files of a crate and exits non-zero when
# there is one.
#
#   scripts/import-cycles.sh [crate-folder ...]     (default: every workspace member)
#
# A module file (`src/a.rs`, `src/a/mod.rs`, `src/a/b.rs`, …) refers to another when it
# names it through `crate::…`, `super::…`, `self::…` or a child module it declares — in a
# `use` tree or in an expression. A path resolves to the deepest module *file* it names,
# so `crate::a::b::Thing` counts as a reference to `src/a/b.rs` (or `src/a/b/mod.rs`) and
# `crate::Thing` to the crate root. Inline modules (`mod tests { use super::*; }`) belong
# to their file. A circle is a strongly connected component of more than one file: each
# of its files reaches every other one through such references.
#
# A reference from a module to one of its own ancestors (`super::Thing` in a child, or
# `crate::Thing` defined in the crate root) is not counted: a child is part of its parent,
# which declares it and re-exports from it, so that pair is one unit, not a knot. With
# `--with-ancestors` those references count too.
#
# Binaries under `src/bin/` and a `src/main.rs` next to a `src/lib.rs` are crates of their
# own that import the library by name; they cannot close a circle inside it and are left
# out. Only the standard tools are needed: bash and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

ancestors=0
if [ "${1:-}" = "--with-ancestors" ]; then
    ancestors=1
    shift
fi
if [ "$#" -eq 0 ]; then
    set -- $(sed -n '/^members/s/.*\[\(.*\)\].*/\1/p' Cargo.toml | tr -d '",')
fi

exec python3 - "$ancestors" "$@" <<'PY'
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files(src):
    """Maps each module path (a tuple of names) to its file, for one crate's src/."""
    modules = {}
    root = "lib.rs" if os.path.exists(os.path.join(src, "lib.rs")) else "main.rs"
    for folder, dirs, files in os.walk(src):
        rel = os.path.relpath(folder, src)
        parts = () if rel == "." else tuple(rel.split(os.sep))
        if parts[:1] == ("bin",):
            dirs[:] = []
            continue
        for name in files:
            if not name.endswith(".rs"):
                continue
            if parts == ():
                if name in ("lib.rs", "main.rs"):
                    if name != root:
                        continue
                    modules[()] = os.path.join(folder, name)
                    continue
            if name == "mod.rs":
                modules[parts] = os.path.join(folder, name)
            else:
                modules[parts + (name[:-3],)] = os.path.join(folder, name)
    return modules


def strip(text):
    """Removes comments and the contents of string and char literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree):
    """`a::{b, c::{d, e}}` → [[a, b], [a, c, d], [a, c, e]]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        depth, parts, cur = 0, [], ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0 and part.endswith("}"):
                head = [p for p in part[:brace].split("::") if p]
                walk(prefix + head, part[brace + 1:-1])
            else:
                out.append(prefix + [p for p in part.split("::") if p and not p.startswith("as")])

    walk([], tree)
    return out


def scopes(text):
    """Yields (inline module path, chunk of text) pieces, following `mod x { … }`."""
    stack = []  # (name, depth at which it opened)
    depth, start = 0, 0
    opener = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")
    i = 0
    pending = None
    while i < len(text):
        m = opener.match(text, i) if text[i] == "m" else None
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            yield tuple(n for n, _ in stack), text[start:i]
            pending = m.group(1)
            i = m.end() - 1
            start = i
            continue
        ch = text[i]
        if ch == "{":
            depth += 1
            if pending is not None:
                stack.append((pending, depth))
                pending = None
        elif ch == "}":
            if stack and stack[-1][1] == depth:
                yield tuple(n for n, _ in stack), text[start:i]
                stack.pop()
                start = i
            depth -= 1
        i += 1
    yield tuple(n for n, _ in stack), text[start:]


def references(modpath, text, modules):
    """The module files one file names."""
    children = set(re.findall(r"\bmod\s+(" + IDENT + r")\s*;", text))
    found = set()
    for inline, chunk in scopes(text):
        here = modpath + inline
        paths = []
        for tree in re.findall(r"\buse\s+([^;]*);", chunk):
            paths.extend(expand_use(tree))
        chunk_wo_use = re.sub(r"\buse\s+[^;]*;", " ", chunk)
        for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:" + IDENT + r"::)+" + IDENT + ")", chunk_wo_use):
            paths.append(m.group(1).split("::"))
        for path in paths:
            target = resolve(here, path, children if not inline else set(), modules)
            if target is not None:
                found.add(target)
    return found


def resolve(here, path, children, modules):
    if not path:
        return None
    head = path[0]
    if head == "crate":
        absolute = list(path[1:])
    elif head in ("super", "self"):
        base = list(here)
        rest = list(path)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest.pop(0)
        absolute = base + rest
    elif head in children:
        absolute = list(here) + list(path)
    else:
        return None
    for n in range(len(absolute), -1, -1):
        if tuple(absolute[:n]) in modules:
            return tuple(absolute[:n])
    return None


def components(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def name(modpath):
    return "crate" if not modpath else "::".join(modpath)


with_ancestors = sys.argv[1] == "1"
failed = False
for crate in sys.argv[2:]:
    src = os.path.join(crate, "src")
    if not os.path.isdir(src):
        print(f"{crate}: no src/ folder", file=sys.stderr)
        failed = True
        continue
    modules = module_files(src)
    edges = {}
    for modpath, file in modules.items():
        with open(file, encoding="utf-8") as f:
            text = strip(f.read())
        edges[modpath] = {
            t
            for t in references(modpath, text, modules)
            if t != modpath and (with_ancestors or modpath[: len(t)] != t)
        }
    circles = [sorted(c) for c in components(modules.keys(), edges) if len(c) > 1]
    if not circles:
        print(f"{crate}: {len(modules)} module files, no import circle")
        continue
    failed = True
    print(f"{crate}: {len(modules)} module files, {len(circles)} import circle(s)")
    for circle in sorted(circles, key=len, reverse=True):
        members = set(circle)
        print(f"  circle of {len(circle)} files:")
        for m in circle:
            targets = sorted(name(t) for t in edges[m] if t in members)
            print(f"    {name(m)} -> {', '.join(targets)}")
sys.exit(1 if failed else 0)
PY
