/* kernels_avx512.c: placeholder; its owner fills it in. */
