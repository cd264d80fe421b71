/* Small jansson helpers shared by every layer that writes JSON (the
 * simulator's summary, the reports, the daemon's API): numbers that are
 * always valid JSON (jansson refuses NaN and infinities). */
#ifndef TIDE_FORMATS_JSON_H
#define TIDE_FORMATS_JSON_H

#include <jansson.h>

#include "tide/types.h"

/* v as a JSON real; 0 when v is NaN or infinite. */
json_t *tide_json_real(double v);

/* v as a JSON number: null when v is NaN or infinite, an integer when v is
 * whole (and below 1e15 in magnitude), else a real. */
json_t *tide_json_num(double v);

/* tide_json_num of v rounded to `decimals` places (0..9). */
json_t *tide_json_round(double v, int decimals);

/* json_object_set_new(o, k, v): o takes v. */
void tide_json_set(json_t *o, const char *k, json_t *v);

/* The JSON document in DIR/NAME (summary.json, ...). The caller owns the
 * result. NULL with err: ENOENT the file is missing, EIO it cannot be
 * opened, EINVAL it is not JSON (the message names the line). */
json_t *tide_json_load_file(const char *dir, const char *name, tide_error_t *err);

#endif
