#!/usr/bin/env python3
"""`dagsgd export --format chakra` end to end, decoded by protoc against Chakra's public schema.

    chakra_check.py kineto --dagsgd BIN --protoc PROTOC --schema et_def.proto --samples DIR --out DIR
    chakra_check.py mpi    ... --bench dagsgd-allreduce-bench

kineto: the sample Kineto traces (datasets/samples/kineto): every NCCL collective kernel of the
trace is one collective node with the kernel's message size, every other kernel, copy and host
call a compute node. mpi: a 2-rank `dagsgd train` run (its phases, gradient allreduces and the
waits on them, node by node) and a 2-rank `dagsgd collect` of an MPI micro-benchmark (every MPI
call of each rank, in order, with its bytes). Both: files are refused without --force, a bad
input exits 2 naming it, ids are dense and every dependency points back.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

from chakra_common import check, encode_varint, fail, varint

# ASTRA-sim's workload layer issues these collective types only and throws on any other
# (astra-sim/workload/Workload.cc:347-390): a reduce is exported as an allreduce of its size, a
# barrier as an allreduce of its 0 bytes (docs/formats.md).
CHAKRA_TYPES = {"allreduce": "ALL_REDUCE", "reduce": "ALL_REDUCE", "allgather": "ALL_GATHER",
                "broadcast": "BROADCAST", "alltoall": "ALL_TO_ALL",
                "reduce_scatter": "REDUCE_SCATTER", "barrier": "ALL_REDUCE"}
COMM_TYPE_VALUES = {"ALL_REDUCE": 0, "ALL_GATHER": 2, "BROADCAST": 5, "ALL_TO_ALL": 6,
                    "REDUCE_SCATTER": 7}


# ---------------------------------------------------------------------------------------------
# Decoding: the file's length-delimited messages become one message of a wrapper type (field 1
# the GlobalMetadata, field 2 the repeated Node) that protoc --decode reads against et_def.proto.

WRAPPER = """syntax = "proto3";
package dagsgd_check;
import "et_def.proto";
message EtFile {
  ChakraProtoMsg.GlobalMetadata metadata = 1;
  repeated ChakraProtoMsg.Node node = 2;
}
"""


def as_wrapper(data):
    out = bytearray()
    pos, count = 0, 0
    while pos < len(data):
        n, start = varint(data, pos)
        check(start + n <= len(data), f"message {count} runs past the end of the file")
        out += bytes([0x0A if count == 0 else 0x12]) + encode_varint(n) + data[start:start + n]
        pos = start + n
        count += 1
    return bytes(out), count


def parse_text(text):
    """protoc's text format: every field a list of values; messages as dicts."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
            continue
        key, _, value = line.partition(": ")
        if value.startswith('"'):
            value = value[1:-1].encode("latin-1").decode("unicode_escape")
        elif value in ("true", "false"):
            value = value == "true"
        else:
            try:
                value = int(value)
            except ValueError:
                pass  # an enum name
        stack[-1].setdefault(key, []).append(value)
    return root


def decode(path, protoc, schema):
    with open(path, "rb") as f:
        data, messages = as_wrapper(f.read())
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "wrapper.proto"), "w") as f:
            f.write(WRAPPER)
        p = subprocess.run([protoc, "--decode=dagsgd_check.EtFile", "-I", tmp, "-I",
                            os.path.dirname(schema), os.path.join(tmp, "wrapper.proto")],
                           input=data, capture_output=True, check=False)
    check(p.returncode == 0, f"protoc --decode {path}: {p.stderr.decode()}")
    et = parse_text(p.stdout.decode())
    check(len(et.get("metadata", [])) == 1, f"{path}: no GlobalMetadata first")
    nodes = et.get("node", [])
    check(len(nodes) == messages - 1, f"{path}: {messages - 1} messages, {len(nodes)} nodes")
    return et["metadata"][0], nodes


def attrs(msg):
    out = {}
    for a in msg.get("attr", []):
        vals = [v for k, v in a.items() if k.endswith("_val")]
        out[a["name"][0]] = vals[0][0] if vals else None
    return out


def one(node, field, default=None):
    return node.get(field, [default])[0]


def check_structure(path, meta, nodes, rank, ranks):
    m = attrs(meta)
    check(one(meta, "version") == "1.0.0", f"{path}: version {meta.get('version')}")
    check(m.get("rank", 0) == rank and m.get("ranks") == ranks, f"{path}: metadata {m}")
    for i, n in enumerate(nodes):
        check(one(n, "id", 0) == i, f"{path}: node {i} has id {one(n, 'id', 0)}")
        check(one(n, "type") in ("COMP_NODE", "COMM_COLL_NODE"), f"{path}: node {i} type")
        for d in n.get("data_deps", []) + n.get("ctrl_deps", []):
            check(d < i, f"{path}: node {i} depends on a later node {d}")
        for d in n.get("ctrl_deps", []):
            check(d in n.get("data_deps", []), f"{path}: node {i}: control dep {d} not a data dep")
        a = attrs(n)
        check("is_cpu_op" in a, f"{path}: node {i} has no is_cpu_op")
        check(one(n, "duration_micros", 0) == (a["duration_ns"] + 500) // 1000,
              f"{path}: node {i} duration")
        if one(n, "type") == "COMM_COLL_NODE":
            check(a.get("comm_type", 0) in COMM_TYPE_VALUES.values() and "comm_size" in a,
                  f"{path}: node {i} collective attributes {a}")
            # Workload.cc:289-291 throws on a comm node on the CPU; 591-600: pg_name "0" is the
            # default group of every NPU.
            check(a["is_cpu_op"] is False and a.get("pg_name") == "0" and a.get("collective"),
                  f"{path}: node {i} collective attributes {a}")


