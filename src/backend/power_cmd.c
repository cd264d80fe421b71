/* The per-node power-cap command of a backend (`tide serve --power-cap-cmd`):
 * a template with {node} and {watts} run with /bin/sh -c for every node of a
 * capped job, e.g. `ssh {node} nvidia-smi -pl {watts}`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"

static int node_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

int tide_power_cmd_expand(const char *tmpl, const char *node, long watts, char *out, size_t n,
                          tide_error_t *err)
{
    if (!tmpl || !node || !*node || !out || n == 0)
        return tide_errf(err, TIDE_EINVAL, "power-cap command: nothing to expand");
    for (const char *p = node; *p; p++)
        if (!node_char_ok(*p))
            return tide_errf(err, TIDE_EINVAL, "power-cap command: node name '%.64s' has a "
                             "character outside [A-Za-z0-9._-]", node);
    char w[32];
    snprintf(w, sizeof w, "%ld", watts);
    size_t k = 0;
    for (const char *p = tmpl; *p;) {
        const char *rep = NULL;
        size_t skip = 1;
        if (!strncmp(p, "{node}", 6))
            rep = node, skip = 6;
        else if (!strncmp(p, "{watts}", 7))
            rep = w, skip = 7;
        size_t len = rep ? strlen(rep) : 1;
        if (k + len >= n)
            return tide_errf(err, TIDE_ERANGE, "power-cap command: longer than %zu bytes", n - 1);
        memcpy(out + k, rep ? rep : p, len);
        k += len;
        p += skip;
    }
    out[k] = 0;
    return 0;
}

int tide_power_cmd_run(const char *tmpl, const char *node, long watts, tide_error_t *err)
{
    char cmd[4096];
    if (tide_power_cmd_expand(tmpl, node, watts, cmd, sizeof cmd, err) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return tide_errf(err, TIDE_EIO, "power-cap command: fork: %s", strerror(errno));
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return tide_errf(err, TIDE_EIO, "power-cap command: wait: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return tide_errf(err, TIDE_EIO, "power-cap command '%s' failed (%s %d)", cmd,
                         WIFEXITED(st) ? "exit" : "signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 0;
}
