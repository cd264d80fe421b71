#!/usr/bin/env bash
# End-to-end: `tide serve` sizes an RL job's lent rollout pool from the
# trainer's measured wait (docs/rl.md, "The daemon sizes the pool"), on the
# sim backend with the engine's invariants checked (--check).
#  1. A spec whose declared rates need no lent replica: every pool job is
#     held (queued, never started); GET /v1/rl/{job} shows the controller.
#  2. Bad measures are 400s; a step without measures (an old client) still
#     works and moves nothing.
#  3. A trainer reporting a high wait (half of each step) with busy rollouts:
#     after `patience` steps the pool grows, pool jobs are released and run,
#     never beyond max_replicas.
#  4. A trainer reporting no wait with idle rollouts: the pool shrinks, the
#     released pool jobs get a drain notice with reason scale and stop.
#  5. SIGKILL and restart on the same database: the same pool jobs are held
#     and the controller (want, grows, shrinks, streak) is the same; the next
#     step goes on from there.
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,120
CSV
start() {
    serve_start "$1" --db "$tmp/tide.db" --cluster 8x8 --services "$tmp/services.csv" --speed 600 --check
}
start rlpool || { fail "daemon did not start"; finish serve_rl_pool; }
api POST /v1/services/chat/demand '{"rps": 20}'
# 4 trajectories a step; 0.1 trajectory/s per replica: one dedicated replica
# is the estimate (need 4 / (60 x 0.1) x 1.25 < 1), no lent one
SPEC='"team":"rl","priority":2,"duration_s":864000,"trainer_gpus":8,"step_s":60,"batch":4,"rollout_gpus":2,"replica_tps":0.1,"max_staleness":2,"min_replicas":1,"max_replicas":13,"drain_s":60'
api POST /v1/rl/grpo "{\"spec\":{$SPEC}}"
[ "$API_STATUS" = 201 ] || fail "register: $API_STATUS $API_BODY"
jobs() { rl_jobs grpo "$1"; }
rl_get() { api GET /v1/rl/grpo; [ "$API_STATUS" = 200 ] || fail "GET /v1/rl/grpo: $API_STATUS $API_BODY"; }

# --- 1. the first estimate: nothing lent, every pool job held
rl_get
npool=$(jq_ 'len(d["pool"]["jobs"])')
[ "$npool" -ge 2 ] || fail "pool jobs: $npool ($API_BODY)"
poll_until 20 jobs 'js["trainer"]["state"] == "running" and all(p["held"] and p["state"] == "queued" for p in js["pool"])' ||
    fail "the pool jobs are not all held at first: $API_BODY"
rl_get
[ "$(jq_ 'd["pool"]["want"]')" = 0 ] && [ "$(jq_ 'len(d["pool"]["held"])')" = "$npool" ] &&
    [ "$(jq_ 'd["pool"]["last_wait"]')" = None ] || fail "the first controller: $API_BODY"

# One trainer step: its batch pushed, then the step with measures ($2).
S=0
step() {
    local b="" i
    for i in 1 2 3 4; do b="$b${b:+,}{\"trajectory_id\":\"s$((S + 1))-$i\",\"policy_version\":$S}"; done
    api POST /v1/rl/grpo/trajectories "{\"trajectories\":[$b]}"
    [ "$API_STATUS" = 200 ] || { fail "push for step $((S + 1)): $API_STATUS $API_BODY"; return 1; }
    S=$((S + 1))
    api POST /v1/rl/grpo/step "{\"step\":$S$1}"
    [ "$API_STATUS" = 200 ] || { fail "step $S: $API_STATUS $API_BODY"; return 1; }
}

# --- 2. bad measures; an old client
for bad in ',"wait_s":-1,"compute_s":1' ',"wait_s":1' ',"compute_s":"x","wait_s":1' ',"wait_s":1,"compute_s":1,"rollout_busy":2' ',"colour":1'; do
    api POST /v1/rl/grpo/step "{\"step\":1$bad}"
    [ "$API_STATUS" = 400 ] || fail "step with $bad: $API_STATUS $API_BODY"
done
step "" && step ""
rl_get
[ "$(jq_ 'd["step"]')" = 2 ] && [ "$(jq_ 'd["pool"]["want"]')" = 0 ] &&
    [ "$(jq_ 'd["pool"]["last"]["version"]')" = 0 ] || fail "steps without measures: $API_BODY"

# --- 3. half of each step waiting on busy rollouts: the pool grows
high=',"wait_s":30,"compute_s":30,"rollout_busy":1'
for _ in 1 2 3; do step "$high"; done
rl_get
[ "$(jq_ 'd["pool"]["grows"]')" -ge 1 ] && [ "$(jq_ 'd["pool"]["want"]')" -ge 1 ] &&
    [ "$(jq_ 'd["pool"]["last_wait"]')" = 0.5 ] || fail "no grow after a high wait: $API_BODY"
