/* kernels_avx512.c: the AVX-512F and AVX512-BF16 variants. Placeholder until
 * written: returns NULL, so they are never selected. */
#include "kernels_impl.h"

const opt_kernels *opt_kernels_avx512(void) { return NULL; }
const opt_kernels *opt_kernels_avx512_bf16(void) { return NULL; }
