/* #SBATCH lines (sbatch.h). A table of the options tide maps; the rest are
 * recognised as ignored. */
#include "formats/sbatch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* A whole number 0..10^9 from all of s. */
static int parse_count(const char *s, long *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    long v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        v = v * 10 + (*s - '0');
        if (v > 1000000000L)
            return -1;
    }
    *out = v;
    return 0;
}

/* Split "a:b:c" fields of s (at most 4) in place. */
static int split(char *s, char sep, char **f, int max)
{
    int n = 0;
    f[n++] = s;
    for (char *p = s; *p && n < max; p++)
        if (*p == sep) {
            *p = 0;
            f[n++] = p + 1;
        }
    return n;
}

int tide_sbatch_time(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    if (!strcmp(s, "UNLIMITED") || !strcmp(s, "INFINITE") || !strcmp(s, "unlimited") ||
        !strcmp(s, "infinite")) {
        *out = -1;
        return 0;
    }
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    long days = 0, v[3] = {0, 0, 0};
    char *rest = buf, *dash = strchr(buf, '-');
    if (dash) {
        *dash = 0;
        if (parse_count(buf, &days) < 0 || days > 100000)
            return -1;
        rest = dash + 1;
    }
    char *f[4];
    int n = split(rest, ':', f, 4);
    if (n > 3)
        return -1;
    for (int i = 0; i < n; i++)
        if (parse_count(f[i], &v[i]) < 0)
            return -1;
    long h = 0, m = 0, sec = 0;
    if (dash) { /* D-H, D-H:M, D-H:M:S */
        h = v[0];
        m = n > 1 ? v[1] : 0;
        sec = n > 2 ? v[2] : 0;
        if (h > 23)
            return -1;
    } else if (n == 1) { /* M */
        m = v[0];
    } else if (n == 2) { /* M:S */
        m = v[0];
        sec = v[1];
    } else { /* H:M:S */
        h = v[0];
        m = v[1];
        sec = v[2];
    }
    if ((n > 1 || dash) && (m > 59 || sec > 59))
        return -1;
    if (!dash && n >= 2 && m > 59 && n == 3)
        return -1;
    *out = (int64_t)days * 86400 + (int64_t)h * 3600 + (int64_t)m * 60 + sec;
    return 0;
}

typedef struct opt_ctx {
    tide_sbatch_t *o;
    tide_error_t *err;
    int line;
} opt_ctx_t;

static int bad(const opt_ctx_t *c, const char *opt, const char *v, const char *what)
{
    return tide_errf(c->err, TIDE_EINVAL, "line %d: %s: '%.60s' %s", c->line, opt, v, what);
}

static int copy(const opt_ctx_t *c, const char *opt, const char *v, char *dst, size_t n)
{
    if (strlen(v) >= n)
        return tide_errf(c->err, TIDE_EINVAL, "line %d: %s: longer than %zu characters", c->line,
                         opt, n - 1);
    snprintf(dst, n, "%s", v);
    return 0;
}

/* [TYPE:]N of --gpus / --gpus-per-node. */
static int type_count(const opt_ctx_t *c, const char *opt, const char *v, int *count)
{
    char buf[128];
    if (copy(c, opt, v, buf, sizeof buf) < 0)
        return -1;
    char *f[3];
    int n = split(buf, ':', f, 3);
    long k;
    if (n > 2 || parse_count(f[n - 1], &k) < 0 || k < 1)
        return bad(c, opt, v, "is not [TYPE:]N with N >= 1");
    if (n == 2 && copy(c, opt, f[0], c->o->gpu_type, sizeof c->o->gpu_type) < 0)
        return -1;
    *count = (int)k;
    return 0;
}

/* --gres=gpu[:TYPE][:N][,other...]: the gpu entry's count per node. */
static int opt_gres(const opt_ctx_t *c, const char *opt, const char *v)
{
    char buf[256];
    if (copy(c, opt, v, buf, sizeof buf) < 0)
        return -1;
    for (char *e = strtok(buf, ","); e; e = strtok(NULL, ",")) {
        char *f[4];
        int n = split(e, ':', f, 4);
        if (strcmp(f[0], "gpu") != 0)
            continue; /* another GRES */
        long k = 1;
        const char *type = NULL;
        if (n == 2 && isdigit((unsigned char)f[1][0])) {
            if (parse_count(f[1], &k) < 0)
                return bad(c, opt, v, "has a bad GPU count");
        } else if (n == 2) {
            type = f[1];
        } else if (n >= 3) {
            type = f[1];
            if (parse_count(f[2], &k) < 0)
                return bad(c, opt, v, "has a bad GPU count");
        }
        if (k < 1)
            return bad(c, opt, v, "asks for no GPUs");
        if (type && copy(c, opt, type, c->o->gpu_type, sizeof c->o->gpu_type) < 0)
            return -1;
        c->o->gpus_per_node = (int)k;
    }
    return 0;
}

