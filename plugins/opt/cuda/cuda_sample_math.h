/* cuda_sample_math.h: the scalar pieces of the device sampler
 * (cuda_sampling.cu) that the host tests check on the CPU
 * (tests/cuda_host/test_cuda_sample_math.c): the order-preserving integer
 * keys of floats the top-k / top-p bisections search over (the generator
 * step is ../splitmix.h's). Plain C that nvcc also compiles for the device.
 */
#ifndef OPT_CUDA_SAMPLE_MATH_H
#define OPT_CUDA_SAMPLE_MATH_H

#include <stdint.h>
#include <string.h>

#include "splitmix.h" /* ENG_HD, the generator step and uniform */

/* Larger float, larger key (for every non-NaN float, -0 < +0 aside). */
ENG_HD uint32_t eng_fkey(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The float of a key (the inverse of eng_fkey). */
ENG_HD float eng_keyf(uint32_t k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Key bounds of the top-p search: +0 and +inf. */
#define ENG_KEY_POS_ZERO 0x80000000u
#define ENG_KEY_POS_INF 0xff800000u

#endif
