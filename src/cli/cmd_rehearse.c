/* `tide rehearse SERVICE` (POST /v1/services/NAME/rehearse) and `tide shadow`
 * (GET /v1/shadow; --enact: POST /v1/mode): a warm-up rehearsal now, and
 * what shadow mode would have done. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

/* The answer: printed (as JSON with --json), freed. Exit status. */
static int answer(json_t *res, const tide_remote_opts_t *ro, const tide_error_t *err,
                  void (*print)(const json_t *, const void *), const void *arg)
{
    if (!res)
        return tide_remote_fail(err);
    if (ro->json)
        tide_remote_print_json(res);
    else
        print(res, arg);
    json_decref(res);
    return 0;
}

static void print_requested(const json_t *res, const void *svc)
{
    (void)res;
    printf("rehearsal of %s requested\n", (const char *)svc);
}

static void rehearse_usage(FILE *f)
{
    fprintf(f, "usage: tide rehearse SERVICE [--server URL] [--token T] [--json]\n"
               "\n"
               "Ask for a warm-up rehearsal of SERVICE: tide starts one replica on free\n"
               "(idle or lendable) GPUs, measures its whole warm-up until healthy and stops\n"
               "it. The sample feeds the P99 warm-up of the reclaim lead; a rehearsal slower\n"
               "than the lead allowed counts in tide_rehearsals_slow_total (an alert in\n"
               "examples/prometheus/tide-rules.yml). `tide services SERVICE --json` shows\n"
               "the result (\"rehearsal\"). Admins only.\n"
               "\n"
               "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

static void shadow_usage(FILE *f)
{
    fprintf(f, "usage: tide shadow [--enact] [--server URL] [--token T] [--json]\n"
               "\n"
               "What a daemon in shadow mode (`tide serve --mode shadow`) would have done\n"
               "(GET /v1/shadow): GPU-hours lent, reclaims and their lead against the real\n"
               "rise, forecast error and learned margins, jobs started early, risk, and\n"
               "what the real backend did (nothing: submits, signals, cancels 0).\n"
               "\n"
               "options:\n"
               "      --enact       leave shadow mode now (POST /v1/mode, admins): the\n"
               "                    learned forecast is kept; what the shadow ran starts for real\n" TIDE_REMOTE_HELP
               TIDE_REMOTE_EXIT_HELP);
}

int tide_cmd_rehearse(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("rehearse", argc, argv, &ro, rehearse_usage);
    if (rc >= 0)
        return rc;
    if (optind >= argc)
        return tide_cli_usage_error("rehearse", "a service name is required");
    if (optind + 1 < argc)
        return tide_cli_usage_error("rehearse", "unexpected argument '%s'", argv[optind + 1]);
    const char *svc = argv[optind];
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    char path[512];
    tide_error_t err = {0};
    json_t *res = NULL;
    if (strchr(svc, '/') || strlen(svc) > 400)
        tide_errf(&err, TIDE_EINVAL, "'%s' is not a service name", svc);
    else {
        snprintf(path, sizeof path, "/v1/services/%s/rehearse", svc);
        res = tide_client_call(&c, "POST", path, NULL, NULL, &err);
    }
    tide_client_fini(&c);
    return answer(res, &ro, &err, print_requested, svc);
}

static void print_shadow(const json_t *j, const void *arg)
{
    (void)arg;
    const json_t *rc = json_object_get(j, "reclaims"), *fc = json_object_get(j, "forecast"),
                 *rk = json_object_get(j, "risk"), *be = json_object_get(j, "backend");
    printf("mode: %s\n", json_string_value(json_object_get(j, "mode")));
    if (!rc) {
        printf("no shadow period yet\n");
        return;
    }
    printf("would have lent:       %.2f GPU-hours in %lld leases\n",
           json_number_value(json_object_get(j, "lent_gpu_hours")),
           (long long)json_integer_value(json_object_get(j, "leases_granted")));
    printf("jobs started early:    %lld (on lent GPUs)\n",
           (long long)json_integer_value(json_object_get(j, "jobs_started_early")));
    printf("reclaims:              %lld notices, %lld met a real rise (lead mean %.0fs, min "
           "%.0fs), %lld without one\n",
           (long long)json_integer_value(json_object_get(rc, "notices")),
           (long long)json_integer_value(json_object_get(rc, "rises")),
           json_number_value(json_object_get(rc, "lead_mean_s")),
           json_number_value(json_object_get(rc, "lead_min_s")),
           (long long)json_integer_value(json_object_get(rc, "no_rise")));
    printf("forecast:              %lld checks, mean abs error %.3f, %lld under the sized demand\n",
           (long long)json_integer_value(json_object_get(fc, "checks")),
           json_number_value(json_object_get(fc, "mean_abs_error")),
           (long long)json_integer_value(json_object_get(fc, "under")));
    printf("risk:                  short %.0fs, %.0f requests unserved, %lld late returns\n",
           json_number_value(json_object_get(rk, "short_s")),
           json_number_value(json_object_get(rk, "unserved_requests")),
           (long long)json_integer_value(json_object_get(rk, "late_returns")));
    printf("real backend:          %lld submits, %lld signals, %lld cancels, %lld refused\n",
           (long long)json_integer_value(json_object_get(be, "submits")),
           (long long)json_integer_value(json_object_get(be, "signals")),
           (long long)json_integer_value(json_object_get(be, "cancels")),
           (long long)json_integer_value(json_object_get(be, "refused")));
}

int tide_cmd_shadow(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int enact = 0;
    int rc = tide_remote_args_flag("shadow", argc, argv, &ro, shadow_usage, "enact", &enact);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return tide_cli_usage_error("shadow", "unexpected argument '%s'", argv[optind]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    tide_error_t err = {0};
    json_t *res = NULL;
    if (enact) {
        json_t *body = json_pack("{s:s}", "mode", "enact");
        res = tide_client_call(&c, "POST", "/v1/mode", body, NULL, &err);
        json_decref(body);
        json_decref(res);
        res = NULL;
    }
    if (!err.code)
        res = tide_remote_get(&c, "/v1/shadow", &err);
    tide_client_fini(&c);
    return answer(res, &ro, &err, print_shadow, NULL);
}
