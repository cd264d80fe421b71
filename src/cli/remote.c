/* Shared pieces of the CLI's client commands. */
#include "cli/remote.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/util.h"

static const char *const output_names[] = {[TIDE_OUT_TABLE] = "table", [TIDE_OUT_JSON] = "json",
                                           [TIDE_OUT_WIDE] = "wide"};

int tide_remote_opt(tide_remote_opts_t *o, int opt, const char *arg)
{
    switch (opt) {
    case TIDE_RO_SERVER: o->server = arg; return 1;
    case TIDE_RO_TOKEN: o->token = arg; return 1;
    case TIDE_RO_JSON: o->json = 1; o->output = TIDE_OUT_JSON; return 1;
    case TIDE_RO_OUTPUT:
        o->bad_output = arg;
        for (int k = 0; k < (int)(sizeof output_names / sizeof output_names[0]); k++)
            if (!strcmp(arg, output_names[k])) {
                o->output = k;
                o->json = k == TIDE_OUT_JSON;
                o->bad_output = NULL;
            }
        return 1;
    default: return 0;
    }
}

int tide_remote_connect(const tide_remote_opts_t *o, tide_client_t *c)
{
    tide_error_t err = {0};
    if (o->bad_output) {
        fprintf(stderr, "tide: --output: '%s' is not table, wide or json\n", o->bad_output);
        return 2;
    }
    if (tide_client_init(c, o->server, o->token, &err) < 0)
        return tide_remote_fail(&err);
    return -1;
}

int tide_remote_fail(const tide_error_t *err)
{
    fprintf(stderr, "tide: %s\n", err->msg[0] ? err->msg : "unknown error");
    return tide_cli_exit_code(err->code ? err->code : TIDE_EIO);
}

int tide_remote_call(const tide_remote_opts_t *ro, const char *method, const char *path,
                     json_t *body, void (*show)(const json_t *j))
{
    tide_client_t c;
    int rc = tide_remote_connect(ro, &c);
    if (rc >= 0) {
        json_decref(body);
        return rc;
    }
    tide_error_t err = {0};
    json_t *j = tide_client_call(&c, method, path, body, NULL, &err);
    tide_client_fini(&c);
    json_decref(body);
    if (!j)
        return tide_remote_fail(&err);
    if (ro->json || !show)
        tide_remote_print_json(j);
    else
        show(j);
    json_decref(j);
    return 0;
}

void tide_remote_print_json(const json_t *j)
{
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    fputc('\n', stdout);
}

const char *tide_remote_fmt(const json_t *v, int prec, char *buf, size_t n)
{
    if (!v || json_is_null(v)) {
        snprintf(buf, n, "-");
    } else if (json_is_string(v)) {
        snprintf(buf, n, "%s", json_string_value(v));
    } else if (json_is_integer(v)) {
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x == floor(x) && fabs(x) < 1e15)
            snprintf(buf, n, "%.0f", x);
        else {
            snprintf(buf, n, "%.*f", prec, x);
            if (strchr(buf, '.')) { /* cut trailing zeros */
                size_t l = strlen(buf);
                while (l > 0 && buf[l - 1] == '0')
                    buf[--l] = '\0';
                if (l > 0 && buf[l - 1] == '.')
                    buf[--l] = '\0';
            }
        }
    } else if (json_is_boolean(v)) {
        snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(buf, n, "%s", s ? s : "?");
        free(s);
    }
    return buf;
}

const char *tide_remote_val(const json_t *obj, const char *key, int prec, char *buf, size_t n)
{
    return tide_remote_fmt(json_object_get(obj, key), prec, buf, n);
}

