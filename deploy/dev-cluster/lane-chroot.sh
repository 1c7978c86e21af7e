#!/bin/bash
# Build (once) a Debian chroot that carries another Slurm: the root of a dev-cluster lane
# (cluster-up.sh SLURM=24.11 / 26.05) and of ci-in-chroot.sh (a Debian 13 host stand-in).
#   usage: lane-chroot.sh SUITE        prints the chroot's path; builds it when it is not cached
# Cached as ~/.cache/slurm-hooks/chroot-<suite>-<key>: <key> hashes the package list and LAYOUT
# (bump it when the setup below changes), so a change builds a new root and an old one is never
# half-updated (built in <path>.tmp, then renamed). Needs root, debootstrap and Debian's archive.
set -euo pipefail
SUITE=$1
CACHE=${SLURM_HOOKS_CACHE:-$HOME/.cache/slurm-hooks}
# Slurm and its daemons, the tools cluster-up.sh and the tests run, pyslurm's build needs, and
# chromium for the HTML report test (a Debian 13 host runs the whole suite).
PKGS="slurmctld slurmd slurmdbd slurm-client munge mariadb-server mariadb-client libslurm-dev
      python3 python3-venv python3-dev gcc libc6-dev git make procps iproute2 util-linux
      ca-certificates chromium fonts-dejavu-core"
LAYOUT=1
KEY=$(echo $PKGS $LAYOUT | sha256sum | cut -c1-12)
ROOT=$CACHE/chroot-$SUITE-$KEY
say() { printf '[lane-chroot %s] %s\n' "$(date +%T)" "$*" >&2; }
if [ -f "$ROOT/.built" ]; then echo "$ROOT"; exit 0; fi

[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
command -v debootstrap >/dev/null || flock /tmp/apt.lock apt-get install -y -q debootstrap >/dev/null
mkdir -p "$CACHE"; TMP=$ROOT.tmp
t0=$(date +%s)
if [ ! -f "$TMP/.debootstrapped" ]; then   # an interrupted build resumes after a whole debootstrap
  rm -rf "$TMP"
  say "debootstrap --variant=minbase $SUITE $TMP (~1 min)"
  debootstrap --variant=minbase "$SUITE" "$TMP" http://deb.debian.org/debian /usr/share/debootstrap/scripts/sid \
    > "$CACHE/chroot-$SUITE.log" 2>&1 || { tail -20 "$CACHE/chroot-$SUITE.log" >&2; exit 1; }
  touch "$TMP/.debootstrapped"
fi
printf '#!/bin/sh\nexit 101\n' > "$TMP/usr/sbin/policy-rc.d"; chmod +x "$TMP/usr/sbin/policy-rc.d"   # postinst starts no daemon
echo 'Acquire::Check-Valid-Until "false";' > "$TMP/etc/apt/apt.conf.d/99-valid-until"   # sid's Release reads as expired here
cp /etc/resolv.conf /etc/hosts "$TMP/etc/"
cp /etc/ssl/certs/ca-certificates.crt "$TMP/etc/host-ca-bundle.crt"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$TMP/etc/pip.conf"
say "apt-get install Slurm, MariaDB, munge, build tools (~2 min)"
unshare --mount --propagation private bash -c "
  mount -t proc proc '$TMP/proc'; mount --bind /dev '$TMP/dev'
  chroot '$TMP' env DEBIAN_FRONTEND=noninteractive apt-get -q update
  chroot '$TMP' env DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends $(echo $PKGS)
  chroot '$TMP' apt-get clean
" >> "$CACHE/chroot-$SUITE.log" 2>&1 || { tail -20 "$CACHE/chroot-$SUITE.log" >&2; exit 1; }
chroot "$TMP" dpkg-query -W -f '${Version}\n' slurmctld > "$TMP/.slurm-version"
date -u +%FT%TZ > "$TMP/.built"
rm -rf "$ROOT"; mv "$TMP" "$ROOT"
say "built $ROOT: Slurm $(cat "$ROOT/.slurm-version") in $(( $(date +%s) - t0 )) s, $(du -sh "$ROOT" | cut -f1)"
echo "$ROOT"
