#!/usr/bin/env bash
# The short `dagsgd validate` (--quick: one source/target pair, 2 ranks, about a minute): it must
# measure both runs, predict each from the other in all three modes, and leave no namespace behind.
# Exits 77 (ctest SKIP) when the machine cannot run the emulated cluster.
set -uo pipefail
DAGSGD="${1:?usage: validate_quick_test.sh DAGSGD EMUCLUSTER OUTDIR}"
EMU="${2:?}"
OUT="${3:?}"
if ! why="$("$EMU" check 2>&1)"; then
  echo "SKIP: the emulated cluster cannot run here: $why"
  exit 77
fi
rm -rf "$OUT"
"$DAGSGD" validate --quick --emucluster "$EMU" --out "$OUT"
rc=$?
# Every cluster the run built (its "prefix emcNNN" lines in the step logs) must be gone; other
# runs on the machine may hold namespaces of their own.
prefixes="$(cat "$OUT"/logs/*.log 2>/dev/null | sed -n 's/.*prefix \(emc[0-9]*\).*/\1/p' | sort -u)"
left=""
for p in $prefixes; do
  ip netns list | awk '{print $1}' | grep -q "^$p" && left+=" $p"
done
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: dagsgd validate --quick exited $rc"; fail=1; }
[[ -n $prefixes ]] || { echo "FAIL: no 'prefix emcNNN' line in $OUT/logs"; fail=1; }
[[ -z $left ]] || { echo "FAIL: namespaces of$left left behind"; fail=1; }
python3 - "$OUT/validation.json" <<'PY' || fail=1
import json, sys
doc = json.load(open(sys.argv[1]))
measured = [m for m in doc["measured"] if "mean_iteration_s" in m]
assert len(measured) == 2, f"expected 2 measured runs, got {doc['measured']}"
preds = [p for p in doc["predictions"] if "predicted_iteration_s" in p]
modes = sorted({p["mode"] for p in preds})
assert modes == ["calibrated", "profile", "stack", "transfer"], f"predictions in 4 modes expected, got {modes}"
assert len(preds) == 8, f"expected 8 predictions (2 directions x 4 modes), got {len(preds)}"
assert doc["summary"]["transfer"]["predictions"] == 2, doc["summary"]
assert doc["summary"]["stack"]["predictions"] == 2, doc["summary"]
for p in preds:
    assert p["source"] != p["target"] and p["predicted_iteration_s"] > 0, p
# Mode (b) prices the collectives from the target's measured latencies, a stream of calls
# (the benchmark runs back to back: one time per call, no slowest-rank or fastest-rank column),
# and replay runs the ranks' computation on the machine's cores.
import glob, os
out = os.path.dirname(sys.argv[1])
for log in glob.glob(os.path.join(out, "bench", "*.log")):
    assert "back to back" in open(log).readline(), log
fabrics = glob.glob(os.path.join(out, "fabrics", "*-calibrated.json"))
assert len(fabrics) == 2, fabrics
for f in fabrics:
    curve = json.load(open(f))["allreduce_measured"][0]
    assert curve["ranks"] == 2 and len(curve["latency_us"]) == len(curve["sizes_bytes"]), f
    assert "max_latency_us" not in curve and "min_latency_us" not in curve, f
assert doc["host_cpu_model"] is True, doc["host_cpu_model"]
replays = glob.glob(os.path.join(out, "predictions", "*_calibrated.json"))
assert replays and all("host_cpus" in json.load(open(r)) for r in replays), replays
# Mode (c): a stack fitted on each source profile, written where --stack FILE can load it.
stacks = sorted(glob.glob(os.path.join(out, "fabrics", "*-stack.json")))
assert len(stacks) == 2, stacks
for f in stacks:
    assert json.load(open(f))["schema"] == "dagsgd-stack/1", f