static int opt_int(const opt_ctx_t *c, const char *opt, const char *v, int *dst)
{
    long k;
    char buf[64];
    if (copy(c, opt, v, buf, sizeof buf) < 0)
        return -1;
    char *dash = strchr(buf, '-'); /* --nodes=N-M: at least N */
    if (dash && dash != buf)
        *dash = 0;
    if (parse_count(buf, &k) < 0 || k < 1)
        return bad(c, opt, v, "is not a whole number >= 1");
    *dst = (int)k;
    return 0;
}

enum { K_GRES = 0, K_GPN, K_GPUS, K_NODES, K_TPN, K_TIME, K_NAME, K_QOS, K_COMMENT, K_PART,
       K_ACCOUNT };

static const struct sopt {
    const char *lng;
    char shrt;
    int key;     /* K_*, or -1: known, ignored */
    int has_arg;
} opts[] = {
    {"gres", 0, K_GRES, 1},          {"gpus-per-node", 0, K_GPN, 1},  {"gpus", 'G', K_GPUS, 1},
    {"nodes", 'N', K_NODES, 1},      {"ntasks-per-node", 0, K_TPN, 1}, {"time", 't', K_TIME, 1},
    {"job-name", 'J', K_NAME, 1},    {"qos", 'q', K_QOS, 1},          {"comment", 0, K_COMMENT, 1},
    {"partition", 'p', K_PART, 1},   {"account", 'A', K_ACCOUNT, 1},  {"output", 'o', -1, 1},
    {"error", 'e', -1, 1},           {"ntasks", 'n', -1, 1},          {"cpus-per-task", 'c', -1, 1},
    {"mem", 0, -1, 1},               {"mem-per-cpu", 0, -1, 1},       {"mem-per-gpu", 0, -1, 1},
    {"constraint", 'C', -1, 1},      {"exclusive", 0, -1, 0},         {"requeue", 0, -1, 0},
    {"no-requeue", 0, -1, 0},        {"mail-type", 0, -1, 1},         {"mail-user", 0, -1, 1},
    {"chdir", 'D', -1, 1},           {"export", 0, -1, 1},            {"signal", 0, -1, 1},
    {"cpus-per-gpu", 0, -1, 1},      {"gpus-per-task", 0, -1, 1},     {"nodelist", 'w', -1, 1},
    {"exclude", 'x', -1, 1},         {"array", 'a', -1, 1},           {"dependency", 'd', -1, 1},
    {"hint", 0, -1, 1},              {"open-mode", 0, -1, 1},         {"wait-all-nodes", 0, -1, 1},
    {"reservation", 0, -1, 1},       {"licenses", 'L', -1, 1},        {"begin", 'b', -1, 1},
    {"distribution", 'm', -1, 1},    {"oversubscribe", 's', -1, 0},   {"verbose", 'v', -1, 0},
    {"quiet", 'Q', -1, 0},           {"overcommit", 'O', -1, 0},      {"kill-on-invalid-dep", 0, -1, 1},
    {"nice", 0, -1, 1},              {"priority", 0, -1, 1},          {"switches", 0, -1, 1},
};

static int apply(const opt_ctx_t *c, const struct sopt *s, const char *name, const char *v)
{
    tide_sbatch_t *o = c->o;
    switch (s->key) {
    case K_GRES: return opt_gres(c, name, v);
    case K_GPN: return type_count(c, name, v, &o->gpus_per_node);
    case K_GPUS: return type_count(c, name, v, &o->gpus);
    case K_NODES: return opt_int(c, name, v, &o->nodes);
    case K_TPN: return opt_int(c, name, v, &o->ntasks_per_node);
    case K_TIME:
        if (tide_sbatch_time(v, &o->time_s) < 0)
            return bad(c, name, v, "is not a Slurm time (M, H:M:S, D-H:M:S, UNLIMITED)");
        return 0;
    case K_NAME: return copy(c, name, v, o->job_name, sizeof o->job_name);
    case K_QOS: return copy(c, name, v, o->qos, sizeof o->qos);
    case K_COMMENT: return copy(c, name, v, o->comment, sizeof o->comment);
    case K_PART: return copy(c, name, v, o->partition, sizeof o->partition);
    case K_ACCOUNT: return copy(c, name, v, o->account, sizeof o->account);
    default:
        if (o->n_ignored < TIDE_SBATCH_MAX_IGNORED)
            snprintf(o->ignored[o->n_ignored++], sizeof o->ignored[0], "%.47s", name);
        return 0;
    }
}

