#!/bin/bash
# srun without --label, JSON-lines logs; rank 3 sends itself SIGFPE (os.kill: a real delivered signal)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=fpe_kill FAIL_RANK=3 LOG=json
srun $PY $HERE/train.py
