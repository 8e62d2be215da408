/* opt_family.c: the OPT family as the engine sees it (family.h): its tensor
 * table (the checkpoint's names, shapes and where each tensor lands in
 * opt_weights; the engine lays out, fills, loads and adapts the weights from
 * it), its forward (opt_model.c), its presets and config.json
 * (checkpoint.c), the fc2 bias of synthetic weights (synthetic.c), its LoRA
 * modules as PEFT names them.
 */
#include "checkpoint.h"
#include "ckpt_load.h"
#include "opt_model.h"

#include <stddef.h>

/* Conditions of the table's rows (fam_conditions). */
enum { OPT_HAS_PROJ = 1, /* P != C: project_in / project_out */
       OPT_PRE_LN = 2 }; /* do_layer_norm_before: a final layer norm */

#define W(f) offsetof(opt_weights, f)
#define MAT ENG_TENSOR_MATRIX
#define VEC ENG_TENSOR_VECTOR
/* A layer's rows: a matrix [r, c] (its synthetic std, divided by sqrt(C)
 * with ENG_TENSOR_STD_PER_SQRT_C in flags), a bias [r], a layer norm's
 * weight and bias [C]; "layers.%d.<path>.weight" and so on. */
#define LMAT(path, r, c, flags, field, id, std)                                                                \
    {"layers.%d." path ".weight", MAT, ENG_DIM_##r, ENG_DIM_##c, 0, 0, ENG_TENSOR_LAYER | (flags),           \
     offsetof(opt_layer_weights, field), NULL, id, ENG_FILL_NORMAL, std}
#define LBIAS(path, r, field, id)                                                                              \
    {"layers.%d." path ".bias", VEC, ENG_DIM_##r, ENG_DIM_NONE, 0, 0, ENG_TENSOR_LAYER,                      \
     offsetof(opt_layer_weights, field), NULL, id, ENG_FILL_ZEROS, 0}
#define LNORM(path, gamma, beta, id)                                                                           \
    {"layers.%d." path ".weight", VEC, ENG_DIM_C, ENG_DIM_NONE, 0, 0, ENG_TENSOR_LAYER,                      \
     offsetof(opt_layer_weights, gamma), NULL, id, ENG_FILL_ONES, 0},                                        \
    {"layers.%d." path ".bias", VEC, ENG_DIM_C, ENG_DIM_NONE, 0, 0, ENG_TENSOR_LAYER,                        \
     offsetof(opt_layer_weights, beta), NULL, (id) + 1, ENG_FILL_ZEROS, 0}

/* In arena order; ids are the synthetic weights' (docs/opt.md). X0 = P,
 * X1 = Tmax + 2 (fam_extra_dims). */
static const eng_tensor tensors[] = {
    {"embed_tokens.weight", MAT, ENG_DIM_V, ENG_DIM_X0, 0, 0, 0, W(embed_tokens), NULL, 0, ENG_FILL_NORMAL, 0.02f},
    {"embed_positions.weight", MAT, ENG_DIM_X1, ENG_DIM_C, 0, 0, 0, W(embed_positions), NULL, 1, ENG_FILL_NORMAL, 0.02f},
    {"project_in.weight", MAT, ENG_DIM_C, ENG_DIM_X0, OPT_HAS_PROJ, 0, 0, W(project_in), NULL, 2, ENG_FILL_NORMAL, 0.02f},
    {"project_out.weight", MAT, ENG_DIM_X0, ENG_DIM_C, OPT_HAS_PROJ, 0, 0, W(project_out), NULL, 3, ENG_FILL_NORMAL,
     0.02f},
    {"final_layer_norm.weight", VEC, ENG_DIM_C, ENG_DIM_NONE, OPT_PRE_LN, 0, 0, W(final_ln_gamma), NULL, 4,
     ENG_FILL_ONES, 0},
    {"final_layer_norm.bias", VEC, ENG_DIM_C, ENG_DIM_NONE, OPT_PRE_LN, 0, 0, W(final_ln_beta), NULL, 5, ENG_FILL_ZEROS,
     0},
    /* post-LN OPT has none; transformers ignores one a file carries, and so do we */
    {"final_layer_norm.weight", ENG_TENSOR_IGNORED, 0, 0, 0, OPT_PRE_LN, 0, ENG_TENSOR_NO_FIELD, NULL, 0, 0, 0},
    {"final_layer_norm.bias", ENG_TENSOR_IGNORED, 0, 0, 0, OPT_PRE_LN, 0, ENG_TENSOR_NO_FIELD, NULL, 0, 0, 0},
    /* always tied: a file's copy must equal embed_tokens (the forward reads embed_tokens) */
    {"lm_head.weight", MAT, ENG_DIM_V, ENG_DIM_X0, 0, 0, ENG_TENSOR_TOP | ENG_TENSOR_TIE_CHECKED, ENG_TENSOR_NO_FIELD,
     "embed_tokens.weight", 0, 0, 0},
    LMAT("self_attn.q_proj", C, C, ENG_TENSOR_STD_PER_SQRT_C, q_proj, 0, 2.5f),
    LMAT("self_attn.k_proj", C, C, ENG_TENSOR_STD_PER_SQRT_C, k_proj, 1, 2.5f),
    LMAT("self_attn.v_proj", C, C, 0, v_proj, 2, 0.02f),
    LMAT("self_attn.out_proj", C, C, 0, out_proj, 3, 0.02f),
    LBIAS("self_attn.q_proj", C, q_bias, 4), LBIAS("self_attn.k_proj", C, k_bias, 5),
    LBIAS("self_attn.v_proj", C, v_bias, 6), LBIAS("self_attn.out_proj", C, out_bias, 7),
    LNORM("self_attn_layer_norm", ln1_gamma, ln1_beta, 8),
    LMAT("fc1", F, C, 0, fc1, 10, 0.02f), LBIAS("fc1", F, fc1_bias, 11),
    LMAT("fc2", C, F, 0, fc2, 12, 0.02f), LBIAS("fc2", C, fc2_bias, 13),
    LNORM("final_layer_norm", ln2_gamma, ln2_beta, 14),
};