const char *tide_remote_clock(const json_t *obj, const char *key, char *buf, size_t n)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) {
        snprintf(buf, n, "-");
        return buf;
    }
    double w = tide_remote_wall_of(json_number_value(v));
    if (isfinite(w) && w > 0 && w < 253402300800.0) { /* before year 10000 */
        time_t tt = (time_t)floor(w);
        struct tm tm;
        if (gmtime_r(&tt, &tm) && strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
            return buf;
    }
    long long s = (long long)json_number_value(v);
    if (s < 0)
        s = 0;
    snprintf(buf, n, "d%lld %02lld:%02lld:%02lld", s / 86400, s % 86400 / 3600, s % 3600 / 60,
             s % 60);
    return buf;
}

/* The daemon's mapping (CLI process state: one daemon per command). */
static double wall_origin = NAN, wall_speed = 1;

int tide_remote_wall_load(const tide_client_t *c)
{
    tide_error_t err = {0};
    json_t *j = tide_remote_get(c, "/v1/cluster", &err);
    const json_t *o = json_object_get(j, "wall_origin"), *sp = json_object_get(j, "speed");
    int ok = json_is_number(o);
    if (ok) {
        wall_origin = json_number_value(o);
        wall_speed = json_is_number(sp) && json_number_value(sp) > 0 ? json_number_value(sp) : 1;
    }
    json_decref(j);
    return ok;
}

double tide_remote_wall_of(double t)
{
    return isnan(wall_origin) ? NAN : wall_origin + t / wall_speed;
}

const char *tide_remote_dur(const json_t *obj, const char *key, char *buf, size_t n)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) {
        snprintf(buf, n, "-");
        return buf;
    }
    return tide_fmt_duration((int64_t)json_number_value(v), buf, n);
}

json_t *tide_remote_get(const tide_client_t *c, const char *path, tide_error_t *err)
{
    return tide_client_call(c, "GET", path, NULL, NULL, err);
}

void tide_table_init(tide_table_t *t, size_t ncols, const char *const *headers)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    tide_table_row(t, headers);
}

void tide_table_row(tide_table_t *t, const char *const *cells)
{
    for (size_t i = 0; i < t->ncols; i++)
        TIDE_PUSH(t->cells, t->n, t->cap, tide_xstrdup(cells[i] ? cells[i] : "-"));
}

void tide_table_print(const tide_table_t *t, FILE *f)
{
    size_t rows = t->ncols ? t->n / t->ncols : 0;
    size_t *w = tide_xcalloc(t->ncols, sizeof *w);
    int *right = tide_xcalloc(t->ncols, sizeof *right);
    for (size_t c = 0; c < t->ncols; c++)
        right[c] = t->cells[c][0] == '>';
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            size_t l = strlen(s) - (r == 0 && right[c]);
            w[c] = TIDE_MAX(w[c], l);
        }
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (r == 0 && right[c])
                s++;
            int last = c + 1 == t->ncols;
            if (right[c])
                fprintf(f, "%*s%s", (int)w[c], s, last ? "" : "  ");
            else if (last)
                fputs(s, f);
            else
                fprintf(f, "%-*s  ", (int)w[c], s);
        }
        fputc('\n', f);
    }
    free(w);
    free(right);
}

void tide_table_free(tide_table_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

int tide_remote_args_flag(const char *cmd, int argc, char **argv, tide_remote_opts_t *ro,
                          void (*usage)(FILE *f), const char *flag, int *set)
{
    const struct option longopts[] = {
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {flag, no_argument, NULL, 'F'}, /* flag NULL: this row ends the table */
        {NULL, 0, NULL, 0},
    };
    int o;
    optind = 0; /* full reset: the CLI may be called more than once (tests) */
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (tide_remote_opt(ro, o, optarg))
            continue;
        if (o == 'h') {
            usage(stdout);
            return 0;
        }
        if (o == 'F' && set) {
            *set = 1;
            continue;
        }
        return tide_cli_getopt_error(cmd, o, argv);
    }
    return -1;
}

int tide_remote_args(const char *cmd, int argc, char **argv, tide_remote_opts_t *ro,
                     void (*usage)(FILE *f))
{
    return tide_remote_args_flag(cmd, argc, argv, ro, usage, NULL, NULL);
}
