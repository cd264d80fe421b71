#!/usr/bin/env bash
# End-to-end: the live dashboard (/ui/) in headless Chromium against
# `tide serve --backend sim --speed 600` with a bearer token, driven over the
# DevTools protocol (tests/e2e/ui/cdp.js: a pipe, no npm). Checks: the page is
# served from the binary and goes live; the token is kept for the tab; the GPU
# map has one cell per GPU with the node and state /v1/nodes reports; a
# lease countdown and one queue row per queued job; a demand rise turns cells
# lent -> reclaiming -> serving without a reload; a killed daemon shows as
# reconnecting and, once restarted on the same port, the page reconnects and
# catches up by itself; no console error, no request off loopback; the
# screenshot's pixels at known cells have their state's colour; 900 px wide.
# Environment: TIDE_BIN, TIDE_UI_SHOT (default ${TMPDIR:-/tmp}/tide-ui-live.png).
# Exit 77 = skip (no daemon, or chromium / node cannot be installed).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
here=$(cd "$(dirname "$0")" && pwd)

need() { command -v "$1" >/dev/null 2>&1; }
if ! need chromium || ! need node; then
    if [ "$(id -u)" = 0 ] && need apt-get; then
        echo "ui_live: installing chromium and nodejs (apt-get)..." >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq chromium nodejs >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium nodejs >/dev/null 2>&1; }
    fi
    if ! need chromium || ! need node; then
        echo "skip: chromium and node are needed (apt-get install chromium nodejs)" >&2
        exit 77
    fi
fi
shot=${TIDE_UI_SHOT:-${TMPDIR:-/tmp}/tide-ui-live.png}

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,300
CSV
printf 'ui-admin-token-0123456789 default admin\n' >"$tmp/tokens"
TOKEN=ui-admin-token-0123456789
serve_start ui --db "$tmp/tide.db" --cluster 4x8:H100 --services "$tmp/services.csv" \
    --tokens "$tmp/tokens" --speed 600 || exit 1
port=${SERVE_URL##*:}
# a job that borrows the shared pool (a long checkpoint: the reclaim lasts 3 s
# of wall time), and two that queue behind it
api POST /v1/jobs '{"job_id": "big", "gpus": 16, "duration_s": 86400, "ckpt_interval_s": 3600, "ckpt_s": 1800, "restore_s": 60}' "$TOKEN"
[ "$API_STATUS" = 201 ] || fail "submit big: $API_STATUS $API_BODY"
api POST /v1/jobs '{"job_id": "q1", "gpus": 32, "duration_s": 3600, "priority": 3}' "$TOKEN"
api POST /v1/jobs '{"job_id": "q2", "gpus": 24, "duration_s": 3600, "priority": 3}' "$TOKEN"
lent() { curl -s -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/nodes" | grep -q '"state":"lent"'; }
poll_until 15 lent || fail "the job did not borrow GPUs"
api GET '/v1/jobs?state=queued' "" "$TOKEN"
queued=$(jq_ 'len(d["jobs"])')

mkdir -p "$tmp/phases" "$tmp/profile"
CHROMIUM=$(command -v chromium) SERVE_URL=$SERVE_URL TOKEN=$TOKEN PHASES=$tmp/phases \
    SHOT=$shot PROFILE=$tmp/profile QUEUED=$queued \
    timeout 240 node "$here/ui/live.js" >"$tmp/node.out" 2>&1 &
node_pid=$!
EXTRA_PIDS+=("$node_pid")
if poll_until 120 test -e "$tmp/phases/kill"; then
    serve_kill9
    poll_until 20 test -e "$tmp/phases/saw" || fail "the page did not notice the daemon's death"
    serve_start ui2 --db "$tmp/tide.db" --tokens "$tmp/tokens" --speed 600 \
        --listen "127.0.0.1:$port" || fail "restart on port $port"
    touch "$tmp/phases/restarted"
fi
wait "$node_pid"
rc=$?
cat "$tmp/node.out"
[ "$rc" = 0 ] || fail "the browser checks failed (node exit $rc)"
[ -s "$shot" ] && echo "ui_live: screenshot $shot"
finish ui_live
