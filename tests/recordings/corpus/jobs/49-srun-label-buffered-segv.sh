#!/bin/bash
# srun --label, stdout left block-buffered (no flush: a pipe); rank 1 SIGSEGVs at step 4 and its buffered lines are lost
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=segv FAIL_RANK=1 FLUSH=0 FAIL_STEP=4 STEPS=6
srun -l $PY $HERE/train.py
