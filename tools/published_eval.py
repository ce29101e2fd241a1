#!/usr/bin/env python3
"""Checks the published-measurement set (datasets/published/) and predicts every end-to-end point.

Each source file holds provenance, named hardware setups and points (docs/published.md). For
every end-to-end point this builds the matching `dagsgd predict ... --json` command, with
`--step-time` from the source's single-GPU reference of the same model, framework and batch,
runs it, and compares the predicted throughput with the published one. Each point is predicted
with the software stack its framework and collective library imply (STACK_RULES; --no-stacks for
the bare formulas), on the bundled node type of its machine where the machine is one (TOPOLOGIES;
--no-topologies for the two fabrics alone), with dagsgd's effects around the wire on
(docs/gpu-effects.md; --no-effects LIST leaves some out). Points the tool cannot express are
listed as skipped with the reason.
Python 3 standard library only.

Usage: tools/published_eval.py [--dagsgd BIN] [--json OUT] [--markdown] [--validate-only]
                               [--source ID ...] [--jobs N] [--data DIR] [--no-stacks]
                               [--no-input-pipelines] [--no-effects LIST]
                               [--no-topologies]
Exit: 0 when every point was predicted or skipped with a reason, 1 when a dagsgd run failed,
2 on a bad data file (one line naming the file and the place).
"""

import argparse
import concurrent.futures
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "dagsgd-published/1"
PIPELINES_SCHEMA = "dagsgd-input-pipelines/1"
KINDS = ("end_to_end", "single_gpu_reference", "microbenchmark")
PROVENANCE = ("title", "authors", "published", "licence", "accessed", "measurement")
# Published precision -> dagsgd --precision. TF32 keeps fp32 gradients; AMP sends fp16 ones.
PRECISION = {"fp32": "fp32", "tf32": "fp32", "fp16": "fp16", "amp": "fp16"}
THROUGHPUT_UNITS = ("images/s", "sequences/s", "samples/s")
# The software stack (datasets/stacks/) each point's framework and collective library imply, in
# order: the first rule whose words all occur in the point's `collective`, `framework` and
# `table` (which script of a repository was measured) wins.
# Points no rule matches are predicted without a stack (the formulas on the bare links). Each
# rule says why; the stacks' constants come from library code, documentation and
# micro-benchmarks (docs/published.md, "Stacks"), never from these end-to-end points.
STACK_RULES = (
    (("horovod allreduce on cpu (mpi over tcp)",), "horovod-0.9-openmpi-4.1-tcp",
     "Horovod 2017, MPI_Allreduce on host memory over TCP"),
    (("horovod allreduce on cpu (mpi over rdma)",), "horovod-0.9-openmpi-4.1-verbs",
     "Horovod 2017, MPI_Allreduce on host memory over RDMA"),
    (("horovod + nccl 2 (tcp sockets)",), "horovod-0.9-nccl-2.0-socket",
     "Horovod 2017 on NCCL 2.0, socket transport"),
    (("horovod + nccl 2 (rdma)",), "horovod-0.9-nccl-2.0-ib", "Horovod 2017 on NCCL 2.0, verbs"),
    (("horovod + nccl", "tensorflow"), "horovod-0.19-tf-nccl-2.7-ib",
     "NGC TensorFlow 1.15 containers of 2020 ship Horovod 0.19 (float32 gradients under AMP)"),
    (("horovod + nccl", "mxnet-22.10"), "horovod-0.21-nccl-2.7-ib",
     "NGC MXNet 22.10 ships Horovod 0.25 (1 ms cycle, 128 MiB fusion)"),
    (("horovod + nccl",), "horovod-0.19-nccl-2.7-ib",
     "MXNet with Horovod 0.19-0.20 (NGC 20.03-20.12, pip MXNet 1.6 in 2020)"),
    (("pytorch ddp + nccl",), "pytorch-ddp-nccl-2.7-ib", "PyTorch DistributedDataParallel"),
    (("pytorch ddp / apex + nccl", "pytorch:20.03", "dali"), "apex-ddp-o1-nccl-2.7-ib",
     "DLPerf's NGC PyTorch 20.03 ResNet-50 (DeepLearningExamples @46ff370): apex DDP, 10 M-element "
     "buckets, --amp is apex amp O1 (float32 gradients)"),
    (("pytorch ddp / apex + nccl", "pytorch:20.03"), "apex-ddp-bert-nccl-2.7-ib",
     "DLPerf's NGC PyTorch 20.03 BERT (DeepLearningExamples @26c2676 run_pretraining.py): apex "
     "DDP with message_size 250 M elements, one bucket for BERT-base; amp O2"),
    (("pytorch ddp / apex + nccl", "21.11", "pre-training"), "pytorch-ddp-onebucket-nccl-2.7-ib",
     "DeepLearningExamples @729963d BERT pre-training: PyTorch DDP with one bucket "
     "(bucket_cap_mb = the GPU's memory), float16 model"),
    (("pytorch ddp / apex + nccl", "squad"), "apex-ddp-nccl-2.7-ib",
     "DeepLearningExamples @729963d run_squad.py: apex DDP with default 10 M-element buckets, "
     "amp O2"),
    (("tf.distribute (nccl)", "tensorflow 2.3"), "tf-2.3-keras-nccl-2.7-ib",
     "DLPerf's TensorFlow 2.3 ResNet-50 (tensorflow/models r2.3.0 classifier_trainer.py, Keras "
     "fit under MultiWorkerMirroredStrategy): one all-reduce after backward, float32 gradients"),
    (("paddle fleet collective (nccl)", "paddlenlp"), "nccl-2.7-socket",
     "DLPerf PaddlePaddle/bert/scripts/multi_node_train.sh exports NCCL_IB_DISABLE=1: NCCL's "
     "socket transport between nodes (inside one node the same as nccl-2.7-ib)"),
    (("nccl",), "nccl-2.7-ib",
     "NCCL under a framework whose grouping the source does not state (OneFlow, PaddlePaddle "
     "fleet, tf.distribute, APEX): the library only"),
)
# Sources measured before the stacks' libraries existed or without a library stack to express
# (TensorFlow 1.1 parameter servers, NCCL 1 inside TensorFlow) keep the bare formulas.
NO_STACK_SOURCES = ("tf-benchmarks-2017",)
# The bundled node type (datasets/topologies/) of each setup whose machine is one, as a user
# would name it: collectives then run on its links (the flow-level tier). Setups left out and
# why: DLPerf's servers are V100 SXM2 in a hybrid cube mesh but with one HCA and Xeon Gold
# sockets (not a DGX-1's four NICs and Broadwells); DeepOps' DGX-1s ran on two added ConnectX-5
# RoCE ports per node, not the DGX-1's four EDR NICs; the DGX-1 of 2017 has P100s on NVLink 1
# (the bundled DGX-1 is the V100 one); no DGX-2 node type is bundled; the K80 clouds and Uber's
# servers do not state their PCIe layout.
TOPOLOGIES = {
    ("nvidia-dle", "dgx1v-16g"): "dgx1-v100",
    ("nvidia-dle", "dgx1v-32g"): "dgx1-v100",
    ("nvidia-dle", "dgxa100-80g"): "dgx-a100",
    ("nvidia-dle", "dgxa100-40g"): "dgx-a100",
}


