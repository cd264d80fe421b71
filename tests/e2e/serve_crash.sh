#!/usr/bin/env bash
# End-to-end: `tide serve` killed with SIGKILL and restarted on the same
# database.
#  1. Three rounds, each killed during a burst of concurrent submissions
#     (xargs -P 16 curl POSTs with job ids, carried by group commits of
#     several writes): after the restarts every job that got a 201 is there
#     exactly once, and no id is listed twice; every job there (answered or
#     not) has its audit row (job.submit, 201), written in the job's own
#     transaction, and no 201 row names a job that is not there.
#  2. During a reclaim (after the job's notice, before its checkpoint commits):
#     after the restart no GPU is owned twice (/v1/nodes, /v1/cluster stats add
#     up), /healthz is ok, the job is queued or running again, and the work it
#     lost is counted (lost_gpu_s or preemptions).
# Both run with engine snapshots every few steps (--snapshot-every): each
# restart restores the newest snapshot and its log says it replayed only the
# steps after it (at most N + 1: a snapshot is written in the next step's
# transaction).
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

DB=$tmp/tide.db
ARGS=(--db "$DB" --cluster 4x8:H100 --policy elastic --speed 60 --snapshot-every 25)

# replayed_after_snapshot LOG N: the recovery in LOG restored a snapshot and
# replayed at most N + 1 steps after it
replayed_after_snapshot() {
    local line k
    line=$(grep -o 'replayed [0-9]* steps after the snapshot of step [0-9]*' "$1" | tail -1)
    [ -n "$line" ] || { echo "no recovery from a snapshot in $1: $(grep recovered "$1")" >&2; return 1; }
    k=$(echo "$line" | cut -d' ' -f2)
    echo "$1: $line" >&2
    [ "$k" -le $(($2 + 1)) ] || { echo "replayed $k steps, more than $2 + 1" >&2; return 1; }
}
svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'

# all_jobs: every job, following cursors, as JSON {"jobs": [...]} on stdout
all_jobs() { "$TIDE_BIN" jobs --json; }

# ------------------------------------------------------------ 1. bursts
# Three rounds on one database: 16 concurrent clients submit (the group
# commit carries several writes per transaction: checked on /metrics), the
# daemon is killed mid-burst and restarted.
serve_start crash1 "${ARGS[@]}" || exit 1
api POST /v1/services "$svc"
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 50}'

: >"$tmp/burst.txt"
export SERVE_URL
for round in 1 2 3; do
    [ "$round" = 1 ] || serve_start "crash1r$round" "${ARGS[@]}" || exit 1
    seq 1 2000 | xargs -P 16 -I{} sh -c '
code=$(curl -s -o /dev/null -w "%{http_code}" --max-time 10 -X POST -H "Content-Type: application/json" \
  --data-binary "{\"job_id\":\"k$1-{}\",\"team\":\"burst\",\"priority\":3,\"gpus\":1,\"duration_s\":600}" \
  "$SERVE_URL/v1/jobs")
echo "k$1-{} $code" >>"$0"' "$tmp/burst.txt" "$round" &
    xpid=$!
    EXTRA_PIDS+=("$xpid")
    enough() { [ "$(grep -c "^k$round-.* 201$" "$tmp/burst.txt")" -ge 150 ]; }
    poll_until 60 enough || fail "round $round: fewer than 150 submissions answered 201 within 60 s"
    kill -0 "$xpid" 2>/dev/null || fail "round $round: the burst ended before the kill (make it longer)"
    curl -s "$SERVE_URL/metrics" >"$tmp/metrics.$round"
    serve_kill9
    kill -TERM "$xpid" 2>/dev/null # start no more requests; those in flight finish
    wait "$xpid"
    # xargs' children (sh + curl, named by the burst file in their arguments) may still be
    # writing their last lines
    burst_done() { ! pgrep -f "$tmp/burst.txt" >/dev/null; }
    poll_until 15 burst_done || fail "round $round: burst requests still running 15 s after the kill"
    # several writes per transaction: the batched path is the one killed
    python3 - "$tmp/metrics.$round" <<'EOF' || fail "round $round: no group commit carried two writes"
import sys
m = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("tide_api_")}
c, w = m["tide_api_commits_total"], m["tide_api_writes_total"]
print("commits %d, writes %d" % (c, w), file=sys.stderr)
assert c > 0 and w > c
EOF
done
ok201=$(grep -c ' 201$' "$tmp/burst.txt")
other=$(grep -vc ' 201$' "$tmp/burst.txt")
echo "bursts: $ok201 answered 201, $other not (killed in flight or refused)" >&2
grep -v ' 201$' "$tmp/burst.txt" | grep -Ev ' (000|409|503)$' | head -3 |
    while read -r l; do fail "unexpected answer during the burst: $l"; done

