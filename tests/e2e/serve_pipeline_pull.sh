#!/usr/bin/env bash
# End-to-end: a canary's figures pulled from Prometheus, and webhook retries.
#  - a model declares slo_query/error_query (Prometheus instant-query URLs with
#    {version}); a stand-in Prometheus (python3, loopback) answers from files;
#  - version 1's canary pulls SLO 0.999: it is promoted; version 2's pulls 0.5:
#    it is rolled back within one gate interval of its canary starting;
#  - while the stand-in is down the pull is reported once and nothing is fed;
#  - the webhook receiver fails every event's first delivery (HTTP 500): each
#    event still arrives, on a retry;
#  - bad links are refused; the links and a rollout in flight (paused) survive
#    a restart: it goes on at the same step without a new evaluation.
# Environment: TIDE_BIN. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,2,100,4,60
CSV

# stand-in Prometheus: query ...version="N"... -> the value in $dir/slo_vN (or err_vN),
# a fresh sample; no file -> an empty vector
cat >"$tmp/prom.py" <<'PY'
import http.server, json, os, re, sys, time, urllib.parse
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("query", [""])[0]
        m = re.match(r'(\w+)\{version="(\d+)"\}', q)
        f = os.path.join(d, "%s_v%s" % m.groups()) if m else ""
        res = []
        if f and os.path.exists(f):
            res = [{"metric": {}, "value": [time.time(), open(f).read().strip()]}]
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": res}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
mkdir -p "$tmp/prom"
python3 "$tmp/prom.py" "$tmp/prom" 0 >"$tmp/prom.port" &
PROM_PID=$!
EXTRA_PIDS+=($PROM_PID)
poll_until 10 test -s "$tmp/prom.port" || fail "the stand-in Prometheus did not start"
PP=$(head -1 "$tmp/prom.port")
Q="http://127.0.0.1:$PP/api/v1/query?query="
SLOQ="${Q}slo%7Bversion%3D%22{version}%22%7D"
ERRQ="${Q}err%7Bversion%3D%22{version}%22%7D"

