/* Gang placement: a gang lands whole on one high-speed domain (or on whole
 * free domains when it is larger), never partially; elastic jobs start at a
 * reduced width; GPU types are honoured; impossible gangs are rejected at
 * submit. Every step is followed by tide_engine_check and by a replay of the
 * actions against the engine's GPU owner table (engine_fixture.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

/* All GPUs of the cluster for training: `static` with no inference part. */
static ef_t *train_only(const char *cluster)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return ef_new(cluster, &cfg);
}

static const ef_act_t *start_of(const ef_t *f, int32_t h)
{
    const ef_act_t *a = ef_find(f, 0, TIDE_ACT_JOB_START, -1, h);
    if (!a)
        fail_msg("job %d never started", h);
    return a;
}

static void test_gang_of_8_on_one_node(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    /* take 4 GPUs of some node first so that the free GPUs are uneven */
    tide_job_spec_t small = ef_job("small", 2, 4, 4, 0, 36000);
    int32_t hs = ef_submit(f, 0, &small);
    tide_job_spec_t j = ef_job("one-node", 2, 8, 8, 0, 36000);
    int32_t h = ef_submit(f, 10, &j);
    const ef_act_t *a = start_of(f, h);
    assert_int_equal(a->t, 10);
    assert_int_equal(a->a.n_gpus, 8);
    assert_int_equal(a->a.width, 1);
    const int32_t *g = ef_gpus(f, a);
    for (int k = 0; k < 8; k++)
        assert_int_equal(g[k] / 8, g[0] / 8);
    /* not on the node the small job half fills */
    const ef_act_t *as = start_of(f, hs);
    assert_int_not_equal(ef_gpus(f, as)[0] / 8, g[0] / 8);
    /* the engine agrees: the job owns exactly these GPUs */
    int32_t own[64];
    assert_int_equal(ef_job_gpus(f, h, own), 8);
    tide_job_info_t ji = ef_info(f, h);
    assert_int_equal(ji.state, TIDE_JOB_RUNNING);
    assert_int_equal(ji.width, 1);
    ef_free(f);
}

static void test_each_gang_on_one_node(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t j = ef_job("three-gangs", 2, 24, 8, 0, 36000);
    int32_t h = ef_submit(f, 0, &j);
    const ef_act_t *a = start_of(f, h);
    assert_int_equal(a->a.n_gpus, 24);
    assert_int_equal(a->a.width, 3);
    const int32_t *g = ef_gpus(f, a);
    int nodes_used[4] = {0};
    for (int k = 0; k < 3; k++) {
        for (int x = 0; x < 8; x++)
            assert_int_equal(g[k * 8 + x] / 8, g[k * 8] / 8);
        nodes_used[g[k * 8] / 8]++;
    }
    for (int n = 0; n < 4; n++)
        assert_true(nodes_used[n] <= 1);
    ef_free(f);
}

static void test_gang_of_16_takes_two_whole_free_nodes(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t small = ef_job("small", 2, 2, 2, 0, 36000);
    int32_t hs = ef_submit(f, 0, &small);
    int busy_node = ef_gpus(f, start_of(f, hs))[0] / 8;
    tide_job_spec_t j = ef_job("big", 2, 16, 16, 0, 36000);
    int32_t h = ef_submit(f, 5, &j);
    const ef_act_t *a = start_of(f, h);
    assert_int_equal(a->a.n_gpus, 16);
    assert_int_equal(a->a.width, 1);
    const int32_t *g = ef_gpus(f, a);
    int per_node[4] = {0};
    for (int k = 0; k < 16; k++)
        per_node[g[k] / 8]++;
    int whole = 0;
    for (int n = 0; n < 4; n++) {
        assert_true(per_node[n] == 0 || per_node[n] == 8);
        whole += per_node[n] == 8;
    }
    assert_int_equal(whole, 2);
    assert_int_equal(per_node[busy_node], 0);
    ef_free(f);
}

