#!/bin/bash
# one node, --mem-per-cpu=700M (memory cgroup); rank 1 allocates until the cgroup's OOM killer SIGKILLs it
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n2 --mem-per-cpu=700M --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=oom FAIL_RANK=1
srun -l $PY $HERE/train.py
