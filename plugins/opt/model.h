/* model.h: the OPT decoder (as transformers' modeling_opt.py) on the CPU.
 *
 * Dimension legend, used in every comment and name in plugins/opt:
 *   V  vocab_size          C  hidden_size           L  num_hidden_layers
 *   H  num_attention_heads D  head_dim = C / H      F  ffn_dim
 *   P  word_embed_proj_dim (== C except in 350m)    Tmax max_position_embeddings
 *   B  rows generated at once (batch x samples)     T  tokens in this forward
 *   S  tokens in the KV cache, including this forward
 *
 * Weights: matrices are stored in the run's precision (bc dtype below) in one
 * contiguous allocation owned by opt_weights; biases and layer-norm
 * parameters are always fp32. A linear layer's weight is [out, in] row-major,
 * exactly as in PyTorch, so y = x W^T + b.
 */
#ifndef OPT_MODEL_H
#define OPT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "kernels.h"

typedef struct opt_hparams {
    int vocab_size;             /* V */
    int hidden_size;            /* C */
    int num_hidden_layers;      /* L */
    int num_attention_heads;    /* H */
    int ffn_dim;                /* F */
    int max_position_embeddings;/* Tmax (positions table has Tmax + 2 rows) */
    int word_embed_proj_dim;    /* P */
    int do_layer_norm_before;   /* 1: pre-LN (125m, 1.3b+); 0: post-LN (350m) */
    int pad_token_id, bos_token_id, eos_token_id;
    char name[64];              /* "opt-125m", or the checkpoint directory */
} opt_hparams;

/* Fills hp with a preset's shape: "125m", "350m", "1.3b", "2.7b", "6.7b",
 * "13b", "30b", "66b". Returns BC_ERR_INVALID for an unknown name. */
bc_status opt_hparams_preset(const char *preset, opt_hparams *hp, bc_error *err);

/* The model's parameter count, as transformers counts OPTForCausalLM's
 * (lm_head tied to embed_tokens, so counted once): embeddings, positions
 * (Tmax + 2 rows), project_in/out when P != C, the final layer norm when
 * pre-LN, and per layer q/k/v/out (C x C + C each), fc1, fc2 and two layer
 * norms. */
int64_t opt_hparams_n_parameters(const opt_hparams *hp);

/* The largest model and the largest tensor the engine takes. Below these,
 * every size derived from the shape (parameters, weight bytes, KV cache and
 * workspace bytes) fits in 64 bits with room to spare (docs/config.md,
 * "Sizes that are checked"). */
#define ENG_MAX_PARAMETERS (1LL << 40)
#define ENG_MAX_TENSOR_ELEMENTS 2147483647LL

/* Refuses a shape whose parameter count exceeds ENG_MAX_PARAMETERS or one of
 * whose tensors exceeds ENG_MAX_TENSOR_ELEMENTS, computed in floating point
 * so nothing can wrap: "<where>: the model is impossible: ..." naming the
 * config.json keys and what the weights would need. where is config.json's
 * path (or the preset's name). */
bc_status opt_hparams_check_size(const opt_hparams *hp, const char *where, bc_error *err);

/* A weight matrix [rows = out, cols = in] in dtype. data points into the
 * model's arena (or an mmap'ed checkpoint converted into it). */
typedef struct eng_matrix {
    eng_dtype dtype;
    int rows, cols;
    void *data;
} eng_matrix;

typedef struct opt_layer_weights {
    eng_matrix q_proj, k_proj, v_proj, out_proj; /* [C, C] */
    float *q_bias, *k_bias, *v_bias, *out_bias;  /* [C] */
    float *ln1_gamma, *ln1_beta;                 /* self_attn_layer_norm [C] */
    eng_matrix fc1;                              /* [F, C] */
    float *fc1_bias;                             /* [F] */
    eng_matrix fc2;                              /* [C, F] */
    float *fc2_bias;                             /* [C] */
    float *ln2_gamma, *ln2_beta;                 /* final_layer_norm [C] */
} opt_layer_weights;

typedef struct opt_weights {
    opt_hparams hp;
    eng_dtype dtype;
    eng_matrix embed_tokens;     /* [V, P]; also lm_head (tied) */
    eng_matrix embed_positions;  /* [Tmax + 2, C] */
    eng_matrix project_in;       /* [C, P], rows == 0 when P == C */
    eng_matrix project_out;      /* [P, C], rows == 0 when P == C */
    float *final_ln_gamma, *final_ln_beta; /* [C]; NULL when !do_layer_norm_before */
    opt_layer_weights *layers;   /* [L] */
    void *arena;                 /* the one allocation behind every pointer above */
    size_t arena_bytes;
    /* A LoRA adapter the CPU forward applies unfused (lora.h,
     * eng_lora_forward_add); borrowed, NULL: none. */
    struct eng_lora *lora_unfused;
} opt_weights;

/* Allocates the arena for hp in dtype and points every tensor into it
 * (contents uninitialised). */
bc_status opt_weights_alloc(opt_weights *w, const opt_hparams *hp, eng_dtype dtype, bc_error *err);
/* Seeded synthetic weights; see docs/opt.md for the scaling. */
bc_status opt_weights_init_synthetic(opt_weights *w, uint64_t seed, bc_error *err);
/* Loads a Hugging Face checkpoint directory (config.json + safetensors) and
 * converts to dtype. Implemented in checkpoint.c. */
bc_status opt_weights_load_checkpoint(opt_weights *w, const char *dir, eng_dtype dtype, bc_error *err);
void opt_weights_free(opt_weights *w);
/* Bytes of the arena opt_weights_alloc would allocate (0 if out of memory). */
size_t opt_weights_bytes(const opt_hparams *hp, eng_dtype dtype);

#endif
