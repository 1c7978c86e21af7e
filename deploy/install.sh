#!/bin/bash
# `make install PREFIX=/opt/slurm-hooks [HOOKS_DIR=...] [PYTHON=/usr/bin/python3]`: a self-contained
# slurm-hooks under PREFIX, the way the dev cluster (deploy/dev-cluster/cluster-up.sh) installs it:
#   PREFIX/venv/                     the package and its dependencies (bytecode compiled by pip)
#   PREFIX/bin/slurm-hooks           the operator's command (doctor, flush, decode, collect, ...)
#   HOOKS_DIR/ (default PREFIX/hooks) hook scripts with absolute paths, prolog.d/ and epilog.d/
#                                    entries, slurm.conf.snippet (slurm-hooks install-hooks)
#   PREFIX/share/slurm-hooks/        config.example.yaml, cron.d/slurm-hooks
# Re-running it upgrades in place (the old venv's packages are replaced). See docs/operators/install.md.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${1:?usage: install.sh PREFIX [HOOKS_DIR]}
HOOKS_DIR=${2:-$PREFIX/hooks}
PYTHON=${PYTHON:-/usr/bin/python3}
case "$PREFIX$HOOKS_DIR" in /*) ;; *) echo "install.sh: PREFIX and HOOKS_DIR must be absolute paths" >&2; exit 2 ;; esac

if [ ! -x "$PREFIX/venv/bin/python" ]; then
  "$PYTHON" -m venv "$PREFIX/venv"
  "$PREFIX/venv/bin/pip" install -q --upgrade pip
fi
# From a copy, so the checkout gets no build/ or egg-info; --force-reinstall: this checkout even
# at an unchanged version number.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$REPO/pyproject.toml" "$REPO/README.md" "$REPO/slurm_hooks" "$tmp/"
"$PREFIX/venv/bin/pip" install -q "$tmp"
"$PREFIX/venv/bin/pip" install -q --force-reinstall --no-deps "$tmp"

install -d -m 0755 "$PREFIX/bin" "$PREFIX/share/slurm-hooks/cron.d" "$HOOKS_DIR"
ln -sfn "$PREFIX/venv/bin/slurm-hooks" "$PREFIX/bin/slurm-hooks"
"$PREFIX/venv/bin/slurm-hooks" install-hooks --dest "$HOOKS_DIR" --python "$PREFIX/venv/bin/python" >/dev/null
install -m 0644 "$REPO/deploy/config.example.yaml" "$PREFIX/share/slurm-hooks/config.example.yaml"
sed "s|/opt/slurm-hooks/venv/bin/slurm-hooks|$PREFIX/venv/bin/slurm-hooks|" "$REPO/deploy/cron.d/slurm-hooks" \
  > "$PREFIX/share/slurm-hooks/cron.d/slurm-hooks"
echo "slurm-hooks installed in $PREFIX; add the lines of $HOOKS_DIR/slurm.conf.snippet to slurm.conf"
