#!/usr/bin/env python3
"""The Python module against the CLI: each function returns exactly what the command's --json
prints (whatif: the scenarios of results.json, flat), bad input raises ValueError with the CLI's
message and failures RuntimeError.

Run by ctest (python.cli_parity) with PYTHONPATH=<build>/python, DAGSGD_BINARY, DAGSGD_SOURCE_DIR
and DAGSGD_TEST_OUT set.
"""

import json
import os
import shutil
import subprocess
import sys
import unittest

import dagsgd

BINARY = os.environ["DAGSGD_BINARY"]
SOURCE = os.environ["DAGSGD_SOURCE_DIR"]
OUT = os.environ["DAGSGD_TEST_OUT"]
SAMPLES = os.path.join(SOURCE, "datasets", "samples")
KINETO = [os.path.join(SAMPLES, "kineto", f"sampled_rank-{r}.json.gz") for r in (0, 1)]
OSU_LOG = os.path.join(SAMPLES, "b-caffe", "allreduce4.log")
LAYER_LOG = os.path.join(SAMPLES, "b-caffe", "tmp4comm.log")


def cli(*args):
    """The dagsgd binary: (exit code, stdout, stderr)."""
    p = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def rows(result):
    """A whatif result as a list of dicts, whether a DataFrame (pandas) or a list; a DataFrame
    has every column in every row, NaN where a scenario has no such field (JSON has no NaN)."""
    if not hasattr(result, "to_dict"):
        return result
    return [{k: v for k, v in r.items() if v == v} for r in result.to_dict("records")]


def cli_error(*args):
    """The message of the CLI's 'dagsgd: error: ...' line."""
    code, _, err = cli(*args)
    lines = [l for l in err.splitlines() if l.startswith("dagsgd: error: ")]
    assert lines, err
    return code, lines[0][len("dagsgd: error: "):]


