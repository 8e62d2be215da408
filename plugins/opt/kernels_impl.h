/* kernels_impl.h: private to the kernel files (kernels*.c, pool.c). Each
 * variant file exports one getter returning its table, or NULL when it was
 * built without that ISA; kernels.c (the dispatcher) picks among them. The
 * variants reach the number formats through plugins/precision/common: the
 * bit rules inline (float_bits.h) and the bulk converters of their own tier
 * (convert.h), never through the dispatcher.
 */
#ifndef OPT_KERNELS_IMPL_H
#define OPT_KERNELS_IMPL_H

#include <string.h>

#include "convert.h"
#include "kernels.h"

const opt_kernels *opt_kernels_portable(void);    /* kernels_portable.c */
const opt_kernels *opt_kernels_avx2(void);        /* kernels_avx2.c */
const opt_kernels *opt_kernels_avx512(void);      /* kernels_avx512.c */
const opt_kernels *opt_kernels_avx512_bf16(void); /* kernels_avx512.c */

/* The table entries to_f32 and from_f32 of a variant: n values from or to
 * dtype, with the bulk converters cv (the variant's tier). */
static inline void opt_convert_to_f32(const prec_converters *cv, float *dst, const void *src, opt_dtype st, size_t n)
{
    switch (st) {
    case OPT_F32: memmove(dst, src, n * sizeof(float)); return;
    case OPT_F16: cv->f16_to_f32(src, dst, n); return;
    case OPT_BF16: cv->bf16_to_f32(src, dst, n); return;
    }
}

static inline void opt_convert_from_f32(const prec_converters *cv, void *dst, opt_dtype dt, const float *src, size_t n)
{
    switch (dt) {
    case OPT_F32: memmove(dst, src, n * sizeof(float)); return;
    case OPT_F16: cv->f32_to_f16(src, dst, n); return;
    case OPT_BF16: cv->f32_to_bf16(src, dst, n); return;
    }
}

#endif
