#!/usr/bin/env bash
# End to end: the model pipeline on a real local Slurm 22.05 (munge, slurmctld,
# 4 slurmd x 8 fake GPUs, scripts/slurm-local.sh), on the wall clock:
#  - a training job (examples/slurm/train.sh) declaring `model` and `publish: final`
#    completes; its last committed checkpoint becomes version 1;
#  - the evaluation of version 1 runs as an ordinary tide job in Slurm (a script that
#    reads TIDE_MODEL, TIDE_MODEL_VERSION, TIDE_MODEL_MANIFEST and reports its metric
#    through the API) and passes;
#  - the canary replica starts as a Slurm job (examples/slurm/replica.sh reports it
#    ready) with TIDE_MODEL_VERSION and TIDE_MODEL_MANIFEST of version 1, takes 50%
#    then 100% of the routes; the old replica is retired (its Slurm
#    job ends): every replica runs version 1;
#  - version 2's canary misses its SLO: rolled back within one gate interval, its
#    replica gone, version 1 takes every request.
# Environment: TIDE_BIN, TIDE_SRC; CTLD_PORT, NODE_PORT0, TIDE_SLURM_DIR pass through to
# slurm-local.sh (run it beside others with ports of its own). Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
EVAL_LOG=$tmp/eval.log
{ echo '#!/usr/bin/env bash'; echo "EVAL_LOG=$EVAL_LOG"; } >"$tmp/eval.sh"
cat >>"$tmp/eval.sh" <<'SH'
# an evaluation: read the version to evaluate, report a metric, exit
set -u
echo "$(date +%s) eval model=$TIDE_MODEL version=$TIDE_MODEL_VERSION manifest=$TIDE_MODEL_MANIFEST" >>"$EVAL_LOG"
curl -s -m 5 -XPOST -H 'Content-Type: application/json' \
     "$TIDE_API/v1/models/$TIDE_MODEL/versions/$TIDE_MODEL_VERSION/metrics" \
     -d '{"metrics": {"accuracy": 0.8}}' >>"$EVAL_LOG"
SH
# the replica command: note the version it was told to load, then serve
{ echo '#!/usr/bin/env bash'; echo "echo \"\$TIDE_REPLICA \${TIDE_MODEL_VERSION:-none} \${TIDE_MODEL_MANIFEST:-none}\" >>$tmp/rep.log"
  echo "exec bash $SRC/examples/slurm/replica.sh"; } >"$tmp/rep.sh"
PORT=$(free_port)
serve_start pipe --backend slurm --db "$tmp/tide.db" --listen "127.0.0.1:$PORT" \
    --services "$tmp/services.csv" --replica-command "bash $tmp/rep.sh" \
    --workdir "$work" --slurm-partition tide --control-period 2s --check ||
    { fail "daemon did not start"; finish slurm_pipeline; }

model() { api GET "/v1/models/llama?history=200"; }
state_is() { model; [ "$(jq_ "d['versions'][$1 - 1]['state'] if len(d['versions']) >= $1 else ''")" = "$2" ]; }
routes() { api GET /v1/services/chat/routes; }
ready_is() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = "$1" ]; }
rep_jobs() { squeue -h -t running -o '%j' | grep -c '^tide\.rep\.' || true; }

poll_until 60 ready_is 1 || fail "the floor replica is not ready"
api POST /v1/models "{\"name\":\"llama\",\"service\":\"chat\",\"eval_command\":\"bash $tmp/eval.sh\",\"eval_gpus\":2,\"eval_limit_s\":600,\"gates\":[\"accuracy>=0.7\"],\"steps\":[50,100],\"hold_s\":15,\"gate_interval_s\":4,\"slo_min\":0.99}"
[ "$API_STATUS" = 201 ] || fail "define model: $API_STATUS $API_BODY"
api POST /v1/jobs "{\"job_id\":\"train\",\"gpus\":8,\"duration_s\":3600,\"command\":\"bash $SRC/examples/slurm/train.sh\",\"env\":{\"STEP_S\":\"0.2\",\"CKPT_EVERY\":\"10\",\"CKPT_S\":\"0.5\",\"TOTAL_STEPS\":\"40\"},\"model\":\"llama\",\"publish\":\"final\"}"
[ "$API_STATUS" = 201 ] || fail "submit: $API_STATUS $API_BODY"

