#!/usr/bin/env bash
# tide example: a fake, but honest, training job. Run as a Slurm batch script or as
# a step (`srun bash train.sh`); it trains by sleeping, checkpoints with an atomic
# commit, answers tide's checkpoint signal and logs every event so that the work a
# stop lost can be computed from its log alone (even after a SIGKILL).
#
# Environment set by tide's Slurm backend (all optional when run by hand):
#   TIDE_API          base URL of tide's API (http://127.0.0.1:7071); unset: report nothing
#   TIDE_TOKEN        bearer token for the API (optional)
#   TIDE_JOB_ID       tide's job id (job-000001); names the log and checkpoint folder
#   TIDE_GANG         0-based data-parallel gang index (default 0)
#   TIDE_GANGS        data-parallel width when submitted (default 1)
#   TIDE_GANG_GPUS    GPUs of one gang (default 8; only logged, for GPU-hour accounting)
#   TIDE_CKPT_SIGNAL  checkpoint signal, name without SIG (default USR1; not TERM/INT/KILL)
#   TIDE_WORKDIR      shared folder (default ${TMPDIR:-/tmp}/tide-work-$UID)
# The job's own environment:
#   STEP_S        seconds per training step (default 1, may be fractional)
#   CKPT_EVERY    steps between periodic checkpoints (default 30)
#   CKPT_S        seconds a checkpoint takes to write (default 3, may be fractional)
#   RESTORE_S     seconds a restore takes (default 0)
#   TOTAL_STEPS   steps to train (default 600)
#   IGNORE_SIGNAL 1 = ignore the checkpoint signal (only log it): a badly behaved job
#   CKPT_ON_TERM  1 = on SIGTERM try to checkpoint before exiting (Slurm GraceTime style)
#   CKPT_DIR      default $TIDE_WORKDIR/ckpt/<job>, <job> = $TIDE_JOB_ID, else
#                 $SLURM_JOB_NAME, else "manual"
#
# Checkpoint: every gang writes $CKPT_DIR/manifest.tmp.G ("step=N"), takes CKPT_S, then
# `mv`s it to $CKPT_DIR/manifest: only the mv commits, so a job killed halfway leaves
# the previous manifest (the gangs of one job commit the same step). Every gang
# restores from manifest. Every gang then POSTs
#   $TIDE_API/v1/jobs/$TIDE_JOB_ID/checkpoints {"step":N,"committed":true,"progress_s":N*STEP_S}
# (5 s timeout; an unreachable API never fails the job). tide counts a step once (the
# other gangs' reports of it are answered "duplicate"), so the reports go on whichever
# gangs a shrink cancels or a grow adds.
#
# Checkpoint signal: finish the current step, checkpoint at once, report, log
# "ckpt-signal", keep training (tide then requeues the job: SIGTERM).
# SIGTERM (SIGINT): abandon the current step, checkpoint first if CKPT_ON_TERM=1 (a
# SIGKILL may cut it: then it does not count), log "term ... lost=N-M", exit 143 (130).
#
# Log: one line per event appended to $TIDE_WORKDIR/log/<job>.events:
#   <unix time, ms> <event> step=<N> committed=<M> gang=<G> [key=value...]
# events: start (gpus=, host=, slurm_job=), restore, step (every step), ckpt-begin
# (reason=), ckpt (reason=periodic|term|final), ckpt-signal, ckpt-signal-ignored,
# sigterm / sigint (each one received), term (lost=), done. Work lost by a stop = the last logged step of that run minus its
# committed step (or the next run's restore step, which is what the manifest held).
# Exit: 0 done, 143 SIGTERM, 130 SIGINT, 2 bad environment.
set -u

die() { echo "train.sh: $*" >&2; exit 2; }

