#!/bin/bash
# one rank on one node, --mem=1200M (memory cgroup); the rank allocates until the cgroup's OOM killer SIGKILLs it
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n1 --mem=1200M --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=oom FAIL_RANK=0
srun -l $PY $HERE/train.py
