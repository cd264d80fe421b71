#!/usr/bin/env bash
# End-to-end: `tide serve --mode shadow` on the sim backend enacts nothing
# (the backend's own counters stay at zero: no submit, signal or cancel)
# while GET /v1/shadow, `tide shadow` and tide_shadow_* report what it would
# have done: a lease granted, a job started on lent GPUs, GPU-hours lent.
# Then the switch to enact (`tide shadow --enact`, POST /v1/mode) keeps the
# learned forecast (its samples go on from where the shadow left them, also
# across a restart with --mode enact) and the backend starts the work for
# real.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
serve_start shadow --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 600 --mode shadow || exit 1
grep -q 'SHADOW mode' "$SERVE_LOG" || fail "the start line does not say SHADOW mode"
api POST /v1/services "$svc"
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 120}'
api POST /v1/jobs '{"job_id":"m1","team":"lab","priority":2,"gpus":16,"duration_s":360000}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/jobs: $API_STATUS $API_BODY"

lent() { api GET /v1/shadow; [ "$(jq_ 'd["lent_gpu_hours"] > 0 and d["would_actions"]["job_start"] >= 1')" = True ]; }
poll_until 20 lent || fail "shadow reports no lending: $API_BODY"
[ "$(jq_ 'd["mode"]')" = shadow ] || fail "mode is not shadow: $API_BODY"
[ "$(jq_ 'd["jobs_started_early"]')" -ge 1 ] || fail "no job started on lent GPUs: $API_BODY"
[ "$(jq_ 'd["leases_granted"]')" -ge 1 ] || fail "no lease: $API_BODY"
[ "$(jq_ 'd["backend"]["submits"] + d["backend"]["signals"] + d["backend"]["cancels"] + d["backend"]["calls"]')" = 0 ] ||
    fail "the backend was touched in shadow mode: $API_BODY"
curl -s "$SERVE_URL/metrics" >"$tmp/m1.txt"
grep -q '^tide_shadow_mode 1$' "$tmp/m1.txt" || fail "tide_shadow_mode is not 1"
grep -q '^tide_backend_submits_total{backend="sim"} 0$' "$tmp/m1.txt" || fail "backend submits in shadow: $(grep tide_backend_submits "$tmp/m1.txt")"
grep -Eq '^tide_shadow_would_actions_total\{kind="lease_grant"\} [1-9]' "$tmp/m1.txt" || fail "no would-be lease_grant in /metrics"
grep -Eq '^tide_shadow_lent_gpu_seconds_total [0-9.]*[1-9]' "$tmp/m1.txt" || fail "tide_shadow_lent_gpu_seconds_total is 0"
"$TIDE_BIN" shadow >"$tmp/shadow.txt" || fail "tide shadow failed"
grep -q '^real backend: *0 submits, 0 signals, 0 cancels' "$tmp/shadow.txt" || fail "tide shadow: $(cat "$tmp/shadow.txt")"
grep -q '^would have lent:' "$tmp/shadow.txt" || fail "tide shadow: $(cat "$tmp/shadow.txt")"

api GET /v1/cluster
[ "$(jq_ 'd["mode"]')" = shadow ] || fail "/v1/cluster mode is not shadow (the dashboard shows it)"

# the job is the shadow's (its twin runs it), the cluster has nothing
api GET /v1/jobs/m1
[ "$(jq_ 'd["state"]')" = running ] || fail "m1 is not running in the shadow's view: $API_BODY"

# bad requests
api POST /v1/mode '{"mode":"bogus"}'
[ "$API_STATUS" = 400 ] || fail "POST /v1/mode bogus: $API_STATUS"
api POST /v1/mode '{"mode":"shadow"}'
[ "$API_STATUS" = 200 ] || fail "POST /v1/mode shadow while in shadow: $API_STATUS $API_BODY"

# --- switch to enact: the forecast carries over
samples() { curl -s "$SERVE_URL/v1/shadow" | python3 -c 'import json,sys; print(json.load(sys.stdin)["learned"]["chat"]["samples"])'; }
# samples accrue once per forecast step of the shadow's clock; on a loaded
# machine the lease can show before the first one: wait for it
learned() { n1=$(samples); [ "$n1" -gt 0 ]; }
poll_until 20 learned || fail "the shadow learned no forecast samples ($n1)"
"$TIDE_BIN" shadow --enact >"$tmp/enact.txt" || fail "tide shadow --enact failed: $(cat "$tmp/enact.txt")"
grep -q '^mode: enact' "$tmp/enact.txt" || fail "tide shadow --enact: $(cat "$tmp/enact.txt")"
n2=$(samples)
[ "$n2" -ge "$n1" ] || fail "forecast samples went from $n1 to $n2 at the switch (state lost)"
submitted() { curl -s "$SERVE_URL/metrics" | grep -Eq '^tide_backend_submits_total\{backend="sim"\} [1-9]'; }
poll_until 10 submitted || fail "enact mode submitted nothing to the backend"
api GET /v1/shadow
[ "$(jq_ 'd["mode"]')" = enact ] || fail "GET /v1/shadow mode after the switch: $API_BODY"
[ "$(jq_ 'd["until"] is not None')" = True ] || fail "the shadow period has no end: $API_BODY"
api POST /v1/mode '{"mode":"shadow"}'
[ "$API_STATUS" = 409 ] || fail "POST /v1/mode shadow while enacting: $API_STATUS $API_BODY"
grep -q '^tide_shadow_mode 0$' <(curl -s "$SERVE_URL/metrics") || fail "tide_shadow_mode is not 0 after the switch"

# --- a restart with --mode enact replays the shadow's steps: the forecast is kept
n3=$(samples)
serve_stop
serve_start enact --db "$tmp/tide.db" --speed 600 --mode enact || exit 1
n4=$(samples)
[ "$n4" -ge "$n3" ] || fail "forecast samples went from $n3 to $n4 across the restart (state lost)"
api GET /v1/shadow
[ "$(jq_ 'd["mode"]')" = enact ] || fail "restart: mode is not enact: $API_BODY"
"$TIDE_BIN" serve --mode sideways --db "$tmp/x.db" >/dev/null 2>"$tmp/bad.txt" && fail "--mode sideways accepted"
grep -q "not enact or shadow" "$tmp/bad.txt" || fail "--mode sideways: $(cat "$tmp/bad.txt")"
finish serve_shadow
