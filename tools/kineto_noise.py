#!/usr/bin/env python3
"""Per-rank, per-iteration GPU compute noise of Kineto traces (docs/gpu-effects.md, "Stragglers").

Each trace is one rank. A kernel belongs to the ProfilerStep#N whose CPU span holds the runtime
call that launched it (the `correlation` id joins them); a step's compute is the summed duration
of its kernels that are not communication (names holding 'nccl') and, with --data-parallel-only,
not the sharded embedding work of a recommendation model (names holding 'embedding', 'permute'
or 'RadixSort'), which differs between ranks by design rather than by noise. Prints each rank's
step compute and the coefficient of variation (population std / mean) over every (rank, step).
Python 3 standard library only.

Usage: tools/kineto_noise.py [--data-parallel-only] TRACE.json[.gz] ...
"""

import argparse
import gzip
import json
import statistics

SHARDED = ("embedding", "permute", "RadixSort")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def step_compute(path, data_parallel_only):
    """Compute milliseconds of each ProfilerStep of one rank's trace, in step order."""
    events = load(path)
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep")),
                   key=lambda e: e["ts"])
    launched = {e["args"]["correlation"]: e["ts"] for e in events
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    compute = [0.0] * len(steps)
    for e in events:
        if e.get("cat") != "kernel" or "nccl" in e["name"].lower():
            continue
        if data_parallel_only and any(s in e["name"] for s in SHARDED):
            continue
        t = launched.get(e.get("args", {}).get("correlation"))
        for i, s in enumerate(steps):
            if t is not None and s["ts"] <= t < s["ts"] + s["dur"]:
                compute[i] += e["dur"] / 1e3
    return compute


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-parallel-only", action="store_true",
                    help="leave out a recommendation model's sharded embedding kernels")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    samples = []
    for path in args.traces:
        ms = step_compute(path, args.data_parallel_only)
        samples += ms
        print(f"{path}: " + ", ".join(f"{v:.3f} ms" for v in ms))
    if len(samples) >= 2:
        cv = statistics.pstdev(samples) / statistics.mean(samples)
        print(f"iteration_cv {cv:.4f} over {len(samples)} (rank, step) samples")


if __name__ == "__main__":
    main()