serve_start crash1b "${ARGS[@]}" || exit 1
replayed_after_snapshot "$SERVE_LOG" 25 || fail "restart after the bursts: not recovered from a snapshot"
all_jobs >"$tmp/jobs1.json" || fail "listing jobs after the restart failed"
python3 - "$tmp/burst.txt" "$tmp/jobs1.json" <<'EOF' || fail "burst: committed jobs lost or duplicated"
import collections, json, sys
got = [l.split() for l in open(sys.argv[1])]
ok = {i for i, c in got if c == "201"}
jobs = json.load(open(sys.argv[2]))["jobs"]
count = collections.Counter(j["id"] for j in jobs)
dups = [i for i, n in count.items() if n > 1]
assert not dups, "listed twice: %s" % dups[:10]
lost = sorted(ok - set(count))
assert not lost, "%d jobs answered 201 are missing: %s" % (len(lost), lost[:10])
sent = {i for i, c in got}
extra = sorted(set(count) - sent)
assert not extra, "jobs nobody submitted: %s" % extra[:10]
print("bursts: %d committed, all present once; %d in all after restart" % (len(ok), len(count)))
EOF
# the audit trail: a submission's row commits with it, so the jobs and the 201 rows
# match exactly, whatever the kills interrupted
: >"$tmp/audit.jsonl"
after=0
while :; do
    curl -sf "$SERVE_URL/v1/audit?kind=job.submit&limit=5000&after=$after" >"$tmp/audit.page" ||
        fail "GET /v1/audit after the restart failed"
    n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(json.dumps(r)) for r in d["audit"]]; print(len(d["audit"]), d["next"], file=sys.stderr)' "$tmp/audit.page" 2>&1 >>"$tmp/audit.jsonl")
    [ "${n% *}" = 0 ] && break
    after=${n#* }
done
python3 - "$tmp/burst.txt" "$tmp/jobs1.json" "$tmp/audit.jsonl" <<'EOF' || fail "burst: audit rows and committed jobs differ"
import json, sys
ok = {l.split()[0] for l in open(sys.argv[1]) if l.split()[1] == "201"}
jobs = {j["id"] for j in json.load(open(sys.argv[2]))["jobs"] if j["id"].startswith("k")}
rows = [json.loads(l) for l in open(sys.argv[3])]
audited = {json.loads(r["request"])["job_id"] for r in rows if r["status"] == 201}
missing = sorted(jobs - audited)
assert not missing, "%d committed jobs have no 201 audit row: %s" % (len(missing), missing[:10])
assert ok <= audited
ghost = sorted(audited - jobs)
assert not ghost, "201 audit rows for jobs that are not there: %s" % ghost[:10]
print("bursts: %d jobs, each with its 201 audit row (%d rows of job.submit)" % (len(jobs), len(rows)))
EOF
# each committed job readable by id, and resubmitting one is a conflict (not a duplicate)
first_ok=$(grep ' 201$' "$tmp/burst.txt" | head -1 | cut -d' ' -f1)
api GET "/v1/jobs/$first_ok"
[ "$API_STATUS" = 200 ] || fail "GET /v1/jobs/$first_ok after restart: $API_STATUS"
api POST /v1/jobs "{\"job_id\":\"$first_ok\",\"team\":\"burst\",\"priority\":3,\"gpus\":1,\"duration_s\":600}"
[ "$API_STATUS" = 409 ] || fail "resubmitting $first_ok after restart: $API_STATUS (expected 409)"
api GET /v1/services
[ "$(jq_ 'd["services"][0]["name"]')" = chat ] || fail "service lost after restart: $API_BODY"
serve_stop

# ------------------------------------------------------------ 2. a reclaim
DB=$tmp/tide2.db
ARGS=(--db "$DB" --cluster 4x8:H100 --policy elastic --speed 60 --snapshot-every 3)
serve_start crash2 "${ARGS[@]}" || exit 1
api POST /v1/services "$svc"
api POST /v1/services/chat/demand '{"rps": 50}'
# 24 GPUs, not elastic (dp_min = width 3): a reclaim has to checkpoint and requeue it.
# ckpt_s 600 engine seconds = 10 s of wall time at --speed 60: the kill lands in it.
api POST /v1/jobs '{"job_id":"r1","team":"lab","priority":2,"gpus":24,"gang_gpus":8,"dp_min":3,"duration_s":864000,"ckpt_interval_s":3600,"ckpt_s":600,"restore_s":60}'
[ "$API_STATUS" = 201 ] || fail "submit r1: $API_STATUS $API_BODY"
running() { api GET /v1/jobs/r1; [ "$(jq_ 'd["state"]')" = running ]; }
poll_until 30 running || fail "r1 did not start within 30 s: $API_BODY"
leased() { api GET '/v1/leases?active=1'; [ "$(jq_ 'len([l for l in d["leases"] if l["job"] == "r1"])')" -ge 1 ]; }
poll_until 10 leased || fail "r1 holds no lease: $API_BODY"
# let it make progress and commit at least one periodic checkpoint (1 h = 60 s wall is too
# long; report one through the API instead, as the job would)
api POST /v1/jobs/r1/checkpoints '{"step":100,"bytes":1000000,"shards":8,"committed":true,"progress_s":60}'
case "$API_STATUS" in 200 | 201) ;; *) fail "POST checkpoints: $API_STATUS $API_BODY" ;; esac

