#!/usr/bin/env python3
"""A whole `dagsgd analyze` of a large Kineto trace next to Python's bare json.load of the same
file, in one run (docs/performance.md, "Trace reader").

The trace is the shared nccl_data trace's events laid end to end COPIES times (as
tests/bench/bench_importer.cc builds it; 10 copies: 98 MB), written uncompressed to a temporary
file. Each command runs REPS times, alternating; the medians and their ratio are printed, of the
wall time and of the CPU time (user + system) of each command: both are single-threaded, so on an
idle machine the two agree, and on a loaded one the CPU time is the steadier figure.

usage: analyze_vs_json_load.py DAGSGD [COPIES] [REPS] [OTHER_DAGSGD]

OTHER_DAGSGD (another build, e.g. of an earlier commit) runs in the same loop, after DAGSGD, and
gets its own line: a before/after comparison made minutes apart is no comparison on a machine
whose speed moves.
"""
import gzip
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data", "traces", "kineto", "nccl_data.json.gz")


def synthetic_trace(copies):
    with gzip.open(SHARED, "rt", encoding="utf-8") as f:
        text = f.read()
    begin = text.index("[", text.index('"traceEvents"'))
    # The array ends before the first key after it ("INFO" in this file).
    end = text.rindex("]", 0, text.index('"INFO"'))
    events = text[begin + 1:end]
    return text[:begin + 1] + ",".join([events] * copies) + text[end:]


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
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    dagsgd = sys.argv[1]
    copies = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    others = sys.argv[4:5]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(synthetic_trace(copies))
        size = os.path.getsize(path)
        load = [sys.executable, "-c", "import json,sys; json.load(open(sys.argv[1]))", path]
        builds = [dagsgd] + others
        py, ours = [], {b: [] for b in builds}
        for _ in range(reps):
            py.append(timed(load))
            for b in builds:
                ours[b].append(timed([b, "analyze", path]))
    print(f"trace: {size / 1e6:.1f} MB ({copies} copies of nccl_data)")
    for b in builds:
        name = "dagsgd analyze" if b == dagsgd else f"{b} analyze"
        for what, i in (("wall", 0), ("CPU", 1)):
            p = statistics.median(t[i] for t in py)
            o = statistics.median(t[i] for t in ours[b])
            print(f"{what}: python3 json.load {p:.2f} s, {name} {o:.2f} s "
                  f"(medians of {reps}): ratio {p / o:.1f}x")


if __name__ == "__main__":
    main()
