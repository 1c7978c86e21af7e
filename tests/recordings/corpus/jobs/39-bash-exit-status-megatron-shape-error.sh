#!/bin/bash
# srun --label bash -c 'python ...; exit $?', Megatron-style lines printed by the script; rank 3 raises a matmul shape error
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_shape FAIL_RANK=3 LOG=megatron
srun -l bash -c "$PY $HERE/train.py; exit \$?"
