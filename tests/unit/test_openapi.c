/* The OpenAPI description (docs/openapi.json, served at /openapi.json)
 * against the routes table: every route is in it with its method, every
 * operation in it is a route, each has an operationId and a 2xx response,
 * and every {param} of a path is declared. (Its validity as OpenAPI 3 is
 * checked by a real validator: tests/e2e/openapi_validate.sh.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "http/router.h"

static json_t *spec(void)
{
    json_error_t je;
    json_t *d = json_loads(tide_daemon_openapi(), 0, &je);
    if (!d)
        fail_msg("docs/openapi.json: line %d: %s", je.line, je.text);
    return d;
}

static void lower(const char *m, char *out, size_t n)
{
    size_t i = 0;
    for (; m[i] && i + 1 < n; i++)
        out[i] = (char)(m[i] >= 'A' && m[i] <= 'Z' ? m[i] + 32 : m[i]);
    out[i] = '\0';
}

static void every_route_is_described(void **state)
{
    (void)state;
    json_t *d = spec();
    assert_string_equal(json_string_value(json_object_get(d, "openapi")), "3.0.3");
    json_t *paths = json_object_get(d, "paths");
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    assert_true(n > 20);
    for (size_t i = 0; i < n; i++) {
        char m[16];
        lower(r[i].method, m, sizeof m);
        json_t *op = json_object_get(json_object_get(paths, r[i].pattern), m);
        if (!op)
            fail_msg("route %s %s is not in docs/openapi.json", r[i].method, r[i].pattern);
        assert_non_null(json_object_get(op, "operationId"));
        /* public routes need no token, the others say so */
        json_t *sec = json_object_get(op, "security");
        assert_true(json_is_array(sec));
        assert_int_equal(json_array_size(sec) == 0, r[i].role == TIDE_ROLE_PUBLIC);
        /* the audit kind of a write route is its x-tide-audit */
        const char *ak = json_string_value(json_object_get(op, "x-tide-audit"));
        if ((ak == NULL) != (r[i].audit == NULL) || (ak && strcmp(ak, r[i].audit)))
            fail_msg("%s %s: x-tide-audit %s, the route's audit kind %s", r[i].method,
                     r[i].pattern, ak ? ak : "(none)", r[i].audit ? r[i].audit : "(none)");
        int ok2xx = 0;
        const char *code;
        json_t *v;
        json_object_foreach(json_object_get(op, "responses"), code, v) ok2xx |= code[0] == '2';
        if (!ok2xx)
            fail_msg("%s %s: no 2xx response", r[i].method, r[i].pattern);
        /* each {name} of the pattern is a declared path parameter */
        for (const char *p = strchr(r[i].pattern, '{'); p; p = strchr(p + 1, '{')) {
            const char *e = strchr(p, '}');
            int found = 0;
            size_t k;
            json_t *prm;
            json_array_foreach(json_object_get(op, "parameters"), k, prm)
                found |= !strcmp(json_string_value(json_object_get(prm, "in")), "path") &&
                         strlen(json_string_value(json_object_get(prm, "name"))) == (size_t)(e - p - 1) &&
                         !strncmp(json_string_value(json_object_get(prm, "name")), p + 1, (size_t)(e - p - 1));
            if (!found)
                fail_msg("%s %s: path parameter %.*s not declared", r[i].method, r[i].pattern,
                         (int)(e - p - 1), p + 1);
        }
    }
    json_decref(d);
}

static void every_operation_is_a_route(void **state)
{
    (void)state;
    json_t *d = spec();
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(d, "paths"), path, item) {
        const char *m;
        json_t *op;
        json_object_foreach(item, m, op) {
            int found = 0;
            for (size_t i = 0; i < n; i++)
                found |= !strcmp(r[i].pattern, path) && !strcasecmp(r[i].method, m);
            if (!found)
                fail_msg("docs/openapi.json describes %s %s, which no route serves", m, path);
        }
    }
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_route_is_described),
        cmocka_unit_test(every_operation_is_a_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