/* Split a line's text into words (quotes grouping, backslash escaping the
 * next character outside single quotes). Returns the count, -1 on an
 * unterminated quote. Words are written NUL-separated into buf. */
static int words(const char *s, char *buf, size_t cap, char **w, int maxw)
{
    int n = 0;
    size_t k = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            break; /* a comment after the options ends them */
        if (n == maxw || k + 1 >= cap)
            return -2;
        w[n++] = buf + k;
        char q = 0;
        while (*s && (q || (*s != ' ' && *s != '\t'))) {
            if (!q && (*s == '"' || *s == '\'')) {
                q = *s++;
                continue;
            }
            if (q && *s == q) {
                q = 0;
                s++;
                continue;
            }
            if (*s == '\\' && q != '\'' && s[1])
                s++;
            if (k + 1 >= cap)
                return -2;
            buf[k++] = *s++;
        }
        if (q)
            return -1;
        buf[k++] = 0;
    }
    return n;
}

static const struct sopt *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (strlen(opts[i].lng) == len && !strncmp(opts[i].lng, name, len))
            return &opts[i];
    return NULL;
}

static const struct sopt *find_short(char ch)
{
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (opts[i].shrt == ch)
            return &opts[i];
    return NULL;
}

/* The options of one #SBATCH line (text after "#SBATCH"). */
static int parse_line(const opt_ctx_t *c, const char *text)
{
    char buf[1024];
    char *w[64];
    int n = words(text, buf, sizeof buf, w, 64);
    if (n == -1)
        return tide_errf(c->err, TIDE_EINVAL, "line %d: unterminated quote", c->line);
    if (n < 0)
        return tide_errf(c->err, TIDE_EINVAL, "line %d: too long (1023 characters, 64 words)",
                         c->line);
    for (int i = 0; i < n; i++) {
        const char *a = w[i], *v = NULL;
        const struct sopt *s = NULL;
        char name[64];
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            snprintf(name, sizeof name, "--%.*s", (int)TIDE_MIN(len, 50), a + 2);
            s = find_long(a + 2, len);
            if (eq)
                v = eq + 1;
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            snprintf(name, sizeof name, "-%c", a[1]);
            s = find_short(a[1]);
            if (a[2])
                v = a + 2 + (a[2] == '=');
        } else {
            return tide_errf(c->err, TIDE_EINVAL, "line %d: '%.60s' is not an option", c->line, a);
        }
        if (!s) { /* unknown to tide: ignored, listed; its value (if any) is unknown */
            if (c->o->n_ignored < TIDE_SBATCH_MAX_IGNORED)
                snprintf(c->o->ignored[c->o->n_ignored++], sizeof c->o->ignored[0], "%.47s", name);
            continue;
        }
        if (s->has_arg && !v) {
            if (i + 1 >= n)
                return tide_errf(c->err, TIDE_EINVAL, "line %d: %s needs a value", c->line, name);
            v = w[++i];
        }
        if (apply(c, s, name, v ? v : "") < 0)
            return -1;
    }
    return 0;
}

int tide_sbatch_parse(const char *text, size_t len, tide_sbatch_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->gpus_per_node = out->gpus = out->nodes = out->ntasks_per_node = -1;
    out->time_s = -1;
    if (!text)
        return tide_errf(err, TIDE_EINVAL, "no script");
    if (memchr(text, 0, len))
        return tide_errf(err, TIDE_EINVAL, "the script has a NUL byte (not a text file)");
    size_t p = 0;
    opt_ctx_t c = {.o = out, .err = err, .line = 0};
    while (p < len) {
        size_t e = p;
        while (e < len && text[e] != '\n')
            e++;
        c.line++;
        char line[1100];
        size_t l = e - p;
        if (l >= sizeof line)
            l = sizeof line - 1; /* a longer line is cut (its #SBATCH words would be too) */
        memcpy(line, text + p, l);
        line[l] = 0;
        if (l && line[l - 1] == '\r')
            line[--l] = 0;
        p = e + 1;
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (c.line == 1 && s[0] == '#' && s[1] == '!')
            continue;
        if (!*s)
            continue;
        if (*s != '#')
            break; /* the first command ends the options, as for sbatch */
        if (strncmp(s, "#SBATCH", 7) != 0 || (s[7] && s[7] != ' ' && s[7] != '\t'))
            continue; /* a comment */
        out->lines++;
        if (parse_line(&c, s + 7) < 0)
            return -1;
    }
    return 0;
}
