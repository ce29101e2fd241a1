"""dagsgd from Python: predict, replay, analyze, what-if, calibrate and export.

Every function runs the dagsgd command line's own parsing and command in this process and
returns what the command's ``--json`` prints, as plain dicts and lists, so the numbers are the
CLI's. Options are the command's options as keyword arguments (``help(dagsgd.predict)`` lists
them, from the parser's own table): ``gpus_per_node=4`` is ``--gpus-per-node 4``,
``overlap="wfbp"`` is ``--overlap wfbp``; a list, tuple, range or numpy array is a
comma-separated value (``fabrics=["10gbe", "ib-edr"]``, ``gpus=range(8, 33, 8)``); numbers may be
Python's or numpy's; a flag takes ``True`` or ``False``; ``None`` leaves an option out.

An unknown keyword or a value of the wrong kind raises TypeError, a missing input file
FileNotFoundError, other bad input ValueError with the CLI's message (exit code 2), any other
failure RuntimeError (exit code 1). Ctrl-C stops a running command (KeyboardInterrupt).

    >>> import dagsgd
    >>> dagsgd.predict(network="resnet50", nodes=8, gpus_per_node=4, inter="ib-edr")
    >>> dagsgd.whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 4, 8, 16],
    ...               gpus_per_node=4)       # a pandas DataFrame where pandas is installed

See docs/python.md.
"""

import collections.abc
import errno
import json
import numbers
import os
import sys
import tempfile
import textwrap

from . import _dagsgd

__all__ = ["predict", "replay", "analyze", "whatif", "calibrate", "export", "cli", "data_dir"]
__version__ = _dagsgd.version()

_ERROR = "dagsgd: error: "


def _is_bool(value):
    """Python's bool or numpy's (numpy.bool_ is neither a bool nor a number)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool") and hasattr(
        value, "dtype")


def _text(value, what="a value"):
    """One command-line word for a scalar: numbers as their shortest text (numpy's too, never
    their repr), paths as paths."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if _is_bool(value):
        raise TypeError(f"{what} takes a value, not the bool {value!r}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, float):  # numpy.float64 too: float.__repr__, not numpy's repr
        return float.__repr__(float(value))
    if isinstance(value, numbers.Real):  # numpy.float32 and others: their own shortest text
        text = str(value)
        try:
            float(text)
            return text
        except ValueError:
            return float.__repr__(float(value))
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a 0-d numpy array
        return _text(value[()], what)
    raise TypeError(f"{what} takes a string, path or number, not {type(value).__name__}")


def _is_list(value):
    if isinstance(value, (str, bytes, bytearray, os.PathLike)):
        return False
    if getattr(value, "ndim", 1) == 0:
        return False
    return isinstance(value, collections.abc.Iterable)


def _items(value, what):
    if isinstance(value, (collections.abc.Set, collections.abc.Mapping)):
        raise TypeError(f"{what} takes a list, tuple, range or array, not a "
                        f"{type(value).__name__} (no order)")
    if getattr(value, "ndim", 1) > 1:
        raise TypeError(f"{what} takes a one-dimensional array, not {value.ndim} dimensions")
    return [_text(v, what) for v in value]


_PY_TYPES = {"INT": "int", "UINT": "int", "FLOAT": "float", "NUMBER": "float", "TEXT": "str"}


class _Option:
    """One option of a command, from the parser's table (run_cli.h, options_json)."""

    def __init__(self, d):
        self.flag = d["name"]
        self.keyword = self.flag.lstrip("-").replace("-", "_")
        self.kind = d["kind"]
        self.type = "path" if d["existing_file"] else _PY_TYPES.get(d["type"], "str")
        self.checks = d["checks"] if not d["existing_file"] else ""
        self.required = d["required"]
        self.default = d["default"]
        self.help = d["help"]

    def args(self, value, function):
        what = f"{function}() keyword '{self.keyword}'"
        if value is None:
            return []
        if self.kind == "flag":
            if not _is_bool(value):
                raise TypeError(f"{what} is a flag: give True or False, not "
                                f"{type(value).__name__} {value!r}")
            return [self.flag] if value else []
        if _is_list(value):
            return [self.flag, ",".join(_items(value, what))]
        text = _text(value, what)
        if self.type == "path" and not os.path.exists(text):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), text)
        return [self.flag, text]

    def doc(self):
        if self.kind == "flag":
            kind = "bool, default False"
        else:
            kind = self.type if self.kind == "value" else f"list of {self.type} (or one)"
            if self.checks:
                kind += f" ({self.checks})"
            if self.required:
                kind += ", required"
            elif self.default:
                kind += f", default {self.default}"
        text = textwrap.fill(" ".join(self.help.split()), 92, initial_indent="        ",
                             subsequent_indent="        ")
        return f"    {self.keyword} : {kind}\n{text}"


_TABLE = json.loads(_dagsgd.options_json())


def _command_options(command, left_out):
    options = {}
    for d in _TABLE[command]["options"]:
        if d["positional"] or d["name"] in ("--version",):
            continue
        o = _Option(d)
        if o.keyword not in left_out:
            options[o.keyword] = o
    return options


# Keywords a function sets itself (--json) or takes as its own parameters.
_OPTIONS = {
    "predict": _command_options("predict", {"json"}),
    "replay": _command_options("replay", {"json"}),
    "analyze": _command_options("analyze", {"json"}),
    "calibrate": _command_options("calibrate", {"json"}),
    "whatif": _command_options("whatif", {"json", "out"}),
    "export": _command_options("export", {"json", "out", "format"}),
}


