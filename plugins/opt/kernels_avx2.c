/* kernels_avx2.c: placeholder; its owner fills it in. */
