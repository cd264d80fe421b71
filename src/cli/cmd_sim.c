/* `tide sim`: replay a workload (services.csv, demand.csv, jobs.csv) on a
 * cluster through one or more policies; write timeline.csv, events.csv and
 * summary.json and print a comparison table. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/cluster_file.h"
#include "sim/pipesim.h"
#include "sim/rl_sim.h"
#include "sim/sim.h"
#include "formats/workload_io.h"
#include "util/util.h"

static void sim_usage(FILE *f)
{
    fprintf(f,
            "usage: tide sim (--cluster SPEC | --cluster-file F) --services S.csv --demand D.csv\n"
            "                --jobs J.csv --out DIR [options]\n"
            "\n"
            "Replay the workload through each policy in virtual time and write\n"
            "DIR/timeline.csv, DIR/events.csv and DIR/summary.json; print a table.\n"
            "\n"
            "inputs:\n"
            "      --cluster SPEC      nodes x GPUs per node, e.g. 25x8 or 25x8:H100 or\n"
            "                          16x8:H100,8x8:A100 (a .yaml/.yml path also works)\n"
            "      --cluster-file F    cluster description in YAML (docs/formats.md)\n"
            "      --services S.csv    inference services (required)\n"
            "      --demand D.csv      demand per service over time (required)\n"
            "      --jobs J.csv        training jobs (required, but with --rl)\n"
            "      --rl R.csv          agentic RL job (docs/rl.md): run it under fixed-min,\n"
            "                          fixed-max, lent-all and lent (sized from the\n"
            "                          trainer's measured wait) rollout pools (first policy of\n"
            "                          --policy, default elastic; --jobs, if given, are\n"
            "                          background jobs); write DIR/<variant>/, DIR/rl.json,\n"
            "                          DIR/rl.csv and print the side-by-side table\n"
            "      --rl-pool K=V,...   the lent pool's controller (docs/rl.md): target_wait\n"
            "                          (0.05), headroom (0.25), patience (3 trainer steps)\n"
            "      --demand-history H.csv\n"
            "                          past demand (demand.csv format; its latest time_s\n"
            "                          is the replay's start) fed to the forecast first,\n"
            "                          so the run starts warm\n"
            "policies and their knobs:\n"
            "      --policy LIST       comma-separated, run in this order (default all:\n"
            "                          isolated,static,preempt,k8s,elastic,timeshare)\n"
            "                          isolated  separate pools, inference at its peak\n"
            "                          static    fixed split, inference autoscales inside\n"
            "                          preempt   one pool, replicas for observed demand +\n"
            "                                    headroom, training killed when needed\n"
            "                          k8s       one pool, HPA (headroom, 5-min scale-down\n"
            "                                    window) + Kueue-style priority preemption\n"
            "                          elastic   Tier A reserve, forecast, leases, reclaim\n"
            "                          timeshare fixed split, training borrows at night\n"
            "      --reserve N         Tier A GPUs for elastic (default: sum of service floors)\n"
            "      --split I:T         static/timeshare partition: I inference + T training\n"
            "                          GPUs; I+T must equal the cluster's GPUs (default auto)\n"
            "      --night A-B         timeshare training window, hours A..B-1 (0-23, default 22-8)\n"
            "      --margin X          floor of the learned burst margin (default 0)\n"
            "      --headroom X        preempt/k8s: replicas = ceil(demand x (1+X) / replica_rps)\n"
            "                          (default 0.25: an autoscaler's 80%% utilisation target)\n"
            "      --hpa-window D      k8s: scale-down stabilisation window (default 5m, HPA's)\n"
            "      --sizing R          elastic: forecast (default: the forecast x the learned\n"
            "                          burst multiplier) or ensemble (the cheapest of the\n"
            "                          forecast and observed x (1+h) rules whose misses met\n"
            "                          the SLO's aim, scored on past demand; docs/engine.md)\n"
            "      --obs-window D      elastic: size from at least the highest\n"
            "                          5-minute mean demand of the last D, times the learned\n"
            "                          burst multiplier (e.g. 30m; default 0 = off; measured\n"
            "                          in docs/engine.md, \"Observed floor\")\n"
            "      --power-budget F    every power domain's budget = F x its nameplate draw\n"
            "                          (the sum of its GPUs' TDPs), e.g. 0.85; replaces the\n"
            "                          cluster file's budgets (default: the file's, or none)\n"
            "failure domains (racks, power domains: the cluster file's rack_nodes, power_nodes):\n"
            "      --spread N          a service's replicas and the Tier A reserve spread over\n"
            "                          racks and power domains, at most N apart (default 0 =\n"
            "                          no spreading: first fit; 1 with --survive)\n"
            "      --survive X         invariant (checked with --check): losing any one rack or\n"
            "                          power domain leaves each service X of its floor (0..1,\n"
            "                          default 0 = not checked)\n"
            "run:\n"
            "      --seed N            seed recorded in summary.json (default 0)\n"
            "      --horizon D         simulated time: 90s, 15m, 36h, 14d (default: last demand\n"
            "                          point or submission rounded up to a whole day)\n"
            "      --interval D        timeline period (default 5m)\n"
            "      --out DIR           output directory, created if missing (required)\n"
            "      --fairshare on|off  fair share (default on, or the cluster file's)\n"
            "      --check             check the engine's invariants after every step (slow)\n"
            "      --progress          progress lines on stderr (default only on a terminal)\n"
            "      --inject LIST       inject faults (comma-separated, repeatable): burst:2x@36h+2h,\n"
            "                          burst:SVC:2x@T+D, node-fail:N@T[+D], rank-fail:JOB@T,\n"
            "                          rank-fail-rate:R/day, ctl-down@T+D, storage:GBps,\n"
            "                          rack-fail:R@T[+D], power-fail:P@T[+D] (R, P: index or\n"
            "                          busiest), partition:NODES@T+D (NODES: 3, 4-7, 1|5)\n"
            "      --publish-every D   the model pipeline: a new version of one service's model\n"
            "                          every D (first at 6h), evaluated by a P1 job, released\n"
            "                          through the gated canary (docs/pipeline.md); figures in\n"
            "                          summary.json (\"pipeline\"), a lane in the report\n"
            "      --publish-service S the service released to (default: the first)\n"
            "      --regress-every K   every Kth version's canary misses its SLO and is rolled\n"
            "                          back (default 0: none)\n"
            "      --bulk-qos SHARE    with storage:G, bulk-traffic QoS: weight loads first, then\n"
            "                          checkpoints the engine asked for, then periodic ones;\n"
            "                          checkpoints together at most SHARE x G; periodic ones\n"
            "                          staggered to stay within it (SHARE in (0, 1]; default off)\n"
            "      --uplink GBPS       with storage:G, every rack's network uplink in GB/s: a\n"
            "                          transfer is held to its racks' uplinks and the storage\n"
            "                          together (default: the cluster file's uplink_gbps, else\n"
            "                          none)\n"
            "      --report FILE       also write a self-contained HTML report (docs/report.md)\n"
            "      --sweep GRID        also run a grid of knobs, e.g. reserve=24:64:8,margin=0.1\n"
            "                          (keys reserve, margin, split, lead, hold; LO:HI:STEP or a\n"
            "                          value): DIR/sweep/, DIR/sweep.csv, DIR/sweep.json\n"
            "      --outputs LIST      files to write: summary, timeline, events, usage (any\n"
            "                          of them, comma-separated; default all); the others'\n"
            "                          old files are removed from DIR. --report needs all\n"
            "                          but usage\n"
            "  -h, --help              show this help\n"
            "\n"
            "Output formats: docs/sim.md. summary.json records the options (\"options\").\n");
}

/* Print "tide sim: <message> (see tide sim --help)" and return the usage status. */
#define bad(...) tide_cli_usage_error("sim", __VA_ARGS__)

