/* A command's configuration file (tide serve --config): a flat YAML mapping
 * of option names to scalars or lists of scalars (docs/serve.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cli/config_file.h"
#include "util/util.h"

static void push(tide_cfg_items_t *c, const char *key, const yaml_node_t *v, int seq)
{
    tide_cfg_item_t it = {.key = tide_xstrdup(key),
                          .value = tide_xstrdup((const char *)v->data.scalar.value),
                          .line = (int)v->start_mark.line + 1,
                          .seq = seq};
    TIDE_PUSH(c->v, c->n, c->cap, it);
}

/* One key: value pair of the top mapping. */
static int one_pair(tide_cfg_items_t *c, yaml_document_t *doc, const yaml_node_pair_t *pr,
                    const char *path, tide_error_t *err)
{
    yaml_node_t *k = yaml_document_get_node(doc, pr->key);
    yaml_node_t *v = yaml_document_get_node(doc, pr->value);
    if (!k || k->type != YAML_SCALAR_NODE)
        return tide_errf(err, TIDE_EINVAL, "%s:%d: a key is not a plain name", path,
                         k ? (int)k->start_mark.line + 1 : 0);
    const char *key = (const char *)k->data.scalar.value;
    int line = (int)k->start_mark.line + 1;
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].key, key))
            return tide_errf(err, TIDE_EINVAL, "%s:%d: key '%s' given twice", path, line, key);
    if (v && v->type == YAML_SCALAR_NODE) {
        if (v->data.scalar.length == 0 && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            return tide_errf(err, TIDE_EINVAL, "%s:%d: key '%s' has no value", path, line, key);
        push(c, key, v, 0);
        return 0;
    }
    if (v && v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = v->data.sequence.items.start;
             it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(doc, *it);
            if (!e || e->type != YAML_SCALAR_NODE)
                return tide_errf(err, TIDE_EINVAL, "%s:%d: key '%s': list items must be plain "
                                 "values", path, line, key);
            push(c, key, e, 1);
        }
        return 0;
    }
    return tide_errf(err, TIDE_EINVAL, "%s:%d: key '%s': expected a value or a list of values, "
                     "not a mapping", path, line, key);
}

int tide_cfg_read(const char *path, tide_cfg_items_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: %s", path,
                         strerror(errno));
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return tide_errf(err, TIDE_ENOMEM, "%s: cannot initialise the YAML parser", path);
    }
    yaml_parser_set_input_file(&p, f);
    int rc = 0;
    if (!yaml_parser_load(&p, &doc)) {
        rc = tide_errf(err, TIDE_EINVAL, "%s:%d: %s", path, (int)p.problem_mark.line + 1,
                       p.problem ? p.problem : "not YAML");
        yaml_parser_delete(&p);
        fclose(f);
        return rc;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
             rc == 0 && pr < root->data.mapping.pairs.top; pr++)
            rc = one_pair(out, &doc, pr, path, err);
    } else if (root) {
        rc = tide_errf(err, TIDE_EINVAL, "%s:%d: expected a mapping of option names to values",
                       path, (int)root->start_mark.line + 1);
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    fclose(f);
    if (rc != 0)
        tide_cfg_free(out);
    return rc;
}

void tide_cfg_free(tide_cfg_items_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        free(c->v[i].value);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}
