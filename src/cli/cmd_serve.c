/* `tide serve`: the live control plane (docs/serve.md): the engine on the
 * wall clock, the HTTP API (docs/api.md), SQLite state, a backend. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/config_file.h"
#include "backend/backend.h"
#include "daemon/daemon.h"
#include "http/server.h"
#include "formats/cluster_file.h"
#include "formats/workload_io.h"
#include "util/util.h"

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: tide serve (--cluster SPEC | --cluster-file F) --db FILE [options]\n"
            "       tide serve --db FILE [options]          (an existing database)\n"
            "\n"
            "Run the control plane: the policy engine on the wall clock, the HTTP API\n"
            "(docs/api.md), state in SQLite, decisions enacted through a backend. The\n"
            "first line on stdout is \"listening on http://HOST:PORT\". SIGTERM or SIGINT\n"
            "stop it cleanly; a restart recovers everything from the database.\n"
            "\n"
            "cluster and workload:\n"
            "      --cluster SPEC      nodes x GPUs, e.g. 4x8 or 16x8:H100,8x8:A100 (a\n"
            "                          .yaml/.yml path also works); fixed at creation\n"
            "      --cluster-file F    cluster YAML (groups, teams, prices: docs/formats.md);\n"
            "                          teams reload with POST /v1/admin/reload\n"
            "      --services S.csv    inference services (docs/formats.md); they can change\n"
            "                          only until the first job is submitted\n"
            "      --demand-query SVC=URL\n"
            "                          pull SVC's demand every tick from a Prometheus query\n"
            "                          URL (http://.../api/v1/query?query=...); repeatable\n"
            "      --power-query URL   pull measured GPU power (DCGM_FI_DEV_POWER_USAGE) from\n"
            "                          Prometheus: an instant-query URL, or a base URL\n"
            "                          (http://prom:9090) for that default query; the draws,\n"
            "                          by the state each GPU is in, replace the declared\n"
            "                          power model of its GPU type (recorded; GET /v1/power)\n"
            "      --power-interval D  wall time between power pulls (default 60s)\n"
            "      --power-labels HOST,GPU\n"
            "                          the series' node and GPU index labels (default\n"
            "                          Hostname,gpu as dcgm-exporter names them)\n"
            "      --demand-history FILE\n"
            "                          past demand (demand.csv; its latest time_s is \"now\")\n"
            "                          fed to the forecast at the database's first start\n"
            "      --demand-history-days N\n"
            "                          at the first start, also load the last N days (engine\n"
            "                          time) of each --demand-query service the file does not\n"
            "                          cover with a Prometheus range query (default 7; 0 = off)\n"
            "policy (fixed when the database is created):\n"
            "      --policy NAME       elastic (default), static, preempt, k8s, isolated, timeshare\n"
            "      --reserve N         Tier A GPUs for elastic (default: sum of service floors)\n"
            "      --split I:T         static/timeshare partition: I inference + T training GPUs\n"
            "daemon:\n"
            "      --db FILE           SQLite database, created if missing (required)\n"
            "      --listen ADDR       HOST:PORT to listen on (default 127.0.0.1:7070; port 0\n"
            "                          picks a free one)\n"
            "      --tokens FILE       bearer tokens: `TOKEN TEAM ROLE` lines (admin, submitter,\n"
            "                          viewer, router; tokens of 16+ characters); without it\n"
            "                          the API is open (loopback only) and every caller is\n"
            "                          admin of team `default`\n"
            "      --tls-cert F, --tls-key F\n"
            "                          serve HTTPS with this PEM certificate (chain) and key;\n"
            "                          required for a non-loopback --listen\n"
            "      --insecure          allow a non-loopback --listen without TLS\n"
            "      --max-conns-per-ip N\n"
            "                          open connections per client address (default 128)\n"
            "      --backend NAME      sim (default): virtual nodes in the daemon; slurm: a real\n"
            "                          Slurm cluster (docs/slurm.md; --cluster then defaults to\n"
            "                          Slurm's GPU nodes; it cannot stage weights, so a\n"
            "                          service with stage_s > 0 is refused)\n"
            "      --speed X           engine seconds per wall second (default 1)\n"
            "      --tick D            loop tick: 1s (default), 500ms, 2s; demand is pulled\n"
            "                          every tick\n"
            "      --usage-interval D  engine time between usage snapshots (default 1h)\n"
            "      --check             check the engine's invariants (and a rollout's bound:\n"
            "                          need plus one step) after every step\n"
            "      --audit-keep D      keep audit rows (every API write: tide audit) this long\n"
            "                          (default 90d; 0 = for ever)\n"
            "      --audit-max-rows N  keep at most N audit rows, the newest (default 1000000;\n"
            "                          0 = no cap)\n"
            "      --mode M            enact (default): act on the cluster; shadow: observe the\n"
            "                          real cluster, demand and jobs, run the engine and record\n"
            "                          what it would do, enacting nothing (GET /v1/shadow;\n"
            "                          POST /v1/mode {\"mode\":\"enact\"} switches, keeping the\n"
            "                          learned forecast)\n"
            "      --rehearse-every D  warm-up rehearsal of every service every D of engine\n"
            "                          time (24h, 6h; default off; `tide rehearse SVC` any time)\n"
            "      --sim-warmup-factor F\n"
            "                          sim backend: warm-ups take F x the declared warmup_s\n"
            "                          (default 1)\n"
            "      --snapshot-every N  store a snapshot of the engine state every N steps, so\n"
            "                          a restart replays only the steps since the last one\n"
            "                          (default 1000; 0 = none written or used: the whole log\n"
            "                          is replayed)\n"
            "      --snapshot-interval D\n"
            "                          ... or every D of engine time, whichever comes first\n"
            "                          (default 1h; 0 = by steps only)\n"
            "engine timings (fixed when the database is created):\n"
            "      --lease-max D       longest lease granted at once (default 6h)\n"
            "      --lead-extra D      margin added to checkpoint P99 + warm-up P99 (default 5m)\n"
            "      --control-period D  the control loop's period (default 1m)\n"
            "      --scale-down-hold D\n"
            "                          keep inference capacity this long past the forecast\n"
            "                          need before lending it back (default 30m)\n"
            "slurm backend:\n"
            "      --slurm-conf F      slurm.conf (default: $SLURM_CONF, then Slurm's default)\n"
            "      --slurm-partition P training gangs' partition (default: Slurm's default)\n"
            "      --slurm-infer-partition P\n"
            "                          inference replicas' partition (default: as training)\n"
            "      --ckpt-signal SIG   checkpoint notice signal (default USR1)\n"
            "      --replica-command CMD\n"
            "                          what an inference replica runs (required with services)\n"
            "      --power-cap-cmd CMD per-node power cap: a /bin/sh command with {node} and\n"
            "                          {watts}, e.g. 'ssh {node} sudo nvidia-smi -pl {watts}'\n"
            "                          (run for every node of a capped job; a lifted cap\n"
            "                          writes the GPU type's TDP; default: caps not enacted)\n"
            "      --workdir DIR       jobs' working directory and TIDE_WORKDIR (default: cwd)\n"
            "      --api-url URL       the API URL jobs get as TIDE_API (default: http://LISTEN)\n"
            "      --deadline-slack D  Slurm time limits end this long before a lease's latest\n"
            "                          return (default 60s: Slurm checks limits every 30 s)\n"
            "configuration:\n"
            "      --config FILE       YAML mapping of these long options (without the dashes)\n"
            "                          to values, e.g. `db: /var/lib/tide/tide.db`; a list for\n"
            "                          repeatable options, true/false for switches; flags on\n"
            "                          the command line override it (examples/tide.yaml)\n"
            "      --check-config      check the options and the files they name (cluster,\n"
            "                          services, tokens, TLS), print the result and exit\n"
            "                          without opening the database\n"
            "  -h, --help              show this help\n"
            "\n"
            "Details: docs/serve.md.\n");
}

#define bad(...) tide_cli_usage_error("serve", __VA_ARGS__)

#define fail(err) tide_cli_fail("serve", (err))

/* "1s", "500ms", "0.5", "2m" -> seconds (> 0). */
static int parse_tick(const char *s, double *out)
{
    size_t n = strlen(s);
    double v;
    if (n > 2 && !strcmp(s + n - 2, "ms")) {
        char b[64];
        if (n - 2 >= sizeof b)
            return -1;
        memcpy(b, s, n - 2);
        b[n - 2] = '\0';
        if (tide_parse_double(b, &v) < 0)
            return -1;
        v /= 1000.0;
    } else if (tide_parse_double(s, &v) < 0) {
        int64_t d;
        if (tide_parse_duration(s, &d) < 0)
            return -1;
        v = (double)d;
    }
    if (!(v > 0) || !isfinite(v) || v > 3600)
        return -1;
    *out = v;
    return 0;
}

