#!/usr/bin/env bash
# End to end: the operators' commands against a real `tide serve --backend sim`:
# tide nodes (state, GPUs by owner), drain NODE --reason / resume, demand SERVICE RPS,
# jobs REASON/START and --output wide, events --job/--kind/--since, wall-clock ISO 8601
# times, --output table|wide|json (and --json as its alias), tide sbatch SCRIPT (an
# existing script with #SBATCH --gres=gpu:8 --nodes=2 --time=4:00:00 runs unchanged,
# --qos through the cluster file), duplicate checkpoint reports from several gangs.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require

cat >"$tmp/cluster.yaml" <<'EOF'
groups:
  - {count: 4, gpus_per_node: 8, gpu_type: H100}
teams:
  - {name: research}
qos:
  urgent: 1
  normal: P2
  scavenger: 3
EOF
serve_start ops --db "$tmp/tide.db" --cluster-file "$tmp/cluster.yaml" --policy elastic || exit 1
T=$TIDE_BIN
S=(--server "$SERVE_URL")
api POST /v1/services '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":1}'
[ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"

run() { local n=$1; shift; "$@" >"$tmp/$n.o" 2>"$tmp/$n.e"; }
expect_ok() {
    local n=$1 pat=$2
    shift 2
    run "$n" "$@"
    local rc=$?
    [ "$rc" -eq 0 ] || { fail "'$*' exited $rc: $(cat "$tmp/$n.e")"; return; }
    grep -Eq -- "$pat" "$tmp/$n.o" || fail "'$*': no /$pat/ in: $(head -20 "$tmp/$n.o")"
}
expect_json() {
    local n=$1 expr=$2
    shift 2
    run "$n" "$@"
    local rc=$?
    [ "$rc" -eq 0 ] || { fail "'$*' exited $rc: $(cat "$tmp/$n.e")"; return; }
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert eval(sys.argv[2]), d' "$tmp/$n.o" "$expr" 2>"$tmp/$n.py" ||
        fail "'$*': JSON check '$expr' failed: $(tail -3 "$tmp/$n.py")"
}
expect_fail() {
    local n=$1 want=$2 pat=$3
    shift 3
    run "$n" "$@"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want ($(cat "$tmp/$n.e"))"
    grep -Eq -- "$pat" "$tmp/$n.e" || fail "'$*': no /$pat/ in stderr: $(cat "$tmp/$n.e")"
}
ISO='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

# --- every new command answers --help
for c in nodes drain resume demand sbatch; do
    expect_ok "help-$c" "^usage: tide $c" "$T" "$c" --help
done

# --- demand SERVICE RPS
expect_ok demand '^chat: demand 150 rps$' "$T" demand chat 150 "${S[@]}"
expect_json demand-json 'True' "$T" demand chat 150 "${S[@]}" --json
expect_fail demand-bad 2 "RPS: 'abc'" "$T" demand chat abc "${S[@]}"
expect_fail demand-unknown 3 "unknown service" "$T" demand nosuch 5 "${S[@]}"
ready2() { api GET /v1/services && [ "$(jq_ "d['services'][0]['ready']")" = 2 ]; }
poll_until 30 ready2 || fail "demand 150 did not bring 2 replicas"

# --- nodes
expect_ok nodes '^NODE +STATE +ZONE +GPUS +INFER +TRAIN +FOREIGN +IDLE +REASON' "$T" nodes "${S[@]}"
[ "$(awk 'NR > 1 {s += $5} END {print s}' "$tmp/nodes.o")" = 16 ] || fail "INFER should sum to 16: $(cat "$tmp/nodes.o")"
expect_ok nodes-wide 'OWNERS' "$T" nodes "${S[@]}" --output wide
grep -q 'replica:' "$tmp/nodes-wide.o" || fail "wide nodes: no replica owner: $(cat "$tmp/nodes-wide.o")"
expect_json nodes-json "len(d['nodes']) == 4 and all('foreign' in n for n in d['nodes'])" "$T" nodes "${S[@]}" --output json
expect_json nodes-alias "len(d['nodes']) == 4" "$T" nodes "${S[@]}" --json
expect_fail nodes-badout 2 "--output: 'yaml' is not table, wide or json" "$T" nodes "${S[@]}" --output yaml

# --- drain / resume (by index: the sim backend has no node names)
idle_node=$(awk 'NR > 1 && $5 == 0 {print $1; exit}' "$tmp/nodes.o")
[ -n "$idle_node" ] || fail "no node without replicas: $(cat "$tmp/nodes.o")"
expect_fail drain-noreason 2 "--reason is required" "$T" drain "$idle_node" "${S[@]}"
expect_fail drain-unknown 3 "no node 'gpu9'" "$T" drain gpu9 --reason x "${S[@]}"
expect_ok drain "^drained $idle_node \\(node $idle_node\\): xid 79 on GPU 3$" "$T" drain "$idle_node" --reason "xid 79 on GPU 3" "${S[@]}"
expect_ok nodes2 "^$idle_node +drained .*xid 79 on GPU 3" "$T" nodes "${S[@]}"
expect_ok resume "^resumed $idle_node" "$T" resume "$idle_node" "${S[@]}"
expect_ok nodes3 "^$idle_node +up " "$T" nodes "${S[@]}"
grep -q 'xid 79' "$tmp/nodes3.o" && fail "the drain reason stays after resume"

# --- sbatch: an existing script, unchanged
cat >"$tmp/train.sbatch" <<'EOF'
#!/bin/bash
#SBATCH --gres=gpu:8 --nodes=2 --time=4:00:00
#SBATCH --job-name=llama-ft --qos=normal --comment "ft run 7"
#SBATCH --ntasks-per-node=8 --mem=0
srun python train.py "$@"
EOF
expect_ok sbatch '^Submitted batch job [A-Za-z0-9._-]+$' "$T" sbatch --cluster-file "$tmp/cluster.yaml" "${S[@]}" "$tmp/train.sbatch" --lr 3e-4
grep -q 'ignored: --mem' "$tmp/sbatch.e" || fail "sbatch: --mem not reported as ignored: $(cat "$tmp/sbatch.e")"
sid=$(awk '{print $4}' "$tmp/sbatch.o")
api GET "/v1/jobs/$sid"
[ "$(jq_ "(d['gpus'], d['gang_gpus'], d['duration_s'], d['priority'])")" = "(16, 16, 14400, 2)" ] ||
    fail "sbatch job fields: $API_BODY"
[ "$(jq_ "d['command'].startswith('#!/bin/bash\\nset -- ')")" = True ] || fail "sbatch command: $(jq_ "d['command']")"
[ "$(jq_ "'srun python train.py' in d['command'] and \"'--lr' '3e-4'\" in d['command']")" = True ] || fail "sbatch: script or args lost: $(jq_ "d['command']")"
[ "$(jq_ "d['env']['SBATCH_JOB_NAME'] == 'llama-ft' and d['env']['SBATCH_COMMENT'] == 'ft run 7' and d['env']['SBATCH_NTASKS_PER_NODE'] == '8'")" = True ] ||
    fail "sbatch env: $(jq_ "d['env']")"
running16() { api GET "/v1/jobs/$sid" && [ "$(jq_ "d['state']")" = running ]; }
poll_until 20 running16 || fail "the sbatch job does not run: $API_BODY"
TIDE_CLUSTER_FILE=$tmp/cluster.yaml expect_ok sbatch-env '^Submitted batch job' "$T" sbatch "${S[@]}" - <"$tmp/train.sbatch"
sed 's/--qos=normal/--qos=gold/' "$tmp/train.sbatch" >"$tmp/gold.sbatch"
expect_fail sbatch-qos 2 "'gold' is not in .*\\(urgent, normal, scavenger\\)" "$T" sbatch --cluster-file "$tmp/cluster.yaml" "${S[@]}" "$tmp/gold.sbatch"
expect_fail sbatch-noqosfile 2 "cluster-file" env -u TIDE_CLUSTER_FILE "$T" sbatch "${S[@]}" "$tmp/train.sbatch"
expect_ok sbatch-prio '^Submitted' "$T" sbatch -p 3 "${S[@]}" "$tmp/gold.sbatch"
printf '#!/bin/sh\n#SBATCH --nodes=1 --time=10\necho\n' >"$tmp/nogpu.sbatch"
expect_fail sbatch-nogpu 2 "asks for no GPUs" "$T" sbatch "${S[@]}" "$tmp/nogpu.sbatch"
printf '#!/bin/sh\n#SBATCH --gres=gpu:8 --time=4h\n' >"$tmp/badtime.sbatch"
expect_fail sbatch-badtime 2 "line 2: --time: '4h'" "$T" sbatch "${S[@]}" "$tmp/badtime.sbatch"
expect_fail sbatch-missing 3 "nosuch.sbatch" "$T" sbatch "${S[@]}" "$tmp/nosuch.sbatch"
expect_json sbatch-dry "d['gpus'] == 16 and d['priority'] == 2" "$T" sbatch -n --cluster-file "$tmp/cluster.yaml" "$tmp/train.sbatch"

# --- jobs: REASON / START columns, wall-clock times, wide
"$T" submit --id big -g 32 -d 2h "${S[@]}" >/dev/null || fail "submit big"
expect_ok jobs '^ID +TEAM +PRI +STATE +GPUS +WIDTH +PROGRESS +COMMITTED +SUBMITTED +PREEMPT +REASON +START$' "$T" jobs "${S[@]}"
grep -Eq "^$sid .* $ISO " "$tmp/jobs.o" || fail "jobs: no ISO 8601 time for $sid: $(cat "$tmp/jobs.o")"
grep -Eq '^big .* queued ' "$tmp/jobs.o" || fail "jobs: big should be queued: $(cat "$tmp/jobs.o")"
expect_ok jobs-wide 'POS +GANG +LOST_GPU_S$' "$T" jobs "${S[@]}" --output wide
expect_json jobs-json "any(j['id'] == 'big' for j in d['jobs'])" "$T" jobs "${S[@]}" --output json
expect_ok job-iso "submitted_s +$ISO" "$T" job "$sid" "${S[@]}"

# --- checkpoints from every gang: one commit counted once
api POST "/v1/jobs/$sid/checkpoints" '{"step": 10, "committed": true, "progress_s": 60}'
[ "$API_STATUS" = 201 ] && [ "$(jq_ "(d['used'], d['duplicate'])")" = "(True, False)" ] || fail "first report: $API_STATUS $API_BODY"
api POST "/v1/jobs/$sid/checkpoints" '{"step": 10, "committed": true, "progress_s": 60}'
[ "$API_STATUS" = 201 ] && [ "$(jq_ "(d['used'], d['duplicate'])")" = "(False, True)" ] || fail "second gang's report: $API_STATUS $API_BODY"
api POST "/v1/jobs/$sid/checkpoints" '{"step": 20, "committed": true, "progress_s": 120}'
[ "$(jq_ "d['used']")" = True ] || fail "a later step is used: $API_BODY"
api GET "/v1/jobs/$sid"
[ "$(jq_ "(d['checkpoints'], int(d['committed_s']))")" = "(2, 120)" ] || fail "checkpoints counted per step: $(jq_ "(d['checkpoints'], d['committed_s'])")"

# --- events: --job, --kind, --since
expect_ok ev-job "ckpt_committed +$sid" "$T" events --job "$sid" "${S[@]}"
[ "$(grep -v '^ *SEQ \|^next cursor' "$tmp/ev-job.o" | grep -vc -- " $sid ")" = 0 ] || fail "events --job: other jobs: $(cat "$tmp/ev-job.o")"
expect_json ev-kind "len(d['events']) >= 2 and all(e['kind'] in ('job_start', 'ckpt_committed') for e in d['events'])" \
    "$T" events --kind job_start,ckpt_committed "${S[@]}" --json
expect_ok ev-iso "^ +[0-9]+ +$ISO" "$T" events --limit 3 "${S[@]}"
expect_json ev-since-future "d['events'] == []" "$T" events --since 2999-01-01T00:00:00Z "${S[@]}" --json
expect_json ev-since-past "len(d['events']) > 5" "$T" events --since 1h "${S[@]}" --json
expect_fail ev-since-bad 2 "--since: 'yesterday'" "$T" events --since yesterday "${S[@]}"

# --- /v1/cluster gives the wall clock of engine time 0
api GET /v1/cluster
now=$(date +%s)
[ "$(jq_ "abs(d['wall_origin'] + d['now_s'] / d['speed'] - $now) < 30")" = True ] || fail "wall_origin is off: $API_BODY"
serve_stop
finish cli_ops
