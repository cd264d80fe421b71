#!/usr/bin/env bash
# tide benchmark: the simulator on a 1,024-GPU cluster (128x8) for 30 days with
# 100,000 training jobs and a diurnal demand, plus how cost grows with cluster
# size and job count. Figures are medians of REPEAT runs measured side by side
# in this one invocation; results go to bench/results.md (and stdout).
set -euo pipefail
BUILD=${1:-build}
TIDE=$BUILD/tide
REPEAT=${REPEAT:-3}
POLICY=${POLICY:-elastic}
OUT=$(mktemp -d /tmp/tide-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
RES=bench/results.md
[ -x "$TIDE" ] || { echo "bench: $TIDE not built" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run NODES JOBS -> prints "wall_s rss_mb steps events"
run() {
  local nodes=$1 jobs=$2 dir="$OUT/n${1}_j${2}"
  [ -d "$dir/in" ] || "$TIDE" gen --scenario bench --nodes "$nodes" --jobs "$jobs" --days 30 --seed 1 --out "$dir/in" >/dev/null
  local walls=() rss=()
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -f "%e %M" -o "$dir/time" "$TIDE" sim --cluster "${nodes}x8:H100" \
      --services "$dir/in/services.csv" --demand "$dir/in/demand.csv" --jobs "$dir/in/jobs.csv" \
      --policy "$POLICY" --horizon 30d --out "$dir/out" >/dev/null
    read -r w m < "$dir/time"
    walls+=("$w"); rss+=("$m")
  done
  local w m
  w=$(printf '%s\n' "${walls[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  local steps ev
  steps=$(python3 -c "import json,sys;d=json.load(open('$dir/out/summary.json'));print(d['policies']['$POLICY']['steps'])")
  ev=$(python3 -c "import json,sys;d=json.load(open('$dir/out/summary.json'));p=d['policies']['$POLICY'];print(p.get('input_events',0)+p['events'])")
  echo "$w $((m / 1024)) $steps $ev"
}

{
  echo "## Benchmark (\`make bench\`)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); policy \`$POLICY\`; 30 simulated days; median of $REPEAT runs (wall clock, max RSS)."
  echo
  echo "| cluster | jobs | wall s | max RSS MB | engine steps | events | events/s |"
  echo "|---|---|---|---|---|---|---|"
  for cfg in "128 100000" "32 25000" "64 50000" "128 25000" "128 50000" "256 200000"; do
    set -- $cfg
    read -r w m s e < <(run "$1" "$2")
    eps=$(awk -v e="$e" -v w="$w" 'BEGIN { printf "%.0f", (w > 0 ? e / w : 0) }')
    echo "| ${1}x8 ($(( $1 * 8 )) GPUs) | $2 | $w | $m | $s | $e | $eps |"
  done
  echo
  echo "Target (issue 2): 128x8 with 100,000 jobs under 5 s and under 500 MB."
} | tee "$RES"