typedef struct cmdline {
    const char *cluster, *cluster_file, *services, *db, *listen, *tokens, *backend, *policy;
    const char *slurm_conf, *partition, *infer_partition, *replica_command, *workdir, *api_url;
    const char *power_cap_cmd;
    const char *power_query;     /* --power-query */
    double power_interval;       /* --power-interval (0 = default) */
    char power_host[64], power_gpu[64]; /* --power-labels HOST,GPU ("" = defaults) */
    int ckpt_signal;
    int64_t lease_max, lead_extra, control_period, deadline_slack, scale_down_hold;
    long long reserve, split_i, split_t;
    double speed, tick;
    int64_t usage_interval;
    int check, insecure;
    int shadow;                  /* --mode shadow */
    int64_t rehearse_every;      /* --rehearse-every */
    double warm_factor;          /* --sim-warmup-factor */
    const char *demand_history;
    long long history_days;
    const char *tls_cert, *tls_key;
    long long per_ip;
    int64_t audit_keep;          /* --audit-keep (0 = default) */
    long long audit_max_rows;    /* --audit-max-rows (0 = default) */
    long long snap_every;
    int64_t snap_interval;
    tide_demand_query_t *dq;
    size_t n_dq, cap_dq;
    char **dq_buf;
    size_t n_dq_buf, cap_dq_buf;
    const char *config;          /* --config FILE */
    int check_config;            /* --check-config */
    tide_cfg_items_t cfg;        /* its items (the values options point into) */
    size_t n_dq_config;          /* demand queries from the file (flags replace them) */
    int in_flags;                /* 1 while the command line is parsed */
} cmdline_t;

