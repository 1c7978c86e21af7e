#!/bin/bash
# srun --label, stdout and stderr in separate files (--error); rank 0 saves to a 1 MiB tmpfs: torch.save's short write, ENOSPC
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5 --error=@HERE@/%j.err
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=exc_enospc FAIL_RANK=0
srun -l $PY $HERE/train.py
