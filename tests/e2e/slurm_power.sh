#!/usr/bin/env bash
# End to end: power caps enacted on a real local Slurm (scripts/slurm-local.sh,
# 4 slurmd x 8 fake GPUs) through `tide serve --power-cap-cmd`, with a fake
# command that records its calls ({node} {watts} appended to a file).
#  - the cluster file gives the one power domain (4 nodes) a budget of half
#    its nameplate (11200 W); a floor replica (8 GPUs) and two training jobs
#    (8 GPUs each) would plan 12720 W uncapped: the newer job is capped, the
#    command runs once per node it holds, with its cap in watts and a Slurm
#    node name; /metrics show the planned draw within the budget and capped
#    GPUs;
#  - the older job is cancelled: headroom returns, the cap is lifted (the
#    command writes the GPU type's TDP, 700 W) on the same node.
# Ports: CTLD_PORT / NODE_PORT0 (default 17827 / 17910, this test's own).
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"
export CTLD_PORT=${CTLD_PORT:-17827} NODE_PORT0=${NODE_PORT0:-17910}

slurm_e2e_up

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
cat >"$tmp/cluster.yaml" <<'Y'
groups:
  - {count: 4, gpus_per_node: 8, gpu_type: gpu, power_nodes: 4, power_budget_w: 11200}
Y
calls=$tmp/pcap.calls
: >"$calls"
TRAIN="bash $SRC/examples/slurm/train.sh"
REPLICA="bash $SRC/examples/slurm/replica.sh"
metric() { curl -s "$SERVE_URL/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {s += $2} END {print s + 0}'; }
submit() { # ID
    api POST /v1/jobs "{\"job_id\":\"$1\",\"gpus\":8,\"priority\":3,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\"}"
    [ "$API_STATUS" = 201 ] || fail "submit $1: HTTP $API_STATUS $API_BODY"
}
job_nodes() { api GET "/v1/jobs/$1" && jq_ "(d.get('backend') or {}).get('nodes','')"; }
calls_have() { grep -q "$1" "$calls"; }
has_node() { [ -n "$(job_nodes "$1")" ]; }
capped_gpus_are() { [ "$(metric tide_power_capped_gpus)" = "$1" ]; }

PORT=$(free_port)
serve_start power --backend slurm --db "$tmp/p.db" --listen "127.0.0.1:$PORT" \
    --cluster-file "$tmp/cluster.yaml" --services "$tmp/services.csv" \
    --replica-command "$REPLICA" --workdir "$work" --slurm-partition tide --control-period 5s \
    --power-cap-cmd "echo {node} {watts} >> $calls" || { fail "daemon did not start"; finish slurm_power; }

submit old
poll_until 30 capped_gpus_are 0 || fail "capped GPUs before the second job"
submit new
poll_until 60 capped_gpus_are 8 || fail "the newer job is not capped (tide_power_capped_gpus=$(metric tide_power_capped_gpus))"
poll_until 30 calls_have ' ' || fail "the power-cap command never ran"
poll_until 60 has_node new || fail "job new never ran on a node"
node=$(job_nodes new)
# every call so far: the job's node and a cap between the lowest cap and the training draw
while read -r n w; do
    [ "$n" = "$node" ] || fail "the command ran for node '$n', the job runs on '$node'"
    [ "$w" -ge 200 ] && [ "$w" -lt 650 ] || fail "cap $w W is not between the lowest cap and the training draw"
done <"$calls"
planned=$(metric tide_power_watts)
budget=$(metric tide_power_budget_watts)
python3 -c "import sys; sys.exit(0 if 0 < $planned <= $budget == 11200 else 1)" ||
    fail "planned $planned W, budget $budget W"
[ "$(metric tide_backend_power_cmds_total)" -ge 1 ] || fail "tide_backend_power_cmds_total"
[ "$(metric tide_backend_power_cmd_failures_total)" = 0 ] || fail "power command failures"
api GET /v1/jobs/old
[ "$(jq_ "d.get('state')")" = running ] || fail "job old is not running: $API_BODY"

# headroom returns: the cap is lifted (TDP written on the same node)
api POST /v1/jobs/old/cancel '{}'
[ "$API_STATUS" = 200 ] || [ "$API_STATUS" = 202 ] || fail "cancel old: HTTP $API_STATUS $API_BODY"
poll_until 60 calls_have "^$node 700\$" || fail "the cap was not lifted: $(cat "$calls")"
poll_until 30 capped_gpus_are 0 || fail "capped GPUs after the lift"

finish slurm_power
