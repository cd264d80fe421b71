/* Unit tests: services.csv, demand.csv and jobs.csv readers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/workload_io.h"

#define SVC_HDR "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n"
#define JOB_HDR "job_id,submit_s,team,priority,gpus,duration_s\n"

static tide_services_t *svcs_str(const char *s, const tide_read_opts_t *o, tide_error_t *err)
{
    return tide_services_read_mem(s, strlen(s), "s.csv", o, err);
}

static tide_demand_t *dem_str(const char *s, const tide_services_t *sv, const tide_read_opts_t *o,
                              tide_error_t *err)
{
    return tide_demand_read_mem(s, strlen(s), "d.csv", sv, o, err);
}

static tide_jobs_t *jobs_str(const char *s, const tide_read_opts_t *o, tide_error_t *err)
{
    return tide_jobs_read_mem(s, strlen(s), "j.csv", o, err);
}

static void check_msg(const tide_error_t *err, const char *needle)
{
    if (!strstr(err->msg, needle))
        fail_msg("message '%s' lacks '%s'", err->msg, needle);
}

static void svc_bad(const char *in, const tide_read_opts_t *o, int code, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_services_t *s = svcs_str(in, o, &err);
    if (s) {
        tide_services_free(s);
        fail_msg("services input should be rejected:\n%s", in);
    }
    assert_int_equal(err.code, code);
    check_msg(&err, needle);
}

static void job_bad(const char *in, const tide_read_opts_t *o, int code, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_jobs_t *j = jobs_str(in, o, &err);
    if (j) {
        tide_jobs_free(j);
        fail_msg("jobs input should be rejected:\n%s", in);
    }
    assert_int_equal(err.code, code);
    check_msg(&err, needle);
}

/* ------------------------------------------------------------ services */

#define SVC_HDR_SLO "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,slo_target\n"
#define SVC_HDR_STAGE "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,stage_s\n"

static void test_services_good(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100,2x8:A100", &err);
    assert_non_null(c);
    tide_read_opts_t o = {.cluster = c};
    const char *in = "# services\n"
                     "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas,"
                     "gpu_types,comment\n"
                     "chat,8,12.5,2,90,10,H100|A100,\"free, text\"\n"
                     "embed,1,300,0,30.4,,A100,\n"
                     "code,4,5,1,0.6,0,,\n";
    tide_services_t *s = svcs_str(in, &o, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 3);
    assert_int_equal(s->skipped, 0);
    assert_string_equal(s->v[0].name, "chat");
    assert_int_equal(s->v[0].gpus_per_replica, 8);
    assert_true(s->v[0].replica_rps == 12.5);
    assert_int_equal(s->v[0].min_replicas, 2);
    assert_int_equal(s->v[0].max_replicas, 10);
    assert_int_equal(s->v[0].warmup_s, 90);
    assert_int_equal(s->v[0].gpu_types, 3);
    assert_int_equal(s->v[0].fixed_replicas, 0);
    assert_string_equal(s->v[1].name, "embed");
    assert_int_equal(s->v[1].max_replicas, 0); /* empty = unlimited */
    assert_int_equal(s->v[1].warmup_s, 30);    /* rounded */
    assert_int_equal(s->v[1].gpu_types, 2);
    assert_int_equal(s->v[2].warmup_s, 1);
    assert_int_equal(s->v[2].gpu_types, 0);
    assert_int_equal(tide_services_find(s, "embed"), 1);
    assert_int_equal(tide_services_find(s, "code"), 2);
    assert_int_equal(tide_services_find(s, "nope"), -1);
    tide_services_free(s);

    /* without a cluster: any names accepted, mask 0 */
    s = svcs_str(in, NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->v[0].gpu_types, 0);
    tide_services_free(s);

    /* columns in any order, required only; empty file body is fine */
    s = svcs_str("warmup_s,min_replicas,replica_rps,gpus_per_replica,service\n"
                 "60,1,2.5,2,x\n",
                 NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 1);
    assert_string_equal(s->v[0].name, "x");
    assert_int_equal(s->v[0].gpus_per_replica, 2);
    assert_int_equal(s->v[0].warmup_s, 60);
    assert_true(s->v[0].slo_target == 0); /* absent: the engine's default */
    tide_services_free(s);

    /* slo_target: a fraction per service, empty = default */
    s = svcs_str(SVC_HDR_SLO "a,1,2,0,60,0.99\nb,1,2,0,60,\n", NULL, &err);
    assert_non_null(s);
    assert_true(s->v[0].slo_target == 0.99);
    assert_true(s->v[1].slo_target == 0);
    tide_services_free(s);
    svc_bad(SVC_HDR_SLO "a,1,2,0,60,1\n", NULL, TIDE_EINVAL, "fraction in (0, 1)");
    svc_bad(SVC_HDR_SLO "a,1,2,0,60,x\n", NULL, TIDE_EINVAL, "slo_target");
    /* stage_s: seconds of the warm-up that need no GPU, 0..warmup_s, empty = 0 */
    s = svcs_str(SVC_HDR_STAGE "a,1,2,0,60,45\nb,1,2,0,60,\nc,1,2,0,60,60\n", NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->v[0].stage_s, 45);
    assert_int_equal(s->v[1].stage_s, 0);
    assert_int_equal(s->v[2].stage_s, 60);
    tide_services_free(s);
    svc_bad(SVC_HDR_STAGE "a,1,2,0,60,61\n", NULL, TIDE_EINVAL, "must be <= warmup_s (60)");
    svc_bad(SVC_HDR_STAGE "a,1,2,0,60,-1\n", NULL, TIDE_EINVAL, "stage_s");
    s = svcs_str(SVC_HDR, NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 0);
    tide_services_free(s);
    tide_services_free(NULL);
    tide_cluster_destroy(c);
}

