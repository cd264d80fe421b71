/* Bearer tokens and roles. */
#include "http/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

static const char *const role_names[TIDE_ROLE_COUNT] = {"public", "viewer", "submitter", "admin",
                                                        "router"};

/* allows[have][need] */
static const unsigned char allows[TIDE_ROLE_COUNT][TIDE_ROLE_COUNT] = {
    /* need:              public viewer submitter admin router */
    [TIDE_ROLE_PUBLIC] = {1, 0, 0, 0, 0},
    [TIDE_ROLE_VIEWER] = {1, 1, 0, 0, 0},
    [TIDE_ROLE_SUBMITTER] = {1, 1, 1, 0, 0},
    [TIDE_ROLE_ADMIN] = {1, 1, 1, 1, 1},
    [TIDE_ROLE_ROUTER] = {1, 0, 0, 0, 1},
};

const char *tide_role_name(int r) { return r >= 0 && r < TIDE_ROLE_COUNT ? role_names[r] : "unknown"; }

int tide_role_find(const char *name)
{
    for (int r = 0; name && r < TIDE_ROLE_COUNT; r++)
        if (!strcmp(role_names[r], name))
            return r;
    return -1;
}

int tide_role_allows(int have, int need)
{
    if (have < 0 || have >= TIDE_ROLE_COUNT || need < 0 || need >= TIDE_ROLE_COUNT)
        return 0;
    return allows[have][need];
}

typedef struct token {
    char *token;
    size_t len;
    char team[TIDE_AUTH_MAX_TEAM + 1];
    int role;
} token_t;

struct tide_auth {
    pthread_mutex_t mu;
    token_t *v;
    size_t n;
    size_t min_len;
};

tide_auth_t *tide_auth_create(void)
{
    tide_auth_t *a = tide_xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->min_len = TIDE_AUTH_MIN_TOKEN;
    return a;
}

void tide_auth_set_min_len(tide_auth_t *a, size_t n)
{
    a->min_len = n < 1 ? 1 : n > TIDE_AUTH_MAX_TOKEN ? TIDE_AUTH_MAX_TOKEN : n;
}

static void tokens_free(token_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* do not leave secrets in freed memory */
        memset(v[i].token, 0, v[i].len);
        free(v[i].token);
    }
    free(v);
}

