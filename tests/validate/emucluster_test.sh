#!/usr/bin/env bash
# Tests tools/emucluster on the real kernel: rank placement on hosts, shaped links, exit status
# passed through, and that every namespace is gone after success, failure and SIGTERM.
# Exits 77 (ctest SKIP) when the machine cannot run the cluster (not root, no netns/veth/htb).
set -uo pipefail
EMU="${1:?usage: emucluster_test.sh TOOLS/emucluster}"
# shellcheck source=tests/validate/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
skip_unless_cluster "$EMU"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# 2 hosts x 2 ranks: every rank reports its host; ranks 0,1 on emuh0 and 2,3 on emuh1.
"$EMU" run --hosts 2 --ranks-per-host 2 --profile emu-100m -- \
  sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname) $(ip -4 -o addr show eth0 | awk "{print \$4}") $(tc qdisc show dev eth0 | awk "{print \$2}")"' \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check "run exits 0" test "$rc" -eq 0
sort "$tmp/out" >"$tmp/sorted"
printf '%s\n' "0 emuh0 10.213.0.1/24 htb" "1 emuh0 10.213.0.1/24 htb" \
  "2 emuh1 10.213.0.2/24 htb" "3 emuh1 10.213.0.2/24 htb" >"$tmp/want"
check "ranks placed two per host, links shaped with htb" diff "$tmp/want" "$tmp/sorted"
p="$(prefix_of "$tmp/err")"
check "namespaces of $p removed after success" no_namespaces "$p"
# One htb class at the profile's rate with a bucket of at most 16 KiB (1 ms at 100 Mbit/s is
# less): no large burst after an idle spell, which tbf's 128 KiB bucket gave.
"$EMU" run --hosts 1 --profile emu-100m -- tc class show dev eth0 >"$tmp/class" 2>"$tmp/err"
check "one class at 100 Mbit/s, rate = ceil" grep -q "rate 100Mbit ceil 100Mbit" "$tmp/class"
burst="$(grep -o ' burst [0-9]*b' "$tmp/class" | head -1 | tr -dc 0-9)"
check "bucket at most 16 KiB (got '$burst' bytes)" test "${burst:-999999}" -le 16384
p="$(prefix_of "$tmp/err")"
check "prefix reported" test -n "$p"
check "namespaces of $p removed after success" no_namespaces "$p"

# The job's exit status comes back, and the cluster is torn down after a failure.
"$EMU" run --hosts 2 -- sh -c 'exit 3' >/dev/null 2>"$tmp/err"
rc=$?
check "exit status 3 of the job passed through (got $rc)" test "$rc" -eq 3
p="$(prefix_of "$tmp/err")"
check "namespaces of $p removed after a failing job" no_namespaces "$p"

# SIGTERM in the middle of a job tears everything down.
"$EMU" run --hosts 2 -- sleep 617 >/dev/null 2>"$tmp/err" &
pid=$!
for _ in $(seq 50); do
  ip netns list | grep -q "^emc${pid}sw" && break
  sleep 0.2
done
sleep 1
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM ends the run (exit $rc)" test "$rc" -ne 0
check "namespaces of emc$pid removed after SIGTERM" no_namespaces "emc$pid"
check "no process of the run left" bash -c "! pgrep -f '^sleep 617$' >/dev/null"

# cleanup: removes namespaces of runs whose process is gone, keeps those of live ones, and
# --prefix removes a given run's.
true &
dead=$!
wait "$dead"
ip netns add "emc${dead}h0"
ip netns add "emc$$h0"
"$EMU" cleanup >/dev/null
check "cleanup removes a dead run's namespace" no_namespaces "emc${dead}h"
check "cleanup keeps a live run's namespace" bash -c "ip netns list | grep -q '^emc$$h0'"
"$EMU" cleanup --prefix "emc$$" >/dev/null
check "cleanup --prefix removes it" no_namespaces "emc$$h"

# Bad input: an unknown profile names the valid ones and exits 2.
"$EMU" run --profile nosuch -- true >/dev/null 2>"$tmp/err"
rc=$?
check "unknown profile exits 2" test "$rc" -eq 2
check "unknown profile lists the valid names" grep -q "valid: emu-600m" "$tmp/err"
exit "$fail"
