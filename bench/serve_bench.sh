#!/usr/bin/env bash
# tide benchmark: the daemon's API under load, beside the same operations on a
# real local Slurm 22.05 controller measured in the same run.
#
#   bash bench/serve_bench.sh [BUILD]        (make bench-serve)
#
# tide: a fresh `tide serve` (sim backend, open mode, a new database) on
# loopback. Clients: build/bench/api_bench (THREADS client threads, one
# keep-alive connection each, requests back to back) and wrk (2 threads,
# WRK_CONNS connections), and api_bench --conns ASYNC_CONNS (each client thread
# asynchronous, ASYNC_CONNS requests in flight through poll). Submissions carry a realistic body (an 8-GPU job with
# a command and five environment variables); the daemon answers 201 only once
# the job is committed (group commit, synchronous FULL).
# Slurm: scripts/slurm-local.sh up (munge, slurmctld, 4 slurmd x 8 fake GPUs):
#   - through its API: build/bench/slurm_rpc_bench (libslurm: slurm_submit_batch_job
#     of held jobs with the same command and environment, slurm_load_job), the
#     same numbers of client threads;
#   - through its CLI: `sbatch --wrap=true -H` and `squeue -j ID` in one loop, beside
#     `tide submit` and `tide job` in one loop (one process per call each).
# The fsync rate of the disk under the database (bench/fsync_rate.py) is reported
# beside the figures. Each figure is calls completed / elapsed wall time over $SECS s.
# Results go to bench/serve_results.md and stdout. The run fails (exit 1, the reason)
# when a tide mode produces no result; when Slurm cannot come up, tide's figures are
# still written with the reason, and the run fails. SLURM=0 runs tide's side only
# (the Slurm columns say "not run"; exit 0).
set -uo pipefail
BUILD=${1:-build}
TIDE_BIN=$(cd "$(dirname "$BUILD/tide")" 2>/dev/null && pwd)/tide
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SECS=${SECS:-10}
THREADS=${THREADS:-4}
WRK_CONNS=${WRK_CONNS:-64}
ASYNC_CONNS=${ASYNC_CONNS:-32}
# blocking client-thread counts measured on both sides (one call in flight per thread)
SUB_SET=${SUB_SET:-"1 $THREADS 16 32"}
API_BENCH=$(cd "$(dirname "$BUILD/tide")" && pwd)/bench/api_bench
RPC_BENCH=$(cd "$(dirname "$BUILD/tide")" && pwd)/bench/slurm_rpc_bench
RES=${RES:-$ROOT/bench/serve_results.md}
SLURM=${SLURM:-1} # 0: tide's side only (another run holds the local Slurm's ports)

die() { echo "bench-serve: $*" >&2; exit 1; }
[ -x "$TIDE_BIN" ] || die "$BUILD/tide is not built (make build)"
"$TIDE_BIN" serve --help >/dev/null 2>&1 || die "'tide serve' is not available in $TIDE_BIN"
command -v wrk >/dev/null || die "wrk is missing (apt-get install -y wrk)"
[ -x "$API_BENCH" ] || die "$API_BENCH is not built (make build)"
command -v curl >/dev/null || die "curl is missing (apt-get install -y curl)"

# the e2e helpers: serve_start / serve_stop / api / poll_until
# shellcheck source=../tests/e2e/lib/serve.bash
. "$ROOT/tests/e2e/lib/serve.bash"
tmp=$(mktemp -d /tmp/tide-bench-serve.XXXXXX)
SERVE_PIDS=()
EXTRA_PIDS=()
SLURM_UP=0
declare -A T_SUB S_SUB
export TIDE_SLURM_DIR=$tmp/cluster
cleanup() {
    [ "$SLURM_UP" = 1 ] && "$ROOT/scripts/slurm-local.sh" down >/dev/null 2>&1
    serve_cleanup
}
trap cleanup EXIT

# ------------------------------------------------------------------ helpers

