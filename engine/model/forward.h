/* forward.h: a model's forward pass over a KV cache on the CPU, whatever its
 * family (implemented in model.c; the family's layers in its folder, through
 * family.h). Dimension legend of shape.h (V C L H Hkv D F Tmax B T S).
 *
 * Usage:
 *   eng_model m;        eng_model_init(&m, &weights, n_threads, &err);
 *   eng_kv_cache kv;    eng_kv_cache_alloc(&kv, &weights.shape, eng_kv_dtype(weights.dtype), B, Smax, &err);
 *   eng_model_reserve(&m, B * T_max, Smax, &err);   // optional: sizes the workspace up front
 *   eng_forward(&m, &kv, tokens, mask, S, B, T, ENG_LOGITS_ALL, logits, &err);  // prefill
 *   eng_forward(&m, &kv, next,   mask, S, B, 1, ENG_LOGITS_LAST, logits, &err); // decode
 *   ...
 *   eng_kv_cache_free(&kv); eng_model_free(&m);
 *
 * All rows of a batch share one cache length kv.len (left padding keeps them
 * aligned). A forward appends T tokens to every row: after it, kv.len grows
 * by T. The attention mask covers the cached tokens and the new ones, like
 * transformers' attention_mask in generate(): mask[b * mask_stride + s] for
 * s in [0, kv.len + T), 1 = real token, 0 = padding. Positions are computed
 * from it as transformers does: pos[b, s] = cumsum(mask[b, 0..s]) - 1 for a
 * real token, -1 for a pad (each family maps them: OPT's learned positions
 * add 2, so a pad sits at row 1). Real tokens never attend to pad tokens.
 * A pad query (which may see no real key) attends uniformly to the keys it
 * can see causally; its logits are not meaningful and tests compare only real
 * positions.
 */
#ifndef ENG_FORWARD_H
#define ENG_FORWARD_H

#include "kv_cache.h"
#include "weights.h"

/* Scratch activations for up to max_tokens (B * T) tokens and Smax keys
 * (W: the family's width, eng_ws_needs; Q = (H + 2 Hkv) D). */
typedef struct eng_workspace {
    int max_tokens, Smax, n_threads;
    float *x;       /* [max_tokens, W]  residual stream */
    float *xn;      /* [max_tokens, W]  norm output / GEMM input */
    float *q;       /* [max_tokens, max(Q, W)]: q, k, v side by side (fused GEMM) */
    float *kk, *vv; /* [max_tokens, max(W, Hkv D)]  new keys and values in fp32 */
    float *att;     /* [max_tokens, max(W, H D)]  attention output */
    float *ff;      /* [max_tokens, the family's ff] */
    float *emb;     /* [max_tokens, W] */
    float *scores;  /* [n_threads][ENG_ATTEND_GROUP_MAX][Smax rounded to 16] softmax scratch */
    int *pos;       /* [max_tokens] positions (cumsum of the mask - 1; -1 at a pad) */
    void *arena;    /* one allocation behind every pointer above */
    size_t bytes;
} eng_workspace;

/* The model as the forward pass uses it: weights (borrowed), the kernel table
 * for the best ISA this CPU has, a thread pool, and the workspace. */
typedef struct eng_model {
    const eng_weights *w;  /* borrowed; w->family runs the layers */
    const eng_kernels *k;  /* static */
    eng_pool *pool;        /* owned */
    /* The pool's threads a prefill forward (T > 1) and a decode forward
     * (T == 1) run on; 0: all of them (the device sets them: threads = 0,
     * cpu_threads.h) */
    int phase_threads[2];
    eng_workspace ws;      /* owned; grows in eng_model_reserve or eng_forward */
} eng_model;

/* n_threads <= 0: all online cores. isa: ENG_ISA_* or -1 for the best one. */
bc_status eng_model_init(eng_model *m, const eng_weights *w, int n_threads, bc_error *err);
bc_status eng_model_init_isa(eng_model *m, const eng_weights *w, int n_threads, int isa, bc_error *err);
/* Makes sure the workspace holds max_tokens tokens and Smax keys. */
bc_status eng_model_reserve(eng_model *m, int max_tokens, int Smax, bc_error *err);
/* Bytes of a workspace for these sizes. */
size_t eng_workspace_bytes(const eng_shape *s, const eng_ws_needs *need, int max_tokens, int Smax, int n_threads);
/* Frees the workspace only (cache-release policy); the next reserve or
 * forward allocates it again. */
void eng_model_release_workspace(eng_model *m);
void eng_model_free(eng_model *m);

typedef enum eng_logits_mode {
    ENG_LOGITS_ALL = 0,  /* logits[B, T, V] */
    ENG_LOGITS_LAST = 1, /* logits[B, V] for the last of the T tokens */
    ENG_LOGITS_NONE = 2  /* logits unused (may be NULL) */
} eng_logits_mode;

/* Runs T new tokens of each of B rows through the model and appends their
 * keys and values to kv (kv->len += T).
 *   tokens    [B, T]             token ids in [0, V)
 *   mask      [B, mask_stride]   1 real / 0 pad for s in [0, kv->len + T)
 *   logits    see mode; fp32
 * B must equal kv->B and kv->len + T <= min(kv->Smax, Tmax); with
 * kv->slot_of, B <= kv->B and len_of[b] + T within the same bounds for every
 * row b (the mask's row b then covers s in [0, len_of[b] + T)). Checks the
 * arguments, computes the positions into m->ws.pos and runs the family's
 * forward (family.h). */
bc_status eng_forward(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                      int B, int T, eng_logits_mode mode, float *logits, bc_error *err);

/* ------------------------------------------------- shared ops of the layers */

/* x[n] += y[n] */
void eng_residual(float *x, const float *y, size_t n);
/* dst[cols] = row r of the matrix a (rows scaled back for int8): an
 * embedding gather. */
void eng_matrix_row_to_f32(const eng_kernels *k, float *dst, const eng_matrix *a, int r);
/* Appends the new keys and values kk, vv [B, T, ld] (fp32, Hkv heads of D
 * each at the start of each row) to layer l of kv at its lengths (row b:
 * cache row slot_of[b] at len_of[b] when given), in the cache's dtype. */
void eng_kv_store(const eng_model *m, eng_kv_cache *kv, int l, const float *kk, const float *vv, int ld, int B, int T);
/* Attention of layer l over the cache (after eng_kv_store of this forward's
 * keys): att[b, t, h*D:(h+1)*D] = softmax_s(q . k_s) . v_s over the keys
 * s <= S0 + t with mask[b, s], query head h reading KV head
 * eng_kv_head_of(shape, h); q [B, T, ldq] holds H heads of D at the start of
 * each row, already scaled (D^-0.5 or the family's); att is [B, T, H D].
 * Shared prefixes (group / prefix_of) as kv_cache.h says. */
void eng_attention(eng_model *m, eng_kv_cache *kv, int l, float *att, const float *q, int ldq, const uint8_t *mask,
                   int mask_stride, int B, int T);

#endif