def export(args, inputs, out, extra=()):
    p = subprocess.run([args.dagsgd, "export", "--format", "chakra", *inputs, "--out", out,
                        "--json", *extra], capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def export_and_decode(args, inputs, out):
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, stderr = export(args, inputs, out)
    check(code == 0, f"export {inputs}: {stderr}")
    summary = json.loads(stdout)
    decoded = []
    for f in summary["files"]:
        meta, nodes = decode(f["file"], args.protoc, args.schema)
        check_structure(f["file"], meta, nodes, f["rank"], len(summary["files"]))
        check(len(nodes) == f["nodes"], f"{f['file']}: {len(nodes)} nodes, summary {f['nodes']}")
        colls = sum(one(n, "type") == "COMM_COLL_NODE" for n in nodes)
        check(colls == f["collectives"], f"{f['file']}: {colls} collectives")
        deps = sum(len(n.get("data_deps", [])) for n in nodes)
        check(deps == f["dependencies"], f"{f['file']}: {deps} dependencies")
        decoded.append(nodes)
    # Existing files are refused (exit 2, the file named) unless --force.
    code, _, stderr = export(args, inputs, out)
    check(code == 2 and "exists; use --force" in stderr, f"not refused: {code} {stderr}")
    code, _, stderr = export(args, inputs, out, ["--force"])
    check(code == 0, f"--force: {stderr}")
    return summary, decoded


def events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


# ---------------------------------------------------------------------------------------------

# NCCL kernel names (ncclKernel_AllReduce_RING_LL_Sum_float) and Chakra's types.
KERNEL_TYPES = [("AllReduce", "ALL_REDUCE"), ("AllGather", "ALL_GATHER"),
                ("ReduceScatter", "REDUCE_SCATTER"), ("Broadcast", "BROADCAST"),
                ("Reduce", "ALL_REDUCE")]
DTYPE_BYTES = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8,
               "Char": 1, "Byte": 1, "Int8": 1}


def kineto(args):
    samples = os.path.join(args.samples, "kineto")
    trace = os.path.join(samples, "nccl_data.json.gz")
    _, decoded = export_and_decode(args, [trace], os.path.join(args.out, "nccl"))
    nodes = decoded[0]
    # Every NCCL collective kernel of the trace is a collective node, in order, with its size.
    kernels = sorted((e for e in events(trace) if e.get("cat") == "kernel"
                      and e["name"].startswith(("ncclKernel", "ncclDevKernel"))
                      and "SendRecv" not in e["name"]), key=lambda e: e["ts"])
    colls = [n for n in nodes if one(n, "type") == "COMM_COLL_NODE"]
    check(len(colls) == len(kernels) > 0, f"{len(colls)} collective nodes, {len(kernels)} kernels")
    for k, n in zip(kernels, colls):
        a = attrs(n)
        want = next(t for part, t in KERNEL_TYPES if f"_{part}_" in k["name"])
        check(a["comm_type"] == COMM_TYPE_VALUES[want], f"{k['name']}: comm_type {a['comm_type']}")
        size = k["args"]["In msg nelems"] * DTYPE_BYTES[k["args"]["dtype"]]
        check(a["comm_size"] == size, f"{k['name']}: comm_size {a['comm_size']}, trace {size}")
        check(a["is_cpu_op"] is False, "collective marked as a CPU op")
    # Kernels run on the GPU, the host's calls on the CPU.
    gpu = sum(attrs(n)["is_cpu_op"] is False for n in nodes if one(n, "type") == "COMP_NODE")
    host = sum(attrs(n)["is_cpu_op"] is True for n in nodes)
    check(gpu > 0 and host > 0, f"{gpu} GPU and {host} CPU compute nodes")
    # Two ranks of a 128-rank job: one file each.
    pair = [os.path.join(samples, f"sampled_rank-{r}.json.gz") for r in (0, 1)]
    summary, _ = export_and_decode(args, pair, os.path.join(args.out, "sampled"))
    check([f["rank"] for f in summary["files"]] == [0, 1], "two files")
    # A bad input: exit 2, named.
    bad = os.path.join(args.out, "not-a-trace.json")
    with open(bad, "w") as f:
        f.write("{\"traceEvents\": [")
    code, _, stderr = export(args, [bad], os.path.join(args.out, "bad"))
    check(code == 2 and "not-a-trace.json" in stderr, f"bad input: {code} {stderr}")
    print(f"kineto: {len(nodes)} nodes, {len(colls)} collectives decoded and matched")


