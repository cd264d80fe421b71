#!/usr/bin/env bash
# tide benchmark: tide's elastic policy vs Slurm's own partition-priority preemption,
# on the same local Slurm 22.05 cluster (scripts/slurm-local.sh: 4 nodes x 8 fake GPUs),
# with the same workload and the same fake jobs (examples/slurm/train.sh, replica.sh).
#
#   bash bench/slurm_compare.sh [BUILD]          (BUILD: where tide is built, default build)
#
# Workload: one inference service "chat" (one replica = one node's GPUs, warm-up
# WARMUP_S, one replica always up); demand starts at RPS_LOW (one replica serves it),
# ramps linearly over RAMP_S seconds to RPS_HIGH (needs NEED=ceil(RPS_HIGH/REPLICA_RPS)
# replicas) reached at T_RISE; N_TRAIN training jobs of one node each fill the rest.
#   (a) slurm: the replica goes to partition `infer` (PriorityTier 10), the training
#       jobs to `train` (PreemptMode=REQUEUE, GraceTime=15) as batch scripts running
#       `srun bash train.sh` with CKPT_ON_TERM=1 (checkpoint on the grace SIGTERM); each
#       time the demand crosses a replica's capacity another replica job is submitted
#       to `infer` and Slurm preempts a training job for it.
#   (b) tide: `tide serve --backend slurm --policy elastic` on a fresh cluster; the jobs
#       are submitted through the API, the demand pushed every DEMAND_EVERY s; tide
#       signals a job to checkpoint, waits for the commit and requeues it (held).
#   (c) tide-history: as (b), and the demand is one day of a repeating daily pattern:
#       the same curve (the rise at T_RISE, high for DAY_HIGH_S, then back to RPS_LOW)
#       came every day before, and tide starts with `--demand-history` of the previous
#       HISTORY_DAYS days (a file the bench writes, one row every HISTORY_STEP s, its
#       last row "now" = the daemon's start). The day is compressed in wall time only
#       in the sense that the run shows just RUN_S seconds of it: the Slurm backend runs
#       real jobs, so engine time is wall time (--speed 1) and the forecast's day is
#       86400 s (its 5-minute buckets are engine seconds); the history supplies the
#       days nobody waits for. The forecast then sees the rise inside its lead window
#       and reclaims before it (time-to-capacity negative).
# Measured from the jobs' own event logs ($work/log/*.events), identically for both:
#   time-to-capacity  T_RISE -> NEED replicas logged "ready" at once (negative: before)
#   under capacity    seconds when ready replicas x REPLICA_RPS < demand; unserved %
#   training lost     GPU-hours of steps done after the last committed checkpoint by runs
#                     that were stopped (preempted) before the end; runs alive at the end
#                     lose nothing
#   utilization       useful: (serving-ready GPU-s + GPU-s of training steps kept) /
#                     (all GPUs x RUN_S); allocated: GPU-s between each job's start and
#                     stop as logged / the same total
#   jobs preempted    training runs stopped before the end (distinct jobs in brackets)
# plus, for (b), tide's own figures (/metrics, /v1/jobs/ID, /v1/cluster).
# Results: bench/slurm_compare_results.md (overwritten) and stdout; progress on stderr.
#
# Knobs (environment; printed at the start): RUN_S (420) T_RISE (120) RAMP_S (60)
# WARMUP_S (20) REPLICA_RPS (10) RPS_LOW (5) RPS_HIGH (25) N_TRAIN (3) STEP_S (1)
# CKPT_EVERY (60) CKPT_S (20) RESTORE_S (1) TOTAL_STEPS (100000) DEMAND_EVERY (5)
# MODES ("slurm tide tide-history") HISTORY_DAYS (3) HISTORY_STEP (15) DAY_HIGH_S (14400)
# TIDE_CONTROL_PERIOD (5s: tide's control loop, like Slurm's sched_interval=5 here)
# TIDE_CKPT_ON_TERM (0: under tide the job answers the checkpoint signal instead)
# TIDE_PORT (0 = a free one) TIDE_ARGS (more `tide serve` options, split on spaces)
# RES (results file) KEEP (1 keeps the work folder).
# Cluster (passed to scripts/slurm-local.sh): TIDE_SLURM_DIR (default: inside the work
# folder), CTLD_PORT, NODE_PORT0, NNODES (4), GPUS (8), CRED_EXPIRE (20).
# Needs root, Slurm (apt-get install -y slurmctld slurmd slurm-client munge), curl,
# python3. Runs about (number of MODES) x (RUN_S + 30) s. No terminal or stdin needed.
set -uo pipefail
exec </dev/null

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
TIDE_BIN=$(cd "$(dirname "$BUILD/tide")" 2>/dev/null && pwd)/tide
SLURM_LOCAL=$SRC/scripts/slurm-local.sh
CMDLINE="bash bench/slurm_compare.sh${1:+ $1}"

RUN_S=${RUN_S:-420}
T_RISE=${T_RISE:-120}
RAMP_S=${RAMP_S:-60}
WARMUP_S=${WARMUP_S:-20}
REPLICA_RPS=${REPLICA_RPS:-10}
RPS_LOW=${RPS_LOW:-5}
RPS_HIGH=${RPS_HIGH:-25}
N_TRAIN=${N_TRAIN:-3}
STEP_S=${STEP_S:-1}
CKPT_EVERY=${CKPT_EVERY:-60}
CKPT_S=${CKPT_S:-20}
RESTORE_S=${RESTORE_S:-1}
TOTAL_STEPS=${TOTAL_STEPS:-100000}
DEMAND_EVERY=${DEMAND_EVERY:-5}
MODES=${MODES:-slurm tide tide-history}
HISTORY_DAYS=${HISTORY_DAYS:-3}
HISTORY_STEP=${HISTORY_STEP:-15}
DAY_HIGH_S=${DAY_HIGH_S:-14400}
TIDE_CONTROL_PERIOD=${TIDE_CONTROL_PERIOD:-5s}
TIDE_CKPT_ON_TERM=${TIDE_CKPT_ON_TERM:-0}
TIDE_PORT=${TIDE_PORT:-0}
TIDE_ARGS=${TIDE_ARGS:-}
RES=${RES:-$SRC/bench/slurm_compare_results.md}
KEEP=${KEEP:-0}
NNODES=${NNODES:-4}
GPUS=${GPUS:-8}
export NNODES GPUS

