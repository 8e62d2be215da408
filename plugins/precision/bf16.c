/* bf16.c: the "bf16" precision plugin, bfloat16 (brain floating point).
 *
 * Layout: the top 16 bits of a binary32: 1 sign bit, 8 exponent bits (bias
 * 127, the same range as float32), 7 fraction bits; eps (spacing above 1.0)
 * 2^-7.
 *
 * to_f32 is exact (append 16 zero bits). from_f32 rounds to nearest, ties to
 * even; values past the largest finite bf16 by half an ulp or more become
 * inf, float32 subnormals round to bf16 subnormals (no flush to zero), and
 * NaN stays NaN (quieted, top payload bits kept) instead of rounding to inf.
 *
 * rel_tolerance = 5e-2, about 6 eps: see docs/plugins.md, "Precision
 * tolerances". Same argument as fp16 (one rounding per stored weight and KV
 * value, relative error <= 2^-8, fp32 accumulation, compounding through the
 * layers), with 3 fewer fraction bits, so 8x coarser roundings; 5e-2 of the
 * logit scale covers it and still catches real bugs.
 */
#include <stdint.h>
#include <string.h>

#include "benchctl/plugin.h"

static float bf16_bits_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t bf16_bits_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet it, keep the top payload bits */
        return (uint16_t)((x >> 16) | 0x0040u);
    /* Round the 16 dropped bits to nearest even: add 0x7fff, plus 1 when the
     * kept part is odd, and let the carry ripple (into inf past the max). */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* src: n bfloat16 (uint16_t bit patterns); dst: n float32. */
static void bf16_to_f32(const void *src, float *dst, size_t n) {
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) dst[i] = bf16_bits_to_float(s[i]);
}

/* src: n float32; dst: n bfloat16. */
static void bf16_from_f32(const float *src, void *dst, size_t n) {
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = bf16_bits_from_float(src[i]);
}

static const bc_precision_ops bf16_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "bfloat16",
    .element_size = 2,
    .to_f32 = bf16_to_f32,
    .from_f32 = bf16_from_f32,
    .rel_tolerance = 5e-2,
};

static const bc_plugin_desc bf16_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "bf16",
    .version = "0.1.0",
    .description = "bfloat16: 2 bytes, float32's range, round to nearest even, tolerance 5e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &bf16_ops,
};

BC_PLUGIN_DEFINE(bf16_desc)
