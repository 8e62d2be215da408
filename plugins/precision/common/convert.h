/* convert.h: bulk conversions between float32 and the 16-bit formats, and
 * the int8 row quantiser's two passes (max |row|, then scale and round), one
 * table per instruction-set tier (cpu_isa.h), the fastest chosen at run
 * time. Every table gives the same bits as the scalar rules of float_bits.h
 * for every input; only the speed differs (portable: a scalar loop; avx2: 8
 * lanes, F16C for float16; avx512: 16 lanes, masked tails).
 * Buffers: src and dst do not overlap; 16-bit buffers are aligned to 2 bytes.
 * Used by the precision plugins' ops (formats.c) and the OPT engine's
 * kernels (the KV cache writes and the weight panels).
 */
#ifndef BENCHCTL_PRECISION_CONVERT_H
#define BENCHCTL_PRECISION_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_isa.h"

typedef struct prec_converters {
    cpu_isa isa; /* the tier whose instructions these use */
    /* src[n] -> dst[n] */
    void (*f16_to_f32)(const uint16_t *src, float *dst, size_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, size_t n);
    void (*bf16_to_f32)(const uint16_t *src, float *dst, size_t n);
    void (*f32_to_bf16)(const float *src, uint16_t *dst, size_t n);
    /* int8 rows (a scale per row, formats.c): the largest |src[i]| of
     * src[n], NaN skipped, 0 for n = 0 (as prec_f32_absmax); and
     * dst[i] = prec_f32_to_i8(src[i] * inv), for inv = 1 / the row's scale. */
    float (*f32_absmax)(const float *src, size_t n);
    void (*f32_to_i8)(const float *src, int8_t *dst, size_t n, float inv);
} prec_converters;

/* The table of one tier: the best one built that does not exceed isa (the
 * avx512_bf16 tier converts with the avx512 code). Never NULL; the caller
 * makes sure the CPU can run isa. */
const prec_converters *prec_converters_for(cpu_isa isa);
/* prec_converters_for(cpu_isa_detect()). */
const prec_converters *prec_converters_best(void);

/* Per-tier tables, NULL when built without the tier's instructions. */
const prec_converters *prec_converters_portable(void); /* convert.c */
const prec_converters *prec_converters_avx2(void);     /* convert_avx2.c */
const prec_converters *prec_converters_avx512(void);   /* convert_avx512.c */

#endif
