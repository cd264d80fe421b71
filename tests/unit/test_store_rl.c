/* The RL trajectory ledger's rows (src/store/rl.c, migration 5): runs need
 * a submitted job and are registered once; pushes are idempotent per
 * trajectory id and refuse stale, future and conflicting ones; a step
 * consumes the oldest fresh batch once (a retry lists the same batch), drops
 * what went stale, and refuses a short queue without writing; a rolled
 * back transaction leaves nothing and a committed one survives re-open. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "util/util.h"

typedef struct fx {
    char dir[64];
    char path[128];
    tide_store_t *s;
} fx_t;

static tide_store_t *open_ok(const char *path)
{
    tide_error_t err = {0};
    tide_store_t *s = tide_store_open(path, &err);
    if (!s)
        fail_msg("open %s: %s", path, err.msg);
    return s;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-rl-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
    f->s = open_ok(f->path);
    tide_job_spec_t sp = {.id = "j1", .team = "t", .priority = 2, .gpus = 8, .gang_gpus = 8,
                          .dp_min = 1, .duration_s = 3600};
    tide_store_job_t j = {.spec = sp, .submitted_s = 5, .updated_s = 5};
    tide_error_t err = {0};
    assert_int_equal(tide_store_job_insert(f->s, &j, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    tide_store_close(f->s);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

static tide_rl_outcome_t push(tide_store_t *s, const char *id, int64_t v)
{
    tide_store_rl_traj_t t = {.id = id, .policy_version = v, .payload = "{\"x\":1}"};
    tide_rl_outcome_t o = TIDE_RL_OUTCOMES;
    int64_t stored = -1, trainer = -1;
    tide_error_t err = {0};
    if (tide_store_rl_push(s, "j1", &t, &o, &stored, &trainer, &err) < 0)
        fail_msg("push %s: %s", id, err.msg);
    return o;
}

typedef struct batch {
    char ids[16][16];
    int64_t v[16];
    int n;
} batch_t;

static void batch_row(void *ctx, const char *id, int64_t version, const char *payload)
{
    batch_t *b = ctx;
    assert_true(b->n < 16);
    assert_string_equal(payload, "{\"x\":1}");
    snprintf(b->ids[b->n], sizeof b->ids[0], "%s", id);
    b->v[b->n++] = version;
}

/* Take step k; returns 0 or the error code. */
static int step(tide_store_t *s, int64_t k, batch_t *b, int *dup)
{
    memset(b, 0, sizeof *b);
    int64_t queued;
    tide_error_t err = {0};
    return tide_store_rl_step(s, "j1", k, batch_row, b, dup, &queued, &err) < 0 ? (int)err.code : 0;
}

static tide_store_rl_run_t run(tide_store_t *s)
{
    tide_store_rl_run_t r;
    tide_error_t err = {0};
    if (tide_store_rl_run_get(s, "j1", &r, &err) < 0)
        fail_msg("run: %s", err.msg);
    return r;
}

static void test_register(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    assert_int_equal(tide_store_rl_run_create(f->s, "nope", 1, 2, 9, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", -1, 2, 9, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 0, 9, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_store_rl_run_get(f->s, "j1", &(tide_store_rl_run_t){0}, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 2, 9, &err), 1);
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 2, 10, &err), 0); /* a retry */
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 3, 2, 10, &err), -1);
    assert_int_equal(err.code, TIDE_EEXIST);
    tide_store_rl_run_t r = run(f->s);
    assert_int_equal(r.max_staleness, 1);
    assert_int_equal(r.batch_size, 2);
    assert_int_equal(r.step, 0);
    assert_int_equal(r.created_s, 9);
    /* a push to a job without a run */
    tide_store_rl_traj_t t = {.id = "a", .policy_version = 0};
    tide_rl_outcome_t o;
    int64_t sv, tv;
    assert_int_equal(tide_store_rl_push(f->s, "nope", &t, &o, &sv, &tv, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
}

/* An RL job submitted with a spec: its run is named by the RL job (agent),
 * whose trainer (agent-trainer) is the job in the table. */
static void test_register_rl_job(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_job_spec_t sp = {.id = "agent-trainer", .team = "t", .priority = 2, .gpus = 8,
                          .gang_gpus = 8, .dp_min = 1, .duration_s = 3600};
    tide_store_job_t j = {.spec = sp, .submitted_s = 5, .updated_s = 5};
    assert_int_equal(tide_store_job_insert(f->s, &j, &err), 0);
    assert_int_equal(tide_store_rl_run_create(f->s, "agent", 2, 64, 9, &err), 1);
    assert_int_equal(tide_store_rl_run_create(f->s, "agent", 2, 64, 9, &err), 0);
    /* only the trainer's suffix names an RL job: a prefix of a job id does not */
    assert_int_equal(tide_store_rl_run_create(f->s, "agent-tr", 2, 64, 9, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_store_rl_run_create(f->s, "j", 2, 64, 9, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
}

static void test_push_idempotent(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 2, 0, &err), 1);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_DUPLICATE);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_DUPLICATE);
    assert_int_equal(push(f->s, "a", 1), TIDE_RL_CONFLICT);
    assert_int_equal(push(f->s, "b", 1), TIDE_RL_AHEAD); /* the trainer is at version 0 */
    tide_store_rl_run_t r = run(f->s);
    assert_int_equal(r.accepted, 1);
    assert_int_equal(r.duplicates, 2);
    assert_int_equal(r.queued, 1);
    assert_string_equal(tide_rl_outcome_name(TIDE_RL_STALE), "stale");
}

