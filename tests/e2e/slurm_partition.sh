#!/usr/bin/env bash
# End to end on a real local Slurm (scripts/slurm-local.sh, 4 slurmd x 8 fake GPUs):
#
# 1. rank loss: a 4-gang elastic job (gangs of 4 GPUs, dp_min 2) loses one gang (its
#    Slurm job is killed with SIGKILL); tide resizes it to 3 gangs (reason failure)
#    instead of stopping it, the other gangs keep running (same Slurm jobs), and it
#    grows back to 4 gangs.
# 2. partition: the slurmd of the node running a 1-gang job is stopped while the job's
#    processes keep running. Slurm first shows the node not responding: tide marks it
#    unreachable and must NOT start the gang anywhere else; only once Slurm marks the
#    node down (fenced) may the gang run again, on another node. The gang is never
#    seen running twice.
# Own ports (CTLD_PORT, NODE_PORT0) so that it can run beside the other Slurm tests.
set -u
export CTLD_PORT=${CTLD_PORT:-17837} NODE_PORT0=${NODE_PORT0:-17920}
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
TRAIN="bash $SRC/examples/slurm/train.sh"
REPLICA="bash $SRC/examples/slurm/replica.sh"
PORT=$(free_port)
serve_start part --backend slurm --db "$tmp/p.db" --listen "127.0.0.1:$PORT" \
    --services "$tmp/services.csv" --replica-command "$REPLICA" --workdir "$work" \
    --slurm-partition tide --control-period 5s || { fail "daemon did not start"; finish slurm_partition; }

job_field() { api GET "/v1/jobs/$1" && jq_ "$2"; }
backend_state_is() { # every gang's Slurm state is $2
    [ "$(job_field "$1" "len(set((d.get('backend') or {}).get('state','').split(','))) == 1 and (d.get('backend') or {}).get('state','').split(',')[0]")" = "$2" ]
}
width_is() { [ "$(job_field "$1" "d['width']")" = "$2" ]; }
ready_replicas_are() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = "$1" ]; }
stage_ok() { [ "$fails" = 0 ] || finish slurm_partition; }
events_has() { api GET '/v1/events?limit=1000' && [ "$(jq_ "$1")" = True ]; }
STEPS='{"STEP_S":"0.5","CKPT_EVERY":"20","CKPT_S":"1","TOTAL_STEPS":"100000"}'

poll_until 30 ready_replicas_are 1 || fail "the floor replica is not ready"

# ------------------------------------------------------------------ 1. rank loss
api POST /v1/jobs "{\"job_id\":\"el\",\"gpus\":16,\"gang_gpus\":4,\"dp_min\":2,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\",\"env\":$STEPS}"
[ "$API_STATUS" = 201 ] || fail "submit el: HTTP $API_STATUS $API_BODY"
poll_until 60 backend_state_is el RUNNING || fail "el is not RUNNING: $(job_field el "d.get('backend')")"
width_is el 4 || fail "el should run 4 gangs: $(job_field el "d['width']")"
stage_ok
victim=$(squeue -h -t running -n tide.job.el.g2 -o '%i')
[ -n "$victim" ] || { fail "no running Slurm job for gang 2 of el"; finish slurm_partition; }
others_before=$(squeue -h -t running -o '%j %i' | awk '$1 ~ /^tide\.job\.el\.g[013]$/ {print $2}' | sort | tr '\n' ' ')
scancel --signal=KILL --full "$victim"
shrunk() { events_has "any(e['kind']=='job_resize' and e['job']=='el' and e['reason']=='failure' and e.get('width')==3 for e in d['events'])"; }
poll_until 90 shrunk || fail "el was not resized to 3 gangs after the gang failed: $(job_field el "[d['state'], d['width']]")"
events_has "not any(e['kind']=='job_stop' and e['job']=='el' for e in d['events'])" ||
    fail "el was stopped (the whole job) instead of shrinking"
