/* tide: the single binary. Subcommands come from one table. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "version.h"

static const tide_cli_cmd_t commands[] = {
    {"sim", tide_cmd_sim, "replay a workload through one or more policies (trace-replay simulator)"},
    {"gen", tide_cmd_gen, "generate a built-in scenario's services.csv, demand.csv and jobs.csv"},
    {"report", tide_cmd_report, "write a self-contained HTML report of a `tide sim` output directory"},
    {"trace", tide_cmd_trace, "import public traces (Philly, ServeGen, Azure LLM, Mooncake) as workload files"},
    {"serve", tide_cmd_serve, "run the control plane: engine on the wall clock, HTTP API, SQLite state"},
    {"submit", tide_cmd_submit, "submit a training job to a running daemon (tide serve)"},
    {"sbatch", tide_cmd_sbatch, "submit an sbatch script's job (#SBATCH lines) to a running daemon"},
    {"jobs", tide_cmd_jobs, "list a daemon's training jobs"},
    {"job", tide_cmd_job, "show one training job"},
    {"cancel", tide_cmd_cancel, "cancel training jobs"},
    {"services", tide_cmd_services, "list inference services: demand, ready replicas, margin"},
    {"models", tide_cmd_models, "list the model pipeline's models: aliases, versions, rollout"},
    {"model", tide_cmd_model, "show, define or register model versions; report evaluation metrics"},
    {"rollout", tide_cmd_rollout, "a model's rollout: status, pause, resume, promote, abort"},
    {"rl", tide_cmd_rl, "an RL run's trajectory ledger: status, register, push trajectories, trainer steps"},
    {"leases", tide_cmd_leases, "list GPU leases lent to training"},
    {"nodes", tide_cmd_nodes, "list a daemon's nodes: state, GPUs by owner, foreign, drain reason"},
    {"drain", tide_cmd_drain, "take a node out of placement (--reason)"},
    {"resume", tide_cmd_resume, "give a drained node back"},
    {"rehearse", tide_cmd_rehearse, "warm-up rehearsal of a service now (one replica, measured)"},
    {"shadow", tide_cmd_shadow, "what shadow mode would have done (--enact: switch to enact)"},
    {"demand", tide_cmd_demand, "push a service's observed demand (requests/s)"},
    {"events", tide_cmd_events, "print (or follow) the daemon's event log"},
    {"audit", tide_cmd_audit, "the audit trail of API writes: who, from where, what, outcome (admins)"},
    {"usage", tide_cmd_usage, "GPU-hours accounted by the daemon, by team/class/state/tier"},
    {"capacity", tide_cmd_capacity, "capacity signals (preemptions, queue, waste, reserve sweep) of a `tide sim` output directory"},
    {"review", tide_cmd_review, "replay a workload under two configurations; verdict per SLO and training metric (a CI gate)"},
    {"ui", tide_cmd_ui, "the dashboard over a replay of a `tide sim` output directory"},
    {"top", tide_cmd_top, "live view of a daemon: GPUs per node, services, queue"},
    {"db", tide_cmd_db, "check, back up or restore the daemon's database"},
    {"completion", tide_cmd_completion, "print the bash completion script (tide completion bash)"},
};

const tide_cli_cmd_t *tide_cli_commands(size_t *n)
{
    *n = sizeof commands / sizeof commands[0];
    return commands;
}

/* "0.9.0" or "0.9.0 (git v0.9.0-3-gabc1234)" */
static const char *version_string(void)
{
    static char v[160];
    if (TIDE_GIT_DESCRIBE[0])
        snprintf(v, sizeof v, "%s (git %s)", TIDE_VERSION, TIDE_GIT_DESCRIBE);
    else
        snprintf(v, sizeof v, "%s", TIDE_VERSION);
    return v;
}

void tide_cli_usage_print(FILE *f)
{
    fprintf(f, "usage: tide <command> [options]   (tide <command> --help for details)\n"
               "       tide --version | tide help [COMMAND | --man]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

#define usage tide_cli_usage_print

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("tide %s\n", version_string());
        return 0;
    }
    if (!strcmp(argv[1], "help"))
        return tide_cmd_help(argc - 1, argv + 1, version_string());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tide: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
