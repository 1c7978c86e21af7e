#!/bin/bash
# srun --label, Megatron-style save markers printed by the script (rank 0 prints them); rank 1 faults inside torch.save (crc32 over PROT_NONE pages): SIGSEGV in the save window
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -p multi -N2 -n4 --overcommit --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=save_segv FAIL_RANK=1 LOG=megatron SAVE_AT=3 STEPS=6
srun -l $PY $HERE/train.py