say() { echo "slurm-compare: $*" >&2; }
die() { say "$*"; exit 1; }

# ------------------------------------------------------------------ checks
for v in RUN_S T_RISE RAMP_S WARMUP_S N_TRAIN CKPT_EVERY TOTAL_STEPS DEMAND_EVERY NNODES GPUS TIDE_PORT \
    HISTORY_DAYS HISTORY_STEP DAY_HIGH_S; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
for v in REPLICA_RPS RPS_LOW RPS_HIGH STEP_S CKPT_S RESTORE_S; do
    [[ ${!v} =~ ^[0-9]+([.][0-9]+)?$ ]] || die "$v must be a number, got '${!v}'"
done
[ "$(id -u)" = 0 ] || die "needs root (slurmd runs the jobs)"
for b in curl python3 sbatch squeue scancel slurmctld slurmd munged; do
    command -v "$b" >/dev/null 2>&1 || die "$b is missing (apt-get install -y slurmctld slurmd slurm-client munge curl)"
done
[ "$RAMP_S" -le "$T_RISE" ] || die "RAMP_S ($RAMP_S) must not exceed T_RISE ($T_RISE)"
[ "$T_RISE" -lt "$RUN_S" ] || die "T_RISE ($T_RISE) must come before the end (RUN_S $RUN_S)"
[ "$HISTORY_STEP" -ge 1 ] || die "HISTORY_STEP must be >= 1 s"
[ $((T_RISE + DAY_HIGH_S + RAMP_S)) -lt 86400 ] || die "T_RISE + DAY_HIGH_S + RAMP_S must fit in a day (86400 s)"
[ "$DAY_HIGH_S" -ge $((RUN_S - T_RISE)) ] || die "DAY_HIGH_S ($DAY_HIGH_S) must cover the rest of the run after T_RISE"
NEED_LOW=$(python3 -c "import math; print(max(1, math.ceil($RPS_LOW / $REPLICA_RPS)))")
NEED=$(python3 -c "import math; print(max(1, math.ceil($RPS_HIGH / $REPLICA_RPS)))")
[ "$NEED_LOW" = 1 ] || die "RPS_LOW ($RPS_LOW) must be served by one replica (REPLICA_RPS $REPLICA_RPS)"
[ "$NEED" -le "$NNODES" ] || die "RPS_HIGH needs $NEED replicas, more than the $NNODES nodes"
[ $((N_TRAIN + 1)) -le "$NNODES" ] || die "N_TRAIN ($N_TRAIN) + the floor replica do not fit $NNODES nodes"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-slurm-compare.XXXXXX")
# the cluster's own folder, apart from the modes' work folders ($tmp/slurm, $tmp/tide)
export TIDE_SLURM_DIR=${TIDE_SLURM_DIR:-$tmp/cluster}
unset TIDE_API TIDE_TOKEN TIDE_JOB_ID TIDE_GANG TIDE_REPLICA TIDE_SERVICE SLURM_JOB_ID
TIDE_PID=
SLURM_UP=0

