#!/bin/bash
# Start a real Slurm 22.05 (Debian packages) on loopback with slurm-hooks as its hooks: munge,
# MariaDB, slurmdbd, slurmctld and four compute nodes, each its own `slurmd -N <node>` on its own
# port (Slurm's multiple-slurmd mode): <host> (as on a one-node cluster), <host>-2, -3, -4. No systemd. Installs what is missing. Run as root.
# SLURM_HOOKS_DEV_NODES=1 starts a single node. Records what it started in $RUNDIR/started so
# cluster-down.sh stops exactly that.
#
# What a real node has to itself, each node has here too: its own slurmd spool, log and hook
# scripts (/etc/slurm/hooks/nodes/<node>/, reached through a dispatcher keyed by SLURMD_NODENAME),
# its own slurm-hooks config (/etc/slurm-hooks/nodes/<node>.yaml) with its own state dir,
# host_root fixture and kernel-log file. The spool and home directories are shared, as on a cluster.
#
# SLURM=24.11, 25.05, 25.11 or 26.05 (make cluster-up SLURM=...): that Slurm's lane instead (lane.sh: a Debian
# chroot in namespaces of its own, beside the host's cluster), unless the host's Slurm is that one.
# The 25.11 lane runs as SUNK 8.1 does: NamespaceType=namespace/linux, each job in its own PID and
# mount namespace with a private /tmp and /dev/shm (SLURM_HOOKS_DEV_NAMESPACE=0 turns it off, =1 on
# for another Slurm >= 25.11). What the namespace's teardown and the node Epilog see of the job's
# /tmp is logged to /var/log/slurm-hooks-ns.log (dev cluster only).
# Every cluster-up starts from a clean state: no job, accounting record or outbox entry of an earlier
# run (SLURM_HOOKS_DEV_KEEP_STATE=1 keeps them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
if [ -n "${SLURM:-}" ]; then
  source "$HERE/lane.sh"
  if [ "$SLURM" != "$(host_slurm)" ]; then lane_up "$SLURM"; exit; fi
