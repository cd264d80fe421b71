/* tide http: bearer-token authentication and role decisions.
 *
 * Tokens file (--tokens FILE): one `TOKEN TEAM ROLE` per line, fields
 * separated by spaces or tabs; `#` starts a comment (whole line or after the
 * fields); blank lines are skipped. ROLE is admin, submitter, viewer or
 * router. Without a tokens file the daemon runs open: every caller is the
 * admin of team "default". */
#ifndef TIDE_HTTP_AUTH_H
#define TIDE_HTTP_AUTH_H

#include <stddef.h>

#include "tide/types.h"

/* Roles. PUBLIC marks routes that need no token. A route's role is the
 * least a caller must have: admin satisfies everything, submitter satisfies
 * submitter and viewer, viewer only viewer; router satisfies only router
 * routes (demand pushes), which admins may call too. */
typedef enum tide_role {
    TIDE_ROLE_PUBLIC = 0,
    TIDE_ROLE_VIEWER,
    TIDE_ROLE_SUBMITTER,
    TIDE_ROLE_ADMIN,
    TIDE_ROLE_ROUTER,
    TIDE_ROLE_COUNT
} tide_role_t;

/* "public", "viewer", ...; index of a name or -1. */
const char *tide_role_name(int role);
int tide_role_find(const char *name);

/* Does a caller with role `have` satisfy a route that needs `need`? */
int tide_role_allows(int have, int need);

#define TIDE_AUTH_MAX_TEAM 127
#define TIDE_AUTH_MAX_TOKEN 512
#define TIDE_AUTH_MIN_TOKEN 16 /* shorter tokens are refused (guessable) */

/* Who is calling (filled by tide_auth_check). */
typedef struct tide_principal {
    char team[TIDE_AUTH_MAX_TEAM + 1];
    int role;           /* tide_role_t; PUBLIC when no token was given on a public route */
    int authenticated;  /* a valid token was presented (or open mode) */
} tide_principal_t;

typedef struct tide_auth tide_auth_t;

/* An authenticator in open mode (no tokens). Caller owns it. Thread-safe:
 * checks may run while another thread reloads. */
tide_auth_t *tide_auth_create(void);
void tide_auth_destroy(tide_auth_t *a); /* NULL is a no-op */

/* Replace the tokens with those of a file (or of buf[0..len), name used in
 * messages). All or nothing: on error the old tokens stay. Returns the number
 * of tokens, or -1 with err (ENOENT/EIO for the file, EINVAL "file:line:
 * problem" for a bad line, an unknown role, a duplicate token or a token
 * shorter than the minimum, TIDE_AUTH_MIN_TOKEN unless changed with
 * tide_auth_set_min_len). A file with no tokens is an error (it would lock
 * everyone out). */
int tide_auth_load(tide_auth_t *a, const char *path, tide_error_t *err);
int tide_auth_load_mem(tide_auth_t *a, const char *buf, size_t len, const char *name,
                       tide_error_t *err);

/* The shortest token later loads accept (1..TIDE_AUTH_MAX_TOKEN; tests with
 * short readable tokens lower it). */
void tide_auth_set_min_len(tide_auth_t *a, size_t n);

/* 1 when no tokens are loaded (open mode). */
int tide_auth_is_open(const tide_auth_t *a);

/* Decide a request: `authorization` is the Authorization header (NULL when
 * absent), need the route's role. Returns 0 (allowed; *who filled), 401 (no
 * or unknown token, or not "Bearer") or 403 (the token's role is not
 * enough), with err naming the reason. Public routes are always allowed; a
 * valid token on them still fills *who. */
int tide_auth_check(tide_auth_t *a, const char *authorization, int need, tide_principal_t *who,
                    tide_error_t *err);

#endif
