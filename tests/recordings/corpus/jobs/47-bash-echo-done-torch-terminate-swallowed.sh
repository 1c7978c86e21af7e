#!/bin/bash
# srun --label bash -c 'python ...; echo done': rank 1's std::terminate (torch._C._abort, SIGABRT) is swallowed, the job ends 0
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=abort_torch FAIL_RANK=1
srun -l bash -c "$PY $HERE/train.py; echo done"
