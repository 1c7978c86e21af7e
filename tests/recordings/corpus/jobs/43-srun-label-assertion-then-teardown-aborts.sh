#!/bin/bash
# srun --label; rank 2 fails an assertion, then every other rank, losing its peer, aborts (a teardown SIGABRT after the root fault)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_assert FAIL_RANK=2 TEARDOWN=abort
srun -l $PY $HERE/train.py
