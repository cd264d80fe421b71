/* Unit tests: SHA-256 and HMAC-SHA256 (src/util/sha256.c) on the standard
 * vectors (FIPS 180-4 examples, RFC 4231). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/util.h"

static const char *sha(const char *s, char *hex)
{
    unsigned char d[32];
    tide_sha256(s, strlen(s), d);
    return tide_hex(d, 32, hex);
}

static void test_sha256(void **state)
{
    (void)state;
    char hex[65];
    assert_string_equal(sha("", hex), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_string_equal(sha("abc", hex), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* 56 bytes: the length does not fit the first padding block */
    assert_string_equal(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex),
                        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char big[1001];
    memset(big, 'a', 1000);
    big[1000] = 0;
    assert_string_equal(sha(big, hex), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

static void test_hmac(void **state)
{
    (void)state;
    unsigned char d[32];
    char hex[65];
    const char *m = "what do ya want for nothing?";
    tide_hmac_sha256("Jefe", 4, m, strlen(m), d);
    assert_string_equal(tide_hex(d, 32, hex),
                        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* RFC 4231 case 6: a key longer than the block is hashed first */
    unsigned char key[131];
    memset(key, 0xaa, sizeof key);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    tide_hmac_sha256(key, sizeof key, m6, strlen(m6), d);
    assert_string_equal(tide_hex(d, 32, hex),
                        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sha256), cmocka_unit_test(test_hmac)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
