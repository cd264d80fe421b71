#!/usr/bin/env bash
# End-to-end: the audit trail (docs/api.md, "Audit trail").
#  - every write route of the API (each non-GET operation of docs/openapi.json)
#    is exercised once, by the role that may use it, and appears in
#    `tide audit --json` with who (team, role), from where (127.0.0.1), what
#    (method, path, the request's bytes and SHA-256) and the outcome (status,
#    error code);
#  - refused writes are there too: a viewer's submit (403, role viewer), a
#    request without a token (401, role none, team "");
#  - --kind and --team filter; the table prints; the rows survive a restart,
#    and an acknowledged write's row survives a SIGKILL right after the answer;
#  - reading it needs an admin: a viewer and a submitter get 403 from
#    GET /v1/audit and `tide audit` exits non-zero.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
SRC=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

cat >"$tmp/tokens" <<'EOT'
# TOKEN TEAM ROLE
tok-admin-0123456789ab  ops admin
tok-a-0123456789ab      a   submitter
tok-view-0123456789ab   a   viewer
tok-rt-0123456789ab     a   router
EOT
ADM=tok-admin-0123456789ab SUB=tok-a-0123456789ab VIEW=tok-view-0123456789ab RT=tok-rt-0123456789ab
start() {
    serve_start audit --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 60 \
        --tokens "$tmp/tokens" --audit-keep 30d --audit-max-rows 10000
}
start || exit 1

expect() { [ "$API_STATUS" = "$2" ] || fail "$1: HTTP $API_STATUS, expected $2 ($API_BODY)"; }

# --- one request per write route
svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
api POST /v1/services "$svc" $ADM;                         expect "create service" 201
api PATCH /v1/services/chat '{"max_replicas":3}' $ADM;     expect "patch service" 200
api POST /v1/services/chat/demand '{"rps":50}' $RT;        expect "demand" 200
api POST /v1/jobs '{"job_id":"j1","priority":2,"gpus":8,"duration_s":3600}' $SUB
expect "submit" 201
api POST /v1/jobs/j1/checkpoints '{"step":1,"committed":false}' $SUB
api POST /v1/jobs/j1/notice/ack '' $SUB                    # none to acknowledge: refused, audited
api POST /v1/replicas/999/ready '' $RT                     # no such replica: refused, audited
api POST /v1/jobs/j1/cancel '' $SUB;                       expect "cancel" 200
"$TIDE_BIN" drain 0 --reason audit-test --token $ADM >/dev/null || fail "tide drain"
"$TIDE_BIN" resume 0 --token $ADM >/dev/null || fail "tide resume"
api POST /v1/admin/reload '' $ADM;                         expect "reload" 200
api POST /v1/services/chat/rehearse '' $ADM;               expect "rehearse" 202
api POST /v1/mode '{"mode":"enact"}' $ADM                  # already enacting: refused, audited
api POST /v1/models '{"name":"m1","service":"chat","gates":["acc>=0.5"]}' $ADM
expect "create model" 201
api POST /v1/models/m1/versions '{"job_id":"j1","step":1}' $SUB      # audited, answered or refused
api POST /v1/models/m1/versions/1/metrics '{"acc":0.9}' $SUB
api POST /v1/models/m1/canary '{"slo":0.999}' $RT
api POST /v1/models/m1/rollout/pause '' $ADM
api POST /v1/rl/j1 '{"max_staleness":1,"batch_size":1}' $SUB;    expect "register rl run" 201
api POST /v1/rl/j1/trajectories '{"trajectory_id":"t1","policy_version":0}' $SUB
expect "push a trajectory" 201
api POST /v1/rl/j1/step '{"step":1}' $SUB;                 expect "rl step" 200
# --- refused before the handler
api POST /v1/jobs '{"job_id":"v1","priority":2,"gpus":8,"duration_s":60}' $VIEW
expect "viewer submit" 403
api POST /v1/jobs '{"job_id":"n1","priority":2,"gpus":8,"duration_s":60}'
expect "submit without a token" 401

# --- reading it: admins only
api GET /v1/audit "" $VIEW;  expect "viewer reads the audit" 403
api GET /v1/audit "" $SUB;   expect "submitter reads the audit" 403
if "$TIDE_BIN" audit --token $VIEW >/dev/null 2>&1; then fail "tide audit as a viewer exits 0"; fi

