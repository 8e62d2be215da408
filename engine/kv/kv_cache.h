/* kv_cache.h: the KV cache of one batch, contiguous or paged, sized by the
 * shape's KV heads (Hkv) and head size (D), whatever the family (dimension
 * legend of shape.h). Implemented in kv_cache.c.
 *
 * K and V per layer in the run's KV dtype, laid out [L][B][Hkv][Smax][D] so
 * decode attention streams one head's keys contiguously. Query head h reads
 * KV head eng_kv_head_of(shape, h) (grouped-query attention; Hkv == H:
 * multi-head).
 */
#ifndef ENG_KV_CACHE_H
#define ENG_KV_CACHE_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "kernels.h"
#include "shape.h"

typedef struct eng_kv_cache {
    eng_dtype dtype;
    int L, B, Hkv, D, Smax;
    int len;       /* S: tokens cached so far in every row */
    void *k, *v;   /* [L][B][Hkv][Smax][D] each, in dtype; owned */
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

bc_status eng_kv_cache_alloc(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                             bc_error *err);
/* Checks B and Smax and fills kv's shape (dtype, L, B, Hkv, D, Smax) and
 * bytes, allocating nothing (len, k, v, group, prefix 0): the shape of every
 * KV cache, on the host (eng_kv_cache_alloc) or a device. */
bc_status eng_kv_cache_shape(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                             bc_error *err);
/* The paged layout: K and V reserved as mappings, Smax a multiple of
 * page_tokens, each (layer, row, KV head) stretch of page_tokens tokens a
 * whole number of the system's pages, so memory is taken as a row's tokens
 * are written and returned by eng_kv_cache_return_row. BC_ERR_SETTING when
 * page_tokens x D x dtype size is not a multiple of the system's page
 * (eng_kv_page_tokens gives the smallest that is). */
bc_status eng_kv_cache_alloc_paged(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                                   int page_tokens, bc_error *err);
/* The page size in tokens for a shape and dtype: asked when > 0 (checked by
 * eng_kv_cache_alloc_paged), else the smallest that fits the system's page. */
int eng_kv_page_tokens(const eng_shape *s, eng_dtype dtype, int asked);
/* Bytes of one page of page_tokens tokens of one row over every layer and KV
 * head, K and V together (the unit paged accounting counts in). */
int64_t eng_kv_row_page_bytes(const eng_shape *s, eng_dtype dtype, int page_tokens);
/* Hands row b's memory back to the system (a paged cache; its tokens read
 * as zeros afterwards). */
void eng_kv_cache_return_row(eng_kv_cache *kv, int b);
/* Bytes eng_kv_cache_alloc would allocate (SIZE_MAX when that overflows). */
size_t eng_kv_cache_bytes(const eng_shape *s, eng_dtype dtype, int B, int Smax);
void eng_kv_cache_free(eng_kv_cache *kv);
/* Copies the first S cached tokens of src row src_b into dst row dst_b (both
 * caches of the same model and dtype; B and Smax may differ; used by shared
 * prefill). */
void eng_kv_cache_copy_row(eng_kv_cache *dst, int dst_b, const eng_kv_cache *src, int src_b, int S);

/* A buffer the decode loop streams every step (weights, KV cache): 2 MiB
 * aligned and advised as transparent huge pages from 2 MiB on (kv_cache.c).
 * Free with free(); NULL when out of memory. */
void *eng_stream_alloc(size_t bytes);

#endif
