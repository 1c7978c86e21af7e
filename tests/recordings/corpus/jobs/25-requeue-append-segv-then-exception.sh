#!/bin/bash
# --requeue --open-mode=append: the first run's rank 1 SIGSEGVs; the recorder requeues the job (scontrol requeue); the second run's rank 2 raises FileNotFoundError
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --requeue --open-mode=append
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL_R0=segv FAIL_RANK_R0=1 FAIL_R1=exc_fnf FAIL_RANK_R1=2
srun -l $PY $HERE/train.py
