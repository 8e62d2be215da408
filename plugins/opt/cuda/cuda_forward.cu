/* cuda_forward.cu: the OPT model on a CUDA device (see cuda_forward.h;
 * legend of ../model.h): its lifecycle (weights uploaded from the host
 * arena, activations), the device KV cache and the forward pass, which
 * queues the kernels of cuda_kernels.cu and the GEMMs of cuda_gemm.cu on
 * the device's stream. Decode steps captured in CUDA graphs:
 * cuda_graph_capture.cu.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_kernels.h"

bc_status opt_cuda_model_create(opt_cuda_model **out, opt_cuda_device *d, const opt_weights *w, bc_error *err) {
    *out = NULL;
    const opt_hparams *hp = &w->hp;
    const int D = hp->s.hidden_size / hp->s.n_heads;
    if (D > 128 || hp->s.hidden_size % hp->s.n_heads)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "CUDA OPT: head_dim %d; the attention kernel supports up to 128",
                            D);
    opt_cuda_model *m = (opt_cuda_model *)calloc(1, sizeof *m);
    if (!m) return bc_error_set(err, BC_ERR_NOMEM, "CUDA OPT: no host memory");
    m->dev = d;
    m->hw = w;
    m->hp = *hp;
    m->dt = w->base.dtype;
    opt_cuda_graphs_init(&m->graphs, opt_cuda_graph_exec_destroy, NULL);
    bc_status st = opt_cuda_alloc(d, OPT_CUDA_MEM_WEIGHTS, w->base.arena_bytes, (void **)&m->d_arena, "weights", err);
    if (st == BC_OK) {
        m->arena_bytes = w->base.arena_bytes;
        st = opt_cuda_upload(d, m->d_arena, w->base.arena, w->base.arena_bytes, err);
    }
    if (st != BC_OK) {
        opt_cuda_model_destroy(m);
        return st;
    }
    *out = m;
    return BC_OK;
}

void opt_cuda_model_release_workspace(opt_cuda_model *m) {
    if (!m) return;
    cudaStreamSynchronize(m->dev->stream);
    opt_cuda_graphs_clear(&m->graphs);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WORKSPACE, m->d_ws, m->ws_bytes);
    m->d_ws = NULL;
    m->ws_bytes = 0;
    memset(&m->wl, 0, sizeof m->wl);
}

void opt_cuda_model_destroy(opt_cuda_model *m) {
    if (!m) return;
    opt_cuda_model_release_workspace(m);
    opt_cuda_gemm_plans_clear(m);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WEIGHTS, m->d_arena, m->arena_bytes);
    free(m);
}

size_t opt_cuda_model_workspace_bytes(const opt_cuda_model *m) { return m->ws_bytes; }
const opt_hparams *opt_cuda_model_hparams(const opt_cuda_model *m) { return &m->hp; }
eng_dtype opt_cuda_model_dtype(const opt_cuda_model *m) { return m->dt; }

bc_status opt_cuda_model_reserve(opt_cuda_model *m, int max_tokens, bc_error *err) {
    if (m->d_ws && m->wl.N >= max_tokens) return BC_OK;
    if (m->d_ws && m->wl.N > max_tokens) max_tokens = m->wl.N;
    opt_cuda_model_release_workspace(m);
    opt_cuda_ws_layout l;
    size_t bytes = opt_cuda_ws_layout_for(&m->hp, m->dt, max_tokens, &l);
    bc_status st = opt_cuda_alloc(m->dev, OPT_CUDA_MEM_WORKSPACE, bytes, (void **)&m->d_ws, "activations", err);
    if (st != BC_OK) return st;
    m->ws_bytes = bytes;
    m->wl = l;
    return BC_OK;
}

/* ----------------------------------------------------------------- KV cache */

