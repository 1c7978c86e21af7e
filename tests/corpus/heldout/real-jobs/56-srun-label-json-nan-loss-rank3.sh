#!/bin/bash
# srun --label, JSON-lines logs; rank 3 raises FloatingPointError on a NaN loss at step 4, logged at ERROR inside a JSON record
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_nan FAIL_RANK=3 LOG=json FAIL_STEP=4 STEPS=6
srun -l $PY $HERE/train.py
