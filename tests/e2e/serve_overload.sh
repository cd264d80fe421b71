#!/usr/bin/env bash
# End-to-end: the API stays answerable under hostile clients (docs/serve.md,
# "Limits"). tests/e2e/overload.py opens 1,100 idle and 1,030 slow-loris
# sockets (a byte every 25 s) on loopback against `tide serve --backend sim`,
# then: /healthz answers within 1 s, a submit succeeds, one address cannot
# hold more than the per-address limit, and the slow-loris sockets are
# dropped by the inactivity timeout; a long poll open at SIGTERM is answered.
# Bounded: about 20 s.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built, or the
# descriptor limit cannot be raised to ~2,400).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
# the client needs ~2,400 descriptors; the daemon raises its own limit
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
serve_start overload --db "$tmp/tide.db" --cluster 4x8 --backend sim --speed 10 || exit 1
python3 "$(dirname "$0")/overload.py" "$SERVE_URL" --idle 1100 --loris 1030 --per-ip 128 --timeout 10
rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || fail "overload.py failed (exit $rc)"
api GET /healthz
[ "$API_STATUS" = 200 ] || fail "/healthz after the flood: HTTP $API_STATUS"
# a long poll open at SIGTERM gets its answer
api POST /v1/jobs '{"job_id":"lp-1","priority":2,"gpus":8,"duration_s":3600}'
[ "$API_STATUS" = 201 ] || fail "submit lp-1: HTTP $API_STATUS"
curl -s -o "$tmp/lp.out" -w '%{http_code}' --max-time 30 "$SERVE_URL/v1/jobs/lp-1/notice?wait=60" \
    >"$tmp/lp.status" 2>/dev/null &
lp=$!
EXTRA_PIDS+=("$lp")
# wait until curl's connection is up (then the request follows at once)
port=${SERVE_URL##*:}
_lp_connected() { ss -Htn state established "( dport = :$port )" 2>/dev/null | grep -q .; }
command -v ss >/dev/null && poll_until 5 _lp_connected
sleep 0.2 # the request line after the connect (bounded)
serve_stop
wait "$lp"
[ "$(cat "$tmp/lp.status")" = 200 ] && grep -q '"notice":null' "$tmp/lp.out" ||
    fail "the long poll open at SIGTERM got: $(cat "$tmp/lp.status") $(cat "$tmp/lp.out" 2>/dev/null)"
finish serve_overload
