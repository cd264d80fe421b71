#!/usr/bin/env bash
# tide benchmark: the simulator's scaling series. The `bench` scenario (Philly-
# like jobs, a diurnal demand for three services) replayed through one policy
# for 30 days on clusters of 1,024 to 16,384 GPUs with the job count growing
# with the cluster (100,000 jobs per 1,024 GPUs), plus (BIG=1) a 131,072-GPU,
# 1 M-job, 7-day run. Figures are medians of REPEAT runs measured side by side
# in this one invocation; results go to bench/results.md and a log-log plot of
# wall time against cluster size to bench/scaling.svg (and stdout).
#   bash bench/run.sh build            # the series (about 5 min here)
#   bash bench/run.sh build --short    # CI form: 128x8 and 256x8, one run each
#   BIG=1 bash bench/run.sh build      # also the 131,072-GPU run
set -euo pipefail
BUILD=${1:-build}
SHORT=0
[ "${2:-}" = --short ] && SHORT=1
TIDE=$BUILD/tide
REPEAT=${REPEAT:-3}
POLICY=${POLICY:-elastic}
RES=${RES:-bench/results.md}
SVG=${SVG:-bench/scaling.svg}
OUT=$(mktemp -d /tmp/tide-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
[ -x "$TIDE" ] || { echo "bench: $TIDE not built" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 missing" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run NODES JOBS DAYS REPEAT -> prints "wall_s rss_mb steps events cpu_s"
run() {
  local nodes=$1 jobs=$2 days=$3 rep=$4 dir="$OUT/n${1}_j${2}_d${3}"
  [ -d "$dir/in" ] || "$TIDE" gen --scenario bench --nodes "$nodes" --jobs "$jobs" --days "$days" --seed 1 --out "$dir/in" >/dev/null
  local walls=() rss=() cpus=()
  for _ in $(seq "$rep"); do
    /usr/bin/time -f "%e %M %U %S" -o "$dir/time" "$TIDE" sim --cluster "${nodes}x8:H100" \
      --services "$dir/in/services.csv" --demand "$dir/in/demand.csv" --jobs "$dir/in/jobs.csv" \
      --policy "$POLICY" --horizon "${days}d" --out "$dir/out" >/dev/null
    read -r w m u s < "$dir/time"
    walls+=("$w"); rss+=("$m"); cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
  done
  local w m c
  w=$(printf '%s\n' "${walls[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  c=$(printf '%s\n' "${cpus[@]}" | median)
  python3 - "$dir/out/summary.json" "$POLICY" "$w" "$((m / 1024))" "$c" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["policies"][sys.argv[2]]
print(sys.argv[3], sys.argv[4], p["steps"], p.get("input_events", 0) + p["events"], sys.argv[5])
PY
  rm -rf "$dir"
}

if [ "$SHORT" = 1 ]; then
  REPEAT=1
  series="128 100000 30|256 200000 30"
else
  series="128 100000 30|256 200000 30|512 400000 30|1024 800000 30|2048 1600000 30"
  [ "${BIG:-0}" = 1 ] && series="$series|16384 1000000 7"
fi
rows="$OUT/rows.tsv"
: > "$rows"
{
  echo "## Benchmark (\`make bench\`)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg) at the start; policy \`$POLICY\`; \`tide gen --scenario bench --seed 1\`; median of $REPEAT runs (wall clock, max RSS) up to 4,096 GPUs, 1 run above."
  echo
  echo "| cluster | jobs | days | wall s | CPU s | max RSS MB | engine steps | events | events/s | events/CPU-s |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  IFS='|' read -ra cfgs <<<"$series"
  for cfg in "${cfgs[@]}"; do
    set -- $cfg
    rep=$REPEAT
    [ "$1" -ge 1024 ] && rep=1
    read -r w m s e c < <(run "$1" "$2" "$3" "$rep")
    eps=$(awk -v e="$e" -v w="$w" 'BEGIN { printf "%.0f", (w > 0 ? e / w : 0) }')
    epc=$(awk -v e="$e" -v c="$c" 'BEGIN { printf "%.0f", (c > 0 ? e / c : 0) }')
    echo "| ${1}x8 ($(( $1 * 8 )) GPUs) | $2 | $3 | $w | $c | $m | $s | $e | $eps | $epc |"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(( $1 * 8 ))" "$2" "$3" "$w" "$m" "$eps" "$c" >> "$rows"
  done
  echo
  echo "Targets (issue 17): events/s at 16,384 GPUs within 1.5x of 1,024 GPUs; 2048x8 with 1.6 M jobs in under 20 s and 1 GB; 128x8 with 100,000 jobs under 1 s. Plot: bench/scaling.svg (\`python3 bench/plot_scaling.py ROWS.tsv OUT.svg\`)."
} | tee "$RES"
python3 bench/plot_scaling.py "$rows" "$SVG"
echo "bench: wrote $RES and $SVG"
