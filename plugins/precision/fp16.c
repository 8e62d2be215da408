/* fp16.c: the "fp16" precision plugin, float16. Its ops (conversions, element
 * size, tolerance) are prec_fp16_ops in common/formats.c, the one home that
 * the OPT engine and the tests link too; common/float_bits.h has the rounding
 * rules and docs/plugins.md, "Precision plugins", what a backend may expect.
 */
#include "benchctl/plugin.h"
#include "formats.h"

static const bc_plugin_desc fp16_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "fp16",
    .version = "0.1.0",
    .description = "IEEE binary16 (float16): 2 bytes, round to nearest even, tolerance 1e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &prec_fp16_ops,
};

BC_PLUGIN_DEFINE(fp16_desc)
