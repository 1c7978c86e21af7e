#!/bin/bash
# Build pyslurm from the vendored source against this host's Slurm (Debian's libslurm-dev) once per
# machine, cache the wheel, and install it into a venv.
#   usage: build-wheel.sh PYTHON [--install]     PYTHON: the interpreter the wheel is for
# Cache: ~/.cache/slurm-hooks/pyslurm/pyslurm-<ver>-slurm-<ver>-<cpXY>/ -- a wheel depends on exactly the
# pyslurm source, the Slurm headers/library it was compiled against, and the Python ABI (cpXY), so
# 3.11.2 and 3.11.7 share one wheel.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SRC=${PYSLURM_SRC:-$(ls "$REPO"/../../shared/vendor/pyslurm-*.tar.gz /work/shared/vendor/pyslurm-*.tar.gz 2>/dev/null | head -1)}
CACHE=${SLURM_HOOKS_CACHE:-$HOME/.cache/slurm-hooks}/pyslurm
PY=$1; INSTALL=${2:-}
say() { printf '[pyslurm %s] %s\n' "$(date +%T)" "$*" >&2; }

[ -n "$SRC" ] && [ -f "$SRC" ] || { say "no vendored pyslurm source (set PYSLURM_SRC)"; exit 2; }
PYSLURM_VER=$(basename "$SRC" .tar.gz); PYSLURM_VER=${PYSLURM_VER#pyslurm-}        # e.g. 22.5.3

# pyslurm's release line X.Y.* builds only against Slurm X.Y (Y zero-padded); the tag for each Slurm:
matching_tag() {
  case "$1" in
    22.05) echo v22.5.3 ;; 23.02) echo v23.2.3 ;; 23.11) echo v23.11.1 ;; 24.05) echo v24.5.1 ;;
    24.11) echo v24.11.0 ;; 25.05) echo v25.5.0 ;; 25.11) echo v25.11.2 ;; *) echo "none known" ;;
  esac
}

H=/usr/include/slurm/slurm_version.h
if [ ! -f "$H" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libslurm.so ]; then
  say "installing libslurm-dev (Slurm headers + libslurm.so)"
  DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -q --no-install-recommends libslurm-dev >/dev/null
fi
hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$H")
SLURM_VER=$(printf '%d.%02d.%d' $(( hex >> 16 & 255 )) $(( hex >> 8 & 255 )) $(( hex & 255 )))   # e.g. 22.05.8
SLURM_MM=${SLURM_VER%.*}
IFS=. read -r pmaj pmin _ <<<"$PYSLURM_VER"; WANT=$(printf '%s.%02d' "$pmaj" "$pmin")
if [ "$SLURM_MM" != "$WANT" ]; then
  say "this host has Slurm $SLURM_VER; the vendored pyslurm $PYSLURM_VER builds only against Slurm $WANT."
  say "for Slurm $SLURM_MM use pyslurm tag $(matching_tag "$SLURM_MM") (https://github.com/PySlurm/pyslurm/tags) via PYSLURM_SRC=..."
  exit 3
fi

ABI=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
KEY=pyslurm-$PYSLURM_VER-slurm-$SLURM_VER-$ABI
DIR=$CACHE/$KEY
if ! ls "$DIR"/pyslurm-*.whl >/dev/null 2>&1; then
  say "building $KEY (single-threaded Cython, ~8 min on 2 cores; once per machine)"
  "$PY" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' || {
    say "installing python3-dev for $PY's headers"
    DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -q --no-install-recommends python3-dev >/dev/null; }
  command -v gcc >/dev/null || DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -q gcc >/dev/null
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  "$PY" -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "Cython>=0.29.30,<3.0" "setuptools==59.2.0" "wheel==0.37.0"
  tar xzf "$SRC" -C "$work"
  ( cd "$work/pyslurm-$PYSLURM_VER" &&
    SLURM_INCLUDE_DIR=/usr/include SLURM_LIB_DIR=/usr/lib/x86_64-linux-gnu \
      "$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" . ) > "$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; say "build failed"; exit 1; }
  mkdir -p "$DIR.tmp" && mv "$work"/dist/pyslurm-*.whl "$DIR.tmp/" && rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"   # atomic: no half cache
  say "cached $(ls "$DIR")"
fi
WHEEL=$(ls "$DIR"/pyslurm-*.whl | head -1)
echo "$WHEEL"
if [ "$INSTALL" = --install ]; then
  "$PY" -m pip install -q --no-deps --force-reinstall "$WHEEL" && say "installed into $("$PY" -c 'import sys; print(sys.prefix)')"
fi
