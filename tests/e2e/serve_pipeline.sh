#!/usr/bin/env bash
# End-to-end: the model pipeline through `tide serve` on the sim backend.
#  - a model is defined for service chat (gate accuracy>=0.7, canary steps
#    5,25,50,100, hold 5 min, SLO gate every minute);
#  - a training job declaring `model` and `publish: every` commits a
#    checkpoint -> version 1 is registered; its evaluation runs as a P1 tide
#    job, reports accuracy 0.8 and passes;
#  - the canary goes 5% -> 25% -> 50% -> 100% (each step recorded), the old
#    replicas are retired: every replica of the service runs version 1, and
#    while it rolled out the service never held more than its need plus one
#    step (the daemon checks it every step in debug builds);
#  - version 2's canary misses its SLO: it is rolled back automatically
#    within one gate interval, no route points to it afterwards, and version
#    1 still serves everything;
#  - the registry survives a restart; bad requests are refused clearly;
#  - every pipeline event reaches the model's webhook, signed with HMAC-SHA256.
# Environment: TIDE_BIN. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,2,100,4,60
CSV
# a webhook receiver: one JSON line per POST (its headers and body)
cat >"$tmp/hook.py" <<'PY'
import http.server, json, sys
out = open(sys.argv[1], "a")
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        out.write(json.dumps({"sig": self.headers.get("X-Tide-Signature"),
                              "event": self.headers.get("X-Tide-Event"), "body": body}) + "\n")
        out.flush()
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$tmp/hook.py" "$tmp/hooks.jsonl" >"$tmp/hook.port" &
HOOK_PID=$!
EXTRA_PIDS+=($HOOK_PID)
poll_until 10 test -s "$tmp/hook.port" || fail "the webhook receiver did not start"
HOOK="http://127.0.0.1:$(head -1 "$tmp/hook.port")/tide"
export TIDE_WEBHOOK_SECRET=s3cret

# --check: the engine's invariants and the rollout bound after every step
serve_start pipe --db "$tmp/tide.db" --cluster 4x8 --services "$tmp/services.csv" --speed 300 --check ||
    { fail "daemon did not start"; finish serve_pipeline; }

model() { api GET "/v1/models/llama?history=200"; }
vstate() { model; jq_ "d['versions'][$1 - 1]['state']"; }
state_is() { [ "$(vstate "$1")" = "$2" ]; }
routes() { api GET /v1/services/chat/routes; }

# --- define the model; bad definitions are refused
api POST /v1/models '{"name":"llama","service":"chat","steps":[5,50,40]}'
[ "$API_STATUS" = 400 ] || fail "decreasing steps accepted: $API_STATUS $API_BODY"
api POST /v1/models '{"name":"llama","service":"chat","gates":["accuracy=0.7"]}'
[ "$API_STATUS" = 400 ] || fail "a bad gate accepted: $API_STATUS $API_BODY"
api POST /v1/models '{"name":"llama","service":"chat","eval_command":"python3 eval.py","eval_gpus":2,"eval_limit_s":600,"gates":["accuracy>=0.7"],"steps":[5,25,50,100],"hold_s":300,"gate_interval_s":60,"slo_min":0.99,"webhook":"'"$HOOK"'"}'
[ "$API_STATUS" = 201 ] || fail "define model: $API_STATUS $API_BODY"
api GET /v1/models
[ "$(jq_ 'd["models"][0]["name"]')" = llama ] || fail "GET /v1/models: $API_BODY"

