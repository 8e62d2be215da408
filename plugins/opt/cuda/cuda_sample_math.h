/* cuda_sample_math.h: the scalar pieces of the device sampler
 * (cuda_sampling.cu) that the host tests check on the CPU
 * (tests/cuda_host/test_cuda_sample_math.c): the order-preserving integer
 * keys of floats the top-k / top-p bisections search over, and the
 * per-row generator step (the CPU's splitmix64, sampling.c). Plain C that
 * nvcc also compiles for the device.
 */
#ifndef OPT_CUDA_SAMPLE_MATH_H
#define OPT_CUDA_SAMPLE_MATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define OPT_HD static __host__ __device__ __forceinline__
#else
#define OPT_HD static inline
#endif

/* Larger float, larger key (for every non-NaN float, -0 < +0 aside). */
OPT_HD uint32_t opt_fkey(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The float of a key (the inverse of opt_fkey). */
OPT_HD float opt_keyf(uint32_t k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Key bounds of the top-p search: +0 and +inf. */
#define OPT_KEY_POS_ZERO 0x80000000u
#define OPT_KEY_POS_INF 0xff800000u

/* One step of a row's generator: opt_rng_next of sampling.c. */
OPT_HD uint64_t opt_splitmix_next(uint64_t *state) {
    *state += 0x9e3779b97f4a7c15ull;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform in [0, 1) from 53 bits: opt_rng_uniform of sampling.c. */
OPT_HD double opt_uniform_from(uint64_t z) { return (double)(z >> 11) * (1.0 / 9007199254740992.0); }

#endif
