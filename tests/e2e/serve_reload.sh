#!/usr/bin/env bash
# End-to-end: teams, weights and quotas live in the cluster file; an admin
# request (POST /v1/admin/reload) re-reads them without a restart, and the
# per-team gauges in /metrics follow. A broken file is refused and the old
# settings stay.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

cat >"$tmp/cluster.yaml" <<'YAML'
groups:
  - {count: 4, gpus_per_node: 8, gpu_type: H100}
teams:
  - {name: research, weight: 1, quota: 8}
YAML
serve_start reload --db "$tmp/tide.db" --cluster-file "$tmp/cluster.yaml" --policy elastic --speed 60 || exit 1
quota_is() { curl -s "$SERVE_URL/metrics" | grep -q "^tide_team_quota_gpus{team=\"$1\"} $2\$"; }
poll_until 10 quota_is research 8 || fail "quota 8 not exported: $(curl -s "$SERVE_URL/metrics" | grep tide_team_quota)"

cat >"$tmp/cluster.yaml" <<'YAML'
groups:
  - {count: 4, gpus_per_node: 8, gpu_type: H100}
teams:
  - {name: research, weight: 2, quota: 16}
  - {name: search, weight: 1, quota: 8, borrow_limit: 4}
YAML
api POST /v1/admin/reload
[ "$API_STATUS" = 200 ] || fail "reload: $API_STATUS $API_BODY"
[ "$(jq_ 'd["teams"]')" = 2 ] || fail "reload did not read 2 teams: $API_BODY"
poll_until 10 quota_is research 16 || fail "quota 16 not in effect after reload"
poll_until 10 quota_is search 8 || fail "new team search not in effect after reload"

# a broken file: refused with the line, the settings in force stay
printf 'groups:\n  - {count: 4, gpus_per_node: 8, gpu_type: H100}\nteams:\n  - {name: research, weight: 0}\n' >"$tmp/cluster.yaml"
api POST /v1/admin/reload
case "$API_STATUS" in 4*) ;; *) fail "broken file accepted: $API_STATUS $API_BODY" ;; esac
echo "$API_BODY" | grep -q "cluster.yaml:4" || fail "error does not name the line: $API_BODY"
quota_is research 16 || fail "a refused reload changed the quota"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "healthz $API_STATUS"
finish serve_reload
