#!/bin/bash
# srun --label; a save at step 2 completes (start and end markers), training goes on, rank 2 SIGSEGVs at step 9
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=segv FAIL_RANK=2 SAVE_AT=2 STEPS=12 FAIL_STEP=9
srun -l $PY $HERE/train.py
