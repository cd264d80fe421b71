#!/usr/bin/env bash
# Do two tide binaries simulate the same? Runs both on a few scenarios with
# every policy (and fault injection, quotas off/on fair share) and compares
# every output file byte for byte, less summary.json's wall-clock fields.
# Used to check that a speed-up changes no decision:
#   bash bench/same_output.sh /tmp/tide.old build/tide
set -euo pipefail
OLD=${1:?usage: same_output.sh OLD_TIDE NEW_TIDE}
NEW=${2:?usage: same_output.sh OLD_TIDE NEW_TIDE}
DIR=$(mktemp -d /tmp/tide-same.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
POL=isolated,static,preempt,k8s,elastic,timeshare
fail=0
# NAME | gen args | sim args
cases=(
  "seed200|--scenario seed200 --days 7|--cluster 25x8:H100 --split 80:120 --reserve 40 --horizon 7d"
  "seed32|--scenario seed32 --days 3|--cluster 4x8:H100 --horizon 3d"
  "bench32|--scenario bench --nodes 32 --jobs 8000 --days 5|--cluster 32x8:H100 --horizon 5d"
  "faults|--scenario bench --nodes 16 --jobs 3000 --days 3|--cluster 16x8:H100 --horizon 3d --inject burst:2x@36h+2h,node-fail:3@20h+6h,rank-fail-rate:2/day"
  "nofair|--scenario seed200 --days 4|--cluster 25x8:H100 --fairshare off --horizon 4d"
  "mixed|--scenario bench --nodes 24 --jobs 5000 --days 3|--cluster 12x8:H100,8x8:A100,4x4:L40S --horizon 3d"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name gen sim <<<"$c"
  "$NEW" gen $gen --seed 1 --out "$DIR/$name/in" >/dev/null
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    # shellcheck disable=SC2086
    "$bin" sim $sim --services "$DIR/$name/in/services.csv" --demand "$DIR/$name/in/demand.csv" \
      --jobs "$DIR/$name/in/jobs.csv" --policy $POL --seed 1 --out "$DIR/$name/$b" >/dev/null
    grep -v '"wall_s"' "$DIR/$name/$b/summary.json" > "$DIR/$name/$b/summary.nowall"
    rm "$DIR/$name/$b/summary.json"
  done
  if diff -r -q "$DIR/$name/old" "$DIR/$name/new" >/dev/null; then
    echo "same: $name ($(ls "$DIR/$name/new" | wc -l) files)"
  else
    echo "DIFFER: $name"; diff -r -q "$DIR/$name/old" "$DIR/$name/new" || true; fail=1
  fi
done
exit $fail
