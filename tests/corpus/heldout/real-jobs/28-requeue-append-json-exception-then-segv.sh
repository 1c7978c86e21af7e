#!/bin/bash
# --requeue --open-mode=append, JSON-lines logs: the first run's rank 3 raises ValueError; the recorder requeues the job; the second run's rank 0 SIGSEGVs
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --requeue --open-mode=append
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export LOG=json FAIL_R0=exc_value FAIL_RANK_R0=3 FAIL_R1=segv FAIL_RANK_R1=0
srun -l $PY $HERE/train.py