static void test_job_that_cannot_fit_holds_nothing(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t big = ef_job("big", 2, 24, 8, 0, 3600);
    int32_t hb = ef_submit(f, 0, &big);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, hb), 1);
    /* 8 GPUs left: a non-elastic 2-gang job and a 16-GPU gang cannot start */
    tide_job_spec_t two = ef_job("two-gangs", 2, 16, 8, 0, 3600);
    tide_job_spec_t wide = ef_job("wide-gang", 3, 16, 16, 0, 3600);
    int32_t h2 = ef_submit(f, 10, &two);
    int32_t hw = ef_submit(f, 20, &wide);
    for (tide_time_t t = 60; t <= 1800; t += 60) {
        ef_tick(f, t);
        for (int g = 0; g < 32; g++) {
            int32_t own;
            int k = tide_engine_gpu_owner(f->e, g, &own);
            assert_false(k == 1 && (own == h2 || own == hw));
        }
    }
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, h2), 0);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, hw), 0);
    assert_int_equal(ef_info(f, h2).state, TIDE_JOB_QUEUED);
    assert_int_equal(ef_info(f, hw).state, TIDE_JOB_QUEUED);
    assert_int_equal(ef_info(f, h2).width, 0);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.queue_jobs, 2);
    assert_int_equal(st.queue_gpus, 32);
    assert_int_equal(st.gpus_now[TIDE_C_NONE][TIDE_S_IDLE], 8);
    /* once the big job finishes, the first waiting job starts whole */
    tide_event_t fin = ef_ev(TIDE_EV_JOB_FINISHED);
    fin.job = hb;
    ef_step(f, 3600, &fin, 1);
    const ef_act_t *a = ef_find(f, 0, TIDE_ACT_JOB_START, -1, h2);
    assert_non_null(a);
    assert_int_equal(a->t, 3600);
    assert_int_equal(a->a.n_gpus, 16);
    ef_free(f);
}

/* Fragmented free GPUs: 20 free in total (4 on each of nodes 0-2, node 3
 * whole) but only one 8-GPU gang fits; a job needing two gangs must get
 * nothing (the gang placed on node 3 is given back), and stays queued. */
static void test_fragmented_free_gpus_no_partial_job(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    /* six 4-GPU jobs fill nodes 0-2 (two per node) */
    static const char *ids[6] = {"q0", "q1", "q2", "q3", "q4", "q5"};
    tide_job_spec_t q[6];
    tide_event_t ev[6];
    for (int i = 0; i < 6; i++) {
        q[i] = ef_job(ids[i], 2, 4, 4, 0, 36000);
        ev[i] = ef_ev(TIDE_EV_JOB_SUBMIT);
        ev[i].job_spec = &q[i];
    }
    ef_step(f, 0, ev, 6);
    int per_node[4] = {0};
    int32_t first_on[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 6; i++) {
        int32_t h = tide_engine_job_find(f->e, ids[i]), g[64];
        assert_int_equal(ef_job_gpus(f, h, g), 4);
        int n = g[0] / 8;
        per_node[n]++;
        if (first_on[n] < 0)
            first_on[n] = h;
    }
    assert_int_equal(per_node[3], 0);
    /* one job per busy node finishes: 4 GPUs free on each, node 3 whole */
    tide_event_t fin[3];
    int nf = 0;
    for (int n = 0; n < 4; n++)
        if (per_node[n] == 2) {
            fin[nf] = ef_ev(TIDE_EV_JOB_FINISHED);
            fin[nf++].job = first_on[n];
        }
    assert_int_equal(nf, 3);
    ef_step(f, 5, fin, 3);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.gpus_now[TIDE_C_NONE][TIDE_S_IDLE], 20);

    tide_job_spec_t two = ef_job("two-gangs", 2, 16, 8, 0, 3600);
    int32_t h = ef_submit(f, 10, &two);
    ef_ticks(f, 600, 60);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, h), 0);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_QUEUED);
    int32_t held[64];
    assert_int_equal(ef_job_gpus(f, h, held), 0);
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.gpus_now[TIDE_C_NONE][TIDE_S_IDLE], 20);
    /* an elastic job of the same shape starts on the one gang that fits */
    tide_job_spec_t el = ef_job("elastic", 2, 16, 8, 1, 3600);
    int32_t he = ef_submit(f, 700, &el);
    const ef_act_t *a = ef_find(f, 0, TIDE_ACT_JOB_START, -1, he);
    assert_non_null(a);
    assert_int_equal(a->a.width, 1);
    assert_int_equal(ef_gpus(f, a)[0] / 8, 3);
    ef_free(f);
}

