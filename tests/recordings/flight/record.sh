#!/bin/bash
# Record the flight-recorder bundles (tests/bundles/b32-*, b33-*) on the dev cluster, under its lock.
# Run as root from the repository root; see README.md next to this file.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TORCH_PYTHON=${TORCH_PYTHON:-/opt/slurm-hooks-torch/bin/python}
if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
  echo "no torch at $TORCH_PYTHON: python3.11 -m venv /opt/slurm-hooks-torch && /opt/slurm-hooks-torch/bin/pip install torch==2.13.0" >&2
  exit 2
fi
export TORCH_PYTHON FLIGHT_RECORD_DIR=${FLIGHT_RECORD_DIR:-$PWD/tests/bundles}
flock /tmp/slurm-hooks-devcluster.lock bash -c \
  'make cluster-up && SLURM_HOOKS_REQUIRE_CLUSTER=1 .venv/bin/pytest -q tests/test_cluster_flight.py; rc=$?; make cluster-down; exit $rc'
