#!/usr/bin/env bash
# Fair share on Philly: replay a 14-day window of the Philly trace with its
# virtual clusters as teams (equal weights) and compare FIFO with fair share
# (without and with quotas from the teams' history). Prints, per team, the
# normalized throughput (GPU-hours received / GPU-hours demanded) and the mean
# queue time, and Jain's fairness index over the normalized throughput
# (docs/governance.md, "Fairness on Philly").
#
# usage: bench/fairness.sh [OUT_DIR]
# environment: TIDE_BIN (default build/tide), PHILLY (the trace), DAYS (21:35),
#              NODES (50 nodes x 8 GPUs), POLICY (static: training only)
# Needs `tide sim --fairshare on|off` and `--cluster-file` with teams.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
TIDE_BIN=${TIDE_BIN:-$root/build/tide}
PHILLY=${PHILLY:-$root/../shared/traces/philly_pollux/philly.csv}
DAYS=${DAYS:-21:35}
NODES=${NODES:-50}
POLICY=${POLICY:-static}
out=${1:-$(mktemp -d)}
mkdir -p "$out"

[ -x "$TIDE_BIN" ] || { echo "fairness.sh: no tide binary at $TIDE_BIN (set TIDE_BIN)" >&2; exit 2; }
[ -r "$PHILLY" ] || { echo "fairness.sh: no trace at $PHILLY (set PHILLY)" >&2; exit 2; }
"$TIDE_BIN" sim --help | grep -q -- '--fairshare' ||
    { echo "fairness.sh: this tide sim has no --fairshare option" >&2; exit 2; }

a=${DAYS%%:*}
b=${DAYS##*:}
horizon=$(( (b - a) * 86400 ))
gpus=$((NODES * 8))

# jobs.csv: the importer when this build has it, else the python fallback
if "$TIDE_BIN" trace import --help >/dev/null 2>&1; then
    "$TIDE_BIN" trace import --format philly "$PHILLY" --days "$DAYS" --origin window --out "$out"
else
    python3 "$here/philly_fairness.py" convert "$PHILLY" --days "$DAYS" --out "$out"
fi

# training only: one idle service (the simulator wants one) and no inference split
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nidle,8,1,0,0\n' >"$out/services.csv"
printf 'time_s,service,rps\n0,idle,0\n' >"$out/demand.csv"
split=(--split "0:$gpus")
[ "$POLICY" = static ] || split=()

python3 "$here/philly_fairness.py" cluster --jobs "$out/jobs.csv" --philly "$PHILLY" \
    --nodes "$NODES" --horizon "$horizon" --out "$out/teams.yaml"
python3 "$here/philly_fairness.py" cluster --jobs "$out/jobs.csv" --philly "$PHILLY" \
    --nodes "$NODES" --horizon "$horizon" --quotas --out "$out/teams_quota.yaml"

run() { # NAME FAIRSHARE CLUSTER_FILE
    echo "== $1 (fair share $2, $(basename "$3"))" >&2
    "$TIDE_BIN" sim --cluster-file "$3" --services "$out/services.csv" --demand "$out/demand.csv" \
        --jobs "$out/jobs.csv" --policy "$POLICY" "${split[@]}" --horizon "$horizon" \
        --fairshare "$2" --out "$out/$1" >"$out/$1.txt"
}
run fifo off "$out/teams.yaml"
run fair on "$out/teams.yaml"
run fair_quota on "$out/teams_quota.yaml"

python3 "$here/philly_fairness.py" metrics --jobs "$out/jobs.csv" --horizon "$horizon" \
    "fifo=$out/fifo" "fair=$out/fair" "fair_quota=$out/fair_quota" | tee "$out/fairness.txt"
echo "outputs in $out (tide usage $out/fair --by team; tide usage $out/fair --report)"