stop_tide() {
    [ -n "$TIDE_PID" ] || return 0
    if kill -0 "$TIDE_PID" 2>/dev/null; then
        kill -TERM "$TIDE_PID" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$TIDE_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$TIDE_PID" 2>/dev/null
    fi
    wait "$TIDE_PID" 2>/dev/null
    TIDE_PID=
}
slurm_down() { # [MODEDIR]: keep Slurm's logs there first
    [ "$SLURM_UP" = 1 ] || return 0
    [ -n "${1:-}" ] && cp -r "$TIDE_SLURM_DIR/log" "$1/slurm-log" 2>/dev/null
    env -u KEEP bash "$SLURM_LOCAL" down >/dev/null 2>&1 || say "slurm-local.sh down failed"
    SLURM_UP=0
}
cleanup() {
    stop_tide
    slurm_down
    if [ "$KEEP" = 1 ]; then say "kept $tmp (event logs in $tmp/*/work/log, Slurm's in $tmp/*/slurm-log)"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

slurm_up() {
    env -u KEEP bash "$SLURM_LOCAL" up >"$tmp/slurm-up.log" 2>&1 || { cat "$tmp/slurm-up.log" >&2; die "the local Slurm cluster did not come up"; }
    SLURM_UP=1
    eval "$(bash "$SLURM_LOCAL" env)"
}

# demand T (seconds since the start): requests/s
demand() {
    awk -v t="$1" -v r="$T_RISE" -v w="$RAMP_S" -v lo="$RPS_LOW" -v hi="$RPS_HIGH" 'BEGIN {
        if (t >= r) v = hi; else if (w > 0 && t >= r - w) v = lo + (hi - lo) * (t - (r - w)) / w; else v = lo
        printf "%.3f", v }'
}
# history_csv FILE: the previous HISTORY_DAYS days of the same daily curve (demand.csv
# format, one row every HISTORY_STEP s; time_s 0 = HISTORY_DAYS days before the start,
# the last row = the start, which `tide serve --demand-history` maps to "now"). Each day
# repeats the run: RPS_LOW, the ramp to RPS_HIGH at T_RISE, DAY_HIGH_S at the high, a
# ramp of RAMP_S back down.
history_csv() {
    awk -v days="$HISTORY_DAYS" -v st="$HISTORY_STEP" -v r="$T_RISE" -v w="$RAMP_S" -v lo="$RPS_LOW" \
        -v hi="$RPS_HIGH" -v hd="$DAY_HIGH_S" 'BEGIN {
        D = 86400; end = days * D; print "time_s,service,rps"
        for (t = 0; t <= end; t += st) {
            p = (t - end) % D; if (p < 0) p += D            # seconds since the same instant as the start, that day
            if (p >= r && p < r + hd) v = hi
            else if (w > 0 && p >= r - w && p < r) v = lo + (hi - lo) * (p - (r - w)) / w
            else if (w > 0 && p >= r + hd && p < r + hd + w) v = hi - (hi - lo) * (p - r - hd) / w
            else v = lo
            printf "%d,chat,%.3f\n", t, v
        }
        if ((end % st) != 0) printf "%d,chat,%.3f\n", end, lo }' >"$1"
}
# replicas_for RPS: replicas a demand needs (>= 1)
replicas_for() { awk -v d="$1" -v c="$REPLICA_RPS" 'BEGIN { n = int(d / c); if (n * c < d) n++; if (n < 1) n = 1; print n }'; }
now_s() { local t=${EPOCHREALTIME/,/.}; echo "${t%???}"; }
since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%d", b - a }'; }
ready_count() { # WORKDIR: replicas whose last logged event is "ready"
    local f n=0
    for f in "$1"/log/replica-*.events; do
        [ -e "$f" ] || continue
        [ "$(tail -n 1 "$f" | awk '{print $2}')" = ready ] && n=$((n + 1))
    done
    echo "$n"
}
running_named() { squeue -h -t running -o '%j' 2>/dev/null | grep -c -E "$1"; }
# track_states MODEDIR: append the training jobs' Slurm states (Slurm forgets a finished
# job after MinJobAge, 300 s here: a job that FAILED early would be gone by the end)
track_states() {
    squeue -h -t all -o '%j %T' 2>/dev/null | awk -v t="$(now_s)" '$1 !~ /^(chat-r|tide\.rep\.)/ {
        n = $1; sub(/^tide\.job\./, "", n); sub(/\.g[0-9]+$/, "", n); print t, n, $2 }' >>"$1/states.log"
}

# snapshot MODEDIR: what Slurm runs now (the analysis: which runs were alive at the end)
snapshot() {
    local SNAP=$1
    export SNAP
    squeue -h -t all -o '%i %j %T %N %r' >"$1/squeue-end.txt" 2>/dev/null || true
    # training jobs only: "train-K" (a) or "tide.job.train-K.gG" (b) -> train-K
    awk '$2 !~ /^(chat-r|tide\.rep\.)/ { n = $2; sub(/^tide\.job\./, "", n); sub(/\.g[0-9]+$/, "", n)
        print n, $3 > (ENVIRON["SNAP"] "/slurm-states.txt"); if ($3 == "RUNNING") print n }' \
        "$1/squeue-end.txt" >"$1/alive.txt"
}

knobs_line() {
    echo "RUN_S=$RUN_S T_RISE=$T_RISE RAMP_S=$RAMP_S HISTORY_DAYS=$HISTORY_DAYS HISTORY_STEP=$HISTORY_STEP DAY_HIGH_S=$DAY_HIGH_S WARMUP_S=$WARMUP_S REPLICA_RPS=$REPLICA_RPS RPS_LOW=$RPS_LOW" \
        "RPS_HIGH=$RPS_HIGH N_TRAIN=$N_TRAIN STEP_S=$STEP_S CKPT_EVERY=$CKPT_EVERY CKPT_S=$CKPT_S RESTORE_S=$RESTORE_S" \
        "TOTAL_STEPS=$TOTAL_STEPS DEMAND_EVERY=$DEMAND_EVERY NNODES=$NNODES GPUS=$GPUS" \
        "TIDE_CONTROL_PERIOD=$TIDE_CONTROL_PERIOD TIDE_CKPT_ON_TERM=$TIDE_CKPT_ON_TERM${TIDE_ARGS:+ TIDE_ARGS=\"$TIDE_ARGS\"}" \
        "CTLD_PORT=${CTLD_PORT:-default} NODE_PORT0=${NODE_PORT0:-default}"
}
say "knobs: $(knobs_line)"
say "demand: $RPS_LOW rps (1 replica) until $((T_RISE - RAMP_S)) s, ramp to $RPS_HIGH rps ($NEED replicas) at $T_RISE s; run $RUN_S s per mode"

