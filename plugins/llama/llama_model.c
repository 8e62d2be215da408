/* llama_model.c: the Llama family on the CPU (llama_model.h): its shape's
 * checks, RoPE's tables, its tensor table (from which the engine lays out,
 * fills, loads and adapts the weights), and the decoder
 * forward as transformers' modeling_llama.py / modeling_qwen2.py /
 * modeling_mistral.py compute it, over the engine's shared ops (forward.h:
 * KV store, grouped-query attention, linear) and the RMSNorm / RoPE /
 * SiLU-times-gate kernels (norm_rope_act.h).
 */
#include "llama_model.h"

#include "ckpt_load.h"
#include "forward.h"
#include "kv_cache.h"
#include "lora.h"
#include "norm_rope_act.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* ------------------------------------------------------------------ shape */

/* The shape the engine runs (the family's check, family.h): positive
 * dimensions, whole groups of query heads, an even head size, and sizes
 * that cannot wrap. */
static bc_status check_config(const void *hp, bc_error *err) {
    const llama_config *cfg = hp;
    const eng_shape *s = &cfg->shape;
    if (s->vocab_size < 4 || s->hidden_size < 1 || s->n_layers < 1 || s->n_heads < 1 || s->n_kv_heads < 1 ||
        s->head_dim < 2 || s->ffn_size < 1 || s->max_positions < 1)
        return bc_error_set(err, BC_ERR_INVALID, "llama shape %s: every dimension must be positive (V >= 4)", s->name);
    if (s->n_heads % s->n_kv_heads != 0 || s->head_dim % 2 != 0)
        return bc_error_set(err, BC_ERR_INVALID,
                            "llama shape %s: %d query heads are not whole groups of %d KV heads, or head_dim %d is odd",
                            s->name, s->n_heads, s->n_kv_heads, s->head_dim);
    const double C = s->hidden_size, V = s->vocab_size, F = s->ffn_size, Q = (double)s->n_heads * s->head_dim;
    const double L = s->n_layers, K = (double)s->n_kv_heads * s->head_dim;
    /* the table's count (eng_weights_n_parameters), in floating point so nothing wraps */
    const double layer = 2 * Q * C + 2 * K * C + 3 * F * C + 2 * C + (cfg->qkv_bias ? Q + 2 * K : 0) + (cfg->o_bias ? C : 0);
    const double n = V * C * (cfg->tie_word_embeddings ? 1 : 2) + C + L * layer;
    if (n > (double)ENG_MAX_PARAMETERS || V * C > (double)ENG_MAX_TENSOR_ELEMENTS ||
        F * C > (double)ENG_MAX_TENSOR_ELEMENTS || Q * C > (double)ENG_MAX_TENSOR_ELEMENTS ||
        (double)s->max_positions * (s->head_dim / 2) > (double)ENG_MAX_TENSOR_ELEMENTS)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "%s: the model is impossible: %.3g parameters or a tensor over 2^31 - 1 elements; the "
                            "engine takes at most 2^40 parameters",
                            s->name, n);
    return BC_OK;
}

static eng_ws_needs ws_needs(const void *hp) {
    const llama_config *cfg = hp;
    /* residual-sized buffers: C; the FFN holds gate | up, 2F a token */
    return (eng_ws_needs){.width = cfg->shape.hidden_size, .ff = 2 * cfg->shape.ffn_size};
}

/* RoPE's tables (the table's computed rows), as transformers builds
 * inv_freq, llama3 scaling included. */
static bc_status rope_tables(eng_weights *base, bc_error *err) {
    llama_weights *w = (llama_weights *)base;
    const eng_shape *s = &w->cfg.shape;
    const int half = s->head_dim / 2;
    float *inv = malloc((size_t)half * sizeof *inv);
    if (!inv) return bc_error_set(err, BC_ERR_NOMEM, "llama weights: no memory for RoPE's frequencies");
    if (eng_rope_inv_freq(inv, s->head_dim, w->cfg.rope_theta, &w->cfg.rope_scaling) != 0) {
        free(inv);
        return bc_error_set(err, BC_ERR_INVALID, "llama shape %s: rope_theta %g or its scaling is out of range",
                            s->name, w->cfg.rope_theta);
    }
    eng_rope_cos_sin_table(w->rope_cos, w->rope_sin, inv, half, s->max_positions);
    free(inv);
    return BC_OK;
}

