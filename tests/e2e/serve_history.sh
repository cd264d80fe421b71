#!/usr/bin/env bash
# End-to-end: demand history at start (docs/serve.md "Demand history").
# The day: 50 rps at night, 200 rps from 08:00 to 20:00; the daemon starts at
# 07:50 (engine time 0), 10 minutes before the rise; one replica serves 100 rps.
#  1. --demand-history FILE (3 days, Unix-time stamps, last row = now) with
#     --backend sim --speed 60: at minute one GET /v1/services already
#     forecasts ~200 rps over the next hour, and 2 replicas are on their way
#     before 08:00; the same start without history forecasts the current 50.
#  2. A restart (kill -9) replays the stored history: same forecast, no replay
#     mismatch, even without the flag; a changed file is reported, not used.
#  3. Bad files are refused with a clear message (exit 2 or 3).
#  4. --demand-query: a Prometheus range query (a python3 stand-in serving
#     /api/v1/query and /api/v1/query_range) preloads the last days; a failing
#     range query only warns. With Debian's prometheus + promtool installed, a
#     REAL Prometheus backfilled with 3 days (promtool tsdb
#     create-blocks-from openmetrics) answers the range query too.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,300
CSV
NOW_PHASE=$((7 * 3600 + 50 * 60)) # engine time 0 is 07:50
cat >"$tmp/day.py" <<'PY'
def daily(phase):
    h = (phase % 86400) // 3600
    return 200.0 if 8 <= h < 20 else 50.0
PY
# 3 days up to now, one row every 5 min, stamped in Unix time
python3 - "$tmp" "$NOW_PHASE" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from day import daily
now_phase, origin = int(sys.argv[2]), 1700000000
with open(sys.argv[1] + "/history.csv", "w") as f:
    f.write("time_s,service,rps\n")
    for back in range(3 * 86400, -1, -300):
        f.write(f"{origin - back},chat,{daily(now_phase - back):g}\n")
PY

svc() { api GET /v1/services; jq_ "d['services'][0]['$1']"; }
now_s() { api GET /healthz; jq_ "d['now_s']"; }
ge() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }
lt() { python3 -c "import sys; sys.exit(0 if float('$1') < float('$2') else 1)"; }
on_the_way() { # N: ready + warming >= N
    api GET /v1/services
    ge "$(jq_ "d['services'][0]['ready'] + d['services'][0]['warming']")" "$1"
}
COMMON=(--cluster 4x8:H100 --services "$tmp/services.csv" --policy elastic --speed 60 --tick 200ms)

# ------------------------------------------------------------ 1. the file
serve_start warm --db "$tmp/warm.db" "${COMMON[@]}" --demand-history "$tmp/history.csv" || exit 1
api POST /v1/services/chat/demand '{"rps": 50}'
peak=$(svc forecast_peak_rps)
t=$(now_s)
lt "$t" 600 || fail "the first look came after the rise (engine time $t)"
ge "$peak" 190 || fail "with 3 days of history, forecast_peak_rps at t=$t is $peak (want ~200: the 08:00 rise)"
grep -q "demand history: chat: 865 points from file, t -259200..0" "$SERVE_LOG" ||
    fail "the daemon did not log the history it loaded: $(grep -i history "$SERVE_LOG")"
