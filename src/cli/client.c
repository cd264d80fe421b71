/* The CLI side of the tide API: server URL, token, JSON calls (the transport
 * is http/client.h). */
#include "cli/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/status.h"
#include "util/util.h"

int tide_client_init(tide_client_t *c, const char *server, const char *token, tide_error_t *err)
{
    memset(c, 0, sizeof *c);
    c->timeout_s = 60;
    if (!server || !*server)
        server = getenv("TIDE_SERVER");
    if (!server || !*server)
        server = TIDE_CLIENT_DEFAULT_URL;
    if (!token)
        token = getenv("TIDE_TOKEN");
    snprintf(c->url, sizeof c->url, "%s", server);

    const char *p = server;
    if (!strncasecmp(p, "http://", 7))
        p += 7;
    else if (!strncasecmp(p, "https://", 8))
        return tide_errf(err, TIDE_EINVAL,
                         "server '%s': https is not supported (plain http only; put the daemon "
                         "on loopback or behind a local proxy)", server);
    else if (strstr(p, "://"))
        return tide_errf(err, TIDE_EINVAL, "server '%s': not an http:// URL", server);

    const char *hs = p, *he;
    if (*p == '[') { /* [IPv6]:port */
        he = strchr(p, ']');
        if (!he)
            return tide_errf(err, TIDE_EINVAL, "server '%s': unterminated '[' in host", server);
        hs = p + 1;
        p = he + 1;
    } else {
        he = p + strcspn(p, ":/");
        p = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= sizeof c->host)
        return tide_errf(err, TIDE_EINVAL, "server '%s': missing or too long host", server);
    memcpy(c->host, hs, hl);
    c->host[hl] = '\0';

    strcpy(c->port, "80");
    if (*p == ':') {
        p++;
        size_t pl = strspn(p, "0123456789");
        long long v;
        char tmp[8];
        if (pl == 0 || pl >= sizeof tmp)
            return tide_errf(err, TIDE_EINVAL, "server '%s': bad port", server);
        memcpy(tmp, p, pl);
        tmp[pl] = '\0';
        if (tide_parse_int(tmp, &v) < 0 || v < 1 || v > 65535)
            return tide_errf(err, TIDE_EINVAL, "server '%s': port out of range", server);
        snprintf(c->port, sizeof c->port, "%lld", v);
        p += pl;
    }
    if (*p && *p != '/')
        return tide_errf(err, TIDE_EINVAL, "server '%s': unexpected '%c' after the host", server,
                         *p);
    size_t pl = strlen(p);
    while (pl > 0 && p[pl - 1] == '/')
        pl--;
    if (pl >= sizeof c->prefix)
        return tide_errf(err, TIDE_EINVAL, "server '%s': path too long", server);
    memcpy(c->prefix, p, pl);
    c->prefix[pl] = '\0';
    if (token && *token) {
        if (strpbrk(token, "\r\n"))
            return tide_errf(err, TIDE_EINVAL, "token: contains a line break");
        c->token = tide_xstrdup(token);
    }
    return 0;
}

void tide_client_fini(tide_client_t *c)
{
    free(c->token);
    c->token = NULL;
}

int tide_client_http(const tide_client_t *c, const char *method, const char *path,
                     const char *body, size_t body_len, tide_http_resp_t *out,
                     tide_error_t *err)
{
    char full[4096], auth[1100] = "";
    if ((size_t)snprintf(full, sizeof full, "%s%s", c->prefix, path) >= sizeof full)
        return tide_errf(err, TIDE_EINVAL, "%s: request path too long", c->url);
    if (c->token && (size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n",
                                     c->token) >= sizeof auth)
        return tide_errf(err, TIDE_EINVAL, "token: too long");
    tide_http_call_t rq = {
        .method = method, .host = c->host, .port = c->port, .path = full,
        .headers = c->token ? auth : NULL, .body = body, .body_len = body_len, .what = c->url,
        .refused_hint = "(is `tide serve` running there? set --server or TIDE_SERVER)",
        .timeout_ms = (c->timeout_s > 0 ? c->timeout_s : 60) * 1000,
        .max = TIDE_CLIENT_MAX_RESPONSE};
    return tide_http_request(&rq, out, err);
}

json_t *tide_client_call(const tide_client_t *c, const char *method, const char *path,
                         const json_t *body, int *status, tide_error_t *err)
{
    char *text = NULL;
    if (status)
        *status = 0;
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        tide_errf(err, TIDE_EINVAL, "cannot encode the request body");
        return NULL;
    }
    tide_http_resp_t r;
    int rc = tide_client_http(c, method, path, text, text ? strlen(text) : 0, &r, err);
    free(text);
    if (rc < 0)
        return NULL;
    if (status)
        *status = r.status;
    json_error_t je;
    json_t *j = r.len ? json_loadb(r.body, r.len, JSON_DECODE_ANY, &je) : NULL;
    if (r.status >= 400) {
        const json_t *e = json_object_get(j, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *name = json_string_value(json_object_get(e, "code"));
        int code = tide_errcode_find(name);
        if (code < 0)
            code = tide_http_status_code(r.status);
        if (msg)
            tide_errf(err, code, "%s", msg);
        else {
            size_t l = strcspn(r.body, "\r\n");
            tide_errf(err, code, "HTTP %d from %s%s%.*s", r.status, c->url, l ? ": " : "",
                      (int)TIDE_MIN(l, 200), r.body);
        }
        json_decref(j);
        tide_http_resp_free(&r);
        return NULL;
    }
    if (!r.len) {
        tide_http_resp_free(&r);
        return json_object();
    }
    if (!j)
        tide_errf(err, TIDE_EIO, "%s %s: HTTP %d with a body that is not JSON (%s)", method, path,
                  r.status, je.text);
    tide_http_resp_free(&r);
    return j;
}

char *tide_client_urlenc(char *buf, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t l = strnlen(buf, n);
    for (; *s && l + 1 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            buf[l++] = (char)ch;
        } else {
            if (l + 4 > n)
                break;
            buf[l++] = '%';
            buf[l++] = hex[ch >> 4];
            buf[l++] = hex[ch & 15];
        }
    }
    if (l < n)
        buf[l] = '\0';
    return buf;
}
