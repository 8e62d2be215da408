/* llama_model.c: the Llama family on the CPU (llama_model.h): the weight
 * arena, synthetic weights, the checkpoint's tensors, and the decoder
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
#include "synthetic.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* ------------------------------------------------------------------ sizes */

int64_t llama_n_parameters(const void *hp) {
    const llama_config *cfg = hp;
    const eng_shape *s = &cfg->shape;
    const int64_t V = s->vocab_size, C = s->hidden_size, F = s->ffn_size;
    const int64_t Q = (int64_t)s->n_heads * s->head_dim, K = (int64_t)s->n_kv_heads * s->head_dim;
    int64_t layer = Q * C + 2 * K * C + C * Q + 3 * F * C + 2 * C;
    if (cfg->qkv_bias) layer += Q + 2 * K;
    if (cfg->o_bias) layer += C;
    return V * C * (cfg->tie_word_embeddings ? 1 : 2) + C + s->n_layers * layer;
}

/* The shape the engine runs: positive dimensions, whole groups of query
 * heads, an even head size, and sizes that cannot wrap. */
static bc_status check_config(const llama_config *cfg, bc_error *err) {
    const eng_shape *s = &cfg->shape;
    if (s->vocab_size < 4 || s->hidden_size < 1 || s->n_layers < 1 || s->n_heads < 1 || s->n_kv_heads < 1 ||
        s->head_dim < 2 || s->ffn_size < 1 || s->max_positions < 1)
        return bc_error_set(err, BC_ERR_INVALID, "llama shape %s: every dimension must be positive (V >= 4)", s->name);
    if (s->n_heads % s->n_kv_heads != 0 || s->head_dim % 2 != 0)
        return bc_error_set(err, BC_ERR_INVALID,
                            "llama shape %s: %d query heads are not whole groups of %d KV heads, or head_dim %d is odd",
                            s->name, s->n_heads, s->n_kv_heads, s->head_dim);
    const double C = s->hidden_size, V = s->vocab_size, F = s->ffn_size, Q = (double)s->n_heads * s->head_dim;
    const double n = (double)llama_n_parameters(cfg);
    if (n > (double)ENG_MAX_PARAMETERS || V * C > (double)ENG_MAX_TENSOR_ELEMENTS ||
        F * C > (double)ENG_MAX_TENSOR_ELEMENTS || Q * C > (double)ENG_MAX_TENSOR_ELEMENTS)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "%s: the model is impossible: %.3g parameters or a tensor over 2^31 - 1 elements; the "
                            "engine takes at most 2^40 parameters",
                            s->name, n);
    return BC_OK;
}

/* Walks every tensor in a fixed order, sizing (base == NULL) or pointing
 * them into base; q/k/v, their biases, and gate/up lie back to back (one
 * GEMM each when their sizes keep the alignment). Returns the bytes. */
static size_t weights_layout(llama_weights *w, char *base) {
    const llama_config *cfg = &w->cfg;
    const eng_shape *s = &cfg->shape;
    const int V = s->vocab_size, C = s->hidden_size, F = s->ffn_size, D = s->head_dim;
    const int Q = s->n_heads * D, K = s->n_kv_heads * D;
    const eng_dtype dt = w->base.dtype;
    eng_layout lay = {base, 0, dt};
#define MAT(m, r, c) eng_layout_matrix(&lay, &(m), (r), (c))
#define VEC(p, n) ((p) = eng_layout_vector(&lay, (size_t)(n)))
    MAT(w->embed_tokens, V, C);
    if (cfg->tie_word_embeddings) w->lm_head = w->embed_tokens;
    else MAT(w->lm_head, V, C);
    VEC(w->final_norm, C);
    VEC(w->rope_cos, (size_t)s->max_positions * (D / 2));
    VEC(w->rope_sin, (size_t)s->max_positions * (D / 2));
    for (int l = 0; l < s->n_layers; l++) {
        llama_layer *lw = w->layers ? &w->layers[l] : NULL;
        llama_layer none;
        if (!lw) lw = &none;
        MAT(lw->q_proj, Q, C); MAT(lw->k_proj, K, C); MAT(lw->v_proj, K, C);
        if (cfg->qkv_bias) {
            VEC(lw->q_bias, Q); VEC(lw->k_bias, K); VEC(lw->v_bias, K);
        } else {
            lw->q_bias = lw->k_bias = lw->v_bias = NULL;
        }
        MAT(lw->o_proj, C, Q);
        if (cfg->o_bias) VEC(lw->o_bias, C);
        else lw->o_bias = NULL;
        MAT(lw->gate_proj, F, C); MAT(lw->up_proj, F, C); MAT(lw->down_proj, C, F);
        VEC(lw->input_norm, C); VEC(lw->post_norm, C);
    }
#undef MAT
#undef VEC
    return lay.off;
}

