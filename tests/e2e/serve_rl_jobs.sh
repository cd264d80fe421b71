#!/usr/bin/env bash
# End-to-end: an RL job run by `tide serve` on the sim backend (docs/rl.md,
# "Through the daemon"), with the engine's invariants checked after every
# step (--check: Tier A is never lent).
#  1. Bad specs are 400s naming the field; a spec registers the run and
#     submits its engine jobs (201); the same request again is a 200 that
#     submits nothing (the job count is unchanged); another shape is a 409.
#  2. At low demand the trainer and the dedicated rollout run, and the pool
#     jobs (P3) start on lent GPUs (each under a lease).
#  3. A demand rise: the pool jobs get a checkpoint notice (reason reclaim,
#     a drain), commit it and stop (reclaim) while the trainer keeps running
#     and making progress; it is never stopped for a reclaim.
#  4. The ledger routes take the RL job's id: a trajectory push is accepted.
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,120
CSV
serve_start rl --db "$tmp/tide.db" --cluster 8x8 --services "$tmp/services.csv" --speed 600 --check ||
    { fail "daemon did not start"; finish serve_rl_jobs; }

demand() { api POST /v1/services/chat/demand "{\"rps\": $1}"; [ "$API_STATUS" = 200 ] || fail "demand $1: $API_STATUS $API_BODY"; }
# replica_tps 0.05: the pool controller's first estimate (batch / (step_s x replica_tps) x 1.25
# replicas) wants every pool job lent, none held (serve_rl_pool.sh sizes the pool)
SPEC='"team":"rl","priority":2,"duration_s":864000,"trainer_gpus":8,"step_s":60,"batch":64,"rollout_gpus":2,"replica_tps":0.05,"max_staleness":2,"min_replicas":1,"max_replicas":17,"drain_s":60'
register() { api POST /v1/rl/grpo "{\"spec\":{$1}$2}"; }
njobs() { api GET '/v1/jobs?limit=1000'; jq_ 'len(d["jobs"])'; }
# jobs PYEXPR: over `js`, GET /v1/rl/grpo's jobs by role (lib/serve.bash)
jobs() { rl_jobs grpo "$1"; }

# --- 1. validation and idempotence
register "${SPEC/\"min_replicas\":1/\"min_replicas\":20}" ""
[ "$API_STATUS" = 400 ] && grep -q max_replicas <<<"$API_BODY" || fail "max < min: $API_STATUS $API_BODY"
register "$SPEC,\"colour\":1" ""
[ "$API_STATUS" = 400 ] && grep -q colour <<<"$API_BODY" || fail "an unknown spec key: $API_STATUS $API_BODY"
register "${SPEC/\"rollout_gpus\":2/\"rollout_gpus\":\"two\"}" ""
[ "$API_STATUS" = 400 ] && grep -q rollout_gpus <<<"$API_BODY" || fail "a bad rollout_gpus: $API_STATUS $API_BODY"
register "${SPEC/\"trainer_gpus\":8/\"trainer_gpus\":640}" ""
[ "$API_STATUS" = 400 ] || fail "a trainer bigger than the cluster: $API_STATUS $API_BODY"
register "$SPEC" ',"max_staleness":5'
[ "$API_STATUS" = 400 ] && grep -q max_staleness <<<"$API_BODY" || fail "max_staleness disagreeing with the spec: $API_STATUS $API_BODY"
[ "$(njobs)" = 0 ] || fail "a refused spec submitted jobs: $API_BODY"

demand 20
register "$SPEC" ""
[ "$API_STATUS" = 201 ] || fail "register with a spec: $API_STATUS $API_BODY"
sub=$(jq_ 'd["jobs_submitted"]')
[ "$sub" -ge 3 ] || fail "jobs submitted: $sub"
n0=$(njobs)
[ "$n0" = "$sub" ] || fail "$n0 jobs listed, $sub submitted"
register "$SPEC" ""
[ "$API_STATUS" = 200 ] && [ "$(jq_ 'd["jobs_submitted"]')" = 0 ] || fail "a retry: $API_STATUS $API_BODY"
[ "$(njobs)" = "$n0" ] || fail "a retry submitted jobs again"
echo "{$SPEC}" >"$tmp/spec.json"
"$T" rl register grpo --spec "$tmp/spec.json" --server "$SERVE_URL" >"$tmp/cli.out" 2>&1 ||
    fail "tide rl register --spec (a retry): $(cat "$tmp/cli.out")"