/* dir's config, with a missing pad id taken from eos as generate() does
 * ("Setting pad_token_id to eos_token_id"), so prompts are padded with it. */
bc_status llama_read_config(const char *dir, void *hp, bc_error *err) {
    llama_config *cfg = hp;
    bc_status st = llama_config_read_dir(cfg, dir, err);
    if (st == BC_OK && cfg->shape.pad_token_id < 0) cfg->shape.pad_token_id = cfg->shape.eos_token_id;
    return st;
}

/* ---------------------------------------------------------------- forward */

static const eng_nra_kernels *nra_of(const eng_model *m) { return eng_nra_for((cpu_isa)m->k->isa); }

/* One decoder layer on x[B, T, C] in place (ws->pos: the RoPE positions). */
static void decoder_layer(eng_model *m, eng_kv_cache *kv, int l, const uint8_t *mask, int mask_stride, int B, int T) {
    const llama_weights *w = (const llama_weights *)m->w;
    const llama_config *cfg = &w->cfg;
    const eng_shape *s = &cfg->shape;
    const llama_layer *lw = &w->layers[l];
    const eng_dtype dt = w->base.dtype;
    const eng_nra_kernels *nra = nra_of(m);
    const int C = s->hidden_size, F = s->ffn_size, D = s->head_dim, N = B * T;
    const int Q = s->n_heads * D, K = s->n_kv_heads * D;
    const float eps = (float)cfg->rms_norm_eps;
    eng_workspace *ws = &m->ws;
    float *x = ws->x, *xn = ws->xn, *q = ws->q, *kk = ws->kk, *vv = ws->vv, *att = ws->att, *ff = ws->ff;

    /* attention */
    nra->rms_norm_rows(xn, x, lw->input_norm, N, C, eps);
    const size_t es = eng_dtype_size(dt);
    int ldq = Q, ldkv = K;
    if ((const char *)lw->k_proj.data == (const char *)lw->q_proj.data + (size_t)Q * C * es &&
        (const char *)lw->v_proj.data == (const char *)lw->k_proj.data + (size_t)K * C * es &&
        (!lw->q_bias || (lw->k_bias == lw->q_bias + Q && lw->v_bias == lw->k_bias + K))) {
        eng_linear_parallel(m->pool, m->k, q, xn, lw->q_proj.data, dt, lw->q_bias, N, C, Q + 2 * K, 0);
        kk = q + Q;
        vv = q + Q + K;
        ldq = ldkv = Q + 2 * K;
    } else {
        eng_linear_parallel(m->pool, m->k, q, xn, lw->q_proj.data, dt, lw->q_bias, N, C, Q, 0);
        eng_linear_parallel(m->pool, m->k, kk, xn, lw->k_proj.data, dt, lw->k_bias, N, C, K, 0);
        eng_linear_parallel(m->pool, m->k, vv, xn, lw->v_proj.data, dt, lw->v_bias, N, C, K, 0);
    }
    eng_lora *lo = w->base.lora_unfused; /* an adapter applied unfused: after each GEMM, before RoPE / SiLU */
    if (lo) {
        eng_lora_forward_add(lo, l, LLAMA_LORA_Q, q, ldq, xn, C, N);
        eng_lora_forward_add(lo, l, LLAMA_LORA_K, kk, ldkv, xn, C, N);
        eng_lora_forward_add(lo, l, LLAMA_LORA_V, vv, ldkv, xn, C, N);
    }
    eng_rope_qk(nra, q, (size_t)ldq, s->n_heads, kk, (size_t)ldkv, s->n_kv_heads, N, D, ws->pos, w->rope_cos,
                w->rope_sin);
    const float scale = 1.0f / sqrtf((float)D);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < Q; i++) q[(size_t)n * ldq + i] *= scale;
    eng_kv_store(m, kv, l, kk, vv, ldkv, B, T);
    eng_attention(m, kv, l, att, q, ldq, mask, mask_stride, B, T);
    eng_linear_parallel(m->pool, m->k, xn, att, lw->o_proj.data, dt, lw->o_bias, N, Q, C, 0);
    if (lo) eng_lora_forward_add(lo, l, LLAMA_LORA_O, xn, C, att, Q, N);
    eng_residual(x, xn, (size_t)N * C);

    /* SwiGLU: down(silu(gate(h)) * up(h)) */
    nra->rms_norm_rows(xn, x, lw->post_norm, N, C, eps);
    if ((const char *)lw->up_proj.data == (const char *)lw->gate_proj.data + (size_t)F * C * es) {
        /* one GEMM: row n is [gate | up] at ff + 2nF; silu(gate) * up
         * compacted to ff + nF, which only overwrites rows already read */
        eng_linear_parallel(m->pool, m->k, ff, xn, lw->gate_proj.data, dt, NULL, N, C, 2 * F, 0);
        if (lo) {
            eng_lora_forward_add(lo, l, LLAMA_LORA_GATE, ff, 2 * F, xn, C, N);
            eng_lora_forward_add(lo, l, LLAMA_LORA_UP, ff + F, 2 * F, xn, C, N);
        }
        for (int n = 0; n < N; n++) {
            const float *row = ff + (size_t)n * 2 * F;
            nra->silu_mul_rows(ff + (size_t)n * F, row, row + F, 1, F);
        }
    } else {
        eng_linear_parallel(m->pool, m->k, ff, xn, lw->gate_proj.data, dt, NULL, N, C, F, 0);
        eng_linear_parallel(m->pool, m->k, ff + (size_t)N * F, xn, lw->up_proj.data, dt, NULL, N, C, F, 0);
        if (lo) {
            eng_lora_forward_add(lo, l, LLAMA_LORA_GATE, ff, F, xn, C, N);
            eng_lora_forward_add(lo, l, LLAMA_LORA_UP, ff + (size_t)N * F, F, xn, C, N);
        }
        nra->silu_mul_rows(ff, ff, ff + (size_t)N * F, N, F);
    }
    eng_linear_parallel(m->pool, m->k, xn, ff, lw->down_proj.data, dt, NULL, N, F, C, 0);
    if (lo) eng_lora_forward_add(lo, l, LLAMA_LORA_DOWN, xn, C, ff, F, N);
    eng_residual(x, xn, (size_t)N * C);
}

