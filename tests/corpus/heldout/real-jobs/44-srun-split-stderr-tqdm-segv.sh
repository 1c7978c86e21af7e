#!/bin/bash
# srun --label, --error in its own file, tqdm-style \r progress on stderr; rank 0 SIGSEGVs mid-bar
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --error=@HERE@/%j.err
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=segv FAIL_RANK=0 LOG=tqdm STEPS=8 FAIL_STEP=6
srun -l $PY $HERE/train.py
