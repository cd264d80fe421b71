#!/usr/bin/env bash
# tide benchmark: the daemon's API under load, beside the same operations on a
# real local Slurm 22.05 controller measured in the same run.
#
#   bash bench/serve_bench.sh [BUILD]        (make bench-serve)
#
# tide: a fresh `tide serve` (sim backend, open mode, a new database) on
# loopback, driven by wrk (2 threads, $CONNS connections, $SECS s each):
#   - durable submissions/s: POST /v1/jobs, a unique job_id per request; the
#     daemon answers 201 only once the job is committed to SQLite;
#   - reads/s: GET /v1/jobs/ID (random among 1,000 jobs) and GET /v1/jobs?limit=50;
#   - the same through the CLI, one process per call in a loop: `tide submit`, `tide job`.
# Slurm: scripts/slurm-local.sh up (munge, slurmctld, 4 slurmd x 8 fake GPUs):
#   - `sbatch --wrap=true -H` (held: nothing runs) in $CONNS parallel loops and in one loop;
#   - `squeue -j ID` (random among the held jobs) and `squeue` (the whole queue: it has no
#     server-side limit) likewise.
# Each figure is requests completed / elapsed wall time over $SECS s. Results go to
# bench/serve_results.md and stdout. When Slurm cannot come up, tide's figures are
# still reported with the reason.
set -uo pipefail
BUILD=${1:-build}
TIDE_BIN=$(cd "$(dirname "$BUILD/tide")" 2>/dev/null && pwd)/tide
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SECS=${SECS:-10}
CONNS=${CONNS:-4}
THREADS=${THREADS:-2}
RES=${RES:-$ROOT/bench/serve_results.md}

die() { echo "bench-serve: $*" >&2; exit 1; }
[ -x "$TIDE_BIN" ] || die "$BUILD/tide is not built (make build)"
"$TIDE_BIN" serve --help >/dev/null 2>&1 || die "'tide serve' is not available in $TIDE_BIN"
command -v wrk >/dev/null || die "wrk is missing (apt-get install -y wrk)"
command -v curl >/dev/null || die "curl is missing (apt-get install -y curl)"

# the e2e helpers: serve_start / serve_stop / api / poll_until
# shellcheck source=../tests/e2e/lib/serve.bash
. "$ROOT/tests/e2e/lib/serve.bash"
tmp=$(mktemp -d /tmp/tide-bench-serve.XXXXXX)
SERVE_PIDS=()
EXTRA_PIDS=()
SLURM_UP=0
export TIDE_SLURM_DIR=$tmp/slurm
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
    wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$script" "$url" -- "$@" >"$tmp/wrk.$name" 2>&1
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
seq 1 1000 | xargs -P 8 -I{} curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
    --data-binary '{"job_id":"r-{}","team":"bench","priority":3,"gpus":1,"duration_s":3600}' "$SERVE_URL/v1/jobs"
api GET /v1/jobs/r-1000
[ "$API_STATUS" = 200 ] || die "GET /v1/jobs/r-1000 after the set-up: HTTP $API_STATUS $API_BODY"

echo "bench-serve: wrk POST /v1/jobs for ${SECS}s" >&2
read -r t_sub t_sub_bad t_sub_p50 t_sub_p99 < <(wrk_run submit "$SERVE_URL" "$HERE/wrk/submit.lua" w)
echo "bench-serve: wrk GET /v1/jobs/ID for ${SECS}s" >&2
read -r t_get t_get_bad t_get_p50 t_get_p99 < <(wrk_run get "$SERVE_URL" "$HERE/wrk/get_job.lua" 1000)
echo "bench-serve: wrk GET /v1/jobs?limit=50 for ${SECS}s" >&2
read -r t_list t_list_bad t_list_p50 t_list_p99 < <(wrk_run list "$SERVE_URL/v1/jobs?limit=50" /dev/null)

