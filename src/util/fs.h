/* Small file-system helpers shared by the drivers (never called by the pure
 * core, which does no I/O). */
#ifndef TIDE_UTIL_FS_H
#define TIDE_UTIL_FS_H

#include "tide/types.h"

/* mkdir -p: create path and its missing parents (mode 0777 less the umask);
 * trailing slashes are ignored. Succeeds when path ends up a directory.
 * Errors: EINVAL empty path, EIO a component that cannot be created or a
 * path that exists and is not a directory (the message names it). */
int tide_mkdir_p(const char *path, tide_error_t *err);

#endif
