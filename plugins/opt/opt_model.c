/* opt_model.c: the OPT family (family.h): presets, the shape's checks, and the
 * decoder forward on the CPU as transformers' modeling_opt.py computes it
 * (see opt_model.h for the dimension legend): learned positions, LayerNorm
 * (pre- or post-LN), ReLU FFN, project_in/out, over the engine's shared ops
 * (forward.h: KV store, attention, linear). Nothing here knows about SIMD.
 */
#include "forward.h"
#include "lora.h"
#include "opt_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* ------------------------------------------------------------------ presets */

typedef struct opt_preset {
    const char *name;
    int C, L, H, F, P;
} opt_preset;

/* From the Hugging Face configs of facebook/opt-*. */
static const opt_preset presets[] = {
    {"125m", 768, 12, 12, 3072, 768},      {"350m", 1024, 24, 16, 4096, 512},
    {"1.3b", 2048, 24, 32, 8192, 2048},    {"2.7b", 2560, 32, 32, 10240, 2560},
    {"6.7b", 4096, 32, 32, 16384, 4096},   {"13b", 5120, 40, 40, 20480, 5120},
    {"30b", 7168, 48, 56, 28672, 7168},    {"66b", 9216, 64, 72, 36864, 9216},
};

bc_status opt_hparams_preset(const char *preset, opt_hparams *hp, bc_error *err) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const opt_preset *p = &presets[i];
        if (strcmp(preset, p->name) != 0) continue;
        memset(hp, 0, sizeof *hp);
        hp->s.vocab_size = 50272;
        hp->s.hidden_size = p->C;
        hp->s.n_layers = p->L;
        hp->s.n_heads = p->H;
        hp->s.ffn_size = p->F;
        hp->s.max_positions = 2048;
        hp->word_embed_proj_dim = p->P;
        hp->do_layer_norm_before = strcmp(p->name, "350m") != 0;
        hp->s.pad_token_id = 1;
        hp->s.bos_token_id = 2;
        hp->s.eos_token_id = 2;
        snprintf(hp->s.name, sizeof hp->s.name, "opt-%s", p->name);
        opt_hparams_derive(hp);
        return BC_OK;
    }
    return bc_error_set(err, BC_ERR_INVALID,
                        "unknown OPT preset \"%s\" (125m, 350m, 1.3b, 2.7b, 6.7b, 13b, 30b, 66b)", preset);
}

void opt_hparams_derive(opt_hparams *hp) {
    hp->s.n_kv_heads = hp->s.n_heads;
    hp->s.head_dim = hp->s.n_heads > 0 ? hp->s.hidden_size / hp->s.n_heads : 0;
}

eng_ws_needs opt_ws_needs(const opt_hparams *hp) {
    const int C = hp->s.hidden_size, P = hp->word_embed_proj_dim;
    return (eng_ws_needs){.width = C > P ? C : P, .ff = hp->s.ffn_size};
}

/* "1.5 GiB", "16.0 EiB": bytes for a message, never wrapping. */
static void human_bytes(double b, char *buf, size_t n) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    size_t u = 0;
    while (b >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) b /= 1024.0, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

