/* `tide db check|backup|restore`: the daemon's SQLite file offline or while
 * it runs (docs/cli.md, docs/serve.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/store.h"
#include "util/util.h"

static void db_usage(FILE *f)
{
    fprintf(f,
            "usage: tide db check --db FILE [--full]\n"
            "       tide db backup --db FILE OUT\n"
            "       tide db restore --db FILE BACKUP\n"
            "\n"
            "The database of `tide serve` (docs/serve.md).\n"
            "\n"
            "  check    PRAGMA quick_check (--full: integrity_check, which also compares\n"
            "           every index with its table); prints \"ok\" or each problem; then\n"
            "           verifies the checksum of every engine snapshot. Safe while\n"
            "           tide serve runs. Exit 0 ok, 1 problems found.\n"
            "  backup   a consistent copy of FILE in OUT (SQLite's online backup API:\n"
            "           safe while tide serve runs and writes), written to OUT.tmp,\n"
            "           checked, synced and renamed, so OUT is whole or absent.\n"
            "  restore  replace FILE by BACKUP: the backup must pass quick_check and be a\n"
            "           tide database; refused while a process has FILE open (stop tide\n"
            "           serve first). The old FILE (and its -wal) is kept as\n"
            "           FILE.pre-restore (.1, .2, ... when taken).\n"
            "\n"
            "options:\n"
            "      --db FILE   the database (required)\n"
            "      --full      check: the full integrity_check (slower)\n"
            "  -h, --help      show this help\n");
}

#define bad(...) tide_cli_usage_error("db", __VA_ARGS__)

static void print_line(void *ctx, const char *line)
{
    (void)ctx;
    printf("%s\n", line);
}

static int do_check(const char *db, int full)
{
    tide_error_t err = {0};
    int n = tide_store_check_file(db, full, print_line, NULL, &err);
    if (n < 0)
        return tide_cli_fail("db", &err);
    if (n == 0) {
        printf("ok: %s passes %s\n", db, full ? "integrity_check" : "quick_check");
        int bad_snaps = tide_store_check_snapshots_file(db, print_line, NULL, &err);
        if (bad_snaps < 0)
            return tide_cli_fail("db", &err);
        if (bad_snaps == 0)
            return 0;
        fprintf(stderr, "tide db: %s: %d engine snapshot%s with a wrong checksum; recovery "
                        "ignores %s and replays the log (the next snapshots replace %s)\n",
                db, bad_snaps, bad_snaps == 1 ? "" : "s", bad_snaps == 1 ? "it" : "them",
                bad_snaps == 1 ? "it" : "them");
        return 1;
    }
    fprintf(stderr, "tide db: %s: %d problem%s found (%s); restore a backup with `tide db "
                    "restore --db %s BACKUP`\n",
            db, n, n == 1 ? "" : "s", full ? "integrity_check" : "quick_check", db);
    return 1;
}

int tide_cmd_db(int argc, char **argv)
{
    enum { O_DB = 256, O_FULL };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, O_DB},
        {"full", no_argument, NULL, O_FULL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = NULL;
    int full = 0, o;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case O_DB: db = optarg; break;
        case O_FULL: full = 1; break;
        case 'h': db_usage(stdout); return 0;
        default: return tide_cli_getopt_error("db", o, argv);
        }
    }
    if (optind >= argc)
        return bad("a subcommand is required: check, backup or restore");
    const char *sub = argv[optind++];
    int nargs = argc - optind;
    static const struct {
        const char *name;
        int nargs;
        const char *arg;
    } subs[] = {{"check", 0, ""}, {"backup", 1, "OUT"}, {"restore", 1, "BACKUP"}};
    size_t k = 0;
    while (k < sizeof subs / sizeof subs[0] && strcmp(subs[k].name, sub))
        k++;
    if (k == sizeof subs / sizeof subs[0])
        return bad("unknown subcommand '%s' (check, backup, restore)", sub);
    if (!db)
        return bad("%s: --db FILE is required", sub);
    if (nargs != subs[k].nargs)
        return nargs > subs[k].nargs ? bad("%s: unexpected argument '%s'", sub,
                                           argv[optind + subs[k].nargs])
                                     : bad("%s: %s is required", sub, subs[k].arg);
    if (full && k != 0)
        return bad("--full goes with check");
    if (k == 0)
        return do_check(db, full);
    const char *path = argv[optind];
    tide_error_t err = {0};
    if (k == 1) {
        if (tide_store_backup_file(db, path, &err) < 0)
            return tide_cli_fail("db", &err);
        printf("backed up %s to %s\n", db, path);
        return 0;
    }
    char moved[4200];
    if (tide_store_restore(path, db, moved, sizeof moved, &err) < 0)
        return tide_cli_fail("db", &err);
    printf("restored %s from %s%s%s\n", db, path, moved[0] ? "; the previous database is " : "",
           moved);
    return 0;
}