bc_status opt_cuda_kv_cache_alloc(opt_cuda_device *d, opt_cuda_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype,
                                  int B, int Smax, bc_error *err) {
    memset(kv, 0, sizeof *kv);
    TRY(eng_kv_cache_shape(&kv->c, &hp->s, dtype, B, Smax, err));
    kv->alloc_bytes = kv->c.bytes + OPT_CUDA_ALIGN; /* + the length counter */
    char *base = NULL;
    bc_status st = opt_cuda_alloc(d, OPT_CUDA_MEM_KV, kv->alloc_bytes, (void **)&base, "KV cache", err);
    if (st != BC_OK) {
        memset(kv, 0, sizeof *kv);
        return st;
    }
    kv->c.k = base;
    kv->c.v = base + kv->c.bytes / 2;
    kv->d_len = (int *)(void *)(base + kv->c.bytes);
    return opt_cuda_kv_cache_set_len(d, kv, 0, err);
}

void opt_cuda_kv_cache_free(opt_cuda_device *d, opt_cuda_kv_cache *kv) {
    if (!kv || !kv->c.k) return;
    cudaStreamSynchronize(d->stream);
    opt_cuda_free(d, OPT_CUDA_MEM_KV, kv->c.k, kv->alloc_bytes);
    memset(kv, 0, sizeof *kv);
}

bc_status opt_cuda_kv_cache_set_len(opt_cuda_device *d, opt_cuda_kv_cache *kv, int len, bc_error *err) {
    opt_cuda_launch_len_set(d->stream, kv->d_len, len);
    CU_CHECK(cudaGetLastError(), "len_set_kernel");
    kv->c.len = len;
    return BC_OK;
}

bc_status opt_cuda_kv_cache_copy_row(opt_cuda_device *d, opt_cuda_kv_cache *dst, int dst_b,
                                     const opt_cuda_kv_cache *src, int src_b, int S, bc_error *err) {
    const size_t tok = (size_t)dst->c.D * eng_dtype_size(dst->c.dtype);
    opt_cuda_launch_kv_copy_row(d->stream, (char *)dst->c.k, (char *)dst->c.v, (const char *)src->c.k, (const char *)src->c.v,
                                dst->c.L, dst->c.Hkv, dst->c.B, dst_b, dst->c.Smax, src->c.B, src_b, src->c.Smax, tok, S);
    CU_CHECK(cudaGetLastError(), "kv_copy_row_kernel");
    return BC_OK;
}

/* ----------------------------------------------------------------- forward */

/* The forward's kernels and GEMMs, queued on the stream; nothing checked or
 * synchronised (so it can be captured in a graph). */
