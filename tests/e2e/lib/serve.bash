# Helpers for the end-to-end tests of `tide serve` (sourced, not run: ctest
# only runs tests/e2e/*.sh). They start the REAL daemon on a free loopback
# port and a temporary database, talk to it with curl, and stop it by PID.
#
#   serve_require            skip (exit 77) unless $TIDE_BIN serve --help works, curl and
#                            python3 exist; sets up $tmp (removed at exit), fail(), finish()
#   serve_start NAME ARGS..  start `$TIDE_BIN serve --listen 127.0.0.1:0 ARGS..`, wait for
#                            "listening on http://127.0.0.1:PORT" on its first stdout line;
#                            sets SERVE_PID, SERVE_URL, SERVE_LOG (stdout+stderr in $tmp/NAME.log)
#   serve_stop               SIGTERM, bounded wait, SIGKILL        serve_kill9   SIGKILL now
#   api METHOD PATH [BODY] [TOKEN]
#                            curl the daemon; sets API_STATUS, API_BODY (also in $tmp/api.out)
#   jq_ EXPR                 python3 expression over the last API_BODY (`d` = parsed JSON)
#   free_port                a loopback port nothing listens on (for "connection refused")
#   poll_until SECONDS CMD.. run CMD every 0.1 s until it succeeds; 1 if it did not within
#                            SECONDS of wall time
# Nothing here sleeps on wall time except the 0.1 s polling steps, each bounded.

serve_require() {
    if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
        echo "skip: TIDE_BIN is not set or not executable" >&2
        exit 77
    fi
    if ! "$TIDE_BIN" serve --help >/dev/null 2>&1; then
        echo "skip: '$TIDE_BIN serve --help' fails (the daemon is not built yet)" >&2
        exit 77
    fi
    local b
    for b in curl python3; do
        if ! command -v "$b" >/dev/null 2>&1; then
            echo "skip: $b is needed" >&2
            exit 77
        fi
    done
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-e2e.XXXXXX")
    SERVE_PIDS=()
    EXTRA_PIDS=()
    trap serve_cleanup EXIT
    fails=0
}

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

# finish NAME: print the daemon log on failure, exit 1 or 0
finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$fails check(s) failed; daemon logs:" >&2
        for f in "$tmp"/*.log; do
            [ -e "$f" ] || continue
            echo "--- $f (last 40 lines)" >&2
            tail -40 "$f" >&2
        done
        exit 1
    fi
    echo "$1: ok"
    exit 0
}

_alive() { [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat")" != Z ]; }

serve_cleanup() {
    local p
    for p in "${EXTRA_PIDS[@]}" "${SERVE_PIDS[@]}"; do
        _alive "$p" && kill -KILL "$p" 2>/dev/null
    done
    [ "${KEEP_TMP:-0}" = 1 ] && echo "kept $tmp" >&2 && return
    rm -rf "$tmp"
}

poll_until() {
    local secs=$1 end
    shift
    end=$((${EPOCHREALTIME/./} + secs * 1000000))
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        ((${EPOCHREALTIME/./} < end)) || return 1
        sleep 0.1
    done
}

_listening() { head -1 "$1" 2>/dev/null | grep -q '^listening on http://'; }

serve_start() {
    local name=$1
    shift
    SERVE_LOG=$tmp/$name.log
    SERVE_OUT=$tmp/$name.out
    : >"$SERVE_OUT"
    "$TIDE_BIN" serve --listen 127.0.0.1:0 "$@" >"$SERVE_OUT" 2>"$SERVE_LOG" &
    SERVE_PID=$!
    SERVE_PIDS+=("$SERVE_PID")
    if ! poll_until 15 _listening "$SERVE_OUT"; then
        echo "daemon did not print 'listening on http://...' within 15 s:" >&2
        cat "$SERVE_OUT" "$SERVE_LOG" >&2
        return 1
    fi
    SERVE_URL=$(head -1 "$SERVE_OUT" | sed -n 's/^listening on \(http:\/\/[^ ]*\).*$/\1/p')
    SERVE_URL=${SERVE_URL%/}
    export TIDE_SERVER=$SERVE_URL
    poll_until 10 curl -sf "$SERVE_URL/healthz" || {
        echo "daemon at $SERVE_URL does not answer /healthz" >&2
        return 1
    }
}

serve_stop() {
    local p=${1:-$SERVE_PID} i
    _alive "$p" || return 0
    kill -TERM "$p" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        _alive "$p" || break
        sleep 0.1
    done
    _alive "$p" && kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    return 0
}

serve_kill9() {
    local p=${1:-$SERVE_PID}
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    return 0
}

api() {
    local method=$1 path=$2 body=${3-} token=${4-} args=()
    args=(-s -o "$tmp/api.out" -w '%{http_code}' -X "$method" --max-time 60)
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    # BODY is sent as is (a leading @ would make curl read a file: avoid it)
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    rm -f "$tmp/api.out"
    API_STATUS=$(curl "${args[@]}" "$SERVE_URL$path")
    API_BODY=$(cat "$tmp/api.out" 2>/dev/null)
}

jq_() {
    python3 -c '
import json, sys
d = json.loads(sys.stdin.read() or "null")
r = eval(sys.argv[1])
print(json.dumps(r) if isinstance(r, (dict, list)) else r)' "$1" <<<"$API_BODY"
}

# free_port: a loopback port nothing listens on right now
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# now_s: the engine clock from /healthz
now_s() { curl -s "$SERVE_URL/healthz" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["now_s"]))'; }

# rl_jobs JOB PYEXPR: GET /v1/rl/JOB; PYEXPR (a Python expression) over `js`, its jobs by role
# (js["trainer"], js["rollout"], js["pool"]: a list) decides the status
rl_jobs() {
    api GET "/v1/rl/$1"
    [ "$API_STATUS" = 200 ] || return 1
    python3 -c '
import json, sys
d = json.loads(sys.argv[1]); js = {"pool": []}
for j in d["jobs"]:
    (js["pool"].append(j) if j["role"] == "pool" else js.__setitem__(j["role"], j))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$API_BODY" "$2"
}
