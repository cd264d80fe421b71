#!/usr/bin/env bash
# End-to-end: the dashboard over a replay (`tide ui DIR`) in headless
# Chromium, driven over the DevTools protocol (tests/e2e/ui/replay.js). A
# one-day `tide gen --scenario seed200` run through `tide sim` (policy
# elastic) is opened at the busiest queue of its timeline: the GPU map has
# one cell per GPU with the replay's node and state, the queue one row per
# queued job in the replay's order with its pending reason, one countdown per
# lease, the service chart and the Gantt drawn; the screenshot's pixels at
# known cells have their state's colour; moving to another time redraws
# without a reload; no console error, no request off loopback; 900 px wide.
# Also: `tide ui` refuses a missing folder, an unknown policy and a
# non-loopback address. Environment: TIDE_BIN, TIDE_UI_REPLAY_SHOT (default
# ${TMPDIR:-/tmp}/tide-ui-replay.png). Exit 77 = skip (no chromium / node).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
here=$(cd "$(dirname "$0")" && pwd)

need() { command -v "$1" >/dev/null 2>&1; }
if ! need chromium || ! need node; then
    if [ "$(id -u)" = 0 ] && need apt-get; then
        echo "ui_replay: installing chromium and nodejs (apt-get)..." >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq chromium nodejs >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium nodejs >/dev/null 2>&1; }
    fi
    if ! need chromium || ! need node; then
        echo "skip: chromium and node are needed (apt-get install chromium nodejs)" >&2
        exit 77
    fi
fi
shot=${TIDE_UI_REPLAY_SHOT:-${TMPDIR:-/tmp}/tide-ui-replay.png}

"$TIDE_BIN" gen --scenario seed200 --days 1 --seed 1 --out "$tmp/g" >/dev/null || fail "tide gen"
"$TIDE_BIN" sim --cluster 16x8:H100 --services "$tmp/g/services.csv" --demand "$tmp/g/demand.csv" \
    --jobs "$tmp/g/jobs.csv" --out "$tmp/run" --policy elastic,static >/dev/null || fail "tide sim"

# bad input: clear errors, no crash
"$TIDE_BIN" ui "$tmp/nothing" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 3 ] && grep -q "summary.json" "$tmp/err" || fail "a missing folder: exit $rc, $(cat "$tmp/err")"
"$TIDE_BIN" ui "$tmp/run" --policy nope >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 3 ] && grep -q "'nope'" "$tmp/err" || fail "an unknown policy: exit $rc, $(cat "$tmp/err")"
"$TIDE_BIN" ui "$tmp/run" --listen 0.0.0.0:0 >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "loopback" "$tmp/err" || fail "a public address: exit $rc, $(cat "$tmp/err")"
"$TIDE_BIN" ui "$tmp/run" --cluster 4x8 >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "GPUs" "$tmp/err" || fail "a cluster of another size: exit $rc, $(cat "$tmp/err")"
"$TIDE_BIN" ui --help | grep -q "tide ui DIR" || fail "tide ui --help"

"$TIDE_BIN" ui "$tmp/run" --policy elastic --jobs "$tmp/g/jobs.csv" --cluster 16x8:H100 \
    --listen 127.0.0.1:0 >"$tmp/ui.log" 2>&1 &
ui_pid=$!
EXTRA_PIDS+=("$ui_pid")
poll_until 10 grep -q '^listening on http://' "$tmp/ui.log" || fail "tide ui did not start: $(cat "$tmp/ui.log")"
url=$(sed -n 's/^listening on //p' "$tmp/ui.log" | head -1)

# the busiest queue of the run (from its timeline), and a time 4 h away
read -r at at2 < <(python3 - "$tmp/run/timeline.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["policy"] == "elastic"]
best = max(rows, key=lambda r: (float(r["queue_jobs"]), -float(r["time_s"])))
t = int(float(best["time_s"])) + 60
end = int(float(rows[-1]["time_s"]))
print(t, t - 4 * 3600 if t + 4 * 3600 > end else t + 4 * 3600)
PY
)
curl -s "$url/v1/jobs?state=queued&at=$at" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"]
assert j and all(x["reason"] and x["position"] == i + 1 for i, x in enumerate(j)), j[:3]
' || fail "GET /v1/jobs?state=queued&at=$at: no queue with reasons and positions"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/nodes?at=x")" = 400 ] || fail "?at=x is not a 400"

mkdir -p "$tmp/profile"
CHROMIUM=$(command -v chromium) UI_URL=$url AT=$at AT2=$at2 SHOT=$shot PROFILE=$tmp/profile \
    timeout 120 node "$here/ui/replay.js" >"$tmp/node.out" 2>&1
rc=$?
cat "$tmp/node.out"
[ "$rc" = 0 ] || fail "the browser checks failed (node exit $rc)"
[ -s "$shot" ] && echo "ui_replay: screenshot $shot"
finish ui_replay