/* Print an error from a library call and return its exit status. */
#define fail(err) tide_cli_fail("sim", (err))

/* Parsed command line (strings borrowed from argv). */
typedef struct cmdline {
    const char *cluster, *cluster_file, *services, *demand, *jobs, *out;
    const char *history; /* --demand-history (NULL = none) */
    char *policy_buf;   /* owned copy of --policy, split in place */
    const char *policies[TIDE_SIM_MAX_POLICIES];
    size_t n_policies;
    long long reserve;  /* -1 = default */
    long long split_i, split_t; /* -1 = not given */
    int night_a, night_b;       /* -1 = not given */
    double margin;              /* < 0 = not given */
    double headroom;            /* < 0 = not given */
    int64_t hpa_window;         /* < 0 = not given */
    int64_t obs_window;         /* --obs-window: < 0 = not given */
    int sizing;                 /* --sizing: -1 not given, 0 forecast, 1 ensemble */
    double power_budget;        /* <= 0 = not given */
    long long spread;           /* < 0 = not given */
    double survive;             /* < 0 = not given */
    uint64_t seed;
    int64_t horizon, interval;
    int check, progress;
    int fairshare; /* -1 not given */
    tide_inject_t inject; /* --inject (owned) */
    const char *report, *sweep; /* --report FILE, --sweep GRID (NULL = not given) */
    const char *rl;             /* --rl R.csv (NULL = not given) */
    tide_rl_pool_cfg_t rl_pool; /* --rl-pool */
    unsigned outputs;     /* --outputs (TIDE_SIM_OUT_*; 0 = all) */
    tide_pipesim_opts_t pipe; /* --publish-every etc. (every_s 0 = off) */
    double bulk_qos;      /* --bulk-qos (0 = off) */
    double uplink;        /* --uplink (0 = the cluster file's) */
} cmdline_t;

