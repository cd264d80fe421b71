#!/usr/bin/env bash
# End-to-end: checkpoint reports from any gang of an elastic job, across a
# shrink AND a grow, through `tide serve` on the sim backend (--speed 1200).
#  - an elastic job of 3 gangs (dp_min 1) trains on the shared pool; a demand
#    rise takes GPUs back for replicas: the job is shrunk (a resize notice,
#    action "shrink"; GET /v1/jobs/{id} width < 3);
#  - a gang that remains reports a committed checkpoint: counted ("used");
#    the same step from another gang is a duplicate (not counted, not
#    recorded); the resize notice clears;
#  - demand falls; after the scale-down hold (--scale-down-hold 10m, given in
#    a --config file) the replicas go and the job grows back to 3 gangs (a
#    job_resize action with width 3, a notice with action "grow");
#  - the grown job's gangs report the next step: one report counted, the
#    others duplicates; the notice clears; the job's committed progress is
#    the counted report's;
#  - --scale-down-hold is fixed at creation: a restart with another value is
#    refused, and the help lists it.
# Environment: TIDE_BIN. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN

"$T" serve --help | grep -q -- '--scale-down-hold D' || fail "tide serve --help has no --scale-down-hold"
"$T" serve --db "$tmp/x.db" --cluster 4x8 --scale-down-hold nope >/dev/null 2>"$tmp/bad.err"
[ $? = 2 ] && grep -q -- '--scale-down-hold' "$tmp/bad.err" || fail "a bad --scale-down-hold is not a usage error: $(cat "$tmp/bad.err")"

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,120
CSV
cat >"$tmp/tide.yaml" <<YAML
db: $tmp/tide.db
cluster: 4x8
services: $tmp/services.csv
speed: 1200
scale-down-hold: 10m
YAML
serve_start grow --config "$tmp/tide.yaml" || { fail "daemon did not start"; finish serve_resize_ckpt; }

now_s() { curl -s "$SERVE_URL/healthz" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["now_s"]))'; }
demand() { api POST /v1/services/chat/demand "{\"rps\": $1}"; [ "$API_STATUS" = 200 ] || fail "demand $1: $API_STATUS $API_BODY"; }
job() { api GET /v1/jobs/el; }
width_is() { job; [ "$(jq_ 'd["state"]')" = running ] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$API_BODY" "$1"; }
# ckpt STEP: one gang's report of a committed checkpoint; sets CK="used duplicate"
# and CK_PROGRESS (the answer's progress_s)
ckpt() {
    api POST /v1/jobs/el/checkpoints "{\"step\": $1, \"bytes\": 1000, \"shards\": 8, \"committed\": true}"
    case "$API_STATUS" in 200 | 201) ;; *) fail "checkpoint step $1: $API_STATUS $API_BODY" ;; esac
    CK=$(jq_ '"%s %s" % (d["used"], d["duplicate"])')
    CK_PROGRESS=$(jq_ 'd["progress_s"]')
}
same() { python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-6 else 1)' "$1" "$2"; }
no_notice() { job; [ "$(jq_ '(d.get("notice") or {}).get("active", False)')" = False ]; }
n_ckpts() { job; jq_ 'd["checkpoints"]'; } # manifests recorded

demand 20
api POST /v1/jobs '{"job_id":"el","team":"lab","priority":2,"gpus":24,"gang_gpus":8,"dp_min":1,"duration_s":8640000,"ckpt_interval_s":864000,"ckpt_s":60,"restore_s":60}'
[ "$API_STATUS" = 201 ] || fail "submit: $API_STATUS $API_BODY"
poll_until 20 width_is 'd["width"] == 3' || fail "the job does not run at 3 gangs: $API_BODY"

