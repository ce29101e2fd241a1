#!/usr/bin/env bash
# ctest drivers for `dagsgd whatif` that need more than one process:
#   whatif_check.sh mpi DAGSGD OUTDIR NP      serial and `mpirun -np NP` reports are byte-identical
#   whatif_check.sh browser DAGSGD OUTDIR     headless Chromium renders report.html (screenshot kept)
set -euo pipefail
mode=$1 dagsgd=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
sweep=(whatif --network resnet50 --batch 64 --gpu v100 --fabrics pcie3,nvlink2,10gbe,100gbe,ib-edr
       --gpus 1,4,8,16,32 --gpus-per-node 4 --precision fp32,fp16)
rm -rf "$out"
mkdir -p "$out"
case $mode in
  mpi)
    np=$4
    "$dagsgd" "${sweep[@]}" --out "$out/serial" >/dev/null
    mpirun --allow-run-as-root --oversubscribe -np "$np" "$dagsgd" "${sweep[@]}" --out "$out/mpi" \
      >"$out/mpi.log" 2>&1 || { cat "$out/mpi.log"; exit 1; }
    # One report, written by rank 0 of a real MPI job (not N independent serial runs).
    [ "$(grep -c "scenarios on $np ranks" "$out/mpi.log")" -eq 1 ] || { cat "$out/mpi.log"; exit 1; }
    n=0
    for f in $(cd "$out/serial" && find . -type f | sort); do
      cmp "$out/serial/$f" "$out/mpi/$f"
      n=$((n + 1))
    done
    [ "$(cd "$out/mpi" && find . -type f | wc -l)" -eq "$n" ] || { echo "file sets differ"; exit 1; }
    [ "$n" -ge 5 ] || { echo "only $n files"; exit 1; }
    echo "whatif: $n files identical between the serial run and mpirun -np $np"
    ;;
  browser)
    command -v node >/dev/null || { echo "node not installed (tools/setup)"; exit 77; }
    [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "chromium not installed (tools/setup)"; exit 77; }
    "$dagsgd" "${sweep[@]}" --out "$out/report"
    node "$here/browser_check.mjs" "$out/report/report.html" "$out"
    [ -s "$out/report.png" ]
    echo "screenshot: $out/report.png"
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