others_now=$(squeue -h -t running -o '%j %i' | awk '$1 ~ /^tide\.job\.el\.g[013]$/ {print $2}' | sort | tr '\n' ' ')
[ "$others_now" = "$others_before" ] || fail "the other gangs should keep their Slurm jobs: $others_before -> $others_now"
poll_until 120 width_is el 4 || fail "el did not grow back to 4 gangs: $(job_field el "d['width']")"
poll_until 60 backend_state_is el RUNNING || fail "el is not running after growing back: $(job_field el "d.get('backend')")"
stage_ok
api POST /v1/jobs/el/cancel '{}'
poll_until 60 sh -c '[ -z "$(squeue -h -t running,completing -o %j | grep "^tide\.job\.el\.")" ]' || fail "el did not end"

# ------------------------------------------------------------------ 2. partition
api POST /v1/jobs "{\"job_id\":\"pt\",\"gpus\":8,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\",\"env\":$STEPS}"
[ "$API_STATUS" = 201 ] || fail "submit pt: HTTP $API_STATUS $API_BODY"
poll_until 60 backend_state_is pt RUNNING || fail "pt is not RUNNING"
stage_ok
node=$(job_field pt "d['backend']['nodes']")
case "$node" in gpu[1-4]) ;; *) fail "pt runs on '$node'"; finish slurm_partition ;; esac
sid=$(job_field pt "d['backend']['ids']")
slurmd_pid=$(cat "$TIDE_SLURM_DIR/pids/slurmd-$node.pid")
kill -TERM "$slurmd_pid" # its slurmstepd and the job's processes keep running
t_stop=$(date +%s)
node_is() { sinfo -h -n "$node" -o '%T' 2>/dev/null | grep -q "$1"; }
starts() { # job_start events of pt
    api GET '/v1/events?limit=1000' && jq_ "sum(1 for e in d['events'] if e['kind']=='job_start' and e['job']=='pt')"
}
n_starts=$(starts)
saw_unreachable=0
down_at=0
# until Slurm marks the node down: pt keeps its node, is not started again,
# and Slurm never runs its gang on two nodes
# (tide may see the DOWN state before this loop's sinfo does: its log line is
# the fence as tide saw it, read after the starts so that the order is right)
fenced() { node_is down || grep -q "node $node is down" "$SERVE_LOG"; }
for _ in $(seq 1 300); do
    if fenced; then
        down_at=$(date +%s)
        break
    fi
    api GET /v1/nodes
    [ "$(jq_ "[n['up'] for n in d['nodes'] if n.get('name')=='$node'][0]")" = False ] && saw_unreachable=1
    if [ "$(starts)" != "$n_starts" ]; then
        fenced || fail "pt was started again before Slurm fenced $node"
        down_at=$(date +%s)
        break
    fi
    running=$(squeue -h -t running -n tide.job.pt.g0 -o '%N' | wc -l)
    [ "$running" -le 1 ] || fail "the gang of pt runs twice: $(squeue -h -n tide.job.pt.g0 -o '%i %T %N')"
    sleep 1
done
[ "$down_at" -gt 0 ] || fail "Slurm never marked $node down"
[ "$saw_unreachable" = 1 ] || fail "tide never saw $node unreachable before Slurm marked it down"
grep -q "node $node is unreachable" "$SERVE_LOG" || fail "no 'node $node is unreachable' line in the log"
echo "partition: slurmd stopped at $t_stop, Slurm marked $node down after $((down_at - t_stop)) s" >&2
stage_ok
# fenced: the gang may run again, elsewhere
moved() { n=$(job_field pt "d['backend']['nodes']"); backend_state_is pt RUNNING && [ -n "$n" ] && [ "$n" != "$node" ]; }
poll_until 120 moved || fail "pt did not run again off the fenced $node: $(job_field pt "d.get('backend')")"
[ "$(squeue -h -t running -n tide.job.pt.g0 -o '%N' | wc -l)" -le 1 ] || fail "the gang of pt runs twice after the fence"
grep -q "node $node is down" "$SERVE_LOG" || fail "no 'node $node is down' line in the log"
# the node comes back with its slurmd
slurmd -f "$SLURM_CONF" -N "$node" || fail "slurmd $node did not restart"
node_back() { api GET /v1/nodes && [ "$(jq_ "[n['up'] for n in d['nodes'] if n.get('name')=='$node'][0]")" = True ]; }
poll_until 120 node_back || fail "tide does not see $node back"
echo "partition: first run Slurm job $sid on $node, now on $(job_field pt "d['backend']['nodes']")" >&2
serve_stop
finish slurm_partition
