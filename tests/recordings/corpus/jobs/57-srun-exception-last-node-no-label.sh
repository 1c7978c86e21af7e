#!/bin/bash
# srun without --label, four nodes x 1; rank 3 (on the last node) opens a data shard that does not exist: FileNotFoundError
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_fnf FAIL_RANK=3
srun $PY $HERE/train.py
