#!/bin/bash
# torchrun --standalone under srun, 4 workers; rank 1 stops entering collectives, the others time out in gloo (20 s), torchrun tears rank 1 down
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n1 -c2 --mem=4G --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=hang FAIL_RANK=1 GLOO_TIMEOUT_S=20 HANG_S=600
srun -l $TR --standalone --nproc-per-node=4 $HERE/train.py
