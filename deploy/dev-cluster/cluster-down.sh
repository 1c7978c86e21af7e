#!/bin/bash
# Stop exactly the daemons cluster-up.sh started (newest first), then forget them.
RUNDIR=/run/slurm-hooks-dev
[ -f "$RUNDIR/started" ] || exit 0
tac "$RUNDIR/started" | while read -r pidfile; do
  [ -f "$pidfile" ] || continue
  p=$(cat "$pidfile")
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p"
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
    echo "stopped $(basename "$pidfile" .pid) ($p)"
  fi
  rm -f "$pidfile"   # a stale slurmctld pid file makes Debian's prerm run scancel
done
rm -f "$RUNDIR/started" "$RUNDIR/nodes"
