/* splitmix.h: the engine's one generator step, splitmix64, and the uniform
 * drawn from it: sampling.c's row generators on the host and the CUDA
 * sampler's on the device (cuda/cuda_sampling.cu) use these, so both draw
 * the same stream. Plain C that nvcc also compiles for the device.
 */
#ifndef ENG_SPLITMIX_H
#define ENG_SPLITMIX_H

#include <stdint.h>

#ifdef __CUDACC__
#define ENG_HD static __host__ __device__ __forceinline__
#else
#define ENG_HD static inline
#endif

/* One step of a generator: advances *state, returns 64 random bits. */
ENG_HD uint64_t eng_splitmix_next(uint64_t *state) {
    *state += 0x9e3779b97f4a7c15ull;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform in [0, 1) from the top 53 bits of z. */
ENG_HD double eng_uniform_from(uint64_t z) { return (double)(z >> 11) * (1.0 / 9007199254740992.0); }

#endif
