#!/usr/bin/env bash
# tide: a real local Slurm (Debian 12's Slurm 22.05) on this one machine, for
# the benchmark (bench/serve_bench.sh) and the Slurm backend's tests.
#
#   scripts/slurm-local.sh up      start munged, slurmctld and N slurmd ("gpu1".."gpuN"),
#                                  each advertising G fake GPUs through GRES; wait until
#                                  every node is idle. Partitions: train (default; Slurm
#                                  preempts it: REQUEUE, GraceTime 15 s), infer (a higher
#                                  tier), tide (PreemptMode=OFF: for `tide serve --backend
#                                  slurm --slurm-partition tide`)
#   scripts/slurm-local.sh env     print `export SLURM_CONF=...` (eval "$(... env)")
#   scripts/slurm-local.sh status  sinfo of the running cluster (exit 1 when down)
#   scripts/slurm-local.sh down    stop every daemon by the PID in its pid file, remove
#                                  the state folder (KEEP=1 keeps it for the logs)
#
# Everything lives in $TIDE_SLURM_DIR (default /tmp/tide-slurm-$UID): config, munge key
# and socket, state, spool, logs, pid files. Nothing in /etc is read or written, and no
# process is ever stopped by name. Needs root and the packages
#   slurmctld slurmd slurm-client munge     (apt-get install -y ...; `up` says so if missing)
#
# Knobs (environment): NNODES (4), GPUS (8 per node), CPUS (32 per node), MEM (MB, 256000),
# CTLD_PORT (17817), NODE_PORT0 (17900: node i listens on NODE_PORT0+i), CRED_EXPIRE (20 s:
# also how long a requeued job waits before it may start again), GPU_TYPE (h100),
# SLURMD_TIMEOUT (60 s: how long a silent slurmd stays up before slurmctld marks its node
# DOWN).
#
# What Slurm 22.05 needs here (found the hard way, see /work/shared/design/slurm/README.md):
#  - gres.conf File= must name character devices: symlinks to /dev/null do;
#  - no cgroups: proctrack/linuxproc + task/none and no cgroup.conf;
#  - several slurmd on one host: per node NodeHostname=<this host> NodeAddr=127.0.0.1 Port=N,
#    started with `slurmd -N gpuI`;
#  - a private munged (own key and socket) named by AuthInfo=socket=...;
#  - PID 1 here may not reap: a killed daemon can linger as a zombie, which counts as dead.
set -euo pipefail

DIR=${TIDE_SLURM_DIR:-/tmp/tide-slurm-$(id -u)}
NNODES=${NNODES:-4}
GPUS=${GPUS:-8}
CPUS=${CPUS:-32}
MEM=${MEM:-256000}
CTLD_PORT=${CTLD_PORT:-17817}
NODE_PORT0=${NODE_PORT0:-17900}
CRED_EXPIRE=${CRED_EXPIRE:-20}
SLURMD_TIMEOUT=${SLURMD_TIMEOUT:-60}
GPU_TYPE=${GPU_TYPE:-h100}

say() { echo "slurm-local: $*" >&2; }
die() { say "$*"; exit 1; }

# alive PID: running and not a zombie
alive() { [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat")" != Z ]; }

