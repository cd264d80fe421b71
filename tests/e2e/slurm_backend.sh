#!/usr/bin/env bash
# End to end: `tide serve --backend slurm` on a real local Slurm 22.05 (munge,
# slurmctld, 4 slurmd x 8 fake GPUs, scripts/slurm-local.sh), driven through the API
# as a user would. Real Slurm runs on the wall clock, so this waits on it (bounded polls).
#
# 1. reclaim: three training jobs borrow GPUs; demand rises to need the whole cluster;
#    the two well-behaved jobs get the checkpoint signal, commit a checkpoint through
#    the API and are requeued (held) in Slurm; the replicas start on their nodes. The
#    third ignores the signal: it is requeued at the checkpoint deadline and its lost
#    work is counted.
# 2. control-plane loss: tide is killed (SIGKILL) while a job holds a lease; Slurm ends
#    the job at its time limit, before the lease's latest return; tide restarts, finds
#    the job gone (JOB_EXPIRED) and runs it again.
# 3. node drained mid-run: the job on it is requeued and restarted on another node; the
#    node comes back when resumed.
# 4. Slurm unreachable: slurmctld is stopped; the API keeps answering at once, a job is
#    accepted, tide_backend_up drops to 0; slurmctld comes back and the job runs.
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
    serve_start "$name" --backend slurm --db "$db" --listen "127.0.0.1:$PORT" \
        --services "$tmp/services.csv" --replica-command "$REPLICA" --workdir "$work" \
        --slurm-partition tide --control-period 5s "$@"
}

submit() { # ID ENV_JSON
    api POST /v1/jobs "{\"job_id\":\"$1\",\"gpus\":8,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\",\"env\":$2}"
    [ "$API_STATUS" = 201 ] || fail "submit $1: HTTP $API_STATUS $API_BODY"
}

