/* opt_family.c: the OPT family as the engine sees it (family.h): its forward
 * and LoRA matrices (opt_model.c), and what the plugin glue asks of it
 * (engine/plugin/eng_plugin.c): presets, config.json, the checkpoint's files
 * and tensors (checkpoint.c), synthetic weights (synthetic.c) and sizes.
 */
#include "checkpoint.h"
#include "ckpt_load.h"
#include "opt_model.h"

#include <stddef.h>

static bc_status fam_preset(const char *name, void *hp, bc_error *err) { return opt_hparams_preset(name, hp, err); }
static bc_status fam_config(const char *dir, void *hp, bc_error *err) {
    return opt_hparams_from_checkpoint(dir, hp, err);
}
static int64_t fam_n_parameters(const void *hp) { return opt_hparams_n_parameters(hp); }
static size_t fam_arena_bytes(const void *hp, eng_dtype dt) { return opt_weights_bytes(hp, dt); }
static void fam_describe(eng_weights *w, const void *hp, eng_dtype dt) { opt_weights_describe((opt_weights *)w, hp, dt); }
static bc_status fam_synthetic(eng_weights *w, const void *hp, eng_dtype dt, uint64_t seed, bc_error *err) {
    bc_status st = opt_weights_alloc((opt_weights *)w, hp, dt, err);
    if (st == BC_OK) st = opt_weights_init_synthetic((opt_weights *)w, seed, err);
    return st;
}
static bc_status fam_load(eng_weights *w, const char *dir, eng_dtype dt, bc_error *err) {
    return opt_weights_load_checkpoint((opt_weights *)w, dir, dt, err);
}
static void fam_free(eng_weights *w) { opt_weights_free((opt_weights *)w); }

/* LoRA: the modules of an OPT layer (OPT_LORA_*), where PEFT finds them in
 * an OPTForCausalLM (either prefix it writes), and their [out, in]. */
static const char *const lora_names[OPT_LORA_N_MODULES] = {"q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"};
static const char *const lora_paths[OPT_LORA_N_MODULES] = {"self_attn.q_proj", "self_attn.k_proj",
                                                           "self_attn.v_proj", "self_attn.out_proj", "fc1", "fc2"};
static const char *const lora_prefixes[] = {"base_model.model.model.decoder.layers", "base_model.model.decoder.layers",
                                            NULL};
static void lora_shape(const eng_shape *s, int m, int *out, int *in) {
    const int C = s->hidden_size, F = s->ffn_size;
    const int outs[OPT_LORA_N_MODULES] = {C, C, C, C, F, C}, ins[OPT_LORA_N_MODULES] = {C, C, C, C, C, F};
    *out = outs[m];
    *in = ins[m];
}

const eng_family opt_family = {
    .name = "opt",
    .forward = opt_forward_cpu,
    .lora_matrix = opt_lora_matrix,
    .lora_n_modules = OPT_LORA_N_MODULES,
    .lora_module_names = lora_names,
    .lora_module_paths = lora_paths,
    .lora_peft_prefixes = lora_prefixes,
    .lora_shape = lora_shape,
    .hparams_size = sizeof(opt_hparams),
    .weights_size = sizeof(opt_weights),
    .hparams_offset = offsetof(opt_weights, hp),
    .layer_size = sizeof(opt_layer_weights),
    .default_preset = "125m",
    .preset_fmt = "facebook/opt-%s",
    .preset = fam_preset,
    .config = fam_config,
    .check_files = eng_ck_check_files,
    .validate = opt_checkpoint_validate,
    .n_parameters = fam_n_parameters,
    .arena_bytes = fam_arena_bytes,
    .describe = fam_describe,
    .synthetic = fam_synthetic,
    .load = fam_load,
    .weights_free = fam_free,
};
