#!/usr/bin/env bash
# End-to-end: closed-loop writers share group commits. Four client threads
# (bench/api_bench, one keep-alive connection each, one submission in flight
# per thread: each sends the next only once the previous was acknowledged)
# submit for about two seconds against `tide serve --backend sim`. Without
# gathering, the writers answered by one commit come back while the next one
# is in flight and the four split into two groups taking turns (about two
# writes per commit); a leader that waits for the writers the last batch saw
# (src/daemon/queue.c, bounded by one commit's duration) puts them in one
# transaction. Then: none failed, leaders gathered (tide_api_commit_gathers_total),
# more than 2.5 writes per commit, and after SIGKILL and a restart every
# acknowledged submission is in the database. Bounded: about 6 s.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon or api_bench not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
AB=$(dirname "$TIDE_BIN")/bench/api_bench
[ -x "$AB" ] || { echo "skip: $AB is not built" >&2; exit 77; }
serve_start loop --db "$tmp/tide.db" --cluster 4x8 --backend sim || exit 1
"$AB" --url "$SERVE_URL" --op submit --threads 4 --secs 2 --prefix cl >"$tmp/ab.out" 2>"$tmp/ab.err" ||
    fail "api_bench: $(cat "$tmp/ab.err")"
read -r op th n ok bad _ rps _ <"$tmp/ab.out"
[ "$op" = submit ] && [ "$th" = 4 ] || fail "api_bench printed: $(cat "$tmp/ab.out")"
[ "${ok:-0}" -gt 40 ] || fail "only ${ok:-0} submissions acknowledged"
[ "${bad:-1}" = 0 ] || fail "$bad submissions failed: $(cat "$tmp/ab.err")"
curl -s "$SERVE_URL/metrics" >"$tmp/metrics"
m() { awk -v k="$1" '$1 == k {print $2}' "$tmp/metrics"; }
writes=$(m tide_api_writes_total)
commits=$(m tide_api_commits_total)
gathers=$(m tide_api_commit_gathers_total)
[ -n "$writes" ] && [ -n "$commits" ] && [ -n "$gathers" ] ||
    fail "tide_api_writes_total / tide_api_commits_total / tide_api_commit_gathers_total missing from /metrics"
echo "acknowledged $ok ($rps/s), $writes writes in $commits commits, $gathers gathered"
[ "${writes%.*}" -ge "$ok" ] || fail "writes $writes < acknowledged $ok"
[ "${gathers%.*}" -gt 0 ] || fail "no leader gathered"
awk -v w="$writes" -v c="$commits" 'BEGIN { exit !(c > 0 && w / c > 2.5) }' ||
    fail "$writes writes in $commits commits: four closed-loop writers did not share commits"
serve_kill9
serve_start loop2 --db "$tmp/tide.db" --cluster 4x8 --backend sim || exit 1
api GET /v1/cluster
have=$(jq_ 'd["stats"]["jobs_submitted"]')
[ "$have" -ge "$ok" ] 2>/dev/null || fail "after SIGKILL and restart $have of $ok acknowledged submissions are in the database"
serve_stop
finish serve_closed_loop_batching
