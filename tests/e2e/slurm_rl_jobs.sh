#!/usr/bin/env bash
# End to end: an RL job (POST /v1/rl/{job} with a spec) through `tide serve --backend
# slurm` on a real local Slurm (scripts/slurm-local.sh, 4 x 8 fake GPUs). Every job of it
# runs examples/slurm/train.sh, which answers the checkpoint signal by committing through
# the API: for a pool job that commit is the end of its drain.
#  - at low demand the trainer, the dedicated rollout and the pool job run in Slurm, the
#    pool job (P3) under a lease;
#  - a demand rise: the pool job gets the checkpoint signal (a drain), commits and is
#    requeued held in Slurm, queued in tide, while the trainer keeps RUNNING in Slurm and
#    is never stopped.
# Real Slurm runs on the wall clock: bounded polls. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
PORT=$(free_port)
serve_start rl --backend slurm --db "$tmp/rl.db" --listen "127.0.0.1:$PORT" --check \
    --services "$tmp/services.csv" --replica-command "bash $SRC/examples/slurm/replica.sh" \
    --workdir "$work" --slurm-partition tide --control-period 5s ||
    { fail "daemon did not start"; finish slurm_rl_jobs; }

job_field() { api GET "/v1/jobs/$1" && jq_ "$2"; }
backend_state_is() { [ "$(job_field "$1" "(d.get('backend') or {}).get('state','')")" = "$2" ]; }
ready_replicas_are() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = "$1" ]; }

poll_until 30 ready_replicas_are 1 || fail "the floor replica is not ready"
SPEC="{\"spec\":{\"team\":\"rl\",\"duration_s\":36000,\"trainer_gpus\":8,\"step_s\":60,\"batch\":64,\"rollout_gpus\":2,\"replica_tps\":0.5,\"max_staleness\":2,\"min_replicas\":1,\"max_replicas\":5,\"drain_s\":20,\"sync_s\":1,\"command\":\"bash $SRC/examples/slurm/train.sh\"}}"
api POST /v1/rl/grpo "${SPEC/,\"command\":*\}\}/\}\}}"
[ "$API_STATUS" = 400 ] && grep -q command <<<"$API_BODY" || fail "a spec without a command (slurm backend): $API_STATUS $API_BODY"
api POST /v1/rl/grpo "$SPEC"
[ "$API_STATUS" = 201 ] || fail "register with a spec: $API_STATUS $API_BODY"
for j in grpo-trainer grpo-rollout grpo-pool-1; do
    poll_until 60 backend_state_is "$j" RUNNING || fail "$j is not RUNNING in Slurm: $(job_field "$j" "d.get('backend')")"
done
[ "$(job_field grpo-pool-1 "d['priority'] == 3 and d['lease'] is not None")" = True ] ||
    fail "the pool job is not a P3 job on a lease: $API_BODY"
[ "$fails" = 0 ] || finish slurm_rl_jobs

api POST /v1/services/chat/demand '{"rps": 150}'
[ "$API_STATUS" = 200 ] || fail "demand: HTTP $API_STATUS"
poll_until 90 backend_state_is grpo-pool-1 "PENDING(held)" ||
    fail "the pool job was not drained and requeued: $(job_field grpo-pool-1 "d.get('backend')")"
grep -q " ckpt-signal " "$work/log/grpo-pool-1.events" 2>/dev/null || fail "the pool job did not get the signal (its drain)"
[ "$(job_field grpo-pool-1 "d['state']")" = queued ] || fail "the pool job should be queued in tide: $API_BODY"
backend_state_is grpo-trainer RUNNING || fail "the trainer is not RUNNING after the rise: $(job_field grpo-trainer "d.get('backend')")"
[ "$(job_field grpo-trainer "d['state']")" = running ] || fail "the trainer is not running in tide: $API_BODY"
api GET '/v1/events?limit=1000'
[ "$(jq_ "any(e['kind']=='ckpt_notice' and e['job']=='grpo-pool-1' and e['reason']=='reclaim' for e in d['events'])")" = True ] ||
    fail "no reclaim notice for the pool job"
[ "$(jq_ "any(e['kind']=='job_stop' and e['job']=='grpo-trainer' for e in d['events'])")" = False ] ||
    fail "the trainer was stopped"
serve_stop
scancel --quiet -u "$(id -un)"
finish slurm_rl_jobs
