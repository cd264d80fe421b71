#!/usr/bin/env bash
# tide example: a fake inference replica. Run as a Slurm batch script or step. It
# "loads weights" (sleeps TIDE_WARMUP_S), checks its own health, tells tide it is
# ready, then serves until it is stopped.
#
# Environment (all optional when run by hand):
#   TIDE_API       base URL of tide's API (http://127.0.0.1:7071); unset (plain Slurm):
#                  only log
#   TIDE_TOKEN     bearer token for the API (optional)
#   TIDE_REPLICA   tide's replica handle, a whole number (default $SLURM_JOB_ID, else 0)
#   TIDE_SERVICE   service name (default "svc")
#   TIDE_WARMUP_S  seconds to load weights and warm up (default 10, may be fractional)
#   TIDE_WORKDIR   shared folder (default ${TMPDIR:-/tmp}/tide-work-$UID)
#
# Ready: after the warm-up and a health check (the "weights" written during the
# warm-up read back), log "ready", then POST $TIDE_API/v1/replicas/$TIDE_REPLICA/ready
# with {} (5 s timeout; retried up to 6 times while the API does not answer or answers
# 5xx; a 4xx is reported on stderr and not retried). Serving goes on either way.
# SIGTERM / SIGINT (also during the warm-up): log "stop", exit 0.
#
# Log: one line per event appended to $TIDE_WORKDIR/log/replica-<service>-<replica>.events:
#   <unix time, ms> <event> replica=<R> service=<S> [key=value...]
# events: start (host=, slurm_job=, warmup_s=), ready, stop (ready=0|1), unhealthy.
# Exit: 0 stopped, 1 health check failed, 2 bad environment.
set -u

die() { echo "replica.sh: $*" >&2; exit 2; }

REPLICA=${TIDE_REPLICA:-${SLURM_JOB_ID:-0}}
SERVICE=${TIDE_SERVICE:-svc}
WARMUP_S=${TIDE_WARMUP_S:-10}
WORKDIR=${TIDE_WORKDIR:-${TMPDIR:-/tmp}/tide-work-$(id -u)}

[[ $REPLICA =~ ^[0-9]+$ ]] || die "TIDE_REPLICA must be a whole number, got '$REPLICA'"
[[ $WARMUP_S =~ ^[0-9]+([.][0-9]+)?$|^[.][0-9]+$ ]] || die "TIDE_WARMUP_S must be a number of seconds, got '$WARMUP_S'"
case $SERVICE in */* | .* | '') die "service name '$SERVICE' cannot name a log file" ;; esac

LOG_DIR=$WORKDIR/log
EVENTS=$LOG_DIR/replica-$SERVICE-$REPLICA.events
mkdir -p "$LOG_DIR" || die "cannot create $LOG_DIR"
WEIGHTS=$(mktemp "${TMPDIR:-/tmp}/tide-replica-$SERVICE-$REPLICA.XXXXXX") || die "cannot create a temporary file"

READY=0
STOP=0
SLEEP_PID=

now() {
    local t=${EPOCHREALTIME/,/.}
    echo "${t%???}"
}
log() {
    local ev=$1
    shift
    printf '%s %s replica=%d service=%s%s\n' "$(now)" "$ev" "$REPLICA" "$SERVICE" "${*:+ $*}" >>"$EVENTS"
}

# isleep SECONDS: sleep, running the SIGTERM trap promptly; 1 when a stop came
isleep() {
    (trap '' TERM INT; exec sleep "$1") &
    SLEEP_PID=$!
    while :; do
        # a stop that came before the wait began is seen here
        [ "$STOP" = 1 ] || wait "$SLEEP_PID"
        kill -0 "$SLEEP_PID" 2>/dev/null || break
        if [ "$STOP" = 1 ]; then
            kill -KILL "$SLEEP_PID" 2>/dev/null
            wait "$SLEEP_PID" 2>/dev/null
            SLEEP_PID=
            return 1
        fi
    done
    SLEEP_PID=
    [ "$STOP" = 0 ]
}

stop() {
    log stop "ready=$READY"
    exit 0
}
# shellcheck disable=SC2317 # (the EXIT trap)
cleanup() {
    [ -n "$SLEEP_PID" ] && kill -KILL "$SLEEP_PID" 2>/dev/null
    rm -f "$WEIGHTS"
}
trap 'STOP=1' TERM INT
trap cleanup EXIT

# report_ready: POST .../ready, retrying while the API is not answering
report_ready() {
    [ -n "${TIDE_API:-}" ] || return 0
    local auth=() code try
    [ -n "${TIDE_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $TIDE_TOKEN")
    for try in 1 2 3 4 5 6; do
        code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
            "${auth[@]}" --data '{}' "${TIDE_API%/}/v1/replicas/$REPLICA/ready")
        case $code in
        2??) return 0 ;;
        4??)
            echo "replica.sh: $SERVICE/$REPLICA: tide answered $code to ready (not retried)" >&2
            return 0
            ;;
        esac
        [ "$try" = 6 ] || isleep "$try" || return 0
    done
    echo "replica.sh: $SERVICE/$REPLICA: could not report ready to $TIDE_API (last: ${code:-none})" >&2
}

log start "host=$(hostname -s) slurm_job=${SLURM_JOB_ID:-none} warmup_s=$WARMUP_S pid=$$"
echo "$SERVICE $REPLICA $(now)" >"$WEIGHTS" # the "weights"
isleep "$WARMUP_S" || stop
# health check: the weights we loaded read back
if ! grep -q "^$SERVICE $REPLICA " "$WEIGHTS"; then
    log unhealthy "reason=weights"
    exit 1
fi
READY=1
log ready
report_ready
[ "$STOP" = 0 ] || stop
while isleep 3600; do :; done
stop
