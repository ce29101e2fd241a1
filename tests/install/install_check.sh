#!/usr/bin/env bash
# ctest install.package: install the build into a temporary prefix and use it from outside.
#   install_check.sh BUILD_DIR OUT_DIR CONSUMER_SOURCE PYTHON PYTHON_INSTALL_DIR GENERATOR \
#     [CXX_FLAGS [EXE_LINKER_FLAGS]]
# PYTHON_INSTALL_DIR is empty when the build has no Python module to import.
set -euo pipefail
build=$1 out=$2 consumer=$3 python=$4 pydir=$5 generator=$6 cxxflags=${7:-} ldflags=${8:-}
rm -rf "$out"
mkdir -p "$out"
prefix=$out/prefix
cmake --install "$build" --prefix "$prefix" >"$out/install.log"
for f in bin/dagsgd lib/cmake/dagsgd/dagsgdConfig.cmake include/dagsgd/sim/scenario.h \
         share/dagsgd/datasets/networks/resnet50.json \
         share/dagsgd/node_modules/vega-lite/build/vega-lite.min.js; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done

# The installed binary reads the installed data: a network only the installed data has.
cp "$prefix/share/dagsgd/datasets/networks/resnet50.json" \
   "$prefix/share/dagsgd/datasets/networks/install-probe.json"
args=(predict --nodes 8 --gpus-per-node 4 --json)
"$build/tools/dagsgd" "${args[@]}" --network resnet50 >"$out/build.json"
"$prefix/bin/dagsgd" "${args[@]}" --network resnet50 >"$out/installed.json"
cmp "$out/build.json" "$out/installed.json"
"$prefix/bin/dagsgd" "${args[@]}" --network install-probe >/dev/null
if "$build/tools/dagsgd" "${args[@]}" --network install-probe >/dev/null 2>&1; then
  echo "the build tree's binary read the installed data"; exit 1
fi
# ... and its report plotting library.
(cd "$out" && "$prefix/bin/dagsgd" whatif --network alexnet --fabrics 10gbe --gpus 1,4 \
   --gpus-per-node 4 --out whatif >/dev/null)
[ -s "$out/whatif/report.html" ]

# An outside CMake project: find_package(dagsgd), one prediction through the C++ API, the same
# bytes as the CLI's, from the installed data.
cmake -S "$consumer" -B "$out/consumer" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$cxxflags" \
  -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$out/consumer-configure.log"
cmake --build "$out/consumer" >"$out/consumer-build.log" || { cat "$out/consumer-build.log"; exit 1; }
"$out/consumer/dagsgd-consumer" >"$out/consumer.json" 2>"$out/consumer.err"
cmp "$out/installed.json" "$out/consumer.json"
grep -qx "data: $(cd "$prefix" && pwd -P)/share/dagsgd/datasets" "$out/consumer.err" ||
  { cat "$out/consumer.err"; echo "the consumer did not read the installed data"; exit 1; }
"$out/consumer/dagsgd-consumer" install-probe >/dev/null 2>&1

# The installed Python module: importable from the prefix, the installed data, the CLI's numbers.
if [ -n "$pydir" ]; then
  PYTHONPATH="$prefix/$pydir" "$python" - "$prefix" "$out/installed.json" <<'PY'
import json, os, sys
import dagsgd
prefix, want = sys.argv[1], sys.argv[2]
assert os.path.realpath(dagsgd.__file__).startswith(os.path.realpath(prefix)), dagsgd.__file__
assert os.path.realpath(dagsgd.data_dir()) == os.path.realpath(
    os.path.join(prefix, "share/dagsgd/datasets")), dagsgd.data_dir()
got = dagsgd.predict(network="resnet50", nodes=8, gpus_per_node=4)
assert got == json.load(open(want)), "installed module differs from the installed binary"
dagsgd.predict(network="install-probe", nodes=8, gpus_per_node=4)
print("python: import dagsgd from", os.path.dirname(dagsgd.__file__))
PY
fi

# A moved prefix still works: the binary finds its data relative to itself.
mv "$prefix" "$out/moved"
"$out/moved/bin/dagsgd" "${args[@]}" --network install-probe >/dev/null
echo "install: $(find "$out/moved" -type f | wc -l) files; binary, package and module work"
rm -rf "$out/moved" "$out/consumer"  # hundreds of MB with debug information
