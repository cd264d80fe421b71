#!/usr/bin/env bash
# tide: the design sources' minimal experiment (second source, section 23), in
# one command. One fixed inference trace and a queue of checkpointable training
# jobs (the built-in seed200 scenario), replayed through physical isolation
# (`isolated`), a static co-partition (`static`), elastic leases (`elastic`) and
# elastic leases with bulk-traffic QoS (`elastic --bulk-qos`), with a 2x burst
# on inference (a 2x forecast error), rank failures in training and checkpoint
# and weight-load traffic through one shared storage. Question 4 has an uplink
# arm as well: `elastic` again, with and without QoS, with every rack's network
# uplink a per-domain budget tight enough to contend (UPLINK, below). Prints the
# five answers as Markdown (figures from summary.json and timeline.csv).
#   bash bench/questions.sh build [OUT]       # or: make bench-questions
# Knobs (environment): DAYS (7), SEED (1), STORAGE GB/s (5), QOS share (0.5),
# BURST (burst:2x@36h+2h), RANKS (rank-fail-rate:2/day), UPLINK GB/s per rack
# (default: derived from the run, below).
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-$(mktemp -d /tmp/tide-questions.XXXXXX)}
TIDE=$BUILD/tide
DAYS=${DAYS:-7}
SEED=${SEED:-1}
STORAGE=${STORAGE:-5}
QOS=${QOS:-0.5}
BURST=${BURST:-burst:2x@36h+2h}
RANKS=${RANKS:-rank-fail-rate:2/day}
UPLINK=${UPLINK:-}
[ -x "$TIDE" ] || { echo "questions: $TIDE not built" >&2; exit 1; }
command -v python3 >/dev/null || { echo "questions: python3 missing" >&2; exit 1; }
mkdir -p "$OUT"

"$TIDE" gen --scenario seed200 --days "$DAYS" --seed "$SEED" --out "$OUT/gen" >/dev/null
common=(--cluster 25x8:H100 --services "$OUT/gen/services.csv" --demand "$OUT/gen/demand.csv"
        --jobs "$OUT/gen/jobs.csv" --seed "$SEED" --outputs summary,timeline
        --inject "$BURST,$RANKS,storage:$STORAGE")
# arms 1-3 (and elastic without QoS), then arm 4: the same with bulk-traffic QoS
"$TIDE" sim "${common[@]}" --policy isolated,static,elastic --out "$OUT/base" \
    > "$OUT/base.txt" 2>/dev/null
"$TIDE" sim "${common[@]}" --policy elastic --bulk-qos "$QOS" --out "$OUT/qos" \
    > "$OUT/qos.txt" 2>/dev/null
# the quiet baseline: inference alone on its own GPUs, no burst, no faults
"$TIDE" sim "${common[@]:0:12}" --policy isolated --out "$OUT/quiet" > "$OUT/quiet.txt" 2>/dev/null

# The uplink arm (question 4). First a probe: elastic with every rack's uplink as
# wide as the storage, which can never bind (a rack's transfers together get at
# most the storage's bandwidth), so the run is elastic's above, and summary.json
# lists the racks with their unconstrained per-rack demand. The tight uplink is
# then the storage's bandwidth split evenly over those racks, STORAGE / racks:
# all uplinks together carry no more than the storage, so the network is
# provisioned exactly for the storage and no rack can take more than its even
# share of it. Bulk traffic is not spread evenly (a reclaim wave or a job's
# checkpoint lands on the racks of its GPUs), so the racks that carry it contend
# on their own uplink while the storage still has room; the probe's per-rack
# peaks, printed with the answer, show by how much.
"$TIDE" sim "${common[@]}" --policy elastic --uplink "$STORAGE" --out "$OUT/probe" \
    > "$OUT/probe.txt" 2>/dev/null
if [ -z "$UPLINK" ]; then
    UPLINK=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["policies"]["elastic"]["faults"]["storage"]
print("%.6g" % (s["gbps"] / len(s["uplinks"])))' "$OUT/probe/summary.json")
fi
"$TIDE" sim "${common[@]}" --policy elastic --uplink "$UPLINK" --out "$OUT/uplink" \
    > "$OUT/uplink.txt" 2>/dev/null
"$TIDE" sim "${common[@]}" --policy elastic --uplink "$UPLINK" --bulk-qos "$QOS" \
    --out "$OUT/uplink_qos" > "$OUT/uplink_qos.txt" 2>/dev/null

