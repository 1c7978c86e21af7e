#!/bin/bash
# one node (the R570 node, CDMM off), srun --label bash -c 'python ...; exit $?', DeepSpeed-style save markers printed by the script; rank 0 faults inside torch.save: SIGSEGV in the save window
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N1 -w @NODE2@ -n2 --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=save_segv FAIL_RANK=0 LOG=deepspeed SAVE_AT=3 STEPS=6
srun -l bash -c "$PY $HERE/train.py; exit \$?"
