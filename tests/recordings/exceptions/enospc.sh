#!/bin/bash
# One node, torchrun with two gloo workers and --tee (lines prefixed [defaultN]:); rank 0 saves a
# checkpoint to a 2 MiB tmpfs (record.sh mounts it at /tmp/slurm-hooks-exc-small).
#SBATCH -N1 -n1 -c2 --time=5
HERE=$1
srun --label /opt/exc-torch-venv/bin/torchrun --nproc-per-node=2 --tee=3 --master-addr=127.0.0.1 \
  --master-port=$((21000 + SLURM_JOB_ID % 5000)) "$HERE/train.py" --fail enospc