static void test_elastic_job_starts_at_reduced_width(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t blocker = ef_job("blocker", 2, 16, 8, 0, 3600);
    int32_t hb = ef_submit(f, 0, &blocker);
    tide_job_spec_t el = ef_job("elastic", 2, 32, 8, 1, 36000);
    int32_t he = ef_submit(f, 10, &el);
    const ef_act_t *a = start_of(f, he);
    assert_int_equal(a->a.width, 2);
    assert_int_equal(a->a.n_gpus, 16);
    const int32_t *g = ef_gpus(f, a);
    for (int k = 0; k < 2; k++)
        for (int x = 0; x < 8; x++)
            assert_int_equal(g[k * 8 + x] / 8, g[k * 8] / 8);
    tide_job_info_t ji = ef_info(f, he);
    assert_int_equal(ji.state, TIDE_JOB_RUNNING);
    assert_int_equal(ji.width, 2);
    assert_int_equal(ji.dp_max, 4);
    /* the GPUs coming back let it grow to full width */
    tide_event_t fin = ef_ev(TIDE_EV_JOB_FINISHED);
    fin.job = hb;
    ef_step(f, 3600, &fin, 1);
    const ef_act_t *r = ef_find(f, 0, TIDE_ACT_JOB_RESIZE, -1, he);
    assert_non_null(r);
    assert_int_equal(r->a.width, 4);
    assert_int_equal(r->a.n_gpus, 32);
    assert_int_equal(ef_info(f, he).width, 4);
    ef_free(f);
}

static void test_elastic_job_below_dp_min_waits(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t blocker = ef_job("blocker", 2, 24, 8, 0, 3600);
    ef_submit(f, 0, &blocker);
    tide_job_spec_t el = ef_job("elastic", 2, 32, 8, 2, 36000); /* needs >= 2 gangs */
    int32_t he = ef_submit(f, 10, &el);
    ef_ticks(f, 600, 60);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, he), 0);
    assert_int_equal(ef_info(f, he).state, TIDE_JOB_QUEUED);
    int32_t own[64];
    assert_int_equal(ef_job_gpus(f, he, own), 0);
    ef_free(f);
}

static void test_gpu_types(void **state)
{
    (void)state;
    ef_t *f = train_only("8x8:H100,4x8:A100");
    uint32_t a100 = 0, h100 = 0;
    tide_error_t err = {0};
    assert_int_equal(tide_cluster_type_mask(f->c, "A100", &a100, &err), 0);
    assert_int_equal(tide_cluster_type_mask(f->c, "H100", &h100, &err), 0);
    tide_node_info_t ni;
    tide_cluster_node(f->c, 8, &ni);
    int first_a100 = ni.first_gpu; /* GPUs 64..95 are the A100s */
    assert_int_equal(first_a100, 64);

    tide_job_spec_t ja = ef_job("on-a100", 2, 16, 8, 0, 36000);
    ja.gpu_types = a100;
    int32_t ha = ef_submit(f, 0, &ja);
    const ef_act_t *a = start_of(f, ha);
    for (int k = 0; k < a->a.n_gpus; k++)
        assert_true(ef_gpus(f, a)[k] >= first_a100);

    /* an elastic A100 job gets only the two A100 nodes left, though 64
     * H100 GPUs are free */
    tide_job_spec_t je = ef_job("elastic-a100", 2, 40, 8, 1, 36000);
    je.gpu_types = a100;
    int32_t he = ef_submit(f, 10, &je);
    a = start_of(f, he);
    assert_int_equal(a->a.width, 2);
    for (int k = 0; k < a->a.n_gpus; k++)
        assert_true(ef_gpus(f, a)[k] >= first_a100);

    /* the A100s are full: another A100 job waits while H100s stay free */
    tide_job_spec_t jw = ef_job("waits", 2, 8, 8, 0, 3600);
    jw.gpu_types = a100;
    int32_t hw = ef_submit(f, 20, &jw);
    ef_ticks(f, 600, 60);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, hw), 0);
    assert_int_equal(ef_info(f, hw).state, TIDE_JOB_QUEUED);

    /* an H100 job lands on H100 only; an untyped one anywhere free */
    tide_job_spec_t jh = ef_job("on-h100", 2, 8, 8, 0, 3600);
    jh.gpu_types = h100;
    int32_t hh = ef_submit(f, 700, &jh);
    a = start_of(f, hh);
    for (int k = 0; k < a->a.n_gpus; k++)
        assert_true(ef_gpus(f, a)[k] < first_a100);
    ef_free(f);
}