void tide_auth_destroy(tide_auth_t *a)
{
    if (!a)
        return;
    tokens_free(a->v, a->n);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* Constant-time comparison of a candidate with a token (no early exit on the
 * first differing byte). */
static int same(const char *cand, size_t clen, const token_t *t)
{
    unsigned char d = (unsigned char)(clen != t->len);
    for (size_t i = 0; i < t->len; i++)
        d |= (unsigned char)(t->token[i] ^ (i < clen ? cand[i] : 0));
    return d == 0;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int tide_auth_load_mem(tide_auth_t *a, const char *buf, size_t len, const char *name,
                       tide_error_t *err)
{
    if (!name)
        name = "<tokens>";
    token_t *v = NULL;
    size_t n = 0, cap = 0;
    int line = 0;
    size_t i = 0;
    while (i < len) {
        line++;
        size_t end = i;
        while (end < len && buf[end] != '\n')
            end++;
        /* fields of this line */
        const char *f[4];
        size_t fl[4];
        int nf = 0;
        size_t k = i;
        while (k < end) {
            while (k < end && is_space(buf[k]))
                k++;
            if (k >= end || buf[k] == '#')
                break;
            size_t s = k;
            while (k < end && !is_space(buf[k]) && buf[k] != '#')
                k++;
            if (nf < 4) {
                f[nf] = buf + s;
                fl[nf] = k - s;
            }
            nf++;
        }
        i = end + 1;
        if (nf == 0)
            continue;
        int bad = 0;
        if (nf != 3) {
            tide_errf(err, TIDE_EINVAL, "%s:%d: expected TOKEN TEAM ROLE, got %d field%s", name,
                      line, nf, nf == 1 ? "" : "s");
            bad = 1;
        }
        for (int x = 0; !bad && x < 3; x++)
            for (size_t y = 0; y < fl[x]; y++)
                if ((unsigned char)f[x][y] < 0x21 || (unsigned char)f[x][y] == 0x7f) {
                    tide_errf(err, TIDE_EINVAL, "%s:%d: control character in a field", name, line);
                    bad = 1;
                    break;
                }
        if (!bad && fl[0] < a->min_len) {
            tide_errf(err, TIDE_EINVAL,
                      "%s:%d: token shorter than %zu characters (use a random one: "
                      "openssl rand -hex 16)",
                      name, line, a->min_len);
            bad = 1;
        }
        if (!bad && fl[0] > TIDE_AUTH_MAX_TOKEN) {
            tide_errf(err, TIDE_EINVAL, "%s:%d: token longer than %d bytes", name, line,
                      TIDE_AUTH_MAX_TOKEN);
            bad = 1;
        }
        if (!bad && fl[1] > TIDE_AUTH_MAX_TEAM) {
            tide_errf(err, TIDE_EINVAL, "%s:%d: team name longer than %d bytes", name, line,
                      TIDE_AUTH_MAX_TEAM);
            bad = 1;
        }
        int role = -1;
        if (!bad) {
            char rn[16] = "";
            if (fl[2] < sizeof rn) {
                memcpy(rn, f[2], fl[2]);
                rn[fl[2]] = '\0';
                role = tide_role_find(rn);
            }
            if (role <= TIDE_ROLE_PUBLIC) {
                tide_errf(err, TIDE_EINVAL,
                          "%s:%d: unknown role '%.*s' (admin, submitter, viewer, router)", name,
                          line, (int)TIDE_MIN(fl[2], (size_t)32), f[2]);
                bad = 1;
            }
        }
        for (size_t x = 0; !bad && x < n; x++)
            if (same(f[0], fl[0], &v[x])) {
                tide_errf(err, TIDE_EINVAL, "%s:%d: token given twice", name, line);
                bad = 1;
            }
        if (bad) {
            tokens_free(v, n);
            return -1;
        }
        token_t t = {.len = fl[0], .role = role};
        t.token = tide_xmalloc(fl[0] + 1);
        memcpy(t.token, f[0], fl[0]);
        t.token[fl[0]] = '\0';
        memcpy(t.team, f[1], fl[1]);
        t.team[fl[1]] = '\0';
        TIDE_PUSH(v, n, cap, t);
    }
    if (n == 0) {
        tokens_free(v, n);
        return tide_errf(err, TIDE_EINVAL, "%s: no tokens (every request would be refused)", name);
    }
    pthread_mutex_lock(&a->mu);
    token_t *old = a->v;
    size_t oldn = a->n;
    a->v = v;
    a->n = n;
    pthread_mutex_unlock(&a->mu);
    tokens_free(old, oldn);
    return (int)n;
}

int tide_auth_load(tide_auth_t *a, const char *path, tide_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: %s", path,
                         strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got > (16u << 20)) {
            fclose(f);
            free(buf);
            return tide_errf(err, TIDE_EINVAL, "%s: larger than 16 MiB", path);
        }
        tide_grow((void **)&buf, &cap, n + got, 1);
        memcpy(buf + n, chunk, got);
        n += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return tide_errf(err, TIDE_EIO, "%s: read error", path);
    }
    int rc = tide_auth_load_mem(a, buf ? buf : "", n, path, err);
    if (buf)
        memset(buf, 0, n);
    free(buf);
    return rc;
}

int tide_auth_is_open(const tide_auth_t *a)
{
    tide_auth_t *m = (tide_auth_t *)a;
    pthread_mutex_lock(&m->mu);
    int open = m->n == 0;
    pthread_mutex_unlock(&m->mu);
    return open;
}

int tide_auth_check(tide_auth_t *a, const char *authz, int need, tide_principal_t *who,
                    tide_error_t *err)
{
    memset(who, 0, sizeof *who);
    pthread_mutex_lock(&a->mu);
    if (a->n == 0) {
        pthread_mutex_unlock(&a->mu);
        snprintf(who->team, sizeof who->team, "default");
        who->role = TIDE_ROLE_ADMIN;
        who->authenticated = 1;
        return 0;
    }
    const char *tok = NULL;
    size_t tlen = 0;
    if (authz && !strncasecmp(authz, "Bearer ", 7)) {
        tok = authz + 7;
        while (*tok == ' ')
            tok++;
        tlen = strlen(tok);
        while (tlen && (tok[tlen - 1] == ' ' || tok[tlen - 1] == '\t'))
            tlen--;
    }
    const token_t *hit = NULL;
    for (size_t i = 0; tok && tlen && i < a->n; i++)
        if (same(tok, tlen, &a->v[i]))
            hit = &a->v[i];
    if (hit) {
        snprintf(who->team, sizeof who->team, "%s", hit->team);
        who->role = hit->role;
        who->authenticated = 1;
    }
    pthread_mutex_unlock(&a->mu);
    if (need == TIDE_ROLE_PUBLIC)
        return 0;
    if (!hit) {
        if (!authz)
            tide_errf(err, TIDE_EINVAL, "missing Authorization: Bearer token");
        else if (!tok)
            tide_errf(err, TIDE_EINVAL, "Authorization must be 'Bearer TOKEN'");
        else
            tide_errf(err, TIDE_EINVAL, "invalid token");
        return 401;
    }
    if (!tide_role_allows(who->role, need)) {
        tide_errf(err, TIDE_EINVAL, "role %s of team %s may not do this (needs %s)",
                  tide_role_name(who->role), who->team, tide_role_name(need));
        return 403;
    }
    return 0;
}
