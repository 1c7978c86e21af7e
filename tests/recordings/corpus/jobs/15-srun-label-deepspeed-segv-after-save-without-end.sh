#!/bin/bash
# srun --label, DeepSpeed-style lines printed by the script; the save at step 2 prints no end marker, training goes on, rank 1 SIGSEGVs at step 8
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=segv FAIL_RANK=1 LOG=deepspeed SAVE_AT=2 SAVE_END=0 STEPS=10 FAIL_STEP=8
srun -l $PY $HERE/train.py