# ------------------------------------------------------------------ (a) Slurm alone
run_slurm() {
    local M=$tmp/slurm W
    W=$M/work
    mkdir -p "$W/log" "$M"
    say "(a) slurm: cluster up"
    slurm_up
    cat >"$M/train-batch.sh" <<EOF
#!/bin/bash
# Slurm-alone baseline: the trainer runs as a step, so GraceTime's early SIGTERM reaches
# it. The batch shell only logs the signals it gets and waits for the step.
B=\$TIDE_WORKDIR/log/\$TIDE_JOB_ID.batch
ts() { local t=\${EPOCHREALTIME/,/.}; echo "\${t%???}"; }
echo "\$(ts) batch-start slurm_job=\$SLURM_JOB_ID node=\$SLURMD_NODENAME restarts=\${SLURM_RESTART_COUNT:-0}" >>"\$B"
for s in TERM INT USR1 USR2 CONT HUP; do trap "echo \"\\\$(ts) batch-got-\$s\" >>\"\$B\"" "\$s"; done
srun --ntasks=1 bash "$SRC/examples/slurm/train.sh" &
pid=\$!
while :; do
    wait "\$pid"; rc=\$?
    kill -0 "\$pid" 2>/dev/null || break
done
echo "\$(ts) batch-end srun_rc=\$rc" >>"\$B"
exit "\$rc"
EOF
    cat >"$M/replica-batch.sh" <<EOF
#!/bin/bash
exec bash "$SRC/examples/slurm/replica.sh"
EOF
    local T0 k nsub=0 t d need last_prog=-10 id
    submit_replica() {
        nsub=$((nsub + 1))
        id=$(sbatch --parsable -p infer -N 1 --gres="gpu:$GPUS" -c 1 -J "chat-r$nsub" -D "$W" \
            -o "$W/slurm-%x-%j.out" \
            --export="ALL,TIDE_REPLICA=$nsub,TIDE_SERVICE=chat,TIDE_WARMUP_S=$WARMUP_S,TIDE_WORKDIR=$W" \
            "$M/replica-batch.sh") || die "sbatch of replica $nsub failed"
        echo "$(now_s) submit replica $nsub slurm_job=$id" >>"$M/bench.log"
    }
    T0=$(now_s)
    echo "$T0" >"$M/t0"
    submit_replica
    for k in $(seq 1 "$N_TRAIN"); do
        id=$(sbatch --parsable -p train -N 1 --gres="gpu:$GPUS" -c 1 --requeue -J "train-$k" -D "$W" \
            -o "$W/slurm-%x-%j.out" \
            --export="ALL,TIDE_JOB_ID=train-$k,TIDE_WORKDIR=$W,TIDE_GANG_GPUS=$GPUS,STEP_S=$STEP_S,CKPT_EVERY=$CKPT_EVERY,CKPT_S=$CKPT_S,RESTORE_S=$RESTORE_S,TOTAL_STEPS=$TOTAL_STEPS,CKPT_ON_TERM=1" \
            "$M/train-batch.sh") || die "sbatch of train-$k failed"
        echo "$(now_s) submit train-$k slurm_job=$id" >>"$M/bench.log"
    done
    say "(a) slurm: submitted 1 replica (infer) + $N_TRAIN training jobs (train) at t=0"
    while :; do
        t=$(since "$T0")
        [ "$t" -lt "$RUN_S" ] || break
        d=$(demand "$t")
        need=$(replicas_for "$d")
        while [ "$nsub" -lt "$need" ]; do
            submit_replica
            say "(a) slurm: t=${t}s demand ${d} rps > $((nsub - 1)) x $REPLICA_RPS: replica $nsub submitted to infer"
        done
        [ $((t % 5)) = 0 ] && track_states "$M"
        if [ $((t - last_prog)) -ge 15 ]; then
            last_prog=$t
            say "(a) slurm: t=${t}s demand ${d} rps, replicas ready $(ready_count "$W")/$nsub, training running $(running_named '^train-')/$N_TRAIN"
        fi
        sleep 0.5
    done
    snapshot "$M"
    now_s >"$M/tend"
    say "(a) slurm: done at t=${RUN_S}s; training jobs running at the end: $(tr '\n' ' ' <"$M/alive.txt")"
    slurm_down "$M"
}

