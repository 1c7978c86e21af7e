#!/bin/bash
# NVIDIA's nvidia-resiliency-ext restart agent, for `make accuracy`'s side-by-side column
# (bench/nvrx_adapter.py), in its own cached venv: ~/.cache/slurm-hooks/nvrx-<version>.
#   usage: bench/nvrx_venv.sh            (once per machine; needs PyPI; ~10 s)
# Only the 0.7.0 wheel carries attribution/restart_agent/, and PyPI has it only as cp312
# manylinux_2_39 (its torch and C++ parts need both). The restart agent itself is pure Python that
# imports the standard library and httpx (for its L1 model client, never called here: the adapter
# runs it with --disable-l1), so the wheel is fetched with pip for that tag, its sha256 checked
# against the one pinned below, and only nvidia_resiliency_ext/{__init__,attribution/__init__}.py
# and attribution/restart_agent/ are unpacked into a venv of this machine's python3 with httpx.
# Nothing of it is vendored in this repository; at run time it needs no network, GPU or model.
set -euo pipefail
VERSION=0.7.0
WHEEL=nvidia_resiliency_ext-$VERSION-cp312-cp312-manylinux_2_39_x86_64.whl
SHA256=e0c646ccae211de81a4c2b5bb5cff96a5e12af1373fb0eb818a40716eef685ad
HTTPX=0.29.0
DEST=${SLURM_HOOKS_NVRX_VENV:-$HOME/.cache/slurm-hooks/nvrx-$VERSION}
PY=${PYTHON:-python3}
say() { printf '[nvrx-venv] %s\n' "$*" >&2; }

if [ -f "$DEST/NVRX_VERSION" ]; then
  say "already there: $DEST ($(head -1 "$DEST/NVRX_VERSION"))"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "downloading $WHEEL (no dependencies) from PyPI"
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$tmp" \
  --python-version 3.12 --platform manylinux_2_39_x86_64 "nvidia-resiliency-ext==$VERSION"
echo "$SHA256  $tmp/$WHEEL" | sha256sum -c --quiet -
rm -rf "$DEST.partial"
"$PY" -m venv "$DEST.partial"
"$DEST.partial/bin/pip" install -q --disable-pip-version-check "httpx==$HTTPX"
site=$("$DEST.partial/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$DEST.partial/bin/python" - "$tmp/$WHEEL" "$site" <<'EOF'
import sys, zipfile
wheel, site = sys.argv[1:]
keep = ("nvidia_resiliency_ext/__init__.py", "nvidia_resiliency_ext/attribution/__init__.py",
        "nvidia_resiliency_ext/attribution/restart_agent/")
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(keep) and n.endswith(".py")]
    z.extractall(site, names)
print(f"{len(names)} files")
EOF
"$DEST.partial/bin/python" -m nvidia_resiliency_ext.attribution.restart_agent.cli --help >/dev/null
printf 'nvidia-resiliency-ext %s (PyPI wheel %s, sha256 %s); httpx %s; python %s\n' "$VERSION" "$WHEEL" "$SHA256" \
  "$HTTPX" "$("$DEST.partial/bin/python" -c 'import platform; print(platform.python_version())')" >"$DEST.partial/NVRX_VERSION"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
say "ready: $DEST"
