/* precision.h: the OPT engine's number formats (opt_dtype) and the precision
 * plugins behind them. The engine's kernels read three storage layouts
 * (float32, float16, bfloat16); a case's precision plugin is accepted when
 * its conversions produce one of them, and every weight conversion (at load,
 * synthetic or from a checkpoint) goes through that format's
 * bc_precision_ops, the same tables the precision plugins hand the host
 * (plugins/precision/common/formats.c).
 */
#ifndef OPT_PRECISION_H
#define OPT_PRECISION_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "kernels.h"

/* The precision ops of dt (never NULL). */
const bc_precision_ops *opt_dtype_precision(opt_dtype dt);

/* The layout the precision plugin `name` with ops stores, as a dtype the
 * kernels read: checked by converting a set of probe values (ties,
 * subnormals, overflow, inf, NaN) both ways and comparing the bits with each
 * layout's. BC_ERR_UNSUPPORTED, naming the plugin, for any other layout. */
bc_status opt_precision_dtype(const char *name, const bc_precision_ops *ops, opt_dtype *dt, bc_error *err);

/* Converts n values src (dtype st) into dst (dtype dt) through the formats'
 * to_f32 / from_f32, in bulk. src and dst may be unaligned (a file's
 * bytes); they do not overlap. */
void opt_convert_values(void *dst, opt_dtype dt, const void *src, opt_dtype st, size_t n);

#endif
