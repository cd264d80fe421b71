#!/usr/bin/env python3
"""Helpers of bench/fairness.sh (Philly replay with teams; docs/governance.md).

  philly_fairness.py convert PHILLY.csv --days A:B --out DIR
      Fallback when `tide trace import --format philly` is not available:
      write DIR/jobs.csv for jobs submitted in days [A, B) counted from the
      first job's day (submit_s from the window's first job). Priorities: P3
      for experiments (under 10 GPU-minutes, or 1 GPU for under an hour), P2
      otherwise; gang = min(gpus, 8) (gcd(gpus, 8) above 8).

  philly_fairness.py cluster --jobs JOBS.csv --philly PHILLY.csv --nodes N
        --horizon S [--quotas] --out FILE
      Write a cluster YAML: N nodes x 8 GPUs and one team per Philly virtual
      cluster (all 15, weight 1). With --quotas each team's quota is its
      average GPU demand over the window (GPU-seconds demanded / horizon),
      scaled down in proportion when the quotas would exceed the cluster.

  philly_fairness.py metrics --jobs JOBS.csv --horizon S NAME=DIR...
      Per run: Jain's fairness index over the teams' normalized throughput
      x_i = GPU-hours received / GPU-hours demanded (teams with demand in the
      window only), and each team's mean queue time (summary.json teams).
      Demand of a job = gpus x min(duration_s, horizon - submit_s).
"""
import argparse
import csv
import json
import math
import sys
from datetime import datetime


def read_jobs(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(row for row in f if not row.startswith("#"))]


def demand(jobs, horizon):
    d = {}
    for r in jobs:
        s = float(r["submit_s"])
        g = int(r["gpus"])
        du = float(r["duration_s"])
        d[r["team"]] = d.get(r["team"], 0.0) + g * max(0.0, min(du, horizon - s))
    return d


def cmd_convert(a):
    rows = []
    with open(a.philly, newline="") as f:
        for r in csv.DictReader(f):
            t = datetime.strptime(r["timestamp"][:19], "%Y-%m-%d %H:%M:%S").timestamp()
            rows.append((t, float(r["duration"]), int(r["num_gpus"]), r["cluster"]))
    if not rows:
        sys.exit("convert: no rows")
    first = min(r[0] for r in rows)
    day0 = first - (first % 86400)
    lo, hi = (float(x) for x in a.days.split(":"))
    win = sorted((r for r in rows if lo <= (r[0] - day0) / 86400 < hi), key=lambda r: r[0])
    if not win:
        sys.exit("convert: no job in the window")
    origin = win[0][0]
    with open(f"{a.out}/jobs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job_id", "submit_s", "team", "priority", "gpus", "duration_s", "gang_gpus"])
        for i, (t, du, g, team) in enumerate(win):
            exp = g * du < 600 or (g == 1 and du < 3600)
            gang = min(g, 8) if g <= 8 else math.gcd(g, 8)
            w.writerow([f"philly-{i}", int(round(t - origin)), team, 3 if exp else 2, g,
                        max(1, int(round(du))), gang])
    print(f"convert: {len(win)} jobs -> {a.out}/jobs.csv")


def cmd_cluster(a):
    teams = []
    with open(a.philly, newline="") as f:
        for r in csv.DictReader(f):
            if r["cluster"] not in teams:
                teams.append(r["cluster"])
    teams.sort()
    gpus = a.nodes * 8
    quota = {}
    if a.quotas:
        d = demand(read_jobs(a.jobs), a.horizon)
        avg = {t: d.get(t, 0.0) / a.horizon for t in teams}
        scale = min(1.0, gpus / sum(avg.values())) if sum(avg.values()) > 0 else 0
        quota = {t: int(math.floor(avg[t] * scale)) for t in teams}
    with open(a.out, "w") as f:
        f.write("# Philly virtual clusters as teams (bench/fairness.sh)\n")
        f.write(f"groups:\n  - {{count: {a.nodes}, gpus_per_node: 8, gpu_type: gpu}}\n")
        f.write("teams:\n")
        for t in teams:
            f.write(f"  - name: \"{t}\"\n    weight: 1\n")
            if a.quotas:
                f.write(f"    quota: {quota[t]}\n")
        f.write("fairshare:\n  enabled: true\n  half_life: 24h\n")
    if a.quotas:
        print("quotas (GPUs): " + ", ".join(f"{t}={quota[t]}" for t in teams if quota[t] > 0))


def jain(xs):
    xs = [x for x in xs if x is not None]
    s2 = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * s2) if xs and s2 > 0 else 0.0


def cmd_metrics(a):
    jobs = read_jobs(a.jobs)
    dem = demand(jobs, a.horizon)
    teams = sorted((t for t in dem if dem[t] > 0), key=lambda t: -dem[t])
    runs = []
    for spec in a.runs:
        name, d = spec.split("=", 1)
        s = json.load(open(f"{d}/summary.json"))
        pol = next(iter(s["policies"].values()))
        runs.append((name, pol))
    hdr = f"{'team':<8} {'demand_h':>10}"
    for name, _ in runs:
        hdr += f" | {name + ' recv/dem':>16} {'queue_h':>8}"
    print(hdr)
    xs = {name: [] for name, _ in runs}
    for t in teams:
        line = f"{t:<8} {dem[t] / 3600:>10.0f}"
        for name, pol in runs:
            tm = pol.get("teams", {}).get(t, {})
            x = tm.get("gpu_hours", 0.0) * 3600 / dem[t]
            xs[name].append(x)
            line += f" | {x:>16.3f} {tm.get('mean_queue_s', 0) / 3600:>8.2f}"
        print(line)
    print()
    for name, pol in runs:
        tr = pol.get("training", {})
        qs = [pol.get("teams", {}).get(t, {}).get("mean_queue_s", 0) / 3600 for t in teams]
        print(f"{name:<12} Jain(recv/dem) {jain(xs[name]):.4f}   util {100 * pol.get('utilization', 0):.1f}%"
              f"   mean queue {tr.get('mean_queue_s', 0) / 3600:.2f} h"
              f"   worst team queue {max(qs):.2f} h   jobs done {tr.get('jobs_completed', 0)}"
              f"   preemptions {tr.get('preemptions', 0)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("philly")
    c.add_argument("--days", required=True)
    c.add_argument("--out", required=True)
    c = sub.add_parser("cluster")
    c.add_argument("--jobs", required=True)
    c.add_argument("--philly", required=True)
    c.add_argument("--nodes", type=int, required=True)
    c.add_argument("--horizon", type=float, required=True)
    c.add_argument("--quotas", action="store_true")
    c.add_argument("--out", required=True)
    c = sub.add_parser("metrics")
    c.add_argument("--jobs", required=True)
    c.add_argument("--horizon", type=float, required=True)
    c.add_argument("runs", nargs="+")
    a = p.parse_args()
    {"convert": cmd_convert, "cluster": cmd_cluster, "metrics": cmd_metrics}[a.cmd](a)


if __name__ == "__main__":
    main()
