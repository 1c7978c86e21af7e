#!/bin/bash
# torchrun --standalone --max-restarts=1 under srun, 4 workers on one node; attempt 0's rank 2 SIGSEGVs, torchrun restarts the workers, attempt 1 trains to the end
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n1 -c2 --mem=4G --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL_A0=segv FAIL_RANK_A0=2 FAIL_A1=none STEPS=5
srun -l $TR --standalone --nproc-per-node=4 --max-restarts=1 $HERE/train.py
