#!/usr/bin/env bash
# End-to-end: `tide serve`'s /metrics passes `promtool check metrics` and holds
# the families docs/api.md lists; then a REAL Prometheus server (Debian's
# package) scrapes the daemon every second until `tide_gpus` is queryable and
# up{job="tide"} == 1. Prometheus runs on its own port and storage folder and
# is stopped by PID. Installs the `prometheus` package when missing and root;
# skips (77) otherwise.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's prometheus package" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus) \
            >"$tmp/apt.log" 2>&1
    fi
    if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
        echo "skip: promtool/prometheus missing (apt-get install prometheus, as root)" >&2
        exit 77
    fi
fi

serve_start prom --db "$tmp/tide.db" --cluster 4x8:H100 --policy elastic --speed 60 || exit 1
api POST /v1/services '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":300}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 120}'
api POST /v1/jobs '{"job_id":"m1","team":"lab","priority":2,"gpus":8,"duration_s":36000}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/jobs: $API_STATUS $API_BODY"
api GET /v1/jobs/nonesuch # a 404 for tide_http_requests_total{code="404"}

# --- the exposition passes promtool and has the documented families
curl -s -D "$tmp/metrics.h" -o "$tmp/metrics.txt" "$SERVE_URL/metrics"
grep -qi '^content-type: text/plain' "$tmp/metrics.h" || fail "/metrics content type: $(grep -i content-type "$tmp/metrics.h")"
if ! promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1; then
    fail "promtool check metrics: $(cat "$tmp/promtool.out")"
fi
for m in tide_gpus tide_queue_depth tide_preemptions_total tide_reclaims_total \
    tide_lease_late_total tide_reclaim_seconds_bucket tide_inference_slo_attainment \
    tide_demand_rps tide_ready_rps tide_forecast_margin tide_jobs tide_engine_steps_total \
    tide_http_requests_total tide_team_gpus; do
    grep -q "^${m}[{ ]" "$tmp/metrics.txt" || fail "/metrics has no sample of $m"
done
grep -q '^tide_demand_rps{service="chat"} 120' "$tmp/metrics.txt" || fail "tide_demand_rps{service=\"chat\"} is not 120"
grep -Eq '^tide_http_requests_total\{.*code="404"' "$tmp/metrics.txt" || fail "no 404 counted in tide_http_requests_total"
python3 - "$tmp/metrics.txt" <<'EOF' || fail "tide_gpus does not add up to the cluster's 32 GPUs"
import re, sys
tot = 0.0
for line in open(sys.argv[1]):
    m = re.match(r'^tide_gpus\{[^}]*\} (\S+)', line)
    if m:
        tot += float(m.group(1))
assert abs(tot - 32) < 1e-6, tot
EOF

# --- a real Prometheus scraping the daemon every second
pport=$(free_port)
target=${SERVE_URL#http://}
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tide
    metrics_path: /metrics
    static_configs:
      - targets: ["$target"]
EOF
promtool check config "$tmp/prometheus.yml" >"$tmp/promcfg.out" 2>&1 || fail "promtool check config: $(cat "$tmp/promcfg.out")"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/p" \
    --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
ppid_=$!
EXTRA_PIDS+=("$ppid_")
P=http://127.0.0.1:$pport
query() { curl -s --max-time 5 --get --data-urlencode "query=$1" "$P/api/v1/query"; }
has_result() { query "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success" and len(d["data"]["result"]) > 0' ; }
poll_until 30 curl -sf "$P/-/ready" || fail "prometheus not ready within 30 s"
poll_until 60 has_result tide_gpus || fail "prometheus: tide_gpus empty after 60 s of scraping"
poll_until 10 has_result 'up{job="tide"} == 1' || fail "prometheus: up{job=\"tide\"} != 1 ($(query 'up{job="tide"}'))"
query 'sum(tide_gpus)' | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert abs(float(d["data"]["result"][0]["value"][1]) - 32) < 1e-6, d' || fail "prometheus: sum(tide_gpus) != 32"
kill -TERM "$ppid_" 2>/dev/null
poll_until 20 sh -c "! kill -0 $ppid_ 2>/dev/null || grep -q ' Z ' /proc/$ppid_/stat" || kill -KILL "$ppid_"
wait "$ppid_" 2>/dev/null

serve_stop
finish serve_prometheus
