#!/usr/bin/env bash
# Measures the figures of datasets/hardware/emucluster_profiles.json on the emulated cluster: the
# natural latency (4-byte allreduce of 2 ranks and a 2-host ping-pong on unshaped hosts) and, per
# profile, the 8 MiB allreduce time (blocking and in-place MPI_Iallreduce, 2 and 4 hosts) and the
# 2-rank algorithm bandwidth. docs/validation.md, "Fabric profiles", has the command and figures.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tests/validate/measure_profiles.sh BENCH_DIR [options]
  BENCH_DIR               holds dagsgd-allreduce-bench and dagsgd-pingpong-bench
                          (build/release/runtime/bench)
  --profiles A,B,...      profiles to measure (all of the profile file) plus "unshaped"
  --hosts LIST            host counts of the 8 MiB allreduces (2,4)
  --load N                run N CPU-bound loops (yes > /dev/null) on the machine meanwhile (0)
  --iterations N          8 MiB iterations per figure (10, after 3 warm-up)
  --latency-iterations N  ping-pong iterations per size (1000; the 4-byte allreduce runs 2N)
  --mpirun-arg ARG        passed to tools/emucluster run (repeatable), e.g. --bind-to core
  --out DIR               logs and figures.json (a new directory under /tmp)
Prints one line per figure; needs what tools/emucluster run needs (root).
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
emu="$here/../../tools/emucluster"
[[ $# -ge 1 && $1 != -* ]] || { usage >&2; exit 2; }
bench_dir="$1"
shift
profiles="" hosts_list="2,4" load=0 iterations=10 lat_iterations=1000 out="" extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profiles) profiles="${2:?}"; shift 2 ;;
    --hosts) hosts_list="${2:?}"; shift 2 ;;
    --load) load="${2:?}"; shift 2 ;;
    --iterations) iterations="${2:?}"; shift 2 ;;
    --latency-iterations) lat_iterations="${2:?}"; shift 2 ;;
    --mpirun-arg) extra+=(--mpirun-arg "${2:?}"); shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "measure_profiles: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
allreduce="$bench_dir/dagsgd-allreduce-bench"
pingpong="$bench_dir/dagsgd-pingpong-bench"
for b in "$allreduce" "$pingpong"; do
  [[ -x $b ]] || { echo "measure_profiles: error: '$b' is not an executable (build tools/build release)" >&2; exit 2; }
done
[[ $load =~ ^[0-9]+$ ]] || { echo "measure_profiles: error: --load '$load' is not a count" >&2; exit 2; }
for v in "$iterations" "$lat_iterations"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "measure_profiles: error: iterations '$v' is not a positive count" >&2; exit 2; }
done
if [[ -z $profiles ]]; then
  profiles="$("$emu" profiles | awk 'NR > 1 {print $1}' | paste -sd,),unshaped"
fi
out="${out:-$(mktemp -d /tmp/emc-measure.XXXXXX)}"
mkdir -p "$out"

loaders=()
stop_load() {
  local p
  for p in ${loaders[@]+"${loaders[@]}"}; do kill "$p" 2>/dev/null || true; done
}
trap stop_load EXIT
for ((i = 0; i < load; ++i)); do
  yes >/dev/null &
  loaders+=($!)
done

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg), $load extra CPU-bound loop(s), mpirun extra: ${extra[*]:-none}" |
  tee "$out/figures.txt"
figures="$out/figures.tsv"
: >"$figures"
# emit NAME VALUE UNIT: one figure, to stdout and the table.
emit() {
  printf '%-40s %12s %s\n' "$1" "$2" "$3" | tee -a "$out/figures.txt"
  printf '%s\t%s\n' "$1" "$2" >>"$figures"
}
# column LOG SIZE COL: column COL of the row of SIZE bytes in a benchmark table.
column() { awk -v s="$2" -v c="$3" '$1 == s {print $c}' "$1"; }
# cluster NAME RUN-OPTIONS... -- CMD...: one job on the cluster, its output in $out/NAME.log.
cluster() {
  local name="$1"
  shift
  if ! "$emu" run ${extra[@]+"${extra[@]}"} "$@" >"$out/$name.log" 2>&1; then
    echo "measure_profiles: error: the run '$name' failed; see $out/$name.log" >&2
    exit 1
  fi
}

