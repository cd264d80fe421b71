/* The --inject parser and the fault schedule (src/sim/inject.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/inject.h"

/* Parse one list that must be valid. */
static void parse_ok(tide_inject_t *inj, const char *list)
{
    tide_error_t err = {0, ""};
    if (tide_inject_parse(inj, list, &err) != 0)
        fail_msg("'%s' refused: %s", list, err.msg);
}

/* A list that must be refused with a message holding `item` (quoted) and `hint`. */
static void parse_bad(const char *list, const char *item, const char *hint)
{
    tide_inject_t inj;
    tide_inject_init(&inj);
    tide_error_t err = {0, ""};
    if (tide_inject_parse(&inj, list, &err) == 0)
        fail_msg("'%s' accepted", list);
    assert_int_equal(err.code, TIDE_EINVAL);
    char q[300];
    snprintf(q, sizeof q, "'%s'", item);
    if (!strstr(err.msg, q) || !strstr(err.msg, hint))
        fail_msg("'%s': message '%s' lacks %s or '%s'", list, err.msg, q, hint);
    assert_int_equal(inj.n, 0);
    tide_inject_free(&inj);
}

static void good_items(void **state)
{
    (void)state;
    tide_inject_t inj;
    tide_inject_init(&inj);
    parse_ok(&inj, "burst:2x@36h+2h, burst:chat:0.5X@1d+90m,node-fail:3@50h+4h");
    parse_ok(&inj, "node-fail:1@7200,rank-fail:pre:train@7b@30h,rank-fail-rate:2/day");
    parse_ok(&inj, "rank-fail-rate:0.5/h,ctl-down@80h+1h,storage:20GBps");
    assert_int_equal(inj.n, 9);
    const tide_fault_t *f = inj.v;
    assert_int_equal(f[0].kind, TIDE_FAULT_BURST);
    assert_null(f[0].target);
    assert_float_equal(f[0].factor, 2.0, 0);
    assert_int_equal(f[0].at, 36 * 3600);
    assert_int_equal(f[0].dur, 2 * 3600);
    assert_string_equal(f[0].text, "burst:2x@36h+2h");
    assert_string_equal(f[1].target, "chat");
    assert_float_equal(f[1].factor, 0.5, 0);
    assert_int_equal(f[1].at, 86400);
    assert_int_equal(f[1].dur, 5400);
    assert_string_equal(f[1].text, "burst:chat:0.5X@1d+90m"); /* trimmed */
    assert_int_equal(f[2].kind, TIDE_FAULT_NODE_FAIL);
    assert_int_equal(f[2].count, 3);
    assert_int_equal(f[2].at, 50 * 3600);
    assert_int_equal(f[2].dur, 4 * 3600);
    assert_int_equal(f[3].count, 1);
    assert_int_equal(f[3].at, 7200);
    assert_int_equal(f[3].dur, 0); /* never recovers */
    assert_int_equal(f[4].kind, TIDE_FAULT_RANK_FAIL);
    assert_string_equal(f[4].target, "pre:train@7b"); /* up to the last '@' */
    assert_int_equal(f[4].at, 30 * 3600);
    assert_int_equal(f[5].kind, TIDE_FAULT_RANK_FAIL_RATE);
    assert_float_equal(f[5].per_day, 2.0, 0);
    assert_float_equal(f[6].per_day, 12.0, 1e-12);
    assert_float_equal(tide_inject_rank_rate(&inj), 14.0, 1e-12);
    assert_int_equal(f[7].kind, TIDE_FAULT_CTL_DOWN);
    assert_int_equal(f[7].at, 80 * 3600);
    assert_int_equal(f[7].dur, 3600);
    assert_int_equal(f[8].kind, TIDE_FAULT_STORAGE);
    assert_float_equal(tide_inject_storage_gbps(&inj), 20.0, 0);
    /* adjacent outages are fine; so are other units of storage */
    tide_inject_t b;
    tide_inject_init(&b);
    parse_ok(&b, "ctl-down@1h+1h,ctl-down@2h+30m,storage:7.5gb/s");
    assert_float_equal(tide_inject_storage_gbps(&b), 7.5, 0);
    assert_float_equal(tide_inject_storage_gbps(NULL), 0, 0);
    tide_inject_free(&b);
    tide_inject_free(&inj);
    assert_int_equal(inj.n, 0);
    tide_inject_free(NULL);
}

