#!/usr/bin/env bash
# End-to-end: measured GPU power pulled from Prometheus (--power-query). A
# stand-in Prometheus (python3, loopback) answers /api/v1/query with a
# DCGM-style vector: DCGM_FI_DEV_POWER_USAGE{Hostname="nodeN",gpu="K"} for
# every GPU of a 4x8 H100 cluster (one power domain, budget 19040 W = 85% of
# nameplate), at the wattage in a file, plus bad series (NaN, negative, huge,
# an unknown host, an unknown GPU).
#  - declared model (training 650 W): of a P2 and a P3 job of 16 GPUs each,
#    the P3 job is capped (16 capped GPUs);
#  - the stand-in says 500 W: the training draw is measured (GET /v1/power:
#    source measured, 500 W; idle stays declared), the bad series are counted
#    and logged, never fed; 32 x 500 W fit the budget: the cap is lifted;
#  - SIGKILL, restart with the stand-in down: the pull failure is logged, the
#    measured model comes back (from the recorded power_model event, via a
#    snapshot), no cap returns, replay matches;
#  - the stand-in back at 690 W: the model moves up (smoothed) and the P3 job
#    is capped again;
#  - SIGKILL, restart replaying the whole log (no snapshot, no --power-query):
#    the same model, no replay mismatch;
#  - a serving replica at load 0.5 drawing 450 W and free GPUs at 100 W: the
#    serving line (declared 200..600 W) shifts to 250..650 W, idle is 100 W,
#    and the replica's draw while it warmed up is the checkpoint draw.
# Environment: TIDE_BIN. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

