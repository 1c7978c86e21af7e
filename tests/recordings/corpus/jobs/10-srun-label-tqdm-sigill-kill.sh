#!/bin/bash
# srun --label, tqdm-style \r progress on rank 0's stderr; rank 0 sends itself SIGILL (os.kill: a real delivered signal, not a real illegal instruction)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=ill_kill FAIL_RANK=0 LOG=tqdm STEPS=8 FAIL_STEP=5
srun -l $PY $HERE/train.py
