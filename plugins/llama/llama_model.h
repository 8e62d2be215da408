/* llama_model.h: the Llama family's model (LlamaForCausalLM,
 * Qwen2ForCausalLM, MistralForCausalLM as transformers computes them) on the
 * CPU over the engine (llama_model.c): the weights, synthetic or from a
 * checkpoint, and the forward: RMSNorm, RoPE (default or llama3-scaled),
 * grouped-query attention through the engine's KV cache, SwiGLU, Qwen2's
 * q/k/v biases, a tied or untied lm_head.
 *
 * Dimension legend of engine/model/shape.h: V C L H Hkv D F Tmax; Q = H D,
 * K = Hkv D.
 */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include "family.h"
#include "llama_config.h"
#include "weights.h"

typedef struct llama_layer {
    eng_matrix q_proj, k_proj, v_proj; /* [Q, C], [K, C], [K, C]; back to back in the arena */
    eng_matrix o_proj;                 /* [C, Q] */
    float *q_bias, *k_bias, *v_bias;   /* [Q], [K], [K]; NULL without qkv_bias */
    float *o_bias;                     /* [C]; NULL without o_bias */
    eng_matrix gate_proj, up_proj;     /* [F, C] each; back to back */
    eng_matrix down_proj;              /* [C, F] */
    float *input_norm, *post_norm;     /* input_layernorm, post_attention_layernorm [C] */
} llama_layer;

typedef struct llama_weights {
    eng_weights base;        /* first: family &llama_model_family, shape cfg.shape, needs, dtype, the arena */
    llama_config cfg;
    eng_matrix embed_tokens; /* [V, C] */
    eng_matrix lm_head;      /* [V, C]; the same data as embed_tokens when tied */
    float *final_norm;       /* model.norm [C] */
    float *rope_cos, *rope_sin; /* [Tmax, D/2]: RoPE's tables (computed, not loaded) */
    llama_layer *layers;     /* [L], owned */
} llama_weights;

/* The family's LoRA modules, in the order it names them (lora.h). */
enum { LLAMA_LORA_Q = 0, LLAMA_LORA_K, LLAMA_LORA_V, LLAMA_LORA_O, LLAMA_LORA_GATE, LLAMA_LORA_UP, LLAMA_LORA_DOWN,
       LLAMA_LORA_N_MODULES };

/* The family (llama_model.c; family.h). */
extern const eng_family llama_model_family;

/* The weights are the engine's over the family's tensor table
 * (tensor_table.h): eng_weights_synthetic, eng_weights_load, eng_weights_free
 * on &w->base with &llama_model_family. */
/* dir's config, a missing pad id taken from eos as generate() does. */
bc_status llama_read_config(const char *dir, void *cfg, bc_error *err);

#endif
