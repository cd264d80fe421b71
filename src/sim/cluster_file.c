/* Cluster YAML loader on libyaml's event parser: a small recursive descent
 * over events that accepts exactly the documented shape. */
#include "sim/cluster_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "util/util.h"

typedef struct yp {
    yaml_parser_t p;
    yaml_event_t ev; /* current event (valid when have) */
    int have;
    const char *name;
    tide_error_t *err;
} yp_t;

static int line_of(const yaml_event_t *ev)
{
    return (int)ev->start_mark.line + 1;
}

static int fail(yp_t *y, int line, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(yp_t *y, int line, int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tide_errf(y->err, code, "%s:%d: %s", y->name, line, msg);
}

/* Advance to the next event. */
static int next(yp_t *y)
{
    if (y->have) {
        yaml_event_delete(&y->ev);
        y->have = 0;
    }
    if (!yaml_parser_parse(&y->p, &y->ev)) {
        const char *problem = y->p.problem ? y->p.problem : "unknown error";
        int line = (int)y->p.problem_mark.line + 1;
        if (y->p.error == YAML_READER_ERROR)
            return fail(y, line, TIDE_EINVAL, "YAML: %s (at byte %zu)", problem,
                        y->p.problem_offset);
        if (y->p.error == YAML_MEMORY_ERROR)
            return fail(y, line, TIDE_ENOMEM, "YAML: out of memory");
        if (y->p.context)
            return fail(y, line, TIDE_EINVAL, "YAML syntax error: %s %s (line %d)", problem,
                        y->p.context, (int)y->p.context_mark.line + 1);
        return fail(y, line, TIDE_EINVAL, "YAML syntax error: %s", problem);
    }
    y->have = 1;
    if (y->ev.type == YAML_ALIAS_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "aliases (*name) are not supported");
    return 0;
}

static const char *kind_name(yaml_event_type_t t)
{
    switch (t) {
    case YAML_SCALAR_EVENT: return "a scalar";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_MAPPING_START_EVENT: return "a mapping";
    default: return "something else";
    }
}

static const char *scalar(const yp_t *y)
{
    return (const char *)y->ev.data.scalar.value;
}

/* The current event must be a scalar key; copy it into key. */
static int read_key(yp_t *y, char *key, size_t n)
{
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "keys must be plain names, got %s",
                    kind_name(y->ev.type));
    if (y->ev.data.scalar.length >= n || strlen(scalar(y)) != y->ev.data.scalar.length)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "unknown key '%.40s'", scalar(y));
    memcpy(key, scalar(y), y->ev.data.scalar.length + 1);
    return 0;
}

/* The current event is the value of `key`: a plain whole number in 1..max. */
static int read_int(yp_t *y, const char *key, int min, int max, int *out)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a number, got %s", key,
                    kind_name(y->ev.type));
    long long v;
    if (y->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a number, got the quoted string '%.40s'",
                    key, scalar(y));
    if (tide_parse_int(scalar(y), &v) < 0 || strlen(scalar(y)) != y->ev.data.scalar.length)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a whole number, got '%.40s'", key,
                    scalar(y));
    if (v < min || v > max)
        return fail(y, line, TIDE_EINVAL, "'%s' must be %d..%d, got %lld", key, min, max, v);
    *out = (int)v;
    return 0;
}

/* One group mapping (current event: MAPPING_START). */
static int read_group(yp_t *y, tide_cluster_t *c, int gi)
{
    int gline = line_of(&y->ev);
    tide_node_group_t g;
    memset(&g, 0, sizeof g);
    char type[TIDE_MAX_TYPE_NAME + 1] = "";
    enum { K_COUNT, K_GPUS, K_TYPE, K_DOMAIN, K_RACK, K_POWER, K_N };
    static const char *const keys[K_N] = {"count",      "gpus_per_node", "gpu_type",
                                          "domain_nodes", "rack_nodes",  "power_nodes"};
    int seen[K_N] = {0};
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        char key[64];
        int kline = line_of(&y->ev);
        if (read_key(y, key, sizeof key) < 0)
            return -1;
        int k = 0;
        while (k < K_N && strcmp(keys[k], key) != 0)
            k++;
        if (k == K_N)
            return fail(y, kline, TIDE_EINVAL,
                        "group %d: unknown key '%s' (expected count, gpus_per_node, gpu_type, "
                        "domain_nodes, rack_nodes, power_nodes)",
                        gi, key);
        if (seen[k])
            return fail(y, kline, TIDE_EINVAL, "group %d: '%s' given twice", gi, key);
        seen[k] = 1;
        if (next(y) < 0)
            return -1;
        int rc = 0;
        switch (k) {
        case K_COUNT: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.count); break;
        case K_GPUS: rc = read_int(y, key, 1, TIDE_MAX_GPUS_PER_NODE, &g.gpus_per_node); break;
        case K_DOMAIN: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.domain_nodes); break;
        case K_RACK: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.rack_nodes); break;
        case K_POWER: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.power_nodes); break;
        case K_TYPE:
            if (y->ev.type != YAML_SCALAR_EVENT)
                return fail(y, line_of(&y->ev), TIDE_EINVAL, "'gpu_type' must be a name, got %s",
                            kind_name(y->ev.type));
            if (y->ev.data.scalar.length == 0)
                return fail(y, line_of(&y->ev), TIDE_EINVAL,
                            "'gpu_type' is empty (leave the key out for the default 'gpu')");
            if (y->ev.data.scalar.length > TIDE_MAX_TYPE_NAME ||
                strlen(scalar(y)) != y->ev.data.scalar.length)
                return fail(y, line_of(&y->ev), TIDE_EINVAL,
                            "'gpu_type' is longer than %d characters", TIDE_MAX_TYPE_NAME);
            memcpy(type, scalar(y), y->ev.data.scalar.length + 1);
            g.gpu_type = type;
            break;
        }
        if (rc < 0)
            return -1;
    }
    if (!seen[K_COUNT])
        return fail(y, gline, TIDE_EINVAL, "group %d: missing 'count' (number of nodes)", gi);
    if (!seen[K_GPUS])
        return fail(y, gline, TIDE_EINVAL, "group %d: missing 'gpus_per_node'", gi);
    if (tide_cluster_add_group(c, &g, y->err) < 0)
        return tide_err_prefix(y->err, "%s:%d: group %d: ", y->name, gline, gi);
    return 0;
}

