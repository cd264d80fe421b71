#!/usr/bin/env bash
# End to end on a real local Slurm 22.05 (scripts/slurm-local.sh: 4 slurmd x 8 fake GPUs):
# what `tide serve --mode shadow` says it would have lent matches what `--mode enact` then
# lends on the same replay, within a stated bound (docs/serve.md, "Shadow mode").
#
# The same compressed replay runs twice against the same Slurm, each time on a fresh
# database: once in shadow mode, once in enact mode. A replay is, in engine seconds from t0
# (once the daemon sees the plain job; engine time is wall time on the Slurm backend,
# --speed 1, so the compressed day is the demand wave's 45 s; each input lands at its
# engine time by the daemon's clock, wall_origin in /v1/cluster):
#  - a plain sbatch job holding 6 GPUs of gpu4 (Slurm runs it; tide sees it as foreign),
#    running through both replays;
#  - at t0: JOBS training jobs of 8 GPUs submitted to tide (they start on lent GPUs);
#  - a demand wave for the one service, a point every 3 s from t0 to t0+45 (60 rps, up to
#    200 and back: a second replica reclaims a lent job, the trough gives the GPUs back);
#  - at t0+WINDOW: the GPU-seconds lent so far are read.
# "Lent" is one measure in both modes: the engine's GPU-seconds held by training under
# leases (tier C), read from /v1/usage?by=tier (the row tier C) at an engine time the
# daemon stepped at, then brought to exactly t0+WINDOW with the GPUs on lease then
# (/v1/cluster teams' borrowed_gpus; constant between steps). In shadow mode it must also
# equal GET /v1/shadow's lent_gpu_hours (the report reads the same counter).
#
# The bound: both runs see the same inputs at the same engine times, so the engine decides
# the same lease grants at the same steps, and lending is booked from the grant (the
# decision, in both modes) to the return. What differs is what the world then does: the
# shadow's twin finishes a reclaimed job's checkpoint after its declared ckpt_s and the
# replicas warm for their declared warmup_s; in enact, Slurm launches the real scripts
# (train.sh, replica.sh) after its launch lag, they checkpoint and warm up as fast as they
# really do, and the daemon sees it at the Slurm backend's next poll (every 2 s). So each
# lease's end (and a grant that waits on a replica becoming ready) moves by at most
# LAG = poll (2 s) + Slurm's launch lag bound (5 s) + the declared ckpt_s (3 s) = 10 s:
#   |shadow - enact| <= leases granted x 8 GPUs x LAG   (GPU-seconds)
# and both runs must grant the same leases, send the same reclaim notices and start the
# same jobs by t0+WINDOW.
# Environment: TIDE_BIN, TIDE_SRC; TIDE_SLURM_DIR, CTLD_PORT, NODE_PORT0 pass through to
# slurm-local.sh (a private folder and the default ports otherwise). Exit 77 = skip.
# Takes ~2 min (two replays of WINDOW s plus Slurm's start and the job launches).
set -u
. "$(dirname "$0")/lib/serve.bash"
. "$(dirname "$0")/lib/slurm.bash"

slurm_e2e_up

JOBS=2
GPUS=8
PERIOD=5     # --control-period (s)
POLL=2       # the Slurm backend's poll period (s)
LAUNCH=5     # Slurm's launch lag bound on this cluster (s): submit to RUNNING
CKPT=3       # the jobs' declared ckpt_s
WINDOW=50    # engine seconds compared
LAG=$((POLL + LAUNCH + CKPT))

work=$tmp/work
mkdir -p "$work"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,3\n' >"$tmp/services.csv"
TRAIN="bash $SRC/examples/slurm/train.sh"
REPLICA="bash $SRC/examples/slurm/replica.sh"
ENV='{"STEP_S":"1","CKPT_EVERY":"10","CKPT_S":"1"}'

