/* family.h: the interface a model family's folder fills (plugins/opt,
 * docs/engine.md "How a family is added"). The engine names no family: it
 * runs a family's forward over its shared ops (forward.h), sizes caches and
 * workspaces from the family's shape (shape.h) and needs (weights.h), and
 * lays out, initialises, loads and adapts (LoRA) its weights from its tensor
 * table (tensor_table.h).
 */
#ifndef ENG_FAMILY_H
#define ENG_FAMILY_H

#include "forward.h"
#include "tensor_table.h"

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
    /* The forward's last part alone: the final norm and the head of M rows
     * of the residual stream h [M, C] (what the layers leave in m->ws.x)
     * into logits [M, V]; M at most the workspace's tokens, h none of the
     * workspace's buffers. The forward's logits are this over its rows; the
     * score path (engine/rollout/score.c) runs it in chunks of positions. */
    void (*head)(eng_model *m, const float *h, int M, float *logits);
    /* ---- the weights (engine/weights/tensor_table.h) ---- */
    /* The tensor table, [n_tensors] rows, and where the weights struct
     * holds its pointer to the layers' structs (layer_size bytes each,
     * host memory beside the arena, n_layers of them). */
    const eng_tensor *tensors;
    int n_tensors;
    size_t layers_offset;
    /* The family's own dimensions for hp (ENG_DIM_X0, ENG_DIM_X1); NULL:
     * none. */
    void (*extra_dims)(const void *hp, int64_t x[2]);
    /* The conditions the rows' when / unless name, as bits, that hold for
     * hp (Llama: q/k/v biases, an untied head); NULL: none. */
    unsigned (*conditions)(const void *hp);
    /* The shape the family's forward runs (positive dimensions, sizes that
     * cannot wrap): BC_OK, or the one line why not. */
    bc_status (*check)(const void *hp, bc_error *err);
    /* The workspace the forward needs for hp (weights.h). */
    eng_ws_needs (*ws_needs)(const void *hp);
    /* Fills the table's computed tensors once the arena is laid out (Llama:
     * RoPE's tables); NULL: none. */
    bc_status (*computed)(eng_weights *w, bc_error *err);
    /* After the table's synthetic rules: what the family derives from
     * them (OPT: fc2's bias); NULL: nothing. */
    void (*synthetic_done)(eng_weights *w);
    /* The prefixes the checkpoint's names sit under, NULL-terminated,
     * tried in order on the first row's name ("model.decoder.",
     * "decoder."). */
    const char *const *ckpt_prefixes;
    /* The model's name in "not part of the <name> model" (NULL: name). */
    const char *(*display_name)(const void *hp);

    /* ---- LoRA (engine/weights/lora.h) ---- */
    /* The modules of a layer, as lora_targets and PEFT's target_modules name
     * them ([lora_n_modules] <= ENG_LORA_MAX_MODULES: "q_proj", ...; 0: the
     * family takes no LoRA adapter), and each one's path inside a layer
     * ("self_attn.q_proj"): the table's "...%d.<path>.weight" row is the
     * matrix it adapts. */
    int lora_n_modules;
    const char *const *lora_module_names, *const *lora_module_paths;
    /* The layers PEFT saves, NULL-terminated: a tensor is
     * "<prefix>.<l>.<path>.lora_A.weight" for one of them. */
    const char *const *lora_peft_prefixes;

    /* ---- what the plugin glue (engine/plugin) asks ---- */
    /* The family's hparams struct (its first member an eng_shape) and
     * weights struct (its first member an eng_weights), in bytes; where in
     * the weights the hparams they were made from sit (a checkpoint's, with
     * its name); the bytes of one layer's struct. */
    size_t hparams_size, weights_size, hparams_offset, layer_size;
    const char *default_preset; /* the shape of synthetic weights when `model` is left empty */
    const char *preset_fmt;     /* the model a preset names, with %s: "facebook/opt-%s" */
    /* A preset's shape into hp; BC_ERR_INVALID naming the presets. */
    bc_status (*preset)(const char *name, void *hp, bc_error *err);
    /* dir/config.json (and what goes with it) into hp; errors name the file
     * and the key. */
    bc_status (*config)(const char *dir, void *hp, bc_error *err);
    /* dir holds a config and weights (no file read). */
    bc_status (*check_files)(const char *dir, bc_error *err);
    /* A case of `positions` tokens (prompt + response) on hp: BC_OK, or the
     * one line why the family cannot run it (NULL: every case within the
     * shape's positions). */
    bc_status (*check_positions)(const void *hp, int positions, bc_error *err);
} eng_family;

#endif