# ------------------------------------------------------------------ (b) tide
TIDE_SKIP=""
api() { # METHOD PATH [BODY]: prints the body, returns 0 on 2xx
    local code
    code=$(curl -s -m 10 -o "$tmp/api.out" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data "$3"} "$TIDE_URL$2")
    cat "$tmp/api.out"
    [[ $code == 2?? ]]
}
run_tide() { # NAME [EXTRA tide serve OPTIONS...]: mode folder $tmp/NAME
    local name=$1 M=$tmp/$1 W
    shift
    TIDE_SKIP=""
    W=$M/work
    mkdir -p "$W/log" "$M"
    local help=""
    [ -x "$TIDE_BIN" ] && help=$("$TIDE_BIN" serve --help 2>&1)
    if [[ $help != *--slurm-conf* ]]; then
        TIDE_SKIP="$BUILD/tide has no 'serve --backend slurm' (make build)"
        say "($name): skipped: $TIDE_SKIP"
        return 0
    fi
    say "($name): cluster up"
    slurm_up
    printf 'service,gpus_per_replica,replica_rps,min_replicas,max_replicas,warmup_s\nchat,%d,%s,1,%d,%d\n' \
        "$GPUS" "$REPLICA_RPS" "$NEED" "$WARMUP_S" >"$M/services.csv"
    local port=$TIDE_PORT
    if [ "$port" = 0 ]; then # the jobs need the API's address: a fixed, free port
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    fi
    local args=(serve --backend slurm --db "$M/tide.db" --listen "127.0.0.1:$port"
        --services "$M/services.csv" --replica-command "bash $SRC/examples/slurm/replica.sh"
        --workdir "$W" --policy elastic --slurm-conf "$SLURM_CONF" --slurm-partition tide
        --control-period "$TIDE_CONTROL_PERIOD")
    # shellcheck disable=SC2206 # (extra options, split on spaces on purpose)
    [ -n "$TIDE_ARGS" ] && args+=($TIDE_ARGS)
    args+=("$@")
    echo "$TIDE_BIN ${args[*]}" >"$M/tide-command.txt"
    "$TIDE_BIN" "${args[@]}" >"$M/tide.out" 2>"$M/tide.err" &
    TIDE_PID=$!
    local line=""
    for _ in $(seq 200); do
        line=$(head -n 1 "$M/tide.out" 2>/dev/null)
        [ -n "$line" ] && break
        kill -0 "$TIDE_PID" 2>/dev/null || break
        sleep 0.1
    done
    case $line in
    "listening on http://"*) TIDE_URL=${line#listening on } ;;
    *)
        tail -20 "$M/tide.err" >&2
        TIDE_SKIP="tide serve did not start: $(tail -n 1 "$M/tide.err")"
        say "($name): $TIDE_SKIP"
        stop_tide
        slurm_down
        return 0
        ;;
    esac
    say "($name): $TIDE_URL (pid $TIDE_PID; log $M/tide.err)"
    local T0 k t d last_push=-100 last_prog=-10 env body
    T0=$(now_s)
    echo "$T0" >"$M/t0"
    api POST /v1/services/chat/demand "{\"rps\": $RPS_LOW}" >/dev/null || say "($name): demand push failed: $(cat "$tmp/api.out")"
    env=$(printf '{"STEP_S":"%s","CKPT_EVERY":"%s","CKPT_S":"%s","RESTORE_S":"%s","TOTAL_STEPS":"%s","CKPT_ON_TERM":"%s"}' \
        "$STEP_S" "$CKPT_EVERY" "$CKPT_S" "$RESTORE_S" "$TOTAL_STEPS" "$TIDE_CKPT_ON_TERM")
    for k in $(seq 1 "$N_TRAIN"); do
        body=$(python3 -c 'import json,sys; a=sys.argv
print(json.dumps({"job_id": a[1], "gpus": int(a[2]), "duration_s": round(float(a[3])*float(a[4])),
 "ckpt_interval_s": max(1, round(float(a[3])*float(a[5]))), "ckpt_s": round(float(a[6])),
 "restore_s": round(float(a[9])), "command": a[7], "env": json.loads(a[8])}))' \
            "train-$k" "$GPUS" "$STEP_S" "$TOTAL_STEPS" "$CKPT_EVERY" "$CKPT_S" \
            "bash $SRC/examples/slurm/train.sh" "$env" "$RESTORE_S")
        api POST /v1/jobs "$body" >"$M/submit-$k.json" || {
            say "($name): submit of train-$k refused: $(cat "$M/submit-$k.json")"
            TIDE_SKIP="job submission refused: $(cat "$M/submit-$k.json")"
        }
    done
    say "($name): submitted $N_TRAIN training jobs through the API at t=0"
    while :; do
        t=$(since "$T0")
        [ "$t" -lt "$RUN_S" ] || break
        if [ $((t - last_push)) -ge "$DEMAND_EVERY" ]; then
            last_push=$t
            d=$(demand "$t")
            api POST /v1/services/chat/demand "{\"rps\": $d}" >/dev/null || say "($name): demand push failed: $(cat "$tmp/api.out")"
            echo "$(now_s) demand $d" >>"$M/bench.log"
        fi
        [ $((t % 5)) = 0 ] && track_states "$M"
        if [ $((t - last_prog)) -ge 15 ]; then
            last_prog=$t
            say "($name): t=${t}s demand $(demand "$t") rps, replicas ready $(ready_count "$W"), training running $(running_named '^tide\.job\.')/$N_TRAIN"
        fi
        kill -0 "$TIDE_PID" 2>/dev/null || { say "($name): the daemon died: $(tail -n 3 "$M/tide.err")"; break; }
        sleep 0.5
    done
    snapshot "$M"
    now_s >"$M/tend"
    # tide's own view at the end
    for k in $(seq 1 "$N_TRAIN"); do api GET "/v1/jobs/train-$k" >"$M/job-train-$k.json"; done
    api GET /v1/cluster >"$M/cluster.json"
    api GET /v1/services/chat >"$M/service.json"
    api GET '/v1/events?limit=5000' >"$M/events.json"
    curl -s -m 10 "$TIDE_URL/metrics" >"$M/metrics.txt"
    say "($name): done at t=${RUN_S}s; training jobs running at the end: $(tr '\n' ' ' <"$M/alive.txt")"
    stop_tide
    slurm_down "$M"
}

# ------------------------------------------------------------------ analysis
cat >"$tmp/analyze.py" <<'PYEOF'
"""Reads the jobs' event logs of one mode and prints its figures as JSON."""
import glob, json, math, os, re, sys

M = sys.argv[1]
K = {k: float(os.environ[k]) for k in ("RUN_S", "T_RISE", "RAMP_S", "REPLICA_RPS", "RPS_LOW",
                                        "RPS_HIGH", "STEP_S", "GPUS", "NNODES", "NEED")}
W = os.path.join(M, "work")
T0 = float(open(os.path.join(M, "t0")).read())
TEND = T0 + K["RUN_S"]
alive = set(open(os.path.join(M, "alive.txt")).read().split()) if os.path.exists(os.path.join(M, "alive.txt")) else set()


def demand(t):
    tau, r, w = t - T0, K["T_RISE"], K["RAMP_S"]
    if tau >= r:
        return K["RPS_HIGH"]
    if w > 0 and tau >= r - w:
        return K["RPS_LOW"] + (K["RPS_HIGH"] - K["RPS_LOW"]) * (tau - (r - w)) / w
    return K["RPS_LOW"]


def parse(path):
    out = []
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) < 2:
            continue
        try:
            t = float(p[0])
        except ValueError:
            continue
        kv = dict(x.split("=", 1) for x in p[2:] if "=" in x)
        out.append((t, p[1], kv))
    return out


def runs_of(lines):
    runs = []
    for ln in lines:
        if ln[1] == "start" or not runs:
            runs.append([])
        runs[-1].append(ln)
    return runs


