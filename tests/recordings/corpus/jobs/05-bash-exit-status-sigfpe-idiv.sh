#!/bin/bash
# srun --label bash -c 'python ...; exit $?'; rank 0 executes an integer division by zero: SIGFPE
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=fpe FAIL_RANK=0
srun -l bash -c "$PY $HERE/train.py; exit \$?"
