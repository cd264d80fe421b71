#!/usr/bin/env bash
# End-to-end: demand pulled from a Prometheus query (--demand-query). A small
# stand-in for Prometheus's HTTP API (python3, loopback) answers
# /api/v1/query with a vector whose value the test sets through a file:
#  - the daemon feeds the value to the engine (GET /v1/services shows it);
#  - when the source fails, the daemon reports it (tide_demand_source_up 0 in
#    /metrics) and keeps the last value and its forecast: never zero;
#  - when the source comes back, the new value flows again.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

port=$(free_port)
echo 120 >"$tmp/value"
cat >"$tmp/fakeprom.py" <<'PY'
import http.server, json, sys, time
port, valfile = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        v = open(valfile).read().strip()
        if v == "fail":
            self.send_response(500); self.end_headers(); return
        body = json.dumps({"status": "success", "data": {"resultType": "vector",
               "result": [{"metric": {}, "value": [time.time(), v]}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
python3 "$tmp/fakeprom.py" "$port" "$tmp/value" &
EXTRA_PIDS+=($!)
poll_until 10 curl -sf "http://127.0.0.1:$port/api/v1/query?query=x" || fail "fake prometheus did not come up"

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,300
CSV
serve_start dq --db "$tmp/tide.db" --cluster 4x8:H100 --services "$tmp/services.csv" \
    --policy elastic --speed 60 --tick 200ms \
    --demand-query "chat=http://127.0.0.1:$port/api/v1/query?query=sum(rate(requests_total[1m]))" || exit 1

demand_is() { api GET /v1/services; [ "$(jq_ 'd["services"][0]["demand_rps"]')" = "$1" ]; }
source_up_is() {
    curl -s "$SERVE_URL/metrics" | grep -q "^tide_demand_source_up{service=\"chat\"} $1\$"
}
poll_until 20 demand_is 120.0 || poll_until 5 demand_is 120 || fail "pulled demand did not reach the engine: $API_BODY"
poll_until 20 source_up_is 1 || fail "source not reported up: $(curl -s "$SERVE_URL/metrics" | grep demand_source)"

echo fail >"$tmp/value"
poll_until 20 source_up_is 0 || fail "failed source not reported down: $(curl -s "$SERVE_URL/metrics" | grep demand_source)"
api GET /v1/services
d=$(jq_ 'd["services"][0]["demand_rps"]')
python3 -c "import sys; sys.exit(0 if float('$d') > 0 else 1)" || fail "demand fell to $d while the source was down (must keep the last value)"

echo 250 >"$tmp/value"
poll_until 20 demand_is 250.0 || poll_until 5 demand_is 250 || fail "demand did not follow the source back: $API_BODY"
poll_until 20 source_up_is 1 || fail "source not reported up again"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz $API_STATUS"
finish serve_demand_query
