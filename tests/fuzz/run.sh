#!/usr/bin/env bash
# Build the libFuzzer targets (`make fuzz`) and run each for N seconds.
#
#   tests/fuzz/run.sh [SECONDS]     (default 10 per target)
#
# Each target starts from a small seed corpus written here. Exits 0 when no
# target crashed, 1 when one did (its log tail and the crashing input's path
# are printed; inputs are kept in $FUZZ_BUILD/fuzz-artifacts/), 2 when the
# build failed.
set -u

secs=${1:-10}
case $secs in
'' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-build-fuzz}
cd "$root" || exit 2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! make fuzz FUZZ_BUILD="$build" >"$work/build.log" 2>&1; then
    echo "fuzz: build failed (make fuzz):" >&2
    tail -30 "$work/build.log" >&2
    exit 2
fi

bindir=$root/$build/fuzz
artifacts=$root/$build/fuzz-artifacts
mkdir -p "$artifacts"

# Seed corpora: one valid input per target.
seed() { mkdir -p "$work/$1" && printf "$2" >"$work/$1/seed"; }
seed fuzz_csv 'a,b,"c"\r\n1,"x ""y""",3\n# comment\n\n4,5,6\n'
seed fuzz_jobs 'job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,restore_s,gpu_types\nj1,0,t,P1,16,3600,8,1,900,30,45,H100|A100\nj2,5,u,2,4,60,,,,,,\n'
seed fuzz_services_demand 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas,gpu_types\nchat,8,10,1,60,4,H100\nembed,1,100,0,10,,\n\0time_s,service,rps\n0,chat,5\n300,embed,7.5\n'
seed fuzz_cluster_yaml 'groups:\n  - count: 16\n    gpus_per_node: 8\n    gpu_type: H100\n    domain_nodes: 2\n    rack_nodes: 4\n    power_nodes: 8\n  - {count: 2, gpus_per_node: 4}\n'
seed fuzz_models_body '{"name":"m","service":"s","eval_command":"python3 eval.py","eval_gpus":2,"gates":["acc>=serving-0.01"],"steps":[5,25,50,100],"hold_s":300}'
seed fuzz_rl_body '{"trajectories":[{"trajectory_id":"w1-1","policy_version":3,"reward":0.5,"tokens":[1,2]},{"trajectory_id":"w2-7","policy_version":0}]}'
seed fuzz_http_body '{"job_id": "j1", "team": "t", "priority": "P2", "gpus": 16, "gang_gpus": 8, "dp_min": 1, "duration_s": 3600, "gpu_types": "H100|A100", "env": {"A": "1"}, "command": "train"}'
seed fuzz_cluster_spec '16x8:H100,8x4:A100,18x4:GB200/18\nH100|GB200'
seed fuzz_sweep_spec 'reserve=24:64:8,margin=0.05:0.3:0.05,lead=5m,hold=60:600:60,split=80'
seed fuzz_inject 'burst:2x@36h+2h,burst:chat:0.5x@1d+90m,node-fail:3@50h+4h\nrank-fail:j1@1h,rank-fail-rate:2/day,ctl-down@80h+1h,storage:20GBps'
seed fuzz_tokens '# TOKEN TEAM ROLE\nadm1n-secret ops admin\nsub-a research submitter\nview-1 research viewer\n'
seed fuzz_prom_query '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"router"},"value":[1700000000.5,"123.4"]}]}}'
seed fuzz_prom_range '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"12.5"],[1700000060,"NaN"],[1700000120,"14"]]}]}}'
seed fuzz_sbatch '#!/bin/bash\n#SBATCH --gres=gpu:h100:8 --nodes=2 --time=1-04:00:00\n#SBATCH -J "my job" -q normal --comment=x\n#SBATCH --mem=0\nsrun train\n'
seed fuzz_slurm_gres 'gpu:h100:8(S:0-1)\ngpu:a100:4,gpu:h100:4\nmps:100,gpu:2\ngpu:8\n(null)\ngpu:t:2K,gpu\n'

status=0
found=0
for bin in "$bindir"/fuzz_*; do
    [ -x "$bin" ] || continue
    found=1
    name=$(basename "$bin")
    mkdir -p "$work/$name"
    log=$work/$name.log
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts/$name-" "$work/$name" >"$log" 2>&1; then
        echo "fuzz: $name ok ($(grep -o 'Done [0-9]* runs' "$log" | tail -1))"
    else
        echo "fuzz: $name FAILED" >&2
        tail -30 "$log" >&2
        status=1
    fi
done
if [ "$found" = 0 ]; then
    echo "fuzz: no targets in $bindir" >&2
    exit 2
fi
exit $status
