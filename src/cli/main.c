/* tide: the single binary. Subcommands come from one table. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    tide_cmd_fn fn;
    const char *summary;
} commands[] = {
    {"sim", tide_cmd_sim, "replay a workload through one or more policies (trace-replay simulator)"},
    {"gen", tide_cmd_gen, "generate a built-in scenario's services.csv, demand.csv and jobs.csv"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tide <command> [options]   (tide <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tide: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
