#!/usr/bin/env bash
# End-to-end: the lent rollout pool of an RL job is reclaimed ahead of a
# FORECAST rise (docs/rl.md, "Through the daemon"), not a pushed one.
# The day: 20 rps at night, 250 rps from 08:00 to 20:00 (one replica serves
# 100); `tide serve` (sim backend, --speed 60, --check) starts at 07:00
# (engine time 0) with 3 days of that history (--demand-history), so its
# forecast knows the 08:00 rise (engine time 3600) while only the night's
# 20 rps is observed.
#  1. An RL job (POST /v1/rl/grpo with a spec): trainer, dedicated rollout and
#     pool jobs run, the pool jobs (P3) on lent GPUs under leases.
#  2. With nothing but 20 rps pushed, before engine time 3600, pool jobs get a
#     reclaim notice (a drain), commit it and stop: the forecast, not observed
#     demand, drove it. The trainer keeps running.
#  3. Only then the rise is pushed (250 rps at engine time >= 3600): it is
#     served by replicas started ahead, the trainer still runs and makes
#     progress, and it never stopped; the engine's invariants held (--check).
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
RISE=3600

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,120
CSV
# 3 days up to engine time 0 (07:00), one row every 5 minutes
python3 - "$tmp/history.csv" <<'PY'
import sys
now_phase = 7 * 3600
with open(sys.argv[1], "w") as f:
    f.write("time_s,service,rps\n")
    for back in range(3 * 86400, -1, -300):
        h = ((now_phase - back) % 86400) // 3600
        f.write(f"{3 * 86400 - back},chat,{250 if 8 <= h < 20 else 20}\n")
PY
serve_start rlfc --db "$tmp/tide.db" --cluster 8x8 --services "$tmp/services.csv" \
    --demand-history "$tmp/history.csv" --speed 60 --tick 200ms --check ||
    { fail "daemon did not start"; finish serve_rl_forecast; }

api POST /v1/services/chat/demand '{"rps": 20}'
[ "$API_STATUS" = 200 ] || fail "demand: $API_STATUS $API_BODY"
# replica_tps 0.05: the pool controller's first estimate (batch / (step_s x replica_tps) x 1.25
# replicas) wants every pool job lent, none held (serve_rl_pool.sh sizes the pool)
SPEC='"team":"rl","priority":2,"duration_s":864000,"trainer_gpus":8,"step_s":60,"batch":64,"rollout_gpus":2,"replica_tps":0.05,"max_staleness":2,"min_replicas":1,"max_replicas":17,"drain_s":60'
api POST /v1/rl/grpo "{\"spec\":{$SPEC}}"
[ "$API_STATUS" = 201 ] || fail "register: $API_STATUS $API_BODY"
t_reg=$(now_s)
[ "$t_reg" -lt $((RISE / 2)) ] || fail "registered only at engine time $t_reg"
# jobs PYEXPR: over `js`, GET /v1/rl/grpo's jobs by role (lib/serve.bash)
jobs() { rl_jobs grpo "$1"; }

# --- 1. by night: everything runs, the pool on leases
poll_until 20 jobs 'js["trainer"]["state"] == "running" and js["rollout"]["state"] == "running" and len(js["pool"]) >= 2 and all(p["state"] == "running" and p["lease"] is not None for p in js["pool"])' ||
    fail "the pool is not lent by night: $API_BODY"
t_lent=$(now_s)
[ "$t_lent" -lt "$RISE" ] || fail "the pool was lent only at engine time $t_lent (the rise is at $RISE)"

# --- 2. drained ahead of the forecast rise, nothing but the night's demand observed
pool_drained() { jobs 'any(p["state"] != "running" for p in js["pool"]) and js["trainer"]["state"] == "running"'; }
poll_until 60 pool_drained || fail "no pool job was reclaimed ahead of the rise: $API_BODY"
t_drain=$(now_s) # when this poll saw it (the notice's own time is checked below, from the events)
jobs 'True'
p_before=$(jq_ '[j for j in d["jobs"] if j["role"] == "trainer"][0]["progress_s"]')
echo "lent at t=$t_lent; a pool job seen draining at t=$t_drain (rise at $RISE, demand still 20 rps)"

# --- 3. the rise itself, pushed at its time
past_rise() { [ "$(now_s)" -ge "$RISE" ]; }
poll_until 90 past_rise || fail "engine time never reached the rise"
api POST /v1/services/chat/demand '{"rps": 250}'
[ "$API_STATUS" = 200 ] || fail "demand 250: $API_STATUS $API_BODY"
poll_until 30 jobs "js['trainer']['state'] == 'running' and js['trainer']['progress_s'] > $p_before" ||
    fail "the trainer makes no progress after the rise (before: $p_before): $API_BODY"
"$TIDE_BIN" events --server "$SERVE_URL" --output json --limit 5000 >"$tmp/ev.json" || fail "tide events"
python3 - "$tmp/ev.json" "$RISE" <<'PY' || fail "the drain did not precede the observed rise"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
rise = int(sys.argv[2])
notices = [e for e in ev if (e.get("job") or "").startswith("grpo-pool-") and e["kind"] == "ckpt_notice" and e.get("reason") == "reclaim"]
assert notices, "no reclaim notice to a pool job"
first = min(e["time_s"] for e in notices)
assert first < rise, ("first pool notice at", first)
pushed = [e for e in ev if e["kind"] == "demand" and float(e.get("value", 0)) >= 250]
assert all(e["time_s"] >= rise for e in pushed), pushed
assert all(first < e["time_s"] for e in pushed), (first, pushed)
for j in {e["job"] for e in notices}:
    ks = [(e["kind"], e.get("reason")) for e in ev if e.get("job") == j and e["time_s"] >= first]
    if ("job_stop", "reclaim") in ks:    # drained: notice, commit, then the GPUs go back
        n = ks.index(("ckpt_notice", "reclaim"))
        c = ks.index(("ckpt_committed", None), n)
        assert c < ks.index(("job_stop", "reclaim"), c), (j, ks)
stops = [e for e in ev if e.get("job") == "grpo-trainer" and e["kind"] == "job_stop"]
assert not stops, stops
print("first pool notice at t=%d, the rise pushed at t=%s" % (first, [e["time_s"] for e in pushed]))
PY
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz after the run (--check): $API_STATUS $API_BODY"
serve_stop
grep -qi "invariant" "$SERVE_LOG" && fail "an invariant failed: $(grep -i invariant "$SERVE_LOG" | head -3)"
finish serve_rl_forecast
