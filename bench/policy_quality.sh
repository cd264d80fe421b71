#!/usr/bin/env bash
# tide policy quality on real traces: builds six workloads from the public traces
# in ../shared/traces (never copied into the repository), replays each through
# every policy `tide sim --help` lists, and prints a markdown table of useful and
# allocated utilization, SLO attainment, Tier A breach (when summary.json has it),
# preemptions, jobs finished and the oracle bound, with each policy's ratio to it.
# The table, the exact commands that made it, the machine and the git commit go
# to bench/policy_results.md (and stdout); progress goes to stderr.
#
# usage: bash bench/policy_quality.sh [BUILD_DIR | TIDE_BINARY] [--short]
#        bash bench/policy_quality.sh --combine SG_DIR BURST_DIR PEAK_GPUS SERVICE OUT_DIR
#        bash bench/policy_quality.sh --flatten SRC_DIR SERVICE OUT_DIR
#
# Environment:
#   TIDE_TRACES  the shared traces (default ../shared/traces, relative to the
#                repository); when absent the script says so and exits 0 ("skipped")
#   DAYS         simulated days, 1..60 (default 14; --short: 2)
#   PEAK_GPUS    peak inference need of the request-log workloads (default 152)
#   SCALE_ARRIVALS  Philly arrival scale (`--scale-arrivals`, default 1: the trace
#                as it is; 2 keeps training saturated from the second day on)
#   POLICIES     comma-separated policies (default: static,preempt,elastic, then
#                every other policy the binary lists in `tide sim --help`)
#   RESULTS      output file (default bench/policy_results.md)
#   SIM_ARGS     extra `tide sim` options for every replay, e.g. "--sizing ensemble"
#                (recorded in the commands; default none)
#   KEEP=1       keep the workload directory (its path is printed on stderr)
#   HEADROOMS    comma-separated headrooms for the hindsight sweep of `preempt`
#                (default 0.05,0.10,0.15,0.20,0.25,0.30,0.40,0.50,0.75,1.00; "none":
#                no sweep): each workload is replayed with `preempt --headroom H` for
#                every H, and a second table shows, per workload, the headroom an
#                operator would have picked knowing the whole replay (the highest
#                useful utilization with SLO >= SLO_TARGET) beside `elastic`
#   SLO_TARGET   the SLO the sweep's pick must meet (default 0.999)
#
# Workloads (64 x 8 GPUs, the same Philly jobs in all of them, training saturated):
#   azure-conv      Azure LLM 2023 conversation log, 60 s windows, tiled, peak PEAK_GPUS
#   azure-code      Azure LLM 2023 code log (bursty), the same way
#   diurnal-bursts  ServeGen language_m-large (10-minute diurnal curve) times the
#                   conversation log's minute-level bursts (--combine below), peak PEAK_GPUS
#   servegen        ServeGen language_m-large alone, peak 200 GPUs (the README's replay)
#   mooncake        Mooncake/Kimi conversation log, 60 s windows, tiled, peak PEAK_GPUS
#   flat            constant demand: the conversation workload flattened to its mean
#                   (--flatten below)
# Everything is a pure function of the traces, DAYS, PEAK_GPUS and the binary:
# a rerun gives the same table.
set -euo pipefail