/* The family's head (family.h): the final RMS norm and lm_head of M rows. */
static void llama_head_cpu(eng_model *m, const float *h, int M, float *logits) {
    const llama_weights *w = (const llama_weights *)m->w;
    const eng_shape *s = &w->cfg.shape;
    eng_workspace *ws = &m->ws;
    nra_of(m)->rms_norm_rows(ws->xn, h, w->final_norm, M, s->hidden_size, (float)w->cfg.rms_norm_eps);
    eng_linear_parallel(m->pool, m->k, logits, ws->xn, w->lm_head.data, w->base.dtype, NULL, M, s->hidden_size,
                        s->vocab_size, 0);
}

/* The family's forward (family.h), after eng_forward's checks. */
static void llama_forward_cpu(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask,
                              int mask_stride, int B, int T, eng_logits_mode mode, float *logits) {
    const llama_weights *w = (const llama_weights *)m->w;
    const eng_shape *s = &w->cfg.shape;
    const int C = s->hidden_size, N = B * T;
    eng_workspace *ws = &m->ws;
    for (int n = 0; n < N; n++) {
        eng_matrix_row_to_f32(m->k, ws->x + (size_t)n * C, &w->embed_tokens, tokens[n]);
        if (ws->pos[n] < 0) ws->pos[n] = 0; /* a pad: any row of the table (its query is masked out) */
    }
    for (int l = 0; l < s->n_layers; l++) decoder_layer(m, kv, l, mask, mask_stride, B, T);
    if (mode == ENG_LOGITS_NONE) return;
    int M = N;
    const float *h = ws->x;
    if (mode == ENG_LOGITS_LAST) {
        M = B;
        if (T > 1) {
            for (int b = 0; b < B; b++)
                memcpy(ws->kk + (size_t)b * C, ws->x + ((size_t)b * T + T - 1) * C, (size_t)C * sizeof(float));
            h = ws->kk;
        }
    }
    llama_head_cpu(m, h, M, logits);
}

