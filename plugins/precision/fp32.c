/* fp32.c: the "fp32" precision plugin, IEEE 754 binary32 (float32).
 *
 * Storage is the float itself, so both conversions are exact copies (NaN
 * payloads included). rel_tolerance = 1e-4, see docs/plugins.md, "Precision
 * tolerances": fp32 carries 24 significant bits (eps = 2^-23 ~ 1.2e-7), but the
 * reference (PyTorch) and our kernels sum in different orders and use
 * different exp/tanh approximations; over a forward of ~10^3-10^4-term dot
 * products and a dozen layers that drift stays around 1e-6..1e-5 of the logit
 * scale, and 1e-4 leaves an order of magnitude of headroom while still
 * catching any real bug (a wrong mask, a missing bias), which shows up at the
 * 1e-2..1 level.
 */
#include <string.h>

#include "benchctl/plugin.h"

/* src: n float32; dst: n float32. src and dst may be the same buffer. */
static void fp32_to_f32(const void *src, float *dst, size_t n) {
    if (n) memmove(dst, src, n * sizeof(float));
}

/* src: n float32; dst: n float32. */
static void fp32_from_f32(const float *src, void *dst, size_t n) {
    if (n) memmove(dst, src, n * sizeof(float));
}

static const bc_precision_ops fp32_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "float32",
    .element_size = 4,
    .to_f32 = fp32_to_f32,
    .from_f32 = fp32_from_f32,
    .rel_tolerance = 1e-4,
};

static const bc_plugin_desc fp32_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "fp32",
    .version = "0.1.0",
    .description = "IEEE binary32 (float32): 4 bytes, exact conversions, tolerance 1e-4",
    .settings = NULL,
    .n_settings = 0,
    .ops = &fp32_ops,
};

BC_PLUGIN_DEFINE(fp32_desc)