def _options(function, options):
    """Keyword arguments as command-line options, in the order given."""
    table = _OPTIONS[function]
    args = []
    for name, value in options.items():
        if name not in table:
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}'")
        args += table[name].args(value, function)
    return args


def _paths(value, function, what):
    """One positional path, or several (trace files of one run); each must exist."""
    values = _items(value, f"{function}() argument '{what}'") if _is_list(value) else [
        _text(value, f"{function}() argument '{what}'")]
    for p in values:
        if not os.path.exists(p):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), p)
    return values


def _document(function, command, params):
    """The function's docstring: its own text, then every option of the command's table."""
    lines = [function.__doc__.rstrip(), "", f"    Keyword arguments: the options of "
             f"``dagsgd {command}``", f"    ({params}; None leaves one out):", ""]
    lines += [o.doc() for o in _OPTIONS[function.__name__].values()]
    function.__doc__ = "\n".join(lines) + "\n"
    return function


def cli(*args):
    """Runs ``dagsgd ARGS...`` in this process; returns (exit code, stdout, stderr) as text.

    The commands that start MPI (train, collect, validate) are not available here.
    """
    code, out, err = _dagsgd.run_cli([_text(a, "cli() argument") for a in args])
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _run(*args):
    """stdout of a command that succeeded; its notes go to stderr as the CLI's do."""
    code, out, err = cli(*args)
    if code == 0:
        if err:
            sys.stderr.write(err)
        return out
    lines = [l[len(_ERROR):] for l in err.splitlines() if l.startswith(_ERROR)]
    message = "\n".join(lines) if lines else err.strip()
    if code == 2:
        raise ValueError(message)
    raise RuntimeError(message)


def _json(*args):
    return json.loads(_run(*args, "--json"))


def predict(**options):
    """``dagsgd predict --json``: iteration time, scaling and bottleneck from a network spec.

    E.g. predict(network="resnet50", batch=64, gpu="v100", nodes=8, gpus_per_node=4,
    intra="pcie3", inter="10gbe", overlap="wfbp").
    """
    return _json("predict", *_options("predict", options))


def replay(run, **options):
    """``dagsgd replay RUN --json``: the traced run simulated, predicted vs measured.

    `run` is a run directory, a directory of Kineto traces, or a list of trace files (one per
    rank). E.g. replay("run0", intra="nvlink2", inter="ib-edr").
    """
    return _json("replay", *_paths(run, "replay", "run"), *_options("replay", options))


def analyze(run, **options):
    """``dagsgd analyze RUN --json``: where a traced run's time goes, critical path, bottleneck.

    `run` is a run directory, a directory of Kineto traces, or a list of trace files (one per
    rank).
    """
    return _json("analyze", *_paths(run, "analyze", "run"), *_options("analyze", options))


def calibrate(log, **options):
    """``dagsgd calibrate LOG --json``: α, β (and the eager/rendezvous step) fitted to an OSU
    allreduce log (or a list of logs). E.g. calibrate("allreduce4.log", name="my-10gbe")."""
    return _json("calibrate", *_paths(log, "calibrate", "log"), *_options("calibrate", options))


def _flat(row, prefix=""):
    """A scenario with its nested objects spread into columns: {"a": {"b": 1}} -> {"a_b": 1}."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}_"))
        else:
            out[prefix + key] = value
    return out


def whatif(run=None, out=None, **options):
    """``dagsgd whatif``: the sweep's scenarios (the "scenarios" of its results.json), one flat
    row per scenario (nested objects become columns, ``breakdown.forward`` ->
    ``breakdown_forward``): a pandas DataFrame where pandas is installed, else a list of dicts.

    Without ``out=DIR`` the report is written to a temporary directory and removed; with it,
    report.html and the other files stay there (``force=True`` to overwrite). `run` is a traced
    run directory; leave it out and give ``network=...`` to sweep a network spec. E.g.
    whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 4, 8], gpus_per_node=4).
    """
    positional = _paths(run, "whatif", "run") if run is not None else []
    args = _options("whatif", options)
    if out is not None:
        out = _text(out, "whatif() keyword 'out'")
        _run("whatif", *positional, *args, "--out", out)
        return _rows(os.path.join(out, "results.json"))
    with tempfile.TemporaryDirectory(prefix="dagsgd-whatif-") as tmp:
        _run("whatif", *positional, *args, "--out", tmp)
        return _rows(os.path.join(tmp, "results.json"))


def _rows(results_json):
    with open(results_json, encoding="utf-8") as f:
        rows = [_flat(s) for s in json.load(f)["scenarios"]]
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def export(run, out, format="chakra", **options):
    """``dagsgd export --json``: the traced run's DAG written in another simulator's format
    (Chakra execution traces, one file per rank, for ASTRA-sim) to `out`; returns what was
    written. ``force=True`` replaces existing files."""
    return _json("export", *_paths(run, "export", "run"), "--format",
                 _text(format, "export() argument 'format'"), "--out",
                 _text(out, "export() argument 'out'"), *_options("export", options))


def data_dir():
    """The data directory the commands read (bundled networks, hardware catalogs, samples)."""
    return _dagsgd.data_dir()


_document(predict, "predict", "workload, hardware, exchange")
_document(replay, "replay", "the target to replay the run on")
_document(analyze, "analyze", "what to read and write")
_document(calibrate, "calibrate", "what to fit and where to write it")
_document(whatif, "whatif", "the grid to sweep; lists are swept")
_document(export, "export", "what to write")
