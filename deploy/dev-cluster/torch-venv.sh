#!/bin/bash
# torch-venv.sh: the venv with torch 2.13.0 (CPU) that the dev cluster's job users run:
# tests/test_cluster_flight.py and tests/recordings/ start real gloo jobs with it.
#   where     /opt/slurm-hooks-torch (TORCH_VENV), outside /root so that alice and bob can run it
#   torch     only the CPU build this machine kind keeps on disk (/opt/wheels, cp311): any other
#             torch is a multi-GB CUDA download, so without that file nothing is made (exit 1)
#   Python    3.11, as the wheel is: Debian 12's /usr/bin/python3.11; on Debian 13 (no 3.11) a
#             copy of the machine's pyenv 3.11 in /opt/slurm-hooks-python3.11 (pyenv's lives under
#             /root, which job users cannot enter), its libpython found through ld.so.conf.d
#   offline   torch's own dependencies are cached in ~/.cache/slurm-hooks/wheels-torch-<wheel>,
#             so that an install without a network (ci-in-chroot.sh's stand-in, which runs this
#             once on the machine first) takes them from there
# Nothing is done when the venv already imports torch as a job user and the cache is there.
set -euo pipefail
V=${TORCH_VENV:-/opt/slurm-hooks-torch}
say() { printf '[torch-venv %s] %s\n' "$(date +%T)" "$*"; }
as_user() { runuser -u nobody -- "$@"; }

WHEEL=$(ls /opt/wheels/torch-2.13.0+cpu-cp311-*.whl 2>/dev/null | head -1 || true)
[ -n "$WHEEL" ] || { say "no torch 2.13.0 CPU wheel in /opt/wheels: $V not made"; exit 1; }
CACHE=${SLURM_HOOKS_CACHE:-$HOME/.cache/slurm-hooks}/wheels-torch-$(basename "$WHEEL" .whl)

python311() {  # a Python 3.11 that job users can run
  if [ -x /usr/bin/python3.11 ]; then echo /usr/bin/python3.11; return; fi
  local copy=/opt/slurm-hooks-python3.11 src
  if [ ! -x "$copy/bin/python3.11" ]; then
    src=$(ls -d /root/.pyenv/versions/3.11* 2>/dev/null | tail -1 || true)
    [ -n "$src" ] || return 1
    mkdir -p "$copy.tmp"  # without its site-packages (most of its 1 GB): a venv needs none of them
    tar -C "$src" --exclude=./lib/python3.11/site-packages -cf - . | tar -C "$copy.tmp" -xf -
    mkdir -p "$copy.tmp/lib/python3.11/site-packages" && mv "$copy.tmp" "$copy"
    echo "$copy/lib" > /etc/ld.so.conf.d/slurm-hooks-python3.11.conf && ldconfig
  fi
  echo "$copy/bin/python3.11"
}

if as_user "$V/bin/python" -W ignore -c 'import torch' 2>/dev/null && [ -d "$CACHE" ]; then exit 0; fi
PY=$(python311) || { say "no Python 3.11 (the wheel is cp311): $V not made"; exit 1; }
"$PY" -c 'import ensurepip' 2>/dev/null || apt-get install -y -q python3.11-venv >/dev/null
rm -rf "$V"
"$PY" -m venv "$V"
if [ ! -d "$CACHE" ]; then  # torch's dependencies, for the next install without a network
  "$V/bin/pip" download -q --disable-pip-version-check --only-binary :all: -d "$CACHE.tmp" "$WHEEL" \
    2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)  # the machine's pip config names an empty index
  rm -f "$CACHE.tmp/$(basename "$WHEEL")" && mv "$CACHE.tmp" "$CACHE"
fi
PIP_NO_INDEX=1 PIP_FIND_LINKS="$CACHE" "$V/bin/pip" install -q --disable-pip-version-check "$WHEEL"
as_user "$V/bin/python" -W ignore -c 'import torch' >/dev/null
say "made $V (torch 2.13.0 CPU, $("$PY" -V), its dependencies cached in $CACHE)"
