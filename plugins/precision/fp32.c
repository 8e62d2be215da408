/* fp32.c: the "fp32" precision plugin, float32. Its ops (conversions, element
 * size, tolerance) are prec_fp32_ops in common/formats.c, the one home that
 * the OPT engine and the tests link too; common/float_bits.h has the rounding
 * rules and docs/plugins.md, "Precision plugins", what a backend may expect.
 */
#include "benchctl/plugin.h"
#include "formats.h"

static const bc_plugin_desc fp32_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "fp32",
    .version = "0.1.0",
    .description = "IEEE binary32 (float32): 4 bytes, exact conversions, tolerance 1e-4",
    .settings = NULL,
    .n_settings = 0,
    .ops = &prec_fp32_ops,
};

BC_PLUGIN_DEFINE(fp32_desc)