bc_status opt_cuda_forward_body(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens,
                                const uint8_t *d_mask, int stride, int B, int T, eng_logits_mode mode,
                                float *d_logits, bc_error *err) {
    const opt_hparams *hp = &m->hp;
    const opt_weights *w = m->hw;
    const eng_dtype dt = m->dt;
    const int C = hp->s.hidden_size, P = hp->word_embed_proj_dim, V = hp->s.vocab_size, L = hp->s.n_layers;
    const int F = hp->s.ffn_size, H = hp->s.n_heads, D = C / H, N = B * T, pre = hp->do_layer_norm_before;
    const size_t es = eng_dtype_size(dt);
    cudaStream_t st = m->dev->stream;
    char *ws = m->d_ws;
    float *x = (float *)(void *)(ws + m->wl.x), *q = (float *)(void *)(ws + m->wl.q);
    float *kk = (float *)(void *)(ws + m->wl.k), *vv = (float *)(void *)(ws + m->wl.v);
    float *y = (float *)(void *)(ws + m->wl.y), *ff = (float *)(void *)(ws + m->wl.ff);
    void *xh = ws + m->wl.xh, *att = ws + m->wl.att, *ffh = ws + m->wl.ffh, *embh = ws + m->wl.embh;
    const void *tok_emb = dw(m, w->embed_tokens.data), *pos_emb = dw(m, w->embed_positions.data);

    /* embeddings */
    if (P == C) {
        opt_cuda_launch_embed(dt, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 0);
    } else {
        opt_cuda_launch_embed(dt, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 1);
        TRY(opt_cuda_gemm(m, x, embh, dw(m, w->project_in.data), NULL, N, P, C, 0, err));
        opt_cuda_launch_embed(dt, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 2);
    }
    /* the first layer's input */
    const opt_layer_weights *l0 = &w->layers[0];
    opt_cuda_launch_residual_ln(dt, st, N, x, (const float *)NULL, pre ? dw(m, l0->ln1_gamma) : NULL,
                pre ? dw(m, l0->ln1_beta) : NULL, xh, C, 1, 0, 0);

    const size_t layer_kv = (size_t)kv->c.B * H * kv->c.Smax * D * es;
    for (int l = 0; l < L; l++) {
        const opt_layer_weights *lw = &w->layers[l];
        void *kc = (char *)kv->c.k + (size_t)l * layer_kv, *vc = (char *)kv->c.v + (size_t)l * layer_kv;
        /* q, k, v: one GEMM [N, 3C] when the arena holds q_proj, k_proj, v_proj
         * (and their biases) back to back, as model.c lays them out; rows of
         * the result are 3C apart (the q, k, v buffers are adjacent in the
         * workspace, cuda_plan.h). Else three GEMMs. */
        const size_t mat = (size_t)C * C * es;
        const int fused = (const char *)lw->k_proj.data == (const char *)lw->q_proj.data + mat &&
                          (const char *)lw->v_proj.data == (const char *)lw->k_proj.data + mat &&
                          lw->k_bias == lw->q_bias + C && lw->v_bias == lw->k_bias + C;
        const float *qp = q, *kp = kk, *vp = vv;
        int ld = C;
        if (fused) {
            TRY(opt_cuda_gemm(m, q, xh, dw(m, lw->q_proj.data), dw(m, lw->q_bias), N, C, 3 * C, 0, err));
            kp = q + C, vp = q + 2 * C, ld = 3 * C;
        } else {
            TRY(opt_cuda_gemm(m, q, xh, dw(m, lw->q_proj.data), dw(m, lw->q_bias), N, C, C, 0, err));
            TRY(opt_cuda_gemm(m, kk, xh, dw(m, lw->k_proj.data), dw(m, lw->k_bias), N, C, C, 0, err));
            TRY(opt_cuda_gemm(m, vv, xh, dw(m, lw->v_proj.data), dw(m, lw->v_bias), N, C, C, 0, err));
        }
        /* the new keys and values go to the cache: by the attention kernel
         * itself in a decode step (T == 1), else by kv_store_kernel first */
        if (T > 1) opt_cuda_launch_kv_store(dt, st, kc, vc, kp, vp, ld, kv->d_len, B, T, H, D, kv->c.Smax);
        opt_cuda_launch_attention(dt, st, att, qp, ld, kc, vc, T == 1 ? kp : (const float *)NULL,
                    T == 1 ? vp : (const float *)NULL, d_mask, stride, kv->d_len, B, T, H, D, kv->c.Smax);
        TRY(opt_cuda_gemm(m, y, att, dw(m, lw->out_proj.data), dw(m, lw->out_bias), N, C, C, 0, err));
        if (pre)
            opt_cuda_launch_residual_ln(dt, st, N, x, y, dw(m, lw->ln2_gamma), dw(m, lw->ln2_beta), xh, C, 1, 0, 0);
        else
            opt_cuda_launch_residual_ln(dt, st, N, x, y, dw(m, lw->ln1_gamma), dw(m, lw->ln1_beta), xh, C, 1, 0, 1);
        /* fc1 + bias + ReLU; in 16-bit straight to the dtype fc2 reads when
         * cuBLASLt has that epilogue with a 16-bit output, else fp32 + convert */
        int direct = 0;
        if (dt != ENG_F32 && !m->fc1_fp32_only)
            TRY(opt_cuda_gemm_ex(m, ffh, xh, dw(m, lw->fc1.data), dw(m, lw->fc1_bias), N, C, F, 1, 1, &direct, err));
        if (!direct) {
            TRY(opt_cuda_gemm(m, ff, xh, dw(m, lw->fc1.data), dw(m, lw->fc1_bias), N, C, F, 1, err));
            if (dt != ENG_F32) opt_cuda_launch_convert(dt, st, ffh, ff, (size_t)N * F);
            m->n_fc1_converts++;
        }
        TRY(opt_cuda_gemm(m, y, ffh, dw(m, lw->fc2.data), dw(m, lw->fc2_bias), N, F, C, 0, err));
        if (pre && l + 1 < L)
            opt_cuda_launch_residual_ln(dt, st, N, x, y, dw(m, w->layers[l + 1].ln1_gamma), dw(m, w->layers[l + 1].ln1_beta),
                        xh, C, 1, 0, 0);
        else if (pre)
            opt_cuda_launch_residual_ln(dt, st, N, x, y, (const float *)NULL, (const float *)NULL, (void *)NULL, C, 1, 0, 0);
        else
            opt_cuda_launch_residual_ln(dt, st, N, x, y, dw(m, lw->ln2_gamma), dw(m, lw->ln2_beta), xh, C, 1, 0, 1);
    }
    opt_cuda_launch_len_add(st, kv->d_len, T);
    if (mode == ENG_LOGITS_NONE) return BC_OK;

    /* the rows whose logits we want: final layer norm (pre-LN) or a plain
     * conversion (post-LN) of x rows n * row_mul + row_add into xh[M, C] */
    const int M = mode == ENG_LOGITS_LAST ? B : N;
    const int row_mul = mode == ENG_LOGITS_LAST ? T : 1, row_add = mode == ENG_LOGITS_LAST ? T - 1 : 0;
    opt_cuda_launch_residual_ln(dt, st, M, x, (const float *)NULL, dw(m, w->final_ln_gamma), dw(m, w->final_ln_beta), xh,
                C, row_mul, row_add, 0);
    const void *h = xh;
    if (P != C) {
        TRY(opt_cuda_gemm(m, y, xh, dw(m, w->project_out.data), NULL, M, C, P, 0, err));
        opt_cuda_launch_convert(dt, st, embh, y, (size_t)M * P);
        h = embh;
    }
    /* lm_head tied to embed_tokens: logits[M, V] = h[M, P] embed_tokens[V, P]^T */
    TRY(opt_cuda_gemm(m, d_logits, h, tok_emb, NULL, M, P, V, 0, err));
    return BC_OK;
}