# poll TENTHS COMMAND...: run COMMAND every 0.1 s until it succeeds, at most TENTHS times
poll() {
    local n=$1
    shift
    for _ in $(seq "$n"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# stop PIDFILE [SECONDS]: SIGTERM the PID in it, SIGKILL after SECONDS, remove the file
stop_pidfile() {
    local f=$1 t=${2:-5} p
    [ -f "$f" ] || return 0
    p=$(cat "$f" 2>/dev/null || true)
    if alive "$p"; then
        kill -TERM "$p" 2>/dev/null || true
        for _ in $(seq $((t * 10))); do alive "$p" || break; sleep 0.1; done
        alive "$p" && kill -KILL "$p" 2>/dev/null || true
    fi
    rm -f "$f"
}

cmd_env() {
    [ -f "$DIR/etc/slurm.conf" ] || die "no cluster in $DIR (run: $0 up)"
    echo "export SLURM_CONF=$DIR/etc/slurm.conf"
    echo "export TIDE_SLURM_DIR=$DIR"
}

cmd_down() {
    if [ ! -d "$DIR/pids" ]; then
        say "nothing running in $DIR"
        [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
        return 0
    fi
    # cancel jobs first so their slurmstepd end cleanly (bounded: 5 s)
    if [ -f "$DIR/pids/slurmctld.pid" ] && alive "$(cat "$DIR/pids/slurmctld.pid")"; then
        SLURM_CONF=$DIR/etc/slurm.conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
    fi
    local f
    for f in "$DIR"/pids/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
    stop_pidfile "$DIR/pids/slurmctld.pid"
    stop_pidfile "$DIR/pids/munged.pid"
    # slurmstepd left behind by THIS cluster: their environment names our slurm.conf
    local p
    for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
        if grep -qsa "SLURM_CONF=$DIR/etc/slurm.conf" "/proc/$p/environ"; then
            kill -KILL "$p" 2>/dev/null || true
        fi
    done
    if [ "${KEEP:-0}" = 1 ]; then say "stopped (logs kept in $DIR/log)"; else rm -rf "$DIR"; say "stopped"; fi
}

write_conf() {
    local host=$1 n
    cat >"$DIR/etc/slurm.conf" <<EOF
# written by tide scripts/slurm-local.sh
ClusterName=tidelocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock,cred_expire=$CRED_EXPIRE
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/pids/slurmctld.pid
SlurmdPidFile=$DIR/pids/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,sched_interval=5
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
PriorityType=priority/basic
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
KillWait=5
MinJobAge=300
MaxJobCount=200000
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=$SLURMD_TIMEOUT
MessageTimeout=10
NodeName=DEFAULT CPUs=$CPUS RealMemory=$MEM Gres=gpu:$GPU_TYPE:$GPUS State=UNKNOWN
EOF
    for n in $(seq 1 "$NNODES"); do
        echo "NodeName=gpu$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((NODE_PORT0 + n))" >>"$DIR/etc/slurm.conf"
    done
    cat >>"$DIR/etc/slurm.conf" <<EOF
# train: preemptible (requeue) with a 15 s grace; infer: a higher tier that preempts it
# (Slurm's own preemption, the baseline); tide: where tide runs its gangs and replicas,
# never preempted by Slurm itself (tide decides)
PartitionName=tide Nodes=gpu[1-$NNODES] MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=OFF OverSubscribe=NO
PartitionName=train Nodes=gpu[1-$NNODES] Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=15 OverSubscribe=NO
PartitionName=infer Nodes=gpu[1-$NNODES] MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF OverSubscribe=NO
EOF
    {
        echo "AutoDetect=off"
        for n in $(seq 1 "$NNODES"); do
            echo "NodeName=gpu$n Name=gpu Type=$GPU_TYPE File=$DIR/dev/gpu$n/nvidia[0-$((GPUS - 1))]"
        done
    } >"$DIR/etc/gres.conf"
}

idle_nodes() { sinfo -h -p train -t idle -o %D 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

cmd_up() {
    [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as any user)"
    local missing="" b
    for b in munged munge slurmctld slurmd sinfo sbatch squeue; do
        command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
    done
    [ -z "$missing" ] || die "missing:$missing (apt-get install -y slurmctld slurmd slurm-client munge)"
    [ "$NNODES" -ge 1 ] && [ "$GPUS" -ge 1 ] || die "NNODES and GPUS must be >= 1"
    local t0 host
    t0=$(date +%s.%N)
    host=$(hostname -s)
    cmd_down >/dev/null 2>&1 || true # never leave a previous run's daemons behind
    mkdir -p "$DIR"/{etc,log,pids,state,spool,munge,dev}
    chmod 700 "$DIR/munge"

    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
    munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.sock" \
        --pid-file="$DIR/pids/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed" || die "munged did not start (see $DIR/log/munged.log)"
    poll 50 test -S "$DIR/munge/munge.sock" || die "munged made no socket"
    munge -S "$DIR/munge/munge.sock" -n | unmunge -S "$DIR/munge/munge.sock" >/dev/null ||
        die "munge round trip failed"

    local n g
    for n in $(seq 1 "$NNODES"); do
        mkdir -p "$DIR/dev/gpu$n" "$DIR/spool/gpu$n"
        for g in $(seq 0 $((GPUS - 1))); do ln -s /dev/null "$DIR/dev/gpu$n/nvidia$g"; done
    done
    write_conf "$host"
    export SLURM_CONF=$DIR/etc/slurm.conf

    slurmctld -i -f "$SLURM_CONF" || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
    for n in $(seq 1 "$NNODES"); do
        slurmd -f "$SLURM_CONF" -N "gpu$n" || die "slurmd gpu$n did not start (see $DIR/log/slurmd-gpu$n.log)"
    done
    if ! poll 600 sh -c "[ \"\$(sinfo -h -p train -t idle -o %D | awk '{s+=\$1} END{print s+0}')\" = $NNODES ]"; then
        sinfo -N -o '%N %P %T %G %E' >&2 || true
        tail -20 "$DIR/log/slurmctld.log" >&2 || true
        die "only $(idle_nodes) of $NNODES nodes became idle within 60 s"
    fi
    say "up: $NNODES nodes x gpu:$GPU_TYPE:$GPUS, slurmctld on 127.0.0.1:$CTLD_PORT, in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
    say "use: eval \"\$($0 env)\""
}

cmd_status() {
    [ -f "$DIR/etc/slurm.conf" ] || die "no cluster in $DIR"
    SLURM_CONF=$DIR/etc/slurm.conf sinfo -o '%P %D %T %G' || exit 1
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
-h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*) echo "usage: $0 up|down|env|status   (--help for details)" >&2; exit 2 ;;
esac
