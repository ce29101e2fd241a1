#!/usr/bin/env python3
"""Checks of tools/published_eval.py and the published-measurement set (ctest label `published`).

  validate                 every file passes the schema and catalog checks
  bad-input DIR            broken copies of the data are refused with exit 2 and a message
                           naming the file and the place
  evaluate DAGSGD OUT      the evaluation runs; every end-to-end point in the files is in its
                           table once, either predicted (a positive throughput, a finite error)
                           or skipped with a reason
"""

import json
import math
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "published_eval.py")
DATA = os.path.join(ROOT, "datasets")


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          check=False)


def sources():
    """(id, document) of every source folder (input_pipelines.json beside them is a catalog)."""
    base = os.path.join(DATA, "published")
    for sid in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, sid)):
            with open(os.path.join(base, sid, sid + ".json"), encoding="utf-8") as f:
                yield sid, json.load(f)


def end_to_end_points():
    return {(sid, p["id"]) for sid, doc in sources() for p in doc["points"]
            if p["kind"] == "end_to_end"}


def check(cond, what, failures):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def validate():
    failures = []
    r = run("--validate-only")
    check(r.returncode == 0, f"published_eval --validate-only exits 0 ({r.stderr.strip()})",
          failures)
    return failures


def broken_copy(dst, source, mutate):
    """A datasets folder holding the catalogs, the networks and one mutated source file."""
    shutil.rmtree(dst, ignore_errors=True)
    for sub in ("hardware", "networks", "stacks"):
        shutil.copytree(os.path.join(DATA, sub), os.path.join(dst, sub))
    os.makedirs(os.path.join(dst, "published", source))
    shutil.copy(os.path.join(DATA, "published", "input_pipelines.json"),
                os.path.join(dst, "published"))
    with open(os.path.join(DATA, "published", source, source + ".json"), encoding="utf-8") as f:
        doc = json.load(f)
    mutate(doc)
    path = os.path.join(dst, "published", source, source + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def first(doc, kind):
    return next(p for p in doc["points"] if p["kind"] == kind)


def bad_input(work):
    failures = []
    cases = [
        ("no licence", "tf-benchmarks-2017", lambda d: d.pop("licence"), "'licence'"),
        ("unknown GPU", "dlperf-2020",
         lambda d: d["setups"]["dlperf-4x8v100"].update(gpu="v101"), "gpu 'v101'"),
        ("unknown fabric", "horovod-readme-2017",
         lambda d: first(d, "end_to_end").update(inter="25gbe-typo"), "25gbe-typo"),
        ("intra fabric used as inter", "dlperf-2020",
         lambda d: d["setups"]["dlperf-4x8v100"].update(inter="nvlink2"), "inter fabric"),
        ("unknown network", "nvidia-dle",
         lambda d: first(d, "end_to_end").update(model="resnet51"), "resnet51"),
        ("negative value", "tf-benchmarks-2017",
         lambda d: first(d, "end_to_end").update(value=-3), "'value'"),
        ("zero microbenchmark size", "deepops-roce-2020",
         lambda d: first(d, "microbenchmark").update(size_bytes=0), "'size_bytes'"),
        ("dangling reference", "dlperf-2020",
         lambda d: first(d, "end_to_end").update(reference="nowhere"), "reference 'nowhere'"),
        ("duplicate id", "horovod-readme-2017",
         lambda d: d["points"].append(dict(d["points"][0])), "duplicate id"),
        ("unknown input pipeline", "dlperf-2020",
         lambda d: next(p for p in d["points"] if "input_pipeline" in p).update(
             input_pipeline="pil-typo"), "input_pipeline 'pil-typo'"),
        ("input pipeline without the setup's cores", "dlperf-2020",
         lambda d: d["setups"]["dlperf-4x8v100"].pop("cpu_cores_per_node"),
         "'cpu_cores_per_node'"),
        ("zero cores", "dlperf-2020",
         lambda d: d["setups"]["dlperf-4x8v100"].update(cpu_cores_per_node=0),
         "'cpu_cores_per_node' must be a positive integer"),
        # Numbers that are not finite, or beyond any rate, are refused like negative ones.
        ("NaN value", "tf-benchmarks-2017",
         lambda d: first(d, "end_to_end").update(value=float("nan")), "NaN"),
        ("infinite value", "tf-benchmarks-2017",
         lambda d: first(d, "end_to_end").update(value=float("inf")), "Infinity"),
        ("huge value", "tf-benchmarks-2017",
         lambda d: first(d, "end_to_end").update(value=1e300), "'value'"),
        ("huge node count", "tf-benchmarks-2017",
         lambda d: first(d, "end_to_end").update(nodes=10 ** 30), "'nodes'"),
        # Corrupted structure: values of the wrong type, where a name or an object goes.
        ("point that is not an object", "horovod-readme-2017",
         lambda d: d["points"].append("junk"), "must be an object"),
        ("setup that is not an object", "dlperf-2020",
         lambda d: d["setups"].update(extra=[1, 2]), "must be an object"),
        ("setup name that is a list", "dlperf-2020",
         lambda d: first(d, "end_to_end").update(setup=["dlperf-4x8v100"]), "'setup'"),
        ("gpu that is a number", "dlperf-2020",
         lambda d: d["setups"]["dlperf-4x8v100"].update(gpu=7), "'gpu'"),
    ]
    for i, (what, source, mutate, needle) in enumerate(cases):
        dst = os.path.join(work, f"case{i}")
        path = broken_copy(dst, source, mutate)
        r = run("--validate-only", "--data", dst)
        msg = r.stderr.strip()
        check(r.returncode == 2 and needle in msg and os.path.basename(path) in msg
              and len(msg.splitlines()) == 1,
              f"{what}: exit 2 naming the file and the place (got {r.returncode}: {msg!r})",
              failures)
    # A number beyond double (1e999), which Python's json would read as infinity.
    dst = os.path.join(work, "overflow")
    path = broken_copy(dst, "tf-benchmarks-2017",
                       lambda d: first(d, "end_to_end").update(value=12345.678))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("12345.678", "1e999", 1))
    r = run("--validate-only", "--data", dst)
    msg = r.stderr.strip()
    check(r.returncode == 2 and "1e999" in msg and os.path.basename(path) in msg
          and len(msg.splitlines()) == 1,
          f"1e999: exit 2 naming the file (got {r.returncode}: {msg!r})", failures)
    # The pipeline catalog itself: a rate without its source is refused, naming the entry.
    dst = os.path.join(work, "pipelines")
    broken_copy(dst, "dlperf-2020", lambda d: None)
    catalog = os.path.join(dst, "published", "input_pipelines.json")
    with open(catalog, encoding="utf-8") as f:
        doc = json.load(f)
    doc["pipelines"]["python-imagenet-train"].pop("source")
    with open(catalog, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    r = run("--validate-only", "--data", dst)
    msg = r.stderr.strip()
    check(r.returncode == 2 and "input_pipelines.json" in msg and "python-imagenet-train" in msg
          and "'source'" in msg, f"pipeline without a source: exit 2 naming the catalog and "
          f"the entry (got {r.returncode}: {msg!r})", failures)
    return failures


def pipeline_rates():
    """Samples/s per node each point with an input pipeline must be predicted with."""
    with open(os.path.join(DATA, "published", "input_pipelines.json"), encoding="utf-8") as f:
        per_core = {k: v["samples_per_s_per_core"] for k, v in json.load(f)["pipelines"].items()}
    return {(sid, p["id"]): per_core[p["input_pipeline"]]
            * doc["setups"][p["setup"]]["cpu_cores_per_node"]
            for sid, doc in sources() for p in doc["points"] if "input_pipeline" in p}


def evaluate(dagsgd, out):
    failures = []
    r = run("--dagsgd", dagsgd, "--json", out)
    check(r.returncode == 0, f"published_eval exits 0 (got {r.returncode}: "
                             f"{r.stderr.strip()[-300:]!r})", failures)
    if not os.path.isfile(out):
        return failures + ["no JSON written"]
    with open(out, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    seen = [(r["source"], r["point"]) for r in rows]
    expected = end_to_end_points()
    check(len(seen) == len(set(seen)), "each point appears once in the table", failures)
    check(set(seen) == expected,
          f"the table holds the {len(expected)} end-to-end points of the files "
          f"(missing {sorted(expected - set(seen))[:3]}, extra {sorted(set(seen) - expected)[:3]})",
          failures)
    bad = [r for r in rows if not (
        ("predicted" in r and r["predicted"] > 0 and math.isfinite(r["error"]))
        or (isinstance(r.get("skipped"), str) and r["skipped"]))]
    check(not bad, f"every point is predicted or skipped with a reason ({len(bad)} neither: "
                   f"{[r['point'] for r in bad[:3]]})", failures)
    rates = pipeline_rates()
    wrong = [r["point"] for r in rows if (r["source"], r["point"]) in rates and "command" in r
             and f"--input-rate {rates[(r['source'], r['point'])]:.9g}" not in r["command"]]
    check(rates and not wrong, f"the {len(rates)} points with an input pipeline are predicted "
                               f"with --input-rate = per-core rate x cores ({wrong[:3]} not)",
          failures)
    predicted = sum(1 for r in rows if "predicted" in r)
    check(predicted >= 60, f"at least 60 points predicted ({predicted})", failures)
    return failures


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("validate", "bad-input", "evaluate"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "validate":
        failures = validate()
    elif sys.argv[1] == "bad-input":
        failures = bad_input(sys.argv[2])
    else:
        failures = evaluate(sys.argv[2], sys.argv[3])
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