poll_until 20 jobs 'sum(not p["held"] for p in js["pool"]) >= 1 and all(p["state"] == "running" for p in js["pool"] if not p["held"])' ||
    fail "no released pool job runs: $API_BODY"
for _ in 1 2 3 4 5 6 7 8 9; do step "$high"; done
rl_get
want=$(jq_ 'd["pool"]["want"]')
[ "$want" -gt 0 ] && [ "$want" -le 12 ] || fail "want $want beyond max_replicas - min_replicas: $API_BODY"
[ "$(jq_ 'd["pool"]["grows"]')" -ge 2 ] || fail "the pool grew once only under a high wait: $API_BODY"
poll_until 20 jobs 'all(p["state"] == "running" for p in js["pool"] if not p["held"])' ||
    fail "the released pool jobs do not run: $API_BODY"
released=$(jq_ 'sum(1 for j in d["jobs"] if j["role"] == "pool" and not j["held"])')
echo "after 12 high-wait steps: want $want, grows $(jq_ 'd["pool"]["grows"]'), $released of $npool pool jobs released"
[ "$released" -ge 2 ] || fail "$released pool jobs released after the grows"

# --- 4. no wait, rollouts idle: the pool shrinks, pool jobs drained (scale)
low=',"wait_s":0,"compute_s":60,"rollout_busy":0.1'
for _ in 1 2; do step "$low"; done
# the third through the CLI (tide rl step --wait --compute --rollout-busy)
b=""; for i in 1 2 3 4; do b="$b${b:+,}{\"trajectory_id\":\"c$((S + 1))-$i\",\"policy_version\":$S}"; done
api POST /v1/rl/grpo/trajectories "{\"trajectories\":[$b]}"
S=$((S + 1))
"$TIDE_BIN" rl step grpo --step $S --wait 0 --compute 60 --rollout-busy 0.1 --server "$SERVE_URL" >"$tmp/cli.out" 2>&1 ||
    fail "tide rl step with measures: $(cat "$tmp/cli.out")"
"$TIDE_BIN" rl step grpo --step 1 --wait -1 --server "$SERVE_URL" >/dev/null 2>&1
[ $? = 2 ] || fail "tide rl step --wait -1 is not a usage error"
rl_get
[ "$(jq_ 'd["pool"]["shrinks"]')" -ge 1 ] && [ "$(jq_ 'd["pool"]["want"]')" -lt "$want" ] ||
    fail "no shrink after idle rollouts: $API_BODY"
poll_until 30 jobs 'all(p["state"] == "queued" for p in js["pool"] if p["held"]) and sum(p["held"] for p in js["pool"]) > '"$((npool - released))" ||
    fail "the held pool jobs did not stop: $API_BODY"
"$TIDE_BIN" events --server "$SERVE_URL" --output json --limit 5000 >"$tmp/ev.json" || fail "tide events"
python3 - "$tmp/ev.json" <<'EOF' || fail "the shrink was not a drain with reason scale"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
scaled = [e for e in ev if (e.get("job") or "").startswith("grpo-pool-") and e["kind"] == "ckpt_notice" and e.get("reason") == "scale"]
assert scaled, "no scale notice to a pool job"
for n in scaled:
    ks = [(e["kind"], e.get("reason")) for e in ev if e.get("job") == n["job"] and e["time_s"] >= n["time_s"]]
    assert ("job_stop", "scale") in ks, (n["job"], ks)
assert not [e for e in ev if e.get("job") == "grpo-trainer" and e["kind"] == "job_stop"]
EOF

# --- 5. SIGKILL, restart: the same jobs held, the same controller
rl_get
before=$(jq_ 'json.dumps([d["pool"][k] for k in ("want", "grows", "shrinks", "streak", "held", "last")])')
held_engine=$(jq_ 'json.dumps(sorted(j["id"] for j in d["jobs"] if j["role"] == "pool" and j["held"]))')
serve_kill9
start rlpool2 || { fail "daemon did not restart"; finish serve_rl_pool; }
rl_get
after=$(jq_ 'json.dumps([d["pool"][k] for k in ("want", "grows", "shrinks", "streak", "held", "last")])')
echo "before the SIGKILL: $before held $held_engine"
[ "$after" = "$before" ] || fail "the controller after a SIGKILL: $after, before: $before"
[ "$(jq_ 'json.dumps(sorted(j["id"] for j in d["jobs"] if j["role"] == "pool" and j["held"]))')" = "$held_engine" ] ||
    fail "held pool jobs after a SIGKILL: $API_BODY, before: $held_engine"
S=$(jq_ 'd["step"]')
step "$low"
rl_get
[ "$(jq_ 'd["pool"]["last"]["version"]')" = "$S" ] || fail "the step after the restart: $API_BODY"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz (--check): $API_STATUS $API_BODY"
serve_stop
grep -qi "invariant" "$tmp"/rlpool*.log && fail "an invariant failed"
finish serve_rl_pool
