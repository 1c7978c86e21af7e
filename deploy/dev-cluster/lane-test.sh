#!/bin/bash
# lane-test.sh VERSION (make lane-test SLURM=VERSION): that Slurm's lane up, the tests that face
# Slurm run in it (slurm-run), the lane down. A version that is the host's own is skipped: `make
# test` ran the whole suite on it. 24.11: the contract (CLI and pyslurm 24.11), Epilog end to end,
# multi-node, backend fallback, report, Slurm's text, Prolog, and the fault rows that involve
# Slurm; 26.05 (no pyslurm release): the same cluster tests, through the CLI backend.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lane.sh"
V=${1:?usage: lane-test.sh VERSION}
if [ "$V" = "$(host_slurm)" ]; then lane_say "Slurm $V is this host's own: make test covered it"; exit 0; fi
CLUSTER=(tests/test_cluster_epilog.py tests/test_cluster_multinode.py tests/test_cluster_slurm_text.py
         tests/test_cluster_prolog.py tests/test_cluster_report.py)
FAULTS=()
case "$V" in
  24.11) CLUSTER+=(tests/test_cluster_slurm_contract.py tests/test_cluster_backend_fallback.py)
         FAULTS=(tests/test_reliability_cluster.py -k "slurmdbd_down or slurmctld_down or sacctmgr_hanging") ;;
esac
t0=$(date +%s)
SLURM=$V "$HERE/cluster-up.sh"
t1=$(date +%s)
rc=0
pytest=(env SLURM_HOOKS_REQUIRE_CLUSTER=1 RELIABILITY_OUT=/tmp/lane-reliability.jsonl .venv/bin/pytest -q -p no:cacheprovider -rs)
"$HERE/slurm-run" "$V" "${pytest[@]}" "${CLUSTER[@]}" || rc=$?
if [ ${#FAULTS[@]} -gt 0 ]; then "$HERE/slurm-run" "$V" "${pytest[@]}" "${FAULTS[@]}" || rc=$?; fi
SLURM=$V "$HERE/cluster-down.sh"
lane_say "Slurm $V lane: up $(( t1 - t0 )) s (prepare included), tests and down $(( $(date +%s) - t1 )) s, rc=$rc"
exit $rc
