#!/usr/bin/env bash
# End-to-end: the API stays answerable under hostile clients (docs/serve.md,
# "Limits"). tests/e2e/overload.py opens 1,100 idle and 1,030 slow-loris
# sockets (a byte every 25 s) on loopback against `tide serve --backend sim`,
# then: /healthz answers within 1 s, a submit succeeds, one address cannot
# hold more than the per-address limit, and the slow-loris sockets are
# dropped by the inactivity timeout. Bounded: about 15 s.
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
serve_stop
finish serve_overload
