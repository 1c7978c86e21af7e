#!/bin/bash
# four nodes, srun without --label, JSON-lines logs; every rank SIGSEGVs, rank r 0.4 r s after rank 0
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n8 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=segv FAIL_RANK=-1 LOG=json
srun $PY $HERE/train.py
