/* weights.h: what the engine knows of a model's weights, whatever its family:
 * the matrix type of a linear layer, the shape, the run's dtype, the family
 * that made them and the unfused LoRA adapter the forward applies. A family's
 * weights struct starts with an eng_weights, so the engine
 * passes `const eng_weights *` and the family casts back to its own.
 *
 * Weights: matrices are stored in the run's precision (eng_dtype) in one
 * arena the family's weights own; vectors (biases, norm parameters) are
 * always fp32. A linear layer's weight is [out, in] row-major, exactly as in
 * PyTorch, so y = x W^T + b.
 */
#ifndef ENG_WEIGHTS_H
#define ENG_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "kernels.h"
#include "shape.h"

/* The largest model and the largest tensor the engine takes. Below these,
 * every size derived from the shape (parameters, weight bytes, KV cache and
 * workspace bytes) fits in 64 bits with room to spare (docs/config.md,
 * "Sizes that are checked"). */
#define ENG_MAX_PARAMETERS (1LL << 40)
#define ENG_MAX_TENSOR_ELEMENTS 2147483647LL

/* A weight matrix [rows = out, cols = in] in dtype. data points into the
 * model's arena. */
typedef struct eng_matrix {
    eng_dtype dtype;
    int rows, cols;
    void *data;
} eng_matrix;

/* The activations a family's forward needs per token beyond the shape's
 * (the workspace, forward.h): width >= C floats for the residual-sized
 * buffers (more where a family projects its embeddings), ff floats for the FFN's. */
typedef struct eng_ws_needs {
    int width, ff;
} eng_ws_needs;

struct eng_family;
struct eng_lora;

typedef struct eng_weights {
    const struct eng_family *family; /* static; the family whose forward runs these */
    eng_shape shape;                 /* the model's shape (a copy of the family's) */
    eng_ws_needs ws;                 /* the family's workspace needs for this shape */
    eng_dtype dtype;                 /* the matrices' dtype */
    /* A LoRA adapter the CPU forward applies unfused (lora.h,
     * eng_lora_forward_add); borrowed, NULL: none. */
    struct eng_lora *lora_unfused;
    void *arena;        /* the one allocation behind every tensor (eng_weights_arena); owned, NULL: none */
    size_t arena_bytes;
} eng_weights;

/* Allocates w's arena of bytes, streamed (kv_cache.h: eng_stream_alloc);
 * BC_ERR_NOMEM naming what (the model) and w's dtype. */
bc_status eng_weights_arena(eng_weights *w, size_t bytes, const char *what, bc_error *err);
/* Frees w's arena (none: nothing). */
void eng_weights_arena_free(eng_weights *w);

#endif
