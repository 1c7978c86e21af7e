#!/bin/bash
# torchrun --standalone --max-restarts=1 under srun, tqdm-style progress; attempt 0's rank 1 raises PermissionError, attempt 1's rank 3 DataLoader worker gets SIGBUS; no restart is left
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n1 -c2 --mem=4G --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export LOG=tqdm FAIL_A0=exc_perm FAIL_RANK_A0=1 FAIL_A1=dl_bus FAIL_RANK_A1=3 STEPS=6
srun -l $TR --standalone --nproc-per-node=4 --max-restarts=1 $HERE/train.py
