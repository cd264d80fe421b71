#!/usr/bin/env bash
# End to end on a real local Slurm 22.05 (scripts/slurm-local.sh: 4 slurmd x 8 fake GPUs):
#
# 1. coexistence: a plain `sbatch` job (not one of tide's) holds 6 GPUs of a node of tide's
#    partition. tide sees them as foreign (GET /v1/nodes, `tide nodes`), then demand rises
#    and gangs are submitted: nothing of tide's lands on that node's GPUs, nothing stays
#    PENDING in Slurm, no rank fails, no work is booked lost. When the plain job ends, the
#    GPUs are tide's again and a waiting gang starts there.
# 2. shrink then commit: an elastic job of two gangs (every gang reports its checkpoints,
#    examples/slurm/train.sh) is shrunk by a demand rise; the gang left keeps committing:
#    tide counts its checkpoints (each step once) and no notice stays active.
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
TRAIN="bash $SRC/examples/slurm/train.sh"
REPLICA="bash $SRC/examples/slurm/replica.sh"

start_tide() { # NAME DB EXTRA...
    local name=$1 db=$2
    shift 2
    PORT=$(free_port)
    serve_start "$name" --backend slurm --db "$db" --listen "127.0.0.1:$PORT" --services "$tmp/services.csv" \
        --replica-command "$REPLICA" --workdir "$work" --slurm-partition tide \
        --control-period 5s "$@"
}
submit() { # ID GPUS EXTRA_JSON ENV_JSON
    api POST /v1/jobs "{\"job_id\":\"$1\",\"gpus\":$2,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\",\"env\":$4$3}"
    [ "$API_STATUS" = 201 ] || fail "submit $1: HTTP $API_STATUS $API_BODY"
}
checkpoint_stage() { [ "$fails" = 0 ] || finish slurm_coexist; }
job_field() { api GET "/v1/jobs/$1" && jq_ "$2"; }
backend_state_is() { [ "$(job_field "$1" "(d.get('backend') or {}).get('state','')")" = "$2" ]; }
ready_replicas_are() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = "$1" ]; }
foreign_on() { api GET /v1/nodes && jq_ "[n['foreign'] for n in d['nodes'] if n.get('name')=='$1'][0]"; }
foreign_is() { [ "$(foreign_on "$1")" = "$2" ]; }
tide_on() { squeue -h -t running,pending -o '%j %N %T' | awk -v n="$1" '$1 ~ /^tide\./ && $2 == n'; }

# ------------------------------------------------------------- 1. coexistence
start_tide coexist "$tmp/a.db" || { fail "daemon did not start"; finish slurm_coexist; }
poll_until 30 ready_replicas_are 1 || fail "the floor replica is not ready"
rnode=$(squeue -h -t running -o '%j %N' | awk '$1 ~ /^tide\.rep\./ {print $2; exit}')
fnode=gpu4
[ "$rnode" = gpu4 ] && fnode=gpu3
sbatch -Q -p tide -w "$fnode" --gres=gpu:6 -J user-train -o /dev/null --wrap 'sleep 600' ||
    fail "sbatch of a plain job failed"
user_running() { [ "$(squeue -h -n user-train -o '%T')" = RUNNING ]; }
poll_until 30 user_running || fail "the plain job is not RUNNING: $(squeue -h -n user-train -o '%T %R')"
poll_until 30 foreign_is "$fnode" 6 || fail "tide does not see 6 foreign GPUs on $fnode: $(foreign_on "$fnode")"
grep -q "node $fnode: 6 of its 8 GPUs held by jobs tide does not manage" "$SERVE_LOG" ||
    fail "no coexistence line in the daemon's log"
"$TIDE_BIN" nodes --server "$SERVE_URL" >"$tmp/nodes.txt" || fail "tide nodes failed"
awk -v n="$fnode" '$1 == n' "$tmp/nodes.txt" | grep -qw 6 || fail "tide nodes does not show the foreign GPUs: $(cat "$tmp/nodes.txt")"
checkpoint_stage
# demand for a second replica, then three 8-GPU jobs: 32 GPUs - 6 foreign - 16 serving = 10
api POST /v1/services/chat/demand '{"rps": 150}'
[ "$API_STATUS" = 200 ] || fail "demand: HTTP $API_STATUS"
poll_until 60 ready_replicas_are 2 || fail "2 replicas not ready"
ENV='{"STEP_S":"1","CKPT_EVERY":"5","CKPT_S":"1"}'
for j in co-1 co-2 co-3; do submit "$j" 8 "" "$ENV"; done
running_jobs() { api GET /v1/jobs && [ "$(jq_ "sum(1 for j in d['jobs'] if j['state']=='running')")" = "$1" ]; }
poll_until 30 running_jobs 1 || fail "one job should run: $(curl -s "$SERVE_URL/v1/jobs")"
for i in $(seq 20); do # 20 s of polls: nothing ever lands on the foreign node
    [ -z "$(tide_on "$fnode")" ] || { fail "tide placed on $fnode next to the plain job: $(tide_on "$fnode")"; break; }
    sleep 1
