/* llama_config.h: the hyperparameters of a Llama-family model (model_type
 * llama, qwen2, mistral): its shape (engine/model/shape.h) and what the
 * family's forward needs beyond it (RMSNorm epsilon, RoPE, biases, a tied
 * lm_head, a sliding window); read from a Hugging Face checkpoint's
 * config.json (transformers 4.x and 5.x spellings) and
 * generation_config.json, or taken from a preset of a published model's
 * shape (synthetic weights).
 */
#ifndef LLAMA_CONFIG_H
#define LLAMA_CONFIG_H

#include "benchctl/plugin.h" /* bc_status, bc_error */
#include "model/shape.h"     /* engine/model: eng_shape */
#include "norm_rope_act.h"   /* engine/kernels: eng_rope_scaling */

typedef enum llama_family {
    LLAMA_FAMILY_LLAMA = 0,   /* model_type "llama" (Llama 2/3, SmolLM2) */
    LLAMA_FAMILY_QWEN2 = 1,   /* "qwen2" (Qwen2, Qwen2.5) */
    LLAMA_FAMILY_MISTRAL = 2, /* "mistral" */
} llama_family;

typedef struct llama_config {
    eng_shape shape; /* first: a llama_config * is an eng_shape * */
    llama_family family;
    double rms_norm_eps;          /* RMSNorm epsilon */
    double rope_theta;            /* RoPE base */
    eng_rope_scaling rope_scaling; /* ENG_ROPE_DEFAULT, or llama3 with its four parameters */
    int qkv_bias;                 /* q/k/v projections have biases (Qwen2 always; Llama's attention_bias) */
    int o_bias;                   /* o_proj has a bias (Llama's attention_bias; never Qwen2, Mistral) */
    int tie_word_embeddings;      /* lm_head is embed_tokens */
    int sliding_window;           /* keys a query sees, itself included; 0: all (Mistral's sliding_window;
                                     Qwen2's only when use_sliding_window) */
} llama_config;

/* "llama", "qwen2", "mistral". */
const char *llama_family_name(llama_family f);

/* Reads dir/config.json and, when present, dir/generation_config.json (its
 * pad/bos/eos override config.json's, as generate() uses them); the shape's
 * name is the directory's last component. Errors name the file and key. */
bc_status llama_config_read_dir(llama_config *cfg, const char *dir, bc_error *err);

/* The same from text: config_json (required) and generation_json (NULL:
 * none); config_name and generation_name are what errors call them. */
bc_status llama_config_parse(llama_config *cfg, const char *config_json, const char *config_name,
                             const char *generation_json, const char *generation_name, bc_error *err);

/* A preset: the exact shape of a published model, for synthetic weights:
 * "qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-1b", "smollm2-135m". An
 * unknown name is BC_ERR_SETTING with the list. */
bc_status llama_config_preset(const char *name, llama_config *cfg, bc_error *err);

/* The presets' names, NULL-terminated (a settings table's choices). */
extern const char *const llama_preset_names[];

#endif
