#!/bin/bash
# torchrun --standalone in the batch script (no srun), 4 workers, HF-Trainer-style lines printed by the script; rank 2 calls torch._C._abort(): std::terminate in libtorch, SIGABRT
# (tests/recordings/corpus: record.py submits this as alice; train.py documents FAIL and the rest)
#SBATCH -N1 -n1 -c2 --mem=4G --time=5
HERE=@HERE@
PY=@PY@
TR=@TR@
export TRUTH_DIR=$HERE MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + SLURM_JOB_ID % 1000 * 10))
export FAIL=abort_torch FAIL_RANK=2 LOG=hf
$TR --standalone --nproc-per-node=4 $HERE/train.py
