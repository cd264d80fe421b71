#!/usr/bin/env bash
# End-to-end: warm-up rehearsals on the sim backend, whose warm-ups take 3x
# the declared warmup_s (--sim-warmup-factor 3: a declared 300 s that really
# takes 900 s). `tide rehearse chat` starts one replica on free GPUs,
# measures 900 s, stops it: the sample moves the reclaim lead (by the 600 s
# the declaration missed), the rehearsal is slow (the lead allowed 300 s +
# lead extra + tick), its GPU-seconds are accounted as state "rehearsing",
# and the shipped alert TideRehearsalSlow fires on the daemon's own
# /metrics values (promtool test rules, when promtool is installed). A
# second daemon with --rehearse-every 1h rehearses on its own.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
serve_start rehearse --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 600 \
    --sim-warmup-factor 3 || exit 1
api POST /v1/services "$svc"
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 50}'
api GET /v1/services/chat
lead0=$(jq_ 'd["lead_s"]')

"$TIDE_BIN" rehearse chat >"$tmp/r.txt" || fail "tide rehearse chat: $(cat "$tmp/r.txt")"
grep -q 'rehearsal of chat requested' "$tmp/r.txt" || fail "tide rehearse: $(cat "$tmp/r.txt")"
done_() { api GET /v1/services/chat; [ "$(jq_ 'd["rehearsal"]["done"]')" -ge 1 ]; }
poll_until 20 done_ || fail "the rehearsal did not complete: $API_BODY"
[ "$(jq_ 'd["rehearsal"]["last_warmup_s"]')" = 900.0 ] || fail "rehearsal warm-up is not 900 s: $API_BODY"
[ "$(jq_ 'd["rehearsal"]["slow"]')" = 1 ] || fail "a 900 s warm-up against a 300 s lead is not slow: $API_BODY"
[ "$(jq_ 'd["rehearsal"]["gpu_s"]')" = 7200.0 ] || fail "rehearsal GPU-seconds are not 8 x 900: $API_BODY"
[ "$(jq_ 'd["rehearsal"]["state"]')" = idle ] || fail "the rehearsal replica still runs: $API_BODY"
lead1=$(jq_ 'd["lead_s"]')
[ "$((lead1 - lead0))" = 600 ] || fail "the lead moved from $lead0 to $lead1 (expected +600 s)"

curl -s "$SERVE_URL/metrics" >"$tmp/m.txt"
grep -q '^tide_rehearsals_total{service="chat"} 1$' "$tmp/m.txt" || fail "tide_rehearsals_total: $(grep rehearsals_total "$tmp/m.txt")"
grep -q '^tide_rehearsals_slow_total{service="chat"} 1$' "$tmp/m.txt" || fail "tide_rehearsals_slow_total: $(grep rehearsals_slow "$tmp/m.txt")"
grep -q '^tide_rehearsal_warmup_seconds{service="chat"} 900$' "$tmp/m.txt" || fail "tide_rehearsal_warmup_seconds: $(grep rehearsal_warmup "$tmp/m.txt")"
allowed=$(sed -n 's/^tide_rehearsal_allowed_seconds{service="chat"} //p' "$tmp/m.txt")
[ -n "$allowed" ] || fail "no tide_rehearsal_allowed_seconds"
grep -q '^tide_rehearsal_gpu_seconds_total{service="chat"} 7200$' "$tmp/m.txt" || fail "tide_rehearsal_gpu_seconds_total: $(grep rehearsal_gpu "$tmp/m.txt")"
# the usage rows account the rehearsal as its own state
api GET '/v1/usage?group_by=state'
echo "$API_BODY" | grep -q rehearsing || fail "/v1/usage has no rehearsing state: $API_BODY"

# bad requests
"$TIDE_BIN" rehearse nope 2>"$tmp/e.txt" && fail "tide rehearse nope succeeded"
grep -q "unknown service 'nope'" "$tmp/e.txt" || fail "tide rehearse nope: $(cat "$tmp/e.txt")"
"$TIDE_BIN" rehearse 2>/dev/null && fail "tide rehearse without a service succeeded"
"$TIDE_BIN" rehearse --help | grep -q '^usage: tide rehearse SERVICE' || fail "tide rehearse --help"

# the shipped rule fires on these values
if command -v promtool >/dev/null 2>&1; then
    cp "$TIDE_SRC/examples/prometheus/tide-rules.yml" "$tmp/"
    cat >"$tmp/t.yml" <<YML
rule_files: [tide-rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'tide_rehearsal_warmup_seconds{service="chat"}'
        values: 900x5
      - series: 'tide_rehearsal_allowed_seconds{service="chat"}'
        values: ${allowed}x5
    alert_rule_test:
      - eval_time: 2m
        alertname: TideRehearsalSlow
        exp_alerts:
          - exp_labels: {severity: ticket, service: chat}
            exp_annotations:
              summary: "tide: chat warms up slower than its reclaim lead allowed"
              description: "The latest warm-up rehearsal of chat took 900s, more than the lead allowed it."
YML
    (cd "$tmp" && promtool test rules t.yml) >"$tmp/p.txt" 2>&1 || fail "TideRehearsalSlow did not fire: $(cat "$tmp/p.txt")"
else
    echo "note: promtool missing, the alert rule is not exercised" >&2
fi
serve_stop

# --- scheduled rehearsals
serve_start sched --db "$tmp/s.db" --cluster 4x8:H100 --policy elastic --speed 600 --rehearse-every 1h || exit 1
api POST /v1/services "$svc"
poll_until 20 done_ || fail "no scheduled rehearsal within 2 h of engine time: $API_BODY"
"$TIDE_BIN" serve --rehearse-every 5s --db "$tmp/x.db" >/dev/null 2>"$tmp/bad.txt" && fail "--rehearse-every 5s accepted"
grep -q "rehearse-every" "$tmp/bad.txt" || fail "--rehearse-every 5s: $(cat "$tmp/bad.txt")"
finish serve_rehearse
