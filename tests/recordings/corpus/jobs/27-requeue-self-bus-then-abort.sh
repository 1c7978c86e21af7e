#!/bin/bash
# --requeue --open-mode=append; the batch script requeues itself (scontrol requeue) after its step failed: run 1's rank 1 gets SIGBUS, run 2's rank 3 aborts (SIGABRT)
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --requeue --open-mode=append
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL_R0=bus FAIL_RANK_R0=1 FAIL_R1=abort FAIL_RANK_R1=3
srun -l $PY $HERE/train.py
rc=$?
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ] && [ $rc != 0 ]; then
  echo "step failed (exit $rc): requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
  sleep 120
fi
exit $rc
