#!/bin/bash
# Stop what cluster-up.sh started (newest first), then forget it. SLURM=24.11|25.05|25.11|26.05: that lane.
# Slurm daemons that tests restarted (the fault matrix, the slurmdbd-down tests) write the same pid
# files, so they are found the same way; any slurmctld, slurmd or slurmdbd of this machine's dev
# cluster still left after that (same mount namespace: never a lane's) is stopped too.
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLURM:-}" ]; then
  source "$HERE/lane.sh"
  if [ "$SLURM" != "$(host_slurm)" ]; then lane_down "$SLURM"; exit; fi
fi
RUNDIR=/run/slurm-hooks-dev
[ -f "$RUNDIR/started" ] || exit 0
stop() {  # NAME PID
  kill -TERM "$2" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$2" 2>/dev/null && kill -KILL "$2"
  echo "stopped $1 ($2)"
}
tac "$RUNDIR/started" | while read -r pidfile; do
  [ -f "$pidfile" ] || continue
  stop "$(basename "$pidfile" .pid)" "$(cat "$pidfile")"
  rm -f "$pidfile"   # a stale slurmctld pid file makes Debian's prerm run scancel
done
own=$(readlink /proc/self/ns/mnt)
for p in $(pgrep -x slurmctld; pgrep -x slurmd; pgrep -x slurmdbd); do
  [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$own" ] || continue   # a lane's daemons live in their own
  [ "$(readlink "/proc/$p/root" 2>/dev/null)" = / ] || continue
  stop "$(cat "/proc/$p/comm") (left running)" "$p"
done
rm -f "$RUNDIR/started" "$RUNDIR/nodes"
sleep 0.5
left=$(for p in $(pgrep -x slurmctld; pgrep -x slurmd; pgrep -x slurmdbd); do
  [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$own" ] && [ "$(readlink "/proc/$p/root" 2>/dev/null)" = / ] && echo "$p"
done)
[ -z "$left" ] || { echo "cluster-down: still running: $(ps -o pid=,args= -p $left | tr '\n' ';')" >&2; exit 1; }