# --- a training job that publishes every committed checkpoint
api POST /v1/jobs '{"job_id":"train","team":"lab","priority":2,"gpus":8,"duration_s":8640000,"model":"llama","publish":"sometimes"}'
[ "$API_STATUS" = 400 ] || fail "a bad publish accepted: $API_STATUS $API_BODY"
api POST /v1/jobs '{"job_id":"train","team":"lab","priority":2,"gpus":8,"duration_s":8640000,"model":"llama","publish":"every"}'
[ "$API_STATUS" = 201 ] || fail "submit: $API_STATUS $API_BODY"
running() { api GET /v1/jobs/train; [ "$(jq_ 'd["state"]')" = running ]; }
poll_until 20 running || fail "the training job does not run: $API_BODY"
api POST /v1/jobs/train/checkpoints '{"step":100,"bytes":5000,"committed":true,"manifest":"s3://ckpt/train/100/manifest.json","digest":"sha256:aa"}'
[ "$API_STATUS" = 201 ] || fail "checkpoint: $API_STATUS $API_BODY"
model
[ "$(jq_ 'len(d["versions"])')" = 1 ] || fail "no version registered from the checkpoint: $API_BODY"
[ "$(jq_ 'd["versions"][0]["manifest_uri"]')" = s3://ckpt/train/100/manifest.json ] || fail "version 1's manifest: $API_BODY"
[ "$(jq_ 'd["versions"][0]["source_job"]')" = train ] || fail "version 1's source job: $API_BODY"

# --- its evaluation: a P1 tide job; it reports; the gate passes
evaluating() { state_is 1 evaluating; }
poll_until 20 evaluating || fail "version 1 is not evaluating: $API_BODY"
api GET /v1/jobs/eval-llama-v1
[ "$API_STATUS" = 200 ] && [ "$(jq_ 'd["priority"]')" = 1 ] || fail "no P1 evaluation job: $API_STATUS $API_BODY"
api POST /v1/models/llama/versions/1/metrics '{"metrics":{"accuracy":0.8}}'
[ "$API_STATUS" = 200 ] || fail "metrics: $API_STATUS $API_BODY"

# --- canary 5 -> 25 -> 50 -> 100, then serving
serving1() { state_is 1 serving; }
poll_until 60 serving1 || fail "version 1 does not reach serving: $API_BODY"
model
steps=$(jq_ '",".join(h["detail"].split(":")[1].strip().split("%")[0] for h in d["history"] if h["kind"] == "step" and h["version"] == 1)')
[ "$steps" = "5,25,50,100" ] || fail "rollout steps of version 1: '$steps' (history $API_BODY)"
[ "$(jq_ 'd["aliases"]["serving"]')" = 1 ] && [ "$(jq_ 'd["aliases"]["last-good"]')" = 1 ] || fail "aliases after promotion: $API_BODY"
all_v() { routes; [ "$(jq_ 'all(r["version"] == '"$1"' for r in d["replicas"]) and len(d["replicas"]) >= 4')" = True ]; }
poll_until 20 all_v 1 || fail "old replicas not all retired: $API_BODY"
routes
[ "$(jq_ 'round(sum(r["weight"] for r in d["replicas"]), 6)')" = 1.0 ] || fail "route weights do not add up to 1: $API_BODY"
[ "$(jq_ 'd["replicas"][0]["manifest_uri"]')" = s3://ckpt/train/100/manifest.json ] || fail "routes name no manifest: $API_BODY"
grep -Eq "invariant|above its need" "$SERVE_LOG" && fail "an invariant broke: $(grep -E 'invariant|above its need' "$SERVE_LOG" | head -3)"

# --- version 2 misses its SLO at the canary: rolled back within one gate interval
api POST /v1/models/llama/versions '{"manifest_uri":"s3://ckpt/train/200/manifest.json","source_job":"train","step":200,"size_bytes":5000}'
[ "$API_STATUS" = 201 ] && [ "$(jq_ 'd["version"]')" = 2 ] || fail "register version 2: $API_STATUS $API_BODY"
api POST /v1/models/llama/versions '{"manifest_uri":"s3://x","source_job":"train","step":200}'
[ "$API_STATUS" = 409 ] || fail "the same job step twice: $API_STATUS $API_BODY"
poll_until 20 state_is 2 evaluating || fail "version 2 not evaluating: $API_BODY"
"$T" model metrics llama:2 accuracy=0.81 >"$tmp/m.out" 2>&1 || fail "tide model metrics: $(cat "$tmp/m.out")"
canary_routed() { routes; [ "$(jq_ 'd["rollout"] is not None and d["rollout"]["weight"] > 0 and any(r["version"] == 2 and r["weight"] > 0 for r in d["replicas"])')" = True ]; }
poll_until 60 canary_routed || fail "version 2 never received requests: $API_BODY"
api POST /v1/models/llama/canary '{"slo":0.42,"error_rate":0.2}'
[ "$API_STATUS" = 200 ] || fail "canary report: $API_STATUS $API_BODY"
t_bad=$(jq_ 'd["reported_s"]')
poll_until 30 state_is 2 rolled-back || fail "version 2 not rolled back: $API_BODY"
model
t_rb=$(jq_ '[h["time_s"] for h in d["history"] if h["kind"] == "rollback"][0]')
[ $((t_rb - t_bad)) -le 60 ] || fail "rolled back $((t_rb - t_bad)) s after the bad report (gate interval 60 s)"
[ "$(jq_ 'd["aliases"]["serving"]')" = 1 ] || fail "version 1 does not serve after the rollback: $API_BODY"
no_v2() { routes; [ "$(jq_ 'not any(r["version"] == 2 for r in d["replicas"]) and len(d["replicas"]) >= 4')" = True ]; }
poll_until 20 no_v2 || fail "replicas of version 2 remain after the rollback: $API_BODY"
routes
[ "$(jq_ 'round(sum(r["weight"] for r in d["replicas"] if r["version"] == 1), 6)')" = 1.0 ] || fail "version 1 does not take all requests: $API_BODY"

grep -Eq "invariant|above its need" "$SERVE_LOG" && fail "an invariant broke: $(grep -E 'invariant|above its need' "$SERVE_LOG" | head -3)"

# --- the CLI
"$T" models >"$tmp/models.out" 2>&1 || fail "tide models: $(cat "$tmp/models.out")"
grep -Eq '^llama +chat +1 +0 +1 +2 ' "$tmp/models.out" || fail "tide models: $(cat "$tmp/models.out")"
"$T" model show llama:2 >"$tmp/show.out" 2>&1 && grep -q 'rolled-back' "$tmp/show.out" ||
    fail "tide model show llama:2: $(cat "$tmp/show.out")"
"$T" model show llama >"$tmp/show.out" 2>&1 && grep -q 'no rollout\|rollout: -' "$tmp/show.out" ||
    fail "tide model show llama: $(cat "$tmp/show.out")"
"$T" rollout status llama >"$tmp/ro.out" 2>&1 && grep -q 'no rollout in progress' "$tmp/ro.out" ||
    fail "tide rollout status: $(cat "$tmp/ro.out")"
"$T" rollout pause llama >/dev/null 2>&1
[ $? = 7 ] || fail "tide rollout pause without a rollout does not exit 7 (ESTATE)"
"$T" model show nope >/dev/null 2>&1
[ $? = 3 ] || fail "tide model show of an unknown model does not exit 3"
"$T" model metrics llama:x a=1 >/dev/null 2>&1
[ $? = 2 ] || fail "a bad MODEL:VERSION is not a usage error"

# --- controls and bad input
api POST /v1/models/llama/rollout/pause
[ "$API_STATUS" = 409 ] || fail "pause without a rollout: $API_STATUS $API_BODY"
api POST /v1/models/llama/rollout/jump
[ "$API_STATUS" = 400 ] || fail "an unknown rollout command: $API_STATUS $API_BODY"
api GET /v1/models/nope
[ "$API_STATUS" = 404 ] || fail "an unknown model: $API_STATUS"
api POST /v1/models/llama/versions/9/metrics '{"metrics":{"accuracy":1}}'
[ "$API_STATUS" = 404 ] || fail "metrics of an unknown version: $API_STATUS $API_BODY"

# --- the webhook saw every event, signed
hooks_ok() {
    python3 - "$tmp/hooks.jsonl" <<'PY'
import hashlib, hmac, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    want = "sha256=" + hmac.new(b"s3cret", r["body"].encode(), hashlib.sha256).hexdigest()
    if r["sig"] != want:
        sys.exit("bad signature on %s" % r["body"])
seen = {(json.loads(r["body"])["event"], json.loads(r["body"])["version"]) for r in rows}
need = {("registered", 1), ("evaluated", 1), ("step", 1), ("promoted", 1), ("registered", 2),
        ("rollback", 2)}
sys.exit(0 if need <= seen else "missing %s" % sorted(need - seen))
PY
}
poll_until 10 hooks_ok || fail "webhooks: $(hooks_ok 2>&1)"

# --- the registry survives a restart
serve_stop
serve_start pipe2 --db "$tmp/tide.db" --cluster 4x8 --services "$tmp/services.csv" --speed 300 ||
    fail "restart"
model
[ "$(jq_ '[v["state"] for v in d["versions"]]')" = '["serving", "rolled-back"]' ] || fail "states after a restart: $(jq_ '[v["state"] for v in d["versions"]]')"
[ "$(jq_ 'd["aliases"]["serving"]')" = 1 ] || fail "aliases after a restart: $API_BODY"
[ "$(jq_ 'd["versions"][0]["metrics"]["accuracy"]')" = 0.8 ] || fail "metrics after a restart: $API_BODY"
# a model without an evaluation round-trips; a damaged stored row is skipped with a
# log line, never a daemon that cannot start
api POST /v1/models '{"name":"noeval","service":"chat","gates":["acc>=0.5"]}'
[ "$API_STATUS" = 201 ] || fail "create a model without eval: HTTP $API_STATUS $API_BODY"
serve_stop
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE pipeline SET value = ? WHERE kind = ? AND key = ?", ("{bad", "model", "llama")); c.commit()' "$tmp/tide.db" ||
    fail "damage the stored model"
serve_start pipe3 --db "$tmp/tide.db" --cluster 4x8 --services "$tmp/services.csv" --speed 300 ||
    fail "restart with a damaged model row"
grep -q 'pipeline: stored model llama skipped' "$SERVE_LOG" || fail "no log line for the damaged row"
api GET /v1/models/noeval
[ "$API_STATUS" = 200 ] || fail "the model without eval after a restart: HTTP $API_STATUS"
serve_stop
kill "$HOOK_PID" 2>/dev/null
wait "$HOOK_PID" 2>/dev/null
finish serve_pipeline
