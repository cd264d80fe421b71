/* Small file-system helpers shared by the drivers (never called by the pure
 * core, which does no I/O). */
#ifndef TIDE_UTIL_FS_H
#define TIDE_UTIL_FS_H

#include <stdio.h>

#include "tide/types.h"

/* mkdir -p: create path and its missing parents (mode 0777 less the umask);
 * trailing slashes are ignored. Succeeds when path ends up a directory.
 * Errors: EINVAL empty path, EIO a component that cannot be created or a
 * path that exists and is not a directory (the message names it). */
int tide_mkdir_p(const char *path, tide_error_t *err);

/* Writes dir/name whole or not at all: through dir/name.tmp (64 KiB
 * buffered) and a rename. fn(f, ctx) writes the content and returns 0 or -1.
 * Returns 0, or -1 with err (EIO: the temporary file cannot be created,
 * written or renamed; it is removed). */
typedef int (*tide_fs_write_fn)(FILE *f, const void *ctx);
int tide_fs_write_atomic(const char *dir, const char *name, tide_fs_write_fn fn, const void *ctx,
                         tide_error_t *err);

#endif
