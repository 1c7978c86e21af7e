#!/bin/bash
# srun --label; a DataLoader worker of rank 2 gets SIGBUS (mmap of a truncated file); the rank raises PyTorch's worker error
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=dl_bus FAIL_RANK=2
srun -l $PY $HERE/train.py