static void bad_items(void **state)
{
    (void)state;
    parse_bad("burst:2@x", "burst:2@x", "must end in x");
    parse_bad("burst:2x@x", "burst:2x@x", "bad time 'x'");
    parse_bad("burst:2x@36h", "burst:2x@36h", "needs a duration");
    parse_bad("burst:2x@36h+0", "burst:2x@36h+0", "> 0");
    parse_bad("burst:2x@-1h+1h", "burst:2x@-1h+1h", "bad time");
    parse_bad("burst:0x@1h+1h", "burst:0x@1h+1h", "factor");
    parse_bad("burst:nanx@1h+1h", "burst:nanx@1h+1h", "factor");
    parse_bad("burst:2000x@1h+1h", "burst:2000x@1h+1h", "factor");
    parse_bad("burst::2x@1h+1h", "burst::2x@1h+1h", "empty service");
    parse_bad("burst:2x", "burst:2x", "expected burst:");
    parse_bad("burst:chat:@1h+1h", "burst:chat:@1h+1h", "missing factor");
    parse_bad("burst:2x@1h+2y", "burst:2x@1h+2y", "bad duration '2y'");
    parse_bad("node-fail:0@1h", "node-fail:0@1h", "node count '0'");
    parse_bad("node-fail:-1@1h", "node-fail:-1@1h", "node count");
    parse_bad("node-fail:two@1h", "node-fail:two@1h", "node count");
    parse_bad("node-fail:3", "node-fail:3", "expected node-fail:");
    parse_bad("node-fail:3@", "node-fail:3@", "bad time ''");
    parse_bad("rank-fail:@1h", "rank-fail:@1h", "empty job id");
    parse_bad("rank-fail:j1@1h+1h", "rank-fail:j1@1h+1h", "no +duration");
    parse_bad("rank-fail:j1", "rank-fail:j1", "expected rank-fail:");
    parse_bad("rank-fail-rate:2", "rank-fail-rate:2", "R/day");
    parse_bad("rank-fail-rate:2/week", "rank-fail-rate:2/week", "unknown rate unit");
    parse_bad("rank-fail-rate:-2/day", "rank-fail-rate:-2/day", "rate");
    parse_bad("rank-fail-rate:1e9/day", "rank-fail-rate:1e9/day", "rate");
    parse_bad("ctl-down@1h", "ctl-down@1h", "needs a duration");
    parse_bad("ctl-down:1h+1h", "ctl-down:1h+1h", "unknown fault 'ctl-down'");
    parse_bad("storage:0", "storage:0", "GB/s > 0");
    parse_bad("storage:fast", "storage:fast", "GB/s");
    parse_bad("storage:", "storage:", "GB/s");
    parse_bad("bogus@1h", "bogus@1h", "unknown fault 'bogus'");
    parse_bad("burst:2x@1h+1h,,node-fail:1@1h", "burst:2x@1h+1h,,node-fail:1@1h", "empty item");
    parse_bad("", "", "empty item");
    parse_bad("storage:1,storage:2", "storage:2", "given twice");
    parse_bad("ctl-down@1h+2h,ctl-down@2h+1h", "ctl-down@2h+1h", "overlaps 'ctl-down@1h+2h'");
    parse_bad("burst:2x@1h\t\n+1h", "burst:2x@1h??+1h", "control character");
    /* a long item is cut in the message */
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    memcpy(big, "rank-fail:", 10);
    tide_inject_t inj;
    tide_inject_init(&inj);
    tide_error_t err = {0, ""};
    assert_int_equal(tide_inject_parse(&inj, big, &err), -1);
    assert_non_null(strstr(err.msg, "...': expected rank-fail:"));
    assert_true(strlen(err.msg) < 300);
    /* an error leaves what was parsed before untouched */
    parse_ok(&inj, "storage:10");
    assert_int_equal(tide_inject_parse(&inj, "burst:2x@1h+1h,storage:5", &err), -1);
    assert_int_equal(inj.n, 1);
    assert_int_equal(tide_inject_parse(&inj, NULL, &err), -1);
    tide_inject_free(&inj);
}

