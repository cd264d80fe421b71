#!/usr/bin/env bash
# End-to-end: tokens and roles of `tide serve --tokens FILE`, and bad requests.
#  - no token / a wrong token -> 401 with a JSON error, on writes and reads;
#    /healthz and /metrics stay open;
#  - a viewer cannot write (403); a submitter cannot submit for another team (403);
#  - team a's submitter and viewer neither see nor cancel team b's jobs: 403
#    (docs/api.md, Auth); their lists hold only their team's; ?team=b is 403;
#  - teams are tenants: team b submitting team a's id gets 409 "id taken" without
#    its state or team (team a's own retry gets the state); team a's reads of
#    events, nodes, leases and usage show team b's jobs only as counts;
#  - only an admin creates or changes a service (PATCH min_replicas);
#  - bad bodies: malformed JSON, wrong types, an unknown field, a 2 MiB body, an
#    impossible gang, a duplicate id, unknown ids -> 4xx with a message naming
#    the problem, and the job list is unchanged afterwards.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

cat >"$tmp/tokens" <<'EOF'
# TOKEN TEAM ROLE
tok-admin-0123456789ab  ops admin
tok-a-0123456789ab      a   submitter
tok-b-0123456789ab      b   submitter
tok-view-0123456789ab   a   viewer
EOF
serve_start auth --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 60 \
    --tokens "$tmp/tokens" || exit 1

# check WHAT STATUS [PATTERN]: the last api call answered STATUS with a JSON
# error whose message matches PATTERN (grep -Ei)
check() {
    local what=$1 want=$2 pat=${3:-}
    if [ "$API_STATUS" != "$want" ]; then
        fail "$what: HTTP $API_STATUS, expected $want ($API_BODY)"
        return
    fi
    [ "$want" -lt 400 ] && return
    local msg
    msg=$(jq_ 'd["error"]["message"] if isinstance(d["error"]["code"], str) else None' 2>/dev/null) || {
        fail "$what: error body is not {\"error\": {\"code\", \"message\"}}: $API_BODY"
        return
    }
    [ -n "$msg" ] && [ "$msg" != None ] || fail "$what: empty error message or code: $API_BODY"
    if [ -n "$pat" ] && ! grep -Eqi -- "$pat" <<<"$msg"; then
        fail "$what: message '$msg' does not name /$pat/"
    fi
}

job='{"job_id":"%s","priority":2,"gpus":8,"duration_s":3600}'
# shellcheck disable=SC2059
jobj() { printf "$job" "$1"; }

# --- no token, a wrong token
api POST /v1/jobs "$(jobj x1)"
check "submit without a token" 401
api POST /v1/jobs "$(jobj x1)" tok-nonesuch
check "submit with an unknown token" 401
api GET /v1/jobs
check "list without a token" 401
api POST /v1/services/chat/demand '{"rps":1}'
check "demand without a token" 401
api GET /healthz
check "healthz is open" 200
api GET /metrics
check "metrics is open" 200

# --- services: only an admin creates and changes them
svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
api POST /v1/services "$svc" tok-a-0123456789ab
check "submitter creates a service" 403
api POST /v1/services "$svc" tok-admin-0123456789ab
check "admin creates a service" 201
api PATCH /v1/services/chat '{"min_replicas":2}' tok-view-0123456789ab
check "viewer patches a service" 403
api PATCH /v1/services/chat '{"min_replicas":2}' tok-a-0123456789ab
check "submitter patches a service" 403
api PATCH /v1/services/chat '{"min_replicas":2}' tok-admin-0123456789ab
check "admin patches a service" 200
api GET /v1/services "" tok-view-0123456789ab
check "viewer lists services" 200
[ "$(jq_ 'd["services"][0]["min_replicas"]')" = 2 ] || fail "min_replicas not 2 after PATCH: $API_BODY"
api PATCH /v1/services/nonesuch '{"min_replicas":2}' tok-admin-0123456789ab
check "patch an unknown service" 404 nonesuch
api PATCH /v1/services/chat '{"min_replicas":"two"}' tok-admin-0123456789ab
check "patch with a wrong type" 400 min_replicas
api POST /v1/services/chat/demand '{"rps":80}' tok-view-0123456789ab
check "viewer pushes demand" 403
api POST /v1/services/chat/demand '{"rps":80}' tok-admin-0123456789ab
check "admin pushes demand" 200

