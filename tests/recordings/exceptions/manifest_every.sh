#!/bin/bash
# Four nodes, two gloo ranks each, started by `srun bash -c` the way most sbatch scripts do; every
# rank opens a data manifest that does not exist (a bad path in the config), rank 0 first.
#SBATCH -p multi -N4 --ntasks-per-node=2 -c1 --time=5
HERE=$1
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((27000 + SLURM_JOB_ID % 5000))
srun --label bash -c "RANK=\$SLURM_PROCID WORLD_SIZE=\$SLURM_NTASKS LOCAL_RANK=\$SLURM_LOCALID \
  exec /opt/exc-torch-venv/bin/python $HERE/train.py --fail manifest-every"
