/* A command's configuration file: a flat YAML mapping of long option names
 * (without the dashes) to a value or a list of values (docs/serve.md). */
#ifndef TIDE_CLI_CONFIG_FILE_H
#define TIDE_CLI_CONFIG_FILE_H

#include <stddef.h>

#include "tide/types.h"

typedef struct tide_cfg_item {
    char *key;    /* the option's name as written */
    char *value;  /* the scalar, as text */
    int line;     /* 1-based line of the value */
    int seq;      /* 1: an item of a list */
} tide_cfg_item_t;

typedef struct tide_cfg_items {
    tide_cfg_item_t *v;
    size_t n, cap;
} tide_cfg_items_t;

/* Read path into out (in file order; a list gives one item per element).
 * Returns 0, or -1 with err: ENOENT/EIO when it cannot be read, EINVAL for
 * YAML errors, a top level that is not a mapping, a key given twice, an
 * empty value or a nested mapping (messages carry path:line). */
int tide_cfg_read(const char *path, tide_cfg_items_t *out, tide_error_t *err);
void tide_cfg_free(tide_cfg_items_t *c);

#endif