# --- roles and teams on jobs
api POST /v1/jobs "$(jobj v1)" tok-view-0123456789ab
check "viewer submits" 403
api POST /v1/jobs "$(jobj a1)" tok-a-0123456789ab
check "team a submits a1" 201
[ "$(jq_ 'd["id"]')" = a1 ] || fail "submit a1 answered $API_BODY"
api POST /v1/jobs '{"job_id":"a2","team":"b","priority":2,"gpus":8,"duration_s":3600}' tok-a-0123456789ab
check "team a submits for team b" 403 team
api POST /v1/jobs "$(jobj b1)" tok-b-0123456789ab
check "team b submits b1" 201
api GET /v1/jobs/a1 "" tok-a-0123456789ab
check "team a reads a1" 200
[ "$(jq_ 'd["team"]')" = a ] || fail "a1 has team $(jq_ 'd.get("team")'), expected a (the token's)"
api GET /v1/jobs/b1 "" tok-a-0123456789ab
check "team a reads b1" 403 b1
api GET /v1/jobs/b1 "" tok-view-0123456789ab
check "team a's viewer reads b1" 403 b1
api POST /v1/jobs/b1/cancel "" tok-a-0123456789ab
check "team a cancels b1" 403 b1
api GET /v1/jobs/b1 "" tok-b-0123456789ab
check "team b reads b1" 200
[ "$(jq_ 'd["state"]')" != cancelled ] || fail "b1 was cancelled by team a"
api GET /v1/jobs "" tok-a-0123456789ab
check "team a lists" 200
[ "$(jq_ 'sorted(j["id"] for j in d["jobs"])')" = '["a1"]' ] || fail "team a sees $API_BODY"
api GET /v1/jobs "" tok-view-0123456789ab
[ "$(jq_ 'sorted(j["id"] for j in d["jobs"])')" = '["a1"]' ] || fail "team a's viewer sees $API_BODY"
api GET "/v1/jobs?team=b" "" tok-a-0123456789ab
check "team a lists team b's jobs" 403 team
api POST /v1/jobs/b1/checkpoints '{"step":1,"committed":true,"progress_s":10}' tok-a-0123456789ab
check "team a reports a checkpoint of b1" 403 b1
api GET '/v1/jobs/b1/notice?wait=0' "" tok-a-0123456789ab
check "team a polls b1's notice" 403 b1
api GET /v1/jobs "" tok-admin-0123456789ab
[ "$(jq_ 'sorted(j["id"] for j in d["jobs"])')" = '["a1", "b1"]' ] || fail "admin sees $API_BODY"
api POST /v1/jobs/a1/cancel "" tok-view-0123456789ab
check "viewer cancels a1" 403

