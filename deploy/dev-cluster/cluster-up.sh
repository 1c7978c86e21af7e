#!/bin/bash
# Start a real single-node Slurm 22.05 (Debian packages) on loopback with slurm-hooks as its hooks:
# munge, MariaDB, slurmdbd, slurmctld, slurmd. No systemd. Installs what is missing. Run as root.
# Records what it started in $RUNDIR/started so cluster-down.sh stops exactly that.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RUNDIR=/run/slurm-hooks-dev
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
install -d -m 0755 "$DEVROOT" /etc/slurm-hooks /var/spool/slurm-hooks
rm -rf "$DEVROOT/hosts"; cp -r "$REPO/tests/fixtures/hosts" "$DEVROOT/hosts"; chmod -R a+rX "$DEVROOT"
cat > /etc/slurm-hooks/config.yaml <<CFG
# dev cluster: facts come from a recorded GB200 host (no GPU here); tests rewrite this file
host_root: $DEVROOT/hosts/gb200-cdmm-driver
ncore_sources: [{type: file, path: /etc/ncore-release}]
log_file: /var/log/slurm-hooks.log
CFG

# 3. Slurm configuration and hook scripts
H=$(hostname -s)
CPUS=$(nproc); MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))
if [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/freezer ]; then
  PROCTRACK='ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity'
else
  PROCTRACK='ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none'
fi
ESC=""; [ -x /etc/slurm/hooks/slurm-hooks-epilog_slurmctld ] && ESC="EpilogSlurmctld=/etc/slurm/hooks/slurm-hooks-epilog_slurmctld"
install -d -m 0755 /etc/slurm /etc/slurm/hooks
[ -x /etc/slurm/hooks/slurm-hooks-epilog_slurmctld ] && ESC="EpilogSlurmctld=/etc/slurm/hooks/slurm-hooks-epilog_slurmctld"
sed -e "s/@HOST@/$H/g" -e "s/@CPUS@/$CPUS/g" -e "s/@MEM@/$MEM/" -e "s|@PROCTRACK@|$PROCTRACK|" \
    -e "s|@EPILOG_SLURMCTLD@|$ESC|" "$HERE/slurm.conf.in" > /etc/slurm/slurm.conf
install -m 0644 "$HERE/cgroup.conf" /etc/slurm/cgroup.conf
install -m 0600 -o slurm -g slurm "$HERE/slurmdbd.conf" /etc/slurm/slurmdbd.conf
install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
install -d -m 0755 /var/lib/slurm/slurmd
install -d -o munge -g munge -m 0755 /run/munge
install -d -o mysql -g mysql -m 0755 /run/mysqld
id alice >/dev/null 2>&1 || useradd -m -u 2001 -s /bin/bash alice
id bob >/dev/null 2>&1 || useradd -m -u 2002 -s /bin/bash bob

# 4. daemons, in order, each only if not already running
if ! alive /run/munge/munged.pid; then
  [ -s /etc/munge/munge.key ] || { mungekey --create; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged; started /run/munge/munged.pid
fi
waitfor 10 sh -c 'munge -n | unmunge'
if ! mariadb -e 'select 1' >/dev/null 2>&1; then
  setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --innodb-lock-wait-timeout=900 \
      >/var/log/mysql-hooksdev.log 2>&1 </dev/null &
  echo $! > /run/mysqld/hooksdev.pid; started /run/mysqld/hooksdev.pid
fi
waitfor 60 mariadb -e 'select 1'
mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmdbpass';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
if ! alive /run/slurmdbd.pid; then /usr/sbin/slurmdbd; started /run/slurmdbd.pid; fi
waitfor 60 sacctmgr -n show cluster
sacctmgr -i add cluster hooksdev >/dev/null 2>&1 || true
sacctmgr -i add account lab Cluster=hooksdev Description=lab Organization=lab >/dev/null 2>&1 || true
for u in root alice bob; do sacctmgr -i add user "$u" Account=lab >/dev/null 2>&1 || true; done
if ! alive /run/slurmctld.pid; then /usr/sbin/slurmctld; started /run/slurmctld.pid; fi
waitfor 30 scontrol ping
scontrol reconfigure >/dev/null 2>&1 || true
if ! alive /run/slurmd.pid; then /usr/sbin/slurmd; started /run/slurmd.pid; fi
scontrol update nodename="$H" state=resume >/dev/null 2>&1 || true
waitfor 60 sh -c 'sinfo -h -N -o %T | grep -qE "^(idle|mixed|allocated)$"'
say "node $(sinfo -h -N -o '%N %T'); hooks in /etc/slurm/hooks, config /etc/slurm-hooks/config.yaml"