tide_submit_one() { "$TIDE_BIN" submit --id "cli-$1-$2" --team bench -p 3 -g 1 -d 1h; }
tide_get_one() { "$TIDE_BIN" job "r-$((($2 * 7919 + $1 * 104729) % 1000 + 1))"; }
echo "bench-serve: tide submit loop for ${SECS}s" >&2
read -r t_csub t_csub_bad < <(rate_loop "$SECS" 1 tide_submit_one)
echo "bench-serve: tide job loop for ${SECS}s" >&2
read -r t_cget t_cget_bad < <(rate_loop "$SECS" 1 tide_get_one)
api GET /healthz
t_health=$API_STATUS
t_jobs=$(curl -s "$SERVE_URL/v1/cluster" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("stats",{}); print(s.get("jobs_submitted", s.get("queue_jobs","?")))' 2>/dev/null || echo "?")
serve_stop

# -------------------------------------------------------------------- Slurm

slurm_why=""
s_sub=""
if ! command -v slurmctld >/dev/null 2>&1; then
    slurm_why="Slurm is not installed (apt-get install -y slurmctld slurmd slurm-client munge)"
elif [ "$(id -u)" != 0 ]; then
    slurm_why="scripts/slurm-local.sh needs root"
elif ! "$ROOT/scripts/slurm-local.sh" up >"$tmp/slurm-up.log" 2>&1; then
    slurm_why="scripts/slurm-local.sh up failed: $(tail -3 "$tmp/slurm-up.log" | tr '\n' ' ')"
else
    SLURM_UP=1
    eval "$("$ROOT/scripts/slurm-local.sh" env)"
    sbatch_one() { sbatch --wrap=true -H -Q -J "b$1-$2" -o /dev/null; }
    echo "bench-serve: sbatch x$CONNS loops for ${SECS}s" >&2
    read -r s_sub s_sub_bad < <(rate_loop "$SECS" "$CONNS" sbatch_one)
    echo "bench-serve: sbatch loop for ${SECS}s" >&2
    read -r s_csub s_csub_bad < <(rate_loop "$SECS" 1 sbatch_one)
    squeue -h -o %i | sort -n >"$tmp/slurm_ids"
    nids=$(wc -l <"$tmp/slurm_ids")
    mapfile -t sids <"$tmp/slurm_ids"
    squeue_one() { squeue -h -j "${sids[$((($2 * 7919 + $1 * 104729) % nids))]}"; }
    squeue_all() { squeue -h >/dev/null; }
    echo "bench-serve: squeue -j x$CONNS loops for ${SECS}s" >&2
    read -r s_get s_get_bad < <(rate_loop "$SECS" "$CONNS" squeue_one)
    echo "bench-serve: squeue -j loop for ${SECS}s" >&2
    read -r s_cget s_cget_bad < <(rate_loop "$SECS" 1 squeue_one)
    s_jobs=$(squeue -h | wc -l)
    echo "bench-serve: squeue (whole queue: $s_jobs jobs) x$CONNS loops for ${SECS}s" >&2
    read -r s_list s_list_bad < <(rate_loop "$SECS" "$CONNS" squeue_all)
    "$ROOT/scripts/slurm-local.sh" down >/dev/null 2>&1
    SLURM_UP=0
fi

# ------------------------------------------------------------------- report

sl() { [ -n "$s_sub" ] && rate "$1" || echo "n/a"; }
rt() { [ -n "$s_sub" ] && ratio "$1" "$2" || echo "-"; }
{
    echo "## tide serve vs Slurm 22.05 (\`make bench-serve\`)"
    echo
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
        "$(date -u +%Y-%m-%d). Each figure: operations completed / wall seconds over ${SECS} s, one run," \
        "daemon and load generator on the same machine (loopback)."
    echo "tide: \`tide serve\` (sim backend, 16x8 GPUs, elastic, open mode, SQLite WAL, a fresh database on $(df -T "$tmp" | awk 'NR == 2 {print $2}'));"
    echo "wrk ${THREADS} threads, ${CONNS} connections, keep-alive. Slurm: slurmctld + 4 slurmd (scripts/slurm-local.sh),"
    echo "no accounting database; the client commands run as separate processes, ${CONNS} loops in parallel or 1 loop."
    echo
    echo "| operation | tide | Slurm | tide/Slurm |"
    echo "|---|---:|---:|---:|"
    echo "| submit, durable: POST /v1/jobs (wrk) vs \`sbatch --wrap=true -H\` (${CONNS} loops) | $(rate "$t_sub") | $(sl "$s_sub") | $(rt "$t_sub" "${s_sub:-0}") |"
    echo "| submit, one CLI process per job: \`tide submit\` vs \`sbatch --wrap=true -H\` (1 loop) | $(rate "$t_csub") | $(sl "${s_csub:-}") | $(rt "$t_csub" "${s_csub:-0}") |"
    echo "| read one job: GET /v1/jobs/ID (wrk) vs \`squeue -j ID\` (${CONNS} loops) | $(rate "$t_get") | $(sl "${s_get:-}") | $(rt "$t_get" "${s_get:-0}") |"
    echo "| read one job, CLI: \`tide job ID\` vs \`squeue -j ID\` (1 loop) | $(rate "$t_cget") | $(sl "${s_cget:-}") | $(rt "$t_cget" "${s_cget:-0}") |"
    echo "| list: GET /v1/jobs?limit=50 (wrk) vs \`squeue\` (whole queue${s_jobs:+, $s_jobs jobs}; ${CONNS} loops) | $(rate "$t_list") | $(sl "${s_list:-}") | $(rt "$t_list" "${s_list:-0}") |"
    echo
    echo "tide latency (wrk): submit p50 $t_sub_p50 p99 $t_sub_p99; get p50 $t_get_p50 p99 $t_get_p99;" \
        "list p50 $t_list_p50 p99 $t_list_p99. Non-2xx answers: submit $t_sub_bad, get $t_get_bad, list $t_list_bad;" \
        "CLI failures: submit ${t_csub_bad}, job ${t_cget_bad}; /healthz after the run: $t_health; jobs submitted: $t_jobs."
    if [ -n "$s_sub" ]; then
        echo "Slurm failures: sbatch ${s_sub_bad}+${s_csub_bad}, squeue -j ${s_get_bad}+${s_cget_bad}, squeue ${s_list_bad}."
    else
        echo
        echo "Slurm figures missing: $slurm_why."
    fi
} | tee "$RES"
