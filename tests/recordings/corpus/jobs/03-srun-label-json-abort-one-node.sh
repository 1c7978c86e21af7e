#!/bin/bash
# one node, srun --label, JSON-lines logs; rank 1 calls os.abort(): SIGABRT
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n2 --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=abort FAIL_RANK=1 LOG=json
srun -l $PY $HERE/train.py