# --combine SG_DIR BURST_DIR PEAK_GPUS SERVICE OUT_DIR
# The diurnal curve with minute-level bursts on top. SG_DIR holds a one-service
# import with coarse windows (ServeGen, 600 s), BURST_DIR a one-service import with
# fine windows (the Azure conversation log, 60 s) over the same span. For each
# fine window t in coarse window b:
#     burst(t) = fine(t) / mean(fine over b)       (1 when that mean is 0)
#     rps(t)   = coarse(b) x burst(t)
# so the fine series' minute-level shape rides on the coarse curve and each coarse
# window keeps its own mean rate exactly (the ratio to a moving average aligned
# with the coarse windows, which makes the burst factor average 1 in every window).
# Rates are then scaled so the busiest window needs PEAK_GPUS GPUs
# (ceil(rps / replica_rps) x gpus_per_replica, the simulator's rule), truncated to
# 4 decimals so the peak never needs one replica more. services.csv is SG_DIR's
# with the service renamed SERVICE. Standard library only.
combine() {
    python3 - "$@" <<'EOF'
import csv, math, os, sys
TAG = "combine"
def rows(d, f):
    try:
        return list(csv.DictReader(open(os.path.join(d, f))))
    except (OSError, csv.Error) as e:
        sys.exit("%s: %s" % (TAG, e))
sg, burst, name, out = sys.argv[1], sys.argv[2], sys.argv[4], sys.argv[5]
try:
    peak = float(sys.argv[3])
except ValueError:
    sys.exit("combine: PEAK_GPUS '%s' is not a number" % sys.argv[3])
def series(d):
    svc = rows(d, "services.csv")
    if len(svc) != 1:
        sys.exit("combine: %s/services.csv must hold one service" % d)
    pts = [(int(r["time_s"]), float(r["rps"])) for r in rows(d, "demand.csv")]
    if len(pts) < 2:
        sys.exit("combine: %s/demand.csv needs two points or more" % d)
    return svc[0], pts
svc, coarse = series(sg)
_, fine = series(burst)
cs, fs = coarse[1][0] - coarse[0][0], fine[1][0] - fine[0][0]
if fs <= 0 or cs <= 0 or cs % fs:
    sys.exit("combine: the coarse window (%d s) must be a multiple of the fine one (%d s)" % (cs, fs))
per = cs // fs
span = len(coarse) * cs
vals = [fine[i % len(fine)][1] for i in range(span // fs)]
raw = []
for b, (_, level) in enumerate(coarse):
    block = vals[b * per:(b + 1) * per]
    m = sum(block) / len(block)
    raw += [level * (v / m if m > 0 else 1.0) for v in block]
g, p = int(svc["gpus_per_replica"]), float(svc["replica_rps"])
top = max(raw)
if top <= 0:
    sys.exit("combine: all-zero demand cannot be scaled")
k = (peak / g) * p / top
rps = [math.floor(x * k * 1e4) / 1e4 for x in raw]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "services.csv"), "w") as f:
    f.write("service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n")
    f.write("%s,%d,%s,%s,%s\n" % (name, g, svc["replica_rps"], svc["min_replicas"], svc["warmup_s"]))
with open(os.path.join(out, "demand.csv"), "w") as f:
    f.write("time_s,service,rps\n")
    for i, x in enumerate(rps):
        f.write("%d,%s,%.4f\n" % (i * fs, name, x))
b = sorted(v / (sum(vals[i // per * per:(i // per + 1) * per]) / per or 1) for i, v in enumerate(vals))
need = lambda x: max(int(svc["min_replicas"]), math.ceil(x / p)) * g
print("combine: %d windows of %ds x %d of %ds -> %d points; burst factor p50 %.2f p99 %.2f max %.2f; "
      "peak %.4g rps = %d GPUs, mean %.4g rps -> %s" % (len(coarse), cs, len(fine), fs, len(rps),
      b[len(b) // 2], b[int(len(b) * 0.99)], b[-1], max(rps), need(max(rps)), sum(rps) / len(rps), out))
EOF
}

# --flatten SRC_DIR SERVICE OUT_DIR
# A constant demand at the time-weighted mean of SRC_DIR's (one service, evenly
# spaced points): two points, at 0 and at SRC_DIR's last time, so the span (and
# `tide sim`'s default horizon) is unchanged. services.csv is SRC_DIR's, renamed.
flatten() {
    python3 - "$@" <<'EOF'
import csv, math, os, sys
TAG = "flatten"
def rows(d, f):
    try:
        return list(csv.DictReader(open(os.path.join(d, f))))
    except (OSError, csv.Error) as e:
        sys.exit("%s: %s" % (TAG, e))
src, name, out = sys.argv[1:4]
svc = rows(src, "services.csv")
if len(svc) != 1:
    sys.exit("flatten: %s/services.csv must hold one service" % src)
svc = svc[0]
pts = [(int(r["time_s"]), float(r["rps"])) for r in rows(src, "demand.csv")]
if not pts:
    sys.exit("flatten: %s/demand.csv is empty" % src)
mean = round(sum(r for _, r in pts) / len(pts), 4)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "services.csv"), "w") as f:
    f.write("service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n")
    f.write("%s,%s,%s,%s,%s\n" % (name, svc["gpus_per_replica"], svc["replica_rps"], svc["min_replicas"], svc["warmup_s"]))
with open(os.path.join(out, "demand.csv"), "w") as f:
    f.write("time_s,service,rps\n0,%s,%.4f\n%d,%s,%.4f\n" % (name, mean, pts[-1][0], name, mean))
g, p = int(svc["gpus_per_replica"]), float(svc["replica_rps"])
print("flatten: %d points -> constant %.4f rps = %d GPUs -> %s" % (len(pts), mean, math.ceil(mean / p) * g, out))
EOF
}

case "${1:-}" in
--combine) shift; [ $# -eq 5 ] || { echo "usage: $0 --combine SG_DIR BURST_DIR PEAK_GPUS SERVICE OUT_DIR" >&2; exit 2; }
    combine "$@"; exit ;;
--flatten) shift; [ $# -eq 3 ] || { echo "usage: $0 --flatten SRC_DIR SERVICE OUT_DIR" >&2; exit 2; }
    flatten "$@"; exit ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARG=build
SHORT=0
for a in "$@"; do
    case "$a" in
    --short) SHORT=1 ;;
    -*) echo "policy_quality: unknown option '$a' (see --help)" >&2; exit 2 ;;
    *) ARG=$a ;;
    esac
done
# the binary: a build directory (like bench/run.sh) or the binary itself
case "$ARG" in /*) ;; *) ARG=$PWD/$ARG ;; esac
if [ -d "$ARG" ]; then TIDE=$ARG/tide; else TIDE=$ARG; fi
[ -x "$TIDE" ] || { echo "policy_quality: $TIDE is not an executable tide binary (make build)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "policy_quality: python3 is needed" >&2; exit 1; }
cd "$ROOT"
TIDE_SHOWN=${TIDE#"$ROOT"/}

T=${TIDE_TRACES:-../shared/traces}
for f in philly_pollux/philly.csv servegen/language_m-large azure_llm_2023/AzureLLMInferenceTrace_conv.csv \
    azure_llm_2023/AzureLLMInferenceTrace_code.csv mooncake_fast25/conversation_trace.jsonl; do
    if [ ! -e "$T/$f" ]; then
        echo "policy_quality: skipped: the shared traces are absent ($T/$f not found; set TIDE_TRACES)"
        exit 0
    fi
done

if [ "$SHORT" = 1 ]; then DAYS=${DAYS:-2}; else DAYS=${DAYS:-14}; fi
PEAK=${PEAK_GPUS:-152}
SCALE=${SCALE_ARRIVALS:-1}
RES=${RESULTS:-bench/policy_results.md}
HEADROOMS=${HEADROOMS:-0.05,0.10,0.15,0.20,0.25,0.30,0.40,0.50,0.75,1.00}
SLO_TARGET=${SLO_TARGET:-0.999}
[ "$HEADROOMS" = none ] || [[ "$HEADROOMS" =~ ^[0-9]+(\.[0-9]+)?(,[0-9]+(\.[0-9]+)?)*$ ]] ||
    { echo "policy_quality: HEADROOMS must be comma-separated numbers or none" >&2; exit 2; }
[[ "$SLO_TARGET" =~ ^(0?\.[0-9]+|0|1|1\.0+)$ ]] ||
    { echo "policy_quality: SLO_TARGET must be a number in [0, 1]" >&2; exit 2; }
read -r -a SIM_EXTRA <<<"${SIM_ARGS:-}"
for a in ${SIM_EXTRA[@]+"${SIM_EXTRA[@]}"}; do
    [[ "$a" =~ ^[A-Za-z0-9_.:,=+-]+$ ]] ||
        { echo "policy_quality: SIM_ARGS: '$a' is not a plain option or value" >&2; exit 2; }
done
[[ "$SCALE" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
    { echo "policy_quality: SCALE_ARRIVALS must be a number in (0, 100]" >&2; exit 2; }
SCALE_OPT=()
[ "$SCALE" = 1 ] || SCALE_OPT=(--scale-arrivals "$SCALE")
[[ "$DAYS" =~ ^[0-9]+$ ]] && [ "$DAYS" -ge 1 ] && [ "$DAYS" -le 60 ] ||
    { echo "policy_quality: DAYS must be a whole number of days in 1..60" >&2; exit 2; }
[[ "$PEAK" =~ ^[0-9]+$ ]] && [ "$PEAK" -ge 8 ] && [ "$PEAK" -le 512 ] ||
    { echo "policy_quality: PEAK_GPUS must be a whole number in 8..512" >&2; exit 2; }

# Policies: static, preempt, elastic first, then every other policy the binary
# names: its help's "(default all: a,b,c)", else the "(known: a,b,c)" of the error
# for an unknown policy; so policies added later are picked up without an edit.
if [ -z "${POLICIES:-}" ]; then
    POLICIES=$({
        "$TIDE" sim --help 2>&1 || true
        "$TIDE" sim --policy _ --cluster 1x8 --services _ --demand _ --jobs _ --out _ 2>&1 || true
    } | python3 -c '
import re, sys
t = sys.stdin.read()
name = r"[a-z][a-z0-9_-]*"
listed = []
for pat in (r"default all:\s*(%s(?:,%s)+)", r"known:\s*(%s(?:,%s)+)"):
    m = re.search(pat % (name, name), t)
    if m:
        listed = m.group(1).split(",")
        break
if not listed:
    sys.stderr.write("policy_quality: tide sim names no policy list; using static,preempt,elastic\n")
base = ["static", "preempt", "elastic"]
print(",".join(base + [p for p in listed if p not in base]))')
fi
[[ "$POLICIES" =~ ^[a-z][a-z0-9_-]*(,[a-z][a-z0-9_-]*)*$ ]] ||
    { echo "policy_quality: POLICIES must be a comma-separated list of names" >&2; exit 2; }

W=$(mktemp -d /tmp/tide-policy.XXXXXX)
if [ "${KEEP:-0}" = 1 ]; then echo "policy_quality: workloads in $W" >&2; else trap 'rm -rf "$W"' EXIT; fi
CMDS=$W/commands.txt
: >"$CMDS"
START=$SECONDS
NSTEP=0

# shell_words ARG...: the arguments as one shell line (quoted only when needed)
shell_words() {
    local a out=""
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./:,=+@%-]+$ ]]; then out+=" $a"; else out+=" $(printf '%q' "$a")"; fi
    done
    echo "${out# }"
}

# record_run CMD...: record CMD in $CMDS (with $W written as "$W" and the
# binary as shown) and run it, stdout to $W/log; on failure say so with its
# stderr and return 1.
record_run() {
    local line
    line=$(shell_words "$@")
    line=${line//"$W"/\$W}
    line=${line//"$TIDE"/$TIDE_SHOWN}
    echo "$line" >>"$CMDS"
    if ! "$@" >>"$W/log" 2>"$W/err"; then
        echo "policy_quality: failed: $line" >&2
        cat "$W/err" >&2
        return 1
    fi
}

# step LABEL CMD...: run CMD (stdout to $W/log), record it with $W written as
# "$W" and the binary as shown, and print one progress line on stderr.
step() {
    local label=$1 t0=$SECONDS
    shift
    NSTEP=$((NSTEP + 1))
    record_run "$@" || return 1
    local what=$3 # --combine / --flatten
    if [ "$1" = "$TIDE" ]; then what=$2; [ "$2" != trace ] || what="$2 $3"; fi
    printf 'policy_quality: [%2d] %-15s %-13s %4d s (total %d s)\n' "$NSTEP" "$label" "$what" \
        $((SECONDS - t0)) $((SECONDS - START)) >&2
}

JOBS=$W/jobs/jobs.csv
AZ=$T/azure_llm_2023
build_workloads() {
    echo "# workloads" >>"$CMDS"
    step jobs "$TIDE" trace import --format philly "$T/philly_pollux/philly.csv" --days "21:$((21 + DAYS))" \
        ${SCALE_OPT[@]+"${SCALE_OPT[@]}"} --out "$W/jobs"
    step azure-conv "$TIDE" trace import --format azure-llm "$AZ/AzureLLMInferenceTrace_conv.csv" --service conv \
        --window 60s --peak-gpus "$PEAK" --align-with "$JOBS" --out "$W/azure-conv"
    step azure-code "$TIDE" trace import --format azure-llm "$AZ/AzureLLMInferenceTrace_code.csv" --service code \
        --window 60s --peak-gpus "$PEAK" --align-with "$JOBS" --out "$W/azure-code"
    step diurnal-bursts "$TIDE" trace import --format servegen "$T/servegen/language_m-large" \
        --align-with "$JOBS" --out "$W/servegen-raw"
    step diurnal-bursts bash bench/policy_quality.sh --combine "$W/servegen-raw" "$W/azure-conv" "$PEAK" \
        diurnal "$W/diurnal-bursts"
    step servegen "$TIDE" trace import --format servegen "$T/servegen/language_m-large" --peak-gpus 200 \
        --align-with "$JOBS" --out "$W/servegen"
    step mooncake "$TIDE" trace import --format mooncake "$T/mooncake_fast25/conversation_trace.jsonl" \
        --service mooncake --window 60s --peak-gpus "$PEAK" --align-with "$JOBS" --out "$W/mooncake"
    step flat bash bench/policy_quality.sh --flatten "$W/azure-conv" flat "$W/flat"
}

WORKLOADS="azure-conv azure-code diurnal-bursts servegen mooncake flat"
FAILED=0
run_sims() {
    echo "# replays" >>"$CMDS"
    local w
    for w in $WORKLOADS; do
        step "$w" "$TIDE" sim --cluster 64x8 --services "$W/$w/services.csv" --demand "$W/$w/demand.csv" \
            --jobs "$JOBS" --policy "$POLICIES" --horizon "${DAYS}d" ${SIM_EXTRA[@]+"${SIM_EXTRA[@]}"} \
            --out "$W/$w/sim" || FAILED=1
    done
}

# sweep: every workload replayed with `preempt --headroom H` for each H of
# HEADROOMS (summary only); one progress line per workload.
sweep() {
    [ "$HEADROOMS" != none ] || return 0
    echo "# hindsight sweep of preempt's headroom" >>"$CMDS"
    local w h t0
    for w in $WORKLOADS; do
        t0=$SECONDS
        NSTEP=$((NSTEP + 1))
        for h in ${HEADROOMS//,/ }; do
            record_run "$TIDE" sim --cluster 64x8 --services "$W/$w/services.csv" \
                --demand "$W/$w/demand.csv" --jobs "$JOBS" --policy preempt --headroom "$h" \
                --horizon "${DAYS}d" ${SIM_EXTRA[@]+"${SIM_EXTRA[@]}"} --outputs summary \
                --out "$W/$w/sweep-$h" || FAILED=1
        done
        printf 'policy_quality: [%2d] %-15s %-13s %4d s (total %d s)\n' "$NSTEP" "$w" "sweep" \
            $((SECONDS - t0)) $((SECONDS - START)) >&2
    done
}

# sweep_table: per workload, preempt at the headroom with the highest useful
# utilization among those that met SLO_TARGET, beside elastic
sweep_table() {
    [ "$HEADROOMS" != none ] || return 0
    python3 - "$W" "$HEADROOMS" "$SLO_TARGET" $WORKLOADS <<'EOF'
import json, os, sys
W, hs, target, wls = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3]), sys.argv[4:]
def pol(path, name):
    try:
        p = json.load(open(path))["policies"][name]
        return None if "error" in p else (p["useful_utilization"], p["inference"]["slo_attainment"])
    except (OSError, KeyError, ValueError):
        return None
print("| workload | headroom picked in hindsight | preempt useful | preempt SLO | elastic useful | elastic SLO | elastic - preempt |")
print("|---|---|---|---|---|---|---|")
picks = []
for w in wls:
    runs = [(h, pol(os.path.join(W, w, "sweep-" + h, "summary.json"), "preempt")) for h in hs]
    runs = [(h, r) for h, r in runs if r]
    ok = [(h, r) for h, r in runs if r[1] >= target]
    el = pol(os.path.join(W, w, "sim", "summary.json"), "elastic")
    els = ["-", "-"] if not el else ["%.3f" % el[0], "%.5f" % el[1]]
    if not ok:
        best = max(runs, key=lambda x: (x[1][1], x[1][0])) if runs else None
        pick = "none meets %g" % target + ("" if not best else " (best SLO at %s)" % best[0])
        cells = [w, pick] + (["-", "-"] if not best else ["%.3f" % best[1][0], "%.5f" % best[1][1]]) + els + ["-"]
    else:
        h, r = max(ok, key=lambda x: (x[1][0], -float(x[0])))
        picks.append(h)
        d = "-" if not el else "%+.3f" % (el[0] - r[0])
        cells = [w, h, "%.3f" % r[0], "%.5f" % r[1]] + els + [d]
    print("| " + " | ".join(cells) + " |")
print()
print("Headrooms swept: %s; the pick is the highest useful utilization with SLO >= %g." % (", ".join(hs), target))
if picks:
    print("Picked: %s to %s; `preempt`'s default is 0.25." % (min(picks, key=float), max(picks, key=float)))
EOF
}

# table: one row per workload x policy from each summary.json
table() {
    python3 - "$W" "$POLICIES" $WORKLOADS <<'EOF'
import csv, json, os, sys
W, pols, wls = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
def waiting(w):
    # per policy: the share of timeline intervals that start with jobs queued
    # (training saturated: every GPU training may use is busy or being freed)
    n, q = {}, {}
    try:
        for r in csv.DictReader(open(os.path.join(W, w, "sim", "timeline.csv"))):
            n[r["policy"]] = n.get(r["policy"], 0) + 1
            q[r["policy"]] = q.get(r["policy"], 0) + (float(r["queue_jobs"]) > 0)
    except OSError:
        pass
    return {p: q[p] / n[p] for p in n}
def breach(p):
    t = p.get("tier_a")
    if isinstance(t, dict) and "breach_gpu_s" in t:
        return t["breach_gpu_s"]
    return p.get("tier_a.breach_gpu_s")
rows, has_breach, bound_keys = [], False, set()
for w in wls:
    f = os.path.join(W, w, "sim", "summary.json")
    d = json.load(open(f)) if os.path.exists(f) else {}
    orc = d.get("oracle", {})
    # the tightest bound summary.json offers: a fluid bound when there is one
    key = next((k for k in sorted(orc) if "fluid" in k), "max_utilization")
    bound = orc.get(key)
    bound_keys.add("oracle." + key)
    wait = waiting(w)
    for name in pols:
        p = d.get("policies", {}).get(name)
        if not p or "error" in p:
            rows.append((w, name, None, bound, None))
            continue
        has_breach |= breach(p) is not None
        rows.append((w, name, p, bound, wait.get(name)))
hdr = ["workload", "policy", "useful", "allocated", "SLO"] + (["Tier A breach GPU-h"] if has_breach else []) + \
      ["preemptions", "jobs done", "jobs waiting", "bound", "useful / bound"]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for w, name, p, bound, wt in rows:
    if p is None:
        print("| %s | %s | failed |%s" % (w, name, " |" * (len(hdr) - 3)))
        continue
    b = breach(p)
    cells = [w, name, "%.3f" % p["useful_utilization"], "%.3f" % p["utilization"],
             "%.5f" % p["inference"]["slo_attainment"]]
    if has_breach:
        cells.append("-" if b is None else "%.1f" % (b / 3600))
    cells += [str(p["training"]["preemptions"]), str(p["training"]["jobs_completed"]),
              "-" if wt is None else "%.2f" % wt,
              "-" if bound is None else "%.3f" % bound,
              "-" if not bound else "%.3f" % (p["useful_utilization"] / bound)]
    print("| " + " | ".join(cells) + " |")
print()
print("bound: `%s` of summary.json." % ", ".join(sorted(bound_keys)) +
      ("" if has_breach else " summary.json has no `tier_a.breach_gpu_s` yet, so no Tier A breach column."))
sub = {}
for w in wls:
    f = os.path.join(W, w, "sim", "summary.json")
    if os.path.exists(f):
        ps = json.load(open(f)).get("policies", {})
        sub[w] = next((p["training"]["jobs_submitted"] for p in ps.values() if "training" in p), None)
print("Jobs submitted: " + ", ".join("%s %s" % (w, sub.get(w)) for w in wls) + ".")
EOF
}

machine() {
    local cpu
    cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
    echo "$(nproc) cores${cpu:+ ($cpu)}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
}

echo "policy_quality: $DAYS days, policies $POLICIES, traces $T" >&2
build_workloads
run_sims
sweep
TABLE=$(table)
SWEEP=$(sweep_table)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ":(exclude)$RES" 2>/dev/null || COMMIT="$COMMIT (uncommitted changes)"
{
    echo "## Policy quality on real traces (\`make bench-policy\`)"
    echo
    echo "Machine: $(machine). Commit: $COMMIT. Binary: \`$TIDE_SHOWN\`."
    echo "Cluster 64x8 (512 GPUs); simulated days: $DAYS; Philly days 21:$((21 + DAYS)) as the training queue of every"
    echo "workload${SCALE_OPT[@]+ (arrivals x$SCALE)}; request-log workloads sized to a $PEAK-GPU peak, ServeGen alone to 200."
    echo "Policies: $POLICIES."
    echo
    echo "$TABLE"
    echo
    if [ -n "$SWEEP" ]; then
        echo "### \`preempt\` with the headroom picked in hindsight"
        echo
        echo "An operator who knew the whole replay would set the autoscaler's headroom per workload:"
        echo "\`preempt --headroom H\` for every H swept, and the H with the highest useful utilization"
        echo "among those that met the SLO target."
        echo
        echo "$SWEEP"
        echo
    fi
    echo "Traces: Philly (Microsoft, Jeon et al. ATC'19, Pollux extraction), ServeGen (Alibaba Bailian),"
    echo "Azure LLM inference 2023 (Azure/AzurePublicDataset), Mooncake FAST'25 (Kimi); see $T/README.md."
    echo "Useful = serving up to what demand needed + training kept, over GPUs x horizon; allocated ="
    echo "1 - idle; SLO = requests served within capacity / demanded; jobs done = training jobs finished;"
    echo "jobs waiting = share of the horizon (timeline intervals) that began with training jobs queued,"
    echo "i.e. where training was saturated (the Philly queue fills up over the first days)."
    echo
    echo "Commands (run from the repository root, with \`W=\$(mktemp -d)\`):"
    echo
    echo '```'
    cat "$CMDS"
    echo '```'
    echo
    echo "What the workload steps reported:"
    echo
    echo '```'
    grep -E '^(tide trace import|combine|flatten):' "$W/log" | sed "s|$W|\$W|g"
    echo '```'
} | tee "$RES"
echo "policy_quality: wrote $RES ($((SECONDS - START)) s)" >&2
exit "$FAILED"
