#!/usr/bin/env python3
"""A whole `dagsgd analyze` of a large multi-rank Kineto trace next to Python's bare json.load of
the same files, in one run (docs/performance.md, "Trace reader").

Each rank's trace is the shared nccl_data trace's events laid end to end COPIES times, each copy
with fresh ids (flow ids, correlation and External ids moved past the previous copy's) and 1 s
later than the one before, so that the copies are iterations one after another; RANKS such
traces (distributedInfo rank 0..RANKS-1) are written uncompressed to a temporary directory
(2 ranks of 16 copies, as the sample is one of 2: 313 MB). `dagsgd analyze DIR` reads them all; the Python side json.loads
every file in one process. The commands alternate REPS times; the medians of the wall time and of
the CPU time (user + system, all threads) of each, and their ratios, are printed.

--load runs `yes > /dev/null` (one busy core) for the whole measurement and stops it after.
--other DAGSGD (another build, e.g. of an earlier commit) runs in the same loop, after DAGSGD, and
gets its own line: a before/after comparison made minutes apart is no comparison on a machine
whose speed moves.
"""
import argparse
import gzip
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data", "traces", "kineto", "nccl_data.json.gz")

# Numbers that differ from copy to copy: the integer part of ts (us), flow ids, correlation and
# External ids. Copy c adds c * SHIFT to each (ts: c seconds later; the trace spans 0.73 s).
NUMBERS = re.compile(r'("ts": |"id": |"correlation": |"External id": )(\d+)')
SHIFT = 1_000_000


def rank_trace(text, copies, rank, ranks):
    begin = text.index("[", text.index('"traceEvents"'))
    # The array ends before the first key after it ("INFO" in this file).
    end = text.rindex("]", 0, text.index('"INFO"'))
    pieces = NUMBERS.split(text[begin + 1:end])  # text, key, number, text, key, number, ...
    head = text[:begin + 1]
    head = re.sub(r'"rank": 0, "world_size": 2', f'"rank": {rank}, "world_size": {ranks}', head, 1)
    parts = [head]
    for c in range(copies):
        if c > 0:
            parts.append(",")
        out = pieces[:]
        for i in range(2, len(out), 3):
            out[i] = str(int(out[i]) + c * SHIFT)
        parts.append("".join(out))
    parts.append(text[end:])
    return "".join(parts)


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd):
    """(wall seconds, CPU seconds) of one run of cmd."""
    cpu = cpu_of_children()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, cpu_of_children() - cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dagsgd")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--load", action="store_true", help="one core busy with `yes > /dev/null`")
    ap.add_argument("--other", help="another dagsgd build, run in the same loop")
    args = ap.parse_args()
    with gzip.open(SHARED, "rt", encoding="utf-8") as f:
        sample = f.read()
    if '"rank": 0, "world_size": 2' not in sample:
        sys.exit(f"{SHARED}: its distributedInfo is not the one this script rewrites")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for r in range(args.ranks):
            path = os.path.join(tmp, f"rank-{r}.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(rank_trace(sample, args.copies, r, args.ranks))
            files.append(path)
        size = sum(os.path.getsize(p) for p in files)
        load = [sys.executable, "-c", "import json,sys\nfor p in sys.argv[1:]: json.load(open(p))"]
        load += files
        builds = [args.dagsgd] + ([args.other] if args.other else [])
        for b in builds:  # a failure shows before anything is timed
            subprocess.run([b, "analyze", tmp], check=True, stdout=subprocess.DEVNULL)
        busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if args.load else None
        try:
            loadavg = os.getloadavg()[0]
            py, ours = [], {b: [] for b in builds}
            for _ in range(args.reps):
                py.append(timed(load))
                for b in builds:
                    ours[b].append(timed([b, "analyze", tmp]))
            loadavg = (loadavg, os.getloadavg()[0])
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    print(f"trace: {args.ranks} ranks, {size / 1e6:.1f} MB ({args.copies} copies of nccl_data "
          f"each); {'one core busy (yes)' if args.load else 'no extra load'}; "
          f"load average {loadavg[0]:.2f} -> {loadavg[1]:.2f}")
    for b in builds:
        name = "dagsgd analyze" if b == args.dagsgd else f"{b} analyze"
        for what, i in (("wall", 0), ("CPU", 1)):
            p = statistics.median(t[i] for t in py)
            o = statistics.median(t[i] for t in ours[b])
            print(f"{what}: python3 json.load {p:.2f} s, {name} {o:.2f} s "
                  f"(medians of {args.reps}): ratio {p / o:.1f}x")


if __name__ == "__main__":
    main()
