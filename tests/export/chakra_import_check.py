#!/usr/bin/env python3
"""`dagsgd analyze`, `replay` and `whatif` on Chakra execution traces, end to end.

    chakra_import_check.py sample    --dagsgd BIN --samples DIR --out DIR
    chakra_import_check.py roundtrip --dagsgd BIN --samples DIR --out DIR
    chakra_import_check.py bad       --dagsgd BIN --samples DIR --out DIR
    chakra_import_check.py mpi       --dagsgd BIN --samples DIR --out DIR   (runs mpirun)

sample: Chakra's own test trace (datasets/samples/chakra/chakra.0.et) decoded here with a
protobuf-free reader (varints and length-delimited fields only): its node count, its collectives
by type with their bytes, and the longest path through its data dependencies with its durations
(what a trace without start times measures) are what analyze, replay and whatif report.
roundtrip: the sample Kineto traces exported with `dagsgd export --format chakra` and read back:
the measured iterations, the collectives and the replay on the traced and on another fabric are
the original's. mpi: a 2-rank `dagsgd train` run exported and read back (its measured iterations
exactly, its replay on a modeled fabric within 1%). bad: truncated, wrong, cyclic, unknown and incomplete inputs exit 2 with one line
naming the file and the place.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

from chakra_common import check, encode_varint, fail, varint


# ---------------------------------------------------------------------------------------------
# A protobuf-free reader of et_def.proto's framing and the Node fields the checks need.

def fields(buf):
    pos, out = 0, []
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            fail(f"wire type {wire}")
        out.append((number, wire, value))
    return out


def packed(value, wire):
    if wire == 0:
        return [value]
    pos, out = 0, []
    while pos < len(value):
        v, pos = varint(value, pos)
        out.append(v)
    return out


def attribute(buf):
    name, value = None, None
    for number, wire, v in fields(buf):
        if number == 1:
            name = v.decode()
        elif number == 29:  # string_val
            value = v.decode()
        elif wire == 0:  # the integer and bool kinds the checks read
            value = v
    return name, value


def messages(data):
    pos = 0
    while pos < len(data):
        n, pos = varint(data, pos)
        yield data[pos:pos + n]
        pos += n


def nodes(path):
    with open(path, "rb") as f:
        data = f.read()
    it = messages(data)
    next(it)  # GlobalMetadata
    out = []
    for msg in it:
        node = {"id": 0, "type": 0, "data": [], "dur": 0, "attr": {}}
        for number, wire, v in fields(msg):
            if number == 1:
                node["id"] = v
            elif number == 3:
                node["type"] = v
            elif number == 5:
                node["data"] += packed(v, wire)
            elif number == 7:
                node["dur"] = v
            elif number == 10:
                k, a = attribute(v)
                node["attr"][k] = a
        out.append(node)
    return out


COMM_COLL_NODE = 7
COMM_TYPES = {0: "allreduce", 2: "allgather", 5: "broadcast", 6: "alltoall", 7: "reduce_scatter"}


def longest_path_us(ns):
    """The end of the last node when each starts as its last data dependency ends."""
    by_id = {n["id"]: n for n in ns}
    end = {}
    for n in sorted(ns, key=lambda n: n["id"]):
        stack = [n["id"]]
        while stack:
            v = stack[-1]
            if v in end:
                stack.pop()
                continue
            todo = [d for d in by_id[v]["data"] if d in by_id and d not in end]
            if todo:
                stack += todo
                continue
            start = max((end[d] for d in by_id[v]["data"] if d in by_id), default=0)
            end[v] = start + by_id[v]["dur"]
            stack.pop()
    return max(end.values())


# ---------------------------------------------------------------------------------------------

def run(args, *argv, code=0):
    p = subprocess.run([args.dagsgd, *argv], capture_output=True, text=True, timeout=600)
    check(p.returncode == code, f"dagsgd {' '.join(argv)}: exit {p.returncode}, expected {code}\n"
                                f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def json_of(args, *argv):
    return json.loads(run(args, *argv).stdout)


def close(a, b, rel, what):
    check(abs(a - b) <= rel * max(abs(a), abs(b), 1e-12), f"{what}: {a} vs {b}")


def sample(args):
    path = os.path.join(args.samples, "chakra", "chakra.0.et")
    ns = nodes(path)
    colls = {}
    for n in ns:
        if n["type"] == COMM_COLL_NODE and "comm_type" in n["attr"]:
            kind = COMM_TYPES[n["attr"]["comm_type"]]
            count, size = colls.get(kind, (0, 0))
            colls[kind] = (count + 1, size + n["attr"]["comm_size"])
    makespan_s = longest_path_us(ns) * 1e-6
    print(f"sample: {len(ns)} nodes, collectives {colls}, longest path {makespan_s * 1e3:.3f} ms")

    a = json_of(args, "analyze", "--json", path)
    check(a["import"]["source"] == "chakra", f"source {a['import']['source']}")
    check(len(a["ranks"]) == 1, "one rank")
    check(a["import"]["files"][0]["events"] == len(ns), "one event per node")
    check(a["dag"]["collectives"] == sum(c for c, _ in colls.values()), "collectives")
    by_type = {c["type"]: (c["count"], c["bytes"]) for c in a["collectives"]}
    check(by_type == colls, f"collectives {by_type} vs {colls}")
    close(a["measured_iteration_s"], makespan_s, 1e-9, "analyze: measured iteration")
    text = run(args, "analyze", path).stdout
    check(f"({'chakra'}, 1 rank trace(s), {len(ns)} spans)" in text, text[:400])
    for kind, (count, size) in colls.items():
        line = [l for l in text.splitlines() if l.strip().startswith(kind + " ")]
        check(line, f"no {kind} row in\n{text}")
        cols = line[0].split()
        check(int(cols[1]) == count and int(cols[2]) == size, f"{kind}: {cols} vs {count} {size}")

    r = json_of(args, "replay", "--json", path)
    close(r["measured_iteration_s"], makespan_s, 1e-9, "replay: measured")
    # One rank of the job: its collectives cannot be priced for another fabric and keep their
    # traced durations, so every fabric replays the measured iteration.
    close(r["predicted_iteration_s"], makespan_s, 1e-9, "replay: predicted")
    other = json_of(args, "replay", "--json", path, "--intra", "nvlink2", "--inter", "ib-edr")
    close(other["predicted_iteration_s"], makespan_s, 1e-9, "replay on ib-edr")

    out = os.path.join(args.out, "whatif-sample")
    shutil.rmtree(out, ignore_errors=True)
    run(args, "whatif", path, "--batch", "32", "--fabrics", "10gbe,ib-edr", "--out", out)
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    points = res["scenarios"]
    check(len(points) == 2, f"{len(points)} what-if points")
    for p in points:
        close(p["iteration_time_s"], makespan_s, 1e-9, "whatif iteration")
        close(p["throughput_samples_per_s"], 32 / makespan_s, 1e-6, "whatif throughput")
    print("sample: ok")


def replay_figures(args, inputs):
    r = json_of(args, "replay", "--json", *inputs)
    o = json_of(args, "replay", "--json", *inputs, "--intra", "nvlink2", "--inter", "ib-edr")
    a = json_of(args, "analyze", "--json", *inputs)
    return r, o, a


def roundtrip(args):
    kineto = os.path.join(args.samples, "kineto")
    cases = {"nccl": [os.path.join(kineto, "nccl_data.json.gz")],
             "sampled": [os.path.join(kineto, f"sampled_rank-{r}.json.gz") for r in (0, 1)]}
    for name, inputs in cases.items():
        out = os.path.join(args.out, "roundtrip-" + name)
        shutil.rmtree(out, ignore_errors=True)
        run(args, "export", "--format", "chakra", *inputs, "--out", out)
        r0, o0, a0 = replay_figures(args, inputs)
        r1, o1, a1 = replay_figures(args, [out])
        print(f"{name}: measured {r0['measured_iteration_s']:.6f} -> {r1['measured_iteration_s']:.6f}"
              f" s, predicted {r0['predicted_iteration_s']:.6f} -> {r1['predicted_iteration_s']:.6f}"
              f" s, on ib-edr {o0['predicted_iteration_s']:.6f} -> "
              f"{o1['predicted_iteration_s']:.6f} s")
        check(r1["source"] == "chakra", r1["source"])
        check(r1["iterations"] == r0["iterations"], "iterations")
        # Iterations and boundaries are written in ns: the same figures.
        close(r1["measured_iteration_s"], r0["measured_iteration_s"], 1e-9, name + " measured")
        # Without resources (a Chakra trace has only dependencies) the replay may only be faster,
        # and by little: program order on every thread and stream is kept as dependencies.
        for before, after, what in ((r0, r1, "traced fabric"), (o0, o1, "ib-edr")):
            close(after["predicted_iteration_s"], before["predicted_iteration_s"], 0.01,
                  f"{name}: replay on the {what}")
        # Collectives Chakra has a type for keep their count, bytes and measured time; NCCL's
        # point-to-point kernels (no peer in the trace) become compute nodes.
        typed = [c for c in a0["collectives"] if c["type"] in COMM_TYPES.values()]
        check(a1["collectives"] == typed, f"{name}: collectives {a1['collectives']} vs {typed}")
        check(a1["import"]["source"] == "chakra", "source")
    print("roundtrip: ok")


def mpi(args):
    """A 2-rank `dagsgd train` run exported and read back: its measured iterations exactly; its
    replay on a modeled fabric the same. Its replay on the traced configuration is printed, not
    checked: the files keep neither the runtime's progress engine (its collectives may overlap)
    nor the collectives' startup and lag apart from their bodies (docs/formats.md), and the two
    move it in opposite directions."""
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
    train = os.path.join(args.out, "train")
    shutil.rmtree(train, ignore_errors=True)
    p = subprocess.run(mpirun + [args.dagsgd, "train", "--model", "fc-small", "--iterations", "8",
                                 "--batch", "32", "--overlap", "wfbp", "--no-eval", "--trace",
                                 train], capture_output=True, text=True, check=False)
    check(p.returncode == 0, f"train: {p.stdout}{p.stderr}")
    out = os.path.join(args.out, "train-chakra")
    shutil.rmtree(out, ignore_errors=True)
    run(args, "export", "--format", "chakra", train, "--out", out)
    r0, o0, _ = replay_figures(args, [train])
    r1, o1, a1 = replay_figures(args, [out])
    print(f"train: measured {r0['measured_iteration_s']:.6f} -> {r1['measured_iteration_s']:.6f}"
          f" s, predicted {r0['predicted_iteration_s']:.6f} -> {r1['predicted_iteration_s']:.6f}"
          f" s, on ib-edr {o0['predicted_iteration_s']:.6f} -> {o1['predicted_iteration_s']:.6f} s")
    check(r1["iterations"] == r0["iterations"] and r1["warmup"] == r0["warmup"], "iterations")
    check(r1["measured_iteration_s"] == r0["measured_iteration_s"], "measured iterations")
    close(o1["predicted_iteration_s"], o0["predicted_iteration_s"], 0.01, "replay on ib-edr")
    check(len(a1["ranks"]) == 2, "two ranks")
    print("mpi: ok")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def bad(args):
    src = os.path.join(args.samples, "chakra", "chakra.0.et")
    with open(src, "rb") as f:
        good = f.read()
    d = os.path.join(args.out, "bad")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cases = []
    # A length whose varint never ends.
    # A message longer than what is left.
    first_len, p = varint(good, 0)
    cases.append(("truncated.0.et", good[:p + first_len + 40], ["past the end", "truncated"]))
    ms = list(messages(good))

    def frame(m):
        return encode_varint(len(m)) + m

    def node(i, deps=(), ntype=4):
        m = b"\x08" + bytes([i]) + b"\x18" + bytes([ntype])
        if deps:
            m += b"\x2a" + bytes([len(deps)]) + bytes(deps)
        return frame(m)

    meta = frame(ms[0])
    # A length whose varint never ends, right after the metadata.
    cases.append(("truncated-varint.0.et", meta + b"\xff\xff\xff",
                  ["truncated length", f"byte {len(meta)}"]))
    # Nodes where the GlobalMetadata must be.
    cases.append(("wrong.0.et", node(1) + node(2), ["byte 0", "GlobalMetadata"]))
    cases.append(("cycle.0.et", meta + node(1, [3]) + node(2, [1]) + node(3, [2]), ["cycle", "node "]))
    cases.append(("unknown.0.et", meta + node(1) + node(2, [1], ntype=42), ["node 2", "unknown node type 42"]))
    for name, data, words in cases:
        path = os.path.join(d, name)
        write(path, data)
        p = run(args, "analyze", path, code=2)
        err = p.stderr.strip()
        check("\n" not in err, f"{name}: more than one line: {err}")
        check(path in err, f"{name}: the error does not name the file: {err}")
        for w in words:
            check(w in err, f"{name}: '{w}' not in: {err}")
        print(f"{name}: {err}")
    # A missing rank: ranks 0 and 2 of a run.
    miss = os.path.join(d, "missing")
    os.makedirs(miss)
    write(os.path.join(miss, "job.0.et"), meta + node(1))
    write(os.path.join(miss, "job.2.et"), meta + node(1))
    p = run(args, "replay", miss, code=2)
    check("job.1.et" in p.stderr and "missing" in p.stderr, p.stderr)
    print("missing rank:", p.stderr.strip())
    # Chakra and Kineto traces in one run.
    p = run(args, "analyze", os.path.join(miss, "job.0.et"),
            os.path.join(args.samples, "kineto", "nccl_data.json.gz"), code=2)
    check("Chakra" in p.stderr and "nccl_data.json.gz" in p.stderr, p.stderr)
    print("mixed:", p.stderr.strip())
    print("bad: ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["sample", "roundtrip", "bad", "mpi"])
    ap.add_argument("--dagsgd", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    {"sample": sample, "roundtrip": roundtrip, "bad": bad, "mpi": mpi}[args.mode](args)


if __name__ == "__main__":
    main()
