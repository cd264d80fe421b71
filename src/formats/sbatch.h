/* `#SBATCH` lines of a Slurm batch script, read the way sbatch reads them,
 * for `tide sbatch SCRIPT` (docs/cli.md). Pure: no I/O. */
#ifndef TIDE_FORMATS_SBATCH_H
#define TIDE_FORMATS_SBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "tide/types.h"

#define TIDE_SBATCH_MAX_IGNORED 16

/* What the options ask for; -1 / "" when not given. */
typedef struct tide_sbatch {
    int gpus_per_node;      /* --gres=gpu[:TYPE]:N, --gpus-per-node=[TYPE:]N */
    int gpus;               /* --gpus / -G [TYPE:]N: GPUs of the whole job */
    int nodes;              /* --nodes / -N N (N-M: N) */
    int ntasks_per_node;    /* --ntasks-per-node N */
    int64_t time_s;         /* --time / -t (Slurm's formats, "UNLIMITED" = -1) */
    char gpu_type[64];      /* the TYPE of --gres / --gpus, "" none */
    char job_name[128];     /* --job-name / -J */
    char qos[64];           /* --qos / -q */
    char comment[256];      /* --comment */
    char partition[64];     /* --partition / -p (tide places itself: reported) */
    char account[64];       /* --account / -A: the team when no --team is given */
    int n_ignored;          /* options tide does not use (listed, never an error) */
    char ignored[TIDE_SBATCH_MAX_IGNORED][48];
    int lines;              /* #SBATCH lines read */
} tide_sbatch_t;

/* Read the #SBATCH lines of script text[0..len) into out: as sbatch does,
 * from the top of the script (after the "#!" line) up to the first line that
 * is neither blank nor a comment; each line's words (quotes '..' and "..",
 * one option or several: "#SBATCH --gres=gpu:8 --nodes=2") are options in
 * the forms --opt=V, --opt V, -o V, -oV. Options tide does not use are listed
 * in out->ignored. Errors (EINVAL, naming the line): a bad value ("--nodes:
 * 'x' is not a whole number >= 1"), an option without its value, an
 * unterminated quote, a NUL byte. */
int tide_sbatch_parse(const char *text, size_t len, tide_sbatch_t *out, tide_error_t *err);

/* Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S; "UNLIMITED" or
 * "INFINITE" -> -1. Returns 0, or -1 (not a time; fields out of range). */
int tide_sbatch_time(const char *s, int64_t *out);

#endif
