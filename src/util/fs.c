/* File-system helpers: mkdir -p. */
#include "util/fs.h"

#include <errno.h>
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