enum {
    O_CLUSTER = 256, O_CLUSTER_FILE, O_SERVICES, O_DB, O_LISTEN, O_TOKENS, O_BACKEND, O_SPEED,
    O_TICK, O_POLICY, O_RESERVE, O_SPLIT, O_DEMAND_QUERY, O_USAGE, O_CHECK, O_LEASE_MAX,
    O_LEAD_EXTRA, O_CONTROL_PERIOD, O_SLURM_CONF, O_PARTITION, O_INFER_PARTITION,
    O_CKPT_SIGNAL, O_REPLICA_CMD, O_POWER_CAP_CMD, O_WORKDIR, O_API_URL, O_SLACK, O_TLS_CERT, O_TLS_KEY,
    O_INSECURE, O_PER_IP, O_HISTORY, O_HISTORY_DAYS, O_CONFIG, O_CHECK_CONFIG, O_HOLD,
    O_AUDIT_KEEP, O_AUDIT_MAX, O_MODE, O_REHEARSE, O_WARM_FACTOR, O_SNAP_EVERY, O_SNAP_INTERVAL,
    O_POWER_QUERY, O_POWER_INTERVAL, O_POWER_LABELS
};

/* --power-query URL, --power-interval D, --power-labels HOST,GPU. */
static int power_opt(cmdline_t *c, int o)
{
    if (o == O_POWER_QUERY) {
        if (strncmp(optarg, "http://", 7))
            return bad("--power-query: '%s' is not an http:// URL (a Prometheus query URL or "
                       "base URL)",
                       optarg);
        c->power_query = optarg;
    } else if (o == O_POWER_INTERVAL) {
        if (parse_tick(optarg, &c->power_interval) < 0)
            return bad("--power-interval: '%s' is not a duration in (0, 1h] (60s, 5m)", optarg);
    } else {
        const char *comma = strchr(optarg, ',');
        size_t h = comma ? (size_t)(comma - optarg) : 0;
        if (!comma || h == 0 || h >= sizeof c->power_host || !comma[1] ||
            strlen(comma + 1) >= sizeof c->power_gpu || strchr(comma + 1, ','))
            return bad("--power-labels: '%s' is not HOST_LABEL,GPU_LABEL", optarg);
        memcpy(c->power_host, optarg, h);
        c->power_host[h] = '\0';
        snprintf(c->power_gpu, sizeof c->power_gpu, "%s", comma + 1);
    }
    return -1;
}

/* --mode, --rehearse-every, --sim-warmup-factor. */
static int mode_opt(cmdline_t *c, int o)
{
    if (o == O_MODE) {
        if (strcmp(optarg, "enact") && strcmp(optarg, "shadow"))
            return bad("--mode: '%s' is not enact or shadow", optarg);
        c->shadow = !strcmp(optarg, "shadow");
    } else if (o == O_REHEARSE) {
        if (tide_parse_duration(optarg, &c->rehearse_every) < 0 || c->rehearse_every < 60 ||
            c->rehearse_every > 366LL * 86400)
            return bad("--rehearse-every: '%s' is not a duration in [1m, 366d] (24h, 6h)", optarg);
    } else if (tide_parse_double(optarg, &c->warm_factor) < 0 || !(c->warm_factor > 0) ||
               c->warm_factor > 1000) {
        return bad("--sim-warmup-factor: '%s' is not a number in (0, 1000]", optarg);
    }
    return -1;
}

/* One option: -1 to go on, or the exit status (0 after --help). */
/* --audit-keep D (0 = keep for ever), --audit-max-rows N (0 = no cap). */
static int audit_opt(cmdline_t *c, int o)
{
    if (o == O_AUDIT_KEEP) {
        if (tide_parse_duration(optarg, &c->audit_keep) < 0 || c->audit_keep < 0)
            return bad("--audit-keep: '%s' is not a duration >= 0 (90d, 12h; 0 = for ever)",
                       optarg);
        if (c->audit_keep == 0)
            c->audit_keep = -1;
        return -1;
    }
    if (tide_parse_int(optarg, &c->audit_max_rows) < 0 || c->audit_max_rows < 0)
        return bad("--audit-max-rows: '%s' is not a count >= 0 (0 = no cap)", optarg);
    if (c->audit_max_rows == 0)
        c->audit_max_rows = -1;
    return -1;
}

/* --lease-max, --lead-extra, --control-period, --scale-down-hold,
 * --deadline-slack: a duration in (0, 30d]. -1 to go on, else the status. */
static int duration_opt(cmdline_t *c, int o)
{
    int64_t v;
    const char *flag = o == O_LEASE_MAX ? "--lease-max" : o == O_LEAD_EXTRA ? "--lead-extra"
                     : o == O_SLACK ? "--deadline-slack" : o == O_HOLD ? "--scale-down-hold"
                     : "--control-period";
    if (tide_parse_duration(optarg, &v) < 0 || v <= 0 || v > 30LL * 86400)
        return bad("%s: '%s' is not a duration in (0, 30d] (90s, 5m, 6h)", flag, optarg);
    *(o == O_LEASE_MAX ? &c->lease_max : o == O_LEAD_EXTRA ? &c->lead_extra
      : o == O_SLACK ? &c->deadline_slack : o == O_HOLD ? &c->scale_down_hold
      : &c->control_period) = v;
    return -1;
}

/* --policy: a known policy name. */
static int policy_opt(cmdline_t *c)
{
    int known = 0;
    for (const char *const *n = tide_policy_names(); *n; n++)
        known |= !strcmp(*n, optarg);
    if (!known)
        return bad("--policy: unknown policy '%s'", optarg);
    c->policy = optarg;
    return -1;
}

