#!/usr/bin/env bash
# End-to-end: every client command (submit, jobs, job, cancel, services,
# leases, events, usage, top) against a real `tide serve`, in human and --json
# modes; cursor following in `tide jobs`; errors (`tide: <message>`, exit
# status from the HTTP status; connection refused -> 6 naming the URL); --help.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

serve_start cli --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 60 || exit 1
T=$TIDE_BIN

api POST /v1/services '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 50}'
[ "$API_STATUS" = 200 ] || fail "POST /v1/services/chat/demand: $API_STATUS $API_BODY"

# run NAME CMD...: run a CLI command, keep stdout/stderr in $tmp/NAME.{o,e}, return its status
run() {
    local name=$1
    shift
    "$@" >"$tmp/$name.o" 2>"$tmp/$name.e"
}
# expect_ok NAME PATTERN CMD...: status 0 and PATTERN (grep -E) in stdout
expect_ok() {
    local name=$1 pat=$2
    shift 2
    run "$name" "$@"
    local rc=$?
    [ "$rc" -eq 0 ] || { fail "'$*' exited $rc: $(cat "$tmp/$name.e")"; return; }
    grep -Eq -- "$pat" "$tmp/$name.o" || fail "'$*': no /$pat/ in: $(head -20 "$tmp/$name.o")"
}
# expect_json NAME PYEXPR CMD...: status 0, stdout parses as JSON and PYEXPR (d = it) holds
expect_json() {
    local name=$1 expr=$2
    shift 2
    run "$name" "$@"
    local rc=$?
    [ "$rc" -eq 0 ] || { fail "'$*' exited $rc: $(cat "$tmp/$name.e")"; return; }
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert eval(sys.argv[2]), d' "$tmp/$name.o" "$expr" 2>"$tmp/$name.py" ||
        fail "'$*': JSON check '$expr' failed: $(tail -3 "$tmp/$name.py")"
}
# expect_fail NAME STATUS PATTERN CMD...: that status and PATTERN in stderr
expect_fail() {
    local name=$1 want=$2 pat=$3
    shift 3
    run "$name" "$@"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want ($(cat "$tmp/$name.e"))"
    grep -Eq -- "$pat" "$tmp/$name.e" || fail "'$*': no /$pat/ in stderr: $(cat "$tmp/$name.e")"
}

# --- submit: flags, --file, --json; the id comes back
expect_ok submit1 '^submitted s1$' "$T" submit --id s1 --team lab -p P2 -g 8 --gang 8 -d 2h \
    --ckpt-interval 30m --ckpt 60 --restore 2m
cat >"$tmp/job.json" <<'EOF'
{"job_id": "s2", "team": "lab", "priority": 3, "gpus": 16, "gang_gpus": 8, "dp_min": 1,
 "duration_s": 7200}
EOF
expect_ok submit2 '^submitted s2$' "$T" submit --file "$tmp/job.json"
expect_json submit3 'd["id"] == "s3"' "$T" submit --file "$tmp/job.json" --id s3 --json
expect_json submit4 'isinstance(d["id"], str) and d["id"]' "$T" submit -p 3 -g 1 -d 10m --json
expect_fail submit_dup 4 '^tide: .*(s1|already)' "$T" submit --id s1 -g 8 -d 1h
expect_fail submit_bad 2 'priority' "$T" submit --id x -g 8 -d 1h -p 7
expect_fail submit_gang 2 '^tide: .*gang' "$T" submit --id x -g 8 --gang 3 -d 1h

# --- jobs: table, JSON, filters, limit, cursor following across pages
expect_ok jobs 'ID +TEAM' "$T" jobs
grep -q '^s1 ' "$tmp/jobs.o" || fail "tide jobs: no row for s1"
expect_json jobs_json '{"s1", "s2", "s3"} <= {j["id"] for j in d["jobs"]}' "$T" jobs --json
expect_json jobs_team 'all(j["team"] == "lab" for j in d["jobs"]) and len(d["jobs"]) == 3' \
    "$T" jobs --team lab --json
expect_json jobs_prio 'all(j["priority"] == 3 for j in d["jobs"]) and len(d["jobs"]) >= 2' \
    "$T" jobs --priority P3 --json
expect_json jobs_limit 'len(d["jobs"]) == 2' "$T" jobs --limit 2 --json
seq 1 230 | xargs -P 8 -I{} curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
    --data-binary '{"job_id":"p{}","team":"bulk","priority":3,"gpus":1,"duration_s":600}' \
    "$SERVE_URL/v1/jobs"
expect_json jobs_pages 'len(d["jobs"]) == 230 and len({j["id"] for j in d["jobs"]}) == 230' \
    "$T" jobs --team bulk --json
expect_json jobs_pages_lim 'len(d["jobs"]) == 150' "$T" jobs --team bulk --limit 150 --json
run jobs_bulk "$T" jobs --team bulk
[ "$(grep -c '^p[0-9]' "$tmp/jobs_bulk.o")" = 230 ] || fail "tide jobs --team bulk: not 230 rows"