/* ------------------------------------------------------------------ LoRA */

static const char *const lora_names[LLAMA_LORA_N_MODULES] = {"q_proj", "k_proj",  "v_proj",   "o_proj",
                                                             "gate_proj", "up_proj", "down_proj"};
static const char *const lora_paths[LLAMA_LORA_N_MODULES] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
/* PEFT's names for a LlamaForCausalLM / Qwen2ForCausalLM /
 * MistralForCausalLM (get_peft_model's, and a bare decoder's). */
static const char *const lora_prefixes[] = {"base_model.model.model.layers", "base_model.model.layers", NULL};

/* ------------------------------------------------------------------ family */

static bc_status fam_preset(const char *name, void *cfg, bc_error *err) { return llama_config_preset(name, cfg, err); }

/* A sliding window narrower than the case would drop keys a query must see
 * (the engine attends to every cached key). */
static bc_status fam_check_positions(const void *hp, int positions, bc_error *err) {
    const llama_config *cfg = hp;
    if (cfg->sliding_window > 0 && cfg->sliding_window < positions)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "llama: sliding_window %d is smaller than the case's %d positions (prompt + response); "
                            "the engine attends to every cached key",
                            cfg->sliding_window, positions);
    return BC_OK;
}

/* The tensor table, in arena order: q/k/v, their biases and gate/up lie
 * back to back (one GEMM each when their sizes keep the alignment). ids are
 * the synthetic weights' (docs/llama.md): as OPT's, matrices and embeddings
 * N(0, 0.02^2), q_proj and k_proj N(0, (2.5 / sqrt(C))^2), norms 1, biases
 * 0. Names under "model."; the head at the top level. X0 = Tmax D / 2. */