# ---------------------------------------------------------------- training
train = []  # per run: dict
for f in sorted(glob.glob(os.path.join(W, "log", "*.events"))):
    name = os.path.basename(f)[:-len(".events")]
    if name.startswith("replica-"):
        continue
    lines = [ln for ln in parse(f) if ln[0] <= TEND]
    by_gang = {}
    for ln in lines:
        by_gang.setdefault(ln[2].get("gang", "0"), []).append(ln)
    for gang, gl in by_gang.items():
        rs = runs_of(gl)
        for i, run in enumerate(rs):
            start = run[0]
            gpus = int(start[2].get("gpus", K["GPUS"]))
            last = run[-1]
            evs = [ln[1] for ln in run]
            steps = sum(1 for e in evs if e == "step")
            committed = max(int(ln[2].get("committed", 0)) for ln in run)
            nxt = rs[i + 1] if i + 1 < len(rs) else None
            if nxt:  # what the manifest held is what the next run restored
                committed = max(committed, int(nxt[0][2].get("committed", 0)))
            last_step = max(int(ln[2].get("step", 0)) for ln in run)
            done = "done" in evs
            is_alive = nxt is None and name in alive and not done and "term" not in evs
            stopped = not done and not is_alive
            end = TEND if is_alive else last[0]
            how = "term" if "term" in evs else ("done" if done else ("alive" if is_alive else "killed"))
            lost = max(0, last_step - committed) if stopped else 0
            term_t = next((ln[0] for ln in run if ln[1] == "term"), None)
            ckb = [ln for ln in run if ln[1] == "ckpt-begin" and ln[2].get("reason") == "term"]
            train.append(dict(job=name, gang=gang, gpus=gpus, start=start[0], end=end, steps=steps,
                              lost=lost, stopped=stopped, how=how, last_step=last_step,
                              committed=committed, term_t=term_t,
                              term_ckpt="begun" if ckb else None,
                              sigterms=[ln[0] for ln in run if ln[1] == "sigterm"],
                              ckpt_times=[(ln[0], ln[1] + ("(" + ln[2].get("reason", "") + ")"))
                                          for ln in run if ln[1].startswith("ckpt")][-2:],
                              term_ckpt_done=any(ln[1] == "ckpt" and ln[2].get("reason") == "term" for ln in run)))

# ---------------------------------------------------------------- replicas
reps = []
for f in sorted(glob.glob(os.path.join(W, "log", "replica-*.events"))):
    lines = [ln for ln in parse(f) if ln[0] <= TEND]
    for run in runs_of(lines):
        ready = next((ln[0] for ln in run if ln[1] == "ready"), None)
        stop = next((ln[0] for ln in run if ln[1] == "stop"), None)
        reps.append(dict(file=os.path.basename(f), start=run[0][0], ready=ready,
                         end=stop if stop is not None else TEND))


def clip(a, b):
    return max(0.0, min(b, TEND) - max(a, T0))


total = K["NNODES"] * K["GPUS"] * K["RUN_S"]
G = K["GPUS"]
serve_gs = sum(clip(r["ready"], r["end"]) * G for r in reps if r["ready"] is not None)
kept_steps_gs = sum((r["steps"] - r["lost"]) * K["STEP_S"] * r["gpus"] for r in train)
lost_gs = sum(r["lost"] * K["STEP_S"] * r["gpus"] for r in train)
alloc_gs = sum(clip(r["start"], r["end"]) * r["gpus"] for r in train) + \
    sum(clip(r["start"], r["end"]) * G for r in reps)

# ready capacity over time
ivs = [(r["ready"], r["end"]) for r in reps if r["ready"] is not None]


def ready_at(t):
    return sum(1 for a, b in ivs if a <= t < b)


rise = T0 + K["T_RISE"]
t_cap = None
for t in sorted(a for a, _ in ivs):
    if ready_at(t) >= K["NEED"]:
        t_cap = t
        break
dt, under, unserved, asked = 0.05, 0.0, 0.0, 0.0
t = T0
while t < TEND:
    d, c = demand(t), ready_at(t) * K["REPLICA_RPS"]
    asked += d * dt
    if c < d:
        under += dt
        unserved += (d - c) * dt
    t += dt

pre = [r for r in train if r["stopped"]]
res = dict(
    ttc_s=None if t_cap is None else round(t_cap - rise, 1),
    under_s=round(under, 1),
    unserved_pct=round(100 * unserved / asked, 2) if asked else 0.0,
    lost_gpu_h=round(lost_gs / 3600, 4),
    lost_steps=sum(r["lost"] for r in train),
    kept_gpu_h=round(kept_steps_gs / 3600, 3),
    serve_gpu_h=round(serve_gs / 3600, 3),
    util_useful_pct=round(100 * (serve_gs + kept_steps_gs) / total, 1),
    util_alloc_pct=round(100 * alloc_gs / total, 1),
    preempted_runs=len(pre),
    preempted_jobs=len({r["job"] for r in pre}),
    replicas_ready_rel=[None if r["ready"] is None else round(r["ready"] - rise, 1) for r in reps],
    replica_starts_rel=[round(r["start"] - rise, 1) for r in reps],
    stops=[dict(job=r["job"], how=r["how"], at_rel_rise=round(r["end"] - rise, 1),
                last_step=r["last_step"], committed=r["committed"], lost_steps=r["lost"],
                term_ckpt=("committed" if r["term_ckpt_done"] else r["term_ckpt"]))
           for r in pre],
)
# (a): what the batch shells logged (signals), relative to the step's SIGTERM
sig = []
for f in sorted(glob.glob(os.path.join(W, "log", "*.batch"))):
    job = os.path.basename(f)[:-len(".batch")]
    for ln in parse(f):
        if ln[0] > TEND:
            continue
        if ln[1].startswith("batch-got-") or ln[1] == "batch-end":
            sig.append(dict(job=job, ev=ln[1], at_rel_rise=round(ln[0] - rise, 2)))