static int one_opt(cmdline_t *c, int o, char **argv)
{
    switch (o) {
    case O_CLUSTER: c->cluster = optarg; break;
    case O_CLUSTER_FILE: c->cluster_file = optarg; break;
    case O_SERVICES: c->services = optarg; break;
    case O_DB: c->db = optarg; break;
    case O_LISTEN: c->listen = optarg; break;
    case O_TOKENS: c->tokens = optarg; break;
    case O_BACKEND: c->backend = optarg; break;
    case O_CHECK: c->check = 1; break;
    case O_TLS_CERT: c->tls_cert = optarg; break;
    case O_TLS_KEY: c->tls_key = optarg; break;
    case O_INSECURE: c->insecure = 1; break;
    case O_HISTORY: c->demand_history = optarg; break;
    case O_HISTORY_DAYS:
        if (tide_parse_int(optarg, &c->history_days) < 0 || c->history_days < 0 ||
            c->history_days > 366)
            return bad("--demand-history-days: '%s' is not a number of days in 0..366", optarg);
        break;
    case O_PER_IP:
        if (tide_parse_int(optarg, &c->per_ip) < 0 || c->per_ip < 1 || c->per_ip > 100000)
            return bad("--max-conns-per-ip: '%s' is not a count in 1..100000", optarg);
        break;
    case O_POLICY: return policy_opt(c);
    case O_SPEED:
        if (tide_parse_double(optarg, &c->speed) < 0 || !(c->speed > 0) || c->speed > 1e6)
            return bad("--speed: '%s' is not a number in (0, 1000000]", optarg);
        break;
    case O_TICK:
        if (parse_tick(optarg, &c->tick) < 0)
            return bad("--tick: '%s' is not a positive duration (1s, 500ms, 2s)", optarg);
        break;
    case O_SNAP_EVERY:
        if (tide_parse_int(optarg, &c->snap_every) < 0 || c->snap_every < 0 ||
            c->snap_every > 1000000000)
            return bad("--snapshot-every: '%s' is not a step count in 0..1000000000", optarg);
        break;
    case O_SNAP_INTERVAL:
        if (tide_parse_duration(optarg, &c->snap_interval) < 0 || c->snap_interval < 0)
            return bad("--snapshot-interval: '%s' is not a duration >= 0", optarg);
        break;
    case O_USAGE:
        if (tide_parse_duration(optarg, &c->usage_interval) < 0 || c->usage_interval <= 0)
            return bad("--usage-interval: '%s' is not a positive duration", optarg);
        break;
    case O_RESERVE:
        if (tide_parse_int(optarg, &c->reserve) < 0 || c->reserve < 0)
            return bad("--reserve: '%s' is not a GPU count >= 0", optarg);
        break;
    case O_SPLIT: {
        const char *colon = strchr(optarg, ':');
        char a[32];
        if (!colon || (size_t)(colon - optarg) >= sizeof a)
            return bad("--split: '%s' is not I:T", optarg);
        memcpy(a, optarg, (size_t)(colon - optarg));
        a[colon - optarg] = '\0';
        if (tide_parse_int(a, &c->split_i) < 0 || tide_parse_int(colon + 1, &c->split_t) < 0 ||
            c->split_i < 0 || c->split_t < 0)
            return bad("--split: '%s' is not I:T with GPU counts >= 0", optarg);
        break;
    }
    case O_DEMAND_QUERY: {
        if (c->in_flags && c->n_dq_config > 0) { /* the command line's replace the file's */
            c->n_dq = 0;
            c->n_dq_config = 0;
        }
        const char *eq = strchr(optarg, '=');
        if (!eq || eq == optarg || !eq[1])
            return bad("--demand-query: '%s' is not SERVICE=URL", optarg);
        char *svc = tide_xstrdup(optarg);
        svc[eq - optarg] = '\0';
        TIDE_PUSH(c->dq_buf, c->n_dq_buf, c->cap_dq_buf, svc);
        tide_demand_query_t q = {.service = svc, .url = eq + 1};
        TIDE_PUSH(c->dq, c->n_dq, c->cap_dq, q);
        break;
    }
    case O_LEASE_MAX:
    case O_LEAD_EXTRA:
    case O_CONTROL_PERIOD:
    case O_HOLD:
    case O_SLACK: return duration_opt(c, o);
    case O_SLURM_CONF: c->slurm_conf = optarg; break;
    case O_PARTITION: c->partition = optarg; break;
    case O_INFER_PARTITION: c->infer_partition = optarg; break;
    case O_REPLICA_CMD: c->replica_command = optarg; break;
    case O_POWER_CAP_CMD: c->power_cap_cmd = *optarg ? optarg : NULL; break;
    case O_WORKDIR:
        if (optarg[0] != '/')
            return bad("--workdir: '%s' is not an absolute path (Slurm jobs start there)", optarg);
        c->workdir = optarg;
        break;
    case O_API_URL:
        if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))
            return bad("--api-url: '%s' is not an http:// or https:// URL", optarg);
        c->api_url = optarg;
        break;
    case O_CKPT_SIGNAL:
        if ((c->ckpt_signal = tide_signal_parse(optarg)) <= 0)
            return bad("--ckpt-signal: '%s' is not a signal (USR1, SIGUSR2, 10, ...)", optarg);
        break;
    case O_CONFIG: c->config = optarg; break;
    case O_CHECK_CONFIG: c->check_config = 1; break;
    case O_AUDIT_KEEP:
    case O_AUDIT_MAX: return audit_opt(c, o);
    case O_MODE:
    case O_REHEARSE:
    case O_WARM_FACTOR: return mode_opt(c, o);
    case O_POWER_QUERY:
    case O_POWER_INTERVAL:
    case O_POWER_LABELS: return power_opt(c, o);
    case 'h': serve_usage(stdout); return 0;
    default: return tide_cli_getopt_error("serve", o, argv);
    }
    return -1;
}