check_rows() {
    "$TIDE_BIN" audit --token $ADM --json >"$tmp/audit.jsonl" || { fail "tide audit --json"; return; }
    python3 - "$tmp/audit.jsonl" "$SRC/docs/openapi.json" <<'PY' || fail "audit rows (above)"
import json, re, sys, hashlib
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
spec = json.load(open(sys.argv[2]))
bad = []
for path, ops in spec["paths"].items():
    for m in ops:
        if m == "get":
            continue
        rx = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
        hit = [r for r in rows if r["method"] == m.upper() and rx.match(r["path"])]
        if not hit:
            bad.append("no audit row for %s %s" % (m.upper(), path))
for r in rows:
    for k in ("id", "time", "team", "role", "peer", "method", "path", "kind", "request",
              "bytes", "sha256", "status", "error", "message"):
        if k not in r:
            bad.append("row %s has no %s" % (r.get("id"), k))
    if r["peer"] != "127.0.0.1":
        bad.append("row %s: peer %r" % (r["id"], r["peer"]))
    if len(r["request"]) == r["bytes"] and hashlib.sha256(r["request"].encode()).hexdigest() != r["sha256"]:
        bad.append("row %s: sha256 does not match the request" % r["id"])
    if (r["status"] >= 400) != (r["error"] is not None):
        bad.append("row %s: status %s with error %r" % (r["id"], r["status"], r["error"]))
def one(kind, status, team, role):
    if not any(r["kind"] == kind and r["status"] == status and r["team"] == team and r["role"] == role
               for r in rows):
        bad.append("no %s row with status %s by %s/%s" % (kind, status, team, role))
one("job.submit", 201, "a", "submitter")
one("job.submit", 403, "a", "viewer")
one("job.submit", 401, "", "none")
one("job.cancel", 200, "a", "submitter")
one("service.create", 201, "ops", "admin")
one("service.demand", 200, "a", "router")
one("node.state", 200, "ops", "admin")
one("admin.reload", 200, "ops", "admin")
one("service.rehearse", 202, "ops", "admin")
one("model.create", 201, "ops", "admin")
sub = [r for r in rows if r["kind"] == "job.submit" and r["status"] == 201]
if sub and '"job_id":"j1"' not in sub[0]["request"]:
    bad.append("the submit's request is not recorded: %r" % sub[0]["request"])
for b in bad:
    print(b, file=sys.stderr)
print(len(rows), "rows")
sys.exit(1 if bad else 0)
PY
}
check_rows

# filters and the table
n=$("$TIDE_BIN" audit --token $ADM --json --kind job.cancel | wc -l)
[ "$n" = 1 ] || fail "--kind job.cancel: $n rows, expected 1"
n=$("$TIDE_BIN" audit --token $ADM --json --team ops | python3 -c '
import json, sys; rows = [json.loads(l) for l in sys.stdin]
print(len(rows) if rows and all(r["team"] == "ops" for r in rows) else 0)')
[ "$n" -ge 5 ] || fail "--team ops: $n rows of team ops, expected >= 5"
"$TIDE_BIN" audit --token $ADM --since 1h >"$tmp/table" || fail "tide audit (table)"
grep -q '^TIME .*TEAM .*ROLE .*PEER .*KIND' "$tmp/table" || fail "table header: $(head -1 "$tmp/table")"
grep -q 'job.submit .*POST /v1/jobs .*403' "$tmp/table" || fail "table: no refused submit row"
future=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
n=$("$TIDE_BIN" audit --token $ADM --json --since "$future" | wc -l)
[ "$n" = 0 ] || fail "--since in the future: $n rows"
"$TIDE_BIN" audit --since nonsense --token $ADM >/dev/null 2>&1
[ $? = 2 ] || fail "--since nonsense: expected exit 2"

# the rows are in the database: they survive a restart, and the row of an
# acknowledged write survives a SIGKILL right after the answer
api POST /v1/jobs '{"job_id":"k1","priority":2,"gpus":8,"duration_s":60}' $SUB
expect "submit before the kill" 201
serve_kill9
start || exit 1
check_rows
api GET "/v1/audit?kind=job.submit&team=a" "" $ADM
n=$(jq_ 'len([r for r in d["audit"] if "\"k1\"" in r["request"] and r["status"] == 201])')
[ "$n" = 1 ] || fail "the acknowledged submit before SIGKILL has $n audit rows"
serve_stop
finish serve_audit