# --- job
expect_ok job 'state +(queued|running|reclaiming)' "$T" job s1
grep -Eq '^team +lab$' "$tmp/job.o" || fail "tide job s1: no team line"
expect_json job_json 'd["id"] == "s1" and d["team"] == "lab" and "state" in d' "$T" job s1 --json
expect_fail job_unknown 3 '^tide: .*nope' "$T" job nope

# --- cancel
expect_ok cancel '^cancelled s3 \(state cancelled\)$' "$T" cancel s3
expect_json cancel_state 'd["state"] == "cancelled"' "$T" job s3 --json
expect_fail cancel_unknown 3 '^tide: ' "$T" cancel nope

# --- services
expect_ok services '^chat +8 +100 ' "$T" services
expect_json services_json 'd["services"][0]["name"] == "chat"' "$T" services --json

# --- leases (training borrows the shared pool under leases in `elastic`)
poll_until 20 sh -c "'$T' leases --active --json | grep -q '\"job\"'" ||
    fail "no active lease appeared"
expect_ok leases 'LEASE +JOB +GPUS' "$T" leases
expect_ok leases_active 'LEASE' "$T" leases --active
expect_json leases_json 'isinstance(d["leases"], list) and len(d["leases"]) >= 1' "$T" leases --json
expect_json leases_active_json 'all(not l["returned"] for l in d["leases"])' "$T" leases --active --json

# --- events: table, JSON, cursor, follow with a limit (terminates by itself)
expect_ok events 'KIND' "$T" events
grep -q 'submit' "$tmp/events.o" || fail "tide events: no submit event"
expect_json events_json 'len(d["events"]) > 0 and isinstance(d["next"], int)' "$T" events --json
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
seqs = [e["seq"] for e in d["events"]]
assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs[:20]' "$tmp/events_json.o" ||
    fail "events not in seq order / duplicated"
first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"][0]["seq"])' "$tmp/events_json.o")
expect_json events_cursor 'all(e["seq"] > '"$first"' for e in d["events"])' "$T" events --cursor "$first" --json
expect_ok events_follow 'KIND' timeout 20 "$T" events --follow --limit 3 --interval 200ms
[ "$(grep -vc KIND "$tmp/events_follow.o")" = 3 ] || fail "events --follow --limit 3: not 3 lines"
run events_follow_json timeout 20 "$T" events --follow --limit 2 --json
[ "$(wc -l <"$tmp/events_follow_json.o")" = 2 ] || fail "events --follow --json: not 2 lines"
python3 -c '
import json, sys
for l in open(sys.argv[1]):
    assert "kind" in json.loads(l)' "$tmp/events_follow_json.o" || fail "events --follow --json: not JSON lines"

# --- usage
expect_ok usage 'TEAM +CLASS +GPU_HOURS' "$T" usage
grep -q '^total' "$tmp/usage.o" || fail "tide usage: no total row"
expect_json usage_json 'isinstance(d["rows"], list) and "total_gpu_hours" in d' "$T" usage --json
expect_ok usage_by 'TEAM +CLASS +GPU_HOURS' "$T" usage --by team,class --since 30d
expect_json usage_state 'all("state" in r for r in d["rows"])' "$T" usage --by state --json
expect_fail usage_bad 2 'dimension' "$T" usage --by colour

# --- top
expect_ok top 'GPUs \(S inference' "$T" top --once
grep -Eq '^n0 +H100 [STBR.x]{8}' "$tmp/top.o" || fail "tide top --once: no grid row for node 0: $(cat "$tmp/top.o")"
grep -q '^SERVICE' "$tmp/top.o" || fail "tide top --once: no services table"
grep -q '^QUEUED' "$tmp/top.o" || fail "tide top --once: no queue table"
expect_json top_json 'len(d["nodes"]) == 4 and d["services"][0]["name"] == "chat"' "$T" top --once --json

# --- server and token from flags and environment; unreachable daemon
expect_ok env_server 'chat' env -u TIDE_SERVER "$T" services --server "$SERVE_URL"
dead=$(free_port)
expect_fail refused 6 "http://127\\.0\\.0\\.1:$dead.*refused" "$T" jobs --server "http://127.0.0.1:$dead"
expect_fail refused_env 6 "http://127\\.0\\.0\\.1:$dead" env TIDE_SERVER="http://127.0.0.1:$dead" "$T" services
expect_fail https 2 'https' "$T" jobs --server https://127.0.0.1:1
expect_fail badopt 2 'bogus' "$T" jobs --bogus

# --- --help everywhere
for c in submit jobs job cancel services leases events usage top; do
    run "help_$c" "$T" "$c" --help || fail "tide $c --help exited non-zero"
    grep -q "^usage: tide $c" "$tmp/help_$c.o" || fail "tide $c --help: no usage line"
done
"$T" --help | grep -q '^  top ' || fail "tide --help does not list top"

api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz after the run: $API_STATUS"
serve_stop
finish cli_smoke