/* Submitting `spec` alone at t must fail with EINVAL and leave no trace. */
static void expect_rejected(ef_t *f, tide_time_t t, const tide_job_spec_t *spec)
{
    tide_event_t ev = ef_ev(TIDE_EV_JOB_SUBMIT);
    ev.job_spec = spec;
    tide_error_t err = {0};
    int rc = ef_step_rc(f, t, &ev, 1, &err);
    if (rc == 0)
        fail_msg("job %s (gpus %d, gang %d, dp_min %d; 0 = all gangs) was accepted", spec->id,
                 spec->gpus, spec->gang_gpus, spec->dp_min);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_true(strlen(err.msg) > 0);
    assert_int_equal(tide_engine_job_find(f->e, spec->id), -1);
    assert_int_equal(ef_count(f, f->last, TIDE_ACT_JOB_START, -1, -1), 0);
}

static void test_impossible_gang_rejected_at_submit(void **state)
{
    (void)state;
    {
        ef_t *f = train_only("2x4");
        tide_job_spec_t j = ef_job("bigger-than-cluster", 1, 16, 16, 0, 3600);
        expect_rejected(f, 0, &j);
        tide_job_spec_t j6 = ef_job("gang6-on-4s", 1, 6, 6, 0, 3600);
        expect_rejected(f, 1, &j6);
        /* dp_min x gang more than the cluster */
        tide_job_spec_t jd = ef_job("too-wide", 1, 12, 4, 3, 3600);
        expect_rejected(f, 2, &jd);
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        assert_int_equal(st.jobs_submitted, 0);
        ef_free(f);
    }
    {
        ef_t *f = train_only("4x8");
        tide_job_spec_t j12 = ef_job("gang12", 2, 12, 12, 0, 3600);
        expect_rejected(f, 0, &j12);
        tide_job_spec_t j40 = ef_job("gang40", 2, 40, 40, 0, 3600);
        expect_rejected(f, 1, &j40);
        ef_free(f);
    }
}

/* A bad submit in a batch does not stop the others (engine.h: "the engine
 * state is unchanged by the bad event, the others are applied"). */
static void test_bad_submit_does_not_block_batch(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t bad = ef_job("bad", 2, 12, 12, 0, 3600);
    tide_job_spec_t good = ef_job("good", 2, 8, 8, 0, 3600);
    tide_event_t ev[2] = {ef_ev(TIDE_EV_JOB_SUBMIT), ef_ev(TIDE_EV_JOB_SUBMIT)};
    ev[0].job_spec = &bad;
    ev[1].job_spec = &good;
    tide_error_t err = {0};
    assert_int_equal(ef_step_rc(f, 0, ev, 2, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_engine_job_find(f->e, "bad"), -1);
    int32_t h = tide_engine_job_find(f->e, "good");
    assert_true(h >= 0);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, h), 1);
    assert_string_equal(f->viol, "");
    ef_free(f);
}

/* A gang restricted to a GPU type the cluster has too few of can never be
 * placed; it must be refused at submit like any other impossible gang. */
