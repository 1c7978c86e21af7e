#!/bin/bash
# srun --label, tqdm-style \r progress on stderr, --time=1: training runs until the time limit
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=1
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=forever LOG=tqdm STEPS=400 STEP_S=0.5
srun -l $PY $HERE/train.py
