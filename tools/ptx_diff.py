#!/usr/bin/env python3
"""Which CUDA kernels compile to other PTX between two trees (development machine, no GPU needed).

A change meant to leave kernels alone (a rename, a host-side refactor, a switch removed in a
launcher) should leave every kernel's PTX as it was; a change to one kernel can alter others it
does not touch (a by-value argument struct that grows changes every kernel taking it). This
compiles every src/**/*.cu of each tree to PTX for sm_90a with the Makefile's flags, splits the
PTX into its .entry kernels (and .func device functions), normalises what differs without
meaning (branch labels, which are numbered per file; the hash of an anonymous namespace, which
names the file; local depot numbers) and prints per kernel SAME, DIFF (with the count of lines
that differ), GONE (only in the base) or NEW. Kernels are matched by mangled name across files,
so a kernel whose .cu file moved or was renamed still compares.

Usage: python3 tools/ptx_diff.py BASE_TREE NEW_TREE [--rename OLD=NEW ...] [--all] [--keep DIR]
  BASE_TREE, NEW_TREE: checkouts (git worktree add /tmp/base REV).
  --rename OLD=NEW: a rename the new tree made (an identifier prefix, say lg_=gather_), applied to
  the base's demangled names before comparing (mangled names are demangled with c++filt).
  --all: print SAME kernels too (by default only a summary line counts them).
  --keep DIR: leave each tree's normalised PTX in DIR/base and DIR/new (one file a kernel).
Exit 0 when every kernel of the base is SAME in the new tree, 1 otherwise."""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

NVCC_FLAGS = ["-std=c++17", "-O3", "-Isrc", "--expt-relaxed-constexpr", "-arch=sm_90a", "-ptx"]
ANON = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+|\d+_INTERNAL_[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+")
LABEL = re.compile(r"\$L__BB\d+_(\d+)")
DEPOT = re.compile(r"__local_depot\d+")
HEAD = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(entry|func)\s+(?:\([^)]*\)\s*)?(.+?)\s*\(?\s*$")


MANGLED = re.compile(r"_Z[A-Za-z0-9_]+")
ANON_DEMANGLED = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_\w*?::|_INTERNAL_[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+::")


def demangle_all(texts):
    """The texts with every mangled symbol demangled (c++filt; a symbol's _param_N suffix kept)."""
    syms = sorted({m.group(0) for t in texts for m in MANGLED.finditer(t)})
    if not syms:
        return texts
    bases = [re.sub(r"_param_\d+$", "", x) for x in syms]
    out = subprocess.run(["c++filt"], input="\n".join(bases) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    table = {}
    for sym, base, dem in zip(syms, bases, out):
        table[sym] = ANON_DEMANGLED.sub("NS::", dem).replace(" ", "") + sym[len(base):]
    return [MANGLED.sub(lambda m: table[m.group(0)], t) for t in texts]


def compile_ptx(tree, src, out):
    r = subprocess.run(["nvcc", *NVCC_FLAGS, "-o", out, src], cwd=tree, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"ptx_diff: nvcc failed on {tree}/{src}:\n{r.stderr}")
    return out


def split_kernels(text):
    """{name: [normalised lines]} for each .entry and .func of one PTX file."""
    kernels, name = {}, None
    for line in text.splitlines():
        line = line.rstrip()
        m = HEAD.match(line)
        if m:
            name = m.group(1) + " " + ANON.sub("NS", m.group(2))
            kernels[name] = []
        if name is None or not line or line.lstrip().startswith("//"):
            continue
        line = DEPOT.sub("__local_depot", LABEL.sub(r"$L__BB_\1", ANON.sub("NS", line)))
        kernels[name].append(line.strip())
        if line == "}":
            name = None
    return kernels


def tree_kernels(tree, tmp, tag):
    sources = sorted(os.path.relpath(p, tree) for p in glob.glob(os.path.join(tree, "src", "**", "*.cu"),
                                                               recursive=True))
    if not sources:
        sys.exit(f"ptx_diff: no .cu file under {tree}/src")
    outs = [os.path.join(tmp, f"{tag}-{i}.ptx") for i in range(len(sources))]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(lambda a: compile_ptx(tree, *a), zip(sources, outs)))
    texts = []
    for out in outs:
        with open(out) as f:
            texts.append(f.read())
    kernels = {}
    for src, text in zip(sources, demangle_all(texts)):
        for name, lines in split_kernels(text).items():
            kernels.setdefault(name, (src, lines))
    return kernels


def renamed(kernels, renames):
    """The base's kernels with the new tree's renames applied to their names and bodies."""
    if not renames:
        return kernels
    def sub(t):
        for old, new in renames:
            t = re.sub(r"\b" + re.escape(old), new, t)
        return t
    return {sub(name): (src, [sub(x) for x in lines]) for name, (src, lines) in kernels.items()}


def keep(kernels, d):
    os.makedirs(d, exist_ok=True)
    for i, (name, (_, lines)) in enumerate(sorted(kernels.items())):
        with open(os.path.join(d, f"{i:04d}.ptx"), "w") as f:
            f.write(f"// {name}\n" + "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--keep")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, new = tree_kernels(a.base, tmp, "base"), tree_kernels(a.new, tmp, "new")
    base = renamed(base, [tuple(r.split("=", 1)) for r in a.rename])
    if a.keep:
        keep(base, os.path.join(a.keep, "base"))
        keep(new, os.path.join(a.keep, "new"))
    same = changed = 0
    for name in sorted(set(base) | set(new)):
        short = name[:110]
        if name not in new:
            print(f"GONE      {short} ({base[name][0]})")
            changed += name.startswith("entry")
        elif name not in base:
            print(f"NEW       {short} ({new[name][0]})")
        elif base[name][1] == new[name][1]:
            same += 1
            if a.all:
                print(f"SAME      {short}")
        else:
            n = sum(1 for d in difflib.ndiff(base[name][1], new[name][1]) if d[:1] in "+-")
            print(f"DIFF {n:4d} {short} ({base[name][0]} -> {new[name][0]})")
            changed += 1
    print(f"ptx_diff: {same} same, {changed} kernels changed or gone, of {len(base)} in the base")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