# demand rises: 3 replicas needed, the shared pool has to come back from r1
api POST /v1/services/chat/demand '{"rps": 260}'
got_notice=0
for _ in 1 2 3; do
    curl -s --max-time 40 "$SERVE_URL/v1/jobs/r1/notice?wait=30" >"$tmp/notice.json"
    if python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["notice"]; assert n and n["reason"]=="reclaim"' "$tmp/notice.json" 2>/dev/null; then
        got_notice=1
        break
    fi
done
[ "$got_notice" = 1 ] || fail "no reclaim notice for r1: $(cat "$tmp/notice.json")"
api GET /v1/jobs/r1
state_before=$(jq_ 'd["state"]')
[ "$state_before" = reclaiming ] || fail "r1 is '$state_before' after its notice (expected reclaiming)"
serve_kill9 # mid-reclaim: notice sent, no checkpoint committed

serve_start crash2b "${ARGS[@]}" || exit 1
replayed_after_snapshot "$SERVE_LOG" 3 || fail "restart mid-reclaim: not recovered from a snapshot"
api GET /healthz
[ "$(jq_ 'd["ok"]')" = True ] || fail "healthz after the restart: $API_BODY"
# no GPU owned twice; the cluster's counts add up
check_gpus() {
    curl -s "$SERVE_URL/v1/nodes" >"$tmp/nodes.json"
    curl -s "$SERVE_URL/v1/cluster" >"$tmp/cluster.json"
    curl -s "$SERVE_URL/v1/jobs/r1" >"$tmp/r1.json"
    python3 - "$tmp/nodes.json" "$tmp/cluster.json" "$tmp/r1.json" <<'EOF'
import collections, json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
cl = json.load(open(sys.argv[2]))
r1 = json.load(open(sys.argv[3]))
ids = [g["gpu"] for n in nodes for g in n["gpus"]]
assert len(ids) == len(set(ids)) == cl["gpus"] == 32, ("gpu ids", ids)
owners = collections.Counter(g["owner"] for n in nodes for g in n["gpus"] if g["owner"])
held = owners.get("job:r1", 0)
if r1["state"] in ("running", "reclaiming"):
    assert held == r1["width"] * r1["gang_gpus"], ("r1 holds", held, r1)
else:
    assert held == 0, ("queued r1 still holds GPUs", held)
assert sum(owners.values()) <= 32
EOF
}
check_gpus || fail "GPU ownership after the restart: $(cat "$tmp/nodes.json" | head -c 600)"
again() {
    api GET /v1/jobs/r1
    case "$(jq_ 'd["state"]')" in queued | running) ;; *) return 1 ;; esac
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d.get("lost_gpu_s", 0) > 0 or d.get("preemptions", 0) >= 1' "$API_BODY"
}
poll_until 60 again || fail "r1 is not queued/running again with its loss counted: $API_BODY"
check_gpus || fail "GPU ownership once r1 settled"
api GET /healthz
[ "$(jq_ 'd["ok"]')" = True ] || fail "healthz at the end: $API_BODY"
# the reclaim finished: a second replica came up on the returned GPUs
ready() { api GET /v1/services; [ "$(jq_ 'd["services"][0]["ready"]')" -ge 2 ]; }
poll_until 60 ready || fail "services after the reclaim: $API_BODY"
serve_stop
finish serve_crash
