/* libFuzzer target: arbitrary bytes as a --tokens file (`TOKEN TEAM ROLE`
 * lines, `#` comments). Whatever loads must then answer auth checks without
 * crashing; whatever fails must say why. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_auth_t *a = tide_auth_create();
    tide_error_t err;
    memset(&err, 0, sizeof err);
    if (tide_auth_load_mem(a, (const char *)data, size, "fuzz", &err) >= 0) { /* the token count */
        tide_principal_t who;
        tide_error_t e2;
        (void)tide_auth_check(a, "Bearer x", 1, &who, &e2);
        (void)tide_auth_check(a, NULL, 1, &who, &e2);
    } else if (!err.msg[0]) {
        abort(); /* a failure must explain itself */
    }
    tide_auth_destroy(a);
    return 0;
}
