#!/bin/bash
# srun --label; rank 2 logs a missing shard's traceback at step 2, retries and trains on (a fault it survives), then raises KeyError at step 6
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export SURVIVE=io SURVIVE_RANK=2 SURVIVE_STEP=2 FAIL=exc_key FAIL_RANK=2 FAIL_STEP=6 STEPS=8
srun -l $PY $HERE/train.py