print("ok: validation.json has 2 measurements and 8 cross-fabric predictions")
PY
# --reuse without grid flags re-predicts the grid the directory records (grid.json) instead of
# measuring the default grid's runs; a second validate on a directory in use is refused.
if ! note="$("$DAGSGD" validate --reuse --out "$OUT" --emucluster "$EMU" 2>&1 >/dev/null)"; then
  echo "FAIL: validate --reuse --out $OUT exited non-zero: $note"; fail=1
elif ! grep -q "grid recorded in $OUT/grid.json" <<<"$note" || grep -q "validate: measured" <<<"$note"; then
  echo "FAIL: validate --reuse did not re-predict the recorded grid alone: $note"; fail=1
fi
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["measured"]; assert len(m)==2, m' \
  "$OUT/validation.json" || { echo "FAIL: --reuse changed the grid"; fail=1; }
if command -v flock >/dev/null; then
  msg="$(flock "$OUT/.validate.lock" "$DAGSGD" validate --reuse --out "$OUT" --emucluster "$EMU" 2>&1)"
  rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q "in use by another" <<<"$msg"; then
    echo "FAIL: a validate on a directory in use: exit $rc, '$msg' (want 2, 'in use by another')"
    fail=1
  fi
fi
# --repeats 2 on the same grid measures only each configuration's second run (OUT/runs/ID.r2)
# and each profile's second micro-benchmark,
# measures each configuration as the faster of two, predicts from the trace whose slowest rank
# computes less, and says how far the repeats lie.
if ! note="$("$DAGSGD" validate --quick --reuse --repeats 2 --out "$OUT" --emucluster "$EMU" 2>&1 >/dev/null)"; then
  echo "FAIL: validate --quick --reuse --repeats 2 exited non-zero: $note"; fail=1
elif [[ $(grep -c "validate: measured" <<<"$note") -ne 2 ]] || ! grep -q "measured .*\.r2 " <<<"$note"; then
  echo "FAIL: --repeats 2 should measure the two .r2 runs alone: $note"; fail=1
fi
python3 - "$OUT" <<'PY' || fail=1
import json, os, sys
out = sys.argv[1]
doc = json.load(open(os.path.join(out, "validation.json")))
assert doc["repeats"] == 2, doc["repeats"]
assert json.load(open(os.path.join(out, "grid.json")))["repeats"] == 2
for m in doc["measured"]:
    reps = m["repeats"]
    assert [r["run_dir"] for r in reps] == [reps[0]["run_dir"], reps[0]["run_dir"] + ".r2"], reps
    assert m["mean_iteration_s"] == min(r["mean_iteration_s"] for r in reps), m
    assert all(r["slowest_rank_compute_s"] > 0 for r in reps), reps
    assert m["run_dir"] == min(reps, key=lambda r: r["slowest_rank_compute_s"])["run_dir"], m
assert doc["repeatability"]["configurations"] == 2, doc["repeatability"]
# The micro-benchmark runs once per round too; calibrate reads the per-size median of the two.
for prof in ("emu-600m", "emu-250m"):
    stem = os.path.join(out, "bench", prof + "_p2")
    assert os.path.isfile(stem + ".r2.log"), stem
    head = open(stem + ".median.log").readline()
    assert "median of each column over 2 runs" in head, head
    fabric = json.load(open(os.path.join(out, "fabrics", prof + "_p2-calibrated.json")))
    assert stem.split("/")[-1] + ".median.log" in fabric["source"], fabric["source"]
assert len([p for p in doc["predictions"] if "predicted_iteration_s" in p]) == 8
print("ok: --repeats 2 measures the median run and predicts from the median trace")
PY
# The docs' tables come from tools/validation_tables.py (beside the cluster script).
tables="$(dirname "$EMU")/validation_tables.py"
if ! out="$("$tables" "$OUT/validation.json")"; then
  echo "FAIL: $tables $OUT/validation.json"; fail=1
elif ! grep -q '^| all | calibrated | 2 |' <<<"$out"; then
  echo "FAIL: validation_tables.py printed no summary row for the 2 calibrated predictions"
  echo "$out"; fail=1
fi
exit "$fail"
