#!/usr/bin/env bash
# End-to-end: the RL trajectory ledger (docs/api.md, "RL trajectory ledger")
# survives SIGKILL exactly as acknowledged.
#  1. A job is registered as an RL run (max_staleness 2, batch 8). Six rollout
#     workers push batches of trajectories concurrently (some from older
#     policy versions, so some are refused as stale), re-send batches they
#     had acknowledged (duplicates) and reuse ids with another version
#     (conflicts); a trainer takes steps 1, 2, ... and now and then retries
#     one. Every request is retried, the same, until answered
#     (tests/e2e/rl_ledger.py).
#  2. The daemon is SIGKILLed mid-run three times and restarted on the same
#     database (engine snapshots on: the restarts restore one).
#  3. Afterwards (the daemon stopped): every acknowledged trajectory is stored
#     exactly once with its version, no refused one is, nothing unknown is;
#     the consumed rows are exactly the batches the trainer was answered,
#     each trajectory in at most one; the trainer's step is the last
#     acknowledged one; no trajectory was accepted or consumed older than
#     max_staleness; the counters agree (also on /metrics and `tide rl
#     status` after one more restart).
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
src=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

DB=$tmp/tide.db
ARGS=(--db "$DB" --cluster 4x8:H100 --speed 60 --snapshot-every 2)
STALE=2
BATCH=8

serve_start rl0 "${ARGS[@]}" || exit 1
api POST /v1/jobs '{"job_id":"grpo","team":"rl","gpus":8,"duration_s":864000}'
[ "$API_STATUS" = 201 ] || fail "submit: $API_STATUS $API_BODY"
api POST /v1/rl/grpo "{\"max_staleness\":$STALE,\"batch_size\":$BATCH}"
[ "$API_STATUS" = 201 ] || fail "register: $API_STATUS $API_BODY"
api POST /v1/rl/grpo "{\"max_staleness\":$STALE,\"batch_size\":$BATCH}"
[ "$API_STATUS" = 200 ] || fail "register again (a retry): $API_STATUS $API_BODY"
api POST /v1/rl/nope "{\"max_staleness\":1,\"batch_size\":1}"
[ "$API_STATUS" = 404 ] || fail "register an unknown job: $API_STATUS $API_BODY"
api POST /v1/rl/grpo/trajectories '{"trajectory_id":"x","policy_version":9}'
[ "$API_STATUS" = 409 ] && [ "$(jq_ 'd["results"][0]["status"]')" = ahead ] ||
    fail "a trajectory ahead of the trainer: $API_STATUS $API_BODY"
api POST /v1/rl/grpo/trajectories '{"trajectory_id":"x"}'
[ "$API_STATUS" = 400 ] || fail "a trajectory without a version: $API_STATUS $API_BODY"

out=$tmp/drive
mkdir -p "$out"
# the driver re-reads the URL on every attempt: replace the file, never truncate it
set_url() { echo "$SERVE_URL" >"$tmp/url.new" && mv "$tmp/url.new" "$tmp/url"; }
set_url
python3 "$src/tests/e2e/rl_ledger.py" drive "$tmp/url" grpo "$out" 6 $BATCH 2>"$tmp/driver.err" &
dpid=$!
EXTRA_PIDS+=("$dpid")

# progress_at_least STEPS PUSHED: the driver got that far
progress_at_least() {
    local s p
    read -r _ s _ p <"$out/progress" 2>/dev/null || return 1
    [ "$s" -ge "$1" ] && [ "$p" -ge "$2" ]
}
prog() { cat "$out/progress" 2>/dev/null; }

steps=0 pushed=0
for round in 1 2 3; do
    # kill only once the run moved on since the last restart
    steps=$((steps + 15)) pushed=$((pushed + 150))
    poll_until 120 progress_at_least $steps $pushed ||
        fail "round $round: the run did not reach $steps steps and $pushed pushes ($(prog))"
    echo "round $round: SIGKILL at $(prog)" >&2
    serve_kill9
    serve_start "rl$round" "${ARGS[@]}" || exit 1
    set_url
    grep -h 'recovered' "$tmp/rl$round.log" >&2
done
# the ledger does not depend on the engine's snapshots, but restoring one must
# not disturb it either
grep -q 'after the snapshot of step' "$tmp"/rl[123].log || fail "no restart restored a snapshot"
steps=$((steps + 15)) pushed=$((pushed + 150))
poll_until 120 progress_at_least $steps $pushed || fail "after the last restart: $(prog)"
touch "$out/stop"
wait "$dpid" || fail "the driver failed: $(tail -5 "$tmp/driver.err")"
[ -s "$out/result.json" ] || fail "no result from the driver: $(tail -5 "$tmp/driver.err")"
serve_stop

python3 "$src/tests/e2e/rl_ledger.py" check "$out" "$DB" $STALE $BATCH ||
    fail "the ledger does not match what was acknowledged"

# one more restart: the run as the API, /metrics and the CLI give it
serve_start rl9 "${ARGS[@]}" || exit 1
api GET /v1/rl/grpo
python3 - "$out/result.json" "$API_BODY" <<'EOF' || fail "GET /v1/rl/grpo after the restart: $API_BODY"
import json, sys
res, run = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
assert run["step"] == res["step"] and run["policy_version"] == res["step"], run
assert run["counts"]["consumed"] == res["step"] * run["batch_size"], run
acked = sum(1 for x in res["items"].values() if x["acked"])
assert run["counts"]["accepted"] == acked, (run, acked)
ages = run["staleness"]["consumed"]
assert sum(a["count"] for a in ages) == run["counts"]["consumed"], run
assert all(0 <= a["age"] <= run["max_staleness"] for a in ages), ages
fresh = [a["count"] for a in run["staleness"]["queued"] if a["age"] <= run["max_staleness"]]
assert run["queue_depth"] == sum(fresh), run
EOF
m=$(curl -s "$SERVE_URL/metrics")
grep -q "^tide_rl_trainer_step{job=\"grpo\"} $(jq_ 'd["step"]')\$" <<<"$m" ||
    fail "tide_rl_trainer_step: $(grep '^tide_rl_' <<<"$m")"
grep -q "^tide_rl_trajectories_total{job=\"grpo\",outcome=\"consumed\"} $(jq_ 'd["counts"]["consumed"]')\$" <<<"$m" ||
    fail "tide_rl_trajectories_total consumed: $(grep '^tide_rl_' <<<"$m")"
"$TIDE_BIN" rl status grpo >"$tmp/status.out" || fail "tide rl status: $?"
grep -q "^step  *$(jq_ 'd["step"]')\$" "$tmp/status.out" || fail "tide rl status: $(cat "$tmp/status.out")"
serve_stop
finish serve_rl_ledger
