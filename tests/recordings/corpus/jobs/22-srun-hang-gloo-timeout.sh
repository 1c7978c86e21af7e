#!/bin/bash
# srun --label --kill-on-bad-exit=1; rank 2 stops entering collectives, the others time out in gloo (20 s) and exit, Slurm kills rank 2
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=hang FAIL_RANK=2 GLOO_TIMEOUT_S=20 HANG_S=600
srun -l --kill-on-bad-exit=1 $PY $HERE/train.py
