/* fp16.c: the "fp16" precision plugin, IEEE 754 binary16 (float16).
 *
 * Layout: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
 * Largest finite 65504 (0x7bff); smallest normal 2^-14 (0x0400); smallest
 * subnormal 2^-24 (0x0001); eps (spacing above 1.0) 2^-10.
 *
 * to_f32 is exact for every one of the 65536 patterns. from_f32 rounds to
 * nearest, ties to even, in software (no F16C needed): values at or above
 * 65520 (half an ulp past 65504) become inf, values at or below 2^-25 become
 * a signed zero, subnormals round correctly, and NaN stays NaN (quieted, top
 * payload bits kept), so a NaN never turns into inf.
 *
 * rel_tolerance = 1e-2, about 10 eps: see docs/plugins.md, "Precision
 * tolerances". Weights and KV cache are stored in fp16 (each value rounded
 * once, relative error <= 2^-11) while accumulation is fp32; these
 * independent roundings mostly average out inside a dot product but compound
 * through the residual stream of every layer. Ten eps of the logit scale
 * covers that and still catches real bugs.
 */
#include <stdint.h>
#include <string.h>

#include "benchctl/plugin.h"

static float fp16_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t frac = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (frac << 13); /* inf, or NaN with its payload */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (frac << 13); /* rebias 15 -> 127 */
    } else {
        /* zero or subnormal: frac * 2^-24, exact in binary32 */
        f = (float)frac * 0x1p-24f;
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t fp16_bits_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu; /* |f| as bits */

    if (a > 0x7f800000u) /* NaN: quiet it, keep the top 9 payload bits */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
    if (a >= 0x47800000u) /* >= 65536 (and inf): past the rounding range */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        /* normal in fp16: rebias 127 -> 15, keep 10 fraction bits, round the
         * 13 dropped ones to nearest even. A carry may ripple into the
         * exponent, up to 0x7c00 = inf for [65520, 65536). */
        uint32_t h = (a - 0x38000000u) >> 13;
        uint32_t rest = a & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    if (a <= 0x33000000u) /* <= 2^-25: rounds to zero (2^-25 itself is a tie to even 0) */
        return (uint16_t)sign;
    {
        /* subnormal in fp16: value = mant * 2^(e - 150); in units of 2^-24
         * that is mant >> (126 - e), with e in [102, 112]. */
        uint32_t e = a >> 23;
        uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t h = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rest > half || (rest == half && (h & 1u))) h++; /* may reach 0x0400, the smallest normal */
        return (uint16_t)(sign | h);
    }
}

/* src: n float16 (uint16_t bit patterns); dst: n float32. */
static void fp16_to_f32(const void *src, float *dst, size_t n) {
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) dst[i] = fp16_bits_to_float(s[i]);
}

/* src: n float32; dst: n float16. */
static void fp16_from_f32(const float *src, void *dst, size_t n) {
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = fp16_bits_from_float(src[i]);
}

static const bc_precision_ops fp16_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "float16",
    .element_size = 2,
    .to_f32 = fp16_to_f32,
    .from_f32 = fp16_from_f32,
    .rel_tolerance = 1e-2,
};

static const bc_plugin_desc fp16_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "fp16",
    .version = "0.1.0",
    .description = "IEEE binary16 (float16): 2 bytes, round to nearest even, tolerance 1e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &fp16_ops,
};

BC_PLUGIN_DEFINE(fp16_desc)
