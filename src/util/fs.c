/* File-system helpers: mkdir -p, a file written whole or not at all. */
#include "util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

int tide_mkdir_p(const char *path, tide_error_t *err)
{
    if (!path || !*path)
        return tide_errf(err, TIDE_EINVAL, "empty output directory");
    char *p = tide_xstrdup(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    int rc = 0;
    for (char *q = p + 1;; q++) {
        int end = *q == '\0';
        if (!end && *q != '/')
            continue;
        *q = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            rc = tide_errf(err, TIDE_EIO, "cannot create directory '%s': %s", p, strerror(errno));
            break;
        }
        if (end)
            break;
        *q = '/';
    }
    struct stat st;
    if (rc == 0 && (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)))
        rc = tide_errf(err, TIDE_EIO, "'%s' exists and is not a directory", p);
    free(p);
    return rc;
}

int tide_fs_write_atomic(const char *dir, const char *name, tide_fs_write_fn fn, const void *ctx,
                         tide_error_t *err)
{
    size_t n = strlen(dir) + strlen(name) + 8;
    char *path = tide_xmalloc(n), *tmp = tide_xmalloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    snprintf(tmp, n, "%s/%s.tmp", dir, name);
    int rc = -1;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        tide_errf(err, TIDE_EIO, "cannot create '%s': %s", tmp, strerror(errno));
        goto out;
    }
    char *buf = tide_xmalloc(1 << 16);
    setvbuf(f, buf, _IOFBF, 1 << 16);
    int bad = fn(f, ctx) < 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    free(buf);
    if (bad) {
        tide_errf(err, TIDE_EIO, "cannot write '%s': %s", tmp, strerror(e));
        remove(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        tide_errf(err, TIDE_EIO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        remove(tmp);
        goto out;
    }
    rc = 0;
out:
    free(path);
    free(tmp);
    return rc;
}
