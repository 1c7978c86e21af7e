#!/bin/bash
# Build (once) the root of a lane whose Slurm is built from SchedMD's source (25.05, 25.11: no
# Debian suite carries them): a copy of the trixie lane root (lane-chroot.sh) without Debian's
# Slurm packages, with Slurm's build dependencies, and Slurm compiled and installed in it where
# Debian puts it (/usr/sbin, /etc/slurm, libslurm in /usr/lib/x86_64-linux-gnu), so cluster-up.sh
# and pyslurm's build-wheel.sh run there unchanged.
#   usage: slurm-src.sh VERSION        prints the root's path; builds it when it is not cached
# Source: slurm-<VERSION>.<patch>.tar.gz in shared/vendor (a `git archive` of the release tag; it
# carries its generated configure). Cached as ~/.cache/slurm-hooks/slurm-src-<full version>-<key>:
# <key> hashes the tarball, this script and the trixie root's own key, so any change builds a new
# root and an old one is never half-updated (built in <path>.tmp, then renamed). Needs root and
# Debian's archive once; ~7 min for 25.11 on 2 cores (configure + make), ~1 min for the copy and apt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=${1:?usage: slurm-src.sh 25.05|25.11}
CACHE=${SLURM_HOOKS_CACHE:-$HOME/.cache/slurm-hooks}
say() { printf '[slurm-src %s] %s\n' "$(date +%T)" "$*" >&2; }
SRC=""
for d in "$HERE/../../../shared/vendor" "$HERE/../../../../shared/vendor" /work/shared/vendor; do
  SRC=$(ls "$d"/slurm-"$VERSION".*.tar.gz 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$SRC" ] && break
done
[ -n "$SRC" ] || { say "no slurm-$VERSION.*.tar.gz in shared/vendor"; exit 2; }
FULL=$(basename "$SRC" .tar.gz); FULL=${FULL#slurm-}   # e.g. 25.11.7
BASE=$("$HERE/lane-chroot.sh" trixie)
KEY=$( { sha256sum < "$SRC"; sha256sum < "$0"; basename "$BASE"; } | sha256sum | cut -c1-12)
ROOT=$CACHE/slurm-src-$FULL-$KEY
if [ -f "$ROOT/.built" ]; then echo "$ROOT"; exit 0; fi

[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
# Slurm's build dependencies: munge (auth), MariaDB (accounting_storage/mysql for slurmdbd),
# json-c, http-parser, yaml, jwt (slurmrestd, auth/jwt, namespace.yaml), hwloc, lz4, pam
BUILD_DEPS="gcc g++ make pkg-config libmunge-dev libmariadb-dev libjson-c-dev libhttp-parser-dev
            libyaml-dev libjwt-dev libhwloc-dev liblz4-dev libpam0g-dev libreadline-dev libdbus-1-dev"
# Where Debian's packages put Slurm: the lane scripts and build-wheel.sh find it there
CONFIGURE="--prefix=/usr --sysconfdir=/etc/slurm --localstatedir=/var --runstatedir=/run
           --libdir=/usr/lib/x86_64-linux-gnu --enable-multiple-slurmd --with-munge --disable-debug
           --without-rpath"
LOG=$CACHE/slurm-src-$FULL.log; TMP=$ROOT.tmp
t0=$(date +%s)
rm -rf "$TMP"
say "copying $BASE into $TMP"
cp -a --reflink=auto "$BASE" "$TMP"
rm -f "$TMP/.built" "$TMP/.slurm-version"
say "apt: Debian's Slurm out, Slurm's build dependencies in; then configure and make -j$(nproc) (~7 min); log $LOG"
mkdir -p "$TMP/usr/src/slurm" && tar xzf "$SRC" -C "$TMP/usr/src/slurm" --strip-components=1
unshare --mount --propagation private bash -c "
  set -euo pipefail
  mount -t proc proc '$TMP/proc'; mount --bind /dev '$TMP/dev'
  inroot() { chroot '$TMP' env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \"\$@\"; }
  inroot apt-get -q update
  inroot apt-get -q -y purge \$(inroot dpkg-query -W -f '\${Package}\n' | grep -E '^(slurm|libslurm|libpmi)' | tr '\n' ' ')
  inroot apt-get -q -y install --no-install-recommends $(echo $BUILD_DEPS)
  inroot apt-get clean
  inroot bash -c 'cd /usr/src/slurm && ./configure $(echo $CONFIGURE) && make -j\$(nproc) && make install && ldconfig'
  inroot bash -c 'id slurm >/dev/null 2>&1 || useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin slurm'
" > "$LOG" 2>&1 || { tail -30 "$LOG" >&2; say "build failed; log $LOG"; exit 1; }
rm -rf "$TMP/usr/src/slurm"
chroot "$TMP" /usr/sbin/slurmd -V >/dev/null   # it runs where it was built
echo "$FULL (source: $(basename "$SRC"))" > "$TMP/.slurm-version"
date -u +%FT%TZ > "$TMP/.built"
rm -rf "$ROOT"; mv "$TMP" "$ROOT"
say "built $ROOT: Slurm $FULL in $(( $(date +%s) - t0 )) s, $(du -sh "$ROOT" | cut -f1)"
echo "$ROOT"