fi
RUNDIR=/run/slurm-hooks-dev
H=$(hostname -s)
NODES="$H $(seq -f "$H-%g" 2 "${SLURM_HOOKS_DEV_NODES:-4}" | tr '\n' ' ')"
PREFIX=/opt/slurm-hooks            # the install Slurm runs: outside /root, readable by slurm and job users
DEVROOT=/var/lib/slurm-hooks-dev   # fixture host roots the tests switch between
say() { printf '[cluster-up %s] %s\n' "$(date +%T)" "$*"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
waitfor() { local n=$(( $1 * 10 )); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timeout waiting for: $*" >&2; return 1; }
started() { echo "$1" >> "$RUNDIR/started"; }

[ "$(id -u)" = 0 ] || { echo "cluster-up.sh must run as root" >&2; exit 1; }
install -d -m 0755 "$RUNDIR"; touch "$RUNDIR/started"

# 1. packages
need=()
for bin in slurmctld:slurmctld slurmd:slurmd sacct:slurm-client slurmdbd:slurmdbd munged:munge \
           mariadbd:mariadb-server python3:python3 ; do
  command -v "${bin%%:*}" >/dev/null || [ -x "/usr/sbin/${bin%%:*}" ] || need+=("${bin##*:}")
done
[ -x /usr/bin/python3 ] || need+=(python3)
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. slurm-hooks itself through `make install` (deploy/install.sh), exactly as a site installs it:
# a venv from Debian's python3, hook scripts with absolute paths and their slurm.conf snippet
say "installing slurm-hooks from $REPO into $PREFIX (make install)"
"$REPO/deploy/install.sh" "$PREFIX" /etc/slurm/hooks >/dev/null
# pyslurm from the wheel cache `make pyslurm` fills (never built here): tests run each Slurm backend
"$REPO/deploy/pyslurm/build-wheel.sh" "$PREFIX/venv/bin/python" --install-if-cached || say "pyslurm not installed"
install -d -m 0755 "$DEVROOT" /etc/slurm-hooks /etc/slurm-hooks/nodes /var/spool/slurm-hooks
rm -rf "$DEVROOT/hosts"; cp -r "$REPO/tests/fixtures/hosts" "$DEVROOT/hosts"; chmod -R a+rX "$DEVROOT"
# Slurm prints this machine's local times; a zone recorded on another host (h100-r570: Chicago)
# would shift every job window by hours, so the copies take this machine's zone.
zone=$(cat /etc/timezone 2>/dev/null || echo UTC)
for tz in "$DEVROOT"/hosts/*/etc/timezone; do echo "$zone" > "$tz"; done
# Stand-ins for each node's own kernel log (one machine has one ring buffer); test jobs append to them
install -d -m 1777 "$DEVROOT/kernel"
rm -f /etc/slurm-hooks/nodes/*.yaml
cfg() {  # host fixture, then node-only keys; tests rewrite these files (tests/devcluster.py)
  printf '%s\n' "# dev cluster: facts come from a recorded host (no GPU here)" "host_root: $DEVROOT/hosts/$1" \
    "ncore_sources: [{type: file, path: /etc/ncore-release}]" "log_file: /var/log/slurm-hooks.log" "${@:2}"; }
cfg gb200-cdmm-driver > /etc/slurm-hooks/config.yaml   # the controller's hook and the operator's CLI
# The EpilogSlurmctld runs as SlurmUser: it logs, and (annotator: epilog_slurmctld) merges in the spool
touch /var/log/slurm-hooks.log; chown slurm /var/log/slurm-hooks.log; chown slurm:slurm /var/spool/slurm-hooks
for n in $NODES; do   # <host>-2 is the R570 node, the rest are R580 with CDMM on
  host=gb200-cdmm-driver; [ "$n" = "$H-2" ] && host=h100-r570
  install -m 0666 /dev/null "$DEVROOT/kernel/$n.log"
  cfg "$host" "state_dir: /run/slurm-hooks/$n" "kernel_log_file: $DEVROOT/kernel/$n.log" > "/etc/slurm-hooks/nodes/$n.yaml"
done

# 3. Slurm configuration and hook scripts
CPUS=$(nproc); MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))
if [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/freezer ]; then
  PROCTRACK='ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity'
else
  PROCTRACK='ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none'
fi
ESC=""; [ -x /etc/slurm/hooks/slurm-hooks-epilog_slurmctld ] && ESC="EpilogSlurmctld=/etc/slurm/hooks/slurm-hooks-epilog_slurmctld"
install -d -m 0755 /etc/slurm /etc/slurm/hooks
rm -rf /etc/slurm/hooks/nodes
[ -x /etc/slurm/hooks/slurm-hooks-epilog_slurmctld ] && ESC="EpilogSlurmctld=/etc/slurm/hooks/slurm-hooks-epilog_slurmctld"
NODELINES=""; port=6830
for n in $NODES; do
  "$PREFIX/venv/bin/slurm-hooks" install-hooks --dest "/etc/slurm/hooks/nodes/$n" \
      --python "$PREFIX/venv/bin/python" --config "/etc/slurm-hooks/nodes/$n.yaml" >/dev/null
  port=$((port + 1))
  NODELINES+="NodeName=$n NodeAddr=127.0.0.1 NodeHostname=$n Port=$port CPUs=$CPUS Boards=1 SocketsPerBoard=1"
  NODELINES+=" CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=$MEM State=UNKNOWN\n"
done
SLURM_LINE=$(/usr/sbin/slurmd -V | awk '{print $2}' | cut -d. -f1,2)   # e.g. 22.05, 24.11
NS=${SLURM_HOOKS_DEV_NAMESPACE:-}; [ -n "$NS" ] || { [ "${SLURM_HOOKS_LANE:-}" = 25.11 ] && NS=1 || NS=0; }
NSBASE=/var/lib/slurm/namespace   # <node>/<job>/ holds each job's private /tmp on the node's side
NSLOG=/var/log/slurm-hooks-ns.log
for hook in prolog task_prolog epilog; do  # slurm.conf names one script for all nodes: it runs the node's own
  probe=""   # with namespaces: what of the job's private /tmp the node Epilog still finds
  [ "$NS" = 1 ] && [ "$hook" = epilog ] && probe="echo \"\$(date +%s.%N) epilog job=\$SLURM_JOB_ID node=\$SLURMD_NODENAME pid=\$\$ nsdir=\$(ls -A $NSBASE/\$SLURMD_NODENAME/\$SLURM_JOB_ID 2>&1 | tr '\\n' ' ')\" >> $NSLOG 2>/dev/null || true"
  cat > "/etc/slurm/hooks/dev-node-$hook" <<HOOK
#!/bin/sh
# dev cluster only (several slurmd on one machine): run this node's own install of the hook
case "\$SLURMD_NODENAME" in ''|*[!A-Za-z0-9_-]*) exit 0 ;; esac
$probe
exec /etc/slurm/hooks/nodes/"\$SLURMD_NODENAME"/slurm-hooks-$hook
HOOK
  chmod 0755 "/etc/slurm/hooks/dev-node-$hook"
done
sed -e "s/@HOST@/$H/g" -e "s|@NODES@|$NODELINES|" -e "s|@PROCTRACK@|$PROCTRACK|" \
    -e "s|@EPILOG_SLURMCTLD@|$ESC|" "$HERE/slurm.conf.in" > /etc/slurm/slurm.conf
if [ "$NS" = 1 ]; then
  printf '%s\n' "NamespaceType=namespace/linux" >> /etc/slurm/slurm.conf   # PrologFlags=Contain is set already
  # clone_ns_epilog runs just before the namespace goes: it records what the job left in its /tmp
  cat > /etc/slurm/hooks/dev-ns-epilog <<HOOK
#!/bin/sh
# dev cluster only: log what the job's private /tmp holds as its namespace is torn down
echo "\$(date +%s.%N) clone_ns_epilog job=\${SLURM_JOB_ID:-?} ns=\${SLURM_NS:-?} tmp=\$(nsenter --mount="\$SLURM_NS/mnt" ls -A /tmp 2>&1 | tr '\\n' ' ')" >> $NSLOG 2>/dev/null
exit 0
HOOK
  chmod 0755 /etc/slurm/hooks/dev-ns-epilog
  install -m 0644 /dev/null "$NSLOG"
  cat > /etc/slurm/namespace.yaml <<YAML
# The 25.11 lane as SUNK 8.1: a PID and mount namespace per job, private /tmp and /dev/shm
defaults:
  auto_base_path: true
  base_path: "$NSBASE"   # with several slurmd on a machine the plugin adds the node's name itself
  clone_ns_flags: ["CLONE_NEWPID", "CLONE_NEWNS"]
  dirs: "/tmp,/dev/shm"
  clone_ns_epilog: "/etc/slurm/hooks/dev-ns-epilog"
YAML
  for n in $NODES; do install -d -m 0755 "$NSBASE/$n"; done
else
  rm -f /etc/slurm/namespace.yaml
fi
if [[ $PROCTRACK == *linuxproc* ]] && [ "${SLURM_LINE%%.*}" -ge 23 ]; then
  echo 'CgroupPlugin=disabled' > /etc/slurm/cgroup.conf   # no usable cgroup: slurmd >= 23 fails without this
else
  install -m 0644 "$HERE/cgroup.conf" /etc/slurm/cgroup.conf   # 22.05 reads it only for the cgroup plugins
fi
install -m 0600 -o slurm -g slurm "$HERE/slurmdbd.conf" /etc/slurm/slurmdbd.conf
install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
for n in $NODES; do install -d -m 0755 "/var/lib/slurm/slurmd/$n"; done
echo $NODES > "$RUNDIR/nodes"
install -d -o munge -g munge -m 0755 /run/munge
install -d -o mysql -g mysql -m 0755 /run/mysqld /run/mariadbd   # MariaDB 11.8 (sid) uses the second
id alice >/dev/null 2>&1 || useradd -m -u 2001 -s /bin/bash alice
id bob >/dev/null 2>&1 || useradd -m -u 2002 -s /bin/bash bob

# 4. daemons, in order, each only if not already running. A controller that is not running starts
# clean: its saved jobs (held or pending ones a fault test left), the accounting database and the
# hooks' spool and state go, so nothing of an earlier run falls into this run's windows or ids.
if ! alive /run/slurmctld.pid && [ "${SLURM_HOOKS_DEV_KEEP_STATE:-}" != 1 ]; then
  CLEAN=1; say "clean start: StateSaveLocation, slurm_acct_db, the hooks' spool, state and log (kept as .1)"
  find /var/lib/slurm/slurmctld /var/spool/slurm-hooks -mindepth 1 -delete
  rm -rf /run/slurm-hooks /home/alice/jobs   # job ids start again at 1: nothing may hold an old one
  # ... nor an earlier run's namespace directory (a lane stopped mid-job leaves `<node>/<id>/.ns` with
  # its bind mounts): namespace/linux then fails that id's launch ("failed to remove 2 files from ...")
  if [ -d "$NSBASE" ]; then
    awk -v base="$NSBASE/" 'index($2, base) == 1 {print $2}' /proc/self/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
    find "$NSBASE" -mindepth 2 -maxdepth 2 -exec rm -rf {} + 2>/dev/null || true
  fi
  mv -f /var/log/slurm-hooks.log /var/log/slurm-hooks.log.1   # the tests read the hook log by job id
  install -m 0644 -o slurm /dev/null /var/log/slurm-hooks.log
else
  CLEAN=0
fi
if ! alive /run/munge/munged.pid; then
  [ -s /etc/munge/munge.key ] || { mungekey --create; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged; started /run/munge/munged.pid
fi
waitfor 10 sh -c 'munge -n | unmunge'
if ! mariadb -e 'select 1' >/dev/null 2>&1; then
  # MariaDB >= 11.6 (trixie, sid) has snapshot isolation on, which slurmdbd does not support: it
  # dies on `1020 Record has changed since last read` (10.11, bookworm's, lacks the option)
  iso=(); /usr/sbin/mariadbd --help --verbose 2>/dev/null | grep -q '^  --innodb-snapshot-isolation' && iso=(--innodb-snapshot-isolation=OFF)
  setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --innodb-lock-wait-timeout=900 "${iso[@]}" \
      >/var/log/mysql-hooksdev.log 2>&1 </dev/null &
  echo $! > /run/mysqld/hooksdev.pid; started /run/mysqld/hooksdev.pid
fi
waitfor 60 mariadb -e 'select 1'
if [ "$CLEAN" = 1 ] && ! alive /run/slurmdbd.pid; then mariadb -e 'DROP DATABASE IF EXISTS slurm_acct_db'; fi
# slurmdbd 24.11 does not create its database (it fails on `select @var := concat('')`)
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
            CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmdbpass';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
if ! alive /run/slurmdbd.pid; then /usr/sbin/slurmdbd; started /run/slurmdbd.pid; fi
waitfor 60 sacctmgr -n show cluster
sacctmgr -i add cluster hooksdev >/dev/null 2>&1 || true
sacctmgr -i add account lab Cluster=hooksdev Description=lab Organization=lab >/dev/null 2>&1 || true
for u in root alice bob; do sacctmgr -i add user "$u" Account=lab >/dev/null 2>&1 || true; done
if ! alive /run/slurmctld.pid; then /usr/sbin/slurmctld; started /run/slurmctld.pid; fi
waitfor 30 scontrol ping
scontrol reconfigure >/dev/null 2>&1 || true
for n in $NODES; do
  if ! alive "/run/slurmd-$n.pid"; then /usr/sbin/slurmd -N "$n"; started "/run/slurmd-$n.pid"; fi
done
for n in $NODES; do scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true; done
want=$(echo $NODES | wc -w)
waitfor 60 sh -c "[ \$(sinfo -h -N -o %T | grep -cE '^(idle|mixed|allocated)\$') -ge $want ]"
if [ "$CLEAN" = 1 ] && [ -n "$(squeue -h -t all -o %i)" ]; then   # the clean start is checked, not assumed
  echo "cluster-up: jobs carried over a clean start: $(squeue -h -t all -o '%i %T' | tr '\n' ' ')" >&2; exit 1
fi
say "nodes: $(sinfo -h -N -o '%N %T' | tr '\n' ' '); per-node hooks and configs in /etc/slurm/hooks/nodes, /etc/slurm-hooks/nodes"