static void fam_extra_dims(const void *hparams, int64_t x[2]) {
    const opt_hparams *hp = hparams;
    x[0] = hp->word_embed_proj_dim;
    x[1] = (int64_t)hp->s.max_positions + 2;
}
static unsigned fam_conditions(const void *hparams) {
    const opt_hparams *hp = hparams;
    return (hp->word_embed_proj_dim != hp->s.hidden_size ? OPT_HAS_PROJ : 0u) |
           (hp->do_layer_norm_before ? OPT_PRE_LN : 0u);
}
static eng_ws_needs fam_ws_needs(const void *hp) { return opt_ws_needs(hp); }
static const char *fam_display_name(const void *hp) {
    (void)hp;
    return "OPT";
}
static bc_status fam_preset(const char *name, void *hp, bc_error *err) { return opt_hparams_preset(name, hp, err); }
static bc_status fam_config(const char *dir, void *hp, bc_error *err) {
    return opt_hparams_from_checkpoint(dir, hp, err);
}

/* hp with its derived fields (a shape written by hand may lack them). */
static opt_hparams derived(const opt_hparams *hp) {
    opt_hparams d = *hp;
    opt_hparams_derive(&d);
    return d;
}
bc_status opt_weights_alloc(opt_weights *w, const opt_hparams *hp, eng_dtype dtype, bc_error *err) {
    const opt_hparams d = derived(hp);
    return eng_weights_alloc(&w->base, &opt_family, &d, dtype, err);
}
size_t opt_weights_bytes(const opt_hparams *hp, eng_dtype dtype) {
    const opt_hparams d = derived(hp);
    return eng_weights_bytes(&opt_family, &d, dtype);
}
void opt_weights_describe(opt_weights *w, const opt_hparams *hp, eng_dtype dtype) {
    const opt_hparams d = derived(hp);
    eng_weights_describe(&w->base, &opt_family, &d, dtype);
}
int64_t opt_hparams_n_parameters(const opt_hparams *hp) {
    const opt_hparams d = derived(hp);
    return eng_weights_n_parameters(&opt_family, &d);
}

/* LoRA: the modules of an OPT layer (OPT_LORA_*), their paths in the table
 * and where PEFT finds them in an OPTForCausalLM (either prefix it writes). */
static const char *const lora_names[OPT_LORA_N_MODULES] = {"q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"};
static const char *const lora_paths[OPT_LORA_N_MODULES] = {"self_attn.q_proj", "self_attn.k_proj",
                                                           "self_attn.v_proj", "self_attn.out_proj", "fc1", "fc2"};
static const char *const lora_prefixes[] = {"base_model.model.model.decoder.layers", "base_model.model.decoder.layers",
                                            NULL};
static const char *const ckpt_prefixes[] = {"model.decoder.", "decoder.", NULL};

const eng_family opt_family = {
    .name = "opt",
    .forward = opt_forward_cpu,
    .head = opt_head_cpu,
    .tensors = tensors,
    .n_tensors = (int)(sizeof tensors / sizeof tensors[0]),
    .layers_offset = offsetof(opt_weights, layers),
    .extra_dims = fam_extra_dims,
    .conditions = fam_conditions,
    .check = opt_hparams_check,
    .ws_needs = fam_ws_needs,
    .synthetic_done = opt_synthetic_done,
    .ckpt_prefixes = ckpt_prefixes,
    .display_name = fam_display_name,
    .lora_n_modules = OPT_LORA_N_MODULES,
    .lora_module_names = lora_names,
    .lora_module_paths = lora_paths,
    .lora_peft_prefixes = lora_prefixes,
    .hparams_size = sizeof(opt_hparams),
    .weights_size = sizeof(opt_weights),
    .hparams_offset = offsetof(opt_weights, hp),
    .layer_size = sizeof(opt_layer_weights),
    .default_preset = "125m",
    .preset_fmt = "facebook/opt-%s",
    .preset = fam_preset,
    .config = fam_config,
    .check_files = eng_ck_check_files,
};