static void check_against_workload(void **state)
{
    (void)state;
    tide_service_spec_t svcs[1] = {{.name = "chat", .gpus_per_replica = 8, .replica_rps = 1}};
    tide_job_spec_t jobs[1] = {{.id = "j1", .team = "t", .priority = 2, .gpus = 8}};
    tide_inject_t inj;
    tide_inject_init(&inj);
    parse_ok(&inj, "burst:chat:2x@1h+1h,rank-fail:j1@1h,node-fail:4@1h,burst:3x@0+1h");
    tide_error_t err = {0, ""};
    assert_int_equal(tide_inject_check(&inj, svcs, 1, jobs, 1, 4, &err), 0);
    assert_int_equal(tide_inject_check(&inj, NULL, 0, NULL, 0, 0, &err), 0);
    assert_int_equal(tide_inject_check(&inj, svcs, 1, jobs, 1, 3, &err), -1);
    assert_string_equal(err.msg, "--inject: 'node-fail:4@1h': 4 nodes but the cluster has 3");
    tide_inject_free(&inj);
    parse_ok(&inj, "burst:embed:2x@1h+1h");
    assert_int_equal(tide_inject_check(&inj, svcs, 1, jobs, 1, 4, &err), -1);
    assert_string_equal(err.msg, "--inject: 'burst:embed:2x@1h+1h': unknown service 'embed'");
    tide_inject_free(&inj);
    parse_ok(&inj, "rank-fail:j2@1h");
    assert_int_equal(tide_inject_check(&inj, svcs, 1, jobs, 1, 4, &err), -1);
    assert_string_equal(err.msg, "--inject: 'rank-fail:j2@1h': unknown job 'j2'");
    tide_inject_free(&inj);
}

static size_t count_kind(const tide_schedule_t *s, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->v[i].kind == kind;
    return n;
}

static void schedule_order_and_clipping(void **state)
{
    (void)state;
    tide_inject_t inj;
    tide_inject_init(&inj);
    parse_ok(&inj, "burst:2x@10h+2h,node-fail:2@12h+1h,rank-fail:j1@12h,ctl-down@12h+20h,"
                   "burst:3x@20h+10h,node-fail:1@30h,storage:5,ctl-down@2h+1h,burst:2x@40h+1h");
    tide_schedule_t s = {0};
    tide_inject_schedule(&inj, 86400, 1, &s);
    /* burst 10h..12h; at 12h: burst end, then ctl down, node fail, rank fail; node recover
     * 13h; burst 20h (end 30h dropped: past the horizon); ctl up clipped to the horizon;
     * node-fail at 30h and burst at 40h are past the horizon */
    static const struct {
        tide_time_t t;
        int kind, fault;
    } want[] = {
        {2 * 3600, TIDE_FIRE_CTL_DOWN, 7},     {3 * 3600, TIDE_FIRE_CTL_UP, 7},
        {10 * 3600, TIDE_FIRE_BURST_START, 0}, {12 * 3600, TIDE_FIRE_BURST_END, 0},
        {12 * 3600, TIDE_FIRE_CTL_DOWN, 3},    {12 * 3600, TIDE_FIRE_NODE_FAIL, 1},
        {12 * 3600, TIDE_FIRE_RANK_FAIL, 2},   {13 * 3600, TIDE_FIRE_NODE_RECOVER, 1},
        {20 * 3600, TIDE_FIRE_BURST_START, 4}, {86400, TIDE_FIRE_CTL_UP, 3},
    };
    assert_int_equal(s.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].t != want[i].t || s.v[i].kind != want[i].kind || s.v[i].fault != want[i].fault)
            fail_msg("firing %zu: t=%lld kind=%d fault=%d, want t=%lld kind=%d fault=%d", i,
                     (long long)s.v[i].t, s.v[i].kind, s.v[i].fault, (long long)want[i].t,
                     want[i].kind, want[i].fault);
    }
    assert_true(s.v[6].u < 0); /* an explicit rank failure */
    tide_schedule_free(&s);
    tide_schedule_free(&s);
    tide_schedule_free(NULL);
    tide_inject_free(&inj);
}

