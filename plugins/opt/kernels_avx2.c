/* kernels_avx2.c: the AVX2 + FMA + F16C variant (built with -mavx2 -mfma
 * -mf16c). Placeholder until written: returns NULL, so it is never selected. */
#include "kernels_impl.h"

const opt_kernels *opt_kernels_avx2(void) { return NULL; }