bc_status opt_hparams_check_size(const opt_hparams *hp, const char *where, bc_error *err) {
    const double V = hp->s.vocab_size, C = hp->s.hidden_size, L = hp->s.n_layers, F = hp->s.ffn_size;
    const double P = hp->word_embed_proj_dim, Tp = (double)hp->s.max_positions + 2.0;
    double n = V * P + Tp * C + (P != C ? 2.0 * C * P : 0.0) + 2.0 * C;
    n += L * (4.0 * (C * C + C) + 2.0 * F * C + F + C + 4.0 * C);
    if (n > (double)ENG_MAX_PARAMETERS) {
        char need[32];
        human_bytes(n * 4.0, need, sizeof need);
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "%s: the model is impossible: num_hidden_layers %d, hidden_size %d, ffn_dim %d, vocab_size "
                            "%d, max_position_embeddings %d make %.3g parameters (%s in float32); the engine takes at "
                            "most 2^40 (%.3g)",
                            where, hp->s.n_layers, hp->s.hidden_size, hp->s.ffn_size, hp->s.vocab_size,
                            hp->s.max_positions, n, need, (double)ENG_MAX_PARAMETERS);
    }
    const struct {
        const char *what;
        double n;
    } tensors[] = {
        {"vocab_size x word_embed_proj_dim (embed_tokens)", V * P},
        {"(max_position_embeddings + 2) x hidden_size (embed_positions)", Tp * C},
        {"hidden_size x hidden_size (q/k/v/out_proj)", C * C},
        {"ffn_dim x hidden_size (fc1, fc2)", F * C},
        {"hidden_size x word_embed_proj_dim (project_in, project_out)", C * P},
    };
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        if (tensors[i].n > (double)ENG_MAX_TENSOR_ELEMENTS)
            return bc_error_set(err, BC_ERR_INFEASIBLE,
                                "%s: the model is impossible: %s is %.0f elements in one tensor; the engine takes at "
                                "most %lld (2^31 - 1)",
                                where, tensors[i].what, tensors[i].n, ENG_MAX_TENSOR_ELEMENTS);
    return BC_OK;
}

/* ------------------------------------------------------------------ shape */

bc_status opt_hparams_check(const void *hparams, bc_error *err) {
    const opt_hparams *hp = hparams;
    if (hp->s.vocab_size < 4 || hp->s.hidden_size < 1 || hp->s.n_layers < 1 || hp->s.n_heads < 1 ||
        hp->s.ffn_size < 1 || hp->s.max_positions < 1 || hp->word_embed_proj_dim < 1)
        return bc_error_set(err, BC_ERR_INVALID, "OPT shape %s: every dimension must be positive (V >= 4)", hp->s.name);
    if (hp->s.hidden_size % hp->s.n_heads != 0)
        return bc_error_set(err, BC_ERR_INVALID, "OPT shape %s: hidden_size %d is not a multiple of %d heads",
                            hp->s.name, hp->s.hidden_size, hp->s.n_heads);
    return opt_hparams_check_size(hp, hp->s.name, err); /* so the arena's size cannot wrap */
}

/* ------------------------------------------------------------------ layers */

/* out[N, C] = layernorm(inp[N, C]) * gamma[C] + beta[C], eps 1e-5, in fp32
 * with a two-pass variance like torch. out may equal inp. */
static void layernorm_forward(float *out, const float *inp, const float *gamma, const float *beta, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        double mean = 0.0;
        for (int i = 0; i < C; i++) mean += x[i];
        mean /= C;
        double var = 0.0;
        for (int i = 0; i < C; i++) {
            double d = x[i] - mean;
            var += d * d;
        }
        var /= C;
        float rstd = (float)(1.0 / sqrt(var + 1e-5));
        float m = (float)mean;
        for (int i = 0; i < C; i++) y[i] = (x[i] - m) * rstd * gamma[i] + beta[i];
    }
}

/* x[N, C] = embed_tokens[tokens] (projected by project_in when P != C)
 *           + embed_positions[pos]. emb[N, P] is scratch. */
static void embedding_forward(eng_model *m, float *x, float *emb, float *tmp, const int32_t *tokens, const int *pos,
                              int N) {
    const opt_weights *w = (const opt_weights *)m->w;
    const int C = w->hp.s.hidden_size, P = w->hp.word_embed_proj_dim;
    float *e = P != C ? emb : x;
    for (int n = 0; n < N; n++) eng_matrix_row_to_f32(m->k, e + (size_t)n * P, &w->embed_tokens, tokens[n]);
    if (P != C)
        eng_linear_parallel(m->pool, m->k, x, emb, w->project_in.data, w->base.dtype, NULL, N, P, C, 0);
    for (int n = 0; n < N; n++) {
        eng_matrix_row_to_f32(m->k, tmp, &w->embed_positions, pos[n] + 2); /* a pad (-1) at row 1 */
        eng_residual(x + (size_t)n * C, tmp, (size_t)C);
    }
}