done
pend=$(squeue -h -t pending -o '%j %r' | awk '$1 ~ /^tide\./ && $2 != "JobHeldUser" && $2 != "JobHeldAdmin"')
[ -z "$pend" ] || fail "tide gangs pending in Slurm (placed on busy GPUs?): $pend"
api GET /v1/cluster
[ "$(jq_ "d['stats']['lost_gpu_hours'] == 0")" = True ] || fail "work booked lost: $(jq_ "d['stats']['lost_gpu_hours']")"
[ "$(jq_ "d['stats']['gpus_by_state']['foreign']")" = 6 ] || fail "gpus_by_state.foreign is not 6: $API_BODY"
api GET '/v1/events?limit=500'
[ "$(jq_ "any(e['kind'] in ('rank_failed','job_expired') for e in d['events'])")" = False ] ||
    fail "a rank failed or a job expired: $(jq_ "[e for e in d['events'] if e['kind'] in ('rank_failed','job_expired')]")"
[ "$(jq_ "any(e['kind']=='foreign' for e in d['events'])")" = True ] || fail "no foreign event in the log"
checkpoint_stage
# the plain job ends: its node is tide's again and a waiting job starts there
scancel -n user-train
poll_until 30 foreign_is "$fnode" 0 || fail "the foreign GPUs did not go back to 0"
poll_until 40 running_jobs 2 || fail "a waiting job did not start on the freed node"
on_f() { [ -n "$(tide_on "$fnode")" ]; }
poll_until 30 on_f || fail "nothing of tide's runs on $fnode after the plain job ended"
api GET /v1/cluster
[ "$(jq_ "d['stats']['lost_gpu_hours'] == 0")" = True ] || fail "work booked lost after the plain job ended"
serve_stop
scancel --quiet -u "$(id -un)"
poll_until 30 sh -c '[ -z "$(squeue -h -t pending,running,completing)" ]' || fail "Slurm did not drain"
checkpoint_stage

# ---------------------------------------------------------- 2. shrink then commit
start_tide shrink "$tmp/b.db" || { fail "daemon did not start"; finish slurm_coexist; }
poll_until 30 ready_replicas_are 1 || fail "floor replica not ready"
submit el-1 16 ',"gang_gpus":8,"dp_min":1' '{"STEP_S":"1","CKPT_EVERY":"4","CKPT_S":"1"}'
two_running() { [ "$(job_field el-1 "d['width']")" = 2 ] && backend_state_is el-1 RUNNING,RUNNING; }
poll_until 40 two_running || fail "el-1 does not run two gangs: $(job_field el-1 "d.get('backend')")"
checkpoint_stage
first_ck() { [ "$(job_field el-1 "d['checkpoints']")" -ge 1 ]; }
poll_until 40 first_ck || fail "no checkpoint counted while both gangs ran"
api POST /v1/services/chat/demand '{"rps": 250}' # three replicas: one gang must go
shrunk() { [ "$(job_field el-1 "d['width']")" = 1 ]; }
poll_until 90 shrunk || fail "el-1 was not shrunk: $(job_field el-1 "[d['width'], d.get('backend')]")"
checkpoint_stage
gang_left=$(squeue -h -t running -o '%j' | sed -n 's/^tide\.job\.el-1\.g\([0-9]*\)$/\1/p' | tr '\n' ' ')
echo "shrink: gang(s) left: $gang_left" >&2
ck_mid=$(job_field el-1 "d['checkpoints']")
committed_mid=$(job_field el-1 "d['committed_s']")
more() { [ "$(job_field el-1 "d['checkpoints'] >= $ck_mid + 2 and d['committed_s'] > $committed_mid")" = True ]; }
poll_until 40 more || fail "the gang left after the shrink does not get its checkpoints counted: $(job_field el-1 "[d['checkpoints'], d['committed_s']]")"
no_notice() { [ "$(job_field el-1 "d['notice'] is None or not d['notice'].get('active', True)")" = True ]; }
poll_until 10 no_notice || fail "a notice stays active after the shrink: $(job_field el-1 "d['notice']")"
# every gang reported while both ran, yet each step counted once
lines=$(grep -cE ' (ckpt|ckpt-signal) ' "$work/log/el-1.events")
steps=$(grep -E ' (ckpt|ckpt-signal) ' "$work/log/el-1.events" | sed -n 's/.* step=\([0-9]*\) .*/\1/p' | sort -u | wc -l)
ck=$(job_field el-1 "d['checkpoints']")
[ "$ck" -le "$steps" ] && [ "$ck" -lt "$lines" ] ||
    fail "checkpoints counted per report, not per step: $ck counted, $steps steps, $lines commits logged"
serve_stop
finish slurm_coexist