poll_until 20 on_the_way 2 || fail "no second replica on its way: $API_BODY"
t=$(now_s)
lt "$t" 600 || fail "the second replica came only at engine time $t (the rise is at 600)"
echo "warm: forecast $peak rps at start; 2 replicas on their way at t=$t (rise at 600)"
peak_warm=$peak
serve_kill9 2>/dev/null || { kill -KILL "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null; }

serve_start cold --db "$tmp/cold.db" "${COMMON[@]}" || exit 1
api POST /v1/services/chat/demand '{"rps": 50}'
peak=$(svc forecast_peak_rps)
lt "$peak" 100 || fail "without history forecast_peak_rps is $peak (want the current 50)"
echo "cold: forecast $peak rps at start"
serve_stop

# ------------------------------------------------------------ 2. restarts replay it
serve_start warm2 --db "$tmp/warm.db" --speed 60 --tick 200ms || exit 1
peak=$(svc forecast_peak_rps)
ge "$peak" 190 || fail "after a kill -9 and a restart without the flag, forecast_peak_rps is $peak (was $peak_warm)"
curl -s "$SERVE_URL/metrics" | grep -q '^tide_replay_mismatches_total 0$' ||
    fail "replay mismatches after the restart: $(curl -s "$SERVE_URL/metrics" | grep replay_mismatch)"
serve_stop
sed -i 's/,200$/,900/' "$tmp/history.csv"
serve_start warm3 --db "$tmp/warm.db" --speed 60 --tick 200ms --demand-history "$tmp/history.csv" || exit 1
grep -q "history.csv changed since the database stored its history" "$SERVE_LOG" ||
    fail "a changed history file was not reported: $(grep -i history "$SERVE_LOG")"
peak=$(svc forecast_peak_rps)
lt "$peak" 300 || fail "the changed file was used after all (forecast_peak_rps $peak)"
serve_stop

# ------------------------------------------------------------ 3. bad files
bad_file() { # NAME CONTENT WANT...
    local name=$1 content=$2 out rc
    shift 2
    printf '%b' "$content" >"$tmp/$name.csv"
    out=$("$TIDE_BIN" serve --listen 127.0.0.1:0 --db "$tmp/$name.db" "${COMMON[@]}" \
        --demand-history "$tmp/$name.csv" 2>&1 </dev/null)
    rc=$?
    [ "$rc" = 2 ] || [ "$rc" = 3 ] || fail "$name: exit $rc (want 2 or 3): $out"
    for w in "$@"; do
        [[ $out == *"$w"* ]] || fail "$name: message lacks '$w': $out"
    done
}
bad_file empty 'time_s,service,rps\n' "--demand-history" "no rows"
bad_file unknown 'time_s,service,rps\n0,chat,5\n60,chatt,5\n' "unknown service 'chatt'"
bad_file order 'time_s,service,rps\n600,chat,5\n0,chat,5\n' "time order"
bad_file negative 'time_s,service,rps\n0,chat,-5\n' "rps"
out=$("$TIDE_BIN" serve --db "$tmp/x.db" --demand-history-days -1 2>&1)
[[ $out == *"--demand-history-days"* ]] || fail "--demand-history-days -1 accepted: $out"
"$TIDE_BIN" serve --help | grep -q -- "--demand-history FILE" || fail "--help lacks --demand-history"

# ------------------------------------------------------------ 4. Prometheus range queries
pport=$(free_port)
: >"$tmp/requests.log"
cat >"$tmp/fakeprom.py" <<'PY'
import http.server, json, sys, time, urllib.parse
sys.path.insert(0, sys.argv[1])
from day import daily
port, now_phase, speed = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        open(sys.argv[1] + "/requests.log", "a").write(self.path + "\n")
        if u.path == "/api/v1/query":
            return self.reply(200, {"status": "success", "data": {"resultType": "vector",
                              "result": [{"metric": {}, "value": [time.time(), "50"]}]}})
        if u.path == "/api/v1/query_range" and "broken" in q.get("query", [""])[0]:
            return self.reply(400, {"status": "error", "errorType": "bad_data", "error": "broken on purpose"})
        if u.path == "/api/v1/query_range":
            start, end, step = (float(q[k][0]) for k in ("start", "end", "step"))
            vals, t = [], start
            while t <= end + 1e-9:
                vals.append([round(t, 3), "%g" % daily(now_phase + (t - end) * speed)])
                t += step
            # two series: the daemon sums them (100 + 100 = the 200 of the day)
            half = [[x, "%g" % (float(v) / 2)] for x, v in vals]
            return self.reply(200, {"status": "success", "data": {"resultType": "matrix", "result": [
                {"metric": {"pod": "a"}, "values": half}, {"metric": {"pod": "b"}, "values": half}]}})
        self.reply(404, {"status": "error", "error": "no such path"})
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
python3 "$tmp/fakeprom.py" "$tmp" "$pport" "$NOW_PHASE" 60 &
EXTRA_PIDS+=($!)
poll_until 10 curl -sf "http://127.0.0.1:$pport/api/v1/query?query=x" || fail "fake prometheus did not come up"
Q="http://127.0.0.1:$pport/api/v1/query?query=sum(rate(requests_total[1m]))"
serve_start prom --db "$tmp/prom.db" "${COMMON[@]}" --demand-query "chat=$Q" --demand-history-days 3 || exit 1
peak=$(svc forecast_peak_rps)
ge "$peak" 190 || fail "with a range query of 3 days, forecast_peak_rps is $peak (want ~200)"
grep -q 'query_range?query=sum(rate(requests_total\[1m\]))&start=.*&step=1.000$' "$tmp/requests.log" ||
    fail "range query not as expected (step 60 engine s = 1 wall s at --speed 60): $(cat "$tmp/requests.log" | head -3)"
grep -q "demand history: chat: .* points from prometheus" "$SERVE_LOG" || fail "history from prometheus not logged"
echo "prometheus (stand-in): forecast $peak rps at start"
serve_stop

serve_start promoff --db "$tmp/promoff.db" "${COMMON[@]}" --demand-query "chat=$Q" --demand-history-days 0 || exit 1
peak=$(svc forecast_peak_rps)
lt "$peak" 100 || fail "--demand-history-days 0 still loaded history (forecast_peak_rps $peak)"
serve_stop

serve_start prombad --db "$tmp/prombad.db" "${COMMON[@]}" \
    --demand-query "chat=http://127.0.0.1:$pport/api/v1/query?query=broken" || exit 1
grep -q "range query for chat failed (HTTP 400: range query failed: broken on purpose)" "$SERVE_LOG" ||
    fail "a failed range query was not reported: $(grep -i history "$SERVE_LOG")"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz $API_STATUS after a failed range query"
serve_stop

# ------------------------------------------------------------ 4b. a real Prometheus, backfilled
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    # 3 days up to 2 minutes ago, one sample a minute; now (wall) is 07:50 of the day
    python3 - "$tmp" "$NOW_PHASE" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
from day import daily
now_phase, now = int(sys.argv[2]), int(time.time())
with open(sys.argv[1] + "/backfill.om", "w") as f:
    f.write("# TYPE chat_rps gauge\n")
    for back in range(3 * 86400, 119, -60):
        f.write(f"chat_rps {daily(now_phase - back):g} {now - back}\n")
    f.write("# EOF\n")
PY
    mkdir -p "$tmp/pdata"
    if promtool tsdb create-blocks-from openmetrics "$tmp/backfill.om" "$tmp/pdata" >"$tmp/backfill.log" 2>&1; then
        rport=$(free_port)
        printf 'global:\n  scrape_interval: 1m\n' >"$tmp/prom.yml"
        prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/pdata" \
            --web.listen-address="127.0.0.1:$rport" >"$tmp/prometheus.log" 2>&1 &
        rpid=$!
        EXTRA_PIDS+=("$rpid")
        if poll_until 30 curl -sf "http://127.0.0.1:$rport/-/ready"; then
            serve_start real --db "$tmp/real.db" --cluster 4x8:H100 --services "$tmp/services.csv" \
                --policy elastic --speed 1 --tick 1s --demand-history-days 3 \
                --demand-query "chat=http://127.0.0.1:$rport/api/v1/query?query=sum(chat_rps)" || exit 1
            peak=$(svc forecast_peak_rps)
            ge "$peak" 190 || fail "real prometheus: forecast_peak_rps $peak (want ~200); $(grep -i history "$SERVE_LOG")"
            grep -q "demand history: chat: .* points from prometheus" "$SERVE_LOG" ||
                fail "real prometheus: no history loaded: $(grep -i history "$SERVE_LOG")"
            echo "prometheus (real, backfilled): forecast $peak rps at start"
            serve_stop
        else
            fail "prometheus did not become ready: $(tail -5 "$tmp/prometheus.log")"
        fi
        kill -TERM "$rpid" 2>/dev/null
        poll_until 20 sh -c "! kill -0 $rpid 2>/dev/null || grep -q ' Z ' /proc/$rpid/stat" || kill -KILL "$rpid"
        wait "$rpid" 2>/dev/null
    else
        echo "note: promtool could not backfill ($(tail -1 "$tmp/backfill.log")): real Prometheus part skipped" >&2
    fi
else
    echo "note: prometheus/promtool not installed: real Prometheus part skipped" >&2
fi
finish serve_history