python3 - "$OUT" "$BURST" "$STORAGE" "$QOS" "$UPLINK" <<'EOF'
import csv, json, re, sys
out, burst, storage, qos = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
uplink = float(sys.argv[5])
base = json.load(open(f"{out}/base/summary.json"))["policies"]
arms = {"isolated": base["isolated"], "static": base["static"], "elastic": base["elastic"],
        "elastic+QoS": json.load(open(f"{out}/qos/summary.json"))["policies"]["elastic"]}
iso = arms["isolated"]
quiet = json.load(open(f"{out}/quiet/summary.json"))["policies"]["isolated"]

def lat(p): return p["inference"]["latency"]["all"]
def sto(p): return p["faults"]["storage"]
def x(a, b): return a / b if b > 0 else float("nan")
def fx(v): return f"{v:.3g}x"

def dur(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", s)
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]

m = re.search(r"@([^+]+)\+([^,]+)", burst)
b0, b1 = dur(m.group(1)), dur(m.group(1)) + dur(m.group(2))

def window_coverage(folder, policy):
    """Capacity coverage (served/demanded) of the timeline rows inside the burst."""
    dem = srv = 0.0
    with open(f"{out}/{folder}/timeline.csv") as f:
        for row in csv.DictReader(f):
            t = float(row["time_s"])
            if row["policy"] != policy or t < b0 or t >= b1:
                continue
            d, r = float(row["demand_rps"]), float(row["ready_rps"])
            dem += d
            srv += min(d, r)
    return x(srv, dem)

print("| arm (same burst and faults) | P50 TTFT s | P99 TTFT s | P99 TTFT vs isolated | P50 TBT ms | P99 TBT ms "
      "| P99 TBT vs isolated | TTFT SLO | capacity SLO |")
print("|---|---|---|---|---|---|---|---|---|")
for n, p in arms.items():
    l = lat(p)
    print(f"| {n} | {l['ttft_p50_s']:.3f} | {l['ttft_p99_s']:.3f} | "
          f"{fx(x(l['ttft_p99_s'], lat(iso)['ttft_p99_s']))} | {1000*l['tbt_p50_s']:.1f} | "
          f"{1000*l['tbt_p99_s']:.1f} | {fx(x(l['tbt_p99_s'], lat(iso)['tbt_p99_s']))} | "
          f"{l['ttft_slo_attainment']:.4f} | {p['inference']['capacity_slo_attainment']:.4f} |")
print()
print("**1. How much do inference P99 TTFT/TBT worsen against the isolated baseline?**")
q = lat(quiet)
print(f"- quiet baseline (isolated, no burst, no faults): P99 TTFT {q['ttft_p99_s']:.3f} s, "
      f"P99 TBT {1000*q['tbt_p99_s']:.1f} ms")
for n in ("isolated", "static", "elastic", "elastic+QoS"):
    l = lat(arms[n])
    print(f"- {n}: P99 TTFT {l['ttft_p99_s']:.3f} s = {fx(x(l['ttft_p99_s'], q['ttft_p99_s']))} "
          f"the quiet baseline, {fx(x(l['ttft_p99_s'], lat(iso)['ttft_p99_s']))} isolated under "
          f"the same burst; P99 TBT {1000*l['tbt_p99_s']:.1f} ms = "
          f"{fx(x(l['tbt_p99_s'], q['tbt_p99_s']))} / {fx(x(l['tbt_p99_s'], lat(iso)['tbt_p99_s']))}")
print()
print("**2. How much does training time-to-train improve or worsen? How many steps are lost?**")
it = iso["training"]
for n in ("static", "elastic", "elastic+QoS"):
    t = arms[n]["training"]
    print(f"- {n}: mean job completion {t['mean_jct_s']/3600:.2f} h against isolated's "
          f"{it['mean_jct_s']/3600:.2f} h ({100*(x(t['mean_jct_s'], it['mean_jct_s'])-1):+.1f}%), "
          f"{t['jobs_completed']} jobs done against {it['jobs_completed']}; work thrown away "
          f"{t['gpu_hours_lost']:.1f} GPU-h (isolated {it['gpu_hours_lost']:.1f}), "
          f"{arms[n]['faults']['rank_failures']} rank failures, {t['preemptions']} preemptions")