/* The options: getopt_long's table, and the keys of --config FILE. */
static const struct option longopts[] = {
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"cluster-file", required_argument, NULL, O_CLUSTER_FILE},
    {"services", required_argument, NULL, O_SERVICES},
    {"db", required_argument, NULL, O_DB},
    {"listen", required_argument, NULL, O_LISTEN},
    {"tokens", required_argument, NULL, O_TOKENS},
    {"backend", required_argument, NULL, O_BACKEND},
    {"speed", required_argument, NULL, O_SPEED},
    {"tick", required_argument, NULL, O_TICK},
    {"policy", required_argument, NULL, O_POLICY},
    {"reserve", required_argument, NULL, O_RESERVE},
    {"split", required_argument, NULL, O_SPLIT},
    {"demand-query", required_argument, NULL, O_DEMAND_QUERY},
    {"demand-history", required_argument, NULL, O_HISTORY},
    {"demand-history-days", required_argument, NULL, O_HISTORY_DAYS},
    {"usage-interval", required_argument, NULL, O_USAGE},
    {"snapshot-every", required_argument, NULL, O_SNAP_EVERY},
    {"snapshot-interval", required_argument, NULL, O_SNAP_INTERVAL},
    {"check", no_argument, NULL, O_CHECK},
    {"lease-max", required_argument, NULL, O_LEASE_MAX},
    {"lead-extra", required_argument, NULL, O_LEAD_EXTRA},
    {"control-period", required_argument, NULL, O_CONTROL_PERIOD},
    {"scale-down-hold", required_argument, NULL, O_HOLD},
    {"slurm-conf", required_argument, NULL, O_SLURM_CONF},
    {"slurm-partition", required_argument, NULL, O_PARTITION},
    {"slurm-infer-partition", required_argument, NULL, O_INFER_PARTITION},
    {"ckpt-signal", required_argument, NULL, O_CKPT_SIGNAL},
    {"replica-command", required_argument, NULL, O_REPLICA_CMD},
    {"power-cap-cmd", required_argument, NULL, O_POWER_CAP_CMD},
    {"power-query", required_argument, NULL, O_POWER_QUERY},
    {"power-interval", required_argument, NULL, O_POWER_INTERVAL},
    {"power-labels", required_argument, NULL, O_POWER_LABELS},
    {"workdir", required_argument, NULL, O_WORKDIR},
    {"api-url", required_argument, NULL, O_API_URL},
    {"deadline-slack", required_argument, NULL, O_SLACK},
    {"tls-cert", required_argument, NULL, O_TLS_CERT},
    {"tls-key", required_argument, NULL, O_TLS_KEY},
    {"insecure", no_argument, NULL, O_INSECURE},
    {"max-conns-per-ip", required_argument, NULL, O_PER_IP},
    {"audit-keep", required_argument, NULL, O_AUDIT_KEEP},
    {"audit-max-rows", required_argument, NULL, O_AUDIT_MAX},
    {"config", required_argument, NULL, O_CONFIG},
    {"check-config", no_argument, NULL, O_CHECK_CONFIG},
    {"mode", required_argument, NULL, O_MODE},
    {"rehearse-every", required_argument, NULL, O_REHEARSE},
    {"sim-warmup-factor", required_argument, NULL, O_WARM_FACTOR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Options that may be given more than once (a list in --config). */
static const char *const repeatable[] = {"demand-query", NULL};

static int is_repeatable(const char *name)
{
    for (const char *const *r = repeatable; *r; r++)
        if (!strcmp(*r, name))
            return 1;
    return 0;
}

/* The option of a config key: its long name, '_' accepted for '-'. */
static const struct option *config_key(const char *key)
{
    char name[64];
    size_t n = strlen(key);
    if (n >= sizeof name)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        name[i] = key[i] == '_' ? '-' : key[i];
    for (const struct option *o = longopts; o->name; o++)
        if (!strcmp(o->name, name))
            return strcmp(name, "config") && strcmp(name, "help") && strcmp(name, "check-config")
                       ? o
                       : NULL;
    return NULL;
}

/* Apply FILE's keys as if they were options given before the command line's.
 * -1 to go on, or the exit status. */
static int apply_config(cmdline_t *c, char **argv)
{
    tide_error_t err = {0};
    if (tide_cfg_read(c->config, &c->cfg, &err) < 0) {
        tide_err_prefix(&err, "--config: ");
        return fail(&err);
    }
    for (size_t i = 0; i < c->cfg.n; i++) {
        const tide_cfg_item_t *it = &c->cfg.v[i];
        const struct option *o = config_key(it->key);
        if (!o)
            return bad("--config %s:%d: unknown key '%s' (the keys are tide serve's long options "
                       "but config, check-config and help)", c->config, it->line, it->key);
        if (it->seq && !is_repeatable(o->name))
            return bad("--config %s:%d: '%s' takes one value, not a list", c->config, it->line,
                       it->key);
        if (o->has_arg == no_argument) {
            int on = !strcmp(it->value, "true") || !strcmp(it->value, "yes");
            if (!on && strcmp(it->value, "false") && strcmp(it->value, "no"))
                return bad("--config %s:%d: '%s' is a switch: true or false, not '%s'",
                           c->config, it->line, it->key, it->value);
            if (!on)
                continue;
        }
        optarg = it->value;
        int rc = one_opt(c, o->val, argv);
        if (rc >= 0) {
            fprintf(stderr, "tide serve: (in %s line %d, key '%s')\n", c->config, it->line,
                    it->key);
            return rc;
        }
    }
    c->n_dq_config = c->n_dq;
    return -1;
}

/* --config FILE's value, looked for before the options are parsed (so that
 * the command line's options can override the file's). */
static const char *find_config(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            path = argv[++i];
        else if (!strncmp(argv[i], "--config=", 9))
            path = argv[i] + 9;
    }
    return path;
}

