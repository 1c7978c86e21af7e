#!/bin/bash
# four nodes; step 0 trains on nodes 3-4 and completes; step 1 runs on nodes 1-2, its rank 3 raises FileNotFoundError
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n8 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
NODES=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
FAIL=none srun -l -N2 -n4 -w "${NODES[2]},${NODES[3]}" $PY $HERE/train.py || exit 1
MASTER_PORT=$((MASTER_PORT + 1)) FAIL=exc_fnf FAIL_RANK=3 srun -l -N2 -n4 -w "${NODES[0]},${NODES[1]}" $PY $HERE/train.py