def mpi(args):
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
    run = os.path.join(args.out, "train")
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    p = subprocess.run(mpirun + [args.dagsgd, "train", "--model", "fc-small", "--iterations", "6",
                                 "--batch", "32", "--overlap", "wfbp", "--no-eval", "--trace",
                                 run], capture_output=True, text=True, check=False)
    check(p.returncode == 0, f"train: {p.stdout}{p.stderr}")
    _, decoded = export_and_decode(args, [run], os.path.join(args.out, "train-chakra"))
    for rank, nodes in enumerate(decoded):
        ev = events(os.path.join(run, f"rank-{rank}.trace.json"))
        main = sorted((e for e in ev if e.get("tid") == 0 and e.get("cat") == "cpu_op"
                       and (e.get("args") or {}).get("phase")), key=lambda e: e["ts"])
        comm = sorted((e for e in ev if e.get("tid") != 0 and
                       (e.get("args") or {}).get("phase") == "comm"),
                      key=lambda e: (e["args"]["iteration"], e["args"]["bucket"]))
        comp = [n for n in nodes if one(n, "type") == "COMP_NODE"]
        colls = [n for n in nodes if one(n, "type") == "COMM_COLL_NODE"]
        check(len(comp) == len(main), f"rank {rank}: {len(comp)} compute nodes, {len(main)} spans")
        check(len(colls) == len(comm), f"rank {rank}: {len(colls)} collectives, {len(comm)} spans")
        # Compute nodes are the main thread's spans in program order, each after the one before.
        for i, (n, e) in enumerate(zip(comp, main)):
            check(one(n, "name") == e["name"], f"rank {rank}: node {n} is not {e['name']}")
            if i:
                prev = one(comp[i - 1], "id", 0)
                check(prev in n.get("ctrl_deps", []), f"rank {rank}: {one(n, 'name')} not after "
                      f"{one(comp[i - 1], 'name')}")
        # Each gradient allreduce: its size, issued by a comm_issue, awaited by its comm_wait.
        by_id = {one(n, "id", 0): n for n in nodes}
        waits = {}
        for n, e in zip(comp, main):
            if e["name"] == "comm_wait":
                waits[e["args"]["iteration"]] = n
        for n, e in zip(colls, comm):
            a = attrs(n)
            check(a["comm_type"] == 0 and a["comm_size"] == e["args"]["bytes"],
                  f"rank {rank}: {a} for {e['args']}")
            issuers = [one(by_id[d], "name") for d in n.get("data_deps", [])]
            check(issuers == ["comm_issue"], f"rank {rank}: collective issued by {issuers}")
            w = waits[e["args"]["iteration"]]
            check(one(n, "id", 0) in w.get("data_deps", []),
                  f"rank {rank}: iteration {e['args']['iteration']} wait does not await it")

    # Any MPI program traced by the PMPI tracer: every call of each rank, in order, with its size.
    coll = os.path.join(args.out, "collect")
    p = subprocess.run([args.dagsgd, "collect", "--out", coll, "--"] + mpirun +
                       [args.bench, "--max-bytes", "65536"], capture_output=True, text=True,
                       check=False)
    check(p.returncode == 0, f"collect: {p.stdout}{p.stderr}")
    _, decoded = export_and_decode(args, [coll], os.path.join(args.out, "collect-chakra"))
    for rank, nodes in enumerate(decoded):
        calls = sorted((e for e in events(os.path.join(coll, f"rank-{rank}.trace.json"))
                        if e["name"].startswith("MPI_")), key=lambda e: e["ts"])
        colls = [n for n in nodes if one(n, "type") == "COMM_COLL_NODE"]
        check(len(colls) == len(calls) > 0, f"rank {rank}: {len(colls)} nodes, {len(calls)} calls")
        for n, e in zip(colls, calls):
            a = attrs(n)
            want = COMM_TYPE_VALUES[CHAKRA_TYPES[e["args"]["collective"]]]
            check(a["comm_type"] == want and a["comm_size"] == e["args"]["bytes"]
                  and a["collective"] == e["args"]["collective"],
                  f"rank {rank}: {a} for {e['name']} {e['args']}")
        # One chain per rank: each call after the one before (through the host time between).
        ids = [one(n, "id", 0) for n in colls]
        check(all(a < b for a, b in zip(ids, ids[1:])), f"rank {rank}: calls out of order")
    print(f"mpi: train and collect runs decoded and matched ({len(decoded[0])} nodes on rank 0)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["kineto", "mpi"])
    ap.add_argument("--dagsgd", required=True)
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bench")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kineto(args) if args.mode == "kineto" else mpi(args)


if __name__ == "__main__":
    main()