grep -q 'grpo-trainer' "$tmp/cli.out" && grep -q 'jobs submitted now: 0' "$tmp/cli.out" ||
    fail "tide rl register --spec output: $(cat "$tmp/cli.out")"
[ "$(njobs)" = "$n0" ] || fail "the CLI's retry submitted jobs again"
"$T" rl register --help | grep -q -- '--spec FILE' || fail "tide rl register --help has no --spec"
register "${SPEC/\"trainer_gpus\":8/\"trainer_gpus\":16}" ""
[ "$API_STATUS" = 409 ] || fail "the same RL job with another shape: $API_STATUS $API_BODY"

# --- 2. low demand: trainer, rollout and lent pool jobs run
running() { [ "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["state"])' "$1")" = running ]; }
poll_until 20 jobs 'js["trainer"]["state"] == "running" and js["rollout"]["state"] == "running" and len(js["pool"]) >= 2 and all(p["state"] == "running" for p in js["pool"])' ||
    fail "not everything runs at low demand: $API_BODY"
jobs 'all(p["priority"] == 3 and p["lease"] is not None and not p["held"] for p in js["pool"]) and js["trainer"]["priority"] == 2' ||
    fail "pool jobs are not P3 jobs on leases: $API_BODY"
npool=$(jq_ 'sum(1 for j in d["jobs"] if j["role"] == "pool")')
[ "$npool" = $((sub - 2)) ] || fail "$npool pool jobs listed, $((sub - 2)) submitted"
jobs 'True'
p_before=$(jq_ '[j for j in d["jobs"] if j["role"] == "trainer"][0]["progress_s"]')

# --- 3. a demand rise reclaims the pool jobs by drain; the trainer continues
demand 250
poll_until 30 jobs 'any(p["state"] != "running" for p in js["pool"]) and js["trainer"]["state"] == "running"' ||
    fail "no pool job was reclaimed, or the trainer stopped: $API_BODY"
poll_until 20 jobs "js['trainer']['state'] == 'running' and js['trainer']['progress_s'] > $p_before" ||
    fail "the trainer makes no progress after the rise (before: $p_before): $API_BODY"
"$T" events --server "$SERVE_URL" --output json --limit 1000 >"$tmp/ev.json" || fail "tide events"
python3 - "$tmp/ev.json" "$npool" <<'EOF' || fail "the reclaim was not a drain of the pool jobs only"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
by = {}
for e in ev:
    by.setdefault(e.get("job"), []).append(e)
pools = [j for j in by if j and j.startswith("grpo-pool-")]
assert len(pools) == int(sys.argv[2]), pools
stopped = [j for j in pools if ("job_stop", "reclaim") in [(e["kind"], e.get("reason")) for e in by[j]]]
assert stopped, "no pool job stopped for a reclaim"
for j in stopped:
    ks = [(e["kind"], e.get("reason")) for e in by[j]]
    n = ks.index(("ckpt_notice", "reclaim"))            # the drain notice
    c = ks.index(("ckpt_committed", None), n)           # its end
    s = ks.index(("job_stop", "reclaim"), c)            # then the GPUs go back
    assert n < c < s, (j, ks)
stops = [e for e in by.get("grpo-trainer", []) if e["kind"] == "job_stop"]
assert not stops, stops
EOF

# --- 4. the ledger takes the RL job's id
api POST /v1/rl/grpo/trajectories '{"trajectory_id":"t1","policy_version":0}'
[ "$API_STATUS" = 201 ] || fail "a trajectory for the RL job: $API_STATUS $API_BODY"
api GET /v1/rl/grpo
[ "$(jq_ 'd["counts"]["accepted"]')" = 1 ] || fail "the run's counts: $API_BODY"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz after the run (--check): $API_STATUS $API_BODY"
serve_stop
grep -qi "invariant" "$SERVE_LOG" && fail "an invariant failed: $(grep -i invariant "$SERVE_LOG" | head -3)"
finish serve_rl_jobs
