#!/usr/bin/env bash
# End-to-end: the HTML report in a real browser. Generates a short seed32 run
# with `tide sim --report`, opens the page in headless Chromium and checks,
# from the DOM the page's own script leaves behind, that every chart was drawn
# with data, the self-test (#selftest: every policy, full and day views, and
# every team page) passed and no script error happened; checks the Teams and
# Capacity signals sections, the rack uplink table against summary.json (the
# cluster has two racks with uplinks), and that a run from an older tide (no
# usage.csv, no uplinks) still gives a page that says so and has no uplink
# table; saves two screenshots: the top of the page and the
# Teams + Capacity signals sections (#only=teams,signals).
#
# Environment: TIDE_BIN (the tide binary). TIDE_REPORT_SHOT: where to save the
# screenshot (default ${TMPDIR:-/tmp}/tide-report-screenshot.png);
# TIDE_REPORT_TEAMS_SHOT: the Teams one (default
# ${TMPDIR:-/tmp}/tide-report-teams.png).
# Chromium: Debian's `chromium`; installed with apt-get when missing and
# running as root, else the test is skipped. Exit 77 = skip.
set -u

if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi

find_browser() {
    for b in chromium chromium-browser google-chrome; do
        if command -v "$b" >/dev/null 2>&1; then
            command -v "$b"
            return 0
        fi
    done
    return 1
}

browser=$(find_browser)
if [ -z "$browser" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "report_chromium: installing Debian's chromium (apt-get)..." >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y -qq chromium >/dev/null 2>&1; then
            apt-get update -qq >/dev/null 2>&1
            apt-get install -y -qq chromium >/dev/null 2>&1
        fi
        browser=$(find_browser)
    fi
    if [ -z "$browser" ]; then
        echo "skip: chromium is not installed and cannot be installed here (needs root and" \
            "a working apt-get: apt-get install chromium)" >&2
        exit 77
    fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shot=${TIDE_REPORT_SHOT:-${TMPDIR:-/tmp}/tide-report-screenshot.png}
teams_shot=${TIDE_REPORT_TEAMS_SHOT:-${TMPDIR:-/tmp}/tide-report-teams.png}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- a short seed32 run (2 days, every policy), a 2-point sweep and the report
"$TIDE_BIN" gen --scenario seed32 --days 2 --seed 1 --out "$tmp/g" >/dev/null || {
    echo "FAIL: tide gen" >&2
    exit 1
}
extra=()
if "$TIDE_BIN" sim --help 2>/dev/null | grep -q -- '--inject'; then
    # with fault injection built in: a storage limit and a 2x burst on day 2
    extra=(--inject 'storage:20,burst:2x@30h+2h')
fi
# 4 nodes of 8 H100 in two racks of 2 nodes, each with a 4 GB/s uplink (used
# with the storage model only)
printf 'groups:\n  - {count: 4, gpus_per_node: 8, gpu_type: H100, rack_nodes: 2, uplink_gbps: 4}\n' \
    >"$tmp/cluster.yaml"
if ! "$TIDE_BIN" sim --cluster "$tmp/cluster.yaml" --services "$tmp/g/services.csv" \
    --demand "$tmp/g/demand.csv" --jobs "$tmp/g/jobs.csv" --horizon 2d --seed 1 \
    "${extra[@]}" --publish-every 12h --regress-every 2 \
    --sweep reserve=8:16:8 --out "$tmp/sim" --report "$tmp/report.html" \
    >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/err" >&2
    fail "tide sim --report failed"
fi
[ -s "$tmp/report.html" ] || { echo "FAIL: no report written" >&2; exit 1; }
grep -q "report.html" "$tmp/out" || fail "tide sim did not print the report's path"
grep -q "Pareto front" "$tmp/out" || fail "tide sim --sweep printed no front"
[ "$(wc -l <"$tmp/sim/sweep.csv")" -eq 13 ] || fail "sweep.csv: expected 1 + 2 x 6 lines"
[ -s "$tmp/sim/sweep/reserve=16/summary.json" ] || fail "no run directory for reserve=16"
[ -s "$tmp/sim/usage.csv" ] || fail "tide sim wrote no usage.csv"

# --- self-contained: no network references, no external scripts
grep -Eq 'https?://' "$tmp/report.html" && fail "the page references http(s)://"
grep -Eiq '<script[^>]+src=' "$tmp/report.html" && fail "the page loads an external script"
grep -Eiq '<link[^>]+href=' "$tmp/report.html" && fail "the page links an external resource"
grep -q '<script type="application/json" id="tide-data">' "$tmp/report.html" ||
    fail "no embedded data"

# --- `tide report DIR --out FILE` gives the same page
"$TIDE_BIN" report "$tmp/sim" --out "$tmp/report2.html" >/dev/null || fail "tide report failed"
cmp -s "$tmp/report.html" "$tmp/report2.html" || fail "tide report and sim --report differ"
"$TIDE_BIN" report "$tmp/nonexistent" >/dev/null 2>"$tmp/e" && fail "bad dir accepted"
grep -q nonexistent "$tmp/e" || fail "bad dir: message does not name it"

# --- open it headless
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --disable-dev-shm-usage --hide-scrollbars)
url="file://$tmp/report.html"
run_browser() { # run_browser PROFILE_DIR args...
    local prof=$1
    shift
    timeout 180 "$browser" "${flags[@]}" --user-data-dir="$prof" "$@" 2>"$tmp/browser.err"
}
if ! run_browser "$(mktemp -d -p "$tmp")" --window-size=1400,2400 --dump-dom "$url#selftest" \
    >"$tmp/dom.html"; then
    tail -20 "$tmp/browser.err" >&2
    fail "chromium --dump-dom failed"
