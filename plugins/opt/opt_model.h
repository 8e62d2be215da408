/* opt_model.h: the OPT decoder (as transformers' modeling_opt.py) on the CPU.
 *
 * Dimension legend (shape.h's, plus P), used in every comment and name in plugins/opt:
 *   V  vocab_size          C  hidden_size           L  num_hidden_layers
 *   H  num_attention_heads D  head_dim = C / H      F  ffn_dim
 *   P  word_embed_proj_dim (== C except in 350m)    Tmax max_position_embeddings
 *   B  rows generated at once (batch x samples)     T  tokens in this forward
 *   S  tokens in the KV cache, including this forward
 *
 * Weights: matrices are stored in the run's precision (bc dtype below) in one
 * contiguous allocation owned by opt_weights (laid out from OPT's tensor
 * table, opt_family.c); biases and layer-norm parameters are always fp32. A linear layer's weight is [out, in] row-major,
 * exactly as in PyTorch, so y = x W^T + b.
 */
#ifndef OPT_MODEL_H
#define OPT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "device.h"
#include "family.h"
#include "weights.h"

typedef struct opt_hparams {
    eng_shape s;                /* V C L H (Hkv == H) D = C / H F Tmax, token ids, name */
    int word_embed_proj_dim;    /* P */
    int do_layer_norm_before;   /* 1: pre-LN (125m, 1.3b+); 0: post-LN (350m) */
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

/* Refuses a shape whose parameter count exceeds ENG_MAX_PARAMETERS or one of
 * whose tensors exceeds ENG_MAX_TENSOR_ELEMENTS, computed in floating point
 * so nothing can wrap: "<where>: the model is impossible: ..." naming the
 * config.json keys and what the weights would need. where is config.json's
 * path (or the preset's name). */
bc_status opt_hparams_check_size(const opt_hparams *hp, const char *where, bc_error *err);

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
    eng_weights base;            /* first: family &opt_family, shape hp.s, needs, dtype, unfused LoRA, the arena */
    opt_hparams hp;
    eng_matrix embed_tokens;     /* [V, P]; also lm_head (tied) */
    eng_matrix embed_positions;  /* [Tmax + 2, C] */
    eng_matrix project_in;       /* [C, P], rows == 0 when P == C */
    eng_matrix project_out;      /* [P, C], rows == 0 when P == C */
    float *final_ln_gamma, *final_ln_beta; /* [C]; NULL when !do_layer_norm_before */
    opt_layer_weights *layers;   /* [L] */
} opt_weights;

/* The OPT family (opt_family.c; family.h) the engine runs these weights with. */
extern const eng_family opt_family;

/* OPT's weights through the engine's tensor table (opt_family.c;
 * tensor_table.h): the arena for hp in dtype with every tensor pointed into
 * it (contents uninitialised; hp's derived fields filled first), */
bc_status opt_weights_alloc(opt_weights *w, const opt_hparams *hp, eng_dtype dtype, bc_error *err);
/* seeded synthetic weights into it (docs/opt.md for the scaling), */
static inline bc_status opt_weights_init_synthetic(opt_weights *w, uint64_t seed, bc_error *err) {
    return eng_weights_fill_synthetic(&w->base, seed, err);
}
/* a Hugging Face checkpoint directory (config.json + safetensors or
 * pytorch_model.bin) converted to dtype, */
static inline bc_status opt_weights_load_checkpoint(opt_weights *w, const char *dir, eng_dtype dtype, bc_error *err) {
    return eng_weights_load(&w->base, &opt_family, dir, dtype, err);
}
static inline void opt_weights_free(opt_weights *w) { eng_weights_free(&w->base); }
/* the bytes of the arena opt_weights_alloc would allocate (0: refused), */
size_t opt_weights_bytes(const opt_hparams *hp, eng_dtype dtype);
/* w's header (base, hp) for hp in dtype with no arena: what a device's
 * plan reads (device.h) before the weights exist. */
void opt_weights_describe(opt_weights *w, const opt_hparams *hp, eng_dtype dtype);
/* OPT's CUDA device (cuda/cuda_backend.c); NULL in a build without the
 * CUDA path (opt_nocuda.c). */
extern const eng_device_ops *const opt_device_cuda;
/* The family's forward (opt_model.c; family.h). */
/* The family's head (family.h): final norm, project_out, lm_head of M rows. */
void opt_head_cpu(eng_model *m, const float *h, int M, float *logits);
void opt_forward_cpu(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                     int B, int T, eng_logits_mode mode, float *logits);
/* The family's check (family.h): positive dimensions, whole heads, sizes
 * that cannot wrap (opt_hparams_check_size). */
bc_status opt_hparams_check(const void *hp, bc_error *err);
/* fc2's bias derived after the synthetic fill (synthetic.c). */
void opt_synthetic_done(eng_weights *w);
/* OPT's LoRA modules, in the order opt_family names them (lora.h). */
enum { OPT_LORA_Q = 0, OPT_LORA_K, OPT_LORA_V, OPT_LORA_OUT, OPT_LORA_FC1, OPT_LORA_FC2, OPT_LORA_N_MODULES };
/* The workspace OPT's forward needs for hp (weights.h). */
eng_ws_needs opt_ws_needs(const opt_hparams *hp);
/* Fills hp->s's derived fields: n_kv_heads = n_heads, head_dim = C / H. */
void opt_hparams_derive(opt_hparams *hp);

#endif
