#!/usr/bin/env bash
# End-to-end: asynchronous clients and group commit (bench/api_bench --conns,
# the client of `make bench-serve`). Two client threads keep 16 submissions in
# flight each for about a second against `tide serve --backend sim`; then:
# every acknowledged submission is in the database (also after a restart),
# none failed, and the daemon committed them in fewer transactions than
# writes (requests in flight together share a commit). Bounded: about 5 s.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon or api_bench not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
AB=$(dirname "$TIDE_BIN")/bench/api_bench
[ -x "$AB" ] || { echo "skip: $AB is not built" >&2; exit 77; }
serve_start async --db "$tmp/tide.db" --cluster 4x8 --backend sim || exit 1
"$AB" --url "$SERVE_URL" --op submit --threads 2 --conns 16 --secs 1 --prefix as >"$tmp/ab.out" 2>"$tmp/ab.err" ||
    fail "api_bench --conns: $(cat "$tmp/ab.err")"
read -r op th n ok bad _ rps _ <"$tmp/ab.out"
[ "$op" = submit ] && [ "$th" = 2 ] || fail "api_bench printed: $(cat "$tmp/ab.out")"
[ "${ok:-0}" -gt 32 ] || fail "only ${ok:-0} submissions acknowledged"
[ "${bad:-1}" = 0 ] || fail "$bad submissions failed: $(cat "$tmp/ab.err")"
curl -s "$SERVE_URL/metrics" >"$tmp/metrics"
writes=$(awk '$1 == "tide_api_writes_total" {print $2}' "$tmp/metrics")
commits=$(awk '$1 == "tide_api_commits_total" {print $2}' "$tmp/metrics")
[ -n "$writes" ] && [ -n "$commits" ] || fail "tide_api_writes_total / tide_api_commits_total missing from /metrics"
[ "${writes%.*}" -ge "$ok" ] || fail "writes $writes < acknowledged $ok"
[ "${commits%.*}" -lt "${writes%.*}" ] || fail "no group commit: $commits commits for $writes writes"
serve_kill9
serve_start async2 --db "$tmp/tide.db" --cluster 4x8 --backend sim || exit 1
count() { api GET /v1/cluster; jq_ "d[\"stats\"][\"jobs_submitted\"]"; }
have=$(count)
echo "acknowledged $ok, commits $commits for $writes writes, after restart $have jobs"
[ "$have" -ge "$ok" ] 2>/dev/null || fail "after SIGKILL and restart $have of $ok acknowledged submissions are in the database"
serve_stop
finish serve_async_clients
