/* synthetic.h: seeded synthetic weights over a family's list of tensors
 * (synthetic.c). A family lists its tensors, each with a fixed id (so
 * element i of tensor t is a pure function of (seed, id, i) whatever the
 * threads), its rule and, for matrices, its row length; the engine fills
 * them in parallel and rounds them to the dtype in bulk.
 *
 * Rules: ENG_FILL_NORMAL ~ N(0, std^2), approximated by the sum of the four
 * 16-bit uniforms of r = splitmix64(key + i) (Irwin-Hall, mean and variance
 * matched, |x| <= 2 sqrt(3) std); ENG_FILL_ONES; ENG_FILL_ZEROS.
 */
#ifndef ENG_SYNTHETIC_H
#define ENG_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "kernels.h"

typedef enum eng_fill_kind { ENG_FILL_NORMAL, ENG_FILL_ONES, ENG_FILL_ZEROS } eng_fill_kind;

typedef struct eng_fill_tensor {
    void *data;
    eng_dtype dtype; /* fp32 for vectors */
    size_t n;
    uint64_t key;    /* eng_synthetic_key(seed, the tensor's id) */
    eng_fill_kind kind;
    float std;
    size_t cols; /* row length: an int8 matrix is filled whole rows at a time (scales per row) */
} eng_fill_tensor;

/* The key of tensor id under seed: splitmix64(seed ^ splitmix64(id + 1)). */
uint64_t eng_synthetic_key(uint64_t seed, uint64_t id);
/* Fills the n tensors of list on a pool of the online cores. */
bc_status eng_synthetic_fill(const eng_fill_tensor *list, size_t n, bc_error *err);

#endif