def stack_for(source, p):
    """The stack name and the reason for a point, or (None, reason)."""
    if source in NO_STACK_SOURCES:
        return None, "parameter servers or NCCL 1 inside TensorFlow 1.1: no stack"
    words = f"{p.get('collective') or ''} {p.get('framework') or ''} {p.get('table') or ''}".lower()
    for needles, name, why in STACK_RULES:
        if all(n in words for n in needles):
            return name, why
    return None, "no stack for this framework and library"


class DataError(Exception):
    """A bad data file: the message names the file and the place."""


def load_catalog(data_dir):
    with open(os.path.join(data_dir, "hardware", "gpus.json"), encoding="utf-8") as f:
        gpus = {g["name"] for g in json.load(f)["gpus"]}
    with open(os.path.join(data_dir, "hardware", "fabrics.json"), encoding="utf-8") as f:
        fabrics = {x["name"]: x["scope"] for x in json.load(f)["fabrics"]}
    networks = {n[:-5] for n in os.listdir(os.path.join(data_dir, "networks"))
                if n.endswith(".json")}
    stacks = {n[:-5] for n in os.listdir(os.path.join(data_dir, "stacks")) if n.endswith(".json")}
    missing = sorted({name for _, name, _ in STACK_RULES} - stacks)
    if missing:
        raise DataError(f"{os.path.join(data_dir, 'stacks')}: no stack named "
                        f"{', '.join(missing)} (tools/published_eval.py STACK_RULES)")
    return gpus, fabrics, networks, load_pipelines(data_dir)


