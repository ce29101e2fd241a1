#!/usr/bin/env python3
"""Markdown tables of a `dagsgd validate` result (OUT/validation.json) for docs/validation.md.

usage: tools/validation_tables.py OUT/validation.json [OTHER/validation.json LABEL]

Prints the mean and worst absolute error per mode, then per group (model, ranks, overlap, and
whether the target profile is faster or slower than the source), then every prediction with
every mode side by side, and (for a grid measured with `--repeats N`) how far each
configuration's repeats lie from its median run. With a second file (e.g. the same grid re-predicted with
`--reuse --no-cpu-model`) the summary gains a column for it, labelled LABEL.
"""
import json
import sys


def fail(message):
    print(f"validation_tables: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"'{path}': {e}")
    if "predictions" not in doc or "profiles" not in doc:
        fail(f"'{path}': not a dagsgd validate result (no 'predictions')")
    return doc


# The modes of `dagsgd validate`, in table order, with their labels.
MODES = {"profile": "(a)", "calibrated": "(b)", "transfer": "(c)", "stack": "(d)"}


def pct(x):
    return f"{100 * x:+.1f}%"


def stats(rows):
    errs = [abs(r["error"]) for r in rows if "error" in r]
    if not errs:
        return "-", "-", 0
    return f"{100 * sum(errs) / len(errs):.1f}%", f"{100 * max(errs):.1f}%", len(errs)


def exchange(p):
    """The run's `dagsgd train --exchange` (files before the key measured allreduce)."""
    return p.get("exchange", "allreduce")


def model_label(p):
    return p["model"] if exchange(p) == "allreduce" else f'{p["model"]} ({exchange(p)})'


def groups(doc):
    rate = {p["name"]: p["rate_gbps"] for p in doc["profiles"]}
    ok = [p for p in doc["predictions"] if "error" in p]
    out = [("all", lambda p: True)]
    for m in sorted({p["model"] for p in ok}):
        out.append((m, lambda p, m=m: p["model"] == m))
    for r in sorted({p["ranks"] for p in ok}):
        out.append((f"{r} ranks", lambda p, r=r: p["ranks"] == r))
    for o in sorted({p["overlap"] for p in ok}):
        out.append((o, lambda p, o=o: p["overlap"] == o))
    exchanges = sorted({exchange(p) for p in ok})
    if exchanges != ["allreduce"]:
        for e in exchanges:
            out.append((f"exchange {e}", lambda p, e=e: exchange(p) == e))
    out.append(("faster target", lambda p: rate[p["target"]] > rate[p["source"]]))
    out.append(("slower target", lambda p: rate[p["target"]] < rate[p["source"]]))
    return ok, out


def main(argv):
    if len(argv) not in (2, 4):
        fail(__doc__.strip().splitlines()[2])
    doc = load(argv[1])
    other = load(argv[2]) if len(argv) == 4 else None
    label = argv[3] if other else ""
    ok, by = groups(doc)
    other_ok = [p for p in other["predictions"] if "error" in p] if other else []

    head = "| group | mode | n | mean abs error | worst |"
    rule = "|---|---|---:|---:|---:|"
    if other:
        head += f" {label}: mean / worst |"
        rule += "---:|"
    print(head)
    print(rule)
    modes = [m for m in MODES if any(p["mode"] == m for p in ok)]
    for name, keep in by:
        for mode in modes:
            rows = [p for p in ok if p["mode"] == mode and keep(p)]
            mean, worst, n = stats(rows)
            line = f"| {name} | {mode} | {n} | {mean} | {worst} |"
            if other:
                m2, w2, _ = stats([p for p in other_ok if p["mode"] == mode and keep(p)])
                line += f" {m2} / {w2} |"
            print(line)

    print()
    print("| source → target | ranks | overlap | model | measured (s) | " +
          " | ".join(f"{MODES[m]} {m} (s) | err {MODES[m]}" for m in modes) + " |")
    print("|---|---:|---|---|---:|" + "---:|---:|" * len(modes))
    key = lambda p: (p["source"], p["target"], p["ranks"], p["overlap"], model_label(p))
    by_key = {}
    for p in doc["predictions"]:
        by_key.setdefault(key(p), {})[p["mode"]] = p
    for k, of_key in by_key.items():
        rows = [of_key.get(m, {}) for m in modes]
        measured = next(p["measured_iteration_s"] for p in rows if p)
        cells = []
        for p in rows:
            if "predicted_iteration_s" in p:
                cells += [f"{p['predicted_iteration_s']:.3f}", pct(p["error"])]
            else:
                cells += ["failed", "-"]
        print(f"| {k[0]} → {k[1]} | {k[2]} | {k[3]} | {k[4]} | "
              f"{measured:.3f} | " + " | ".join(cells) + " |")

    rep = doc.get("repeatability")
    if rep:
        print()
        print(f"Repeats: {doc.get('repeats')} runs per configuration; measured: the median "
              f"mean iteration, trace: the repeat whose slowest rank computes the median time "
              f"(marked *). The repeats lie within {100 * rep['mean_spread']:.1f}% of the median "
              f"on average, {100 * rep['worst_spread']:.1f}% at worst ({rep['worst']}).")
        print()
        print("| profile | ranks | overlap | model | median (s) | repeats: mean iteration / "
              "slowest rank's compute (ms) | spread |")
        print("|---|---:|---|---|---:|---|---:|")
        for m in doc["measured"]:
            if "repeats" not in m:
                continue
            runs = ", ".join(
                f"{1e3 * r['mean_iteration_s']:.1f} / {1e3 * r['slowest_rank_compute_s']:.1f}"
                + ("*" if r["run_dir"] == m["run_dir"] else "") for r in m["repeats"])
            print(f"| {m['profile']} | {m['ranks']} | {m['overlap']} | {model_label(m)} | "
                  f"{m['mean_iteration_s']:.3f} | {runs} | {100 * m['repeat_spread']:.1f}% |")


if __name__ == "__main__":
    main(sys.argv)