static int parse_policies(cmdline_t *c, const char *arg)
{
    free(c->policy_buf);
    c->policy_buf = tide_xstrdup(arg);
    c->n_policies = 0;
    char *save = NULL;
    for (char *p = strtok_r(c->policy_buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        int known = 0;
        for (const char *const *n = tide_policy_names(); *n; n++)
            known |= !strcmp(*n, p);
        if (!known) {
            char list[256] = "";
            for (const char *const *n = tide_policy_names(); *n; n++) {
                strncat(list, *n, sizeof list - strlen(list) - 1);
                if (n[1])
                    strncat(list, ",", sizeof list - strlen(list) - 1);
            }
            return bad("--policy: unknown policy '%s' (known: %s)", p, list);
        }
        for (size_t i = 0; i < c->n_policies; i++)
            if (!strcmp(c->policies[i], p))
                return bad("--policy: '%s' given twice", p);
        if (c->n_policies == TIDE_SIM_MAX_POLICIES)
            return bad("--policy: too many policies");
        c->policies[c->n_policies++] = p;
    }
    if (c->n_policies == 0)
        return bad("--policy: empty list");
    return 0;
}

static int parse_split(cmdline_t *c, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char a[32];
    if (!colon || (size_t)(colon - arg) >= sizeof a)
        return bad("--split: '%s' is not I:T (inference:training GPUs)", arg);
    memcpy(a, arg, (size_t)(colon - arg));
    a[colon - arg] = '\0';
    if (tide_parse_int(a, &c->split_i) < 0 || tide_parse_int(colon + 1, &c->split_t) < 0 ||
        c->split_i < 0 || c->split_t < 0)
        return bad("--split: '%s' is not I:T with whole GPU counts >= 0", arg);
    return 0;
}

static int parse_night(cmdline_t *c, const char *arg)
{
    const char *dash = strchr(arg, '-');
    char a[16];
    long long x, y;
    if (!dash || dash == arg || (size_t)(dash - arg) >= sizeof a)
        return bad("--night: '%s' is not A-B (hours 0-23)", arg);
    memcpy(a, arg, (size_t)(dash - arg));
    a[dash - arg] = '\0';
    if (tide_parse_int(a, &x) < 0 || tide_parse_int(dash + 1, &y) < 0 || x < 0 || x > 23 ||
        y < 0 || y > 23)
        return bad("--night: '%s' is not A-B with hours 0-23", arg);
    if (x == y)
        return bad("--night: '%s' is an empty window", arg);
    c->night_a = (int)x;
    c->night_b = (int)y;
    return 0;
}

#define parse_seed tide_parse_u64

/* The options' ids. */
enum {
    O_CLUSTER = 256, O_CLUSTER_FILE, O_SERVICES, O_DEMAND, O_JOBS, O_POLICY, O_RESERVE,
    O_SPLIT, O_NIGHT, O_MARGIN, O_SEED, O_HORIZON, O_INTERVAL, O_OUT, O_CHECK, O_PROGRESS
};
enum { O_INJECT = 1000 };
enum { O_REPORT = 1100, O_SWEEP, O_HEADROOM, O_HPA_WINDOW, O_HISTORY, O_SIZING, O_OBS_WINDOW };
enum { O_OUTPUTS = 1200, O_PUB_EVERY, O_PUB_SERVICE, O_REGRESS, O_BULK_QOS, O_RL, O_POWER_BUDGET,
       O_SPREAD, O_SURVIVE, O_UPLINK, O_RL_POOL };
/* The options (getopt_long). */
static const struct option longopts[] = {
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"cluster-file", required_argument, NULL, O_CLUSTER_FILE},
    {"services", required_argument, NULL, O_SERVICES},
    {"demand", required_argument, NULL, O_DEMAND},
    {"demand-history", required_argument, NULL, O_HISTORY},
    {"jobs", required_argument, NULL, O_JOBS},
    {"policy", required_argument, NULL, O_POLICY},
    {"reserve", required_argument, NULL, O_RESERVE},
    {"split", required_argument, NULL, O_SPLIT},
    {"night", required_argument, NULL, O_NIGHT},
    {"margin", required_argument, NULL, O_MARGIN},
    {"seed", required_argument, NULL, O_SEED},
    {"horizon", required_argument, NULL, O_HORIZON},
    {"interval", required_argument, NULL, O_INTERVAL},
    {"out", required_argument, NULL, O_OUT},
    {"check", no_argument, NULL, O_CHECK},
    {"fairshare", required_argument, NULL, 1999},
    {"progress", no_argument, NULL, O_PROGRESS},
    {"inject", required_argument, NULL, O_INJECT},
    {"report", required_argument, NULL, O_REPORT},
    {"sweep", required_argument, NULL, O_SWEEP},
    {"headroom", required_argument, NULL, O_HEADROOM},
    {"sizing", required_argument, NULL, O_SIZING},
    {"hpa-window", required_argument, NULL, O_HPA_WINDOW},
    {"obs-window", required_argument, NULL, O_OBS_WINDOW},
    {"outputs", required_argument, NULL, O_OUTPUTS},
    {"publish-every", required_argument, NULL, O_PUB_EVERY},
    {"publish-service", required_argument, NULL, O_PUB_SERVICE},
    {"regress-every", required_argument, NULL, O_REGRESS},
    {"bulk-qos", required_argument, NULL, O_BULK_QOS},
    {"uplink", required_argument, NULL, O_UPLINK},
    {"rl", required_argument, NULL, O_RL},
    {"rl-pool", required_argument, NULL, O_RL_POOL},
    {"power-budget", required_argument, NULL, O_POWER_BUDGET},
    {"spread", required_argument, NULL, O_SPREAD},
    {"survive", required_argument, NULL, O_SURVIVE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The knobs of the model pipeline, power, failure domains, bulk QoS and
 * sizing: -1 parsed, -2 not one of them, else the exit status of a usage error. */
static int parse_knob(cmdline_t *c, int o)
{
    switch (o) {
    case O_POWER_BUDGET:
        if (tide_parse_decimal(optarg, &c->power_budget) < 0 || !(c->power_budget > 0) ||
            c->power_budget > 100)
            return bad("--power-budget: '%s' is not a fraction of nameplate in (0, 100]",
                       optarg);
        break;
    case O_BULK_QOS:
        if (tide_parse_double(optarg, &c->bulk_qos) < 0 || !(c->bulk_qos > 0) ||
            c->bulk_qos > 1)
            return bad("--bulk-qos: '%s' is not a share in (0, 1], e.g. 0.5", optarg);
        break;
    case O_UPLINK:
        if (tide_parse_double(optarg, &c->uplink) < 0 || !(c->uplink > 0) || c->uplink > 1e9)
            return bad("--uplink: '%s' is not GB/s > 0, e.g. 5", optarg);
        break;
    case O_SIZING:
        if (!strcmp(optarg, "forecast") || !strcmp(optarg, "ensemble"))
            c->sizing = !strcmp(optarg, "ensemble");
        else
            return bad("--sizing: '%s' is not forecast or ensemble", optarg);
        break;
    case O_RL_POOL: {
        tide_error_t pe = {0};
        if (tide_rl_pool_cfg_parse(optarg, &c->rl_pool, &pe) != 0)
            return bad("--rl-pool: %s", pe.msg);
        break;
    }
    case O_SPREAD:
        if (tide_parse_int(optarg, &c->spread) < 0 || c->spread < 0 || c->spread > 1000)
            return bad("--spread: '%s' is not a whole number 0..1000", optarg);
        break;
    case O_SURVIVE:
        if (tide_parse_double(optarg, &c->survive) < 0 || !(c->survive >= 0) ||
            c->survive > 1)
            return bad("--survive: '%s' is not a number in 0..1 (0.5 = half the floor)",
                       optarg);
        break;
    case O_PUB_EVERY:
        if (tide_parse_duration(optarg, &c->pipe.every_s) < 0 || c->pipe.every_s <= 0)
            return bad("--publish-every: '%s' is not a positive duration (12h, 1d)", optarg);
        break;
    case O_PUB_SERVICE: c->pipe.service = optarg; break;
    case O_REGRESS: {
        long long k;
        if (tide_parse_int(optarg, &k) < 0 || k < 0 || k > 1000000)
            return bad("--regress-every: '%s' is not a count >= 0", optarg);
        c->pipe.regress = (int)k;
        break;
    }
    default: return -2;
    }
    return -1;
}

/* What the options need together (after the loop): -1 fine, else the exit status. */
static int check_args(const cmdline_t *c)
{
    if ((c->pipe.service || c->pipe.regress) && !c->pipe.every_s)
        return bad("--publish-service and --regress-every need --publish-every");
    if (!c->cluster && !c->cluster_file)
        return bad("--cluster SPEC or --cluster-file F is required");
    if (c->cluster && c->cluster_file)
        return bad("give either --cluster or --cluster-file, not both");
    if (!c->services)
        return bad("--services S.csv is required");
    if (!c->demand)
        return bad("--demand D.csv is required");
    if (!c->jobs && !c->rl)
        return bad("--jobs J.csv is required");
    if (c->rl && (c->sweep || c->report || c->pipe.every_s))
        return bad("--rl cannot be combined with --sweep, --report or --publish-every");
    if (!c->out)
        return bad("--out DIR is required");
    if (c->bulk_qos > 0 && !(tide_inject_storage_gbps(&c->inject) > 0))
        return bad("--bulk-qos needs --inject storage:G (the storage it schedules)");
    if (c->uplink > 0 && !(tide_inject_storage_gbps(&c->inject) > 0))
        return bad("--uplink needs --inject storage:G (the bandwidth model it is part of)");
    return -1;
}

/* Parse argv into c. Returns -1 to go on, else the exit status. */
static int parse_args(cmdline_t *c, int argc, char **argv)
{
    int o, rc;
    optind = 0; /* full reset: the CLI may be called more than once (tests) */
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case O_CLUSTER: c->cluster = optarg; break;
        case O_CLUSTER_FILE: c->cluster_file = optarg; break;
        case O_SERVICES: c->services = optarg; break;
        case O_DEMAND: c->demand = optarg; break;
        case O_HISTORY: c->history = optarg; break;
        case O_JOBS: c->jobs = optarg; break;
        case O_OUT: c->out = optarg; break;
        case O_CHECK: c->check = 1; break;
        case O_PROGRESS: c->progress = 1; break;
        case O_REPORT: c->report = optarg; break;
        case O_SWEEP: c->sweep = optarg; break;
        case O_RL: c->rl = optarg; break;
        case O_OUTPUTS: {
            tide_error_t oe = {0};
            if (tide_sim_outputs_parse(optarg, &c->outputs, &oe) != 0)
                return bad("--outputs: %s", oe.msg);
            break;
        }
        case O_INJECT: {
            tide_error_t ie;
            if (tide_inject_parse(&c->inject, optarg, &ie) != 0)
                return bad("--inject: %s", ie.msg);
            break;
        }
        case O_POLICY:
            if ((rc = parse_policies(c, optarg)) != 0)
                return rc;
            break;
        case O_RESERVE:
            if (tide_parse_int(optarg, &c->reserve) < 0 || c->reserve < 0)
                return bad("--reserve: '%s' is not a GPU count >= 0", optarg);
            break;
        case O_SPLIT:
            if ((rc = parse_split(c, optarg)) != 0)
                return rc;
            break;
        case O_NIGHT:
            if ((rc = parse_night(c, optarg)) != 0)
                return rc;
            break;
        case O_MARGIN:
            if (tide_parse_double(optarg, &c->margin) < 0 || c->margin < 0 || c->margin > 1)
                return bad("--margin: '%s' is not a number in 0..1", optarg);
            break;
        case O_HEADROOM:
            if (tide_parse_double(optarg, &c->headroom) < 0 || !(c->headroom >= 0) ||
                c->headroom > 100)
                return bad("--headroom: '%s' is not a number in 0..100 (0.25 = 25%%)", optarg);
            break;
        case O_HPA_WINDOW:
            if (tide_parse_duration(optarg, &c->hpa_window) < 0 || c->hpa_window < 0)
                return bad("--hpa-window: '%s' is not a duration (90s, 5m, 1h)", optarg);
            break;
        case O_OBS_WINDOW:
            if (tide_parse_duration(optarg, &c->obs_window) < 0 || c->obs_window < 0)
                return bad("--obs-window: '%s' is not a duration (0, 30m, 1h)", optarg);
            break;
        case O_SEED:
            if (parse_seed(optarg, &c->seed) < 0)
                return bad("--seed: '%s' is not an unsigned 64-bit integer", optarg);
            break;
        case O_HORIZON:
            if (tide_parse_duration(optarg, &c->horizon) < 0 || c->horizon <= 0)
                return bad("--horizon: '%s' is not a positive duration (90s, 15m, 36h, 14d)",
                           optarg);
            break;
        case O_INTERVAL:
            if (tide_parse_duration(optarg, &c->interval) < 0 || c->interval <= 0)
                return bad("--interval: '%s' is not a positive duration (90s, 15m, 36h, 14d)",
                           optarg);
            break;
        case 1999:
            if (!strcmp(optarg, "on")) c->fairshare = 1;
            else if (!strcmp(optarg, "off")) c->fairshare = 0;
            else return bad("--fairshare: '%s' is not on or off", optarg);
            break;
        case 'h': sim_usage(stdout); return 0;
        default:
            if ((rc = parse_knob(c, o)) == -2)
                return tide_cli_getopt_error("sim", o, argv);
            if (rc >= 0)
                return rc;
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    return check_args(c);
}

/* Inputs loaded from files (owned). */
typedef struct inputs {
    tide_cluster_t *cluster;
    tide_services_t *svcs;
    tide_demand_t *dem;
    tide_demand_t *hist; /* --demand-history, aligned to end at 0 */
    tide_jobs_t *jobs;
    tide_rl_specs_t *rl; /* --rl */
    tide_governance_t gov;
} inputs_t;

static void inputs_free(inputs_t *in)
{
    tide_jobs_free(in->jobs);
    tide_rl_specs_free(in->rl);
    tide_demand_free(in->dem);
    tide_demand_free(in->hist);
    tide_services_free(in->svcs);
    tide_cluster_destroy(in->cluster);
    tide_governance_free(&in->gov);
}

static int load_inputs(const cmdline_t *c, inputs_t *in, tide_error_t *err)
{
    in->cluster = c->cluster ? tide_cluster_file_from_arg_ex(c->cluster, &in->gov, err)
                             : tide_cluster_file_load_ex(c->cluster_file, &in->gov, err);
    if (!in->cluster)
        return tide_err_prefix(err, "%s: ", c->cluster ? "--cluster" : "--cluster-file");
    tide_read_opts_t ro = {.cluster = in->cluster};
    if (!(in->svcs = tide_services_read_file(c->services, &ro, err)))
        return -1;
    if (!(in->dem = tide_demand_read_file(c->demand, in->svcs, &ro, err)))
        return -1;
    if (c->history && (!(in->hist = tide_demand_read_file(c->history, in->svcs, &ro, err)) ||
                       tide_demand_history_align(in->hist, 0, err) < 0))
        return tide_err_prefix(err, "--demand-history %s: ", c->history);
    static const char no_jobs[] = "job_id,submit_s,team,priority,gpus,duration_s\n";
    if (c->jobs ? !(in->jobs = tide_jobs_read_file(c->jobs, &ro, err))
                : !(in->jobs = tide_jobs_read_mem(no_jobs, sizeof no_jobs - 1, "(none)", &ro,
                                                  err)))
        return -1;
    if (c->rl && !(in->rl = tide_rl_specs_read_file(c->rl, &ro, err)))
        return -1;
    if (in->rl && in->rl->n != 1)
        return tide_errf(err, TIDE_EINVAL, "%s: one RL job expected, found %zu", c->rl,
                         in->rl->n);
    return 0;
}

/* Apply the policy knobs to cfg; checks that need the cluster. Returns -1 to
 * go on, else the exit status. */
static int apply_knobs(const cmdline_t *c, const tide_cluster_t *cl, tide_config_t *cfg)
{
    int gpus = tide_cluster_gpus(cl);
    if (c->reserve >= 0) {
        if (c->reserve > gpus)
            return bad("--reserve: %lld GPUs but the cluster has %d", c->reserve, gpus);
        cfg->reserve_gpus = (int)c->reserve;
    }
    if (c->split_i >= 0) {
        if (c->split_i + c->split_t != gpus)
            return bad("--split: %lld + %lld = %lld GPUs but the cluster has %d", c->split_i,
                       c->split_t, c->split_i + c->split_t, gpus);
        cfg->split_inf = (int)c->split_i;
    }
    if (c->night_a >= 0) {
        cfg->night_start_h = c->night_a;
        cfg->night_end_h = c->night_b;
    }
    if (c->margin >= 0) {
        if (c->margin > cfg->margin_max)
            return bad("--margin: %g is above the margin ceiling %g", c->margin, cfg->margin_max);
        cfg->margin_min = c->margin;
    }
    if (c->headroom >= 0)
        cfg->headroom = c->headroom;
    if (c->hpa_window >= 0)
        cfg->hpa_window_s = c->hpa_window;
    if (c->obs_window >= 0)
        cfg->obs_window_s = c->obs_window;
    if (c->sizing >= 0)
        cfg->sizing_ensemble = c->sizing;
    if (c->spread >= 0)
        cfg->spread_max_skew = (int)c->spread;
    else if (c->survive > 0)
        cfg->spread_max_skew = 1; /* a share to survive asks for spreading */
    if (c->survive >= 0)
        cfg->survive_share = c->survive;
    return -1;
}

/* "tide sim: wrote DIR/timeline.csv, ..." for the files written. */
static void print_written(const char *dir, unsigned outputs)
{
    static const struct {
        unsigned bit;
        const char *file;
    } f[] = {{TIDE_SIM_OUT_TIMELINE, "timeline.csv"}, {TIDE_SIM_OUT_EVENTS, "events.csv"},
             {TIDE_SIM_OUT_USAGE, "usage.csv"}, {TIDE_SIM_OUT_SUMMARY, "summary.json"}};
    printf("tide sim: wrote");
    int k = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!outputs || (outputs & f[i].bit))
            printf("%s %s/%s", k++ ? "," : "", dir, f[i].file);
    printf("\n");
}

int tide_cmd_sim(int argc, char **argv)
{
    cmdline_t c = {.fairshare = -1, .reserve = -1, .split_i = -1, .split_t = -1, .night_a = -1, .night_b = -1,
                   .margin = -1, .headroom = -1, .hpa_window = -1, .obs_window = -1, .sizing = -1,
                   .spread = -1, .survive = -1};
    tide_rl_pool_cfg_default(&c.rl_pool);
    inputs_t in = {0};
    tide_error_t err = {0};
    const char **cmd_argv = NULL;
    int rc = parse_args(&c, argc, argv);
    if (rc >= 0)
        goto out;
    if (load_inputs(&c, &in, &err) != 0) {
        rc = fail(&err);
        goto out;
    }
    if (c.power_budget > 0 &&
        tide_cluster_scale_power_budgets(in.cluster, c.power_budget, &err) < 0) {
        rc = fail(&err);
        goto out;
    }
    tide_sim_opts_t o;
    tide_sim_opts_default(&o);
    if ((rc = apply_knobs(&c, in.cluster, &o.cfg)) >= 0)
        goto out;
    o.cluster = in.cluster;
    o.services = in.svcs->v;
    o.n_services = in.svcs->n;
    o.demand = in.dem->v;
    o.n_demand = in.dem->n;
    if (in.hist) {
        o.history = in.hist->v;
        o.n_history = in.hist->n;
    }
    o.jobs = in.jobs->v;
    o.n_jobs = in.jobs->n;
    o.policies = c.n_policies ? c.policies : NULL;
    o.n_policies = c.n_policies;
    o.horizon_s = c.horizon;
    if (c.interval > 0)
        o.interval_s = c.interval;
    o.seed = c.seed;
    o.out_dir = c.out;
    o.table = stdout;
    o.progress = c.progress;
    o.check = c.check;
    tide_governance_apply(&in.gov, NULL, &o.cfg, NULL);
    if (c.fairshare >= 0)
        o.cfg.fairshare = c.fairshare;
    o.governance = &in.gov;
    o.inject = &c.inject;
    o.job_ckpt_gb = in.jobs->ckpt_gb;
    o.service_weights_gb = in.svcs->weights_gb;
    o.pipeline = c.pipe.every_s > 0 ? &c.pipe : NULL;
    o.service_latency = in.svcs->latency;
    o.bulk_qos = c.bulk_qos;
    o.uplink_gbps = c.uplink;
    if (c.sweep && (rc = tide_cli_sim_check_sweep(c.sweep, &o)) >= 0)
        goto out;
    o.outputs = c.outputs;
    /* the command line for summary.json, without --out DIR (where the file is):
     * the same run into two folders gives the same file */
    cmd_argv = tide_xcalloc((size_t)argc + 1, sizeof *cmd_argv);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--out=", 6) != 0)
            cmd_argv[o.argc++] = argv[i];
    }
    o.argv = cmd_argv;
    unsigned need = TIDE_SIM_OUT_SUMMARY | TIDE_SIM_OUT_TIMELINE | TIDE_SIM_OUT_EVENTS;
    if (c.report && c.outputs && (c.outputs & need) != need) {
        rc = bad("--report reads summary.json, timeline.csv and events.csv: add them to "
                 "--outputs");
        goto out;
    }
    if (in.rl) {
        rc = tide_sim_rl_run(&o, &in.rl->v[0], &c.rl_pool, stdout, NULL, &err) != 0 ? fail(&err) : 0;
        if (rc == 0)
            printf("tide sim: wrote %s/rl.json, %s/rl.csv\n", c.out, c.out);
        goto out;
    }
    if (tide_sim_run(&o, &err) != 0) {
        rc = fail(&err);
        goto out;
    }
    print_written(c.out, c.outputs);
    rc = tide_cli_sim_finish(c.sweep, c.report, &o);
out:
    free(cmd_argv);
    inputs_free(&in);
    free(c.policy_buf);
    tide_inject_free(&c.inject);
    return rc;
}