bc_status opt_cuda_forward_check(opt_cuda_model *m, const opt_cuda_kv_cache *kv, int stride, int B, int T,
                                 eng_logits_mode mode, const float *d_logits, bc_error *err) {
    const opt_hparams *hp = &m->hp;
    const int S1 = kv->c.len + T;
    if (B != kv->c.B || T < 1)
        return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: B %d (cache has %d), T %d", B, kv->c.B, T);
    if (S1 > kv->c.Smax || S1 > hp->s.max_positions)
        return bc_error_set(err, BC_ERR_INVALID,
                            "opt_cuda_forward: %d tokens exceed the cache (%d) or the positions (%d)", S1, kv->c.Smax,
                            hp->s.max_positions);
    if (stride < S1) return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: mask stride %d < %d tokens", stride, S1);
    if (kv->c.dtype != m->dt || kv->c.L != hp->s.n_layers || kv->c.Hkv != hp->s.n_heads)
        return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: KV cache shape or dtype does not match the model");
    if (mode != ENG_LOGITS_NONE && !d_logits) return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: logits is NULL");
    return BC_OK;
}

bc_status opt_cuda_forward(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                           int mask_stride, int B, int T, eng_logits_mode mode, float *d_logits, bc_error *err) {
    TRY(opt_cuda_forward_check(m, kv, mask_stride, B, T, mode, d_logits, err));
    TRY(opt_cuda_model_reserve(m, B * T, err));
    TRY(opt_cuda_forward_body(m, kv, d_tokens, d_mask, mask_stride, B, T, mode, d_logits, err));
    CU_CHECK(cudaGetLastError(), "forward kernels");
    kv->c.len += T;
    return BC_OK;
}

int64_t opt_cuda_fc1_converts(const opt_cuda_model *m) { return m->n_fc1_converts; }
void opt_cuda_model_force_fc1_fp32(opt_cuda_model *m, int on) { m->fc1_fp32_only = on != 0; }
