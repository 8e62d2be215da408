/* formats.h: the ops of the three number formats (bc_precision_ops), one
 * table per format. The precision plugins (plugins/precision/fp32.c, fp16.c,
 * bf16.c, int8.c) hand these to the host; the OPT engine and the tests link the same
 * tables (this folder's static library) to convert weights and to read the
 * tolerances, so no format's rules or tolerance is written twice. */
#ifndef BENCHCTL_PRECISION_FORMATS_H
#define BENCHCTL_PRECISION_FORMATS_H

#include "benchctl/plugin.h"

extern const bc_precision_ops prec_fp32_ops; /* "float32" */
extern const bc_precision_ops prec_fp16_ops; /* "float16" */
extern const bc_precision_ops prec_bf16_ops; /* "bfloat16" */
extern const bc_precision_ops prec_int8_ops; /* "int8" (per-row scales: the backend's) */
extern const bc_precision_ops prec_w8a8_ops; /* "w8a8": int8 weights as prec_int8_ops, int8 activations */

#endif
