#!/bin/bash
# A dev-cluster lane: the same four-node cluster (cluster-up.sh) on another Slurm, run from a
# Debian chroot (lane-chroot.sh) in namespaces of its own, beside the host's cluster:
#   net   loopback only: the lane's ports (6817-6835, 3306) are its own, the host's are untouched
#   pid   its daemons are one process tree; stopping the lane kills that tree and nothing else
#   mount its own /run (munge socket, pid files), /proc, and the repository at the same path
# The chroot's own /etc/slurm, /etc/munge (its own key), /var/lib/mysql, /opt/slurm-hooks and
# /home are the lane's. Sourced by cluster-up.sh, cluster-down.sh and slurm-run; usage:
#   lane.sh up VERSION | down VERSION | run VERSION CMD... | prepare VERSION
set -euo pipefail
LANE_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LANE_REPO=$(cd "$LANE_HERE/../.." && pwd)
LANE_CACHE=${SLURM_HOOKS_CACHE:-$HOME/.cache/slurm-hooks}
LANE_STATE=/run/slurm-hooks-lanes
lane_say() { printf '[lane %s] %s\n' "$(date +%T)" "$*" >&2; }

lane_suite() {  # the Debian suite that carries that Slurm (25.x: built from source on trixie)
  case "$1" in
    24.11|25.05|25.11) echo trixie ;;
    26.05) echo sid ;;
    *) lane_say "no lane for Slurm $1 (there are 24.11: trixie, 25.05 and 25.11: source on trixie, 26.05: sid)"; return 2 ;;
  esac
}

lane_from_source() { case "$1" in 25.05|25.11) return 0 ;; *) return 1 ;; esac; }

lane_root() {  # the lane's root: Debian's packages in a chroot, or Slurm built from source in one
  if lane_from_source "$1"; then "$LANE_HERE/slurm-src.sh" "$1"; else "$LANE_HERE/lane-chroot.sh" "$(lane_suite "$1")"; fi
}

lane_id() {  # names the lane's test venv: one per Slurm, since each lane's pyslurm links its own libslurm
  if lane_from_source "$1"; then echo "src-$1"; else lane_suite "$1"; fi
}

lane_pyslurm_pins() {  # build pins for that source (pyslurm_matrix.SOURCES has no 25.x entry)
  case "$1" in
    25.05) echo "Cython>=3.0,<3.1 setuptools>=68 wheel>=0.37.0 packaging>=21.3" ;;   # 25.5.0 fails to cythonize with 3.1+
  esac
}

lane_pyslurm_src() {  # the vendored pyslurm for a source lane (pyslurm 25.5.x is Slurm 25.05's line)
  local shared mm; shared=$(lane_shared); mm="${1%%.*}.$((10#${1#*.}))"
  lane_from_source "$1" && [ -n "$shared" ] && ls "$shared"/vendor/pyslurm-"$mm".*.tar.gz 2>/dev/null | sort -V | tail -1
  return 0
}

host_slurm() {  # the host's own Slurm major.minor: installed, else the one its apt would install
  local v; v=$(dpkg-query -W -f '${Version}' slurmctld 2>/dev/null || true)
  [ -n "$v" ] || v=$(apt-cache policy slurmctld 2>/dev/null | awk '/Candidate:/ {print $2}')
  echo "$v" | cut -d. -f1,2
}

lane_shared() {  # ../shared beside the repository (the vendored pyslurm sources), when there is one
  local d
  for d in "$LANE_REPO/../shared" "$LANE_REPO/../../shared"; do [ -d "$d/vendor" ] && { cd "$d" && pwd; return; }; done
  return 0
}

# Mounts for a chroot in the current (private) mount namespace. With "run", also a tmpfs /run (the
# lane's own sockets and pid files); the prepare step keeps the chroot's /run as it is.
lane_mounts() {
  local root=$1 suite=$2 what=${3:-} id=${4:-$2} shared; shared=$(lane_shared)
  # A source lane's / is a mount point (lane_up pivots into it), as a machine's is: namespace/linux
  # (25.11) makes / private for each job, which fails with EINVAL on a bare directory
  case "$what:$id" in run:src-*) mount --bind "$root" "$root" ;; esac
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  [ "$what" = run ] && mount -t tmpfs -o mode=0755 tmpfs "$root/run"
  mkdir -p "$root$LANE_REPO" "$root/root/.cache/slurm-hooks/pyslurm" "$LANE_CACHE/pyslurm" "$LANE_CACHE/wheels-$suite"
  mount --bind "$LANE_REPO" "$root$LANE_REPO"
  if [ -n "$shared" ]; then mkdir -p "$root$shared"; mount --bind -o ro "$shared" "$root$shared"; fi
  mount --bind "$LANE_CACHE/pyslurm" "$root/root/.cache/slurm-hooks/pyslurm"
  mkdir -p "$root/var/cache/slurm-hooks-wheels"; mount --bind "$LANE_CACHE/wheels-$suite" "$root/var/cache/slurm-hooks-wheels"
  local venv=$LANE_REPO/.lanes/$id/venv   # this checkout's test venv for the lane's Python, as .venv
  if [ -d "$venv" ]; then mkdir -p "$LANE_REPO/.venv"; mount --bind "$venv" "$root$LANE_REPO/.venv"; fi
}

