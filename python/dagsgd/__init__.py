"""dagsgd from Python: predict, replay, analyze, what-if, calibrate and export.

Every function runs the dagsgd command line's own parsing and command in this process and
returns what the command's ``--json`` prints, as plain dicts and lists, so the numbers are the
CLI's. Options are the command's options as keyword arguments: ``gpus_per_node=4`` is
``--gpus-per-node 4``, ``overlap="wfbp"`` is ``--overlap wfbp``, a list is a comma-separated
value (``fabrics=["10gbe", "ib-edr"]``), ``True`` is a flag and ``None`` or ``False`` leaves
the option out. Bad input raises ValueError with the CLI's message (exit code 2); any other
failure raises RuntimeError (exit code 1). ``dagsgd <command> --help`` lists the options.

    >>> import dagsgd, pandas
    >>> dagsgd.predict(network="resnet50", nodes=8, gpus_per_node=4, inter="ib-edr")
    >>> pandas.DataFrame(dagsgd.whatif(network="resnet50", fabrics=["10gbe", "ib-edr"],
    ...                                gpus=[1, 4, 8, 16], gpus_per_node=4))

See docs/python.md.
"""

import json
import os
import sys
import tempfile

from . import _dagsgd

__all__ = ["predict", "replay", "analyze", "whatif", "calibrate", "export", "cli", "data_dir"]
__version__ = _dagsgd.version()

_ERROR = "dagsgd: error: "


def _text(value):
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back to the same double
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _options(options):
    """Keyword arguments as command-line options, in the order given."""
    args = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(_text(v) for v in value)]
        else:
            args += [flag, _text(value)]
    return args


def _paths(value):
    """One positional path, or several (trace files of one run)."""
    if isinstance(value, (list, tuple)):
        return [_text(v) for v in value]
    return [_text(value)]


def cli(*args):
    """Runs ``dagsgd ARGS...`` in this process; returns (exit code, stdout, stderr) as text.

    The commands that start MPI (train, collect, validate) are not available here.
    """
    code, out, err = _dagsgd.run_cli([_text(a) for a in args])
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
    return _json("predict", *_options(options))


def replay(run, **options):
    """``dagsgd replay RUN --json``: the traced run simulated, predicted vs measured.

    `run` is a run directory, a directory of Kineto traces, or a list of trace files (one per
    rank). E.g. replay("run0", intra="nvlink2", inter="ib-edr").
    """
    return _json("replay", *_paths(run), *_options(options))


def analyze(run, **options):
    """``dagsgd analyze RUN --json``: where a traced run's time goes, critical path, bottleneck."""
    return _json("analyze", *_paths(run), *_options(options))


def calibrate(log, **options):
    """``dagsgd calibrate LOG --json``: α, β (and the eager/rendezvous step) fitted to an OSU
    allreduce log (or a list of logs). E.g. calibrate("allreduce4.log", name="my-10gbe")."""
    return _json("calibrate", *_paths(log), *_options(options))


def whatif(run=None, **options):
    """``dagsgd whatif``: the sweep's scenarios (the "scenarios" of its results.json), a list of
    dicts that pandas.DataFrame takes as it is.

    Without ``out=DIR`` the report is written to a temporary directory and removed; with it,
    report.html and the other files stay there (``force=True`` to overwrite). `run` is a traced
    run directory; leave it out and give ``network=...`` to sweep a network spec. E.g.
    whatif(network="resnet50", fabrics=["10gbe", "ib-edr"], gpus=[1, 4, 8], gpus_per_node=4).
    """
    positional = _paths(run) if run is not None else []
    if options.get("out") is not None:
        _run("whatif", *positional, *_options(options))
        return _scenarios(os.path.join(_text(options["out"]), "results.json"))
    with tempfile.TemporaryDirectory(prefix="dagsgd-whatif-") as out:
        _run("whatif", *positional, *_options(options), "--out", out)
        return _scenarios(os.path.join(out, "results.json"))


def _scenarios(results_json):
    with open(results_json, encoding="utf-8") as f:
        return json.load(f)["scenarios"]


def export(run, out, format="chakra", **options):
    """``dagsgd export --json``: the traced run's DAG written in another simulator's format
    (Chakra execution traces, one file per rank, for ASTRA-sim) to `out`; returns what was
    written. ``force=True`` replaces existing files."""
    return _json("export", *_paths(run), "--format", format, "--out", _text(out),
                 *_options(options))


def data_dir():
    """The data directory the commands read (bundled networks, hardware catalogs, samples)."""
    return _dagsgd.data_dir()
