/* Private to usage.c and usage_report.c: usage.csv loaded into memory. */
#ifndef TIDE_SIM_USAGE_PRIV_H
#define TIDE_SIM_USAGE_PRIV_H

#include <stddef.h>

#include "formats/usage.h"

/* Interned strings: ids are dense (0, 1, ...), pointers stable. */
typedef struct strtab {
    char **v;
    size_t n, cap;
    int *slots;        /* open addressing: id + 1, 0 = empty */
    size_t scap;
} strtab_t;

int strtab_intern(strtab_t *s, const char *str);
int strtab_find(const strtab_t *s, const char *str); /* -1 if absent */
void strtab_free(strtab_t *s);

/* One usage.csv row. */
typedef struct urec {
    tide_time_t t;
    int policy, owner, type;   /* strtab ids */
    signed char kind, cls, state, tier;
    double gpu_s, cost;
} urec_t;

typedef struct udata {
    strtab_t str;
    urec_t *v;
    size_t n, cap;
    int policies[64];          /* strtab ids in order of appearance */
    int n_policies;
    tide_time_t end;           /* end of the run */
    int have_summary;
    int horizon_known;
} udata_t;

/* Load DIR/usage.csv (only `policy`'s rows when not NULL) and the run's end.
 * Returns 0 or -1 with err (see tide_usage_aggregate). */
int udata_load(const char *dir, const char *policy, udata_t *d, tide_error_t *err);
void udata_free(udata_t *d);

/* The owner key of a row: lost work is the policy's. */
const char *urec_owner(const udata_t *d, const urec_t *r);

#endif
