#!/bin/bash
# one node (the R570 node, CDMM off), srun --label; rank 1 gets SIGBUS inside the save window (after `saving checkpoint`, before `saved checkpoint`)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N1 -w @NODE2@ -n2 --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=save_bus FAIL_RANK=1 SAVE_AT=3 STEPS=6
srun -l $PY $HERE/train.py
