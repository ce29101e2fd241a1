#!/usr/bin/env python3
"""Runs every command block of README.md's "A five-minute tour" from a copy of the repository.

The copy holds the working tree's files (tracked and untracked, not ignored) and nothing beside
it, so a command that reads ../shared/data (or anything else outside the clone) fails here. What
a clone would have after `tools/demo` is provided: build/release is the build under test,
node_modules the source tree's (tools/setup's npm ci), and `dagsgd` on PATH. HOME is a temporary
directory (the tour installs into ~/.local), and `python3` the interpreter the build is for.
The blocks run in order in one directory, as a reader would, each with `bash -e`.

Skipped, and said so: blocks that need root (sudo: `dagsgd validate` builds network namespaces),
and blocks that run mpirun when there is no mpirun.

    tour_check.py --source SRC --build BUILD --python PYTHON --out DIR
"""

import argparse
import os
import re
import shutil
import subprocess
import sys


def tour_blocks(readme):
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## A five-minute tour")
    end = text.index("\n## ", start + 1)
    return [m.group(1) for m in re.finditer(r"```(?:sh)?\n(.*?)```", text[start:end], re.S)]


def copy_tree(source, dest):
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=source, capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        src = os.path.join(source, rel)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))
    return len(files)


def samples_match_shared(source):
    """datasets/samples/ are copies of ../shared/data: where that exists, byte for byte."""
    shared = os.path.join(source, "..", "shared", "data")
    if not os.path.isdir(shared):
        return "no ../shared/data to compare with"
    pairs = {"kineto": "traces/kineto", "b-caffe": "published/b-caffe", "chakra": "chakra"}
    n = 0
    for sub, there in pairs.items():
        for name in os.listdir(os.path.join(source, "datasets", "samples", sub)):
            if name == "LICENSE":
                continue
            with open(os.path.join(source, "datasets", "samples", sub, name), "rb") as a, \
                 open(os.path.join(shared, there, name), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"datasets/samples/{sub}/{name} differs from ../shared/data/{there}")
            n += 1
    return f"{n} sample files identical to ../shared/data"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    clone = os.path.join(out, "dagsgd")
    home = os.path.join(out, "home")
    bin_dir = os.path.join(out, "bin")
    for d in (clone, home, bin_dir):
        os.makedirs(d)
    print(f"tour: copied {copy_tree(args.source, clone)} files to {clone}")
    print("tour:", samples_match_shared(args.source))
    os.makedirs(os.path.join(clone, "build"))
    os.symlink(os.path.abspath(args.build), os.path.join(clone, "build", "release"))
    modules = os.path.join(args.source, "node_modules")
    if os.path.isdir(modules):
        os.symlink(modules, os.path.join(clone, "node_modules"))
    os.symlink(os.path.join(clone, "build", "release", "tools", "dagsgd"),
               os.path.join(bin_dir, "dagsgd"))
    os.symlink(args.python, os.path.join(bin_dir, "python3"))
    env = dict(os.environ, HOME=home, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               DAGSGD_DATA_DIR=os.path.join(clone, "datasets"))
    env.pop("DAGSGD_NODE_MODULES", None)
    have_mpirun = shutil.which("mpirun") is not None
    ran = skipped = 0
    for i, block in enumerate(tour_blocks(os.path.join(clone, "README.md"))):
        first = block.strip().splitlines()[0]
        if re.search(r"^\s*sudo\b", block, re.M):
            print(f"tour: block {i + 1} skipped: it needs root ({first})")
            skipped += 1
            continue
        if "mpirun" in block and not have_mpirun:
            print(f"tour: block {i + 1} skipped: no mpirun ({first})")
            skipped += 1
            continue
        print(f"tour: block {i + 1}: {first}", flush=True)
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=clone, env=env,
                           capture_output=True, text=True, check=False)
        with open(os.path.join(out, f"block-{i + 1}.log"), "w", encoding="utf-8") as f:
            f.write(block + "\n--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
        if p.returncode != 0:
            sys.exit(f"tour: block {i + 1} failed (exit {p.returncode}):\n{block}\n"
                     f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        ran += 1
    if ran == 0:
        sys.exit("tour: no block ran")
    print(f"tour: {ran} blocks ran from the copy, {skipped} skipped")
    shutil.rmtree(home)  # the tour's install: hundreds of MB with debug information


if __name__ == "__main__":
    main()