/* The value of `groups` (current event). */
static int read_groups(yp_t *y, tide_cluster_t *c)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail(y, line, TIDE_EINVAL, "'groups' must be a list of node groups, got %s",
                    kind_name(y->ev.type));
    int gi = 0;
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            break;
        gi++;
        if (y->ev.type != YAML_MAPPING_START_EVENT)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "group %d must be a mapping (count: ..., gpus_per_node: ...), got %s", gi,
                        kind_name(y->ev.type));
        if (read_group(y, c, gi) < 0)
            return -1;
    }
    if (gi == 0)
        return fail(y, line, TIDE_EINVAL, "'groups' is empty: a cluster needs at least one group");
    return 0;
}

static int read_doc(yp_t *y, tide_cluster_t *c)
{
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_STREAM_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "YAML: expected the start of a stream");
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_DOCUMENT_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "empty file: expected 'groups:'");
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_MAPPING_START_EVENT) {
        if (y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.length == 0)
            return fail(y, line_of(&y->ev), TIDE_EINVAL, "empty document: expected 'groups:'");
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "the top level must be a mapping with 'groups:', got %s",
                    kind_name(y->ev.type));
    }
    int have_groups = 0, mline = line_of(&y->ev);
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        char key[64];
        int kline = line_of(&y->ev);
        if (read_key(y, key, sizeof key) < 0)
            return -1;
        if (strcmp(key, "teams") == 0 || strcmp(key, "prices") == 0)
            return fail(y, kline, TIDE_EINVAL, "'%s' is not supported yet", key);
        if (strcmp(key, "groups") != 0)
            return fail(y, kline, TIDE_EINVAL, "unknown key '%s' (expected 'groups')", key);
        if (have_groups)
            return fail(y, kline, TIDE_EINVAL, "'groups' given twice");
        have_groups = 1;
        if (next(y) < 0 || read_groups(y, c) < 0)
            return -1;
    }
    if (!have_groups)
        return fail(y, mline, TIDE_EINVAL, "missing 'groups'");
    if (next(y) < 0) /* document end */
        return -1;
    if (next(y) < 0)
        return -1;
    if (y->ev.type == YAML_DOCUMENT_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "more than one YAML document (only one is expected)");
    return 0;
}

static tide_cluster_t *load(yp_t *y)
{
    tide_cluster_t *c = tide_cluster_create();
    int rc = read_doc(y, c);
    if (y->have)
        yaml_event_delete(&y->ev);
    yaml_parser_delete(&y->p);
    if (rc < 0) {
        tide_cluster_destroy(c);
        return NULL;
    }
    return c;
}

tide_cluster_t *tide_cluster_file_load_mem(const char *buf, size_t len, const char *name,
                                           tide_error_t *err)
{
    yp_t y;
    memset(&y, 0, sizeof y);
    y.name = name ? name : "<memory>";
    y.err = err;
    if (!yaml_parser_initialize(&y.p)) {
        tide_errf(err, TIDE_ENOMEM, "%s: cannot initialise the YAML parser", y.name);
        return NULL;
    }
    yaml_parser_set_input_string(&y.p, (const unsigned char *)(buf ? buf : ""), buf ? len : 0);
    return load(&y);
}

tide_cluster_t *tide_cluster_file_load(const char *path, tide_error_t *err)
{
    if (!path) {
        tide_errf(err, TIDE_EINVAL, "no cluster file name given");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        tide_errf(err, e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: cannot open: %s", path,
                  strerror(e));
        return NULL;
    }
    yp_t y;
    memset(&y, 0, sizeof y);
    y.name = path;
    y.err = err;
    if (!yaml_parser_initialize(&y.p)) {
        fclose(f);
        tide_errf(err, TIDE_ENOMEM, "%s: cannot initialise the YAML parser", path);
        return NULL;
    }
    yaml_parser_set_input_file(&y.p, f);
    errno = 0;
    tide_cluster_t *c = load(&y);
    if (!c && ferror(f))
        tide_errf(err, TIDE_EIO, "%s: read error: %s", path, strerror(errno ? errno : EIO));
    fclose(f);
    return c;
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcasecmp(s + n - m, suf) == 0;
}

tide_cluster_t *tide_cluster_file_from_arg(const char *arg, tide_error_t *err)
{
    if (!arg) {
        tide_errf(err, TIDE_EINVAL, "no cluster given");
        return NULL;
    }
    if (ends_with(arg, ".yaml") || ends_with(arg, ".yml"))
        return tide_cluster_file_load(arg, err);
    return tide_cluster_parse(arg, err);
}