static int parse_args(cmdline_t *c, int argc, char **argv)
{
    int o;
    if ((c->config = find_config(argc, argv))) {
        int rc = apply_config(c, argv);
        if (rc >= 0)
            return rc;
    }
    c->in_flags = 1;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        int rc = one_opt(c, o, argv);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (c->cluster && c->cluster_file)
        return bad("give either --cluster or --cluster-file, not both");
    if (!c->tls_cert != !c->tls_key)
        return bad("--tls-cert and --tls-key go together");
    if (!c->db)
        return bad("--db FILE is required");
    int slurm = c->backend && !strcmp(c->backend, "slurm");
    if (!slurm && (c->slurm_conf || c->partition || c->infer_partition || c->replica_command ||
                   c->power_cap_cmd ||
                   c->workdir || c->api_url || c->ckpt_signal || c->deadline_slack))
        return bad("the --slurm-*, --ckpt-signal, --replica-command, --power-cap-cmd, --workdir, "
                   "--api-url and "
                   "--deadline-slack options need --backend slurm");
    const tide_backend_ops_t *be = tide_backend_find(c->backend ? c->backend : "sim");
    if (be && be->wall_clock && c->speed > 0 && c->speed != 1)
        return bad("--speed %g: the %s backend runs real jobs on the wall clock (--speed 1)",
                   c->speed, c->backend);
    return -1;
}

/* Is a numeric address loopback (127.0.0.0/8, ::1, ::ffff:127.x)? */
static int addr_loopback(int family, const void *a)
{
    if (family == AF_INET)
        return (ntohl(((const struct in_addr *)a)->s_addr) >> 24) == 127;
    const struct in6_addr *v6 = a;
    if (IN6_IS_ADDR_LOOPBACK(v6))
        return 1;
    return IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127;
}

/* Does listen bind loopback only? The host must be a numeric loopback
 * address, or a name whose every address is loopback ("localhost"). */
static int is_loopback(const char *listen)
{
    char host[256], port[8];
    if (tide_http_listen_parse(listen, host, sizeof host, port, sizeof port, NULL) < 0)
        return 0;
    struct in6_addr buf;
    if (inet_pton(AF_INET, host, &buf) == 1)
        return addr_loopback(AF_INET, &buf);
    if (inet_pton(AF_INET6, host, &buf) == 1)
        return addr_loopback(AF_INET6, &buf);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return 0;
    int all = res != NULL;
    for (struct addrinfo *r = res; r; r = r->ai_next)
        all &= r->ai_family == AF_INET
                   ? addr_loopback(AF_INET, &((struct sockaddr_in *)r->ai_addr)->sin_addr)
               : r->ai_family == AF_INET6
                   ? addr_loopback(AF_INET6, &((struct sockaddr_in6 *)r->ai_addr)->sin6_addr)
                   : 0;
    freeaddrinfo(res);
    return all;
}

/* The thread that turns SIGTERM / SIGINT into a clean stop (signals are
 * blocked in every other thread). SIGUSR1 ends it when the loop ended first. */
typedef struct sigctx {
    sigset_t set;
    tide_daemon_t *d;
} sigctx_t;

static void *signal_thread(void *arg)
{
    sigctx_t *s = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&s->set, &sig) != 0)
            continue;
        if (sig == SIGUSR1)
            return NULL;
        fprintf(stderr, "tide serve: %s: shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        tide_daemon_stop(s->d);
        return NULL;
    }
}

/* What `tide serve` holds while it runs (freed by serve_free). */
typedef struct serve {
    cmdline_t c;
    tide_cluster_t *cluster;
    tide_governance_t gov;
    int have_gov;
    tide_services_t *svcs;
    tide_auth_t *auth;
    tide_daemon_t *d;
    tide_router_t *router;
    tide_http_server_t *srv;
    char slurm_spec[512];
    char api_url[300];
} serve_t;

/* The Slurm backend's defaults: the cluster is Slurm's GPU nodes (without
 * --cluster), jobs reach the API at the --listen address (without
 * --api-url). -1 to go on, or the exit status. */
