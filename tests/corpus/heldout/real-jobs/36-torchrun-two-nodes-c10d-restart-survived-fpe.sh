#!/bin/bash
# one torchrun agent per node, c10d rendezvous, --max-restarts=1; attempt 0's rank 1 SIGFPEs (idiv by zero), both agents restart, attempt 1 trains to the end
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 --ntasks-per-node=1 -c2 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL_A0=fpe FAIL_RANK_A0=1 FAIL_A1=none
srun -l --ntasks-per-node=1 bash -c "exec $TR --nnodes=2 --nproc-per-node=2 --max-restarts=1 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:$MASTER_PORT --rdzv-id=$SLURM_JOB_ID $HERE/train.py"
