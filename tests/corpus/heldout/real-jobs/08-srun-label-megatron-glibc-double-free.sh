#!/bin/bash
# srun --label, Megatron-style iteration lines printed by the script; rank 1 frees a block twice: glibc aborts (SIGABRT)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=abort_free FAIL_RANK=1 LOG=megatron FAIL_STEP=4 STEPS=6
srun -l $PY $HERE/train.py