# stop at the first failed stage: later stages would only time out
checkpoint_stage() { [ "$fails" = 0 ] || finish slurm_backend; }
job_field() { api GET "/v1/jobs/$1" && jq_ "$2"; }
backend_state_is() { [ "$(job_field "$1" "(d.get('backend') or {}).get('state','')")" = "$2" ]; }
ready_replicas_are() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = "$1" ]; }
log_has() { grep -q " $2 " "$work/log/$1.events" 2>/dev/null; }
metric() { curl -s "$SERVE_URL/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s += $2} END {print s + 0}'; }
slurm_jobs_named() { squeue -h -t all -n "$1" -o '%i %T %N' 2>/dev/null; }

# ------------------------------------------------------------------ 1. reclaim
start_tide reclaim "$tmp/a.db" || { fail "daemon did not start"; finish slurm_backend; }
poll_until 30 ready_replicas_are 1 || fail "the floor replica is not ready (its script reports through the API)"
api POST /v1/replicas/999/ready '{}'
[ "$API_STATUS" = 404 ] || fail "ready of an unknown replica: HTTP $API_STATUS (want 404)"
api POST /v1/replicas/abc/ready '{}'
[ "$API_STATUS" = 400 ] || fail "ready of 'abc': HTTP $API_STATUS (want 400)"
api POST /v1/replicas/0/ready '{}'
[ "$API_STATUS" = 200 ] && [ "$(jq_ "d['state']")" = ready ] || fail "ready again: HTTP $API_STATUS $API_BODY"
api POST /v1/jobs '{"gpus": 8, "duration_s": 60}'
[ "$API_STATUS" = 400 ] || fail "a job without a command must be refused with the slurm backend: HTTP $API_STATUS"
GOOD='{"STEP_S":"0.5","CKPT_EVERY":"100000","CKPT_S":"2"}'
BAD='{"STEP_S":"0.5","CKPT_EVERY":"100000","CKPT_S":"2","IGNORE_SIGNAL":"1"}'
submit good-1 "$GOOD"
submit good-2 "$GOOD"
submit bad-3 "$BAD"
for j in good-1 good-2 bad-3; do
    poll_until 40 backend_state_is "$j" RUNNING || fail "$j is not RUNNING in Slurm: $(job_field "$j" "d.get('backend')")"
done
checkpoint_stage
api GET /v1/leases
[ "$(jq_ "len([l for l in d['leases'] if not l['returned']])")" = 3 ] || fail "three leases expected: $API_BODY"
# a Slurm time limit never past the lease (lease-max is 6 h by default: limits are set)
lim=$(squeue -h -n tide.job.good-1.g0 -o '%l')
[ -n "$lim" ] && [ "$lim" != UNLIMITED ] || fail "good-1 has no Slurm time limit ($lim)"
sleep 2 # a few training steps
t_rise=$(date +%s)
api POST /v1/services/chat/demand '{"rps": 350}'
[ "$API_STATUS" = 200 ] || fail "demand: HTTP $API_STATUS"
poll_until 120 ready_replicas_are 4 || fail "4 replicas not ready within 120 s of the rise: $(curl -s "$SERVE_URL/v1/services")"
t_cap=$(date +%s)
checkpoint_stage
for j in good-1 good-2; do
    log_has "$j" ckpt-signal || fail "$j did not log the checkpoint signal"
    poll_until 20 backend_state_is "$j" "PENDING(held)" || fail "$j not requeued held in Slurm: $(job_field "$j" "d.get('backend')")"
    [ "$(job_field "$j" "d['state']")" = queued ] || fail "$j should be queued in tide again"
    [ "$(job_field "$j" "d['checkpoints'] >= 1 and d['committed_s'] > 0")" = True ] || fail "$j: no committed checkpoint recorded: $API_BODY"
    [ "$(job_field "$j" "d['lost_gpu_s'] == 0")" = True ] || fail "$j lost work although it checkpointed: $(job_field "$j" "d['lost_gpu_s']")"
done
log_has bad-3 ckpt-signal-ignored || fail "bad-3 did not get (and ignore) the signal"
poll_until 60 backend_state_is bad-3 "PENDING(held)" || fail "bad-3 not requeued at its deadline: $(job_field bad-3 "d.get('backend')")"
[ "$(job_field bad-3 "d['lost_gpu_s'] > 0")" = True ] || fail "bad-3: lost work not counted: $API_BODY"
api GET '/v1/events?limit=500'
[ "$(jq_ "any(e['kind']=='job_stop' and e['job']=='bad-3' and e['reason']=='deadline' for e in d['events'])")" = True ] ||
    fail "no job_stop(deadline) for bad-3 in the event log"
[ "$(jq_ "sum(1 for e in d['events'] if e['kind']=='job_stop' and e['reason']=='reclaim')")" = 2 ] ||
    fail "two reclaim stops expected"
# the replicas run where the training ran: every node serves
reps_nodes=$(squeue -h -t running -o '%j %N' | awk '$1 ~ /^tide\.rep\./ {print $2}' | sort | tr '\n' ' ')
[ "$reps_nodes" = "gpu1 gpu2 gpu3 gpu4 " ] || fail "replicas should cover gpu1..gpu4, run on: $reps_nodes"
[ "$(metric tide_backend_signals_total)" -ge 3 ] || fail "tide_backend_signals_total < 3"
[ "$(metric tide_backend_requeues_total)" -ge 3 ] || fail "tide_backend_requeues_total < 3"
[ "$(metric tide_backend_up)" = 1 ] || fail "tide_backend_up is not 1"
echo "reclaim: inference capacity $((t_cap - t_rise)) s after the rise" >&2
serve_stop
scancel --quiet -u "$(id -un)"
poll_until 30 sh -c '[ -z "$(squeue -h -t pending,running,completing)" ]' || fail "Slurm did not drain"

# ------------------------------------------------- 2. control-plane loss (kill -9)
start_tide loss "$tmp/b.db" --lease-max 120s || { fail "daemon did not start"; finish slurm_backend; }
poll_until 30 ready_replicas_are 1 || fail "floor replica not ready"
submit lease-1 '{"STEP_S":"1","CKPT_EVERY":"10","CKPT_S":"1"}'
poll_until 40 backend_state_is lease-1 RUNNING || fail "lease-1 not RUNNING"
checkpoint_stage
sid1=$(job_field lease-1 "d['backend']['ids']")
api GET /v1/leases
lr=$(jq_ "[l['latest_return_s'] for l in d['leases'] if l['job']=='lease-1' and not l['returned']][0]")
enow=$(curl -s "$SERVE_URL/metrics" | awk '$1 == "tide_engine_time_seconds" {print int($2)}')
deadline_unix=$(($(date +%s) + lr - enow))
serve_kill9
t_kill=$(date +%s)
ended() { scontrol -o show job "$sid1" 2>/dev/null | grep -q 'JobState=TIMEOUT'; }
poll_until 150 ended || fail "Slurm did not end lease-1 (job $sid1) at its time limit: $(scontrol -o show job "$sid1")"
end_iso=$(scontrol -o show job "$sid1" | sed -n 's/.* EndTime=\([^ ]*\).*/\1/p')
end_unix=$(date -d "$end_iso" +%s 2>/dev/null || echo 0)
[ "$end_unix" -gt 0 ] && [ "$end_unix" -le "$deadline_unix" ] ||
    fail "lease-1 ended at $end_iso ($end_unix), after its lease's latest return ($deadline_unix)"
checkpoint_stage
echo "control-plane loss: tide killed at $t_kill, Slurm ended the job at $end_unix, lease deadline $deadline_unix" >&2
start_tide loss2 "$tmp/b.db" || { fail "daemon did not restart"; finish slurm_backend; }
grep -q '1 running jobs requeued' "$SERVE_LOG" || fail "recovery did not requeue the expired job: $(grep recovered "$SERVE_LOG")"
poll_until 60 backend_state_is lease-1 RUNNING || fail "lease-1 did not run again after the restart"
checkpoint_stage
sid2=$(job_field lease-1 "d['backend']['ids']")
[ "$sid2" != "$sid1" ] || fail "lease-1 should run as a new Slurm job (the old one timed out)"
api GET '/v1/events?limit=500'
[ "$(jq_ "any(e['kind']=='job_expired' and e['job']=='lease-1' for e in d['events'])")" = True ] ||
    fail "no job_expired event for lease-1"
[ "$(job_field lease-1 "d['preemptions']")" -ge 1 ] || fail "the expiry should count as a preemption: $API_BODY"

# ----------------------------------------------------------- 3. node drained
node=$(job_field lease-1 "d['backend']['nodes']")
case "$node" in gpu[1-4]) ;; *) fail "lease-1 runs on '$node'"; finish slurm_backend ;; esac
scontrol update nodename="$node" state=drain reason=e2e-drain
node_up() { api GET /v1/nodes && [ "$(jq_ "[n['up'] for n in d['nodes'] if n.get('name')=='$1'][0]")" = "$2" ]; }
poll_until 30 node_up "$node" False || fail "tide does not see $node drained"
moved() { n=$(job_field lease-1 "d['backend']['nodes']"); backend_state_is lease-1 RUNNING && [ -n "$n" ] && [ "$n" != "$node" ]; }
poll_until 90 moved || fail "lease-1 did not move off the drained $node: $(job_field lease-1 "d.get('backend')")"
[ "$(job_field lease-1 "d['backend']['restarts'] >= 1")" = True ] || fail "the requeue should count as a Slurm restart: $API_BODY"
scontrol update nodename="$node" state=resume
poll_until 30 node_up "$node" True || fail "tide does not see $node back"
checkpoint_stage