static void test_steps(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    batch_t b;
    int dup;
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 2, 0, &err), 1);
    assert_int_equal(step(f->s, 0, &b, &dup), TIDE_EINVAL);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 1, &b, &dup), TIDE_ESTATE); /* one queued, the batch is 2 */
    assert_int_equal(run(f->s).step, 0);
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "c", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 2, &b, &dup), TIDE_ESTATE); /* not the next step */
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    assert_int_equal(dup, 0);
    assert_int_equal(b.n, 2);
    assert_string_equal(b.ids[0], "a"); /* the oldest first */
    assert_string_equal(b.ids[1], "b");
    /* a retry of step 1: the same batch, nothing consumed again */
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    assert_int_equal(dup, 1);
    assert_int_equal(b.n, 2);
    assert_string_equal(b.ids[1], "b");
    tide_store_rl_run_t r = run(f->s);
    assert_int_equal(r.step, 1);
    assert_int_equal(r.policy_version, 1);
    assert_int_equal(r.consumed, 2);
    assert_int_equal(r.queued, 1);
    /* version 1 now: d (v1) is fresh, e (v0) is 1 behind: still fresh */
    assert_int_equal(push(f->s, "d", 1), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 2, &b, &dup), 0);
    assert_string_equal(b.ids[0], "c"); /* lower version first */
    assert_string_equal(b.ids[1], "d");
    /* version 2: a v0 trajectory is 2 behind, refused */
    assert_int_equal(push(f->s, "e", 0), TIDE_RL_STALE);
    assert_int_equal(push(f->s, "f", 1), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "g", 2), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "h", 2), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 3, &b, &dup), 0); /* f (v1) and g */
    assert_string_equal(b.ids[0], "f");
    /* version 3: h (v2) fresh; i (v2) fresh; j (v3) */
    assert_int_equal(push(f->s, "i", 2), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 4, &b, &dup), 0);
    assert_string_equal(b.ids[0], "h");
    assert_string_equal(b.ids[1], "i");
    r = run(f->s);
    assert_int_equal(r.stale_rejected, 1);
    assert_int_equal(r.consumed, 8);
    assert_int_equal(r.queued, 0);
}

static void test_drop_stale(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    batch_t b;
    int dup;
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 0, 1, 0, &err), 1);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    /* b (v0) went stale at version 1 (max 0): not enough fresh, refused */
    assert_int_equal(step(f->s, 2, &b, &dup), TIDE_ESTATE);
    assert_int_equal(push(f->s, "c", 1), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 2, &b, &dup), 0);
    assert_int_equal(b.n, 1);
    assert_string_equal(b.ids[0], "c");
    tide_store_rl_run_t r = run(f->s);
    assert_int_equal(r.stale_dropped, 1);
    assert_int_equal(r.queued, 0);
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_DUPLICATE); /* dropped, still known */
}

typedef struct ages {
    int64_t c[2][4];
} ages_t;

static void age_row(void *ctx, int consumed, int64_t age, int64_t count)
{
    ages_t *a = ctx;
    assert_true(age >= 0 && age < 4);
    a->c[consumed][age] = count;
}

static void test_ages(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    batch_t b;
    int dup;
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 2, 1, 0, &err), 1);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 1, &b, &dup), 0); /* a at age 0 */
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "c", 1), TIDE_RL_ACCEPTED);
    assert_int_equal(push(f->s, "d", 1), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 2, &b, &dup), 0); /* b at age 1 */
    ages_t a = {0};
    assert_int_equal(tide_store_rl_ages(f->s, "j1", age_row, &a, &err), 0);
    assert_int_equal(a.c[1][0], 1);
    assert_int_equal(a.c[1][1], 1);
    assert_int_equal(a.c[0][1], 2); /* c, d: version 1 behind the trainer's 2 */
}

typedef struct runs {
    int n;
    char job[16];
} runs_t;

static int run_row(void *ctx, const char *job, const tide_store_rl_run_t *r)
{
    runs_t *x = ctx;
    x->n++;
    snprintf(x->job, sizeof x->job, "%s", job);
    assert_int_equal(r->batch_size, 1);
    return 0;
}

static void test_durable(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    batch_t b;
    int dup;
    assert_int_equal(tide_store_rl_run_create(f->s, "j1", 1, 1, 0, &err), 1);
    assert_int_equal(push(f->s, "a", 0), TIDE_RL_ACCEPTED);
    /* a transaction rolled back (a crash before the commit) leaves nothing */
    assert_int_equal(tide_store_begin(f->s, &err), 0);
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_ACCEPTED);
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    tide_store_rollback(f->s);
    assert_int_equal(run(f->s).step, 0);
    assert_int_equal(push(f->s, "b", 0), TIDE_RL_ACCEPTED); /* not a duplicate: it was not kept */
    assert_int_equal(tide_store_begin(f->s, &err), 0);
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    assert_int_equal(tide_store_commit(f->s, &err), 0);
    tide_store_close(f->s);
    f->s = open_ok(f->path);
    tide_store_rl_run_t r = run(f->s);
    assert_int_equal(r.step, 1);
    assert_int_equal(r.accepted, 2);
    assert_int_equal(r.queued, 1);
    assert_int_equal(step(f->s, 1, &b, &dup), 0);
    assert_int_equal(dup, 1);
    assert_string_equal(b.ids[0], "a");
    runs_t x = {0};
    assert_int_equal(tide_store_rl_runs(f->s, run_row, &x, &err), 1);
    assert_string_equal(x.job, "j1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_rl_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
