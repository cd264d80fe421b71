#!/usr/bin/env bash
# End to end on a real local Slurm 22.05 (scripts/slurm-local.sh: 4 slurmd x 8 fake GPUs):
# `tide serve --backend slurm --mode shadow` over a compressed day (a demand wave pushed
# every few seconds, a training job submitted to tide, a plain sbatch job Slurm runs
# itself) leaves Slurm untouched, checked through Slurm's own records:
#  - job ids: Slurm numbers submissions in sequence; a plain job submitted before and
#    one after the shadow run have consecutive ids (nothing was submitted between);
#  - slurmctld's log has no signal, kill, update or requeue request, and squeue never
#    shows a tide.* job;
#  - the plain job keeps running, unsignalled (its script logs every signal it gets);
# while GET /v1/shadow reports what tide would have done (the job started on lent GPUs,
# GPU-hours lent, the plain job's GPUs seen as foreign) and the real backend's counters
# say it only read (submits, signals, cancels 0; no write refused either).
# Then `tide shadow --enact` switches: tide submits its work to Slurm for real.
# Environment: TIDE_BIN, TIDE_SRC; TIDE_SLURM_DIR, CTLD_PORT, NODE_PORT0 pass through to
# slurm-local.sh (a private folder and the default ports otherwise). Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up
CTLD_LOG=$TIDE_SLURM_DIR/log/slurmctld.log

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
TRAIN="bash $SRC/examples/slurm/train.sh"
REPLICA="bash $SRC/examples/slurm/replica.sh"

# a plain job that logs every signal it gets
cat >"$tmp/plain.sh" <<'SH'
#!/bin/bash
for s in USR1 USR2 TERM INT HUP CONT; do trap "echo got $s >>$1" $s; done
echo started >>"$1"
for i in $(seq 600); do sleep 1; done
SH
jid() { sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p'; }
id_before=$(sbatch -p tide -w gpu4 --gres=gpu:6 -J plain-a -o /dev/null "$tmp/plain.sh" "$tmp/plain-a.sig" | jid)
[ -n "$id_before" ] || fail "sbatch of the plain job failed"
plain_running() { [ "$(squeue -h -j "$id_before" -o '%T')" = RUNNING ]; }
poll_until 30 plain_running || fail "the plain job is not RUNNING: $(squeue -h -j "$id_before" -o '%T %R')"
lines0=$(wc -l <"$CTLD_LOG")

PORT=$(free_port)
serve_start shadow --backend slurm --mode shadow --db "$tmp/t.db" --listen "127.0.0.1:$PORT" \
    --services "$tmp/services.csv" --replica-command "$REPLICA" --workdir "$work" \
    --slurm-partition tide --control-period 5s || { fail "daemon did not start"; finish slurm_shadow; }
grep -q 'SHADOW mode' "$SERVE_LOG" || fail "the daemon does not say SHADOW mode"
api POST /v1/jobs "{\"job_id\":\"sh-1\",\"gpus\":8,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":3,\"restore_s\":1,\"command\":\"$TRAIN\"}"
[ "$API_STATUS" = 201 ] || fail "submit sh-1: HTTP $API_STATUS $API_BODY"
foreign_is6() { api GET /v1/nodes && [ "$(jq_ "[n['foreign'] for n in d['nodes'] if n.get('name')=='gpu4'][0]")" = 6 ]; }
poll_until 30 foreign_is6 || fail "the shadow does not see the plain job's 6 GPUs on gpu4 as foreign"
# a compressed day: a demand wave over 45 s (one point every 3 s), squeue watched throughout
tide_seen=0
for k in $(seq 0 15); do
    rps=$(python3 -c "import math; print(round(60 + 140 * (1 + math.sin(2 * math.pi * $k / 15)) / 2))")
    api POST /v1/services/chat/demand "{\"rps\": $rps}"
    [ "$API_STATUS" = 200 ] || fail "demand $rps: HTTP $API_STATUS"
    [ -n "$(squeue -h -o '%j' | grep '^tide\.')" ] && tide_seen=1
    sleep 3
done
[ "$tide_seen" = 0 ] || fail "a tide.* job appeared in Slurm during the shadow run"
api GET /v1/shadow
echo "shadow report: $API_BODY" >&2
[ "$(jq_ 'd["mode"]')" = shadow ] || fail "mode: $API_BODY"
[ "$(jq_ 'd["would_actions"]["job_start"] >= 1 and d["would_actions"]["replica_start"] >= 1')" = True ] ||
    fail "the shadow would have started nothing: $API_BODY"
[ "$(jq_ 'd["lent_gpu_hours"] > 0')" = True ] || fail "the shadow would have lent nothing: $API_BODY"
[ "$(jq_ 'd["backend"]["submits"] + d["backend"]["signals"] + d["backend"]["cancels"] + d["backend"]["requeues"] + d["backend"]["refused"]')" = 0 ] ||
    fail "the real backend wrote to Slurm: $API_BODY"
[ "$(jq_ 'd["backend"]["calls"] > 0')" = True ] || fail "the real backend never read Slurm: $API_BODY"
"$TIDE_BIN" shadow >"$tmp/shadow.txt" || fail "tide shadow failed"
cat "$tmp/shadow.txt" >&2

# Slurm's own records: the next submission gets the next id; no writes in slurmctld's log
id_after=$(sbatch -p tide -w gpu3 --gres=gpu:1 -J plain-b -o /dev/null --wrap 'sleep 1' | jid)
[ "$id_after" = "$((id_before + 1))" ] || fail "Slurm numbered $id_before then $id_after: something was submitted in between"
tail -n +"$((lines0 + 1))" "$CTLD_LOG" >"$tmp/ctld.new"
if grep -Ei 'kill_job|signal|update_job|requeue|_slurm_rpc_submit_batch_job' "$tmp/ctld.new" | grep -v "JobId=$id_after" >"$tmp/writes"; then
    fail "slurmctld logged writes during the shadow run: $(head -5 "$tmp/writes")"
fi
[ "$(squeue -h -j "$id_before" -o '%T')" = RUNNING ] || fail "the plain job stopped"
[ ! -s "$tmp/plain-a.sig" ] || ! grep -q '^got' "$tmp/plain-a.sig" || fail "the plain job got a signal: $(cat "$tmp/plain-a.sig")"

# switch to enact: tide's work goes to Slurm for real
"$TIDE_BIN" shadow --enact >"$tmp/enact.txt" || fail "tide shadow --enact: $(cat "$tmp/enact.txt")"
tide_in_slurm() { [ -n "$(squeue -h -o '%j' | grep '^tide\.')" ]; }
poll_until 30 tide_in_slurm || fail "after the switch nothing of tide's reached Slurm"
api GET /v1/shadow
[ "$(jq_ 'd["mode"]')" = enact ] || fail "mode after the switch: $API_BODY"
serve_stop
scancel --quiet -u "$(id -un)"
finish slurm_shadow
