#!/usr/bin/env bash
# End-to-end: the simulator's outputs and what it reports about its knobs.
#  - --outputs summary writes summary.json alone (and removes a previous
#    run's timeline/events/usage from the folder); summary.json records the
#    options (policies, knobs, outputs, the command line without --out);
#  - a --reserve below the services' floors is reported as raised (a note
#    under the table, tier_a.reserve_raised) and `tide capacity` on a sweep of
#    such reserves says they change nothing (never "raise ... from X to X");
#  - `tide usage DIR` on a folder of several policies refuses to add them up
#    unless --policy or --by policy.
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-simout.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$tmp"
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,2,300\n' >services.csv
{ echo "time_s,service,rps"; for h in $(seq 0 23); do echo "$((h * 3600)),chat,$((h >= 8 && h < 20 ? 250 : 60))"; done; } >demand.csv
cat >jobs.csv <<'J'
job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,restore_s
a,0,vision,2,8,20000,8,1,1800,60,120
b,0,lang,3,16,30000,8,1,1800,60,120
c,3600,lang,1,8,7200,8,1,1800,60,120
J
sim() { "$TIDE_BIN" sim --cluster 4x8 --services services.csv --demand demand.csv --jobs jobs.csv --horizon 1d "$@"; }

# --- every output, then summary only into the same folder
sim --policy elastic,static --out all >/dev/null 2>&1 || fail "tide sim (all outputs)"
for f in summary.json timeline.csv events.csv usage.csv; do [ -s "all/$f" ] || fail "no all/$f"; done
sim --policy elastic --out all --outputs summary >out.txt 2>&1 || fail "tide sim --outputs summary: $(cat out.txt)"
for f in timeline.csv events.csv usage.csv usage_teams.csv; do [ -e "all/$f" ] && fail "--outputs summary left all/$f"; done
grep -q 'wrote all/summary.json$' out.txt || fail "the wrote line: $(grep wrote out.txt)"
python3 - all/summary.json <<'PY' || fail "summary.json options"
import json, sys
o = json.load(open(sys.argv[1]))["options"]
assert o["outputs"] == ["summary"], o["outputs"]
assert o["policies"] == ["elastic"], o["policies"]
assert o["horizon_s"] == 86400 and o["interval_s"] == 300, o
assert o["reserve_gpus"] is None and o["fairshare"] is True, o
assert "--out" not in o["command"] and "all" not in o["command"], o["command"]
assert o["command"][:1] == ["sim"] and "--outputs" in o["command"], o["command"]
PY
sim --out x --outputs summary,nonsense >/dev/null 2>err.txt; rc=$?
[ "$rc" = 2 ] && grep -q "unknown output 'nonsense'" err.txt || fail "--outputs nonsense: exit $rc: $(cat err.txt)"
sim --out x --outputs summary --report x/r.html >/dev/null 2>err.txt; rc=$?
[ "$rc" = 2 ] || fail "--report without timeline/events: exit $rc"

# --- a reserve below the floors (2 x 8 = 16 GPUs)
sim --policy elastic --reserve 8 --out low >low.txt 2>&1 || fail "tide sim --reserve 8: $(cat low.txt)"
grep -q "note: elastic: --reserve 8 is below the services' floors (16 GPUs)" low.txt || fail "no note: $(cat low.txt)"
python3 -c '
import json, sys
t = json.load(open("low/summary.json"))["policies"]["elastic"]["tier_a"]
assert t["reserve_raised"] is True and t["reserve_requested_gpus"] == 8 and t["reserve_effective_gpus"] == 16 and t["floor_gpus"] == 16, t' ||
    fail "tier_a does not say the reserve was raised"
sim --policy elastic --reserve 24 --out high >high.txt 2>&1 || fail "tide sim --reserve 24"
grep -q '^note:' high.txt && fail "a note for a reserve above the floors: $(grep note high.txt)"
sim --policy elastic --out sw --sweep reserve=0:16:8 >sw.txt 2>&1 || fail "tide sim --sweep: $(tail -3 sw.txt)"
"$TIDE_BIN" capacity sw >cap.txt 2>&1 || fail "tide capacity: $(cat cap.txt)"
grep -q 'reserve 0 -> 8 changes nothing: both are below the services. floors' cap.txt || fail "capacity: $(cat cap.txt)"
grep -Eq 'from ([0-9.]+) to \1' cap.txt && fail "capacity contradicts the sweep: $(grep -E 'from ([0-9.]+) to \1' cap.txt)"
grep -q 'raise --reserve or' cap.txt && grep -q 'changes nothing' cap.txt && fail "capacity advises raising a reserve the sweep shows changes nothing"

# --- tide usage on a folder of two policies
"$TIDE_BIN" usage all --by team,class >u.txt 2>&1; rc=$?   # all/ has only elastic's usage now
sim --policy elastic,static --out two >/dev/null 2>&1 || fail "tide sim two policies"
"$TIDE_BIN" usage two --by team,class >u.txt 2>&1; rc=$?
[ "$rc" = 2 ] && grep -q 'two holds 2 policies (.*elastic.*static\|.*static.*elastic' u.txt || fail "usage without --policy: exit $rc: $(cat u.txt)"
"$TIDE_BIN" usage two --by team,class --policy static >/dev/null 2>&1 || fail "usage --policy static"
"$TIDE_BIN" usage two --by policy,team >/dev/null 2>&1 || fail "usage --by policy,team"
"$TIDE_BIN" usage two >/dev/null 2>&1 || fail "usage (default --by policy,owner)"
[ "$fails" -eq 0 ] || exit 1
echo "sim_outputs: ok"
