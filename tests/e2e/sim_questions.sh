#!/usr/bin/env bash
# End-to-end: latency as users feel it and bulk-traffic QoS in `tide sim`, and
# the minimal experiment's one command (bench/questions.sh, make bench-questions).
#  - the table prints P99 TTFT/TBT per policy next to the capacity SLO column;
#  - summary.json: every policy's requests are conserved (served + queued +
#    rejected = arrived); with capacity at the peak and no burst (isolated)
#    nothing queues and P99 TTFT/TBT are within the targets; a 2x burst on the
#    same fixed capacity makes P99 TTFT grow and attainment fall;
#  - --bulk-qos: periodic checkpoints are staggered (none without it), weight
#    loads take no longer than the longest declared warm-up;
#  - bad input: --bulk-qos without storage or out of range, a negative latency
#    column: clear errors;
#  - bench/questions.sh answers the five questions; its uplink arm (question
#    4): the probe (uplinks as wide as the storage) is elastic's run, the tight
#    uplink is the storage split over the probe's racks, no rack uses more than
#    it, and the tight uplinks lengthen the periodic checkpoint tail.
# Relations only, no recorded numbers. Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
[ -d "${TIDE_SRC:-}" ] || { echo "skip: TIDE_SRC" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-questions.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- the one command (short: 3 days)
DAYS=3 bash "$TIDE_SRC/bench/questions.sh" "$(dirname "$TIDE_BIN")" "$tmp/q" >"$tmp/answers.md" \
    || fail "bench/questions.sh failed"
for k in 1 2 3 4 5; do
    grep -q "^\*\*$k\. " "$tmp/answers.md" || fail "question $k not answered"
done
grep -q '^- elastic+QoS, uplinks [0-9.]* GB/s: checkpoint P99 .*late' "$tmp/answers.md" ||
    fail "question 4 lacks the uplink arm"
grep -q 'the run is elastic.s above: yes' "$tmp/answers.md" || fail "the uplink probe changed the run"
grep -q 'p99TTFT_s' "$tmp/q/base.txt" && grep -q 'p99TBT_ms' "$tmp/q/base.txt" \
    && grep -q 'cap_SLO' "$tmp/q/base.txt" || fail "table lacks the latency / capacity SLO columns"
for p in isolated static elastic; do
    grep -Eq "^$p +" "$tmp/q/base.txt" || fail "no table row for $p"
done

python3 - "$tmp/q" <<'EOF' || fail "summary.json relations"
import json, sys
q = sys.argv[1]
pol = lambda d: json.load(open(f"{q}/{d}/summary.json"))["policies"]
base, qos, quiet = pol("base"), pol("qos")["elastic"], pol("quiet")["isolated"]
svcs = {}
import csv
for r in csv.DictReader(open(f"{q}/gen/services.csv")):
    svcs[r["service"]] = float(r["warmup_s"])
bad = []
def check(c, msg):
    if not c:
        bad.append(msg)
for name, p in list(base.items()) + [("elastic+qos", qos), ("quiet", quiet)]:
    inf = p["inference"]
    check(inf["capacity_slo_attainment"] == inf["slo_attainment"], f"{name}: capacity SLO renamed")
    for s, l in [("all", inf["latency"]["all"])] + list(inf["latency"]["services"].items()):
        tot = l["served"] + l["queued"] + l["rejected"]
        check(abs(tot - l["arrived"]) <= 1e-6 * max(1, l["arrived"]), f"{name}/{s}: not conserved")
        check(l["ttft_p50_s"] <= l["ttft_p99_s"] and l["tbt_p50_s"] <= l["tbt_p99_s"],
              f"{name}/{s}: P50 above P99")
        check(0 <= l["ttft_slo_attainment"] <= 1, f"{name}/{s}: attainment out of range")
ql = quiet["inference"]["latency"]
check(ql["all"]["rejected"] == 0 and ql["all"]["max_queue"] < 1e-6, "quiet isolated queued")
check(ql["all"]["ttft_slo_attainment"] == 1.0, "quiet isolated missed its TTFT target")
for s, l in ql["services"].items():
    check(l["ttft_p99_s"] <= l["ttft_target_s"] and l["tbt_p99_s"] <= l["tbt_target_s"],
          f"quiet {s}: P99 beyond target")
il = base["isolated"]["inference"]["latency"]["all"]
check(il["ttft_p99_s"] > ql["all"]["ttft_p99_s"], "a 2x burst on fixed capacity did not raise P99 TTFT")
check(il["ttft_slo_attainment"] < 1.0, "a 2x burst on fixed capacity met every TTFT target")
el = base["elastic"]["inference"]["latency"]
check("vs_isolated" in el and all("vs_isolated" in v for v in el["services"].values()),
      "no vs_isolated")
iv = base["isolated"]["inference"]["latency"]["vs_isolated"]
check(iv["ttft_p99_x"] == 1 and iv["tbt_p99_x"] == 1, "isolated against itself is not 1")
so, sn = qos["faults"]["storage"], base["elastic"]["faults"]["storage"]
check(so["staggered"] > 0 and sn["staggered"] == 0, "stagger only with --bulk-qos")
check(so["bulk_qos"] > 0 and sn["bulk_qos"] == 0, "bulk_qos recorded")
check(so["transfer_times"]["weight_load"]["p99_s"] <= max(svcs.values()),
      "with QoS a weight load took longer than the longest declared warm-up")
check(so["peak_rate_gbps"] <= so["gbps"] + 1e-9, "more than the bandwidth in use")
# the uplink arm
probe = pol("probe")["elastic"]["faults"]["storage"]
check(all(probe[k] == sn[k] for k in ("peak_demand_gbps", "saturated_s", "moved_gb", "transfers"))
      and probe["transfer_times"] == sn["transfer_times"],
      "uplinks as wide as the storage changed elastic's run")
racks = len(probe["uplinks"])
for arm in ("uplink", "uplink_qos"):
    s = pol(arm)["elastic"]["faults"]["storage"]
    ups = s["uplinks"]
    check(len(ups) == racks and all(abs(u["gbps"] - sn["gbps"] / racks) < 1e-5 * sn["gbps"] for u in ups),
          f"{arm}: uplink is not the storage over {racks} racks")
    check(all(u["peak_rate_gbps"] <= u["gbps"] + 1e-6 for u in ups), f"{arm}: a rack above its uplink")
    check(s["busiest_uplink"]["saturated_s"] > 0, f"{arm}: the tight uplinks never saturated")
    check(s["transfer_times"]["ckpt_periodic"]["p99_s"] > sn["transfer_times"]["ckpt_periodic"]["p99_s"],
          f"{arm}: tight uplinks did not lengthen the periodic checkpoint tail")
check(pol("uplink_qos")["elastic"]["faults"]["storage"]["staggered"] > 0, "uplink + QoS: nothing staggered")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF

# --- bad input
g="$tmp/q/gen"
run() { "$TIDE_BIN" sim --cluster 25x8:H100 --services "$1" --demand "$g/demand.csv" \
        --jobs "$g/jobs.csv" --policy elastic --horizon 1h --out "$tmp/bad" "${@:2}"; }
out=$(run "$g/services.csv" --bulk-qos 0.5 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'bulk-qos needs --inject storage' <<<"$out" || fail "--bulk-qos without storage: rc=$rc $out"
out=$(run "$g/services.csv" --bulk-qos 1.5 --inject storage:10 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'not a share' <<<"$out" || fail "--bulk-qos 1.5: rc=$rc $out"
{ echo "$(head -1 "$g/services.csv"),ttft_target_s"
  tail -n +2 "$g/services.csv" | sed 's/$/,-1/'; } >"$tmp/neg.csv"
out=$(run "$tmp/neg.csv" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q 'ttft_target_s' <<<"$out" || fail "negative ttft_target_s: rc=$rc $out"
"$TIDE_BIN" sim --help | grep -q -- '--bulk-qos' || fail "--help lacks --bulk-qos"

[ $fails -eq 0 ] && echo "sim_questions: ok"
exit $((fails > 0))