fi
body=$(grep -o '<body[^>]*>' "$tmp/dom.html" | head -1)
echo "report_chromium: $body"
attr() { printf '%s' "$body" | sed -n "s/.* $1=\"\\([^\"]*\\)\".*/\\1/p"; }
drawn=$(attr data-charts-drawn)
expected=$(attr data-charts-expected)
errors=$(attr data-errors)
selftest=$(attr data-selftest)
[ -n "$drawn" ] || fail "the page script did not run (no data-charts-drawn)"
[ -n "$expected" ] && [ "$expected" -ge 13 ] 2>/dev/null || fail "expected charts: '$expected'"
[ "$drawn" = "$expected" ] || fail "charts drawn $drawn of $expected (missing: $(attr data-charts-missing))"
[ "$errors" = "0" ] || fail "script errors: $errors: $(sed -n '/id="errors"/,/<\/pre>/p' "$tmp/dom.html")"
case $selftest in
ok*) ;;
*) fail "self-test: '$selftest'" ;;
esac
# every chart container holds an SVG
for id in chart-pareto chart-sweep chart-gpu-state chart-forecast chart-gpu-class chart-training chart-leases chart-pipeline \
    chart-team-hours chart-class-hours chart-team-loss chart-team-class-time chart-team-state-time \
    chart-team-chargeback chart-teams-compare; do
    grep -q "id=\"$id\"><h3>[^<]*</h3>.*<svg" "$tmp/dom.html" || fail "chart $id has no SVG"
    case " $(attr data-charts-missing) " in
    *" $id "*) fail "chart $id was expected but not drawn" ;;
    esac
done
grep -q '<ol><li><span class="q">' "$tmp/dom.html" || fail "the five questions are missing"
grep -q "Latency (queueing model): P99 TTFT" "$tmp/dom.html" || fail "the first question lacks the latency figures"
grep -q "P99 TTFT s" "$tmp/dom.html" || fail "the summary table lacks P99 TTFT"
# Teams: a tab per team of the run, the chargeback table with the policy's
# lost-work line; Capacity signals: the findings table
for team in $(tail -n +2 "$tmp/g/jobs.csv" | cut -d, -f3 | sort -u); do
    grep -q "data-team=\"$team\"" "$tmp/dom.html" || fail "no team page for $team"
