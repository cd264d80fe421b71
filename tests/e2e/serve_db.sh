#!/usr/bin/env bash
# End-to-end: `tide db check|backup|restore` and a database that is not the
# database any more (docs/serve.md, "The database").
#  - check and backup while tide serve runs; restore is refused while it runs;
#  - deleting the database file under a running daemon: /healthz turns 503 and
#    names it, a submit is refused (never acknowledged), and everything
#    committed is saved to DB.rescued;
#  - a copy with garbage in a page is refused at open by tide serve with the fix,
#    `tide db check` exits 1, and `tide db restore` brings back the backup,
#    which tide serve then opens with the job in it;
#  - a damaged engine snapshot: `tide db check` exits 1 naming it, tide serve
#    ignores it with a log line, replays the whole log and has the job.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN
db=$tmp/tide.db

serve_start db --db "$db" --cluster 2x8 --speed 10 || exit 1
api POST /v1/jobs '{"job_id":"keep-me","priority":2,"gpus":8,"duration_s":3600}'
[ "$API_STATUS" = 201 ] || fail "submit: HTTP $API_STATUS $API_BODY"

# --- check and backup while it runs; restore refused
out=$("$T" db check --db "$db") || fail "db check on a live database: $out"
grep -q '^ok' <<<"$out" || fail "db check prints no ok: $out"
"$T" db backup --db "$db" "$tmp/backup.db" >/dev/null || fail "db backup while serving"
[ -f "$tmp/backup.db" ] && [ ! -e "$tmp/backup.db.tmp" ] || fail "backup file missing or .tmp left"
out=$("$T" db restore --db "$db" "$tmp/backup.db" 2>&1) && fail "restore while serving succeeded"
grep -q 'stop tide serve' <<<"$out" || fail "restore refusal does not say why: $out"

# --- the database deleted under the daemon
rm -f "$db"
api GET /healthz
[ "$API_STATUS" = 503 ] || fail "/healthz after the db was deleted: HTTP $API_STATUS"
grep -q 'deleted' <<<"$API_BODY" || fail "/healthz does not name the deleted db: $API_BODY"
api POST /v1/jobs '{"job_id":"lost","priority":2,"gpus":8,"duration_s":3600}'
[ "$API_STATUS" -ge 500 ] || fail "submit into a deleted db answered $API_STATUS (acknowledged?)"
[ -f "$db.rescued" ] || fail "no $db.rescued"
serve_stop
[ -e "$db" ] && fail "the daemon recreated $db"
"$T" db check --db "$db.rescued" >/dev/null || fail "the rescued copy fails its check"

# --- a corrupt page refused at open; check says so; restore brings the backup back
cp "$tmp/backup.db" "$db"
python3 - "$db" <<'EOF'
import sqlite3, sys
p = sys.argv[1]
c = sqlite3.connect(p)
page = c.execute("SELECT rootpage FROM sqlite_master WHERE type='index' AND tbl_name='jobs' LIMIT 1").fetchone()[0]
size = c.execute("PRAGMA page_size").fetchone()[0]
c.close()
with open(p, "r+b") as f:
    f.seek((page - 1) * size + 8)
    f.write(b"\xa5" * 64)
EOF
"$T" db check --db "$db" >"$tmp/check.out" 2>&1
[ $? = 1 ] || fail "db check on a corrupt file did not exit 1: $(cat "$tmp/check.out")"
"$T" serve --db "$db" --listen 127.0.0.1:0 >"$tmp/corrupt.out" 2>&1 && fail "serve opened a corrupt db"
grep -q 'quick_check' "$tmp/corrupt.out" && grep -q 'tide db restore' "$tmp/corrupt.out" ||
    fail "serve's refusal does not give the fix: $(cat "$tmp/corrupt.out")"
out=$("$T" db restore --db "$db" "$tmp/backup.db") || fail "restore: $out"
[ -f "$db.pre-restore" ] || fail "the corrupt file was not kept as .pre-restore"
serve_start db2 --db "$db" --speed 1000 --snapshot-every 1 || exit 1
api GET /v1/jobs/keep-me
[ "$API_STATUS" = 200 ] || fail "the restored database lacks keep-me: HTTP $API_STATUS"
snaps() { [ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from snapshots").fetchone()[0])' "$db")" = 2 ]; }
poll_until 20 snaps || fail "no two snapshots with --snapshot-every 1"
serve_stop

# --- a damaged snapshot: check names it; serve ignores it and replays the log
"$T" db check --db "$db" >"$tmp/check2.out" 2>&1 || fail "db check with sound snapshots: $(cat "$tmp/check2.out")"
python3 - "$db" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
step, state = c.execute("SELECT step, state FROM snapshots ORDER BY step DESC LIMIT 1").fetchone()
b = bytearray(state)
b[len(b) // 2] ^= 0x5a
c.execute("UPDATE snapshots SET state = ? WHERE step = ?", (bytes(b), step))
c.execute("DELETE FROM snapshots WHERE step <> ?", (step,))
c.commit()
EOF
"$T" db check --db "$db" >"$tmp/check3.out" 2>&1
[ $? = 1 ] || fail "db check on a damaged snapshot did not exit 1: $(cat "$tmp/check3.out")"
grep -q 'snapshot after step .*checksum mismatch' "$tmp/check3.out" || fail "db check does not name the snapshot: $(cat "$tmp/check3.out")"
serve_start db3 --db "$db" --speed 10 || exit 1
grep -q 'snapshot after step .* ignored (checksum mismatch)' "$SERVE_LOG" || fail "no log line for the damaged snapshot: $(cat "$SERVE_LOG")"
grep 'recovered epoch' "$SERVE_LOG" | grep -vq 'after the snapshot' || fail "not a full replay: $(grep recovered "$SERVE_LOG")"
api GET /v1/jobs/keep-me
[ "$API_STATUS" = 200 ] || fail "keep-me after the damaged snapshot: HTTP $API_STATUS"
serve_stop

# --- usage errors
"$T" db --help | grep -q 'tide db restore' || fail "tide db --help"
"$T" db check >/dev/null 2>&1
[ $? = 2 ] || fail "db check without --db is not a usage error"
"$T" db nonesuch --db "$db" >/dev/null 2>&1
[ $? = 2 ] || fail "unknown db subcommand is not a usage error"
finish serve_db
