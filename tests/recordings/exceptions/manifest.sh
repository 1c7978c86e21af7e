#!/bin/bash
# Two nodes, one torchrun agent per node (srun --label), two gloo workers each (world 4); the last
# rank opens a manifest that does not exist; torchrun's summary prints its error_file traceback.
#SBATCH -p multi -N2 --ntasks-per-node=1 -c2 --time=5
HERE=$1
PORT=$((26000 + SLURM_JOB_ID % 5000))
srun --label bash -c "exec /opt/exc-torch-venv/bin/torchrun --nnodes=2 --node-rank=\$SLURM_NODEID \
  --nproc-per-node=2 --master-addr=127.0.0.1 --master-port=$PORT $HERE/train.py --fail manifest"