done
grep -q '(policy: lost work)' "$tmp/dom.html" || fail "no (policy: lost work) line in the Teams section"
grep -q '<table class="findings">' "$tmp/dom.html" || fail "no capacity findings table"
# the rack uplink table of the policy shown last (elastic, after the self-test):
# one row per rack of summary.json faults.storage.uplinks, the same figures
if [ ${#extra[@]} -gt 0 ]; then
    python3 - "$tmp/dom.html" "$tmp/sim/summary.json" <<'PY' || fail "rack uplink table"
import json, re, sys
dom = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))["policies"]["elastic"]["faults"]["storage"]
ups = st["uplinks"]
assert len(ups) == 2, ups
m = re.search(r'<div id="uplink-table"[^>]*>.*?<table class="uplinks">(.*?)</table>', dom, re.S)
assert m, "no uplink table"
rows = re.findall(r'<tr data-rack="(\d+)"( class="busiest")?>(.*?)</tr>', m.group(1), re.S)
assert [int(r[0]) for r in rows] == [u["rack"] for u in ups], rows
for (rack, busiest, cells), u in zip(rows, ups):
    got = [float(c.replace(",", "")) for c in re.findall(r"<td>([^<]*)</td>", cells)]
    want = [u["rack"], u["gbps"], u["peak_demand_gbps"], u["peak_rate_gbps"], u["saturated_s"],
            u["moved_gb"], u["transfers"]]
    tol = [0, .005, .005, .005, .5, .5, 0]
    assert len(got) == len(want), (got, want)
    for g, w, t in zip(got, want, tol):
        assert abs(g - w) <= t + 1e-9, (rack, got, want)
    assert (busiest != "") == (int(rack) == st["busiest_uplink"]["rack"]), (rack, busiest)
PY
fi

# --- a run from an older tide (no usage.csv, no uplinks in summary.json): the
# page says so, has no uplink table, no script error
mkdir -p "$tmp/old"
cp "$tmp/sim/timeline.csv" "$tmp/sim/events.csv" "$tmp/old/"
python3 - "$tmp/sim/summary.json" "$tmp/old/summary.json" <<'PY' || fail "summary.json without uplinks"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["policies"].values():
    st = p.get("faults", {}).get("storage", {})
    st.pop("uplinks", None)
    st.pop("busiest_uplink", None)
json.dump(d, open(sys.argv[2], "w"))
PY
"$TIDE_BIN" report "$tmp/old" >/dev/null || fail "tide report without usage.csv failed"
if run_browser "$(mktemp -d -p "$tmp")" --window-size=1400,2400 --dump-dom \
    "file://$tmp/old/report.html#selftest" >"$tmp/dom_old.html"; then
    ob=$(grep -o '<body[^>]*>' "$tmp/dom_old.html" | head -1)
    case $ob in *'data-errors="0"'*'data-selftest="ok'*) ;; *) fail "no usage.csv: $ob" ;; esac
    grep -q 'usage.csv was not found' "$tmp/dom_old.html" || fail "no usage.csv: the page does not say so"
    grep -q '<div id="uplink-table" class="tablebox"></div>' "$tmp/dom_old.html" &&
        ! grep -q '<tr data-rack="[0-9]' "$tmp/dom_old.html" || fail "no uplinks: an uplink table was drawn"
else
    fail "chromium --dump-dom (no usage.csv) failed"
fi

# --- screenshot
rm -f "$shot"
run_browser "$(mktemp -d -p "$tmp")" --window-size=1400,2400 --screenshot="$shot" "$url" \
    >/dev/null || fail "chromium --screenshot failed"
if [ -s "$shot" ] && [ "$(stat -c %s "$shot")" -gt 20000 ]; then
    echo "report_chromium: screenshot $shot"
else
    fail "no (or an empty) screenshot at $shot"
fi
rm -f "$teams_shot"
run_browser "$(mktemp -d -p "$tmp")" --window-size=1400,3000 --screenshot="$teams_shot" \
    "$url#only=teams,signals&policy=preempt" >/dev/null || fail "chromium --screenshot (teams) failed"
if [ -s "$teams_shot" ] && [ "$(stat -c %s "$teams_shot")" -gt 20000 ]; then
    echo "report_chromium: teams screenshot $teams_shot"
else
    fail "no (or an empty) teams screenshot at $teams_shot"
fi

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "report_chromium: ok"
