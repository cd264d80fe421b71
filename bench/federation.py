#!/usr/bin/env python3
"""Two sites, one tide each: what routing inference demand between them buys.

usage: federation.py TIDE OUTDIR [--nodes N] [--jobs J] [--days D] [--shift H]

Site A and site B are each NODESx8 GPUs with their own `bench` workload
(`tide gen --scenario bench`, seeds 1 and 2); site B's demand runs SHIFT hours
later (another region's day). Two runs of `tide sim --policy elastic` per site:

  local   each site serves its own demand (no federation: one tide per cluster)
  routed  a global router sends each service's requests to the sites in
          proportion to their GPUs: each site gets half of A+B at every
          sample (SageServe-style routing across regions, idealised: no
          network cost, no latency penalty)

Training jobs, leases and the Tier A reserve stay inside each site: a lease
never crosses a site. Prints, per mode, the two sites' summed figures:
utilization, training GPU-hours, mean queue wait, SLO attainment, peak
inference GPUs. Standard library only."""
import csv
import json
import os
import subprocess
import sys


def gen(tide, out, nodes, jobs, days, seed):
    subprocess.run([tide, "gen", "--scenario", "bench", "--nodes", str(nodes), "--jobs", str(jobs),
                    "--days", str(days), "--seed", str(seed), "--out", out], check=True,
                   stdout=subprocess.DEVNULL)


def read_demand(path):
    with open(path) as f:
        return [(int(r["time_s"]), r["service"], float(r["rps"])) for r in csv.DictReader(f)]


def write_demand(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["time_s", "service", "rps"])
        for t, s, v in sorted(rows, key=lambda r: (r[0], r[1])):
            w.writerow([t, s, f"{v:.3f}"])


def shift(rows, secs, horizon):
    """The same curve `secs` later, wrapped over the horizon (a later day)."""
    return [((t + secs) % horizon, s, v) for t, s, v in rows]


def sim(tide, site, demand, out, nodes, days):
    subprocess.run([tide, "sim", "--cluster", f"{nodes}x8:H100", "--services",
                    os.path.join(site, "services.csv"), "--demand", demand, "--jobs",
                    os.path.join(site, "jobs.csv"), "--policy", "elastic", "--horizon", f"{days}d",
                    "--outputs", "summary,timeline", "--out", out], check=True,
                   stdout=subprocess.DEVNULL)
    p = json.load(open(os.path.join(out, "summary.json")))["policies"]["elastic"]
    peak = 0.0
    with open(os.path.join(out, "timeline.csv")) as f:
        for r in csv.DictReader(f):
            peak = max(peak, float(r["inference_gpus"]))
    return p, peak


def main():
    a = sys.argv[1:]
    if len(a) < 2 or a[0] in ("-h", "--help"):
        sys.exit(__doc__)
    tide, out = a[0], a[1]
    opt = {"--nodes": 32, "--jobs": 20000, "--days": 7, "--shift": 12}
    for i in range(2, len(a) - 1, 2):
        if a[i] not in opt:
            sys.exit(f"federation.py: unknown option {a[i]}\n{__doc__}")
        opt[a[i]] = int(a[i + 1])
    nodes, jobs, days, sh = opt["--nodes"], opt["--jobs"], opt["--days"], opt["--shift"]
    horizon = days * 86400
    sites = [os.path.join(out, "A"), os.path.join(out, "B")]
    for k, s in enumerate(sites):
        gen(tide, s, nodes, jobs, days, k + 1)
    dem = [read_demand(os.path.join(s, "demand.csv")) for s in sites]
    dem[1] = shift(dem[1], sh * 3600, horizon)
    write_demand(os.path.join(sites[1], "demand_local.csv"), dem[1])
    write_demand(os.path.join(sites[0], "demand_local.csv"), dem[0])
    # routed: each site gets half of the sum, per service and sample time
    tot = {}
    for rows in dem:
        for t, s, v in rows:
            tot[(t, s)] = tot.get((t, s), 0.0) + v
    half = [(t, s, v / 2) for (t, s), v in tot.items()]
    for s in sites:
        write_demand(os.path.join(s, "demand_routed.csv"), half)
    print(f"two sites of {nodes}x8 GPUs, {jobs} jobs each, {days} days, site B's day {sh} h later")
    print("| mode | utilization | training GPU-h | mean queue h | SLO attainment | sum of the sites' peak inference GPUs |")
    print("|---|---|---|---|---|---|")
    for mode in ("local", "routed"):
        util = train = q = slo = peak = 0.0
        for s in sites:
            p, pk = sim(tide, s, os.path.join(s, f"demand_{mode}.csv"), os.path.join(s, mode), nodes, days)
            util += p["utilization"] / 2
            train += p["gpu_hours"]["training"]
            q += p["training"]["mean_queue_s"] / 3600 / 2
            slo += p["inference"]["slo_attainment"] / 2
            peak += pk
        print(f"| {mode} | {util:.4f} | {train:,.0f} | {q:.2f} | {slo:.4f} | {peak:.0f} |")


main()