static eng_ws_needs ws_needs(const llama_config *cfg) {
    /* residual-sized buffers: C; the FFN holds gate | up, 2F a token */
    return (eng_ws_needs){.width = cfg->shape.hidden_size, .ff = 2 * cfg->shape.ffn_size};
}

void llama_weights_describe(eng_weights *base, const void *hp, eng_dtype dtype) {
    llama_weights *w = (llama_weights *)base;
    const llama_config *cfg = hp;
    memset(w, 0, sizeof *w);
    w->cfg = *cfg;
    w->base = (eng_weights){.family = &llama_model_family, .shape = cfg->shape, .ws = ws_needs(cfg), .dtype = dtype};
}

size_t llama_weights_bytes(const void *cfg, eng_dtype dtype) {
    bc_error ignored;
    if (check_config(cfg, &ignored) != BC_OK) return 0;
    llama_weights w;
    llama_weights_describe(&w.base, cfg, dtype);
    return weights_layout(&w, NULL);
}

/* The arena for cfg in dtype, tensors pointed into it (contents: RoPE's
 * tables only). */
static bc_status weights_alloc(llama_weights *w, const llama_config *cfg, eng_dtype dtype, bc_error *err) {
    llama_weights_describe(&w->base, cfg, dtype);
    bc_status st = check_config(cfg, err);
    if (st != BC_OK) return st;
    const eng_shape *s = &cfg->shape;
    w->layers = calloc((size_t)s->n_layers, sizeof *w->layers);
    if (!w->layers) return bc_error_set(err, BC_ERR_NOMEM, "llama weights: no memory for %d layers", s->n_layers);
    if ((st = eng_weights_arena(&w->base, weights_layout(w, NULL), s->name, err)) != BC_OK) return st;
    weights_layout(w, w->base.arena);
    /* RoPE's tables, as transformers builds inv_freq (llama3 scaling included) */
    const int half = s->head_dim / 2;
    float *inv = malloc((size_t)half * sizeof *inv);
    if (!inv) return bc_error_set(err, BC_ERR_NOMEM, "llama weights: no memory for RoPE's frequencies");
    if (eng_rope_inv_freq(inv, s->head_dim, cfg->rope_theta, &cfg->rope_scaling) != 0) {
        free(inv);
        return bc_error_set(err, BC_ERR_INVALID, "llama shape %s: rope_theta %g or its scaling is out of range",
                            s->name, cfg->rope_theta);
    }
    eng_rope_cos_sin_table(w->rope_cos, w->rope_sin, inv, half, s->max_positions);
    free(inv);
    return BC_OK;
}

void llama_weights_free(eng_weights *base) {
    if (!base) return;
    llama_weights *w = (llama_weights *)base;
    eng_weights_arena_free(base);
    free(w->layers);
    w->layers = NULL;
}

/* -------------------------------------------------------- synthetic weights */

/* As OPT's (docs/opt.md, "Synthetic weights"): matrices and embeddings
 * N(0, 0.02^2), q_proj and k_proj N(0, (2.5 / sqrt(C))^2) so attention is
 * peaked, norms 1, biases 0. Tensor ids: 0.. for the model's, 16 + 16 l..
 * for layer l's, so a tensor's values do not depend on the others. */
