/* bf16.c: the "bf16" precision plugin, bfloat16. Its ops (conversions, element
 * size, tolerance) are prec_bf16_ops in common/formats.c, the one home that
 * the OPT engine and the tests link too; common/float_bits.h has the rounding
 * rules and docs/plugins.md, "Precision plugins", what a backend may expect.
 */
#include "benchctl/plugin.h"
#include "formats.h"

static const bc_plugin_desc bf16_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "bf16",
    .version = "0.1.0",
    .description = "bfloat16: 2 bytes, float32's range, round to nearest even, tolerance 5e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &prec_bf16_ops,
};

BC_PLUGIN_DEFINE(bf16_desc)
