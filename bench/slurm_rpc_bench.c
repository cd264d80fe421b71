/* slurm_rpc_bench: Slurm's own API under load, for bench/serve_bench.sh.
 *
 *   slurm_rpc_bench --op submit|load [--threads N] [--secs S] [--ids FILE]
 *
 * submit: slurm_submit_batch_job with held jobs (priority 0: nothing runs),
 * a body like api_bench's (a command, a working directory, an environment
 * of a few variables). load: slurm_load_job of a job id from FILE (one per
 * line, cycled). Each thread issues its calls back to back (libslurm's
 * calls are blocking). SLURM_CONF selects the controller. Prints one line:
 * op threads n ok bad secs rps p50_ms p99_ms max_ms; with --ids-out FILE
 * the submitted ids are written there. Exit 1 when nothing succeeded. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

typedef struct {
    const char *op;
    int threads;
    double secs;
    uint32_t *ids;
    size_t n_ids;
} opts_t;

typedef struct {
    const opts_t *o;
    int id;
    double *lat;
    uint32_t *made;
    size_t n, cap, n_made;
    long ok, bad;
    char err[256];
} worker_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int submit_one(worker_t *w, long k)
{
    char name[64], data[128], ck[128], seed[32];
    snprintf(name, sizeof name, "b-%d-%ld", w->id, k);
    snprintf(data, sizeof data, "DATA_DIR=/datasets/fineweb/shard-%ld", k % 512);
    snprintf(ck, sizeof ck, "CKPT_DIR=/ckpt/b-%d-%ld", w->id, k);
    snprintf(seed, sizeof seed, "SEED=%ld", k);
    char *env[] = {"WANDB_PROJECT=llm-pretrain", "NCCL_DEBUG=WARN", data, ck, seed, NULL};
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.name = name;
    d.script = "#!/bin/sh\ntorchrun --nproc_per_node=8 train.py --config configs/llama-8b.yaml "
               "--resume latest\n";
    d.priority = 0; /* held */
    d.min_nodes = 1;
    d.user_id = getuid();
    d.group_id = getgid();
    d.work_dir = "/tmp";
    d.std_out = "/dev/null";
    d.environment = env;
    d.env_size = 5;
    submit_response_msg_t *resp = NULL;
    if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
        snprintf(w->err, sizeof w->err, "slurm_submit_batch_job: %s", slurm_strerror(slurm_get_errno()));
        return -1;
    }
    if (w->n_made % 1024 == 0)
        w->made = realloc(w->made, (w->n_made + 1024) * sizeof *w->made);
    w->made[w->n_made++] = resp->job_id;
    slurm_free_submit_response_response_msg(resp);
    return 0;
}

static int load_one(worker_t *w, long k)
{
    const opts_t *o = w->o;
    uint32_t id = o->ids[(size_t)(k * 7919 + w->id * 104729) % o->n_ids];
    job_info_msg_t *m = NULL;
    if (slurm_load_job(&m, id, SHOW_DETAIL) != SLURM_SUCCESS) {
        snprintf(w->err, sizeof w->err, "slurm_load_job %u: %s", id, slurm_strerror(slurm_get_errno()));
        return -1;
    }
    slurm_free_job_info_msg(m);
    return 0;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    double end = now_s() + w->o->secs;
    for (long k = 1; now_s() < end; k++) {
        double s = now_s();
        int rc = !strcmp(w->o->op, "submit") ? submit_one(w, k) : load_one(w, k);
        double e = now_s();
        if (rc < 0) {
            w->bad++;
            continue;
        }
        w->ok++;
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->lat = realloc(w->lat, w->cap * sizeof *w->lat);
        }
        w->lat[w->n++] = e - s;
    }
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    opts_t o = {.op = "submit", .threads = 4, .secs = 10};
    const char *ids = NULL, *ids_out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            printf("usage: slurm_rpc_bench --op submit|load [--threads N] [--secs S] [--ids FILE] "
                   "[--ids-out FILE]\n");
            return 0;
        }
        if (!v) {
            fprintf(stderr, "slurm_rpc_bench: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--op")) o.op = v;
        else if (!strcmp(a, "--threads")) o.threads = atoi(v);
        else if (!strcmp(a, "--secs")) o.secs = atof(v);
        else if (!strcmp(a, "--ids")) ids = v;
        else if (!strcmp(a, "--ids-out")) ids_out = v;
        else {
            fprintf(stderr, "slurm_rpc_bench: unknown option %s\n", a);
            return 2;
        }
    }
    if ((strcmp(o.op, "submit") && strcmp(o.op, "load")) || o.threads < 1 || o.threads > 256) {
        fprintf(stderr, "slurm_rpc_bench: bad --op or --threads\n");
        return 2;
    }
    if (!strcmp(o.op, "load")) {
        FILE *f = ids ? fopen(ids, "r") : NULL;
        unsigned long x;
        while (f && fscanf(f, "%lu", &x) == 1) {
            o.ids = realloc(o.ids, (o.n_ids + 1) * sizeof *o.ids);
            o.ids[o.n_ids++] = (uint32_t)x;
        }
        if (f)
            fclose(f);
        if (!o.n_ids) {
            fprintf(stderr, "slurm_rpc_bench: load needs --ids FILE with job ids\n");
            return 2;
        }
    }
    slurm_init(NULL);
    worker_t *w = calloc((size_t)o.threads, sizeof *w);
    pthread_t *th = calloc((size_t)o.threads, sizeof *th);
    double t0 = now_s();
    for (int i = 0; i < o.threads; i++) {
        w[i] = (worker_t){.o = &o, .id = i + 1};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    size_t n = 0;
    long ok = 0, bad = 0;
    for (int i = 0; i < o.threads; i++) {
        pthread_join(th[i], NULL);
        n += w[i].n;
        ok += w[i].ok;
        bad += w[i].bad;
    }
    double secs = now_s() - t0;
    double *all = malloc((n ? n : 1) * sizeof *all);
    FILE *out = ids_out ? fopen(ids_out, "w") : NULL;
    size_t k = 0;
    for (int i = 0; i < o.threads; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        for (size_t j = 0; out && j < w[i].n_made; j++)
            fprintf(out, "%u\n", w[i].made[j]);
        if (w[i].bad)
            fprintf(stderr, "slurm_rpc_bench: thread %d: %ld failed, last: %s\n", w[i].id, w[i].bad,
                    w[i].err);
        free(w[i].lat);
        free(w[i].made);
    }
    if (out)
        fclose(out);
    qsort(all, n, sizeof *all, cmp_d);
    printf("%s %d %zu %ld %ld %.2f %.1f %.3f %.3f %.3f\n", o.op, o.threads, n, ok, bad, secs,
           (double)ok / secs, n ? all[n / 2] * 1e3 : 0, n ? all[(size_t)((double)(n - 1) * 0.99)] * 1e3 : 0,
           n ? all[n - 1] * 1e3 : 0);
    free(all);
    free(o.ids);
    free(w);
    free(th);
    slurm_fini();
    if (!ok) {
        fprintf(stderr, "slurm_rpc_bench: no call succeeded\n");
        return 1;
    }
    return 0;
}
