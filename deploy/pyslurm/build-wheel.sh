#!/bin/bash
# Build pyslurm from the vendored source against this host's Slurm (Debian's libslurm-dev) once per
# machine, cache the wheel, and install it into the interpreter's environment.
#   usage: build-wheel.sh PYTHON [--install | --install-if-cached]
#     PYTHON               the interpreter the wheel is for (a venv's bin/python)
#     --install            build if not cached, then install
#     --install-if-cached  install only a wheel already in the cache; never build (cluster-up)
# Cache: ~/.cache/slurm-hooks/pyslurm/pyslurm-<ver>-slurm-<ver>-<cpXY>/ : a wheel depends on exactly the
# pyslurm source, the Slurm it was compiled against and the Python ABI (3.11.2 and 3.11.7 share cp311).
# Source: $PYSLURM_SRC, else the one vendored for this Slurm (shared/vendor/ beside the repo), chosen
# with its build pins by slurm_hooks/slurm/pyslurm_matrix.py: 22.5.3 for 22.05, the 24.11.x branch for
# 24.11, none for 26.05 (exit 3: the hooks' `auto` backend then uses the CLI and says why).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${SLURM_HOOKS_PYSLURM_CACHE:-$HOME/.cache/slurm-hooks/pyslurm}
PY=$1; MODE=${2:-}
say() { printf '[pyslurm %s] %s\n' "$(date +%T)" "$*" >&2; }
apt_install() { DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -q --no-install-recommends "$@" >/dev/null; }

H=/usr/include/slurm/slurm_version.h
if [ ! -f "$H" ] || [ ! -e /usr/lib/x86_64-linux-gnu/libslurm.so ]; then
  say "installing libslurm-dev (Slurm headers + libslurm.so)"
  apt_install libslurm-dev
fi
hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$H")
SLURM_VER=$(printf '%d.%02d.%d' $(( hex >> 16 & 255 )) $(( hex >> 8 & 255 )) $(( hex & 255 )))   # e.g. 22.05.8
matrix() { PYTHONPATH=$REPO "$PY" -m slurm_hooks.slurm.pyslurm_matrix "$@"; }

# The source vendored for this Slurm and its own build pins (slurm_hooks/slurm/pyslurm_matrix.py)
rc=0; spec=$(matrix source "$SLURM_VER") || rc=$?
if [ "$rc" = 3 ] && [ -z "${PYSLURM_SRC:-}" ]; then
  say "no pyslurm is vendored for Slurm $SLURM_VER (pyslurm tag: $(matrix tag "$SLURM_VER")); the hooks use the CLI"
  exit 3
fi
[ "$rc" = 0 ] || [ "$rc" = 3 ] || exit "$rc"
PINS=${PYSLURM_PINS:-$(echo "$spec" | tail -n +2)}   # PYSLURM_PINS: the build pins of a PYSLURM_SRC the table lacks
SRC=${PYSLURM_SRC:-}
tarball=$(basename "${SRC:-$(echo "$spec" | head -1)}")   # its name keys the cache: a cached wheel needs no source
PYSLURM_VER=$(basename "$tarball" .tar.gz); PYSLURM_VER=${PYSLURM_VER#pyslurm-}     # e.g. 22.5.3, 24.11.x-2adb2da
WANT=$(PYTHONPATH=$REPO "$PY" -c "from slurm_hooks.slurm.pyslurm_matrix import slurm_line; print(slurm_line('$PYSLURM_VER'.replace('.x', '.0')))")
if [ "${SLURM_VER%.*}" != "$WANT" ]; then
  say "this host has Slurm $SLURM_VER, but pyslurm $PYSLURM_VER builds only against Slurm $WANT."
  say "for Slurm ${SLURM_VER%.*} build pyslurm tag $(matrix tag "$SLURM_VER") (https://github.com/PySlurm/pyslurm/tags):"
  say "  PYSLURM_SRC=/path/to/pyslurm-<tag>.tar.gz $0 $*"
  exit 3
fi
[ -n "$PINS" ] || PINS="Cython setuptools wheel packaging"   # a PYSLURM_SRC the table does not know: current tools

ABI=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
KEY=pyslurm-$PYSLURM_VER-slurm-$SLURM_VER-$ABI
DIR=$CACHE/$KEY
if ! ls "$DIR"/pyslurm-*.whl >/dev/null 2>&1; then
  if [ "$MODE" = --install-if-cached ]; then say "no cached $KEY (make pyslurm builds it); not installed"; exit 0; fi
  if [ -z "$SRC" ]; then
    for dir in "$REPO/../../shared/vendor" "$REPO/../shared/vendor" /work/shared/vendor; do
      [ -f "$dir/$tarball" ] && SRC=$dir/$tarball && break
    done
    [ -n "$SRC" ] || { say "$tarball not found beside the repo (../shared/vendor): set PYSLURM_SRC=/path/to/it"; exit 2; }
  fi
  [ -f "$SRC" ] || { say "no pyslurm source at $SRC"; exit 2; }
  say "building $KEY: ~6-8 min on 2 cores, once per machine (cached)"
  "$PY" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' ||
    { say "installing python3-dev for $PY's headers"; apt_install python3-dev; }
  command -v gcc >/dev/null || apt_install gcc libc6-dev
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  "$PY" -m venv "$work/venv"
  # shellcheck disable=SC2086  # one pin a word
  "$work/venv/bin/pip" install -q $PINS   # this source's own pins (pyslurm_matrix.SOURCES)
  tar xzf "$SRC" -C "$work"
  ( cd "$work/pyslurm-$PYSLURM_VER" &&
    SLURM_INCLUDE_DIR=/usr/include SLURM_LIB_DIR=/usr/lib/x86_64-linux-gnu PYSLURM_BUILD_JOBS=$(nproc) \
      "$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" . ) > "$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; say "build failed"; exit 1; }
  mkdir -p "$CACHE" && rm -rf "$DIR.tmp" && mkdir "$DIR.tmp" && mv "$work"/dist/pyslurm-*.whl "$DIR.tmp/"
  rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"   # a cache entry is whole or absent
  say "cached $DIR/$(ls "$DIR")"
fi
WHEEL=$(ls "$DIR"/pyslurm-*.whl | head -1)
if [ -n "$MODE" ]; then
  "$PY" -m pip install -q --no-deps --force-reinstall "$WHEEL"
  say "installed $(basename "$WHEEL") into $("$PY" -c 'import sys; print(sys.prefix)')"
fi