# the job completes: its final checkpoint is version 1, evaluated in Slurm
poll_until 120 state_is 1 evaluating || fail "no version 1 from the training job: $API_BODY"
model
[ "$(jq_ "d['versions'][0]['source_job']")" = train ] || fail "version 1's source: $API_BODY"
[ "$(jq_ "d['versions'][0]['step']")" = 40 ] || fail "version 1 is not the final checkpoint (step 40): $API_BODY"
poll_until 120 state_is 1 serving || fail "version 1 does not reach serving: $API_BODY"
grep -q "eval model=llama version=1 manifest=tide://jobs/train/checkpoints/40" "$EVAL_LOG" ||
    fail "the evaluation job did not get its version: $(cat "$EVAL_LOG" 2>/dev/null)"
model
[ "$(jq_ "','.join(h['detail'].split(':')[1].strip().split('%')[0] for h in d['history'] if h['kind'] == 'step')")" = "50,100" ] ||
    fail "rollout steps: $API_BODY"
all_v1() { routes; [ "$(jq_ "len(d['replicas']) == 1 and d['replicas'][0]['version'] == 1 and d['replicas'][0]['ready']")" = True ]; }
poll_until 60 all_v1 || fail "the old replica was not replaced: $API_BODY"
poll_until 30 sh -c "[ \"\$(squeue -h -t running -o '%j' | grep -c '^tide\.rep\.')\" = 1 ]" ||
    fail "Slurm runs $(rep_jobs) replica jobs, expected 1: $(squeue -h -o '%i %j %T %N')"
grep -q " 1 tide://jobs/train/checkpoints/40$" "$tmp/rep.log" ||
    fail "no replica was started with TIDE_MODEL_VERSION=1 and its manifest: $(cat "$tmp/rep.log")"
grep -Eq "invariant|above its need" "$SERVE_LOG" && fail "an invariant broke: $(grep -E 'invariant|above its need' "$SERVE_LOG" | head -3)"
checkpoint_stage() { [ "$fails" = 0 ] || finish slurm_pipeline; }
checkpoint_stage

# version 2: its canary misses the SLO, rolled back within one gate interval
api POST /v1/models/llama/versions '{"manifest_uri":"s3://ckpt/v2","source_job":"train","step":80}'
[ "$API_STATUS" = 201 ] || fail "register version 2: $API_STATUS $API_BODY"
canary_routed() { routes; [ "$(jq_ "any(r['version'] == 2 and r['weight'] > 0 for r in d['replicas'])")" = True ]; }
poll_until 120 canary_routed || fail "version 2 never took requests: $API_BODY"
grep -q " 2 s3://ckpt/v2$" "$tmp/rep.log" || fail "the canary replica of version 2 was not told its version: $(cat "$tmp/rep.log")"
api POST /v1/models/llama/canary '{"slo":0.5,"error_rate":0.3}'
t_bad=$(jq_ "d['reported_s']")
poll_until 30 state_is 2 rolled-back || fail "version 2 not rolled back: $API_BODY"
model
t_rb=$(jq_ "[h['time_s'] for h in d['history'] if h['kind'] == 'rollback'][0]")
[ $((t_rb - t_bad)) -le 4 ] || fail "rolled back $((t_rb - t_bad)) s after the bad report (gate interval 4 s)"
no_v2() { routes; [ "$(jq_ "not any(r['version'] == 2 for r in d['replicas']) and sum(r['weight'] for r in d['replicas']) > 0.999")" = True ]; }
poll_until 60 no_v2 || fail "version 2 keeps replicas or routes: $API_BODY"
poll_until 30 sh -c "[ \"\$(squeue -h -t running -o '%j' | grep -c '^tide\.rep\.')\" = 1 ]" ||
    fail "Slurm runs $(rep_jobs) replica jobs after the rollback, expected 1"
grep -Eq "invariant|above its need" "$SERVE_LOG" && fail "an invariant broke: $(grep -E 'invariant|above its need' "$SERVE_LOG" | head -3)"
serve_stop
finish slurm_pipeline