# --------------------------------------------------------------- environment
GANG=${TIDE_GANG:-0}
GANGS=${TIDE_GANGS:-1}
GANG_GPUS=${TIDE_GANG_GPUS:-8}
CKPT_SIG=${TIDE_CKPT_SIGNAL:-USR1}
CKPT_SIG=${CKPT_SIG#SIG}
JOB=${TIDE_JOB_ID:-${SLURM_JOB_NAME:-manual}}
WORKDIR=${TIDE_WORKDIR:-${TMPDIR:-/tmp}/tide-work-$(id -u)}
STEP_S=${STEP_S:-1}
CKPT_EVERY=${CKPT_EVERY:-30}
CKPT_S=${CKPT_S:-3}
RESTORE_S=${RESTORE_S:-0}
TOTAL_STEPS=${TOTAL_STEPS:-600}
IGNORE_SIGNAL=${IGNORE_SIGNAL:-0}
CKPT_ON_TERM=${CKPT_ON_TERM:-0}
CKPT_DIR=${CKPT_DIR:-$WORKDIR/ckpt/$JOB}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_num() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$|^[.][0-9]+$ ]]; }
is_uint "$GANG" || die "TIDE_GANG must be a whole number, got '$GANG'"
is_uint "$GANGS" || die "TIDE_GANGS must be a whole number, got '$GANGS'"
is_uint "$GANG_GPUS" || die "TIDE_GANG_GPUS must be a whole number, got '$GANG_GPUS'"
is_num "$STEP_S" || die "STEP_S must be a number of seconds, got '$STEP_S'"
is_num "$CKPT_S" || die "CKPT_S must be a number of seconds, got '$CKPT_S'"
is_num "$RESTORE_S" || die "RESTORE_S must be a number of seconds, got '$RESTORE_S'"
{ is_uint "$CKPT_EVERY" && [ "$CKPT_EVERY" -ge 1 ]; } || die "CKPT_EVERY must be >= 1, got '$CKPT_EVERY'"
is_uint "$TOTAL_STEPS" || die "TOTAL_STEPS must be a whole number, got '$TOTAL_STEPS'"
case $CKPT_SIG in
TERM | INT | KILL | STOP | CHLD) die "TIDE_CKPT_SIGNAL cannot be $CKPT_SIG" ;;
esac
trap : "$CKPT_SIG" 2>/dev/null || die "TIDE_CKPT_SIGNAL: unknown signal '$CKPT_SIG'"
case $JOB in */* | .* | '') die "job name '$JOB' cannot name a log file" ;; esac

LOG_DIR=$WORKDIR/log
EVENTS=$LOG_DIR/$JOB.events
mkdir -p "$LOG_DIR" "$CKPT_DIR" || die "cannot create $LOG_DIR or $CKPT_DIR"
# every gang commits the manifest (its own temporary file, one atomic mv): whichever
# gangs a shrink leaves, the manifest holds the step they reported
CK_TMP=$CKPT_DIR/manifest.tmp.$GANG
CK_FILE=$CKPT_DIR/manifest

# --------------------------------------------------------------- state
STEP=0        # steps done (the model's state)
COMMITTED=0   # step of the last committed checkpoint
GOT_TERM=0    # SIGTERM/SIGINT seen: 143 / 130
CKPT_REQ=0    # checkpoint signal seen, not yet answered
SLEEP_PID=

now() {
    local t=${EPOCHREALTIME/,/.} # seconds.microseconds (a locale may use a comma)
    echo "${t%???}"
}

# log EVENT [key=value...]
log() {
    local ev=$1
    shift
    printf '%s %s step=%d committed=%d gang=%d%s\n' "$(now)" "$ev" "$STEP" "$COMMITTED" "$GANG" \
        "${*:+ $*}" >>"$EVENTS"
}

# isleep SECONDS MODE: sleep, running traps promptly. The sleep itself ignores TERM and
# the checkpoint signal (Slurm signals every process of the step), so only we end it.
# MODE step: a SIGTERM abandons it; ckpt: a SIGTERM abandons it unless CKPT_ON_TERM=1;
# wait: never abandoned. Returns 0 when the time passed, 1 when abandoned.
isleep() {
    local secs=$1 mode=$2
    (trap '' TERM INT "$CKPT_SIG"; exec sleep "$secs") &
    SLEEP_PID=$!
    local abort=0
    [ "$mode" = step ] && abort=1
    [ "$mode" = ckpt ] && [ "$CKPT_ON_TERM" != 1 ] && abort=1
    while :; do
        # a SIGTERM that came before the wait began is seen here
        if [ "$GOT_TERM" = 0 ] || [ "$abort" = 0 ]; then wait "$SLEEP_PID"; fi
        kill -0 "$SLEEP_PID" 2>/dev/null || break # it ended (reaped): the time passed
        # interrupted by a trapped signal: the sleep is still running
        if [ "$GOT_TERM" != 0 ] && [ "$abort" = 1 ]; then
            kill -KILL "$SLEEP_PID" 2>/dev/null
            wait "$SLEEP_PID" 2>/dev/null
            SLEEP_PID=
            return 1
        fi
    done
    SLEEP_PID=
    return 0
}

# progress_s of STEP: STEP x STEP_S, whole when it is whole
progress_s() { awk -v n="$STEP" -v s="$STEP_S" 'BEGIN { v = n * s; if (v == int(v)) printf "%d", v; else printf "%.3f", v }'; }

# report: POST the committed checkpoint to tide (every gang: tide counts the step once,
# whichever gang is left after a shrink); never fails the job
report() {
    [ -n "${TIDE_API:-}" ] && [ -n "${TIDE_JOB_ID:-}" ] || return 0
    local body auth=() pid
    body=$(printf '{"step":%d,"committed":true,"progress_s":%s}' "$STEP" "$(progress_s)")
    [ -n "${TIDE_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $TIDE_TOKEN")
    curl -sf -m 5 -o /dev/null -X POST -H 'Content-Type: application/json' "${auth[@]}" \
        --data "$body" "${TIDE_API%/}/v1/jobs/$TIDE_JOB_ID/checkpoints" &
    pid=$!
    while :; do
        wait "$pid" && return 0
        kill -0 "$pid" 2>/dev/null || break # curl ended with an error
    done
    echo "train.sh: $JOB: could not report checkpoint step=$STEP to $TIDE_API (training goes on)" >&2
    return 0
}

# checkpoint REASON: write, take CKPT_S, commit by mv, report. Returns 1 when a
# SIGTERM abandoned it (nothing committed).
checkpoint() {
    local reason=$1 ev=ckpt
    log ckpt-begin "reason=$reason"
    printf 'step=%d\njob=%s\ngang=%d\ntime=%s\n' "$STEP" "$JOB" "$GANG" "$(now)" >"$CK_TMP"
    if ! isleep "$CKPT_S" ckpt; then
        return 1
    fi
    mv -f "$CK_TMP" "$CK_FILE" # the commit
    COMMITTED=$STEP
    if [ "$CKPT_REQ" = 1 ]; then # a signal that arrived meanwhile is answered by this one
        CKPT_REQ=0
        ev=ckpt-signal
    fi
    if [ "$ev" = ckpt ]; then log ckpt "reason=$reason"; else log ckpt-signal "reason=$reason"; fi
    report
    return 0
}

# finish_term: the job was told to stop (SIGTERM / SIGINT)
finish_term() {
    if [ "$CKPT_ON_TERM" = 1 ] && [ "$COMMITTED" -lt "$STEP" ]; then
        checkpoint term # may be cut by SIGKILL: then the log's last line tells the loss
    fi
    log term "lost=$((STEP - COMMITTED))"
    exit "$GOT_TERM"
}

# shellcheck disable=SC2317 # (trap handlers)
on_term() {
    log "sig${2,,}" # every SIGTERM / SIGINT, also repeated ones (Slurm sends several)
    [ "$GOT_TERM" != 0 ] || GOT_TERM=$1
}
# shellcheck disable=SC2317
on_ckpt_signal() {
    if [ "$IGNORE_SIGNAL" = 1 ]; then
        log ckpt-signal-ignored "signal=$CKPT_SIG"
    else
        CKPT_REQ=1
    fi
}
trap 'on_term 143 TERM' TERM
trap 'on_term 130 INT' INT
trap on_ckpt_signal "$CKPT_SIG"
trap '[ -n "$SLEEP_PID" ] && kill -KILL "$SLEEP_PID" 2>/dev/null' EXIT

# --------------------------------------------------------------- run
if [ -f "$CKPT_DIR/manifest" ]; then
    m=$(sed -n 's/^step=\([0-9][0-9]*\)$/\1/p' "$CKPT_DIR/manifest" | head -n 1)
    [ -n "$m" ] || die "$CKPT_DIR/manifest has no step=N line"
    STEP=$((10#$m))
    COMMITTED=$STEP
fi
echo "train.sh: job $JOB gang $GANG: log $EVENTS, checkpoints $CKPT_DIR" >&2
log start "gangs=$GANGS gpus=$GANG_GPUS host=$(hostname -s) slurm_job=${SLURM_JOB_ID:-none} restarts=${SLURM_RESTART_COUNT:-0} pid=$$"
if [ "$STEP" -gt 0 ]; then
    isleep "$RESTORE_S" step || finish_term
    log restore
fi

while [ "$STEP" -lt "$TOTAL_STEPS" ]; do
    [ "$GOT_TERM" = 0 ] || finish_term
    if [ "$CKPT_REQ" = 1 ] && [ "$COMMITTED" = "$STEP" ]; then
        # nothing trained since the last commit (a restore, or a signal during the
        # report): that commit answers the signal at once
        CKPT_REQ=0
        log ckpt-signal reason=committed
        report
    fi
    isleep "$STEP_S" step || finish_term
    STEP=$((STEP + 1))
    log step
    if [ "$STEP" -ge "$TOTAL_STEPS" ]; then
        break
    elif [ "$CKPT_REQ" = 1 ]; then
        checkpoint signal || finish_term
    elif [ $((STEP % CKPT_EVERY)) = 0 ]; then
        checkpoint periodic || finish_term
    fi
done
[ "$GOT_TERM" = 0 ] || finish_term
if [ "$COMMITTED" -lt "$STEP" ]; then
    checkpoint final || finish_term
fi
[ "$GOT_TERM" = 0 ] || finish_term
log "done"
exit 0