port=$(free_port)
echo 500 >"$tmp/watts"
cat >"$tmp/dcgm.py" <<'PY'
import http.server, json, os, sys, time
port, wfile = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        # the file: "W" (every GPU) or "HOST=W ... *=W" (per node, * the rest)
        spec = open(wfile).read().split()
        ws = dict(t.split("=", 1) if "=" in t else ("*", t) for t in spec)
        w = ws.get("*", "0")
        now = time.time()
        def s(host, gpu, v):
            return {"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "Hostname": host,
                               "gpu": str(gpu), "modelName": "NVIDIA H100 80GB HBM3"},
                    "value": [now, v]}
        nodes = int(os.environ.get("DCGM_NODES", "4"))
        res = [s("node%d" % n, g, ws.get("node%d" % n, w)) for n in range(nodes) for g in range(8)]
        res += [s("node1", 0, "NaN"), s("node1", 1, "-5"), s("node2", 2, "1e9"),
                s("ghost", 0, w), s("node0", 9, w)]
        body = json.dumps({"status": "success",
                           "data": {"resultType": "vector", "result": res}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
start_prom() {
    python3 "$tmp/dcgm.py" "$port" "$tmp/watts" &
    PROM_PID=$!
    EXTRA_PIDS+=($PROM_PID)
    poll_until 10 curl -sf "http://127.0.0.1:$port/api/v1/query?query=x" || fail "the stand-in Prometheus did not come up"
}

cat >"$tmp/cluster.yaml" <<'Y'
groups:
  - {count: 4, gpus_per_node: 8, gpu_type: H100, power_nodes: 4, power_budget_w: 19040}
Y
ARGS=(--db "$tmp/tide.db" --cluster-file "$tmp/cluster.yaml" --speed 60 --tick 200ms --check
      --snapshot-every 3 --power-query "http://127.0.0.1:$port" --power-interval 1s)
metric() { curl -s "$SERVE_URL/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s += $2} END {print s + 0}'; }
capped_gpus_are() { [ "$(metric tide_power_capped_gpus)" = "$1" ]; }
power() { api GET /v1/power; }
# training's row of GET /v1/power
train() { power && jq_ "d['types'][0]['states']['training']['$1']"; }
train_measured_is() { [ "$(train source)" = measured ] && python3 -c "import sys; sys.exit(0 if abs($(train measured_w) - $1) < 0.01 else 1)"; }
train_above() { [ "$(train source)" = measured ] && python3 -c "import sys; sys.exit(0 if $(train measured_w) > $1 else 1)"; }

# --- 1. the declared model caps the P3 job (the stand-in is not up yet)
serve_start power1 "${ARGS[@]}" || { fail "daemon did not start"; finish serve_power_pull; }
poll_until 20 grep -q "power pull: .*keeping the power model" "$SERVE_LOG" || fail "a down Prometheus is not logged"
power
[ "$API_STATUS" = 200 ] || fail "GET /v1/power: $API_STATUS $API_BODY"
[ "$(jq_ "d['up']")" = False ] || fail "the pull is not reported down: $API_BODY"
[ "$(jq_ "d['types'][0]['states']['training']['source']")" = declared ] || fail "not declared at first: $API_BODY"
[ "$(jq_ "d['types'][0]['states']['training']['declared_w']")" = 650.0 ] || fail "declared training draw: $API_BODY"
for j in p2:2 p3:3; do
    api POST /v1/jobs "{\"job_id\":\"${j%:*}\",\"gpus\":16,\"priority\":${j#*:},\"duration_s\":360000}"
    [ "$API_STATUS" = 201 ] || fail "submit ${j%:*}: $API_STATUS $API_BODY"
done
poll_until 30 capped_gpus_are 16 || fail "the P3 job is not capped under the declared model (capped $(metric tide_power_capped_gpus))"
[ "$(metric tide_power_budget_watts)" = 19040 ] || fail "budget: $(metric tide_power_budget_watts)"

# --- 2. measured 500 W: the training draw replaces the declared one, the cap goes
start_prom
poll_until 30 train_measured_is 500 || fail "the measured training draw did not reach the model: $API_BODY"
power
[ "$(jq_ "d['up']")" = True ] || fail "the pull is not reported up: $API_BODY"
[ "$(jq_ "d['types'][0]['states']['idle']['source']")" = declared ] || fail "idle (no free GPU) is not declared: $API_BODY"
[ "$(jq_ "d['types'][0]['states']['training']['used_w']")" = 500.0 ] || fail "the engine does not use the measured draw: $API_BODY"
[ "$(jq_ "d['series']['refused']")" = 3 ] || fail "NaN, negative and huge series not refused: $API_BODY"
[ "$(jq_ "d['series']['unknown']")" = 2 ] || fail "unknown host and GPU not counted: $API_BODY"
[ "$(jq_ "d['model_at_s'] is not None")" = True ] || fail "no model time: $API_BODY"
grep -q "power pull: .*3 refused.*2 of unknown hosts" "$SERVE_LOG" || fail "bad series not logged"
poll_until 30 capped_gpus_are 0 || fail "the cap was not lifted under the measured model (capped $(metric tide_power_capped_gpus))"
curl -s "$SERVE_URL/metrics" | grep -q '^tide_power_model_watts{type="H100",state="training",source="measured"} 500$' ||
    fail "tide_power_model_watts measured: $(curl -s "$SERVE_URL/metrics" | grep tide_power_model_watts)"
curl -s "$SERVE_URL/metrics" | grep -q '^tide_power_model_watts{type="H100",state="training",source="declared"} 650$' ||
    fail "tide_power_model_watts declared"
api GET "/v1/events?limit=1000"
grep -q '"power_model"' <<<"$API_BODY" || fail "no power_model event in the log"

# --- 3. SIGKILL and restart with Prometheus down: the measured model comes back
serve_kill9
kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null
serve_start power2 "${ARGS[@]}" || { fail "restart failed"; finish serve_power_pull; }
grep -q "replayed .* steps after the snapshot of step" "$SERVE_LOG" || fail "the restart did not use a snapshot: $(grep recovered "$SERVE_LOG")"
train_measured_is 500 || fail "the measured model did not survive the restart: $API_BODY"
[ "$(metric tide_power_budget_watts)" = 19040 ] || fail "the budget did not survive the restart: $(metric tide_power_budget_watts)"
capped_gpus_are 0 || fail "a cap came back after the restart (capped $(metric tide_power_capped_gpus))"
[ "$(metric tide_replay_mismatches_total)" = 0 ] || fail "replay mismatches after the restart"
poll_until 20 grep -q "power pull: .*keeping the power model" "$SERVE_LOG" || fail "a down Prometheus is not logged after the restart"
train_measured_is 500 || fail "the model changed while Prometheus was down: $API_BODY"

# --- 4. the stand-in back at 690 W: the model moves up, smoothed, and the P3 job is capped again
echo 690 >"$tmp/watts"
start_prom
poll_until 30 train_above 500 || fail "the model did not follow the new draws: $API_BODY"
python3 -c "import sys; sys.exit(0 if $(train measured_w) < 690 else 1)" || fail "the first pull after the restart was not smoothed: $API_BODY"
poll_until 60 capped_gpus_are 16 || fail "the P3 job was not capped again (capped $(metric tide_power_capped_gpus))"
[ "$(metric tide_replay_mismatches_total)" = 0 ] || fail "replay mismatches"

# --- 5. a restart that replays the whole log (no snapshot), without --power-query: the
# power_model events replay to the same model
kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null
downs=$(grep -c "keeping the power model" "$SERVE_LOG")
more_downs() { [ "$(grep -c "keeping the power model" "$SERVE_LOG")" -gt "$downs" ]; }
poll_until 20 more_downs || fail "the second outage is not logged"
want=$(train measured_w)
serve_kill9
serve_start power3 --db "$tmp/tide.db" --cluster-file "$tmp/cluster.yaml" --speed 60 --tick 200ms \
    --check --snapshot-every 0 || { fail "second restart failed"; finish serve_power_pull; }
grep -q "replayed [0-9]* steps;" "$SERVE_LOG" || fail "not a full replay: $(grep recovered "$SERVE_LOG")"
[ "$(train measured_w)" = "$want" ] || fail "full replay gave training $(train measured_w) W, not $want W"
[ "$(metric tide_replay_mismatches_total)" = 0 ] || fail "replay mismatches after a full replay"
power
[ "$(jq_ "d['query']")" = None ] || fail "a query without --power-query: $API_BODY"
poll_until 30 capped_gpus_are 16 || fail "the P3 job is not capped after the full replay (capped $(metric tide_power_capped_gpus))"
serve_stop

# --- 6. serving: a replica's draw fits the serving line at its service's load; free GPUs idle
# (the stand-in comes up once the warming replica's node is known: its first serving sample
# is then the replica's draw at load 0.5)
export DCGM_NODES=2
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,600\n' >"$tmp/services.csv"
serve_start serving --db "$tmp/serving.db" --cluster 2x8:H100 --services "$tmp/services.csv" \
    --speed 60 --tick 200ms --check --power-query "http://127.0.0.1:$port" --power-interval 1s ||
    { fail "serving daemon did not start"; finish serve_power_pull; }
api POST /v1/services/chat/demand '{"rps": 50}'
[ "$API_STATUS" = 200 ] || fail "demand: $API_STATUS $API_BODY"
replica_node() {
    api GET /v1/nodes
    rnode=$(jq_ "([n['node'] for n in d['nodes'] if any(str(g.get('owner') or '').startswith('replica:') for g in n['gpus'])] + [''])[0]")
    [ -n "$rnode" ]
}
poll_until 30 replica_node || fail "no replica placed: $API_BODY"
# demand 50 rps on one ready replica of 100 rps: load 0.5; the declared line (200..600 W) says
# 400 W there, the replica's GPUs draw 450 W: the line shifts to 250..650 W
echo "node$rnode=450 *=100" >"$tmp/watts"
start_prom
ready() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = 1 ]; }
poll_until 30 ready || fail "the replica did not get ready: $API_BODY"
row() { power && jq_ "d['types'][0]['states']['$1']['$2']"; }
serving_fitted() { [ "$(row serving_unloaded source)" = measured ] && [ "$(row serving_unloaded measured_w)" = 250.0 ] && [ "$(row serving_full measured_w)" = 650.0 ]; }
poll_until 30 serving_fitted || fail "serving line not fitted: unloaded $(row serving_unloaded measured_w), full $(row serving_full measured_w)"
[ "$(row idle source)" = measured ] || fail "idle not measured"
python3 -c "import sys; sys.exit(0 if abs($(row idle measured_w) - 100) < 0.01 else 1)" || fail "idle: $(row idle measured_w)"
[ "$(row training source)" = declared ] || fail "training measured without training"
[ "$(row checkpointing measured_w)" = 450.0 ] || fail "the warming replica's draw is not the checkpoint draw: $(row checkpointing measured_w)"
serve_stop
finish serve_power_pull
