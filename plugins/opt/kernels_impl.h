/* kernels_impl.h: private to the kernel files (kernels*.c, pool.c). Each SIMD
 * file exports one getter returning its table, or NULL when it was built
 * without that ISA; kernels.c picks among them with opt_isa_detect().
 */
#ifndef OPT_KERNELS_IMPL_H
#define OPT_KERNELS_IMPL_H

#include "kernels.h"

const opt_kernels *opt_kernels_avx2(void);        /* kernels_avx2.c */
const opt_kernels *opt_kernels_avx512(void);      /* kernels_avx512.c */
const opt_kernels *opt_kernels_avx512_bf16(void); /* kernels_avx512.c */

#endif
