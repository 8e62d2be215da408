/* forward.h: the OPT forward pass over a KV cache (implemented in model.c).
 *
 * Uses the dimension legend of model.h (V C L H D F P Tmax B T S).
 *
 * Usage:
 *   eng_model m;        eng_model_init(&m, &weights, n_threads, &err);
 *   eng_kv_cache kv;    eng_kv_cache_alloc(&kv, &weights.hp, weights.dtype, B, Smax, &err);
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
 * from it exactly as OPTLearnedPositionalEmbedding does:
 *   pos[b, s] = cumsum(mask[b, 0..s]) * mask[b, s] - 1, embedding row pos + 2
 * so a pad token sits at row 1. Real tokens never attend to pad tokens.
 * A pad query (which may see no real key) attends uniformly to the keys it
 * can see causally; its logits are not meaningful and tests compare only real
 * positions.
 */
#ifndef ENG_FORWARD_H
#define ENG_FORWARD_H

#include "model.h"

/* The KV cache of one batch: K and V per layer in the run's precision,
 * laid out [L][B][H][Smax][D] so decode attention streams one head's keys
 * contiguously. */
typedef struct eng_kv_cache {
    eng_dtype dtype;
    int L, B, H, D, Smax;
    int len;       /* S: tokens cached so far in every row */
    void *k, *v;   /* [L][B][H][Smax][D] each, in dtype; owned */
    size_t bytes;  /* both buffers together */
    /* Shared prefix (0 and 0 after alloc: off). With group G > 1, rows
     * [g*G, (g+1)*G) form a group whose first `prefix` cached tokens are the
     * same (one prompt's samples): attention reads keys s < prefix of every
     * row of the group from the group's first row g*G (one attend_group
     * call per group, head and position reads each of them once for all the
     * group's rows), and the other rows' copies of those keys are never read
     * (they need not be filled).
     * B must be a multiple of G. Set by the caller after prefill. */
    int group, prefix;
    /* Rows at their own lengths (continuous batching; NULL and NULL after
     * alloc: off). With slot_of, batch row b of a forward works on cache row
     * slot_of[b] (B may then be less than the cache's B, the rows any
     * distinct slots), holding len_of[b] cached tokens: the forward appends
     * at len_of[b] and attends to keys s < len_of[b] + t; len stays as it is
     * and the caller moves len_of on. Not with group. Borrowed. */
    const int *slot_of, *len_of;
    /* 1: allocated by eng_kv_cache_alloc_paged (k and v are mappings whose
     * memory the system hands out a page at a time as rows are written, and
     * eng_kv_cache_return_row hands back); 0: allocated whole. */
    int paged;
    /* Shared prefix of rows at their own lengths (continuous batching; NULL
     * after alloc: off). With slot_of, batch row b reads its keys s < prefix
     * from cache row prefix_of[b] (its prompt's row, which may be its own)
     * and the rest from its own row slot_of[b]; the forward then writes keys
     * at len_of[b] >= prefix only. Borrowed. */
    const int *prefix_of;
} eng_kv_cache;

bc_status eng_kv_cache_alloc(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                             bc_error *err);
/* Checks B and Smax and fills kv's shape (dtype, L, B, H, D, Smax) and bytes,
 * allocating nothing (len, k, v, group, prefix 0): the shape of every KV
 * cache, on the host (eng_kv_cache_alloc) or a device. */
bc_status eng_kv_cache_shape(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                             bc_error *err);
/* The paged layout: K and V reserved as mappings, Smax a multiple of
 * page_tokens, each (layer, row, head) stretch of page_tokens tokens a whole
 * number of the system's pages, so memory is taken as a row's tokens are
 * written and returned by eng_kv_cache_return_row. BC_ERR_SETTING when
 * page_tokens x D x dtype size is not a multiple of the system's page
 * (eng_kv_page_tokens gives the smallest that is). */
bc_status eng_kv_cache_alloc_paged(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                                   int page_tokens, bc_error *err);
/* The page size in tokens for a model and dtype: asked when > 0 (checked by
 * eng_kv_cache_alloc_paged), else the smallest that fits the system's page. */
int eng_kv_page_tokens(const opt_hparams *hp, eng_dtype dtype, int asked);
/* Hands row b's memory back to the system (a paged cache; its tokens read
 * as zeros afterwards). */
void eng_kv_cache_return_row(eng_kv_cache *kv, int b);
/* Bytes eng_kv_cache_alloc would allocate. */
size_t eng_kv_cache_bytes(const opt_hparams *hp, eng_dtype dtype, int B, int Smax);
void eng_kv_cache_free(eng_kv_cache *kv);
/* Copies the first S cached tokens of src row src_b into dst row dst_b (both
 * caches of the same model and dtype; B and Smax may differ; used by shared
 * prefill). */
void eng_kv_cache_copy_row(eng_kv_cache *dst, int dst_b, const eng_kv_cache *src, int src_b, int S);

/* Scratch activations for up to max_tokens (B * T) tokens and Smax keys. */
typedef struct eng_workspace {
    int max_tokens, Smax, n_threads;
    float *x;       /* [max_tokens, C]  residual stream */
    float *xn;      /* [max_tokens, max(C, P)] layer-norm output / GEMM input */
    float *q;       /* [max_tokens, 3C]: q, k, v side by side (fused GEMM) */
    float *kk, *vv; /* [max_tokens, C]  new keys and values in fp32 */
    float *att;     /* [max_tokens, C]  attention output */
    float *ff;      /* [max_tokens, F] */
    float *emb;     /* [max_tokens, P] */
    float *scores;  /* [n_threads][ENG_ATTEND_GROUP_MAX][Smax rounded to 16] softmax scratch */
    int *pos;       /* [max_tokens] embedding rows */
    void *arena;    /* one allocation behind every pointer above */
    size_t bytes;
} eng_workspace;

/* The model as the forward pass uses it: weights (borrowed), the kernel table
 * for the best ISA this CPU has, a thread pool, and the workspace. */
typedef struct eng_model {
    const opt_weights *w;  /* borrowed */
    const eng_kernels *k;  /* static */
    eng_pool *pool;        /* owned */
    eng_workspace ws;      /* owned; grows in eng_model_reserve or eng_forward */
} eng_model;

/* n_threads <= 0: all online cores. isa: ENG_ISA_* or -1 for the best one. */
bc_status eng_model_init(eng_model *m, const opt_weights *w, int n_threads, bc_error *err);
bc_status eng_model_init_isa(eng_model *m, const opt_weights *w, int n_threads, int isa, bc_error *err);
/* Makes sure the workspace holds max_tokens tokens and Smax keys. */
bc_status eng_model_reserve(eng_model *m, int max_tokens, int Smax, bc_error *err);
/* Bytes of a workspace for these sizes. */
size_t eng_workspace_bytes(const opt_hparams *hp, int max_tokens, int Smax, int n_threads);
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
 * row b (the mask's row b then covers s in [0, len_of[b] + T)). */
bc_status eng_forward(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                      int B, int T, eng_logits_mode mode, float *logits, bc_error *err);

#endif