# Inside the lane nothing reaches PyPI: pip installs from the wheels prepare fetched.
LANE_ENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
          PIP_NO_INDEX=1 PIP_FIND_LINKS=/var/cache/slurm-hooks-wheels PIP_DISABLE_PIP_VERSION_CHECK=1
          PYTHONDONTWRITEBYTECODE=1)

# Once per checkout and chroot, with the host's network: the lane's test venv (.lanes/<suite>/venv:
# the chroot's python3, the project's dev extras), a wheelhouse for the installs cluster-up.sh makes
# inside the lane, and pyslurm for that Slurm (a cached wheel; none for 26.05; for 25.x the vendored
# source, PYSLURM_SRC, which the pyslurm table leaves out). SLURM_HOOKS_OFFLINE=1
# (ci-in-chroot.sh, no network): from those wheels alone.
lane_prepare() {
  local version=$1 suite root id pysrc; suite=$(lane_suite "$version"); root=$(lane_root "$version")
  id=$(lane_id "$version"); pysrc=$(lane_pyslurm_src "$version"); local pins; pins=$(lane_pyslurm_pins "$version")
  local venv=$LANE_REPO/.lanes/$id/venv
  if [ -f "$venv/.installed" ] && [ "$venv/.installed" -nt "$LANE_REPO/pyproject.toml" ] &&
     [ -f "$LANE_CACHE/wheels-$suite/.done" ]; then echo "$root"; return; fi
  lane_say "preparing the $version lane for $LANE_REPO (venv, wheels, pyslurm)"
  # pip in the chroot trusts what the host trusts (a site's TLS proxy included), through truststore:
  # Python 3.13's strict X.509 checks refuse some proxies' CAs given as --cert
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  unshare --mount --propagation private bash -c "
    set -euo pipefail
    source '$LANE_HERE/lane.sh'
    lane_mounts '$root' '$suite' '' '$id'
    chroot '$root' env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CONFIG_FILE=/dev/null ${pysrc:+PYSLURM_SRC=$pysrc} ${pins:+PYSLURM_PINS=\"$pins\"} \
      PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_FIND_LINKS=/var/cache/slurm-hooks-wheels ${SLURM_HOOKS_OFFLINE:+PIP_NO_INDEX=1} \
      bash -c '
      set -euo pipefail
      cd $LANE_REPO
      [ -x $venv/bin/python ] || python3 -m venv $venv
      $venv/bin/pip install -q --upgrade pip
      $venv/bin/pip install -q -e \".[dev]\"
      touch $venv/.installed
      # cluster-up.sh inside the lane runs make install (a venv from python3, then this package)
      $venv/bin/pip download -q -d /var/cache/slurm-hooks-wheels pip \"setuptools>=61\" wheel
      $venv/bin/pip wheel -q -w /var/cache/slurm-hooks-wheels \".[dev]\"   # also what ci-in-chroot.sh installs
      touch /var/cache/slurm-hooks-wheels/.done
      deploy/pyslurm/build-wheel.sh $venv/bin/python --install || [ \$? = 3 ]
    '
  " >&2
  echo "$root"
}

lane_pid() {  # the host pid of the lane's init (its pid namespace's 1), if the lane runs
  local f=$LANE_STATE/$1/init.pid p
  [ -f "$f" ] || return 1
  p=$(cat "$f")
  [ -e "/proc/$p" ] && same_dir "/proc/$p/root" "$(cat "$LANE_STATE/$1/root")" && echo "$p"
}

# Whether two paths are one directory: by device and inode, since /proc/PID/root reads as another
# path where the lane's mount namespace sees the chroot differently (a lane inside ci-in-chroot.sh)
same_dir() { [ "$(stat -L -c %d:%i "$1" 2>/dev/null)" = "$(stat -L -c %d:%i "$2" 2>/dev/null)" ]; }

lane_up() {
  local version=$1 suite root; suite=$(lane_suite "$version")
  if lane_pid "$version" >/dev/null; then lane_say "the $version lane is already up"; return 0; fi
  root=$(lane_prepare "$version"); local id; id=$(lane_id "$version")
  install -d -m 0755 "$LANE_STATE/$version"; echo "$root" > "$LANE_STATE/$version/root"
  rm -f "$LANE_STATE/$version/init.pid"
  # The lane's init: its namespaces' first process, a reaper (daemons that double-fork end up here)
  setsid unshare --net --mount --pid --fork --propagation private bash -c "
    set -euo pipefail
    source '$LANE_HERE/lane.sh'
    ip link set lo up
    ip addr add 127.0.0.2/8 dev lo   # getaddrinfo(AI_ADDRCONFIG) ignores a lone 127.0.0.1
    lane_mounts '$root' '$suite' run '$id'
    R='$root'
    # A source lane pivots into its root rather than chroot: a process that joins a job's mount
    # namespace (setns, Slurm 25.11's namespace/linux) lands at that namespace's root, which is the
    # machine's / after a chroot, where the lane's slurmstepd is not
    if lane_from_source '$version'; then
      cd \"\$R\"; mkdir -p .lane-oldroot; pivot_root . .lane-oldroot; umount -l /.lane-oldroot; R=/
    fi
    exec chroot \"\$R\" python3 -c '
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)'
  " > "$LANE_STATE/$version/init.log" 2>&1 < /dev/null &
  local unshare=$! p=""
  for _ in $(seq 100); do
    p=$(pgrep -P "$unshare" | head -1 || true)
    [ -n "$p" ] && same_dir "/proc/$p/root" "$root" && break
    sleep 0.1
  done
  [ -n "$p" ] || { cat "$LANE_STATE/$version/init.log" >&2; lane_say "the $version lane did not start"; return 1; }
  echo "$p" > "$LANE_STATE/$version/init.pid"
  lane_say "Slurm $(cat "$root/.slurm-version") lane: namespaces of pid $p, root $root"
  lane_run "$version" deploy/dev-cluster/cluster-up.sh
}