# ------------------------------------------------------- 4. Slurm unreachable
ctld_pid=$(cat "$TIDE_SLURM_DIR/pids/slurmctld.pid")
kill -TERM "$ctld_pid"
poll_until 20 sh -c "! [ -r /proc/$ctld_pid/stat ] || [ \"\$(awk '{print \$3}' /proc/$ctld_pid/stat)\" = Z ]" ||
    fail "slurmctld did not stop"
backend_down() { [ "$(metric tide_backend_up)" = 0 ]; }
poll_until 40 backend_down || fail "tide_backend_up did not drop to 0 with slurmctld stopped"
t0=${EPOCHREALTIME/./}
submit outage-1 '{"STEP_S":"1","CKPT_EVERY":"10","CKPT_S":"1"}'
api GET /v1/jobs/outage-1
t1=${EPOCHREALTIME/./}
[ $(((t1 - t0) / 1000)) -lt 3000 ] || fail "the API took $(((t1 - t0) / 1000)) ms to answer during the outage"
[ "$(jq_ "d['state']")" = running ] || fail "outage-1 should be started by the engine during the outage: $API_BODY"
grep -q 'Slurm unreachable' "$SERVE_LOG" || fail "no 'Slurm unreachable' line in the daemon's log"
slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not restart"
backend_up() { [ "$(metric tide_backend_up)" = 1 ]; }
poll_until 60 backend_up || fail "tide_backend_up did not come back"
poll_until 90 backend_state_is outage-1 RUNNING || fail "outage-1 never ran in Slurm after the outage: $(job_field outage-1 "d.get('backend')")"
backend_state_is lease-1 RUNNING || fail "lease-1 should have kept running through the outage"
grep -q 'Slurm answers again' "$SERVE_LOG" || fail "no 'Slurm answers again' line in the daemon's log"
serve_stop
finish slurm_backend
