#!/usr/bin/env python3
"""Which file of btl/ofi calls which: scripts/callgraph.py [DIR]

For every btl_ofi_*.c file, the names it takes from each other file (a
function defined there, or a type, macro or inline function of its
header: btl_ofi_X.h counts as part of btl_ofi_X.c; btl_ofi.h,
btl_ofi_types.h and btl_ofi_wire.h are shared by all and not counted).
Then the circles: groups of files that reach each other. The README
("Files") says which circle is meant and why.

Needs ctags (Debian: universal-ctags) to find the definitions. Reads the
text only (comments removed): a name used in a string or as a local of
the same spelling counts too, so read the code before you trust an arrow.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

SHARED = {"btl_ofi.h", "btl_ofi_types.h", "btl_ofi_wire.h"}


def room(path):
    base = os.path.basename(path)
    return base if base in SHARED else base[:-2] + ".c"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def definitions(files):
    defs = {}
    for path in files:
        header = path.endswith(".h")
        kinds = "--c-kinds=fdetgsp" if header else "--c-kinds=f"
        out = subprocess.run(["ctags", "-x", kinds, path], capture_output=True, text=True,
                             check=False).stdout
        for line in out.splitlines():
            parts = line.split(None, 4)
            if len(parts) < 5:
                continue
            name, kind, source = parts[0], parts[1], parts[4]
            if not header and source.startswith("static"):
                continue  # file-local
            if header and kind == "prototype":
                continue  # the .c file's definition counts
            defs.setdefault(name, room(path))
    return defs


def edges_of(files, defs):
    edges = {}
    for path in files:
        me = room(path)
        if me in SHARED:
            continue
        with open(path, encoding="utf-8") as f:
            names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", strip_comments(f.read())))
        for name in names:
            other = defs.get(name)
            if other and other != me and other not in SHARED:
                edges.setdefault((me, other), set()).add(name)
    return edges


def circles(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(here)
    if shutil.which("ctags") is None:
        print("callgraph.py: ctags not found (apt-get install universal-ctags)", file=sys.stderr)
        return 2
    files = sorted(glob.glob("btl_ofi*.[ch]"))
    edges = edges_of([f for f in files if f.endswith(".c")] + [f for f in files if f.endswith(".h")],
                     definitions(files))
    for (a, b), names in sorted(edges.items()):
        print(f"{a} -> {b}: {' '.join(sorted(names))}")
    found = circles(edges)
    print()
    if not found:
        print("no circle")
    for group in found:
        print("circle: " + ", ".join(group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