for r in pre:
    for t in r["sigterms"]:
        sig.append(dict(job=r["job"], ev="trainer-got-TERM", at_rel_rise=round(t - rise, 2)))
    for t in r["ckpt_times"]:
        sig.append(dict(job=r["job"], ev=t[1], at_rel_rise=round(t[0] - rise, 2)))
    if r["term_t"] is not None:
        sig.append(dict(job=r["job"], ev="trainer-exit", at_rel_rise=round(r["term_t"] - rise, 2)))
res["signals"] = sorted(sig, key=lambda s: (s["job"], s["at_rel_rise"]))
# Slurm's state of each training job at the end: a preempted job that ended by itself
# during the grace time is FAILED (or COMPLETED), not requeued: it left the queue
states = {}
if os.path.exists(os.path.join(M, "states.log")):  # seen during the run (the last one wins)
    for line in open(os.path.join(M, "states.log")):
        p = line.split()
        if len(p) == 3 and float(p[0]) <= TEND:
            states[p[1]] = p[2]
sp = os.path.join(M, "slurm-states.txt")
if os.path.exists(sp):
    for line in open(sp):
        p = line.split()
        if len(p) == 2:
            states[p[0]] = p[1]
res["slurm_states"] = states
# (under tide a Slurm job that ended does not leave tide's queue: tide submits it again)
res["left_queue"] = [] if os.path.basename(M.rstrip("/")).startswith("tide") else \
    sorted(j for j in {r["job"] for r in pre}
           if states.get(j) in ("FAILED", "COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL"))
json.dump(res, sys.stdout)
PYEOF

cat >"$tmp/table.py" <<'PYEOF'
"""Writes the markdown results from the modes' JSON figures."""
import json, os, re, sys

out, knobs, cmd, ports = sys.argv[1:5]
modes = sys.argv[5:]


def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None


def metric_sum(text, name, label=None):
    s, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^(\w+)(\{[^}]*\})?\s+(\S+)", line)
        if m and m.group(1) == name and (label is None or (m.group(2) and label in m.group(2))):
            s += float(m.group(3))
            seen = True
    return s if seen else None


def fmt(v, unit=""):
    return "n/a" if v is None else f"{v}{unit}"


L = []
L.append("# tide elastic vs Slurm partition-priority preemption (same cluster, same workload)\n")
L.append("Written by `bench/slurm_compare.sh` (do not edit by hand).\n")
L.append(f"Command: `{cmd}`  \n{ports}\n")
L.append(f"Knobs: `{knobs}`\n")
L.append("| scheduler | time-to-capacity (s after T_RISE) | under capacity (s) | unserved demand | "
         "training GPU-h lost | training GPU-h kept | GPU util. useful | GPU util. allocated | jobs preempted |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
details = []
for spec in modes:
    label, path, note = spec.split("|", 2)
    r = load(path)
    if r is None:
        L.append(f"| {label} | not run: {note or 'no result'} | | | | | | | |")
        continue
    ttc = "never" if r["ttc_s"] is None else f"{r['ttc_s']:+.1f}"
    L.append(f"| {label} | {ttc} | {r['under_s']} | {r['unserved_pct']} % | {r['lost_gpu_h']:.3f} "
             f"({r['lost_steps']} steps) | {r['kept_gpu_h']:.2f} | {r['util_useful_pct']} % | "
             f"{r['util_alloc_pct']} % | {r['preempted_runs']} ({r['preempted_jobs']} jobs"
             + (f"; {len(r['left_queue'])} ended {'/'.join(sorted({r['slurm_states'][j] for j in r['left_queue']}))}, not requeued"
                if r.get("left_queue") else "") + ") |")
    d = [f"**{label}**: replicas started at {r['replica_starts_rel']} s and ready at "
         f"{r['replicas_ready_rel']} s relative to T_RISE; serving-ready {r['serve_gpu_h']} GPU-h; "
         f"Slurm states of the training jobs at the end: {r.get('slurm_states')}."]
    for s in r["stops"]:
        d.append(f"  - {s['job']} stopped ({s['how']}) at {s['at_rel_rise']:+.1f} s: step {s['last_step']}, "
                 f"committed {s['committed']}, lost {s['lost_steps']} steps"
                 + (f", checkpoint on SIGTERM {s['term_ckpt']}" if s.get("term_ckpt") else ""))
    if r.get("signals"):
        d.append("  - signals (s after T_RISE): " + "; ".join(
            f"{s['job']} {s['ev']} {s['at_rel_rise']:+.2f}" for s in r["signals"]))
    tv = os.path.join(os.path.dirname(path), "metrics.txt")
    if os.path.exists(tv):
        text = open(tv).read()
        jobs = [load(os.path.join(os.path.dirname(path), f)) for f in sorted(os.listdir(os.path.dirname(path)))
                if f.startswith("job-") and f.endswith(".json")]
        jobs = [j for j in jobs if j]
        pre = metric_sum(text, "tide_preemptions_total")
        byr = {}
        for line in text.splitlines():
            m = re.match(r'^tide_preemptions_total\{reason="([^"]+)"\}\s+(\S+)', line)
            if m and float(m.group(2)) > 0:
                byr[m.group(1)] = float(m.group(2))
        cl = load(os.path.join(os.path.dirname(path), "cluster.json")) or {}
        st = cl.get("stats", {})
        d.append(f"  - tide's own view: tide_preemptions_total {fmt(pre)} {byr or ''}, "
                 f"tide_reclaims_total {fmt(metric_sum(text, 'tide_reclaims_total'))}, "
                 f"tide_lease_late_total {fmt(metric_sum(text, 'tide_lease_late_total'))}, "
                 f"lost_gpu_hours {st.get('lost_gpu_hours', 'n/a')}, utilization {st.get('utilization', 'n/a')}, "
                 f"jobs: " + ", ".join(f"{j.get('id')} {j.get('state')} preemptions={j.get('preemptions')} "
                                        f"lost_gpu_s={j.get('lost_gpu_s')} committed_s={j.get('committed_s')}"
                                        for j in jobs))
    details.append("\n".join(d))
L.append("")
L.append("Definitions: time-to-capacity = first moment NEED replicas have logged `ready` at once, minus "
         "T_RISE (negative: capacity arrived before the demand peak); under capacity = seconds when ready "
         "replicas x REPLICA_RPS < demand (unserved = the share of requests beyond that capacity); training "
         "lost = steps done after the last committed checkpoint by runs stopped before the end, x STEP_S x "
         "GPUs (runs still alive at the end lose nothing); useful utilization = (GPU-s of ready replicas + "
         "GPU-s of training steps kept) / (all GPUs x RUN_S); allocated = GPU-s between each job's logged "
         "start and stop; jobs preempted = training runs stopped before the end (distinct jobs).\n")
L.append("## Details\n")
L.extend(d + "\n" for d in details)
text = "\n".join(L)
open(out, "w").write(text)
print(text)
PYEOF

# ------------------------------------------------------------------ run
export RUN_S T_RISE RAMP_S REPLICA_RPS RPS_LOW RPS_HIGH STEP_S GPUS NNODES NEED
SPECS=()
for m in $MODES; do
    case $m in
    slurm)
        run_slurm
        python3 "$tmp/analyze.py" "$tmp/slurm" >"$tmp/slurm/result.json" || say "(a) analysis failed"
        SPECS+=("Slurm alone: partition_prio, REQUEUE, GraceTime=15|$tmp/slurm/result.json|")
        ;;
    tide | tide-history)
        if [ "$m" = tide ]; then
            run_tide tide
            label="tide elastic (--backend slurm)"
        else
            mkdir -p "$tmp/$m"
            history_csv "$tmp/$m/history.csv"
            run_tide "$m" --demand-history "$tmp/$m/history.csv"
            label="tide elastic (--backend slurm), --demand-history of $HISTORY_DAYS days"
        fi
        if [ -z "$TIDE_SKIP" ] || [ -f "$tmp/$m/alive.txt" ]; then
            python3 "$tmp/analyze.py" "$tmp/$m" >"$tmp/$m/result.json" || say "($m) analysis failed"
        fi
        SPECS+=("$label|$tmp/$m/result.json|$TIDE_SKIP")
        ;;
    *) die "unknown mode '$m' (MODES: slurm tide tide-history)" ;;
    esac
