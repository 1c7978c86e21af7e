#!/bin/bash
# ci-in-chroot.sh [REPO] : the proof that CI passes on a Debian 13 host. A fresh clone of REPO's
# HEAD (default: this checkout) runs its whole .ci/run (CI=true, as root) inside Debian trixie
# acting as the host: Slurm 24.11, python3 3.13, pyslurm 24.11. As on such a host, make lane-test
# skips 24.11 (the host's own) and runs the 26.05 lane from the sid chroot, nested in this one.
#   root     the cached trixie root (lane-chroot.sh) as the lower layer of an overlay, so the
#            run's installs and state are thrown away after it and the cache stays as it was
#   network  its own namespace, loopback only: its cluster's ports (6817-6835, 3306) cannot meet
#            the host's dev cluster's, and nothing reaches the network; pip installs from the
#            wheels `lane.sh prepare 24.11` fetched (SLURM_HOOKS_OFFLINE=1), pyslurm and the 26.05
#            lane's chroot come from ~/.cache/slurm-hooks (bound in), as on a CI machine's warm cache
#   pids     its own namespace, whose first process reaps; when it ends, everything in it ends
#   torch    what this machine kind keeps for it, as a Debian 13 machine of the kind has it too:
#            /opt/wheels (the cp311 CPU wheel) and /root/.pyenv (Python 3.11) bound in read-only;
#            torch's dependencies from ~/.cache (torch-venv.sh runs here first to fill it)
# Log: $WORK/ci.log (WORK is printed; removed unless KEEP=1). Exit status: .ci/run's.
# CI_CMD='make venv && make lint' runs that instead of .ci/run (a quick check of the setup).
# Not as on a real host: the kernel, the host name, /dev and /sys are the machine's (as in a lane).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lane.sh"
REPO=$(cd "${1:-$LANE_REPO}" && pwd)
[ "$(id -u)" = 0 ] || { lane_say "ci-in-chroot.sh must run as root"; exit 1; }
T0=$(date +%s)
lane_prepare 24.11 >/dev/null   # the trixie root, its wheels (dev extras) and pyslurm 24.11 for cp313
lane_prepare 26.05 >/dev/null   # the sid root the nested 26.05 lane runs from, and its wheels
"$HERE/torch-venv.sh" >/dev/null  # the job users' torch here, and its dependencies in the cache for the stand-in's
LOWER=$("$HERE/lane-chroot.sh" trixie)
SHARED=$(lane_shared)
WORK=$(mktemp -d /var/tmp/ci-in-chroot.XXXXXX)
mkdir -p "$WORK/upper" "$WORK/work" "$WORK/merged"
git clone -q "$REPO" "$WORK/clone"
lane_say "fresh clone of $(git -C "$REPO" rev-parse --short HEAD) in $WORK; prepared in $(( $(date +%s) - T0 )) s"
printf 'cd /ci/slurm-hooks\n%s\n' "${CI_CMD:-.ci/run}" > "$WORK/upper/ci-cmd.sh"   # / of the overlay
rc=0
unshare --net --mount --pid --fork --propagation private bash -c "
  set -euo pipefail
  ip link set lo up; ip addr add 127.0.0.2/8 dev lo
  M='$WORK/merged'
  mount -t overlay overlay -o lowerdir='$LOWER',upperdir='$WORK/upper',workdir='$WORK/work' \"\$M\"
  mount -t proc proc \"\$M/proc\"; mount --rbind /dev \"\$M/dev\"; mount --rbind /sys \"\$M/sys\"
  mount -t tmpfs -o mode=0755 tmpfs \"\$M/run\"
  mkdir -p \"\$M/root/.cache/slurm-hooks\" \"\$M/ci/slurm-hooks\" \"\$M/ci/shared\"
  mount --bind '$LANE_CACHE' \"\$M/root/.cache/slurm-hooks\"
  mount --bind '$WORK/clone' \"\$M/ci/slurm-hooks\"
  [ -z '$SHARED' ] || mount --bind -o ro '$SHARED' \"\$M/ci/shared\"
  for d in /opt/wheels /root/.pyenv; do
    [ -d \"\$d\" ] || continue; mkdir -p \"\$M\$d\"; mount --bind -o ro \"\$d\" \"\$M\$d\"
  done
  exec chroot \"\$M\" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    CI=true SLURM_HOOKS_OFFLINE=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=/root/.cache/slurm-hooks/wheels-trixie \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 \
    python3 -c '
import os, subprocess, sys
# the first process of the pid namespace: run CI, reap the daemons that daemonize under it
ci = subprocess.Popen([\"bash\", \"/ci-cmd.sh\"])
while True:
    pid, status = os.wait()
    if pid == ci.pid:
        sys.exit(os.waitstatus_to_exitcode(status))'
" > "$WORK/ci.log" 2>&1 || rc=$?
lane_say "Debian 13 stand-in: .ci/run exit $rc in $(( $(date +%s) - T0 )) s; log $WORK/ci.log"
grep '^\[ci\]' "$WORK/ci.log" >&2 || true
if [ "${KEEP:-}" != 1 ] && [ "$rc" = 0 ]; then rm -rf "$WORK"; fi
exit "$rc"