# Run CMD in the lane (its network, mounts and root; cwd the repository), as root. The root is the
# lane init's own (nsenter --root), not `chroot <its path>`: entering a mount namespace puts a
# process at the top of that namespace's tree, the machine's /, where the path names the chroot
# only if lane_up ran at the machine's / too. Run inside another chroot (a lane nested in
# ci-in-chroot.sh), the path led to the bare directory under the machine's /, not to the one the
# binds of lane_mounts cover: the checkout, /proc and /run came up empty there. The working
# directory is the checkout as the lane sees it (--wdns), never the caller's, which it cannot reach.
lane_run() {
  local version=$1 p; shift
  p=$(lane_pid "$version") || { lane_say "the $version lane is not up: SLURM=$version make cluster-up"; return 1; }
  local pass=() pysrc; pysrc=$(lane_pyslurm_src "$version")   # cluster-up installs the cached wheel it names
  [ -n "$pysrc" ] && pass+=("PYSLURM_SRC=$pysrc")
  for v in SLURM_HOOKS_REQUIRE_CLUSTER SLURM_HOOKS_DEV_NODES SLURM_HOOKS_DEV_NAMESPACE CI HYPOTHESIS_PROFILE RELIABILITY_OUT TERM; do
    [ -n "${!v:-}" ] && pass+=("$v=${!v}"); done
  nsenter --target "$p" --net --mount --pid --root --wdns="$LANE_REPO" -- "${LANE_ENV[@]}" "${pass[@]}" \
    SLURM_HOOKS_LANE="$version" "$@"
}

lane_down() {
  local version=$1 p
  p=$(lane_pid "$version") || { rm -rf "${LANE_STATE:?}/$version"; return 0; }
  lane_run "$version" deploy/dev-cluster/cluster-down.sh || true
  kill -KILL "$p"   # the pid namespace's init: the kernel kills whatever else the lane still runs
  for _ in $(seq 50); do [ -e "/proc/$p" ] || break; sleep 0.1; done
  rm -rf "${LANE_STATE:?}/$version"
  lane_say "the $version lane is down"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cmd=${1:?usage: lane.sh up|down|run|prepare VERSION [CMD...]}; shift
  "lane_$cmd" "$@"
fi