bc_status llama_weights_synthetic(eng_weights *base, const void *cfg, eng_dtype dtype, uint64_t seed, bc_error *err) {
    llama_weights *w = (llama_weights *)base;
    bc_status st = weights_alloc(w, cfg, dtype, err);
    if (st != BC_OK) return st;
    const eng_shape *s = &w->cfg.shape;
    const int L = s->n_layers;
    const float std = 0.02f, qk_std = (float)(2.5 / sqrt((double)s->hidden_size));
    eng_fill_tensor *list = calloc((size_t)(8 + 16 * L), sizeof *list);
    if (!list) return bc_error_set(err, BC_ERR_NOMEM, "synthetic weights: no memory for the tensor list");
    size_t n = 0;
    uint64_t id = 0;
#define ADD(ptr, dt, count, cols_, kind_, std_)                                                            \
    do {                                                                                                    \
        uint64_t id_ = id++;                                                                                \
        if (ptr) list[n++] = (eng_fill_tensor){(void *)(ptr), (dt), (size_t)(count),                       \
                                               eng_synthetic_key(seed, id_), (kind_), (std_), (cols_)};     \
    } while (0)
#define MAT(m, std_) ADD((m).data, (m).dtype, (size_t)(m).rows * (size_t)(m).cols, (size_t)(m).cols, ENG_FILL_NORMAL, std_)
    const size_t C = (size_t)s->hidden_size, Q = (size_t)s->n_heads * s->head_dim, K = (size_t)s->n_kv_heads * s->head_dim;
    MAT(w->embed_tokens, std);
    if (!w->cfg.tie_word_embeddings) MAT(w->lm_head, std);
    else id++;
    ADD(w->final_norm, ENG_F32, C, 1, ENG_FILL_ONES, 0.0f);
    for (int l = 0; l < L; l++) {
        llama_layer *lw = &w->layers[l];
        id = 16 + (uint64_t)l * 16;
        MAT(lw->q_proj, qk_std); MAT(lw->k_proj, qk_std); MAT(lw->v_proj, std); MAT(lw->o_proj, std);
        ADD(lw->q_bias, ENG_F32, Q, 1, ENG_FILL_ZEROS, 0.0f);
        ADD(lw->k_bias, ENG_F32, K, 1, ENG_FILL_ZEROS, 0.0f);
        ADD(lw->v_bias, ENG_F32, K, 1, ENG_FILL_ZEROS, 0.0f);
        ADD(lw->o_bias, ENG_F32, C, 1, ENG_FILL_ZEROS, 0.0f);
        MAT(lw->gate_proj, std); MAT(lw->up_proj, std); MAT(lw->down_proj, std);
        ADD(lw->input_norm, ENG_F32, C, 1, ENG_FILL_ONES, 0.0f);
        ADD(lw->post_norm, ENG_F32, C, 1, ENG_FILL_ONES, 0.0f);
    }
#undef MAT
#undef ADD
    st = eng_synthetic_fill(list, n, err);
    free(list);
    return st;
}

/* ------------------------------------------------------------- checkpoint */

/* Every tensor of the model by its checkpoint name (under "model."; the head
 * at the top level), into w or, with check_only, checked only. */