static void test_impossible_typed_gang_rejected_at_submit(void **state)
{
    (void)state;
    ef_t *f = train_only("8x8:H100,1x8:A100");
    uint32_t a100 = 0;
    tide_error_t err = {0};
    assert_int_equal(tide_cluster_type_mask(f->c, "A100", &a100, &err), 0);
    /* a 16-GPU gang on A100: there is only one 8-GPU A100 node */
    tide_job_spec_t j = ef_job("a100-gang16", 1, 16, 16, 0, 3600);
    j.gpu_types = a100;
    expect_rejected(f, 0, &j);
    /* two 8-GPU A100 gangs at once (dp_min 2): the same */
    tide_job_spec_t j2 = ef_job("a100-2x8", 1, 16, 8, 2, 3600);
    j2.gpu_types = a100;
    expect_rejected(f, 1, &j2);
    ef_free(f);
}

/* tide_job_spec_fits (what the API checks before it accepts a job) and the
 * engine's submit agree, case by case, on a cluster of mixed domain sizes. */
static void test_spec_fits_matches_submit(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8:H100/2,4x4:A100,1x8:A100"); /* H100 16; A100 4,4,4,4,8 */
    uint32_t a100 = 0, h100 = 0;
    tide_error_t err = {0};
    assert_int_equal(tide_cluster_type_mask(f->c, "A100", &a100, &err), 0);
    assert_int_equal(tide_cluster_type_mask(f->c, "H100", &h100, &err), 0);
    static const struct {
        int gang, dp_min, type; /* type: 0 any, 1 H100, 2 A100 */
        int fits;
        const char *field;
    } cases[] = {
        {8, 2, 1, 1, NULL},       /* two gangs in the 16-GPU H100 domain */
        {8, 3, 1, 0, "dp_min:"},  /* a third does not fit */
        {16, 1, 0, 1, NULL},      /* inside the H100 domain */
        {16, 1, 2, 0, "gang_gpus:"}, /* no A100 domain that large */
        {32, 1, 0, 0, "gang_gpus:"}, /* not enough whole domains of one size */
        {3, 6, 2, 1, NULL},       /* 1 per 4-GPU domain + 2 in the 8-GPU one */
        {3, 7, 2, 0, "dp_min:"},  /* 21 <= 24 A100 GPUs, yet only 6 gangs fit */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char id[32];
        snprintf(id, sizeof id, "case%zu", i);
        int g = cases[i].gang, n = cases[i].dp_min;
        tide_job_spec_t j = ef_job(id, 1, g * n, g, n, 3600);
        j.gpu_types = cases[i].type == 1 ? h100 : cases[i].type == 2 ? a100 : 0;
        tide_job_spec_t norm = j;
        assert_int_equal(tide_job_spec_normalize(&norm, &err), 0);
        err = (tide_error_t){0};
        int rc = tide_job_spec_fits(&norm, f->c, &err);
        if ((rc == 0) != cases[i].fits)
            fail_msg("%s: tide_job_spec_fits %d (%s)", id, rc, err.msg);
        if (!cases[i].fits) {
            assert_int_equal(err.code, TIDE_EINVAL);
            assert_non_null(strstr(err.msg, cases[i].field));
            expect_rejected(f, (tide_time_t)i, &j);
        } else {
            tide_event_t ev = ef_ev(TIDE_EV_JOB_SUBMIT);
            ev.job_spec = &j;
            assert_int_equal(ef_step_rc(f, (tide_time_t)i, &ev, 1, &err), 0);
            assert_true(tide_engine_job_find(f->e, id) >= 0);
        }
    }
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gang_of_8_on_one_node),
        cmocka_unit_test(test_each_gang_on_one_node),
        cmocka_unit_test(test_gang_of_16_takes_two_whole_free_nodes),
        cmocka_unit_test(test_job_that_cannot_fit_holds_nothing),
        cmocka_unit_test(test_fragmented_free_gpus_no_partial_job),
        cmocka_unit_test(test_elastic_job_starts_at_reduced_width),
        cmocka_unit_test(test_elastic_job_below_dp_min_waits),
        cmocka_unit_test(test_gpu_types),
        cmocka_unit_test(test_impossible_gang_rejected_at_submit),
        cmocka_unit_test(test_bad_submit_does_not_block_batch),
        cmocka_unit_test(test_impossible_typed_gang_rejected_at_submit),
        cmocka_unit_test(test_spec_fits_matches_submit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
