#!/bin/bash
# steps of 1, 2 and 4 nodes in one sbatch; the third step's rank 5 frees a block twice: glibc aborts (SIGABRT)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n8 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export STEPS=4
NODES=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
FAIL=none srun -l -N1 -n2 -w "${NODES[0]}" $PY $HERE/train.py || exit 1
MASTER_PORT=$((MASTER_PORT + 1)) FAIL=none srun -l -N2 -n4 -w "${NODES[0]},${NODES[1]}" $PY $HERE/train.py || exit 1
MASTER_PORT=$((MASTER_PORT + 2)) FAIL=abort_free FAIL_RANK=5 srun -l -N4 -n8 $PY $HERE/train.py