/* One decoder layer on x[B, T, C] in place. */
static void decoder_layer_forward(eng_model *m, eng_kv_cache *kv, int l, const uint8_t *mask, int mask_stride, int B,
                                  int T) {
    const opt_weights *w = (const opt_weights *)m->w;
    const opt_hparams *hp = &w->hp;
    const opt_layer_weights *lw = &w->layers[l];
    const eng_dtype dt = w->base.dtype;
    const int C = hp->s.hidden_size, F = hp->s.ffn_size, D = hp->s.head_dim, N = B * T;
    eng_workspace *ws = &m->ws;
    float *x = ws->x;     /* [N, C] residual stream */
    float *xn = ws->xn;   /* [N, C] normalized input */
    float *q = ws->q;     /* [N, C] */
    float *kk = ws->kk;   /* [N, C] */
    float *vv = ws->vv;   /* [N, C] */
    float *att = ws->att; /* [N, C] */
    float *ff = ws->ff;   /* [N, F] */

    /* self-attention block */
    const float *a_in = x;
    if (hp->do_layer_norm_before) {
        layernorm_forward(xn, x, lw->ln1_gamma, lw->ln1_beta, N, C);
        a_in = xn;
    }
    /* q, k, v: one GEMM over the [3C, C] weight when q_proj, k_proj, v_proj
     * (and their biases) lie back to back in the arena, as weights_layout puts
     * them whenever C * C * dtype size is a multiple of 64; the outputs are
     * then rows [q | k | v] of the q buffer, [N, 3C]. */
    const size_t wqkv = (size_t)C * C * eng_dtype_size(dt);
    int ldq = C;
    if ((const char *)lw->k_proj.data == (const char *)lw->q_proj.data + wqkv &&
        (const char *)lw->v_proj.data == (const char *)lw->k_proj.data + wqkv && lw->k_bias == lw->q_bias + C &&
        lw->v_bias == lw->k_bias + C) {
        eng_linear_parallel(m->pool, m->k, q, a_in, lw->q_proj.data, dt, lw->q_bias, N, C, 3 * C, 0);
        kk = q + C;
        vv = q + 2 * C;
        ldq = 3 * C;
    } else {
        eng_linear_parallel(m->pool, m->k, q, a_in, lw->q_proj.data, dt, lw->q_bias, N, C, C, 0);
        eng_linear_parallel(m->pool, m->k, kk, a_in, lw->k_proj.data, dt, lw->k_bias, N, C, C, 0);
        eng_linear_parallel(m->pool, m->k, vv, a_in, lw->v_proj.data, dt, lw->v_bias, N, C, C, 0);
    }
    eng_lora *lo = w->base.lora_unfused; /* an adapter applied unfused: after each GEMM, before activations */
    if (lo) {
        eng_lora_forward_add(lo, l, OPT_LORA_Q, q, ldq, a_in, C, N);
        eng_lora_forward_add(lo, l, OPT_LORA_K, kk, ldq, a_in, C, N);
        eng_lora_forward_add(lo, l, OPT_LORA_V, vv, ldq, a_in, C, N);
    }
    const float scale = 1.0f / sqrtf((float)D);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) q[(size_t)n * ldq + i] *= scale;
    eng_kv_store(m, kv, l, kk, vv, ldq, B, T);
    eng_attention(m, kv, l, att, q, ldq, mask, mask_stride, B, T);
    eng_linear_parallel(m->pool, m->k, ws->kk, att, lw->out_proj.data, dt, lw->out_bias, N, C, C, 0);
    if (lo) eng_lora_forward_add(lo, l, OPT_LORA_OUT, ws->kk, C, att, C, N);
    eng_residual(x, ws->kk, (size_t)N * C);
    if (!hp->do_layer_norm_before) layernorm_forward(x, x, lw->ln1_gamma, lw->ln1_beta, N, C);

    /* feed-forward block */
    const float *f_in = x;
    if (hp->do_layer_norm_before) {
        layernorm_forward(xn, x, lw->ln2_gamma, lw->ln2_beta, N, C);
        f_in = xn;
    }
    const int fc1_unfused = lo && (lo->targets >> OPT_LORA_FC1 & 1); /* the ReLU after the adapter */
    eng_linear_parallel(m->pool, m->k, ff, f_in, lw->fc1.data, dt, lw->fc1_bias, N, C, F, !fc1_unfused);
    if (fc1_unfused) {
        eng_lora_forward_add(lo, l, OPT_LORA_FC1, ff, F, f_in, C, N);
        for (size_t i = 0; i < (size_t)N * F; i++) ff[i] = ff[i] > 0.0f ? ff[i] : 0.0f;
    }
    eng_linear_parallel(m->pool, m->k, q, ff, lw->fc2.data, dt, lw->fc2_bias, N, F, C, 0);
    if (lo) eng_lora_forward_add(lo, l, OPT_LORA_FC2, q, C, ff, F, N);
    eng_residual(x, q, (size_t)N * C);
    if (!hp->do_layer_norm_before) layernorm_forward(x, x, lw->ln2_gamma, lw->ln2_beta, N, C);
}