static void rate_is_poisson_and_seeded(void **state)
{
    (void)state;
    tide_inject_t inj;
    tide_inject_init(&inj);
    parse_ok(&inj, "rank-fail-rate:24/day,node-fail:1@1h");
    tide_time_t horizon = 100 * 86400;
    tide_schedule_t a = {0}, b = {0}, c = {0};
    tide_inject_schedule(&inj, horizon, 42, &a);
    tide_inject_schedule(&inj, horizon, 42, &b);
    tide_inject_schedule(&inj, horizon, 43, &c);
    /* same seed: the same schedule */
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.v, b.v, a.n * sizeof *a.v);
    /* about 2400 arrivals (sd ~49) */
    size_t n = count_kind(&a, TIDE_FIRE_RANK_FAIL);
    assert_in_range(n, 2150, 2650);
    /* sorted, whole seconds in [0, horizon), draws in [0, 1) */
    for (size_t i = 0; i < a.n; i++) {
        assert_true(a.v[i].t >= 0 && a.v[i].t < horizon);
        if (i)
            assert_true(a.v[i - 1].t <= a.v[i].t);
        if (a.v[i].kind == TIDE_FIRE_RANK_FAIL)
            assert_true(a.v[i].u >= 0 && a.v[i].u < 1);
    }
    /* gaps look exponential: mean ~3600 s, and about 1/e of them longer than that */
    double sum = 0;
    size_t longer = 0, k = 0;
    tide_time_t prev = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (a.v[i].kind != TIDE_FIRE_RANK_FAIL)
            continue;
        tide_time_t gap = a.v[i].t - prev;
        sum += (double)gap;
        longer += gap > 3600;
        prev = a.v[i].t;
        k++;
    }
    assert_in_range((long)(sum / (double)k), 3300, 3900);
    assert_in_range((long)(1000 * longer / k), 320, 420);
    /* another seed: other times, other node draws */
    assert_true(c.n != a.n || memcmp(c.v, a.v, a.n * sizeof *a.v) != 0);
    tide_schedule_free(&a);
    tide_schedule_free(&b);
    tide_schedule_free(&c);
    /* a zero rate, no horizon: nothing */
    tide_inject_free(&inj);
    parse_ok(&inj, "rank-fail-rate:0/day");
    tide_inject_schedule(&inj, horizon, 1, &a);
    assert_int_equal(a.n, 0);
    tide_inject_schedule(NULL, horizon, 1, &a);
    assert_int_equal(a.n, 0);
    tide_schedule_free(&a);
    tide_inject_free(&inj);
}

static void names_and_rng(void **state)
{
    (void)state;
    assert_string_equal(tide_fault_kind_name(TIDE_FAULT_BURST), "burst");
    assert_string_equal(tide_fault_kind_name(TIDE_FAULT_RANK_FAIL_RATE), "rank-fail-rate");
    assert_string_equal(tide_fault_kind_name(99), "unknown");
    uint64_t s1 = 5, s2 = 5;
    for (int i = 0; i < 100; i++) {
        double u = tide_inject_uniform(&s1);
        assert_true(u >= 0 && u < 1);
        assert_true(u == tide_inject_uniform(&s2));
    }
}