# --- shrink: a demand rise needs replicas on the job's GPUs
demand 150
poll_until 30 width_is 'd["width"] < 3' || fail "no shrink after the demand rise: $API_BODY"
job
echo "shrunk to width $(jq_ 'd["width"]'), notice $(jq_ 'd.get("notice")')" >&2
[ "$(jq_ '(d.get("notice") or {}).get("action")')" = shrink ] || fail "the notice after the shrink: $API_BODY"
before=$(n_ckpts)
ckpt 100
[ "$CK" = "True False" ] || fail "a remaining gang's checkpoint (step 100) not counted: $API_BODY"
p100=$CK_PROGRESS
ckpt 100
[ "$CK" = "False True" ] || fail "the same step from another gang is not a duplicate: $API_BODY"
same "$CK_PROGRESS" "$p100" || fail "the duplicate's progress_s $CK_PROGRESS is not the commit's $p100"
[ "$(n_ckpts)" = $((before + 1)) ] || fail "step 100 recorded $(($(n_ckpts) - before)) times, expected once"
poll_until 10 no_notice || fail "the shrink notice stays active after a committed checkpoint: $API_BODY"

# --- grow: demand falls; after the hold the replicas go and the job grows back
demand 20
t_fall=$(now_s)
poll_until 60 width_is 'd["width"] == 3' || fail "the job does not grow back after the hold: $API_BODY"
t_grow=$(now_s)
echo "demand fell at $t_fall, the job grew by $t_grow (engine s)" >&2
[ $((t_grow - t_fall)) -ge 600 ] || fail "the job grew $((t_grow - t_fall)) s after the fall, within the 10 min hold"
job
[ "$(jq_ '(d.get("notice") or {}).get("action")')" = grow ] || fail "the notice after the grow: $API_BODY"
"$T" events --json >"$tmp/events.json" || fail "tide events"
python3 - "$tmp/events.json" <<'EOF' || fail "events: no job_resize to width 3 after a shrink"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["events"] if e.get("job") == "el" and e["kind"] == "job_resize"]
ws = [e.get("width") for e in ev]
assert len(ws) >= 2 and ws[0] < 3 and ws[-1] == 3, ws
EOF
before=$(n_ckpts)
ckpt 101
[ "$CK" = "True False" ] || fail "a grown job's checkpoint (step 101) not counted: $API_BODY"
progress=$CK_PROGRESS
python3 -c 'import sys; assert float(sys.argv[1]) > float(sys.argv[2])' "$progress" "$p100" ||
    fail "step 101's progress $progress is not past step 100's $p100"
for _ in 1 2; do # the other gangs report the same step
    ckpt 101
    [ "$CK" = "False True" ] || fail "step 101 from another gang is not a duplicate: $API_BODY"
    same "$CK_PROGRESS" "$progress" || fail "the duplicate's progress_s $CK_PROGRESS is not the commit's $progress"
done
ckpt 100
[ "$CK" = "False True" ] || fail "an older step is not a duplicate: $API_BODY"
[ "$(n_ckpts)" = $((before + 1)) ] || fail "step 101 recorded $(($(n_ckpts) - before)) times, expected once"
poll_until 10 no_notice || fail "the grow notice stays active after a committed checkpoint: $API_BODY"
job
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["committed_s"] >= float(sys.argv[2]) - 1e-6, d' \
    "$API_BODY" "$progress" || fail "committed progress is behind the counted report's ($progress): $API_BODY"
serve_stop

# --- the hold is fixed at creation
"$T" serve --listen 127.0.0.1:0 --db "$tmp/tide.db" --scale-down-hold 20m >"$tmp/re.out" 2>"$tmp/re.err" &
re=$!
EXTRA_PIDS+=("$re")
poll_until 10 sh -c "! kill -0 $re 2>/dev/null" || fail "a restart with another --scale-down-hold is not refused"
grep -q -- '--scale-down-hold 600s' "$tmp/re.err" || fail "the refusal does not name the database's hold: $(cat "$tmp/re.err")"
finish serve_resize_ckpt