print()
print("**3. P99 from reclaim request to a warm replica taking traffic?**")
for n in ("elastic", "elastic+QoS"):
    r = arms[n]["reclaim"]
    print(f"- {n}: P99 notice -> ready {r['p99_notice_to_ready_s']:.0f} s over {r['count']} "
          f"reclaims ({r['late']} late), P99 notice -> GPUs returned {r['p99_lead_s']:.0f} s")
print()
print(f"**4. Do checkpoints and weight loads cause NIC/SSD tail spikes?** (shared storage "
      f"{storage:g} GB/s; QoS share {qos})")
for n, p in arms.items():
    s = sto(p); tt = s["transfer_times"]
    print(f"- {n}: peak demand {s['peak_demand_gbps']:.1f} GB/s ({s['peak_demand_ratio']:.2f}x "
          f"the bandwidth), saturated {s['saturated_s']:.0f} s, peak checkpoint rate "
          f"{s['peak_ckpt_rate_gbps']:.1f} GB/s; checkpoint P50/P99 "
          f"{tt['ckpt_periodic']['p50_s']:.0f}/{tt['ckpt_periodic']['p99_s']:.0f} s periodic, "
          f"{tt['ckpt_asked']['p50_s']:.0f}/{tt['ckpt_asked']['p99_s']:.0f} s asked (reclaims); "
          f"weight load P50/P99 {tt['weight_load']['p50_s']:.0f}/{tt['weight_load']['p99_s']:.0f} s; "
          f"{s['staggered']} checkpoints staggered (P99 delay "
          f"{tt['ckpt_stagger_delay']['p99_s']:.0f} s)")
el = lambda f: json.load(open(f"{out}/{f}/summary.json"))["policies"]["elastic"]
probe = sto(el("probe"))
same = all(probe[k] == sto(arms["elastic"])[k] for k in ("peak_demand_gbps", "saturated_s", "moved_gb"))
racks = sorted(probe["uplinks"], key=lambda u: -u["peak_demand_gbps"])
print(f"- rack uplinks: {len(racks)} racks; with uplinks as wide as the storage (never binding; "
      f"the run is elastic's above: {'yes' if same else 'NO'}) the racks' peak demand is "
      + ", ".join(f"{u['peak_demand_gbps']:.1f}" for u in racks)
      + f" GB/s; each uplink set to {storage:g} / {len(racks)} = {uplink:.2f} GB/s")
for n, f in (("elastic, uplinks", "uplink"), ("elastic+QoS, uplinks", "uplink_qos")):
    p = el(f); s = sto(p); tt = s["transfer_times"]; b = s["busiest_uplink"]; r = p["reclaim"]
    u = next(x for x in s["uplinks"] if x["rack"] == b["rack"])
    print(f"- {n} {uplink:.2f} GB/s: checkpoint P99 {tt['ckpt_periodic']['p99_s']:.0f} s periodic, "
          f"{tt['ckpt_asked']['p99_s']:.0f} s asked; weight load P99 {tt['weight_load']['p99_s']:.0f} s; "
          f"storage peak demand {s['peak_demand_gbps']:.1f} GB/s, saturated {s['saturated_s']:.0f} s; "
          f"busiest rack {b['rack']}: peak demand {u['peak_demand_gbps']:.1f} GB/s "
          f"({b['peak_demand_ratio']:.1f}x its uplink), peak rate {u['peak_rate_gbps']:.2f} GB/s, "
          f"saturated {b['saturated_s']:.0f} s; {r['count']} reclaims ({r['late']} late), P99 notice "
          f"-> GPUs returned {r['p99_lead_s']:.0f} s, -> ready {r['p99_notice_to_ready_s']:.0f} s; "
          f"TTFT SLO {lat(p)['ttft_slo_attainment']:.4f}, {p['training']['jobs_completed']} jobs done")
print()
print(f"**5. With a 2x forecast error ({burst}), does Tier A still meet its SLO?**")
for n, p in arms.items():
    folder = "qos" if n == "elastic+QoS" else "base"
    pol = "elastic" if n == "elastic+QoS" else n
    l = lat(p)
    print(f"- {n}: capacity coverage inside the burst {window_coverage(folder, pol):.4f}, "
          f"over the run {p['inference']['capacity_slo_attainment']:.4f}; TTFT SLO attainment "
          f"{l['ttft_slo_attainment']:.4f}, {l['rejected']:.0f} requests rejected; Tier A "
          f"breach {p['tier_a']['breach_gpu_s']/3600:.2f} GPU-h")
EOF
echo
echo "(outputs in $OUT)"
