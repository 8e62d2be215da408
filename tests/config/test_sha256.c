/* test_sha256.c: core/src/io/sha256.c against the FIPS 180-4 / NIST examples and
 * against itself when the input is fed in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void test_known_vectors(void **state) {
    (void)state;
    char hex[BC_SHA256_HEX_CHARS + 1];
    bc_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    bc_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills */
    bc_sha256_hex(two_blocks, strlen(two_blocks), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_million_a_in_pieces(void **state) {
    (void)state;
    /* One million 'a', fed in uneven pieces. */
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    bc_sha256_ctx c;
    bc_sha256_init(&c);
    size_t left = 1000000;
    size_t step = 1;
    while (left > 0) {
        size_t n = step < left ? step : left;
        if (n > sizeof chunk) n = sizeof chunk;
        bc_sha256_update(&c, chunk, n);
        left -= n;
        step = step * 3 + 1;
    }
    uint8_t d[BC_SHA256_DIGEST_BYTES];
    bc_sha256_final(&c, d);
    static const uint8_t want[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
                                     0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
                                     0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(d, want, sizeof want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_million_a_in_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
