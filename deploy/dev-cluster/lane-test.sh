#!/bin/bash
# lane-test.sh VERSION (make lane-test SLURM=VERSION): that Slurm's lane up, the tests that face
# Slurm run in it (slurm-run), the lane down. A version that is the host's own is skipped: `make
# test` ran the whole suite on it. 24.11: the contract (CLI and pyslurm 24.11), Epilog end to end,
# multi-node, backend fallback, report, Slurm's text, Prolog, and the fault rows that involve
# Slurm; 25.05 and 25.11 (Slurm and pyslurm built from shared/vendor): the cluster tests, contract
# and backend fallback; 25.11 with a PID namespace, private /tmp and /dev/shm per job (SUNK 8.1);
# 26.05 (no pyslurm release): the same cluster tests, through the CLI backend.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lane.sh"
V=${1:?usage: lane-test.sh VERSION}
if [ "$V" = "$(host_slurm)" ]; then lane_say "Slurm $V is this host's own: make test covered it"; exit 0; fi
CLUSTER=(tests/test_cluster_epilog.py tests/test_cluster_multinode.py tests/test_cluster_slurm_text.py
         tests/test_cluster_prolog.py tests/test_cluster_report.py)
FAULTS=()
case "$V" in
  25.05) CLUSTER+=(tests/test_cluster_slurm_contract.py tests/test_cluster_backend_fallback.py) ;;
  25.11) CLUSTER+=(tests/test_cluster_slurm_contract.py tests/test_cluster_backend_fallback.py) ;;
  24.11) CLUSTER+=(tests/test_cluster_slurm_contract.py tests/test_cluster_backend_fallback.py)
         FAULTS=(tests/test_reliability_cluster.py -k "slurmdbd_down or slurmctld_down or sacctmgr_hanging") ;;
esac
# 25.11: first with a PID namespace, /tmp and /dev/shm per job (SUNK 8.1) the namespace tests and
# the Prolog's; then the rest without namespaces: on this machine's kernel two jobs that start at
# once on a node can fail to launch there (docs/operators/slurm-versions.md).
# SLURM_HOOKS_DEV_NAMESPACE=1 runs every test with namespaces, =0 none.
NSPASS=()
[ "$V" = 25.11 ] && [ -z "${SLURM_HOOKS_DEV_NAMESPACE:-}" ] && NSPASS=(tests/test_cluster_namespace.py tests/test_cluster_prolog.py)
t0=$(date +%s)
rc=0
pytest=(env SLURM_HOOKS_REQUIRE_CLUSTER=1 RELIABILITY_OUT=/tmp/lane-reliability.jsonl .venv/bin/pytest -q -p no:cacheprovider -rs)
no_drain() {
  local drained; drained=$("$HERE/slurm-run" "$V" sinfo -h -N -t drain,draining,drained,fail -o '%N %E' 2>/dev/null || true)
  [ -z "$drained" ] || { lane_say "drained nodes on $V: $drained"; return 1; }
}
if [ ${#NSPASS[@]} -gt 0 ]; then
  SLURM=$V "$HERE/cluster-up.sh"
  "$HERE/slurm-run" "$V" "${pytest[@]}" "${NSPASS[@]}" || rc=$?
  # what the namespaces showed: clone_ns_epilog and the node Epilog against the job's private /tmp
  "$HERE/slurm-run" "$V" sh -c 'tail -6 /var/log/slurm-hooks-ns.log' >&2 || true
  no_drain || rc=1
  SLURM=$V "$HERE/cluster-down.sh"
  export SLURM_HOOKS_DEV_NAMESPACE=0
fi
SLURM=$V "$HERE/cluster-up.sh"
t1=$(date +%s)
"$HERE/slurm-run" "$V" "${pytest[@]}" "${CLUSTER[@]}" || rc=$?
if [ ${#FAULTS[@]} -gt 0 ]; then "$HERE/slurm-run" "$V" "${pytest[@]}" "${FAULTS[@]}" || rc=$?; fi
no_drain || rc=1
SLURM=$V "$HERE/cluster-down.sh"
lane_say "Slurm $V lane: up $(( t1 - t0 )) s (prepare included), tests and down $(( $(date +%s) - t1 )) s, rc=$rc"
exit $rc