/* rack-fail, power-fail, partition: parsed, checked against the cluster,
 * scheduled (recoveries and partition ends before starts at equal times). */
static void failure_domain_items(void **state)
{
    (void)state;
    tide_inject_t inj;
    tide_inject_init(&inj);
    parse_ok(&inj, "rack-fail:busiest@6h+2h,power-fail:1@14h,partition:4-6|9@10h+1h");
    assert_int_equal(inj.n, 3);
    assert_int_equal(inj.v[0].kind, TIDE_FAULT_RACK_FAIL);
    assert_int_equal(inj.v[0].domain, -1);
    assert_int_equal(inj.v[0].at, 6 * 3600);
    assert_int_equal(inj.v[0].dur, 2 * 3600);
    assert_int_equal(inj.v[1].kind, TIDE_FAULT_POWER_FAIL);
    assert_int_equal(inj.v[1].domain, 1);
    assert_int_equal(inj.v[1].dur, 0);
    assert_int_equal(inj.v[2].kind, TIDE_FAULT_PARTITION);
    assert_int_equal(inj.v[2].n_nodes, 4);
    static const int want[] = {4, 5, 6, 9};
    for (int k = 0; k < 4; k++)
        assert_int_equal(inj.v[2].nodes[k], want[k]);
    tide_error_t err = {0, ""};
    assert_int_equal(tide_inject_check_domains(&inj, 4, 2, 10, &err), 0);
    assert_int_equal(tide_inject_check_domains(&inj, 4, 1, 10, &err), -1);
    assert_non_null(strstr(err.msg, "power domain 1 but the cluster has 1"));
    assert_int_equal(tide_inject_check_domains(&inj, 4, 2, 9, &err), -1);
    assert_non_null(strstr(err.msg, "node 9 but the cluster has 9"));
    tide_schedule_t sc = {0};
    tide_inject_schedule(&inj, 86400, 1, &sc);
    assert_int_equal(sc.n, 5); /* the power failure never recovers */
    assert_int_equal(sc.v[0].kind, TIDE_FIRE_DOMAIN_FAIL);
    assert_int_equal(sc.v[1].kind, TIDE_FIRE_DOMAIN_RECOVER);
    assert_int_equal(sc.v[2].kind, TIDE_FIRE_PARTITION_START);
    assert_int_equal(sc.v[3].kind, TIDE_FIRE_PARTITION_END);
    assert_int_equal(sc.v[3].t, 11 * 3600);
    assert_int_equal(sc.v[4].kind, TIDE_FIRE_DOMAIN_FAIL);
    tide_schedule_free(&sc);
    tide_inject_free(&inj);
    parse_bad("rack-fail:x@1h", "rack-fail:x@1h", "'busiest'");
    parse_bad("rack-fail:1", "rack-fail:1", "rack-fail:R@T[+D]");
    parse_bad("partition:3@1h", "partition:3@1h", "needs a duration");
    parse_bad("partition:5-2@1h+1h", "partition:5-2@1h+1h", "A <= B");
    parse_bad("partition:1|@1h+1h", "partition:1|@1h+1h", "trailing");
    parse_bad("partition:@1h+1h", "partition:@1h+1h", "partition:NODES@T+D");
    assert_string_equal(tide_fault_kind_name(TIDE_FAULT_PARTITION), "partition");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_items),
        cmocka_unit_test(bad_items),
        cmocka_unit_test(check_against_workload),
        cmocka_unit_test(schedule_order_and_clipping),
        cmocka_unit_test(rate_is_poisson_and_seeded),
        cmocka_unit_test(names_and_rng),
        cmocka_unit_test(failure_domain_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