# --- bad bodies: 4xx naming the problem, nothing changes
api GET /v1/jobs "" tok-admin-0123456789ab
before=$(jq_ 'sorted((j["id"], j["state"]) for j in d["jobs"])')
api POST /v1/jobs '{"job_id": "m1", "gpus": 8,' tok-a-0123456789ab
check "malformed JSON" 400 'json|parse|syntax|end of|invalid'
api POST /v1/jobs '[1, 2, 3]' tok-a-0123456789ab
check "a JSON array" 400 'object'
api POST /v1/jobs '{"job_id":"m2","priority":2,"gpus":"eight","duration_s":3600}' tok-a-0123456789ab
check "gpus as a string" 400 gpus
api POST /v1/jobs '{"job_id":"m3","priority":2,"gpus":8,"duration_s":-5}' tok-a-0123456789ab
check "negative duration" 400 duration
api POST /v1/jobs '{"job_id":"m4","priority":9,"gpus":8,"duration_s":3600}' tok-a-0123456789ab
check "priority 9" 400 priority
api POST /v1/jobs '{"job_id":"m5","priority":2,"gpus":8,"duration_s":3600,"colour":"red"}' tok-a-0123456789ab
check "unknown field" 400 colour
api POST /v1/jobs '{"job_id":"m6","priority":2,"gpus":8,"gang_gpus":3,"duration_s":3600}' tok-a-0123456789ab
check "gang_gpus not dividing gpus" 400 gang
api POST /v1/jobs '{"job_id":"m7","priority":2,"gpus":12,"gang_gpus":12,"duration_s":3600}' tok-a-0123456789ab
check "a gang of 12 GPUs: neither inside one 8-GPU domain nor whole domains" 400 'gang|domain'
api POST /v1/jobs '{"job_id":"m8","priority":2,"gpus":64,"gang_gpus":8,"duration_s":3600}' tok-a-0123456789ab
check "more GPUs than the cluster" 400 'gpus|cluster'
api POST /v1/jobs "$(jobj a1)" tok-a-0123456789ab
check "duplicate job id" 409 "a1|already"
[ "$(jq_ 'd.get("state")')" != None ] || fail "a retry of team a's own a1 lacks its state: $API_BODY"
# --- teams are tenants: another team's id, events, leases, nodes, usage
api POST /v1/jobs "$(jobj a1)" tok-b-0123456789ab
check "team b submits team a's id a1" 409 "taken"
[ "$(jq_ 'd.get("state")')" = None ] || fail "team b learnt the state of a1: $API_BODY"
grep -q '"a"' <<<"$API_BODY" && fail "team b's 409 names team a: $API_BODY"
api GET /v1/jobs/b1 "" tok-a-0123456789ab
grep -q '"b"\|team b' <<<"$API_BODY" && fail "team a's 403 for b1 names team b: $API_BODY"
poll_until 10 sh -c "curl -s -H 'Authorization: Bearer tok-admin-0123456789ab' '$SERVE_URL/v1/nodes' | grep -q 'job:b1'" ||
    fail "b1 never ran (the admin's /v1/nodes has no job:b1)"
for who in tok-a-0123456789ab tok-view-0123456789ab; do
    api GET "/v1/events?limit=5000" "" $who
    check "team a reads events" 200
    [ "$(jq_ 'sum(1 for e in d["events"] if e.get("job") == "b1")')" = 0 ] || fail "team a sees b1 in events"
    [ "$(jq_ 'd["other_teams"] > 0')" = True ] || fail "team a's events do not count team b's: $API_BODY"
    [ "$(jq_ 'sum(1 for e in d["events"] if e.get("job") == "a1")')" -gt 0 ] || fail "team a misses a1 in events"
    api GET /v1/nodes "" $who
    grep -q 'b1' <<<"$API_BODY" && fail "team a sees b1 in /v1/nodes"
    [ "$(jq_ 'd["other_team_gpus"]')" = 8 ] || fail "team a's /v1/nodes other_team_gpus: $(jq_ 'd.get("other_team_gpus")')"
    api GET /v1/leases "" $who
    grep -q 'b1' <<<"$API_BODY" && fail "team a sees b1 in /v1/leases"
    api GET "/v1/usage?by=team" "" $who
    [ "$(jq_ 'sorted(set(r["team"] for r in d["rows"]) - {"a", "(other teams)", None})')" = '[]' ] ||
        fail "team a sees other teams by name in /v1/usage: $API_BODY"
