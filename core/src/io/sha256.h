/* sha256.h: a small, self-contained SHA-256 (FIPS 180-4), used to fingerprint
 * the resolved bench.cfg for run metadata. Not constant-time; not for secrets.
 *
 *   bc_sha256_ctx c; bc_sha256_init(&c);
 *   bc_sha256_update(&c, data, len);   (any number of times)
 *   bc_sha256_final(&c, digest);       (32 bytes)
 */
#ifndef BENCHCTL_SHA256_H
#define BENCHCTL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define BC_SHA256_DIGEST_BYTES 32
#define BC_SHA256_HEX_CHARS 64 /* without the terminating NUL */

typedef struct bc_sha256_ctx {
    uint32_t state[8];
    uint64_t total_bytes; /* message length so far */
    uint8_t block[64];    /* pending input, block_len bytes used */
    size_t block_len;
} bc_sha256_ctx;

void bc_sha256_init(bc_sha256_ctx *c);
void bc_sha256_update(bc_sha256_ctx *c, const void *data, size_t len);
void bc_sha256_final(bc_sha256_ctx *c, uint8_t digest[BC_SHA256_DIGEST_BYTES]);

/* One-shot: writes 64 lowercase hex digits and a NUL into hex[65]. */
void bc_sha256_hex(const void *data, size_t len, char hex[BC_SHA256_HEX_CHARS + 1]);

#endif
