#!/usr/bin/env bash
# End-to-end: every field of a service survives a restart of `tide serve`
# from its database (docs/api.md, POST /v1/services; the services table of
# docs/serve.md), and a backend that cannot stage weights refuses stage_s.
#  - POST a service with slo_target and stage_s (and the other optional
#    fields), stop, start again on the same database: GET gives them back;
#  - a restart with --services equal to the stored ones keeps the epoch; one
#    that differs only in stage_s replaces them;
#  - `tide serve --backend slurm` with a services file that stages exits 2
#    naming the service and the backend, before anything is written (no
#    Slurm needed: the refusal comes before the backend is created);
#  - a bad slo_target over the API is 400 naming the field.
# Environment: TIDE_BIN. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN
db=$tmp/tide.db

field() { jq_ "d['$1']"; }

serve_start a --db "$db" --cluster 2x8 --speed 10 || exit 1
api POST /v1/services '{"name":"chat","gpus_per_replica":8,"replica_rps":40,"min_replicas":1,"max_replicas":2,"fixed_replicas":1,"warmup_s":300,"stage_s":45,"slo_target":0.99}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: HTTP $API_STATUS $API_BODY"
api POST /v1/services '{"name":"x","gpus_per_replica":8,"replica_rps":1,"min_replicas":0,"warmup_s":60,"slo_target":1}'
[ "$API_STATUS" = 400 ] || fail "slo_target 1 answered HTTP $API_STATUS"
grep -q slo_target <<<"$API_BODY" || fail "the slo_target refusal does not name the field: $API_BODY"
serve_stop

serve_start b --db "$db" --speed 10 || exit 1
api GET /v1/services/chat
[ "$API_STATUS" = 200 ] || fail "GET chat after the restart: HTTP $API_STATUS"
[ "$(field stage_s)" = 45 ] || fail "stage_s after the restart: $(field stage_s) (want 45)"
[ "$(field slo_target)" = 0.99 ] || fail "slo_target after the restart: $(field slo_target) (want 0.99)"
[ "$(field warmup_s)/$(field max_replicas)/$(field fixed_replicas)" = 300/2/1 ] ||
    fail "other fields after the restart: $API_BODY"
api GET /v1/cluster
epoch=$(field epoch)
serve_stop

# --services equal to the stored services: same epoch; stage_s changed: taken
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas,fixed_replicas,slo_target,stage_s\nchat,8,40,1,300,2,1,0.99,45\n' >"$tmp/same.csv"
sed 's/,45$/,60/' "$tmp/same.csv" >"$tmp/stage60.csv"
serve_start c --db "$db" --cluster 2x8 --speed 10 --services "$tmp/same.csv" || exit 1
api GET /v1/cluster
[ "$(field epoch)" = "$epoch" ] || fail "the same --services started epoch $(field epoch) (was $epoch)"
serve_stop
serve_start d --db "$db" --cluster 2x8 --speed 10 --services "$tmp/stage60.csv" || exit 1
api GET /v1/services/chat
[ "$(field stage_s)" = 60 ] || fail "--services with stage_s 60 not taken: $(field stage_s)"
serve_stop

# the slurm backend cannot stage: a clear startup error, nothing written
new=$tmp/slurm.db
"$T" serve --backend slurm --cluster 2x8 --services "$tmp/same.csv" --db "$new" \
    --listen 127.0.0.1:0 --api-url http://127.0.0.1:9 --replica-command true >"$tmp/slurm.out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "serve --backend slurm with stage_s exited $rc: $(cat "$tmp/slurm.out")"
grep -q 'service chat: stage_s 45: the slurm backend cannot stage' "$tmp/slurm.out" ||
    fail "the refusal does not say why: $(cat "$tmp/slurm.out")"
[ -e "$new" ] && fail "the refused start wrote $new"

finish serve_service_fields