static int slurm_defaults(serve_t *v)
{
    cmdline_t *c = &v->c;
    tide_error_t err = {0};
    if (!c->cluster && !c->cluster_file) {
        if (tide_slurm_cluster_spec(NULL, c->slurm_conf, c->partition, v->slurm_spec,
                                    sizeof v->slurm_spec, &err) < 0) {
            tide_err_prefix(&err, "reading the cluster from Slurm: ");
            return fail(&err);
        }
        c->cluster = v->slurm_spec;
        fprintf(stderr, "tide serve: Slurm's GPU nodes: %s\n", v->slurm_spec);
    }
    if (!c->api_url) {
        char host[256], port[8];
        if (tide_http_listen_parse(c->listen, host, sizeof host, port, sizeof port, NULL) < 0 ||
            !strcmp(port, "0"))
            return bad("--backend slurm: jobs need the API's address: give --listen with a fixed "
                       "port, or --api-url");
        int v6 = strchr(host, ':') != NULL;
        const char *h = !host[0] || !strcmp(host, "0.0.0.0") ? "127.0.0.1"
                        : !strcmp(host, "::")                ? "::1"
                                                             : host;
        snprintf(v->api_url, sizeof v->api_url, v6 ? "%s://[%s]:%s" : "%s://%s:%s",
                 c->tls_cert ? "https" : "http", h, port);
        c->api_url = v->api_url;
    }
    return -1;
}

/* The cluster (and its governance), the services, the tokens. -1 to go on,
 * or the exit status. */
static int load_inputs(serve_t *v)
{
    cmdline_t *c = &v->c;
    tide_error_t err = {0};
    if (c->cluster || c->cluster_file) {
        tide_governance_init(&v->gov, NULL);
        v->have_gov = 1;
        v->cluster = c->cluster ? tide_cluster_file_from_arg_ex(c->cluster, &v->gov, &err)
                                : tide_cluster_file_load_ex(c->cluster_file, &v->gov, &err);
        if (!v->cluster) {
            tide_err_prefix(&err, "%s: ", c->cluster ? "--cluster" : "--cluster-file");
            return fail(&err);
        }
        int gpus = tide_cluster_gpus(v->cluster);
        if (c->reserve > gpus)
            return bad("--reserve: %lld GPUs but the cluster has %d", c->reserve, gpus);
        if (c->split_i >= 0 && c->split_i + c->split_t != gpus)
            return bad("--split: %lld + %lld GPUs but the cluster has %d", c->split_i, c->split_t,
                       gpus);
    }
    if (c->services) {
        if (!v->cluster)
            return bad("--services needs --cluster or --cluster-file (to resolve GPU types)");
        tide_read_opts_t ro = {.cluster = v->cluster};
        if (!(v->svcs = tide_services_read_file(c->services, &ro, &err)))
            return fail(&err);
    }
    v->auth = tide_auth_create();
    if (c->tokens && tide_auth_load(v->auth, c->tokens, &err) < 0) {
        tide_err_prefix(&err, "--tokens: ");
        return fail(&err);
    }
    if (!is_loopback(c->listen)) {
        if (!c->tokens)
            return bad("--listen %s is not a loopback address: give --tokens (the API would be "
                       "open)", c->listen);
        if (!c->tls_cert && !c->insecure)
            return bad("--listen %s is not a loopback address: give --tls-cert and --tls-key "
                       "(tokens would cross the network in clear), or --insecure", c->listen);
    }
    return -1;
}

/* --check-config: everything parsed and loaded; say what would run. */
static int check_config_report(serve_t *v)
{
    const cmdline_t *c = &v->c;
    if (c->config)
        printf("tide serve: configuration OK (%s and the command line)\n", c->config);
    else
        printf("tide serve: configuration OK (the command line)\n");
    printf("  database   %s%s\n", c->db, access(c->db, F_OK) == 0 ? " (exists)" : " (to be created)");
    printf("  cluster    %s", c->cluster ? c->cluster : c->cluster_file ? c->cluster_file
                                                                        : "(from the database)");
    if (v->cluster)
        printf(" (%d nodes, %d GPUs)", tide_cluster_nodes(v->cluster), tide_cluster_gpus(v->cluster));
    printf("\n  services   %s", c->services ? c->services : "(none given)");
    if (v->svcs)
        printf(" (%zu)", v->svcs->n);
    printf("\n  policy     %s\n  backend    %s\n  listen     %s%s\n  tokens     %s\n",
           c->policy ? c->policy : "elastic (default; or the database's)",
           c->backend ? c->backend : "sim", c->listen, c->tls_cert ? " (TLS)" : "",
           c->tokens ? c->tokens : "(none: open API on loopback)");
    printf("  mode       %s\n", c->shadow ? "shadow (enacts nothing)" : "enact");
    if (c->rehearse_every > 0)
        printf("  rehearsals every %llds of engine time\n", (long long)c->rehearse_every);
    if (c->power_query)
        printf("  power      pulled from %s every %gs\n", c->power_query,
               c->power_interval > 0 ? c->power_interval : 60);
    return 0;
}

