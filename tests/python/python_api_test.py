#!/usr/bin/env python3
"""The Python module behaves as Python users expect: help() lists every option of the parser's
table with its default, TypeError for an unknown keyword or a value of the wrong kind,
FileNotFoundError for a missing file, numpy numbers and arrays and ranges taken as values and
lists, whatif rows flat (a DataFrame with pandas), a run's trace files refused without their
manifest, and Ctrl-C stopping a long call.

Run by ctest (python.api) with PYTHONPATH=<build>/python, DAGSGD_BINARY, DAGSGD_SOURCE_DIR and
DAGSGD_TEST_OUT set.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

import dagsgd

BINARY = os.environ["DAGSGD_BINARY"]
SOURCE = os.environ["DAGSGD_SOURCE_DIR"]
OUT = os.environ["DAGSGD_TEST_OUT"]
SAMPLES = os.path.join(SOURCE, "datasets", "samples")
KINETO = [os.path.join(SAMPLES, "kineto", f"sampled_rank-{r}.json.gz") for r in (0, 1)]

try:
    import numpy
except ImportError:
    numpy = None


def cli_help(command):
    p = subprocess.run([BINARY, command, "--help"], capture_output=True, text=True, check=True)
    return p.stdout


class Help(unittest.TestCase):
    def test_every_option_with_its_default(self):
        for function, command in [(dagsgd.predict, "predict"), (dagsgd.whatif, "whatif"),
                                  (dagsgd.replay, "replay"), (dagsgd.analyze, "analyze"),
                                  (dagsgd.calibrate, "calibrate"), (dagsgd.export, "export")]:
            doc = function.__doc__
            flags = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", cli_help(command), re.M))
            flags -= {"--help", "--help-all", "--json"}
            self.assertGreater(len(flags), 2, command)
            for flag in flags:
                keyword = flag[2:].replace("-", "_")
                if (command, keyword) in (("whatif", "out"), ("export", "out"),
                                          ("export", "format")):
                    self.assertIn(keyword, function.__code__.co_varnames, command)
                    continue
                self.assertRegex(doc, rf"\n    {keyword} : ", f"{command} {flag}")
        # Defaults and kinds, as the parser has them.
        doc = dagsgd.predict.__doc__
        self.assertRegex(doc, r"\n    batch : int \(1\.\.2147483647\), default 64\n")
        self.assertRegex(doc, r"\n    network : str, required\n")
        self.assertIn("\n    inter : str, default 10gbe\n", doc)
        self.assertRegex(dagsgd.whatif.__doc__, r"\n    gpus : list of int \(or one\)")
        self.assertIn("\n    strict : bool, default False\n", dagsgd.analyze.__doc__)
        self.assertIn("\n    layer_profile : path\n", doc)


class Arguments(unittest.TestCase):
    def test_unknown_keyword_is_type_error(self):
        with self.assertRaisesRegex(TypeError,
                                    r"predict\(\) got an unexpected keyword argument 'bogus'"):
            dagsgd.predict(network="resnet50", bogus=1)
        with self.assertRaises(TypeError):
            dagsgd.analyze(KINETO, json=True)  # the function sets --json itself

    def test_bool_options_take_bools_only(self):
        with self.assertRaisesRegex(TypeError, r"'strict' is a flag: give True or False"):
            dagsgd.analyze(KINETO, strict="no")
        with self.assertRaisesRegex(TypeError, r"'force' is a flag"):
            dagsgd.whatif(network="alexnet", fabrics=["10gbe"], force="no")
        with self.assertRaisesRegex(TypeError, r"'batch' takes a value, not the bool True"):
            dagsgd.predict(network="resnet50", batch=True)
        self.assertEqual(dagsgd.analyze(KINETO, strict=False), dagsgd.analyze(KINETO))

    def test_missing_file_is_file_not_found(self):
        missing = os.path.join(OUT, "no-such-run")
        with self.assertRaises(FileNotFoundError) as e:
            dagsgd.analyze(missing)
        self.assertEqual(e.exception.filename, missing)
        with self.assertRaises(FileNotFoundError):
            dagsgd.replay([KINETO[0], missing])
        with self.assertRaises(FileNotFoundError):
            dagsgd.predict(network="resnet50", layer_profile=missing)
        with self.assertRaises(FileNotFoundError):
            dagsgd.calibrate(missing)

    def test_floats_are_their_shortest_text(self):
        a = dagsgd.predict(network="googlenet-caffe", gpu="k80", step_time=0.2529)
        b = dagsgd.predict(network="googlenet-caffe", gpu="k80", step_time="0.2529")
        self.assertEqual(a, b)
        self.assertEqual(dagsgd._text(0.1), "0.1")
        self.assertEqual(dagsgd._text(1e-300), "1e-300")

    def test_numpy_scalars_and_arrays_and_ranges(self):
        if numpy is None:
            self.skipTest("numpy is not installed (Debian: python3-numpy, tools/setup)")
        want = dagsgd.predict(network="googlenet-caffe", gpu="k80", nodes=4, step_time=0.2529,
                              topk=0.25)
        got = dagsgd.predict(network="googlenet-caffe", gpu="k80", nodes=numpy.int64(4),
                             step_time=numpy.float64(0.2529), topk=numpy.float32(0.25))
        self.assertEqual(got, want)
        self.assertEqual(dagsgd._text(numpy.float64(0.1)), "0.1")  # not "np.float64(0.1)"
        self.assertEqual(dagsgd._text(numpy.float32(0.1)), "0.1")
        self.assertEqual(dagsgd._text(numpy.array(3)), "3")
        rows = dagsgd.whatif(network="alexnet", fabrics=["10gbe"], gpus=[1, 4, 8, 12])
        for gpus in (numpy.array([1, 4, 8, 12]), numpy.arange(1, 13)[[0, 3, 7, 11]]):
            self.assertEqual(_records(dagsgd.whatif(network="alexnet", fabrics=["10gbe"],
                                                    gpus=gpus)), _records(rows))
        self.assertEqual(_records(dagsgd.whatif(network="alexnet", fabrics=numpy.array(["10gbe"]),
                                                gpus=range(4, 13, 4))),
                         _records(dagsgd.whatif(network="alexnet", fabrics=["10gbe"],
                                                gpus=[4, 8, 12])))
        with self.assertRaisesRegex(TypeError, "one-dimensional"):
            dagsgd.whatif(network="alexnet", fabrics=["10gbe"], gpus=numpy.ones((2, 2), int))

    def test_sets_and_other_objects_are_type_errors(self):
        with self.assertRaisesRegex(TypeError, "no order"):
            dagsgd.whatif(network="alexnet", fabrics={"10gbe", "ib-edr"})
        with self.assertRaisesRegex(TypeError, "not object"):
            dagsgd.predict(network=object())


def _records(rows):
    """A whatif result as a list of dicts, whether a DataFrame (pandas) or a list; a DataFrame
    has every column in every row, NaN where a scenario has no such field (JSON has no NaN)."""
    if not hasattr(rows, "to_dict"):
        return rows
    return [{k: v for k, v in r.items() if v == v} for r in rows.to_dict("records")]


class Whatif(unittest.TestCase):
    def test_rows_are_flat(self):
        out = os.path.join(OUT, "whatif-flat")
        shutil.rmtree(out, ignore_errors=True)
        rows = dagsgd.whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 8],
                             gpus_per_node=4, out=out)
        with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
            nested = json.load(f)["scenarios"]
        records = _records(rows)
        self.assertEqual(len(records), len(nested))
        for flat, row in zip(records, nested):
            self.assertFalse(any(isinstance(v, dict) for v in flat.values()), flat)
            for key, value in row.items():
                if isinstance(value, dict):
                    for k, v in value.items():
                        if not isinstance(v, dict):
                            self.assertEqual(flat[f"{key}_{k}"], v)
                else:
                    self.assertEqual(flat[key], value)
        try:
            import pandas
        except ImportError:
            self.assertIsInstance(rows, list)
            return
        self.assertIsInstance(rows, pandas.DataFrame)
        self.assertIn("iteration_time_s", rows.columns)


class RunTraces(unittest.TestCase):
    def test_rank_traces_without_their_manifest_are_refused(self):
        away = os.path.join(OUT, "kineto-copies")
        os.makedirs(away, exist_ok=True)
        # Kineto traces given one by one are read as before...
        self.assertEqual(dagsgd.analyze(KINETO)["dag"]["mode"], "kineto")
        # ...a dagsgd rank trace without its manifest is refused, naming the file.
        trace = os.path.join(away, "rank-0.trace.json")
        with open(trace, "w", encoding="utf-8") as f:
            f.write('{"distributedInfo":{"rank":0,"world_size":1,"run_id":"r-1"},"traceEvents":['
                    '{"ph":"M","name":"dagsgd_rank_info","pid":0,"tid":0,'
                    '"args":{"world_size":1}}]}')
        for run in ([trace], trace, away):
            with self.assertRaisesRegex(ValueError, re.escape(f"'{trace}' is a rank trace "
                                                              "written by dagsgd")):
                dagsgd.analyze(run)


class Interrupt(unittest.TestCase):
    def test_ctrl_c_stops_a_long_call(self):
        # A sweep of 6,156 scenarios (over a minute here); SIGINT after 1.5 s.
        child = (
            "import sys, time, dagsgd\n"
            "print('started', flush=True)\n"
            "t = time.monotonic()\n"
            "try:\n"
            "    dagsgd.whatif(network='resnet50', fabrics=['10gbe', '25gbe', '100gbe', 'ib-edr',"
            " 'ib-hdr', '40gbe'], gpus=list(range(1, 513, 3)), gpus_per_node=1,"
            " precision=['fp32', 'fp16'], overlap=['wfbp', 'mgwfbp', 'none'])\n"
            "    print('finished', time.monotonic() - t, flush=True)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', time.monotonic() - t, flush=True)\n"
            "    print(dagsgd.predict(network='alexnet')['iteration_time_s'] > 0, flush=True)\n")
        with subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                              text=True) as p:
            self.assertEqual(p.stdout.readline().strip(), "started")
            time.sleep(1.5)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            line = p.stdout.readline().split()
            raised = time.monotonic() - sent
            rest = p.stdout.read()
            p.wait(timeout=60)
        print(f"KeyboardInterrupt {raised:.2f} s after SIGINT", file=sys.stderr)
        self.assertEqual(line[:1], ["interrupted"], rest)
        self.assertLess(raised, 2.0)
        # The next call runs as usual.
        self.assertEqual(rest.strip(), "True")
        self.assertEqual(p.returncode, 0)


if __name__ == "__main__":
    unittest.main()