/* The family's head (family.h): final layer norm (pre-LN models),
 * project_out (when P != C) and the tied lm_head of M rows of h. */
void opt_head_cpu(eng_model *m, const float *h, int M, float *logits) {
    const opt_weights *w = (const opt_weights *)m->w;
    const opt_hparams *hp = &w->hp;
    const int C = hp->s.hidden_size, P = hp->word_embed_proj_dim, V = hp->s.vocab_size;
    eng_workspace *ws = &m->ws;
    if (w->final_ln_gamma) {
        layernorm_forward(ws->xn, h, w->final_ln_gamma, w->final_ln_beta, M, C);
        h = ws->xn;
    }
    if (P != C) {
        eng_linear_parallel(m->pool, m->k, ws->emb, h, w->project_out.data, w->base.dtype, NULL, M, C, P, 0);
        h = ws->emb;
    }
    /* lm_head tied to embed_tokens: logits[M, V] = h[M, P] embed_tokens[V, P]^T */
    eng_linear_parallel(m->pool, m->k, logits, h, w->embed_tokens.data, w->base.dtype, NULL, M, P, V, 0);
}

/* The family's forward (family.h): eng_forward checked the arguments and put
 * the positions in m->ws.pos. */
void opt_forward_cpu(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask,
                            int mask_stride, int B, int T, eng_logits_mode mode, float *logits) {
    const opt_weights *w = (const opt_weights *)m->w;
    const opt_hparams *hp = &w->hp;
    const int C = hp->s.hidden_size, L = hp->s.n_layers;
    const int N = B * T;
    eng_workspace *ws = &m->ws;
    embedding_forward(m, ws->x, ws->emb, ws->xn, tokens, ws->pos, N);
    for (int l = 0; l < L; l++) decoder_layer_forward(m, kv, l, mask, mask_stride, B, T);
    if (mode == ENG_LOGITS_NONE) return;

    /* rows whose logits we want, gathered into h[M, C] */
    int M = N;
    float *h = ws->x;
    if (mode == ENG_LOGITS_LAST && T > 1) {
        M = B;
        for (int b = 0; b < B; b++)
            memcpy(ws->kk + (size_t)b * C, ws->x + ((size_t)b * T + T - 1) * C, (size_t)C * sizeof(float));
        h = ws->kk;
    } else if (mode == ENG_LOGITS_LAST) {
        M = B;
    }
    opt_head_cpu(m, h, M, logits);
}
