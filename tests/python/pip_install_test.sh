#!/usr/bin/env bash
# `pip install .` from the checkout into a fresh virtual environment, without network: Debian's
# setuptools builds it (the environment sees the system's site packages, for the wheel package,
# and pip builds without isolation), taking the native module from BUILD_DIR. The installed
# package is known to importlib.metadata, reads the data installed with it, and predicts.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR OUT_DIR
set -euo pipefail
src="$1" build="$2" out="$3"
rm -rf "$out"
mkdir -p "$out"
/usr/bin/python3 -m venv --system-site-packages "$out/venv"
DAGSGD_BUILD_DIR="$build" "$out/venv/bin/pip" install --no-index --no-build-isolation \
  --disable-pip-version-check --quiet "$src"
cd "$out"
"$out/venv/bin/python" - <<'PY'
import importlib.metadata
import os
import sys

import dagsgd

package = os.path.dirname(os.path.realpath(dagsgd.__file__))
assert package.startswith(os.path.realpath(sys.prefix)), package
assert importlib.metadata.version("dagsgd") == dagsgd.__version__
data = os.path.realpath(dagsgd.data_dir())
assert data == os.path.join(package, "data", "datasets"), data
assert os.path.isfile(os.path.join(data, "networks", "resnet50.json")), data
r = dagsgd.predict(network="resnet50")
assert r["iteration_time_s"] > 0, r
if os.path.isdir(os.path.join(package, "data", "node_modules", "vega")):
    rows = dagsgd.whatif(network="alexnet", fabrics=["10gbe"], gpus=[1, 2])
    assert len(rows) == 2, rows
print("installed", dagsgd.__version__, "in", package)
PY
