#!/bin/bash
# four nodes, srun --label --kill-on-bad-exit=1; the last rank (7, on the last node) prints nothing and stops entering collectives at step 3, the others time out in gloo (20 s)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N4 -n8 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=hang FAIL_RANK=7 QUIET_RANK=7 GLOO_TIMEOUT_S=20 HANG_S=600
srun -l --kill-on-bad-exit=1 $PY $HERE/train.py
