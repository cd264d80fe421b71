/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104): the audit trail's request digest and
 * the model pipeline's webhook signatures, without linking a crypto library. */
#include <string.h>

#include "util/util.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
                      ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
        uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
                      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

/* SHA-256 of the concatenation a || b (b may be NULL). */
static void sha256_2(const void *a, size_t na, const void *b, size_t nb, unsigned char out[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char buf[128];
    size_t fill = 0;
    const unsigned char *parts[2] = {a, b};
    size_t lens[2] = {na, b ? nb : 0};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lens[k]; i++) {
            buf[fill++] = parts[k][i];
            if (fill == 64) {
                block(h, buf);
                fill = 0;
            }
        }
    uint64_t bits = (uint64_t)(na + lens[1]) * 8;
    buf[fill++] = 0x80;
    size_t total = fill + 8 <= 64 ? 64 : 128;
    memset(buf + fill, 0, total - fill);
    for (int i = 0; i < 8; i++)
        buf[total - 1 - i] = (unsigned char)(bits >> (8 * i));
    block(h, buf);
    if (total == 128)
        block(h, buf + 64);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(h[i] >> (24 - 8 * j));
}

void tide_sha256(const void *data, size_t n, unsigned char out[32])
{
    sha256_2(data, n, NULL, 0, out);
}

void tide_hmac_sha256(const void *key, size_t nk, const void *msg, size_t nm,
                      unsigned char out[32])
{
    unsigned char k[64] = {0}, ipad[64], opad[64], inner[32];
    if (nk > 64)
        tide_sha256(key, nk, k);
    else
        memcpy(k, key, nk);
    for (int i = 0; i < 64; i++) {
        ipad[i] = k[i] ^ 0x36;
        opad[i] = k[i] ^ 0x5c;
    }
    sha256_2(ipad, 64, msg, nm, inner);
    sha256_2(opad, 64, inner, 32, out);
}

char *tide_hex(const unsigned char *v, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[v[i] >> 4];
        out[2 * i + 1] = d[v[i] & 15];
    }
    out[2 * n] = 0;
    return out;
}

void tide_sha256_hex(const void *data, size_t n, char out[65])
{
    unsigned char d[32];
    tide_sha256(data, n, d);
    tide_hex(d, sizeof d, out);
}