static bc_status load_all(eng_ck_loader *c, llama_weights *w, bc_error *err) {
    const llama_config *cfg = &w->cfg;
    const eng_shape *s = &cfg->shape;
    const int V = s->vocab_size, C = s->hidden_size, F = s->ffn_size;
    const int Q = s->n_heads * s->head_dim, K = s->n_kv_heads * s->head_dim;
    bc_status st;
    if ((st = eng_ck_matrix(c, "embed_tokens.weight", &w->embed_tokens, V, C, err)) ||
        (st = eng_ck_vector(c, "norm.weight", w->final_norm, C, err)))
        return st;
    llama_layer none;
    memset(&none, 0, sizeof none);
    for (int l = 0; l < s->n_layers; l++) {
        llama_layer *lw = w->layers ? &w->layers[l] : &none; /* none: check_only */
        const struct {
            const char *name;
            eng_matrix *m;
            float *bias;
            int has_bias, rows, cols;
        } lin[] = {
            {"self_attn.q_proj", &lw->q_proj, lw->q_bias, cfg->qkv_bias, Q, C},
            {"self_attn.k_proj", &lw->k_proj, lw->k_bias, cfg->qkv_bias, K, C},
            {"self_attn.v_proj", &lw->v_proj, lw->v_bias, cfg->qkv_bias, K, C},
            {"self_attn.o_proj", &lw->o_proj, lw->o_bias, cfg->o_bias, C, Q},
            {"mlp.gate_proj", &lw->gate_proj, NULL, 0, F, C},
            {"mlp.up_proj", &lw->up_proj, NULL, 0, F, C},
            {"mlp.down_proj", &lw->down_proj, NULL, 0, C, F},
        };
        char name[128];
        for (size_t k = 0; k < sizeof lin / sizeof lin[0]; k++) {
            snprintf(name, sizeof name, "layers.%d.%s.weight", l, lin[k].name);
            if ((st = eng_ck_matrix(c, name, lin[k].m, lin[k].rows, lin[k].cols, err))) return st;
            if (!lin[k].has_bias) continue;
            snprintf(name, sizeof name, "layers.%d.%s.bias", l, lin[k].name);
            if ((st = eng_ck_vector(c, name, lin[k].bias, lin[k].rows, err))) return st;
        }
        snprintf(name, sizeof name, "layers.%d.input_layernorm.weight", l);
        if ((st = eng_ck_vector(c, name, lw->input_norm, C, err))) return st;
        snprintf(name, sizeof name, "layers.%d.post_attention_layernorm.weight", l);
        if ((st = eng_ck_vector(c, name, lw->post_norm, C, err))) return st;
        /* older checkpoints carry RoPE's inv_freq buffer; the tables are computed */
        snprintf(name, sizeof name, "%slayers.%d.self_attn.rotary_emb.inv_freq", c->prefix, l);
        (void)eng_ck_take(c, name);
    }
    if (!cfg->tie_word_embeddings) {
        const char *prefix = c->prefix;
        c->prefix = "";
        st = eng_ck_matrix(c, "lm_head.weight", &w->lm_head, V, C, err);
        c->prefix = prefix;
        if (st) return st;
    } else {
        (void)eng_ck_take(c, "lm_head.weight"); /* tied: transformers uses embed_tokens */
    }
    return eng_ck_all_used(c, llama_family_name(cfg->family), err);
}

/* dir's config, with a missing pad id taken from eos as generate() does
 * ("Setting pad_token_id to eos_token_id"), so prompts are padded with it. */
bc_status llama_read_config(const char *dir, void *hp, bc_error *err) {
    llama_config *cfg = hp;
    bc_status st = llama_config_read_dir(cfg, dir, err);
    if (st == BC_OK && cfg->shape.pad_token_id < 0) cfg->shape.pad_token_id = cfg->shape.eos_token_id;
    return st;
}

/* dir's tensors for the model cfg describes: into w (allocated here in
 * dtype; freed again on failure), or, with w == NULL, every name, dtype and
 * shape checked only. */
static bc_status walk(const char *dir, const llama_config *cfg, eng_dtype dtype, llama_weights *w, bc_error *err) {
    llama_weights shape_only;
    eng_ck_set set;
    eng_ck_loader c;
    bc_status st = w ? weights_alloc(w, cfg, dtype, err) : BC_OK;
    if (!w) llama_weights_describe(&shape_only.base, cfg, dtype);
    if (st == BC_OK && (st = eng_ck_loader_open(&c, &set, dir, dtype, w == NULL, err)) == BC_OK) {
        c.prefix = "model.";
        st = load_all(&c, w ? w : &shape_only, err);
        eng_ck_loader_close(&c, &set);
    }
    if (st != BC_OK && w) llama_weights_free(&w->base);
    return st;
}