class Parity(unittest.TestCase):
    def setUp(self):
        os.makedirs(OUT, exist_ok=True)

    def test_predict(self):
        got = dagsgd.predict(network="resnet50", batch=64, gpu="v100", nodes=8, gpus_per_node=4,
                             intra="pcie3", inter="10gbe", algorithm="auto", overlap="wfbp")
        want = cli_json("predict", "--network", "resnet50", "--batch", "64", "--gpu", "v100",
                        "--nodes", "8", "--gpus-per-node", "4", "--intra", "pcie3", "--inter",
                        "10gbe", "--algorithm", "auto", "--overlap", "wfbp")
        self.assertEqual(got, want)
        self.assertGreater(got["iteration_time_s"], 0)

    def test_predict_options_of_every_kind(self):
        # A float, a file, a string with a colon, and a default left out (None).
        got = dagsgd.predict(network="googlenet-caffe", gpu="k80", nodes=4,
                             inter="10gbe-bcaffe-k80", layer_profile=LAYER_LOG,
                             algorithm="ring", step_time=0.2529, sync="easgd:4,0.5",
                             precision=None)
        want = cli_json("predict", "--network", "googlenet-caffe", "--gpu", "k80", "--nodes", "4",
                        "--inter", "10gbe-bcaffe-k80", "--layer-profile", LAYER_LOG,
                        "--algorithm", "ring", "--step-time", "0.2529", "--sync", "easgd:4,0.5")
        self.assertEqual(got, want)

    def test_calibrate(self):
        fabric = os.path.join(OUT, "my-10gbe.json")
        got = dagsgd.calibrate(OSU_LOG, name="my-10gbe", out=fabric, force=True)
        with open(fabric, encoding="utf-8") as f:
            written = f.read()
        want = cli_json("calibrate", OSU_LOG, "--name", "my-10gbe", "--out", fabric, "--force")
        self.assertEqual(got, want)
        with open(fabric, encoding="utf-8") as f:
            self.assertEqual(f.read(), written)
        # The fitted fabric is usable where the CLI's is.
        self.assertEqual(
            dagsgd.predict(network="alexnet", nodes=4, inter="my-10gbe", fabric_file=fabric),
            cli_json("predict", "--network", "alexnet", "--nodes", "4", "--inter", "my-10gbe",
                     "--fabric-file", fabric))

    def test_analyze_and_replay(self):
        self.assertEqual(dagsgd.analyze(KINETO), cli_json("analyze", *KINETO))
        self.assertEqual(dagsgd.replay(KINETO), cli_json("replay", *KINETO))
        self.assertEqual(dagsgd.replay(KINETO, intra="nvlink2", inter="ib-edr"),
                         cli_json("replay", *KINETO, "--intra", "nvlink2", "--inter", "ib-edr"))
        one = os.path.join(SAMPLES, "kineto", "nccl_data.json.gz")
        self.assertEqual(dagsgd.analyze(one), cli_json("analyze", one))
        # --strict refuses its unmatched flows: the CLI's message, as a ValueError.
        code, message = cli_error("analyze", one, "--strict")
        self.assertEqual(code, 2)
        with self.assertRaises(ValueError) as e:
            dagsgd.analyze(one, strict=True)
        self.assertEqual(str(e.exception), message)

    def test_whatif(self):
        out = os.path.join(OUT, "whatif-cli")
        shutil.rmtree(out, ignore_errors=True)
        args = ["--network", "resnet50", "--fabrics", "10gbe,ib-edr", "--gpus", "1,4,8",
                "--gpus-per-node", "4", "--precision", "fp32,fp16"]
        code, _, err = cli("whatif", *args, "--out", out)
        self.assertEqual(code, 0, err)
        with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
            want = json.load(f)["scenarios"]
        # One flat row per scenario (a DataFrame with pandas).
        want = [dagsgd._flat(s) for s in want]
        got = rows(dagsgd.whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 4, 8],
                                 gpus_per_node=4, precision=("fp32", "fp16")))
        self.assertEqual(got, want)
        self.assertEqual(len(got), 12)
        # With out= the report stays, byte for byte the CLI's.
        kept = os.path.join(OUT, "whatif-py")
        shutil.rmtree(kept, ignore_errors=True)
        self.assertEqual(rows(dagsgd.whatif(network="resnet50", fabrics="10gbe,ib-edr",
                                            gpus="1,4,8", gpus_per_node=4, precision="fp32,fp16",
                                            out=kept)), want)
        for name in ("results.csv", "results.json", "report.md", "report.html"):
            with open(os.path.join(out, name), "rb") as a, open(os.path.join(kept, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_whatif_into_pandas(self):
        try:
            import pandas
        except ImportError:
            self.skipTest("pandas is not installed (Debian: python3-pandas, tools/setup)")
        df = dagsgd.whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 8],
                           gpus_per_node=4)
        self.assertIsInstance(df, pandas.DataFrame)
        self.assertEqual(len(df), 4)
        self.assertIn("iteration_time_s", df.columns)
        at8 = df[df.gpus == 8].set_index("fabric").iteration_time_s
        self.assertLess(at8["ib-edr"], at8["10gbe"])

    def test_export(self):
        a = os.path.join(OUT, "chakra-cli")
        b = os.path.join(OUT, "chakra-py")
        want = cli_json("export", *KINETO, "--format", "chakra", "--out", a, "--force")
        got = dagsgd.export(KINETO, b, force=True)
        self.assertEqual(got["files"][0]["nodes"], want["files"][0]["nodes"])
        for g, w in zip(got["files"], want["files"]):
            with open(g["file"], "rb") as fg, open(w["file"], "rb") as fw:
                self.assertEqual(fg.read(), fw.read())

    def test_bad_input_is_value_error_with_the_cli_message(self):
        code, message = cli_error("predict", "--network", "no-such-net")
        self.assertEqual(code, 2)
        with self.assertRaises(ValueError) as e:
            dagsgd.predict(network="no-such-net")
        self.assertEqual(str(e.exception), message)
        # A value the parser refuses (CLI11's own message) too.
        code, message = cli_error("predict", "--network", "resnet50", "--batch", "many")
        self.assertEqual(code, 2)
        with self.assertRaises(ValueError) as e:
            dagsgd.predict(network="resnet50", batch="many")
        self.assertEqual(str(e.exception), message)

    def test_failure_is_runtime_error(self):
        # Exit code 1: the plot library is missing (whatif cannot write report.html).
        env = dict(os.environ, DAGSGD_NODE_MODULES=os.path.join(OUT, "no-node-modules"))
        p = subprocess.run([BINARY, "whatif", "--network", "alexnet", "--fabrics", "10gbe",
                            "--gpus", "1", "--out", os.path.join(OUT, "no-plots"), "--force"],
                           capture_output=True, text=True, env=env, check=False)
        self.assertEqual(p.returncode, 1)
        old = os.environ.get("DAGSGD_NODE_MODULES")
        os.environ["DAGSGD_NODE_MODULES"] = env["DAGSGD_NODE_MODULES"]
        try:
            with self.assertRaises(RuntimeError) as e:
                dagsgd.whatif(network="alexnet", fabrics=["10gbe"], gpus=[1])
        finally:
            if old is None:
                del os.environ["DAGSGD_NODE_MODULES"]
            else:
                os.environ["DAGSGD_NODE_MODULES"] = old
        self.assertIn(str(e.exception), p.stderr)
        self.assertIn("plot library", str(e.exception))

    def test_help_and_version(self):
        code, out, err = dagsgd.cli("predict", "--help")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out, cli("predict", "--help")[1])
        self.assertEqual(dagsgd.__version__, cli("--version")[1].split()[1])
        # The MPI commands are the binary's only.
        with self.assertRaises(ValueError) as e:
            dagsgd._run("train", "--model", "mlp")
        self.assertIn("run it with the dagsgd binary", str(e.exception))

    def test_build_tree_reads_the_source_data(self):
        self.assertEqual(os.path.realpath(dagsgd.data_dir()),
                         os.path.realpath(os.path.join(SOURCE, "datasets")))


if __name__ == "__main__":
    unittest.main()