/* The daemon's options from the command line (bo: the backend's). */
static void daemon_opts(serve_t *v, tide_daemon_opts_t *o, tide_backend_opts_t *bo)
{
    const cmdline_t *c = &v->c;
    tide_daemon_opts_default(o);
    o->db_path = c->db;
    o->cluster = v->cluster;
    o->cluster_file = c->cluster_file ? c->cluster_file
                      : (c->cluster && (strstr(c->cluster, ".yaml") || strstr(c->cluster, ".yml")))
                          ? c->cluster
                          : NULL;
    o->gov = v->have_gov ? &v->gov : NULL;
    if (v->svcs) {
        o->services = v->svcs->v;
        o->n_services = v->svcs->n;
    }
    o->policy = c->policy;
    if (c->reserve >= 0)
        o->reserve_gpus = (int)c->reserve;
    if (c->split_i >= 0)
        o->split_inf = (int)c->split_i;
    o->backend = c->backend;
    o->lease_max_s = c->lease_max;
    o->lead_extra_s = c->lead_extra;
    o->control_period_s = c->control_period;
    o->scale_down_hold_s = c->scale_down_hold;
    *bo = (tide_backend_opts_t){
        .slurm_conf = c->slurm_conf,
        .partition = c->partition,
        .infer_partition = c->infer_partition,
        .ckpt_signal = c->ckpt_signal,
        .replica_command = c->replica_command,
        .power_cap_cmd = c->power_cap_cmd,
        .workdir = c->workdir,
        .api_url = c->api_url,
        .deadline_slack_s = c->deadline_slack,
        .sim_warmup_factor = c->warm_factor,
    };
    o->shadow = c->shadow;
    o->rehearse_every_s = c->rehearse_every;
    o->power_query = c->power_query;
    o->power_interval_s = c->power_interval;
    o->power_host_label = c->power_host[0] ? c->power_host : NULL;
    o->power_gpu_label = c->power_gpu[0] ? c->power_gpu : NULL;
    o->backend_opts = bo;
    o->speed = c->speed;
    o->tick_s = c->tick;
    o->queries = c->dq;
    o->n_queries = c->n_dq;
    o->demand_history = c->demand_history;
    if (c->history_days >= 0)
        o->history_days = (int)c->history_days;
    o->usage_interval_s = c->usage_interval;
    o->audit_keep_s = c->audit_keep;
    o->audit_max_rows = c->audit_max_rows;
    o->check = c->check;
    o->snapshot_steps = (long)c->snap_every;
    o->snapshot_secs = c->snap_interval;
    o->auth = v->auth;
    o->tokens_path = c->tokens;
}

/* Serve the API and run the loop until a signal (sc) or a fatal error.
 * Returns the exit status. */
static int run(serve_t *v, sigctx_t *sc)
{
    const cmdline_t *c = &v->c;
    tide_error_t err = {0};
    size_t nr;
    const tide_route_t *routes = tide_daemon_routes(&nr);
    v->router = tide_router_create(routes, nr, v->auth, v->d);
    tide_daemon_set_router(v->d, v->router);
    tide_http_server_opts_t so = {.tls_cert = c->tls_cert, .tls_key = c->tls_key,
                                  .per_ip = (unsigned)c->per_ip};
    if (!(v->srv = tide_http_server_start_opts(c->listen, v->router, &so, &err)))
        return fail(&err);
    printf("listening on %s\n", tide_http_server_url(v->srv));
    fflush(stdout);
    if (!c->tokens)
        fprintf(stderr, "tide serve: no --tokens: the API is open on loopback (every caller is "
                        "admin of team default)\n");
    fprintf(stderr, "tide serve: %s on %s, database %s, backend %s, speed %gx%s\n",
            tide_http_server_url(v->srv),
            c->cluster ? c->cluster : c->cluster_file ? c->cluster_file : "(from the database)",
            c->db, c->backend ? c->backend : "sim", c->speed > 0 ? c->speed : 1.0,
            c->shadow ? ", SHADOW mode (enacts nothing)" : "");
    sc->d = v->d;
    pthread_t st;
    int have_st = pthread_create(&st, NULL, signal_thread, sc) == 0;
    int rc = 0;
    if (tide_daemon_run(v->d, &err) < 0)
        rc = fail(&err);
    tide_daemon_stop(v->d); /* release long polls before joining the connections */
    if (have_st) {
        pthread_kill(st, SIGUSR1);
        pthread_join(st, NULL);
    }
    return rc;
}

static void serve_free(serve_t *v)
{
    tide_http_server_stop(v->srv);
    tide_daemon_close(v->d);
    tide_router_destroy(v->router);
    tide_auth_destroy(v->auth);
    tide_services_free(v->svcs);
    if (v->have_gov)
        tide_governance_free(&v->gov);
    tide_cluster_destroy(v->cluster);
    for (size_t i = 0; i < v->c.n_dq_buf; i++)
        free(v->c.dq_buf[i]);
    free(v->c.dq_buf);
    free(v->c.dq);
    tide_cfg_free(&v->c.cfg);
}

int tide_cmd_serve(int argc, char **argv)
{
    serve_t v = {.c = {.reserve = -1, .split_i = -1, .split_t = -1, .history_days = -1,
                       .snap_every = -1, .snap_interval = -1, .listen = "127.0.0.1:7070"}};
    int rc = parse_args(&v.c, argc, argv);
    if (rc < 0 && v.c.backend && !strcmp(v.c.backend, "slurm"))
        rc = slurm_defaults(&v);
    if (rc < 0)
        rc = load_inputs(&v);
    if (rc < 0 && v.c.check_config)
        rc = check_config_report(&v);
    if (rc >= 0) {
        serve_free(&v);
        return rc;
    }
    /* signals: blocked here, before any thread exists, and waited for in one */
    sigctx_t sc;
    sigemptyset(&sc.set);
    sigaddset(&sc.set, SIGINT);
    sigaddset(&sc.set, SIGTERM);
    sigaddset(&sc.set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
    signal(SIGPIPE, SIG_IGN);

    tide_daemon_opts_t o;
    tide_backend_opts_t bo;
    daemon_opts(&v, &o, &bo);
    tide_error_t err = {0};
    if (!(v.d = tide_daemon_open(&o, &err)))
        rc = fail(&err);
    else
        rc = run(&v, &sc);
    serve_free(&v);
    return rc;
}
