# Sourced by the emulated-cluster tests: skip_unless_cluster EMU exits 77 (ctest SKIP) when
# `EMU check` says the machine cannot run the cluster; check DESCRIPTION CONDITION... prints
# ok/FAIL and sets fail=1 on failure; prefix_of LOG names the namespace prefix a run reported,
# no_namespaces PREFIX says that none of its namespaces is left (false for no prefix).
# shellcheck shell=bash disable=SC2034 # fail: the sourcing test exits with it
fail=0
skip_unless_cluster() {
  local why
  if ! why="$("$1" check 2>&1)"; then
    echo "SKIP: the emulated cluster cannot run here: $why"
    exit 77
  fi
}
check() {
  local what="$1"
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
# The prefix a run used, from its "prefix emcNNN" line.
prefix_of() { sed -n 's/.*prefix \(emc[0-9]*\).*/\1/p' "$1" | head -1; }
no_namespaces() { [[ -n $1 ]] && ! ip netns list | awk '{print $1}' | grep -q "^$1"; }
