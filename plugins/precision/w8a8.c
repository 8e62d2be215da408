/* w8a8.c: the "w8a8" precision plugin: int8 weights with one float32 scale
 * per row (output channel), as "int8", and int8 activations: the backend
 * quantises each row entering a linear layer on the fly and sums integer
 * products (VNNI where the CPU has it). Its ops are prec_w8a8_ops in
 * common/formats.c, the one home the engine and the tests link too.
 */
#include "benchctl/plugin.h"
#include "formats.h"

static const bc_plugin_desc w8a8_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_PRECISION,
    .name = "w8a8",
    .version = "0.1.0",
    .description = "int8 weights (a float32 scale per output channel) and int8 activations (a scale per row), "
                   "integer dot products; tolerance 8e-2",
    .settings = NULL,
    .n_settings = 0,
    .ops = &prec_w8a8_ops,
};

BC_PLUGIN_DEFINE(w8a8_desc)