# rate_loop SECONDS PARALLEL FUNC: run FUNC WORKER I (I = 1, 2, ...) in PARALLEL
# loops until SECONDS pass; prints "ops/s failures"
rate_loop() {
    local secs=$1 par=$2 fn=$3 w t0 t1 end pids=()
    t0=${EPOCHREALTIME/./}
    end=$((t0 + secs * 1000000))
    for ((w = 1; w <= par; w++)); do
        (
            i=0 ok=0 bad=0
            while ((${EPOCHREALTIME/./} < end)); do
                i=$((i + 1))
                if "$fn" "$w" "$i" >/dev/null 2>&1; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
            done
            echo "$ok $bad" >"$tmp/loop.$w"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=${EPOCHREALTIME/./}
    cat "$tmp"/loop.* | awk -v us=$((t1 - t0)) '{ok += $1; bad += $2} END {printf "%.1f %d\n", ok / (us / 1e6), bad}'
    rm -f "$tmp"/loop.*
}

# wrk_run NAME URL SCRIPT [ARGS...]: prints "req/s non2xx p50 p99"
wrk_run() {
    local name=$1 url=$2 script=$3
    shift 3
    wrk -t2 -c"$WRK_CONNS" -d"${SECS}s" --latency -s "$script" "$url" -- "$@" >"$tmp/wrk.$name" 2>&1
    awk '
        /Requests\/sec:/ {rps = $2}
        /Non-2xx or 3xx responses:/ {bad = $NF}
        /Socket errors:/ {serr = $0}
        $1 == "50%" {p50 = $2}
        $1 == "99%" {p99 = $2}
        END {printf "%s %d %s %s\n", rps + 0, bad + 0, p50 ? p50 : "-", p99 ? p99 : "-"}' "$tmp/wrk.$name"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else printf "-" }'; }
# rate X: "1234/s" (one decimal below 10)
rate() { awk -v x="$1" 'BEGIN { if (x == "") print "n/a"; else if (x < 10) printf "%.1f/s", x; else printf "%.0f/s", x }'; }

# --------------------------------------------------------------------- tide

cat >"$tmp/services.json" <<'EOF'
{"service": "chat", "gpus_per_replica": 8, "replica_rps": 100, "min_replicas": 1, "warmup_s": 300}
EOF
echo "bench-serve: starting tide serve ($TIDE_BIN)" >&2
serve_start tide --db "$tmp/tide.db" --cluster 16x8:H100 --policy elastic --speed 1 ||
    die "tide serve did not start (log: $(cat "$tmp/tide.log" 2>/dev/null | tail -5))"
api POST /v1/services "$(cat "$tmp/services.json")"
[ "$API_STATUS" = 201 ] || [ "$API_STATUS" = 409 ] || echo "bench-serve: POST /v1/services: $API_STATUS $API_BODY" >&2

echo "bench-serve: 1,000 jobs to read back" >&2
# each set-up job must exist (201, or 409 when a retry finds it made): a read
# of a missing one would count as a failed read
seq 1 1000 | xargs -P 8 -I{} curl -s -o /dev/null -w '{} %{http_code}\n' -X POST -H 'Content-Type: application/json' \
    --data-binary '{"job_id":"r-{}","team":"bench","priority":3,"gpus":1,"duration_s":3600}' "$SERVE_URL/v1/jobs" >"$tmp/setup.codes"
setup_bad=0
while read -r k code; do
    [ "$code" = 201 ] && continue
    api POST /v1/jobs "{\"job_id\":\"r-$k\",\"team\":\"bench\",\"priority\":3,\"gpus\":1,\"duration_s\":3600}"
    [ "$API_STATUS" = 201 ] || [ "$API_STATUS" = 409 ] || { setup_bad=$((setup_bad + 1)); echo "bench-serve: set-up job r-$k: HTTP $code, then $API_STATUS $API_BODY" >&2; }
done <"$tmp/setup.codes"
[ "$setup_bad" = 0 ] || die "$setup_bad of the 1,000 set-up jobs could not be created"
api GET /v1/jobs/r-1000
[ "$API_STATUS" = 200 ] || die "GET /v1/jobs/r-1000 after the set-up: HTTP $API_STATUS $API_BODY"

# ab OP THREADS [ARGS]: api_bench's line "op threads n ok bad secs rps p50 p99 max"
ab() {
    local op=$1 th=$2
    shift 2
    "$API_BENCH" --url "$SERVE_URL" --op "$op" --threads "$th" --secs "$SECS" "$@" 2>"$tmp/ab.err" ||
        die "api_bench $op x$th produced no result: $(tail -2 "$tmp/ab.err")"
}
echo "bench-serve: fsync rate under $tmp" >&2
read -r fs_app fs_ovw < <(python3 "$HERE/fsync_rate.py" "$tmp")
for th in $SUB_SET; do
    echo "bench-serve: api_bench POST /v1/jobs x$th for ${SECS}s" >&2
    read -r _ _ _ _ bad _ rps p50 p99 mx < <(ab submit "$th" --prefix "s$th")
    T_SUB[$th]="$rps $bad $p50 $p99"
done
echo "bench-serve: api_bench POST /v1/jobs x$THREADS, $ASYNC_CONNS connections each, for ${SECS}s" >&2
read -r _ _ _ _ bad _ rps p50 p99 mx < <(ab submit "$THREADS" --conns "$ASYNC_CONNS" --prefix "a$THREADS")
T_ASUB="$rps $bad $p50 $p99"
echo "bench-serve: api_bench GET /v1/jobs/ID x$THREADS for ${SECS}s" >&2
read -r _ _ _ _ t_get_bad _ t_get t_get_p50 t_get_p99 _ < <(ab get "$THREADS" --get-prefix r --ids 1000)
t_get_why=$(grep -m1 'api_bench: thread' "$tmp/ab.err" 2>/dev/null)
echo "bench-serve: api_bench GET /v1/jobs?limit=50 x$THREADS for ${SECS}s" >&2
read -r _ _ _ _ t_list_bad _ t_list t_list_p50 t_list_p99 _ < <(ab list "$THREADS")
echo "bench-serve: wrk POST /v1/jobs ($WRK_CONNS connections) for ${SECS}s" >&2
read -r w_sub w_sub_bad w_sub_p50 w_sub_p99 < <(wrk_run submit "$SERVE_URL" "$HERE/wrk/submit.lua" w)
[ "${w_sub%.*}" -gt 0 ] 2>/dev/null || die "wrk POST /v1/jobs produced no result: $(tail -3 "$tmp/wrk.submit")"
echo "bench-serve: wrk GET /v1/jobs/ID ($WRK_CONNS connections) for ${SECS}s" >&2
read -r w_get w_get_bad _ _ < <(wrk_run get "$SERVE_URL" "$HERE/wrk/get_job.lua" 1000)
curl -s "$SERVE_URL/metrics" >"$tmp/metrics"
t_commits=$(awk '$1 == "tide_api_commits_total" {print $2}' "$tmp/metrics")
t_writes=$(awk '$1 == "tide_api_writes_total" {print $2}' "$tmp/metrics")

tide_submit_one() { "$TIDE_BIN" submit --id "cli-$1-$2" --team bench -p 3 -g 1 -d 1h; }
tide_get_one() { "$TIDE_BIN" job "r-$((($2 * 7919 + $1 * 104729) % 1000 + 1))"; }
echo "bench-serve: tide submit loop for ${SECS}s" >&2
read -r t_csub t_csub_bad < <(rate_loop "$SECS" 1 tide_submit_one)
[ "${t_csub%.*}" -gt 0 ] 2>/dev/null || die "the tide submit loop produced no result"
echo "bench-serve: tide job loop for ${SECS}s" >&2
read -r t_cget t_cget_bad < <(rate_loop "$SECS" 1 tide_get_one)
[ "${t_cget%.*}" -gt 0 ] 2>/dev/null || die "the tide job loop produced no result"
api GET /healthz
t_health=$API_STATUS
t_jobs=$(curl -s "$SERVE_URL/v1/cluster" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("stats",{}); print(s.get("jobs_submitted", s.get("queue_jobs","?")))' 2>/dev/null || echo "?")
serve_stop

# -------------------------------------------------------------------- Slurm

slurm_why=""

s_get=""
s_csub=""
restd="not measured: $(command -v slurmrestd >/dev/null 2>&1 && echo "slurmrestd did not start" || echo "slurmrestd is not installed (apt-get install slurmrestd)")"
r_sub="" r_get=""
# slurmrestd_run: Slurm's REST API on a Unix socket (rest_auth/local, OpenAPI
# v0.0.38, no slurmdbd plugin), run as nobody (it refuses root), which then
# needs the local munge socket; driven by api_bench like tide.
slurmrestd_run() {
    command -v slurmrestd >/dev/null 2>&1 || return 0
    local sock=$tmp/rest/slurmrestd.sock
    mkdir -p "$tmp/rest" && chown nobody "$tmp/rest" 2>/dev/null
    chmod o+x "$tmp" "$TIDE_SLURM_DIR" "$TIDE_SLURM_DIR/munge" 2>/dev/null
    slurmrestd -a rest_auth/local -s openapi/v0.0.38 -t "$THREADS" -u nobody "unix:$sock" \
        >"$tmp/slurmrestd.log" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
    if [ -S "$sock" ]; then
        echo "bench-serve: slurmrestd POST job/submit x$THREADS for ${SECS}s" >&2
        read -r _ _ _ _ _ _ r_sub r_sub_p50 r_sub_p99 _ < <("$API_BENCH" --unix "$sock" --op rsubmit \
            --threads "$THREADS" --secs "$SECS" --prefix rest 2>>"$tmp/slurmrestd.log")
        local first
        first=$(squeue -h -o %i | sort -n | head -1)
        echo "bench-serve: slurmrestd GET job/ID x$THREADS for ${SECS}s" >&2
        read -r _ _ _ _ _ _ r_get r_get_p50 r_get_p99 _ < <("$API_BENCH" --unix "$sock" --op rget \
            --threads "$THREADS" --secs "$SECS" --get-prefix "${first:-1}" --ids 1000 2>>"$tmp/slurmrestd.log")
        restd="Slurm's REST API (slurmrestd 22.05, rest_auth/local on a Unix socket, $THREADS threads), p50 / p99 ms: submit ${r_sub_p50:-?} / ${r_sub_p99:-?}, get ${r_get_p50:-?} / ${r_get_p99:-?}"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ -n "$r_sub" ] && [ -n "$r_get" ] || restd="not measured: slurmrestd gave no result ($(tail -2 "$tmp/slurmrestd.log" | tr '\n' ' '))"
}
if [ "$SLURM" = 0 ]; then
    slurm_why="not run (SLURM=0: tide's side only)"
elif ! command -v slurmctld >/dev/null 2>&1; then
    slurm_why="Slurm is not installed (apt-get install -y slurmctld slurmd slurm-client munge)"
elif [ "$(id -u)" != 0 ]; then
    slurm_why="scripts/slurm-local.sh needs root"
elif ! "$ROOT/scripts/slurm-local.sh" up >"$tmp/slurm-up.log" 2>&1; then
    slurm_why="scripts/slurm-local.sh up failed: $(tail -3 "$tmp/slurm-up.log" | tr '\n' ' ')"
else
    SLURM_UP=1
    eval "$("$ROOT/scripts/slurm-local.sh" env)"
    rb() {
        local op=$1 th=$2
        shift 2
        "$RPC_BENCH" --op "$op" --threads "$th" --secs "$SECS" "$@" 2>"$tmp/rb.err" ||
            { echo "bench-serve: slurm_rpc_bench $op x$th: $(tail -2 "$tmp/rb.err")" >&2; return 1; }
    }
    if [ -x "$RPC_BENCH" ]; then
        for th in $SUB_SET; do
            echo "bench-serve: slurm_rpc_bench submit x$th for ${SECS}s" >&2
            read -r _ _ _ _ bad _ rps p50 p99 _ < <(rb submit "$th" --ids-out "$tmp/rpc_ids.$th")
            S_SUB[$th]="${rps:-} ${bad:-} ${p50:-} ${p99:-}"
        done
        cat "$tmp"/rpc_ids.* >"$tmp/rpc_ids" 2>/dev/null
        echo "bench-serve: slurm_rpc_bench load x$THREADS for ${SECS}s" >&2
        read -r _ _ _ _ s_get_bad _ s_get s_get_p50 s_get_p99 _ < <(rb load "$THREADS" --ids "$tmp/rpc_ids")
    else
        slurm_why="$RPC_BENCH is not built (libslurm-dev missing)"
    fi
    slurmrestd_run
    sbatch_one() { sbatch --wrap=true -H -Q -J "b$1-$2" -o /dev/null; }
    echo "bench-serve: sbatch loop for ${SECS}s" >&2
    read -r s_csub s_csub_bad < <(rate_loop "$SECS" 1 sbatch_one)
    squeue -h -o %i | sort -n >"$tmp/slurm_ids"
    nids=$(wc -l <"$tmp/slurm_ids")
    mapfile -t sids <"$tmp/slurm_ids"
    squeue_one() { squeue -h -j "${sids[$((($2 * 7919 + $1 * 104729) % nids))]}"; }
    echo "bench-serve: squeue -j loop for ${SECS}s" >&2
    read -r s_cget s_cget_bad < <(rate_loop "$SECS" 1 squeue_one)
    s_jobs=$(squeue -h | wc -l)
    "$ROOT/scripts/slurm-local.sh" down >/dev/null 2>&1
    SLURM_UP=0
fi

# ------------------------------------------------------------------- report

rt() { [ -n "$2" ] && ratio "$1" "$2" || echo "-"; }
f1() { echo "$1" | awk '{print $1}'; }
col() { echo "$1" | awk -v k="$2" '{print $k}'; }
{
    echo "## tide serve vs Slurm 22.05 (\`make bench-serve\`)"
    echo
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
        "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//');" \
        "$(date -u +%Y-%m-%d). Command: \`$([ "$SLURM" = 0 ] && echo "SLURM=0 ")make bench-serve\` (SECS=$SECS THREADS=$THREADS)." \
        "Each figure: calls completed / wall seconds over ${SECS} s, one run, server and clients on the same machine."
    echo "The disk under the database ($(df -T "$tmp" | awk 'NR == 2 {print $2}')) does **${fs_app} fsync/s** appending" \
        "(${fs_ovw}/s overwriting in place): write 4 KiB + fsync for 2 s (bench/fsync_rate.py)."
    echo "tide: \`tide serve\` (sim backend, 16x8 GPUs, elastic, open mode, SQLite WAL synchronous FULL, a fresh database);"
    echo "a submission is answered after the group commit carrying it. Slurm: slurmctld + 4 slurmd (scripts/slurm-local.sh),"
    echo "no accounting database; slurmctld answers a submission before its state is saved (every few seconds)."
    echo
    echo "| operation | client threads | tide | Slurm | tide/Slurm |"
    echo "|---|---:|---:|---:|---:|"
    for th in $SUB_SET; do
        echo "| submit, API: POST /v1/jobs (api_bench) vs \`slurm_submit_batch_job\` held (slurm_rpc_bench) | $th | $(rate "$(f1 "${T_SUB[$th]}")") | $(rate "$(f1 "${S_SUB[$th]:-}")") | $(rt "$(f1 "${T_SUB[$th]}")" "$(f1 "${S_SUB[$th]:-}")") |"
    done
    echo "| submit, API, asynchronous client threads: POST /v1/jobs (api_bench --conns $ASYNC_CONNS: $ASYNC_CONNS connections in flight per thread) vs \`slurm_submit_batch_job\` (blocking, one call in flight per thread) | $THREADS | $(rate "$(f1 "$T_ASUB")") | $(rate "$(f1 "${S_SUB[$THREADS]:-}")") | $(rt "$(f1 "$T_ASUB")" "$(f1 "${S_SUB[$THREADS]:-}")") |"
    echo "| submit, API: POST /v1/jobs (wrk, 2 threads x $WRK_CONNS connections) vs \`slurm_submit_batch_job\` | 2 / $THREADS | $(rate "$w_sub") | $(rate "$(f1 "${S_SUB[$THREADS]:-}")") | $(rt "$w_sub" "$(f1 "${S_SUB[$THREADS]:-}")") |"
    echo "| submit, REST: POST /v1/jobs vs slurmrestd POST /slurm/v0.0.38/job/submit held (api_bench) | $THREADS | $(rate "$(f1 "${T_SUB[$THREADS]}")") | $(rate "$r_sub") | $(rt "$(f1 "${T_SUB[$THREADS]}")" "$r_sub") |"
    echo "| read one job, REST: GET /v1/jobs/ID vs slurmrestd GET /slurm/v0.0.38/job/ID (api_bench) | $THREADS | $(rate "$t_get") | $(rate "$r_get") | $(rt "$t_get" "$r_get") |"
    echo "| read one job, API: GET /v1/jobs/ID (api_bench) vs \`slurm_load_job\` | $THREADS | $(rate "$t_get") | $(rate "$s_get") | $(rt "$t_get" "$s_get") |"
    echo "| read one job, API: GET /v1/jobs/ID (wrk, $WRK_CONNS connections) | 2 | $(rate "$w_get") | | |"
    echo "| list: GET /v1/jobs?limit=50 (api_bench) | $THREADS | $(rate "$t_list") | | |"
    echo "| submit, CLI: \`tide submit\` vs \`sbatch --wrap=true -H\` (one process per job, 1 loop) | 1 | $(rate "$t_csub") | $(rate "$s_csub") | $(rt "$t_csub" "$s_csub") |"
    echo "| read one job, CLI: \`tide job ID\` vs \`squeue -j ID\` (1 loop) | 1 | $(rate "$t_cget") | $(rate "${s_cget:-}") | $(rt "$t_cget" "${s_cget:-}") |"
    echo
    sublat=""
    for th in $SUB_SET; do sublat="$sublat${sublat:+, }x$th $(col "${T_SUB[$th]}" 3) / $(col "${T_SUB[$th]}" 4)"; done
    echo "Latency, tide (p50 / p99 ms): submit $sublat;" \
        "get $t_get_p50 / $t_get_p99; list $t_list_p50 / $t_list_p99; async submit x$THREADS x$ASYNC_CONNS $(col "$T_ASUB" 3) / $(col "$T_ASUB" 4); wrk submit $w_sub_p50 / $w_sub_p99."
    [ -n "$s_get" ] && echo "Latency, Slurm API (p50 / p99 ms): submit x$THREADS $(col "${S_SUB[$THREADS]}" 3) / $(col "${S_SUB[$THREADS]}" 4); slurm_load_job $s_get_p50 / $s_get_p99."
    echo "Group commit: $t_writes API writes in $t_commits transactions. Non-2xx: get $t_get_bad, list $t_list_bad, wrk submit $w_sub_bad, wrk get $w_get_bad;" \
        "CLI failures: submit ${t_csub_bad}, job ${t_cget_bad}; /healthz after the run: $t_health; jobs submitted: $t_jobs."
    [ "${t_get_bad:-0}" != 0 ] && echo "Failed reads: ${t_get_why:-no reason printed}."
    echo "slurmrestd: $restd."
    [ -n "$slurm_why" ] && echo && echo "Slurm figures missing: $slurm_why."
} | tee "$RES"
[ -z "$slurm_why" ] || [ "$SLURM" = 0 ] || die "Slurm figures missing: $slurm_why"
[ "$SLURM" = 0 ] || [ -n "$s_get" ] || die "slurm_rpc_bench produced no result"