cluster latency_allreduce --hosts 2 -- "$allreduce" --min-bytes 4 --max-bytes 4 \
  --iterations $((2 * lat_iterations)) --warmup $((lat_iterations / 5))
emit latency_allreduce_4b_p2_us "$(column "$out/latency_allreduce.log" 4 2)" "us (mean of the ranks' averages)"
cluster latency_pingpong --hosts 2 -- "$pingpong" --min-bytes 4 --max-bytes 65536 \
  --iterations "$lat_iterations" --warmup $((lat_iterations / 10))
emit pingpong_4b_median_us "$(column "$out/latency_pingpong.log" 4 2)" "us round trip"
emit pingpong_4b_mean_us "$(column "$out/latency_pingpong.log" 4 3)" "us round trip"
emit pingpong_64kib_median_us "$(column "$out/latency_pingpong.log" 65536 2)" "us round trip"

# Raw TCP between 2 hosts, both directions at once (as a 2-rank allreduce exchanges): what the
# shaped link and the kernel's TCP deliver without MPI. mpirun may join the two ranks'
# lines, so the figures are found by pattern.
cat >"$out/tcp_exchange.py" <<'PY'
import os, socket, sys, threading, time
rank, n, port = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(sys.argv[1]), 5299
if rank == 0:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("10.213.0.1", port))
    srv.listen(1)
    s, _ = srv.accept()
else:
    s = socket.socket()
    for _ in range(400):
        try:
            s.connect(("10.213.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit("tcp_exchange: cannot connect to 10.213.0.1")
buf = b"x" * (1 << 20)
def send():
    left = n
    while left > 0:
        left -= s.send(buf[: min(left, len(buf))])
s.sendall(b"g")
s.recv(1)
t0 = time.perf_counter()
sender = threading.Thread(target=send)
sender.start()
left = n
while left > 0:
    left -= len(s.recv(1 << 20))
sender.join()
print(f"tcp {rank} {n * 8 / (time.perf_counter() - t0) / 1e9:.3f}", flush=True)
PY

readonly kBytes=8388608
for prof in ${profiles//,/ }; do
  shaping=(--profile "$prof")
  [[ $prof == unshaped ]] && shaping=()
  cluster "${prof}_tcp" --hosts 2 ${shaping[@]+"${shaping[@]}"} -- python3 "$out/tcp_exchange.py" 33554432
  emit "${prof}_tcp_gbps_per_direction" \
    "$(grep -o 'tcp [01] [0-9.]*' "$out/${prof}_tcp.log" | awk '{s += $3; n++} END {if (n == 2) printf "%.3f", s / n}')" \
    "Gbit/s (32 MiB each way at once, 2 hosts, mean of both)"
  for p in ${hosts_list//,/ }; do
    for kind in blocking iallreduce_in_place; do
      flags=()
      [[ $kind == blocking ]] || flags=(--nonblocking --in-place)
      name="${prof}_p${p}_$kind"
      cluster "$name" --hosts "$p" ${shaping[@]+"${shaping[@]}"} -- "$allreduce" \
        ${flags[@]+"${flags[@]}"} --min-bytes "$kBytes" --max-bytes "$kBytes" \
        --iterations "$iterations" --warmup 3
      us="$(column "$out/$name.log" "$kBytes" 2)"
      emit "${name}_ms" "$(awk -v u="$us" 'BEGIN {printf "%.0f", u / 1000}')" "ms (8 MiB)"
      if [[ $p == 2 && $kind == iallreduce_in_place ]]; then
        emit "${prof}_algbw_gbps_p2_iallreduce_in_place" \
          "$(awk -v u="$us" -v b="$kBytes" 'BEGIN {printf "%.3f", b * 8 / (u * 1e-6) / 1e9}')" "Gbit/s"
      fi
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); logs in $out" | tee -a "$out/figures.txt"