bc_status llama_weights_load(eng_weights *w, const char *dir, eng_dtype dtype, bc_error *err) {
    llama_config cfg;
    memset(w, 0, sizeof(llama_weights));
    bc_status st = llama_read_config(dir, &cfg, err);
    return st == BC_OK ? walk(dir, &cfg, dtype, (llama_weights *)w, err) : st;
}

bc_status llama_checkpoint_validate(const char *dir, bc_error *err) {
    llama_config cfg;
    bc_status st = llama_read_config(dir, &cfg, err);
    return st == BC_OK ? walk(dir, &cfg, ENG_F32, NULL, err) : st;
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

/* The family's forward (family.h), after eng_forward's checks. */
static void llama_forward_cpu(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask,
                              int mask_stride, int B, int T, eng_logits_mode mode, float *logits) {
    const llama_weights *w = (const llama_weights *)m->w;
    const eng_shape *s = &w->cfg.shape;
    const int C = s->hidden_size, V = s->vocab_size, N = B * T;
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
    nra_of(m)->rms_norm_rows(ws->xn, h, w->final_norm, M, C, (float)w->cfg.rms_norm_eps);
    eng_linear_parallel(m->pool, m->k, logits, ws->xn, w->lm_head.data, w->base.dtype, NULL, M, C, V, 0);
}

/* ------------------------------------------------------------------ LoRA */

/* The matrix LoRA module m of layer l adapts: q/k/v are [Q, C], [K, C],
 * [K, C] whether they lie back to back (one GEMM) or apart, so each one's
 * rows are adapted in place either way. */
static eng_matrix *llama_lora_matrix(eng_weights *base, int l, int m) {
    llama_layer *lw = &((llama_weights *)base)->layers[l];
    switch (m) {
    case LLAMA_LORA_Q: return &lw->q_proj;
    case LLAMA_LORA_K: return &lw->k_proj;
    case LLAMA_LORA_V: return &lw->v_proj;
    case LLAMA_LORA_O: return &lw->o_proj;
    case LLAMA_LORA_GATE: return &lw->gate_proj;
    case LLAMA_LORA_UP: return &lw->up_proj;
    case LLAMA_LORA_DOWN: return &lw->down_proj;
    default: return NULL;
    }
}

/* [out, in] of module m: k and v project to the KV heads' K = Hkv D. */
static void llama_lora_shape(const eng_shape *s, int m, int *out, int *in) {
    const int C = s->hidden_size, F = s->ffn_size, Q = s->n_heads * s->head_dim, K = s->n_kv_heads * s->head_dim;
    const int outs[LLAMA_LORA_N_MODULES] = {Q, K, K, C, F, F, C}, ins[LLAMA_LORA_N_MODULES] = {C, C, C, Q, C, C, F};
    *out = outs[m];
    *in = ins[m];
}

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

const eng_family llama_model_family = {
    .name = "llama", .forward = llama_forward_cpu,
    .lora_matrix = llama_lora_matrix, .lora_n_modules = LLAMA_LORA_N_MODULES, .lora_module_names = lora_names,
    .lora_module_paths = lora_paths, .lora_peft_prefixes = lora_prefixes, .lora_shape = llama_lora_shape,
    .hparams_size = sizeof(llama_config), .weights_size = sizeof(llama_weights),
    .hparams_offset = offsetof(llama_weights, cfg), .layer_size = sizeof(llama_layer),
    .default_preset = "qwen2.5-0.5b", .preset_fmt = "%s", .preset = fam_preset, .config = llama_read_config,
    .check_files = eng_ck_check_files, .validate = llama_checkpoint_validate,
    .n_parameters = llama_n_parameters, .arena_bytes = llama_weights_bytes,
    .describe = llama_weights_describe, .synthetic = llama_weights_synthetic, .load = llama_weights_load,
    .weights_free = llama_weights_free, .check_positions = fam_check_positions,
};
