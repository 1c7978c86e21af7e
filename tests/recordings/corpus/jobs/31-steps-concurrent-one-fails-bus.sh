#!/bin/bash
# four nodes, two steps at once (srun &), two ranks each on two nodes; the second step's rank 1 gets SIGBUS, the first completes
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export STEPS=6
NODES=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
MASTER_PORT=$((MASTER_PORT + 1)) FAIL=none srun -l -N2 -n2 -w "${NODES[0]},${NODES[1]}" $PY $HERE/train.py &
MASTER_PORT=$((MASTER_PORT + 2)) FAIL=bus FAIL_RANK=1 srun -l -N2 -n2 -w "${NODES[2]},${NODES[3]}" $PY $HERE/train.py &
wait %1; a=$?
wait %2; b=$?
exit $((a | b))