# webhook receiver: the first POST of each (event, version) gets a 500
cat >"$tmp/hook.py" <<'PY'
import http.server, json, sys
out = open(sys.argv[1], "a")
seen = set()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        b = json.loads(body)
        key = (b["event"], b["version"], b["detail"])
        first = key not in seen
        seen.add(key)
        out.write(json.dumps({"event": b["event"], "version": b["version"], "failed": first}) + "\n")
        out.flush()
        self.send_response(500 if first else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$tmp/hook.py" "$tmp/hooks.jsonl" >"$tmp/hook.port" &
EXTRA_PIDS+=($!)
poll_until 10 test -s "$tmp/hook.port" || fail "the webhook receiver did not start"
HOOK="http://127.0.0.1:$(head -1 "$tmp/hook.port")/tide"

serve_start pull --db "$tmp/tide.db" --cluster 4x8 --services "$tmp/services.csv" --speed 300 --check ||
    { fail "daemon did not start"; finish serve_pipeline_pull; }

model() { api GET "/v1/models/m?history=200"; }
vstate() { model; jq_ "d['versions'][$1 - 1]['state']"; }
state_is() { [ "$(vstate "$1")" = "$2" ]; }

# --- bad links are refused
api POST /v1/models '{"name":"m","service":"chat","slo_query":"ftp://x"}'
[ "$API_STATUS" = 400 ] && grep -q slo_query <<<"$API_BODY" || fail "an ftp slo_query accepted: $API_STATUS $API_BODY"
api POST /v1/models '{"name":"m","service":"chat","error_query":7}'
[ "$API_STATUS" = 400 ] || fail "a numeric error_query accepted: $API_STATUS $API_BODY"

api POST /v1/models '{"name":"m","service":"chat","gates":["acc>=0.5"],"steps":[50,100],"hold_s":120,"gate_interval_s":60,"slo_min":0.99,"error_max":0.05,"webhook":"'"$HOOK"'","slo_query":"'"$SLOQ"'","error_query":"'"$ERRQ"'"}'
[ "$API_STATUS" = 201 ] || fail "define model: $API_STATUS $API_BODY"
model
[ "$(jq_ 'd["slo_query"]')" = "$SLOQ" ] || fail "GET does not show the slo_query: $API_BODY"

# --- version 1: the stand-in is down at first (the pull is reported, nothing fed), then good figures
kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null
echo 0.999 >"$tmp/prom/slo_v1"
echo 0.001 >"$tmp/prom/err_v1"
api POST /v1/models/m/versions '{"manifest_uri":"s3://m/1","step":1}'
[ "$API_STATUS" = 201 ] || fail "register v1: $API_STATUS $API_BODY"
api POST /v1/models/m/versions/1/metrics '{"metrics":{"acc":0.9}}'
[ "$API_STATUS" = 200 ] || fail "metrics v1: $API_STATUS $API_BODY"
poll_until 30 grep -q "model m v1: canary pull failed (slo_query" "$SERVE_LOG" || fail "a down Prometheus is not reported"
[ "$(grep -c "canary pull failed" "$SERVE_LOG")" = 1 ] || fail "the same pull failure logged more than once"
python3 "$tmp/prom.py" "$tmp/prom" "$PP" >/dev/null &
EXTRA_PIDS+=($!)
poll_until 30 grep -q "model m v1: canary pulled: slo 0.999, errors 0.001" "$SERVE_LOG" || fail "v1's figures not pulled: $(tail -5 "$SERVE_LOG")"
poll_until 60 state_is 1 serving || fail "v1 with good pulled figures not promoted: $API_BODY"

# --- version 2 regresses: pulled SLO 0.5 -> rolled back within one gate interval
echo 0.5 >"$tmp/prom/slo_v2"
echo 0.001 >"$tmp/prom/err_v2"
api POST /v1/models/m/versions '{"manifest_uri":"s3://m/2","step":2}'
api POST /v1/models/m/versions/2/metrics '{"metrics":{"acc":0.9}}'
poll_until 60 state_is 2 rolled-back || fail "v2 with a pulled SLO of 0.5 not rolled back: $API_BODY"
model
# pulled once per wall tick (1 s = 300 engine s here): judged from the pull that brought it
t_pull=$(sed -n 's/^tide serve: \[t=\([0-9]*\)\] model m v2: canary pulled: slo 0.5,.*/\1/p' "$SERVE_LOG" | head -1)
t_rb=$(jq_ '[h["time_s"] for h in d["history"] if h["kind"] == "rollback"][0]')
[ -n "$t_pull" ] || fail "v2's figures never pulled: $(grep 'model m v2' "$SERVE_LOG" | tail -3)"
[ $((t_rb - ${t_pull:-0})) -le 60 ] || fail "rolled back $((t_rb - t_pull)) s after SLO 0.5 was pulled (gate interval 60 s)"
[ "$(jq_ 'd["aliases"]["serving"]')" = 1 ] || fail "v1 does not serve after the rollback: $API_BODY"

# --- every event reached the webhook although each first delivery failed
hooks_ok() {
    python3 - "$tmp/hooks.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
failed = {(r["event"], r["version"]) for r in rows if r["failed"]}
ok = {(r["event"], r["version"]) for r in rows if not r["failed"]}
need = {("registered", 1), ("promoted", 1), ("registered", 2), ("rollback", 2)}
if not need <= failed:
    sys.exit("first deliveries not seen: %s" % sorted(need - failed))
sys.exit(0 if need <= ok else "not retried: %s" % sorted(need - ok))
PY
}
poll_until 30 hooks_ok || fail "webhook retries: $(hooks_ok 2>&1)"

# --- a rollout in flight goes on after a restart (paused here so that it stays put)
echo 0.999 >"$tmp/prom/slo_v3"
echo 0.001 >"$tmp/prom/err_v3"
api POST /v1/models/m/versions '{"manifest_uri":"s3://m/3","step":3}'
api POST /v1/models/m/versions/3/metrics '{"metrics":{"acc":0.9}}'
v3_routed() { model; [ "$(jq_ 'd["rollout"] is not None and d["rollout"]["version"] == 3 and d["rollout"]["weight"] > 0')" = True ]; }
poll_until 60 v3_routed || fail "v3's canary never routed: $API_BODY"
api POST /v1/models/m/rollout/pause
[ "$API_STATUS" = 200 ] || fail "pause: $API_STATUS $API_BODY"
model
step_before=$(jq_ 'd["rollout"]["step"]')
serve_stop
serve_start pull2 --db "$tmp/tide.db" --cluster 4x8 --services "$tmp/services.csv" --speed 300 --check || fail "restart"
model
[ "$(jq_ 'd["error_query"]')" = "$ERRQ" ] && [ "$(jq_ 'd["webhook"]')" = "$HOOK" ] || fail "links after a restart: $API_BODY"
[ "$(jq_ 'd["rollout"] is not None and d["rollout"]["version"] == 3 and d["rollout"]["paused"]')" = True ] ||
    fail "the rollout of v3 did not survive the restart: $API_BODY"
[ "$(jq_ 'd["rollout"]["step"]')" = "$step_before" ] || fail "the rollout restarted at another step: $API_BODY"
[ "$(jq_ 'd["versions"][2]["state"]')" = canary ] || fail "v3 is not in canary after the restart: $API_BODY"
grep -q "model m: the rollout of version 3 goes on at step $step_before of 2" "$SERVE_LOG" || fail "no log line for the resumed rollout"
api POST /v1/models/m/rollout/resume
[ "$API_STATUS" = 200 ] || fail "resume: $API_STATUS $API_BODY"
poll_until 60 state_is 3 serving || fail "v3 not promoted after the restart: $API_BODY"
model
[ "$(jq_ 'sum(1 for h in d["history"] if h["version"] == 3 and h["detail"] == "canary")')" = 1 ] ||
    fail "v3's canary started over after the restart: $API_BODY"
grep -Eq "invariant|above its need" "$SERVE_LOG" && fail "an invariant broke: $(grep -E 'invariant|above its need' "$SERVE_LOG" | head -3)"
serve_stop
finish serve_pipeline_pull
