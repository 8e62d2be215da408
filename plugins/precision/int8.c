/* int8.c: the "int8" precision plugin, int8 weights with one float32 scale
 * per row (output channel), kept by the backend. Its ops (conversions,
 * element size, tolerance) are prec_int8_ops in common/formats.c, the one home that
 * the OPT engine and the tests link too; common/float_bits.h has the rounding
 * rules and docs/plugins.md, "Precision plugins", what a backend may expect.
 */
#include "benchctl/plugin.h"
#include "formats.h"

static const bc_plugin_desc int8_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "int8",
    .version = "0.1.0",
    .description = "int8 weights, a float32 scale per output channel (kept by the backend); tolerance 4e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &prec_int8_ops,
};

BC_PLUGIN_DEFINE(int8_desc)