done
PORTS="Cluster: TIDE_SLURM_DIR=$TIDE_SLURM_DIR, CTLD_PORT=${CTLD_PORT:-17817 (default)}, NODE_PORT0=${NODE_PORT0:-17900 (default)}; $(date -u '+%Y-%m-%d %H:%M UTC'), $(slurmctld -V 2>/dev/null)."
for m in tide tide-history; do
    [ -f "$tmp/$m/tide-command.txt" ] && PORTS="$PORTS $m: \`$(sed "s#$tmp#\$TMP#g" "$tmp/$m/tide-command.txt")\`"
done
ENVS=""
for v in RUN_S T_RISE RAMP_S WARMUP_S REPLICA_RPS RPS_LOW RPS_HIGH N_TRAIN STEP_S CKPT_EVERY CKPT_S TOTAL_STEPS \
    DEMAND_EVERY MODES TIDE_CONTROL_PERIOD TIDE_CKPT_ON_TERM TIDE_ARGS RESTORE_S CTLD_PORT NODE_PORT0 NNODES GPUS \
    HISTORY_DAYS HISTORY_STEP DAY_HIGH_S; do
    case $v in
    RUN_S) def=420 ;; T_RISE) def=120 ;; RAMP_S) def=60 ;; WARMUP_S) def=20 ;; REPLICA_RPS) def=10 ;;
    RPS_LOW) def=5 ;; RPS_HIGH) def=25 ;; N_TRAIN) def=3 ;; STEP_S) def=1 ;; CKPT_EVERY) def=60 ;;
    CKPT_S) def=20 ;; TOTAL_STEPS) def=100000 ;; DEMAND_EVERY) def=5 ;; MODES) def="slurm tide tide-history" ;;
    HISTORY_DAYS) def=3 ;; HISTORY_STEP) def=15 ;; DAY_HIGH_S) def=14400 ;;
    TIDE_CONTROL_PERIOD) def=5s ;; TIDE_CKPT_ON_TERM) def=0 ;; NNODES) def=4 ;; GPUS) def=8 ;; RESTORE_S) def=1 ;;
    *) def= ;;
    esac
    if [ -n "${!v:-}" ] && [ "${!v}" != "$def" ]; then ENVS="$ENVS $v=$(printf %q "${!v}")"; fi
done
python3 "$tmp/table.py" "$RES" "$(knobs_line)" "${ENVS:+env$ENVS }$CMDLINE" "$PORTS" "${SPECS[@]}" ||
    die "could not write $RES"
say "results: $RES"
# a mode that produced no result fails the run (the table says why)
missing=""
for spec in "${SPECS[@]}"; do
    IFS='|' read -r label file _ <<<"$spec"
    [ -s "$file" ] || missing="$missing; $label"
done
[ -z "$missing" ] || die "no result for:${missing#;} (see $RES)"
