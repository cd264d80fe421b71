/* Engine snapshots (src/core/snap.c): every member of the snapshotted structs
 * is either written or deliberately left out (layout check); a snapshot
 * restores into an engine in the same state (same bytes, same decisions);
 * bytes of another version, layout or shape, truncated or damaged bytes are
 * refused with a message and never crash. The property test (test_property)
 * checks restored engines over random workloads under every policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/internal.h"
#include "engine_fixture.h"

static void test_layout_covered(void **state)
{
    (void)state;
    tide_error_t err = {0};
    int rc = tide__snapshot_layout_check(&err);
    if (rc == 1)
        skip(); /* this compiler cannot tell padding from members */
    if (rc != 0)
        fail_msg("%s", err.msg);
}

/* An engine with a service, demand, jobs running and queued, a node down. */
static ef_t *busy_engine(void)
{
    ef_t *f = ef_new("4x8", NULL);
    ef_service(f, "chat", 8, 10, 1, 120);
    ef_world(f);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    static char ids[6][8];
    static tide_job_spec_t specs[6];
    for (int i = 0; i < 6; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        specs[i] = ef_job(ids[i], 1 + i % 3, 8, 8, 1, 3600 * (i + 1));
        ef_in_push(&in, &n, &cap, ef_in_submit(60 * i, &specs[i]));
    }
    for (int k = 0; k < 24; k++)
        ef_in_push(&in, &n, &cap, ef_in_demand(3600 * k, 0, 5 + 10 * (k % 5)));
    ef_in_sort(in, n);
    ef_run(f, in, n, 20000, NULL, NULL);
    free(in);
    tide_event_t down = ef_ev(TIDE_EV_NODE_FAILED);
    down.node = 3;
    ef_step(f, 20060, &down, 1);
    return f;
}

static void test_round_trip(void **state)
{
    (void)state;
    ef_t *f = busy_engine();
    size_t n, n2;
    void *b = tide_engine_snapshot(f->e, &n);
    tide_error_t err = {0};
    tide_engine_t *e = tide_engine_restore(f->e, b, n, &err);
    if (!e)
        fail_msg("restore: %s", err.msg);
    assert_int_equal(tide_engine_check(e, &err), 0);
    void *b2 = tide_engine_snapshot(e, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    /* the same inspection answers */
    tide_stats_t s1, s2;
    tide_engine_stats(f->e, &s1);
    tide_engine_stats(e, &s2);
    assert_memory_equal(&s1.gpu_s, &s2.gpu_s, sizeof s1.gpu_s);
    assert_int_equal(s1.jobs_running, s2.jobs_running);
    assert_int_equal(tide_engine_jobs(e), 6);
    assert_int_equal(tide_engine_job_find(e, "j4"), tide_engine_job_find(f->e, "j4"));
    /* and the same decisions from here on */
    tide_actions_t a;
    tide_actions_init(&a);
    for (tide_time_t t = 20120; t < 40000; t += 600) {
        tide_event_t ev = ef_ev(TIDE_EV_DEMAND);
        ev.service = 0;
        ev.value = (double)(t % 7000) / 100.0;
        ef_step(f, t, &ev, 1);
        assert_int_equal(tide_engine_step(e, t, &ev, 1, &a, &err), 0);
        assert_int_equal(a.n, f->acts.n);
        for (size_t i = 0; i < a.n; i++)
            assert_true(ef_same_action(&a, i, &f->acts));
    }
    tide_actions_free(&a);
    tide_engine_destroy(e);
    free(b);
    free(b2);
    ef_free(f);
}

/* Jobs borrow their team's one name (no copy per job), before and after a
 * restore; ids are the engine's own copies. */
static void same_team_names(const tide_engine_t *e)
{
    tide_job_info_t a, b;
    assert_int_equal(tide_engine_job(e, 0, &a), 0);
    for (int h = 1; h < tide_engine_jobs(e); h++) {
        assert_int_equal(tide_engine_job(e, h, &b), 0);
        assert_string_equal(b.spec->team, "t");
        assert_ptr_equal(b.spec->team, a.spec->team);
        assert_ptr_not_equal(b.spec->id, a.spec->id);
    }
}

static void test_team_names_shared(void **state)
{
    (void)state;
    ef_t *f = busy_engine();
    same_team_names(f->e);
    size_t n;
    void *b = tide_engine_snapshot(f->e, &n);
    tide_error_t err = {0};
    tide_engine_t *e = tide_engine_restore(f->e, b, n, &err);
    if (!e)
        fail_msg("restore: %s", err.msg);
    same_team_names(e);
    tide_job_info_t j;
    assert_int_equal(tide_engine_job(e, tide_engine_job_find(e, "j3"), &j), 0);
    assert_string_equal(j.spec->id, "j3");
    tide_engine_destroy(e);
    free(b);
    ef_free(f);
}

static void expect_refused(const tide_engine_t *like, const void *b, size_t n, const char *what)
{
    tide_error_t err = {0};
    tide_engine_t *e = tide_engine_restore(like, b, n, &err);
    if (e)
        fail_msg("restored from %s", what);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "engine snapshot"));
}

static void test_refused(void **state)
{
    (void)state;
    ef_t *f = busy_engine();
    size_t n;
    unsigned char *b = tide_engine_snapshot(f->e, &n);
    unsigned char *c = malloc(n);
    /* another format version, another build's layout */
    memcpy(c, b, n);
    c[8] ^= 1;
    expect_refused(f->e, c, n, "another version");
    memcpy(c, b, n);
    c[16] ^= 1;
    expect_refused(f->e, c, n, "another layout");
    /* another shape: other policy, other services */
    tide_config_t cfg = ef_cfg("static");
    ef_t *g = ef_new("4x8", &cfg);
    ef_service(g, "chat", 8, 10, 1, 120);
    expect_refused(g->e, b, n, "another policy");
    ef_t *h = ef_new("4x8", NULL);
    expect_refused(h->e, b, n, "no services");
    ef_t *k = ef_new("2x8", NULL);
    ef_service(k, "chat", 8, 10, 1, 120);
    expect_refused(k->e, b, n, "another cluster");
    /* truncated anywhere */
    for (size_t cut = 0; cut < n; cut += cut < 256 ? 1 : 97)
        expect_refused(f->e, b, cut, "truncated bytes");
    /* trailing bytes */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    expect_refused(f->e, longer, n + 1, "trailing bytes");
    free(longer);
    /* damaged bytes: refused or restored, never a crash (ASan) */
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 300; i++) {
        memcpy(c, b, n);
        for (int j = 0; j < 4; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            c[x % n] ^= (unsigned char)(1 + (x >> 32) % 255);
        }
        tide_error_t err = {0};
        tide_engine_destroy(tide_engine_restore(f->e, c, n, &err));
    }
    free(c);
    free(b);
    ef_free(f);
    ef_free(g);
    ef_free(h);
    ef_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_covered),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_team_names_shared),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