enum { QKV_BIAS = 1, O_BIAS = 2, UNTIED = 4 }; /* conditions (fam_conditions) */
/* the rows' last arguments: id, fill rule, std */
#define TOP_(name, kind, r, c, when, flags, field, tie, ...)                                                    \
    {name, kind, ENG_DIM_##r, ENG_DIM_##c, when, 0, flags, offsetof(llama_weights, field), tie, __VA_ARGS__}
#define LAYER_(name, kind, r, c, when, flags, field, ...)                                                       \
    {"layers.%d." name, kind, ENG_DIM_##r, ENG_DIM_##c, when, 0, ENG_TENSOR_LAYER | (flags),                  \
     offsetof(llama_layer, field), NULL, __VA_ARGS__}
#define N02 ENG_FILL_NORMAL, 0.02f
#define QK_STD ENG_TENSOR_STD_PER_SQRT_C
static const eng_tensor tensors[] = {
    TOP_("embed_tokens.weight", ENG_TENSOR_MATRIX, V, C, 0, 0, embed_tokens, NULL, 0, N02),
    TOP_("lm_head.weight", ENG_TENSOR_MATRIX, V, C, UNTIED, ENG_TENSOR_TOP, lm_head, "embed_tokens.weight", 1, N02),
    TOP_("norm.weight", ENG_TENSOR_VECTOR, C, NONE, 0, 0, final_norm, NULL, 2, ENG_FILL_ONES, 0),
    TOP_("rope_cos", ENG_TENSOR_VECTOR, X0, NONE, 0, ENG_TENSOR_COMPUTED, rope_cos, NULL, 0, ENG_FILL_ZEROS, 0),
    TOP_("rope_sin", ENG_TENSOR_VECTOR, X0, NONE, 0, ENG_TENSOR_COMPUTED, rope_sin, NULL, 0, ENG_FILL_ZEROS, 0),
    LAYER_("self_attn.q_proj.weight", ENG_TENSOR_MATRIX, Q, C, 0, QK_STD, q_proj, 0, ENG_FILL_NORMAL, 2.5f),
    LAYER_("self_attn.k_proj.weight", ENG_TENSOR_MATRIX, K, C, 0, QK_STD, k_proj, 1, ENG_FILL_NORMAL, 2.5f),
    LAYER_("self_attn.v_proj.weight", ENG_TENSOR_MATRIX, K, C, 0, 0, v_proj, 2, N02),
    LAYER_("self_attn.q_proj.bias", ENG_TENSOR_VECTOR, Q, NONE, QKV_BIAS, 0, q_bias, 4, ENG_FILL_ZEROS, 0),
    LAYER_("self_attn.k_proj.bias", ENG_TENSOR_VECTOR, K, NONE, QKV_BIAS, 0, k_bias, 5, ENG_FILL_ZEROS, 0),
    LAYER_("self_attn.v_proj.bias", ENG_TENSOR_VECTOR, K, NONE, QKV_BIAS, 0, v_bias, 6, ENG_FILL_ZEROS, 0),
    LAYER_("self_attn.o_proj.weight", ENG_TENSOR_MATRIX, C, Q, 0, 0, o_proj, 3, N02),
    LAYER_("self_attn.o_proj.bias", ENG_TENSOR_VECTOR, C, NONE, O_BIAS, 0, o_bias, 7, ENG_FILL_ZEROS, 0),
    LAYER_("mlp.gate_proj.weight", ENG_TENSOR_MATRIX, F, C, 0, 0, gate_proj, 8, N02),
    LAYER_("mlp.up_proj.weight", ENG_TENSOR_MATRIX, F, C, 0, 0, up_proj, 9, N02),
    LAYER_("mlp.down_proj.weight", ENG_TENSOR_MATRIX, C, F, 0, 0, down_proj, 10, N02),
    LAYER_("input_layernorm.weight", ENG_TENSOR_VECTOR, C, NONE, 0, 0, input_norm, 11, ENG_FILL_ONES, 0),
    LAYER_("post_attention_layernorm.weight", ENG_TENSOR_VECTOR, C, NONE, 0, 0, post_norm, 12, ENG_FILL_ONES, 0),
    /* older checkpoints carry RoPE's inv_freq buffer; the tables are computed */
    {"layers.%d.self_attn.rotary_emb.inv_freq", ENG_TENSOR_IGNORED, ENG_DIM_NONE, ENG_DIM_NONE, 0, 0,
     ENG_TENSOR_LAYER, ENG_TENSOR_NO_FIELD, NULL, 0, ENG_FILL_ZEROS, 0},
};
#undef TOP_
#undef LAYER_
#undef N02
#undef QK_STD

static void fam_extra_dims(const void *hp, int64_t x[2]) {
    const eng_shape *s = &((const llama_config *)hp)->shape;
    x[0] = (int64_t)s->max_positions * (s->head_dim / 2);
}
static unsigned fam_conditions(const void *hp) {
    const llama_config *cfg = hp;
    return (cfg->qkv_bias ? QKV_BIAS : 0u) | (cfg->o_bias ? O_BIAS : 0u) | (cfg->tie_word_embeddings ? 0u : UNTIED);
}
static const char *fam_display_name(const void *hp) { return llama_family_name(((const llama_config *)hp)->family); }
static const char *const ckpt_prefixes[] = {"model.", NULL};

const eng_family llama_model_family = {
    .name = "llama", .forward = llama_forward_cpu, .head = llama_head_cpu,
    .tensors = tensors, .n_tensors = (int)(sizeof tensors / sizeof tensors[0]),
    .layers_offset = offsetof(llama_weights, layers), .extra_dims = fam_extra_dims, .conditions = fam_conditions,
    .check = check_config, .ws_needs = ws_needs, .computed = rope_tables, .ckpt_prefixes = ckpt_prefixes,
    .display_name = fam_display_name,
    .lora_n_modules = LLAMA_LORA_N_MODULES, .lora_module_names = lora_names,
    .lora_module_paths = lora_paths, .lora_peft_prefixes = lora_prefixes,
    .hparams_size = sizeof(llama_config), .weights_size = sizeof(llama_weights),
    .hparams_offset = offsetof(llama_weights, cfg), .layer_size = sizeof(llama_layer),
    .default_preset = "qwen2.5-0.5b", .preset_fmt = "%s", .preset = fam_preset, .config = llama_read_config,
    .check_files = eng_ck_check_files, .check_positions = fam_check_positions,
};
