#!/usr/bin/env bash
# End-to-end: what an operator alerts and graphs on.
#  - examples/prometheus/tide-rules.yml passes `promtool check rules` and its
#    unit tests (`promtool test rules tide-rules.test.yml`);
#  - a daemon with demand above what its service may scale to exports the
#    forecast (tide_forecast_rps, tide_margin, tide_lead_seconds), the SLO
#    counters (demanded > served > 0), lost GPU-seconds and the queue-wait
#    histogram (a started P2 job counted), passing `promtool check metrics`;
#    `tide services` shows FORECAST, SIZED_FOR, MARGIN and LEAD;
#  - every metric the Grafana dashboard (examples/grafana) and the rules use
#    is one /metrics exports (or a recording rule of the rules file).
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
if ! command -v promtool >/dev/null 2>&1; then
    echo "skip: promtool missing (apt-get install prometheus; make test-deps)" >&2
    exit 77
fi
rules=$TIDE_SRC/examples/prometheus/tide-rules.yml
promtool check rules "$rules" >"$tmp/check.out" 2>&1 || fail "promtool check rules: $(cat "$tmp/check.out")"
(cd "$TIDE_SRC/examples/prometheus" && promtool test rules tide-rules.test.yml) >"$tmp/test.out" 2>&1 ||
    fail "promtool test rules: $(cat "$tmp/test.out")"

serve_start obs --db "$tmp/t.db" --cluster 4x8:H100 --speed 60 || exit 1
api POST /v1/services '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"max_replicas":2,"warmup_s":120}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
api POST /v1/services/chat/demand '{"rps": 250}'
api POST /v1/jobs '{"job_id":"w1","team":"lab","priority":2,"gpus":8,"duration_s":36000}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/jobs: $API_STATUS $API_BODY"
job_running() { api GET /v1/jobs/w1 && jq_ 'd["state"] == "running"'; }
poll_until 30 job_running || fail "job w1 never started"
metric() { # metric NAME_WITH_LABELS -> value (empty when absent)
    curl -s "$SERVE_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
served_some() { v=$(metric tide_requests_served_total); [ -n "$v" ] && python3 -c "import sys; sys.exit(0 if float('$v') > 0 else 1)"; }
poll_until 30 served_some || fail "tide_requests_served_total stays 0"
curl -s "$SERVE_URL/metrics" >"$tmp/metrics.txt"
promtool check metrics <"$tmp/metrics.txt" >"$tmp/pm.out" 2>&1 || fail "promtool check metrics: $(cat "$tmp/pm.out")"
python3 - "$tmp/metrics.txt" <<'PY' || fail "the new series are wrong (above)"
import re, sys
v = {}
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip():
        continue
    k, x = line.rsplit(' ', 1)
    v[k] = float(x)
def need(k):
    if k not in v:
        print('missing', k); sys.exit(1)
    return v[k]
dem, srv = need('tide_requests_demanded_total'), need('tide_requests_served_total')
assert dem > srv > 0, ('demand above the ceiling must leave requests unserved', dem, srv)
need('tide_lost_gpu_seconds_total')
assert need('tide_queue_wait_seconds_count{priority="P2"}') >= 1, 'the started P2 job is not counted'
assert need('tide_queue_wait_seconds_bucket{priority="P2",le="+Inf"}') >= 1
assert need('tide_forecast_rps{service="chat"}') >= 0
assert need('tide_forecast_sized_rps{service="chat"}') >= need('tide_forecast_rps{service="chat"}')
assert need('tide_lead_seconds{service="chat"}') > 0, 'no lead time'
need('tide_margin{service="chat"}')
PY
TIDE_SERVER=$SERVE_URL "$TIDE_BIN" services >"$tmp/services.out" 2>&1 || fail "tide services: $(cat "$tmp/services.out")"
for col in FORECAST SIZED_FOR MARGIN LEAD; do
    head -1 "$tmp/services.out" | grep -qw "$col" || fail "tide services has no $col column: $(head -1 "$tmp/services.out")"
done
grep -q '^chat ' "$tmp/services.out" || fail "tide services has no chat row"
TIDE_SERVER=$SERVE_URL "$TIDE_BIN" services --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["services"][0]
assert s["lead_s"] > 0 and "forecast_peak_rps" in s' || fail "/v1/services has no lead_s"

# every metric the dashboard and the rules read is exported
python3 - "$tmp/metrics.txt" "$TIDE_SRC/examples/grafana/tide-dashboard.json" "$rules" <<'PY' || fail "the dashboard or the rules use metrics /metrics does not export (above)"
import json, re, sys
fams = set()
for line in open(sys.argv[1]):
    m = re.match(r'# TYPE (\S+) (\S+)', line)
    if m:
        fams.add(m.group(1))
        if m.group(2) == 'histogram':
            fams.update(m.group(1) + s for s in ('_bucket', '_sum', '_count'))
rules_text = open(sys.argv[3]).read()
recorded = set(re.findall(r'record:\s*(\S+)', rules_text))
def check(where, expr):
    bad = [n for n in re.findall(r'(?<![\w:])(tide[\w:]*)', expr) if n not in fams and n not in recorded]
    if bad:
        print(where, 'uses', bad); return 1
    return 0
dash = json.load(open(sys.argv[2]))
assert dash['panels'], 'no panels'
errs, n = 0, 0
for p in dash['panels']:
    for t in p.get('targets', []):
        errs += check('dashboard panel %r' % p['title'], t['expr']); n += 1
for e in re.findall(r'expr:\s*(.+)', rules_text):
    errs += check('rules', e); n += 1
print('checked %d expressions' % n)
sys.exit(1 if errs else 0)
PY
serve_stop
finish serve_observability