jid() { sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p'; }
plain=$(sbatch -p tide -w gpu4 --gres=gpu:6 -J plain-m -o /dev/null --wrap 'sleep 900' | jid)
[ -n "$plain" ] || fail "sbatch of the plain job failed"
plain_running() { [ "$(squeue -h -j "$plain" -o '%T')" = RUNNING ]; }
poll_until 30 plain_running || fail "the plain job is not RUNNING: $(squeue -h -j "$plain" -o '%T %R')"

foreign_is6() { api GET /v1/nodes && [ "$(jq_ "[n['foreign'] for n in d['nodes'] if n.get('name')=='gpu4'][0]")" = 6 ]; }
now_s() { api GET /v1/cluster && jq_ 'd["now_s"]'; }
# The Slurm backend's engine clock is wall time from wall_origin (/v1/cluster): the replay
# lands each input at its engine time by that clock, not at the daemon's next step.
ORIGIN=0
clock_now() { python3 -c "import time; print(int(time.time() - $ORIGIN))"; }
clock_reached() { [ "$(clock_now)" -ge "$1" ]; }
stepped_past() { local t; t=$(now_s) && [ -n "$t" ] && [ "$t" -ge "$1" ]; } # the daemon stepped at >= T

# lent_at T: tier-C GPU-seconds at engine time T (the daemon has stepped past T); prints
# "GPU_S NOW BORROWED"
lent_at() {
    local T=$1 u c
    for _ in $(seq 20); do
        api GET '/v1/usage?by=tier'
        u=$(jq_ 'str(d["until_s"]) + " " + str(sum(r["gpu_hours"] for r in d["rows"] if r["tier"] == "C") * 3600)')
        api GET /v1/cluster
        c=$(jq_ 'str(d["now_s"]) + " " + str(sum(t["borrowed_gpus"] for t in d["teams"]))')
        # both read at the same step
        [ "${u%% *}" = "${c%% *}" ] || continue
        python3 -c "import sys; T, now, gs, b = $T, ${u%% *}, ${u#* }, ${c#* }; print(gs - b * (now - T), now, b)"
        return 0
    done
    return 1
}

# replay MODE: one run on a fresh database; sets R_LENT (GPU-s at t0+WINDOW), R_LEASES,
# R_STARTS, R_SHADOW (the shadow report's lent GPU-s, shadow mode only)
replay() {
    local mode=$1 t0 k rps tk r
    PORT=$(free_port)
    serve_start "$mode" --backend slurm --mode "$mode" --db "$tmp/$mode.db" --listen "127.0.0.1:$PORT" \
        --services "$tmp/services.csv" --replica-command "$REPLICA" --workdir "$work" \
        --slurm-partition tide --control-period "${PERIOD}s" || { fail "$mode: daemon did not start"; return 1; }
    # the plain job's GPUs are known before anything is placed (not a race with the first poll)
    poll_until 30 foreign_is6 || fail "$mode: the daemon does not see the plain job's 6 GPUs on gpu4"
    api GET /v1/cluster
    ORIGIN=$(jq_ 'd["wall_origin"]')
    t0=$(($(clock_now) + 1))
    poll_until 5 clock_reached "$t0" || fail "$mode: the engine clock does not advance"
    for k in $(seq 1 "$JOBS"); do
        api POST /v1/jobs "{\"job_id\":\"m-$k\",\"gpus\":$GPUS,\"duration_s\":36000,\"ckpt_interval_s\":600,\"ckpt_s\":$CKPT,\"restore_s\":1,\"command\":\"$TRAIN\",\"env\":$ENV}"
        [ "$API_STATUS" = 201 ] || fail "$mode: submit m-$k: HTTP $API_STATUS $API_BODY"
    done
    for k in $(seq 0 15); do
        tk=$((t0 + 3 * k))
        poll_until 10 clock_reached "$tk" || fail "$mode: the engine clock did not reach $tk"
        rps=$(python3 -c "import math; print(round(60 + 140 * (1 + -math.cos(2 * math.pi * $k / 15)) / 2))")
        api POST /v1/services/chat/demand "{\"rps\": $rps}"
        [ "$API_STATUS" = 200 ] || fail "$mode: demand $rps: HTTP $API_STATUS"
    done
    poll_until 30 stepped_past $((t0 + WINDOW)) || fail "$mode: the engine did not reach t0+$WINDOW"
    r=$(lent_at $((t0 + WINDOW))) || { fail "$mode: could not read the lent GPU-seconds"; return 1; }
    R_LENT=${r%% *}
    api GET /v1/shadow
    R_SHADOW=$(jq_ 'd.get("lent_gpu_hours", 0) * 3600')
    echo "$mode report: $API_BODY" >&2
    api GET '/v1/events?limit=1000'
    R_LEASES=$(jq_ 'sum(1 for e in d["events"] if e.get("kind") == "lease_grant" and e["time_s"] <= '"$((t0 + WINDOW))"')')
    R_NOTICES=$(jq_ 'sum(1 for e in d["events"] if e.get("kind") == "ckpt_notice" and e["time_s"] <= '"$((t0 + WINDOW))"')')
    R_STARTS=$(jq_ 'sum(1 for e in d["events"] if e.get("kind") == "job_start" and e["time_s"] <= '"$((t0 + WINDOW))"')')
    echo "$mode: t0 $t0, lent at t0+$WINDOW: $R_LENT GPU-s (read at: $r), leases $R_LEASES, reclaim notices $R_NOTICES, job starts $R_STARTS" >&2
    serve_stop
    # enact leaves its work in Slurm: stop it before the next replay (the plain job stays)
    squeue -h -o '%i %j' | awk '$2 ~ /^tide\./ {print $1}' | xargs -r scancel
}

replay shadow
S_LENT=$R_LENT S_LEASES=$R_LEASES S_STARTS=$R_STARTS S_NOTICES=$R_NOTICES S_REPORT=$R_SHADOW
! squeue -h -o '%j' | grep -q '^tide\.' || fail "the shadow put a tide job in Slurm"
replay enact
E_LENT=$R_LENT E_LEASES=$R_LEASES E_STARTS=$R_STARTS E_NOTICES=$R_NOTICES

BOUND=$((S_LEASES * GPUS * LAG))
echo "shadow would lend $S_LENT GPU-s (report: $S_REPORT); enact lent $E_LENT GPU-s; bound $BOUND GPU-s" \
    "($S_LEASES leases x $GPUS GPUs x ($POLL s poll + $LAUNCH s launch + $CKPT s ckpt)); leases $S_LEASES / $E_LEASES," \
    "job starts $S_STARTS / $E_STARTS" >&2
check() { [ "$(python3 -c "print($1)")" = True ]; }
check "$S_LENT > 0" || fail "the shadow would have lent nothing"
check "$E_LENT > 0" || fail "enact lent nothing"
check "abs($S_REPORT - $S_LENT) <= $GPUS * $JOBS * $PERIOD" ||
    fail "the shadow report ($S_REPORT) is not the tier-C usage ($S_LENT)"
check "abs($S_LENT - $E_LENT) <= $BOUND" || fail "|shadow - enact| = |$S_LENT - $E_LENT| > $BOUND GPU-s"
[ "$S_STARTS" = "$E_STARTS" ] || fail "job starts differ: shadow $S_STARTS, enact $E_STARTS"
[ "$S_NOTICES" = "$E_NOTICES" ] || fail "reclaim notices differ: shadow $S_NOTICES, enact $E_NOTICES"
[ "$S_LEASES" = "$E_LEASES" ] || fail "leases granted differ: shadow $S_LEASES, enact $E_LEASES"
scancel --quiet "$plain"
finish slurm_shadow_match