/* The optional latency columns: parsed into ->latency, 0 where absent or empty. */
static void test_services_latency(void **state)
{
    (void)state;
    tide_error_t err = {0, ""};
    tide_services_t *s = svcs_str("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,"
                                  "ttft_target_s,tbt_target_s,prompt_tokens,decode_knee,"
                                  "queue_max_s\n"
                                  "a,8,4,1,60,1.5,0.05,2048,,10\nb,1,9,0,0,,,,,\n",
                                  NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    assert_float_equal(s->latency[0].ttft_target_s, 1.5, 1e-12);
    assert_float_equal(s->latency[0].tbt_target_s, 0.05, 1e-12);
    assert_float_equal(s->latency[0].prompt_tokens, 2048, 1e-12);
    assert_float_equal(s->latency[0].decode_knee, 0, 0);
    assert_float_equal(s->latency[0].queue_max_s, 10, 1e-12);
    assert_float_equal(s->latency[0].decode_tps, 0, 0);
    assert_float_equal(s->latency[1].ttft_target_s, 0, 0);
    tide_services_free(s);
    s = svcs_str(SVC_HDR "a,1,1,1,60\n", NULL, &err); /* no latency column at all */
    assert_non_null(s);
    assert_float_equal(s->latency[0].output_tokens, 0, 0);
    tide_services_free(s);
    svc_bad("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,decode_tps\na,1,1,1,60,-3\n",
            NULL, TIDE_EINVAL, "column 'decode_tps': must be >= 0");
    svc_bad("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,tbt_target_s\na,1,1,1,60,x\n",
            NULL, TIDE_EINVAL, "column 'tbt_target_s': expected a finite number");
}

static void test_services_bad(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100", &err);
    tide_read_opts_t o = {.cluster = c};
    svc_bad("service,gpus_per_replica,replica_rps,min_replicas\na,1,1,1\n", NULL, TIDE_EINVAL,
            "s.csv:1: missing required column 'warmup_s'");
    svc_bad(SVC_HDR "a,1,1e10,1,60\n", NULL, TIDE_EINVAL,
            "s.csv:2: column 'replica_rps': must be at most 1e+09");
    svc_bad(SVC_HDR "a,1,1,1,0x3c\n", NULL, TIDE_EINVAL, "column 'warmup_s': expected seconds");
    svc_bad(SVC_HDR "a,0,1,1,60\n", NULL, TIDE_EINVAL,
            "s.csv:2: column 'gpus_per_replica': must be >= 1 (got 0)");
    svc_bad(SVC_HDR "a,x,1,1,60\n", NULL, TIDE_EINVAL,
            "s.csv:2: column 'gpus_per_replica': expected a whole number, got 'x'");
    svc_bad(SVC_HDR "a,1.5,1,1,60\n", NULL, TIDE_EINVAL, "column 'gpus_per_replica'");
    svc_bad(SVC_HDR "a,1,0,1,60\n", NULL, TIDE_EINVAL, "s.csv:2: column 'replica_rps': must be > 0");
    svc_bad(SVC_HDR "a,1,nan,1,60\n", NULL, TIDE_EINVAL, "column 'replica_rps': expected a finite");
    svc_bad(SVC_HDR "a,1,1,-1,60\n", NULL, TIDE_EINVAL, "column 'min_replicas': must be >= 0");
    svc_bad(SVC_HDR "a,1,1,1,15m\n", NULL, TIDE_EINVAL,
            "s.csv:2: column 'warmup_s': expected seconds as a plain number");
    svc_bad(SVC_HDR "a,1,1,1,-3\n", NULL, TIDE_EINVAL, "column 'warmup_s': must be >= 0");
    svc_bad(SVC_HDR "a,1,1,1,\n", NULL, TIDE_EINVAL, "s.csv:2: column 'warmup_s': missing value");
    svc_bad(SVC_HDR ",1,1,1,1\n", NULL, TIDE_EINVAL, "s.csv:2: column 'service': missing value");
    svc_bad(SVC_HDR "a,1,1,1,1\n\nb,1,1,1,1\n# x\na,2,2,2,2\n", NULL, TIDE_EEXIST,
            "s.csv:6: column 'service': duplicate service 'a' (first defined on line 2)");
    svc_bad("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas\n"
            "a,1,1,3,1,2\n",
            NULL, TIDE_EINVAL, "column 'max_replicas': must be 0 (unlimited) or >= min_replicas");
    svc_bad("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,gpu_types\n"
            "a,1,1,3,1,B200\n",
            &o, TIDE_ENOENT, "s.csv:2: column 'gpu_types': unknown GPU type 'B200'");
    svc_bad(SVC_HDR "a,1,1,1\n", NULL, TIDE_EINVAL, "s.csv:2: 4 fields but the header has 5");
    svc_bad(SVC_HDR "a,1,1,1,\"60\n", NULL, TIDE_EINVAL, "unterminated quoted field");
    svc_bad("", NULL, TIDE_EINVAL, "s.csv:1: no header row");
    tide_cluster_destroy(c);
}

static void test_services_skip(void **state)
{
    (void)state;
    tide_error_t err;
    tide_read_opts_t o = {.skip_bad = 1};
    tide_services_t *s = svcs_str(SVC_HDR "a,1,1,1,1\n"
                                          "b,0,1,1,1\n"
                                          "c,1,1\n"
                                          "a,1,1,1,1\n"
                                          "d,2,2,2,2\n",
                                  &o, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    assert_string_equal(s->v[1].name, "d");
    assert_int_equal(s->skipped, 3);
    check_msg(&s->first_skip, "s.csv:3: column 'gpus_per_replica'");
    tide_services_free(s);
    /* structural errors are never skipped */
    svc_bad(SVC_HDR "a,1,1,1,1\nb,\"x\"y,1,1,1\n", &o, TIDE_EINVAL, "after the closing quote");
}

/* -------------------------------------------------------------- demand */

static void test_demand(void **state)
{
    (void)state;
    tide_error_t err;
    tide_services_t *s = svcs_str(SVC_HDR "chat,8,10,1,60\nembed,1,100,0,10\n", NULL, &err);
    assert_non_null(s);
    const char *in = "time_s,service,rps\n"
                     "0,embed,50\n"
                     "0,chat,10\n"
                     "300,chat,20\n"
                     "299.6,embed,0\n" /* rounds to 300 */
                     "300,chat,25\n"   /* same time: kept after the previous row */
                     "600,embed,1.5\n";
    tide_demand_t *d = dem_str(in, s, NULL, &err);
    assert_non_null(d);
    assert_int_equal(d->n, 6);
    const struct {
        tide_time_t t;
        int svc;
        double rps;
    } want[] = {{0, 0, 10}, {0, 1, 50}, {300, 0, 20}, {300, 0, 25}, {300, 1, 0}, {600, 1, 1.5}};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(d->v[i].t, want[i].t);
        assert_int_equal(d->v[i].service, want[i].svc);
        assert_true(d->v[i].rps == want[i].rps);
    }
    tide_demand_free(d);
    tide_demand_free(NULL);

    struct {
        const char *in;
        int code;
        const char *msg;
    } bad[] = {
        {"time_s,service,rps\n0,zzz,1\n", TIDE_ENOENT,
         "d.csv:2: column 'service': unknown service 'zzz'"},
        {"time_s,service,rps\n600,chat,1\n0,embed,1\n300,chat,1\n", TIDE_EINVAL,
         "d.csv:4: column 'time_s': time 300 is before the previous row of service 'chat' "
         "(time 600 on line 2)"},
        {"time_s,service,rps\n0,chat,-1\n", TIDE_EINVAL, "d.csv:2: column 'rps': must be >= 0"},
        {"time_s,service,rps\n0,chat,inf\n", TIDE_EINVAL, "column 'rps': expected a finite"},
        {"time_s,service,rps\n-5,chat,1\n", TIDE_EINVAL, "d.csv:2: column 'time_s': must be >= 0"},
        {"time_s,service,rps\n1e300,chat,1\n", TIDE_EINVAL, "column 'time_s': too large"},
        {"time_s,service\n0,chat\n", TIDE_EINVAL, "d.csv:1: missing required column 'rps'"},
        {"time_s,service,rps\n0,,1\n", TIDE_EINVAL, "column 'service': missing value"},
        /* bounded: at most TIDE_MAX_RPS (1e9), plain decimal seconds only */
        {"time_s,service,rps\n0,chat,1e12\n", TIDE_EINVAL, "d.csv:2: column 'rps': must be at most 1e+09"},
        {"time_s,service,rps\n0x10,chat,1\n", TIDE_EINVAL,
         "d.csv:2: column 'time_s': expected seconds as a plain number"},
        {"time_s,service,rps\n0,chat,0x10\n", TIDE_EINVAL, "column 'rps': expected a finite"},
        {"time_s,service,rps\n0,chat,nan\n", TIDE_EINVAL, "column 'rps': expected a finite"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.code = 0;
        err.msg[0] = 0;
        d = dem_str(bad[i].in, s, NULL, &err);
        if (d)
            fail_msg("demand input %zu should be rejected", i);
        assert_int_equal(err.code, bad[i].code);
        check_msg(&err, bad[i].msg);
    }
    assert_null(dem_str("time_s,service,rps\n", NULL, NULL, &err));
    check_msg(&err, "no services");

    tide_read_opts_t o = {.skip_bad = 1};
    d = dem_str("time_s,service,rps\n0,chat,1\n0,zzz,2\n600,embed,3\n300,embed,4\n", s, &o, &err);
    assert_non_null(d);
    assert_int_equal(d->n, 2);
    assert_int_equal(d->skipped, 2);
    check_msg(&d->first_skip, "d.csv:3:");
    tide_demand_free(d);
    tide_services_free(s);
}

/* ---------------------------------------------------------------- jobs */

static void test_jobs_good(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100,2x8:A100", &err);
    tide_read_opts_t o = {.cluster = c};
    const char *in = JOB_HDR "j1,100,research,P2,16,3600\n"
                             "j2,0,prod,1,4,60.4\n"
                             "j3,100,research,p3,12,10\n"
                             "j4,50,x,3,6,1\n";
    tide_jobs_t *j = jobs_str(in, &o, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 4);
    /* sorted by submit_s, file order among ties */
    assert_string_equal(j->v[0].id, "j2");
    assert_string_equal(j->v[1].id, "j4");
    assert_string_equal(j->v[2].id, "j1");
    assert_string_equal(j->v[3].id, "j3");
    const tide_job_spec_t *a = &j->v[2];
    assert_string_equal(a->team, "research");
    assert_int_equal(a->priority, 2);
    assert_int_equal(a->gpus, 16);
    assert_int_equal(a->gang_gpus, 8);
    assert_int_equal(a->dp_min, 2);
    assert_int_equal(a->submit_s, 100);
    assert_int_equal(a->duration_s, 3600);
    assert_int_equal(a->ckpt_interval_s, 1800);
    assert_int_equal(a->ckpt_s, 60);
    assert_int_equal(a->restore_s, 120);
    assert_int_equal(a->gpu_types, 0);
    assert_int_equal(j->v[0].gang_gpus, 4);
    assert_int_equal(j->v[0].dp_min, 1);
    assert_int_equal(j->v[0].priority, 1);
    assert_int_equal(j->v[0].duration_s, 60);
    assert_int_equal(j->v[1].gang_gpus, 6); /* gpus <= 8: one gang */
    assert_int_equal(j->v[3].gang_gpus, 4); /* 12 GPUs: gcd(12, 8) */
    assert_int_equal(j->v[3].dp_min, 3);
    assert_int_equal(j->v[3].priority, 3);
    tide_jobs_free(j);
    tide_jobs_free(NULL);

    in = "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,"
         "ckpt_s,restore_s,gpu_types\n"
         "e1,7200,t,2,32,86400,8,1,900,30,45,A100\n"
         "e2,0,t,2,32,86400,,,,,,\n"
         "e3,0,t,2,32,86400,16,,600,0,0,H100|A100\n";
    j = jobs_str(in, &o, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 3);
    a = &j->v[2];
    assert_string_equal(a->id, "e1");
    assert_int_equal(a->gang_gpus, 8);
    assert_int_equal(a->dp_min, 1);
    assert_int_equal(a->ckpt_interval_s, 900);
    assert_int_equal(a->ckpt_s, 30);
    assert_int_equal(a->restore_s, 45);
    assert_int_equal(a->gpu_types, 2);
    a = &j->v[0];
    assert_string_equal(a->id, "e2");
    assert_int_equal(a->gang_gpus, 8);
    assert_int_equal(a->dp_min, 4);
    assert_int_equal(a->ckpt_interval_s, 1800);
    assert_int_equal(a->ckpt_s, 60);
    assert_int_equal(a->restore_s, 120);
    a = &j->v[1];
    assert_int_equal(a->gang_gpus, 16);
    assert_int_equal(a->dp_min, 2);
    assert_int_equal(a->ckpt_s, 0);
    assert_int_equal(a->gpu_types, 3);
    tide_jobs_free(j);
    tide_cluster_destroy(c);
}

static void test_jobs_bad(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100", &err);
    tide_read_opts_t o = {.cluster = c};
#define EXT "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,gpu_types\n"
    job_bad("job_id,submit_s,team,priority,gpus\nj,0,t,1,1\n", NULL, TIDE_EINVAL,
            "j.csv:1: missing required column 'duration_s'");
    job_bad(JOB_HDR "j,0,t,P0,8,10\n", NULL, TIDE_EINVAL,
            "j.csv:2: column 'priority': expected 1, 2, 3 or P1, P2, P3");
    job_bad(JOB_HDR "j,0,t,4,8,10\n", NULL, TIDE_EINVAL, "column 'priority'");
    job_bad(JOB_HDR "j,0,t,1,0,10\n", NULL, TIDE_EINVAL, "j.csv:2: column 'gpus': must be >= 1");
    job_bad(JOB_HDR "j,0,t,1,-8,10\n", NULL, TIDE_EINVAL, "column 'gpus': must be >= 1 (got -8)");
    job_bad(JOB_HDR "j,0,t,1,99999999999,10\n", NULL, TIDE_EINVAL, "column 'gpus': must be <=");
    job_bad(JOB_HDR "j,0,t,1,8,0\n", NULL, TIDE_EINVAL,
            "j.csv:2: column 'duration_s': must be at least 1 second");
    job_bad(JOB_HDR "j,-1,t,1,8,10\n", NULL, TIDE_EINVAL, "column 'submit_s': must be >= 0");
    job_bad(JOB_HDR "j,0x10,t,1,8,10\n", NULL, TIDE_EINVAL,
            "j.csv:2: column 'submit_s': expected seconds as a plain number");
    job_bad(JOB_HDR "j,0,t,1,8,0x10\n", NULL, TIDE_EINVAL, "column 'duration_s': expected seconds");
    job_bad(JOB_HDR "j,0,,1,8,10\n", NULL, TIDE_EINVAL, "column 'team': missing value");
    job_bad(JOB_HDR "\"a\nb\",0,t,1,8,10\n", NULL, TIDE_EINVAL,
            "j.csv:2: column 'job_id': control character (byte 0x0a) in a name");
    job_bad(JOB_HDR "j,0,t,1,8,10\nk,0,t,1,8,10\n\nj,5,t,1,8,10\n", NULL, TIDE_EEXIST,
            "j.csv:5: column 'job_id': duplicate job id 'j' (first defined on line 2)");
    job_bad(EXT "j,0,t,1,8,10,3,,,\n", NULL, TIDE_EINVAL,
            "j.csv:2: column 'gang_gpus': 3 does not divide gpus (8)");
    job_bad(EXT "j,0,t,1,8,10,16,,,\n", NULL, TIDE_EINVAL, "column 'gang_gpus': must be <= gpus (8)");
    job_bad(EXT "j,0,t,1,8,10,0,,,\n", NULL, TIDE_EINVAL, "column 'gang_gpus': must be >= 1");
    job_bad(EXT "j,0,t,1,16,10,4,0,,\n", NULL, TIDE_EINVAL, "column 'dp_min': must be >= 1");
    job_bad(EXT "j,0,t,1,16,10,4,5,,\n", NULL, TIDE_EINVAL,
            "column 'dp_min': must be <= gpus / gang_gpus = 4 (got 5)");
    job_bad(EXT "j,0,t,1,16,10,4,1,0,\n", NULL, TIDE_EINVAL,
            "column 'ckpt_interval_s': must be at least 1 second");
    job_bad(EXT "j,0,t,1,16,10,4,1,60,TPU\n", &o, TIDE_ENOENT,
            "j.csv:2: column 'gpu_types': unknown GPU type 'TPU'");
    job_bad(JOB_HDR "j,0,t,1,8,10,extra\n", NULL, TIDE_EINVAL,
            "j.csv:2: 7 fields but the header has 6 columns");
#undef EXT
    tide_cluster_destroy(c);
}

/* Jobs of one team share one copy of its name; ids are each their own. */
static void test_jobs_team_shared(void **state)
{
    (void)state;
    tide_error_t err;
    tide_jobs_t *j = jobs_str(JOB_HDR "a,0,red,1,8,10\n"
                                      "b,1,blue,1,8,10\n"
                                      "c,2,red,2,8,10\n",
                              NULL, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 3);
    assert_string_equal(j->v[0].team, "red");
    assert_string_equal(j->v[1].team, "blue");
    assert_ptr_equal(j->v[0].team, j->v[2].team);
    assert_ptr_not_equal(j->v[0].team, j->v[1].team);
    assert_string_equal(j->v[2].id, "c");
    tide_jobs_free(j);
}

static void test_jobs_skip(void **state)
{
    (void)state;
    tide_error_t err;
    tide_read_opts_t o = {.skip_bad = 1};
    tide_jobs_t *j = jobs_str(JOB_HDR "a,10,t,1,8,10\n"
                                      "b,0,t,9,8,10\n"
                                      "c,0,t,1,8\n"
                                      "a,0,t,1,8,10\n"
                                      "d,5,t,2,8,10\n",
                              &o, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 2);
    assert_string_equal(j->v[0].id, "d");
    assert_string_equal(j->v[1].id, "a");
    assert_int_equal(j->skipped, 3);
    check_msg(&j->first_skip, "j.csv:3: column 'priority'");
    tide_jobs_free(j);
}

/* --------------------------------------------------------------- files */

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide_wio_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sp[256], dp[256], jp[256];
    snprintf(sp, sizeof sp, "%s/services.csv", dir);
    snprintf(dp, sizeof dp, "%s/demand.csv", dir);
    snprintf(jp, sizeof jp, "%s/jobs.csv", dir);
    write_file(sp, SVC_HDR "chat,8,10,1,60\r\n");
    write_file(dp, "time_s,service,rps\r\n0,chat,5\r\n300,chat,7\r\n");
    write_file(jp, JOB_HDR "j1,0,t,P1,8,3600\r\nj2,0,t,P3,8,bad\r\n");

    tide_error_t err;
    tide_services_t *s = tide_services_read_file(sp, NULL, &err);
    assert_non_null(s);
    assert_int_equal(s->n, 1);
    tide_demand_t *d = tide_demand_read_file(dp, s, NULL, &err);
    assert_non_null(d);
    assert_int_equal(d->n, 2);
    assert_int_equal(d->v[1].t, 300);
    assert_true(d->v[1].rps == 7);
    tide_demand_free(d);
    tide_services_free(s);

    assert_null(tide_jobs_read_file(jp, NULL, &err));
    char want[300];
    snprintf(want, sizeof want, "%s:3: column 'duration_s': expected seconds", jp);
    check_msg(&err, want);
    tide_read_opts_t o = {.skip_bad = 1};
    tide_jobs_t *j = tide_jobs_read_file(jp, &o, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 1);
    assert_int_equal(j->skipped, 1);
    tide_jobs_free(j);

    unlink(sp);
    unlink(dp);
    unlink(jp);
    assert_null(tide_jobs_read_file(jp, NULL, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_null(tide_services_read_file(sp, NULL, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_services_good), cmocka_unit_test(test_services_bad),
        cmocka_unit_test(test_services_latency),
        cmocka_unit_test(test_services_skip), cmocka_unit_test(test_demand),
        cmocka_unit_test(test_jobs_good),     cmocka_unit_test(test_jobs_bad),
        cmocka_unit_test(test_jobs_skip),     cmocka_unit_test(test_jobs_team_shared),     cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