def load_pipelines(data_dir):
    """The input-pipeline catalog: name -> samples/s per core (docs/published.md)."""
    path = os.path.join(data_dir, "published", "input_pipelines.json")
    rel = shown(path)
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != PIPELINES_SCHEMA:
        raise DataError(f"{rel}: 'schema': expected '{PIPELINES_SCHEMA}'")
    pipelines = doc.get("pipelines")
    if not isinstance(pipelines, dict):
        raise DataError(f"{rel}: 'pipelines' must be an object of named pipelines")
    out = {}
    for name, entry in pipelines.items():
        where = f"{rel}: pipeline '{name}'"
        if not isinstance(entry, dict) or not positive(entry.get("samples_per_s_per_core")):
            raise DataError(f"{where}: 'samples_per_s_per_core' must be a positive number")
        for key in ("source", "as_published", "derivation"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise DataError(f"{where}: '{key}' missing or empty (provenance)")
        out[name] = float(entry["samples_per_s_per_core"])
    return out


def source_files(data_dir, only):
    base = os.path.join(data_dir, "published")
    out = []
    for sid in sorted(os.listdir(base)):
        path = os.path.join(base, sid, sid + ".json")
        if not os.path.isdir(os.path.join(base, sid)):
            continue
        if not os.path.isfile(path):
            raise DataError(f"{os.path.join(base, sid)}: no {sid}.json in the source folder")
        if not only or sid in only:
            out.append(path)
    missing = set(only or []) - {os.path.basename(os.path.dirname(p)) for p in out}
    if missing:
        raise DataError(f"{base}: no source named {', '.join(sorted(missing))}")
    return out


def shown(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


# The largest number a published file may hold (a rate, a size, a count): 1e15, as dagsgd's own
# readers (docs/limits.md); beyond it, or not finite, is a typo or a corrupted file.
MAX_NUMBER = 1e15


def positive(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and 0 < v <= MAX_NUMBER)


def _refuse_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} is beyond the range of a double")
    return v


def load_json(path):
    """A JSON file as Python values: NaN, Infinity and numbers beyond double (1e999) refused,
    every error a DataError naming the file and the line."""
    rel = shown(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise DataError(f"{rel}: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        raise DataError(f"{rel}: not UTF-8 (byte {e.start})")
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise DataError(f"{rel}: line {e.lineno}: {e.msg}")
    except ValueError as e:
        raise DataError(f"{rel}: {e}")
    except RecursionError:
        raise DataError(f"{rel}: nested too deeply")


def validate(path, doc, catalog):
    """Raises DataError at the first problem; returns the points by id."""
    gpus, fabrics, networks, pipelines = catalog
    rel = shown(path)

    def fail(where, what):
        raise DataError(f"{rel}: {where}: {what}")

    if not isinstance(doc, dict):
        fail("top level", "not a JSON object")
    if doc.get("schema") != SCHEMA:
        fail("'schema'", f"expected '{SCHEMA}', got {doc.get('schema')!r}")
    sid = os.path.basename(os.path.dirname(path))
    if doc.get("id") != sid:
        fail("'id'", f"{doc.get('id')!r} differs from the folder name '{sid}'")
    for key in PROVENANCE:
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            fail(f"'{key}'", "missing or empty (provenance)")
    if not doc.get("url") and not (doc.get("repository") and doc.get("path")):
        fail("provenance", "needs 'url' or 'repository' and 'path'")
    setups = doc.get("setups")
    if not isinstance(setups, dict) or not setups:
        fail("'setups'", "missing or empty")
    for name, s in setups.items():
        where = f"setup '{name}'"
        if not isinstance(s, dict):
            fail(where, "must be an object")
        for key in ("gpu", "intra", "inter"):
            if s.get(key) is not None and not isinstance(s[key], str):
                fail(where, f"'{key}' must be a name")
        if not isinstance(s.get("as_published"), str):
            fail(where, "'as_published' missing")
        if s.get("gpu") is not None and s["gpu"] not in gpus:
            fail(where, f"gpu '{s['gpu']}' is not in datasets/hardware/gpus.json")
        for key, scopes in (("intra", ("intra", "both")), ("inter", ("inter", "both"))):
            f = s.get(key)
            if f is not None and fabrics.get(f) not in scopes:
                fail(where, f"{key} fabric '{f}' is not an {key}-node fabric of "
                            "datasets/hardware/fabrics.json")
        if not (isinstance(s.get("gpus_per_node"), int) and s["gpus_per_node"] > 0):
            fail(where, "'gpus_per_node' must be a positive integer")
        if "cpu_cores_per_node" in s:
            if not (isinstance(s["cpu_cores_per_node"], int) and s["cpu_cores_per_node"] > 0):
                fail(where, "'cpu_cores_per_node' must be a positive integer")
            if not isinstance(s.get("cpu_as_published"), str) or not s["cpu_as_published"]:
                fail(where, "'cpu_as_published' missing (where the core count comes from)")
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        fail("'points'", "missing or empty")
    by_id = {}
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            fail(f"point {i}", "must be an object")
        where = f"point {i} ({p.get('id', '?')!r})"
        for key in ("kind", "setup", "model", "precision", "fabric", "intra", "inter",
                    "reference", "input_pipeline"):
            if p.get(key) is not None and not isinstance(p[key], str):
                fail(where, f"'{key}' must be a string, got {p[key]!r}")
        pid = p.get("id")
        if not isinstance(pid, str) or not pid:
            fail(where, "'id' missing")
        if pid in by_id:
            fail(where, "duplicate id")
        by_id[pid] = p
        if p.get("kind") not in KINDS:
            fail(where, f"'kind' must be one of {', '.join(KINDS)}")
        if p.get("setup") not in setups:
            fail(where, f"setup {p.get('setup')!r} is not in 'setups'")
        if not isinstance(p.get("table"), str) or not p["table"]:
            fail(where, "'table' (where in the source) missing")
        if not positive(p.get("value")):
            fail(where, f"'value' must be a positive number, got {p.get('value')!r}")
        if not isinstance(p.get("unit"), str):
            fail(where, "'unit' missing")
        for key in ("nodes", "gpus_per_node"):
            if not isinstance(p.get(key), int) or isinstance(p[key], bool) or \
                    not 0 <= p[key] <= 2 ** 20:
                fail(where, f"'{key}' must be an integer from 0 to 2^20")
        if p.get("fabric") is not None and p["fabric"] not in fabrics:
            fail(where, f"fabric '{p['fabric']}' is not in datasets/hardware/fabrics.json")
        if p["kind"] == "microbenchmark":
            if not positive(p.get("size_bytes")) or not positive(p.get("ranks")):
                fail(where, "'size_bytes' and 'ranks' must be positive")
            continue
        if p.get("model") not in networks:
            fail(where, f"model {p.get('model')!r} is not in datasets/networks")
        if not (isinstance(p.get("batch_per_gpu"), int) and 0 < p["batch_per_gpu"] < 2 ** 31):
            fail(where, "'batch_per_gpu' must be an integer from 1 to 2^31-1")
        if p.get("precision") not in PRECISION:
            fail(where, f"'precision' must be one of {', '.join(PRECISION)}")
        if p["unit"] not in THROUGHPUT_UNITS:
            fail(where, f"'unit' must be one of {', '.join(THROUGHPUT_UNITS)}")
        if p["nodes"] < 1 or p["gpus_per_node"] < 1:
            fail(where, "'nodes' and 'gpus_per_node' must be at least 1")
        for key in ("intra", "inter"):
            f = p.get(key)
            if f is not None and f not in fabrics:
                fail(where, f"{key} fabric '{f}' is not in datasets/hardware/fabrics.json")
        if p["kind"] == "single_gpu_reference":
            if p["nodes"] * p["gpus_per_node"] != 1:
                fail(where, "a single-GPU reference must have 1 node of 1 GPU")
            continue
        if p["nodes"] * p["gpus_per_node"] < 2:
            fail(where, "an end-to-end point needs at least 2 GPUs")
        # The name itself is dagsgd's to check (its one table of algorithms): an unknown one
        # fails the point's run with the valid names.
        if p.get("algorithm") is not None and \
                (not isinstance(p["algorithm"], str) or not p["algorithm"]):
            fail(where, "'algorithm' must be an algorithm's name (see dagsgd predict --help)")
        if "input_pipeline" in p:
            if p["input_pipeline"] not in pipelines:
                fail(where, f"input_pipeline {p['input_pipeline']!r} is not in "
                            "datasets/published/input_pipelines.json")
            if not isinstance(p.get("input_pipeline_source"), str) or \
                    not p["input_pipeline_source"]:
                fail(where, "'input_pipeline_source' missing (why the point used that pipeline)")
            if "cpu_cores_per_node" not in setups[p["setup"]]:
                fail(where, f"setup {p['setup']!r} has no 'cpu_cores_per_node' for its "
                            "input pipeline")
        if "not_expressible" in p:
            if not isinstance(p["not_expressible"], str) or not p["not_expressible"]:
                fail(where, "'not_expressible' must be a reason")
        elif p.get("algorithm") is None:
            fail(where, "'algorithm' missing (or give 'not_expressible')")
    for pid, p in by_id.items():
        ref = p.get("reference")
        if ref is None:
            continue
        r = by_id.get(ref)
        if r is None or r["kind"] != "single_gpu_reference":
            fail(f"point {pid!r}", f"reference {ref!r} is not a single_gpu_reference here")
        if r["model"] != p["model"] or PRECISION[r["precision"]] != PRECISION[p["precision"]]:
            fail(f"point {pid!r}", f"reference {ref!r} has another model or precision")
        if r["batch_per_gpu"] != p["batch_per_gpu"] and "not_expressible" not in p:
            fail(f"point {pid!r}", f"reference {ref!r} has another batch per GPU")
    return by_id


def predict_command(binary, p, setup, ref, stack=None, pipelines=None, no_effects=None,
                    topology=None):
    """The dagsgd predict arguments for one end-to-end point, or (None, reason)."""
    if "not_expressible" in p:
        return None, p["not_expressible"]
    gpu = p.get("gpu", setup.get("gpu"))
    if gpu is None:
        return None, "the GPU is not in the catalog"
    intra = p.get("intra", setup.get("intra"))
    inter = p.get("inter", setup.get("inter"))
    if p["gpus_per_node"] > 1 and intra is None:
        return None, "no intra-node fabric for the setup"
    if p["nodes"] > 1 and inter is None:
        return None, "no inter-node fabric for the setup"
    cmd = [binary, "predict", "--network", p["model"], "--batch", str(p["batch_per_gpu"]),
           "--gpu", gpu, "--nodes", str(p["nodes"]), "--gpus-per-node", str(p["gpus_per_node"]),
           "--algorithm", p["algorithm"], "--precision", PRECISION[p["precision"]], "--json"]
    if stack is not None:
        # The stack's framework sets the grouping unless the source states the overlap.
        cmd += ["--stack", stack]
        if p.get("overlap"):
            cmd += ["--overlap", p["overlap"]]
    else:
        cmd += ["--overlap", p.get("overlap") or "wfbp"]
    if intra is not None:
        cmd += ["--intra", intra]
    if inter is not None:
        cmd += ["--inter", inter]
    if ref is not None:
        # Seconds per single-GPU iteration: the point's batch at the reference's samples/s
        # (the same batch in every evaluated point of the set).
        step = p["batch_per_gpu"] / ref["value"]
        cmd += ["--step-time", f"{step:.9g}"]
    if pipelines and p.get("input_pipeline") in pipelines:
        # What the node's cores decode and augment per second, shared by its GPUs.
        rate = pipelines[p["input_pipeline"]] * setup["cpu_cores_per_node"]
        cmd += ["--input-rate", f"{rate:.9g}"]
    if no_effects:
        cmd += ["--no-effects", no_effects]
    if topology:
        cmd += ["--topology", topology]
    return cmd, None


def run_point(cmd, data):
    env = dict(os.environ, DAGSGD_DATA_DIR=os.path.abspath(data))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    try:
        return json.loads(proc.stdout), None
    except json.JSONDecodeError as e:
        return None, f"unreadable JSON from dagsgd: {e}"


def link_class(p, setup):
    """The link the point's gradient exchange crosses: the inter fabric across nodes."""
    if p["nodes"] > 1:
        return p.get("inter", setup.get("inter")) or "?"
    return p.get("intra", setup.get("intra")) or "?"


def evaluate(files, binary, jobs, catalog, validate_only, data, stacks=True, pipelines=True,
             no_effects=None, topologies=True):
    rows, micro = [], {}
    work = []
    for path in files:
        doc = load_json(path)
        try:
            by_id = validate(path, doc, catalog)
        except (TypeError, AttributeError, KeyError) as e:
            # A value of a type no check above expected (a list where a name goes, ...).
            raise DataError(f"{shown(path)}: malformed: {type(e).__name__}: {e}")
        sid = doc["id"]
        for p in doc["points"]:
            if p["kind"] == "microbenchmark":
                micro[sid] = micro.get(sid, 0) + 1
            if p["kind"] != "end_to_end":
                continue
            setup = doc["setups"][p["setup"]]
            ref = by_id.get(p.get("reference"))
            row = {"source": sid, "point": p["id"], "model": p["model"],
                   "gpus": p["nodes"] * p["gpus_per_node"], "nodes": p["nodes"],
                   "gpus_per_node": p["gpus_per_node"], "gpu": p.get("gpu", setup.get("gpu")),
                   "precision": p["precision"], "batch_per_gpu": p["batch_per_gpu"],
                   "link": link_class(p, setup), "framework": p.get("framework"),
                   "measured": p["value"], "unit": p["unit"], "step_time_from": p.get("reference")}
            stack, why = stack_for(sid, p) if stacks else (None, "--no-stacks")
            row["stack"] = stack
            row["stack_reason"] = why
            row["input_pipeline"] = p.get("input_pipeline")
            topology = TOPOLOGIES.get((sid, p["setup"])) if topologies else None
            row["topology"] = topology
            cmd, reason = predict_command(binary, p, setup, ref, stack,
                                          catalog[3] if pipelines else None, no_effects,
                                          topology)
            if cmd is None:
                row["skipped"] = reason
            else:
                row["command"] = " ".join(["dagsgd"] + cmd[1:])
                work.append((row, cmd))
            rows.append(row)
    if validate_only:
        return rows, micro, []
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = pool.map(lambda rc: (rc[0], run_point(rc[1], data)), work)
        for row, (out, err) in results:
            if out is None:
                row["failed"] = err
                failures.append(row)
                continue
            pred = out["throughput_samples_per_s"]
            row["predicted"] = round(pred, 3)
            row["error"] = round((pred - row["measured"]) / row["measured"], 6)
            row["comm_exposed_share"] = round(
                out["breakdown"]["comm_exposed"] / out["iteration_time_s"], 4)
            row["algorithm_used"] = out.get("algorithm")
            row["groups"] = len(out.get("groups") or [])
            row["effects_s"] = {k: v["time_s"] for k, v in (out.get("effects") or {}).items()}
    return rows, micro, failures


def summarize(rows, key):
    groups = {}
    for r in rows:
        if "error" in r:
            groups.setdefault(key(r), []).append(r["error"])
    out = []
    for k in sorted(groups, key=lambda k: (isinstance(k, str), k)):
        errs = groups[k]
        out.append({"group": k, "points": len(errs),
                    "mean_abs_error": round(statistics.fmean(abs(e) for e in errs), 6),
                    "mean_signed_error": round(statistics.fmean(errs), 6),
                    "worst_abs_error": round(max(abs(e) for e in errs), 6)})
    return out


SUMMARIES = (("source", lambda r: r["source"]), ("link", lambda r: r["link"]),
             ("stack", lambda r: r.get("stack") or "-"), ("model", lambda r: r["model"]),
             ("GPUs", lambda r: r["gpus"]),
             ("nodes", lambda r: "single-node" if r["nodes"] == 1 else "multi-node"))


def pct(x):
    return f"{100 * x:+.1f}%"


def print_report(rows, micro, markdown):
    predicted = [r for r in rows if "error" in r]
    skipped = [r for r in rows if "skipped" in r]
    if markdown:
        print("| source | point | GPUs | link | stack | measured | predicted | error |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "error" in r:
                print(f"| {r['source']} | {r['point']} | {r['gpus']} | {r['link']} | "
                      f"{r.get('stack') or '-'} | {r['measured']:g} | {r['predicted']:.1f} | "
                      f"{pct(r['error'])} |")
        print()
    else:
        print(f"{'source':22s} {'point':44s} {'GPUs':>4s} {'link':13s} {'measured':>10s} "
              f"{'predicted':>10s} {'error':>8s}")
        for r in rows:
            if "error" in r:
                print(f"{r['source']:22s} {r['point']:44s} {r['gpus']:4d} {r['link']:13s} "
                      f"{r['measured']:10g} {r['predicted']:10.1f} {pct(r['error']):>8s}")
    print(f"\nskipped ({len(skipped)}):")
    for r in skipped:
        print(f"  {r['source']} {r['point']}: {r['skipped']}")
    for title, key in SUMMARIES:
        print(f"\nby {title}:" if not markdown else f"\n| {title} | points | mean abs | "
              "mean signed | worst |\n|---|---|---|---|---|")
        for s in summarize(rows, key):
            if markdown:
                print(f"| {s['group']} | {s['points']} | {100 * s['mean_abs_error']:.1f}% | "
                      f"{pct(s['mean_signed_error'])} | {100 * s['worst_abs_error']:.1f}% |")
            else:
                print(f"  {str(s['group']):22s} {s['points']:4d} points  mean |error| "
                      f"{100 * s['mean_abs_error']:5.1f}%  mean signed {pct(s['mean_signed_error']):>7s}"
                      f"  worst {100 * s['worst_abs_error']:5.1f}%")
    if predicted:
        errs = [abs(r["error"]) for r in predicted]
        print(f"\noverall: {len(predicted)} predicted, {len(skipped)} skipped, mean |error| "
              f"{100 * statistics.fmean(errs):.1f}%, worst {100 * max(errs):.1f}%")
    print("microbenchmark points per source: " +
          ", ".join(f"{k} {v}" for k, v in sorted(micro.items())))


def default_binary():
    for preset in ("release", "dev"):
        path = os.path.join(ROOT, "build", preset, "tools", "dagsgd")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dagsgd", help="the dagsgd binary (default: build/release, then build/dev)")
    ap.add_argument("--data", default=os.path.join(ROOT, "datasets"),
                    help="datasets folder: the published files, the catalogs and the stacks the "
                         "predictions use")
    ap.add_argument("--json", metavar="OUT", help="write the table and summaries as JSON")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--validate-only", action="store_true",
                    help="check the files and list what would run; run nothing")
    ap.add_argument("--source", action="append", help="only this source id (repeatable)")
    ap.add_argument("--jobs", type=int, default=2, help="dagsgd runs at once (default 2)")
    ap.add_argument("--no-stacks", action="store_true",
                    help="predict every point without a software stack (the bare formulas)")
    ap.add_argument("--no-input-pipelines", action="store_true",
                    help="predict without the points' input pipelines (no --input-rate)")
    ap.add_argument("--no-topologies", action="store_true",
                    help="predict without the bundled node types of the machines that are one "
                         "(the two-fabric formulas)")
    ap.add_argument("--no-effects", metavar="LIST",
                    help="predict with these effects around the wire left out (dagsgd predict "
                         "--no-effects; docs/gpu-effects.md)")
    args = ap.parse_args()
    binary = args.dagsgd or default_binary()
    if not args.validate_only and (binary is None or not os.access(binary, os.X_OK)):
        print("published_eval: no dagsgd binary (build one, or give --dagsgd)", file=sys.stderr)
        return 2
    try:
        catalog = load_catalog(args.data)
        files = source_files(args.data, args.source)
        rows, micro, failures = evaluate(files, binary, args.jobs, catalog, args.validate_only,
                                         args.data, stacks=not args.no_stacks,
                                         pipelines=not args.no_input_pipelines,
                                         no_effects=args.no_effects,
                                         topologies=not args.no_topologies)
    except DataError as e:
        print(f"published_eval: {e}", file=sys.stderr)
        return 2
    except (OSError, KeyError, json.JSONDecodeError) as e:
        print(f"published_eval: {e}", file=sys.stderr)
        return 2
    if args.validate_only:
        todo = sum(1 for r in rows if "command" in r)
        print(f"{len(files)} sources valid: {todo} end-to-end points to predict, "
              f"{len(rows) - todo} skipped, microbenchmark points "
              f"{sum(micro.values())}")
        return 0
    print_report(rows, micro, args.markdown)
    for r in failures:
        print(f"FAILED {r['source']} {r['point']}: {r['failed']}", file=sys.stderr)
    if args.json:
        out = {"rows": rows,
               "stacks": not args.no_stacks,
               "input_pipelines": not args.no_input_pipelines,
               "effects_off": args.no_effects or "",
               "topologies": not args.no_topologies,
               "summary": {k.lower(): summarize(rows, f) for k, f in SUMMARIES},
               "overall": summarize(rows, lambda r: "all"),
               "microbenchmark_points": micro}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
