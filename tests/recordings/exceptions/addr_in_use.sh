#!/bin/bash
# One node: another process already listens on the rendezvous port (two jobs sharing a node and a
# fixed MASTER_PORT); torchrun's own TCPStore cannot bind it.
#SBATCH -N1 -n1 -c2 --time=5
HERE=$1
PORT=$((31000 + SLURM_JOB_ID % 5000))
/opt/exc-torch-venv/bin/python -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $PORT)); s.listen(); time.sleep(120)" &
sleep 1
srun --label /opt/exc-torch-venv/bin/torchrun --nproc-per-node=2 --master-addr=127.0.0.1 \
  --master-port=$PORT "$HERE/train.py" --fail manifest
rc=$?
kill %1
exit $rc
