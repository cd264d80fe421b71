/* tide CLI: one table of subcommands (main.c), one file per subcommand. */
#ifndef TIDE_CLI_H
#define TIDE_CLI_H

/* Each subcommand gets argv with argv[0] = its own name. Returns the process
 * exit status (0 ok, 2 usage / bad input, see tide_errcode_exit). Every
 * subcommand answers --help / -h with its usage on stdout and status 0. */
typedef int (*tide_cmd_fn)(int argc, char **argv);

int tide_cmd_sim(int argc, char **argv);
int tide_cmd_gen(int argc, char **argv);

#endif
