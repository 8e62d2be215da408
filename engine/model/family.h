/* family.h: the interface a model family's folder fills (plugins/opt,
 * docs/engine.md "How a family is added"). The engine names no family: it
 * runs a family's forward over its shared ops (forward.h), sizes caches and
 * workspaces from the family's shape (shape.h) and needs (weights.h), and
 * lets the family adapt its own matrices (LoRA).
 */
#ifndef ENG_FAMILY_H
#define ENG_FAMILY_H

#include "forward.h"

/* The most LoRA modules a family's layer has (bits of an unsigned). */
#define ENG_LORA_MAX_MODULES 8

typedef struct eng_family {
    const char *name; /* "opt" */
    /* The forward after eng_forward's checks: embeddings (m->ws.pos holds the
     * positions), every layer (eng_kv_store, eng_attention and the kernels'
     * linear), the final norm and the head into logits (mode). m->w is the
     * family's weights. Never fails once eng_forward's checks passed. */
    void (*forward)(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                    int B, int T, eng_logits_mode mode, float *logits);
    /* ---- LoRA (engine/weights/lora.h) ---- */
    /* A LoRA target of layer l: the matrix module m adapts in the weights
     * (NULL: the family has no such module; the hook NULL: the family takes
     * no LoRA adapter, and the fields below are unused). */
    eng_matrix *(*lora_matrix)(eng_weights *w, int l, int m);
    /* The modules of a layer, as lora_targets and PEFT's target_modules name
     * them ([lora_n_modules] <= ENG_LORA_MAX_MODULES: "q_proj", ...), and
     * each one's path inside a layer ("self_attn.q_proj"). */
    int lora_n_modules;
    const char *const *lora_module_names, *const *lora_module_paths;
    /* The layers PEFT saves, NULL-terminated: a tensor is
     * "<prefix>.<l>.<path>.lora_A.weight" for one of them. */
    const char *const *lora_peft_prefixes;
    /* Module m's [out, in] on shape s. */
    void (*lora_shape)(const eng_shape *s, int m, int *out, int *in);

    /* ---- what the plugin glue (engine/plugin/eng_plugin.c) asks ---- */
    /* The family's hparams struct (its first member an eng_shape) and
     * weights struct (its first member an eng_weights), in bytes; where in
     * the weights the hparams they were made from sit (a checkpoint's, with
     * its name); the bytes of one layer's table entry (host memory beside
     * the arena, n_layers of them). */
    size_t hparams_size, weights_size, hparams_offset, layer_size;
    const char *default_preset; /* the shape of synthetic weights when `model` is left empty */
    const char *preset_fmt;     /* the model a preset names, with %s: "facebook/opt-%s" */
    /* A preset's shape into hp; BC_ERR_INVALID naming the presets. */
    bc_status (*preset)(const char *name, void *hp, bc_error *err);
    /* dir/config.json (and what goes with it) into hp; errors name the file
     * and the key. */
    bc_status (*config)(const char *dir, void *hp, bc_error *err);
    /* dir holds a config and weights (no file read); every tensor checked
     * without converting (prepare). */
    bc_status (*check_files)(const char *dir, bc_error *err);
    bc_status (*validate)(const char *dir, bc_error *err);
    /* The parameter count as transformers counts it. */
    int64_t (*n_parameters)(const void *hp);
    /* Host bytes of the weights' arena for hp in dtype (0: too large). */
    size_t (*arena_bytes)(const void *hp, eng_dtype dtype);
    /* The weights' header for hp in dtype, no arena (a device's plan). */
    void (*describe)(eng_weights *w, const void *hp, eng_dtype dtype);
    /* Seeded synthetic weights, or a checkpoint's, into w (weights_size
     * bytes); freed by weights_free (also after a failure). */
    bc_status (*synthetic)(eng_weights *w, const void *hp, eng_dtype dtype, uint64_t seed, bc_error *err);
    bc_status (*load)(eng_weights *w, const char *dir, eng_dtype dtype, bc_error *err);
    void (*weights_free)(eng_weights *w);
    /* A case of `positions` tokens (prompt + response) on hp: BC_OK, or the
     * one line why the family cannot run it (NULL: every case within the
     * shape's positions). */
    bc_status (*check_positions)(const void *hp, int positions, bc_error *err);
} eng_family;

#endif
