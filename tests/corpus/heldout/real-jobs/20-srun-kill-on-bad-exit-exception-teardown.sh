#!/bin/bash
# srun --label --kill-on-bad-exit=1; rank 1 raises ValueError, Slurm kills the other tasks (waiting in a collective)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_value FAIL_RANK=1
srun -l --kill-on-bad-exit=1 $PY $HERE/train.py
