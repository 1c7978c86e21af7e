#!/bin/bash
# one torchrun agent per node (srun), 2 workers each; rank 3 executes ud2: the CPU raises SIGILL
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 --ntasks-per-node=1 -c2 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=ill FAIL_RANK=3
srun -l --ntasks-per-node=1 bash -c "exec $TR --nnodes=2 --node-rank=\$SLURM_NODEID --nproc-per-node=2 --master-addr=127.0.0.1 --master-port=$MASTER_PORT $HERE/train.py"