done
api GET "/v1/events?limit=5000" "" tok-admin-0123456789ab
[ "$(jq_ 'sum(1 for e in d["events"] if e.get("job") == "b1")')" -gt 0 ] || fail "the admin does not see b1 in events"
[ "$(jq_ '"other_teams" in d')" = False ] || fail "the admin's events count hidden rows"
python3 -c '
import sys
pad = "x" * (2 * 1024 * 1024)
sys.stdout.write("{\"job_id\":\"big\",\"priority\":2,\"gpus\":8,\"duration_s\":3600,\"command\":\"%s\"}" % pad)' \
    >"$tmp/big.json"
API_STATUS=$(curl -s -o "$tmp/api.out" -w '%{http_code}' -X POST -H 'Authorization: Bearer tok-a-0123456789ab' \
    -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" "$SERVE_URL/v1/jobs")
API_BODY=$(cat "$tmp/api.out")
check "2 MiB body" 413 'large|limit|MiB|bytes|size'
api GET /v1/jobs/nonesuch "" tok-a-0123456789ab
check "unknown job" 404 nonesuch
api POST /v1/jobs/nonesuch/cancel "" tok-a-0123456789ab
check "cancel an unknown job" 404 nonesuch
api POST /v1/jobs/nonesuch/checkpoints '{"step":1,"committed":true,"progress_s":10}' tok-a-0123456789ab
check "checkpoint of an unknown job" 404 nonesuch
api POST /v1/services/nonesuch/demand '{"rps":1}' tok-admin-0123456789ab
check "demand for an unknown service" 404 nonesuch
api POST /v1/services/chat/demand '{"rps":-1}' tok-admin-0123456789ab
check "negative demand" 400 rps
api POST /v1/nodes/99/state '{"up":false}' tok-admin-0123456789ab
check "state of an unknown node" 404 '99|node'
api GET /v1/nonesuch "" tok-admin-0123456789ab
check "unknown route" 404
api GET /v1/jobs "" tok-admin-0123456789ab
after=$(jq_ 'sorted((j["id"], j["state"]) for j in d["jobs"])')
[ "$before" = "$after" ] || fail "the job list changed after bad requests: $before -> $after"

# --- the CLI maps the answers: 403/401 -> exit 2, 404 -> 3, with the server's message
"$TIDE_BIN" job b1 --token tok-a-0123456789ab >/dev/null 2>"$tmp/cli.e"
rc=$?
[ "$rc" = 2 ] || fail "tide job b1 as team a exited $rc, expected 2"
grep -q '^tide: .*b1' "$tmp/cli.e" || fail "tide job b1: stderr $(cat "$tmp/cli.e")"
TIDE_TOKEN=tok-a-0123456789ab "$TIDE_BIN" jobs --json >"$tmp/cli.o" 2>"$tmp/cli.e" || fail "TIDE_TOKEN: $(cat "$tmp/cli.e")"
grep -q '"a1"' "$tmp/cli.o" || fail "tide jobs with TIDE_TOKEN=tok-a-0123456789ab: $(cat "$tmp/cli.o")"
"$TIDE_BIN" job nonesuch --token tok-a-0123456789ab >/dev/null 2>"$tmp/cli.e"
rc=$?
[ "$rc" = 3 ] || fail "tide job nonesuch exited $rc, expected 3"
"$TIDE_BIN" submit --id c1 -p 2 -g 8 -d 1h >/dev/null 2>"$tmp/cli.e"
rc=$?
[ "$rc" = 2 ] || fail "tide submit without a token exited $rc, expected 2"
grep -q '^tide: ' "$tmp/cli.e" || fail "tide submit without a token: stderr $(cat "$tmp/cli.e")"
"$TIDE_BIN" submit --id c1 -p 2 -g 8 --gang 3 -d 1h --token tok-a-0123456789ab >/dev/null 2>"$tmp/cli.e"
rc=$?
[ "$rc" = 2 ] || fail "tide submit with a bad gang exited $rc, expected 2"

serve_stop
finish serve_auth
