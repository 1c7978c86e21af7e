#!/bin/bash
# two nodes, --mem-per-cpu=700M; rank 2 allocates until its node's cgroup OOM killer SIGKILLs it (no kernel log witnesses which node)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --mem-per-cpu=700M
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=oom FAIL_RANK=2
srun -l $PY $HERE/train.py
