/* kv_cache.c: the KV cache, contiguous (eng_kv_cache_alloc) or paged
 * (eng_kv_cache_alloc_paged), sized by the shape's KV heads and head size
 * (kv_cache.h), and the engine's streamed allocation (eng_stream_alloc).
 */
#define _DEFAULT_SOURCE /* madvise */
#include "kv_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define ENG_ALIGN 64

static size_t align_up(size_t n) { return (n + ENG_ALIGN - 1) / ENG_ALIGN * ENG_ALIGN; }

/* A buffer the decode loop streams every step (weights, KV cache): aligned to
 * 2 MiB and, on Linux, advised as transparent huge pages (this machine's THP
 * mode is "madvise"), so streaming it costs one TLB entry per 2 MiB and the
 * hardware prefetchers do not stop at every 4 KiB page. Sizes under 2 MiB
 * get plain 64-byte alignment. Free with free(). The advice is a hint: when
 * the kernel has no huge page, 4 KiB pages are used as before. */
#define ENG_HUGE (2u << 20)
void *eng_stream_alloc(size_t bytes) {
    if (bytes > SIZE_MAX / 2) return NULL; /* the rounding below would wrap */
    if (bytes < ENG_HUGE) return aligned_alloc(ENG_ALIGN, align_up(bytes));
    size_t n = (bytes + ENG_HUGE - 1) / ENG_HUGE * ENG_HUGE;
    void *p = aligned_alloc(ENG_HUGE, n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

/* ---------------------------------------------------------------- KV cache */

size_t eng_kv_cache_bytes(const eng_shape *s, eng_dtype dtype, int B, int Smax) {
    /* K and V: L x B x Smax x Hkv x D elements each; SIZE_MAX when that overflows */
    size_t n = 0;
    if (s->n_layers < 0 || B < 0 || Smax < 0 || s->n_kv_heads < 0 || s->head_dim < 0 ||
        __builtin_mul_overflow((size_t)s->n_layers, (size_t)B, &n) ||
        __builtin_mul_overflow(n, (size_t)Smax, &n) || __builtin_mul_overflow(n, (size_t)s->n_kv_heads, &n) ||
        __builtin_mul_overflow(n, (size_t)s->head_dim, &n) ||
        __builtin_mul_overflow(n, eng_dtype_size(dtype), &n) || n > SIZE_MAX / 4)
        return SIZE_MAX;
    return 2 * align_up(n);
}

bc_status eng_kv_cache_shape(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                             bc_error *err) {
    memset(kv, 0, sizeof *kv);
    if (B < 1 || Smax < 1)
        return bc_error_set(err, BC_ERR_INVALID, "KV cache: B %d and Smax %d must be >= 1", B, Smax);
    const size_t total = eng_kv_cache_bytes(s, dtype, B, Smax);
    if (total == SIZE_MAX)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "KV cache: %d layers x %d rows x %d positions x %d does not fit in "
                            "memory's address space", s->n_layers, B, Smax, s->n_kv_heads * s->head_dim);
    kv->dtype = dtype;
    kv->L = s->n_layers;
    kv->B = B;
    kv->Hkv = s->n_kv_heads;
    kv->D = s->head_dim;
    kv->Smax = Smax;
    kv->bytes = total;
    return BC_OK;
}

bc_status eng_kv_cache_alloc(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                             bc_error *err) {
    bc_status st = eng_kv_cache_shape(kv, s, dtype, B, Smax, err);
    if (st != BC_OK) return st;
    size_t half = kv->bytes / 2;
    kv->k = eng_stream_alloc(half);
    kv->v = eng_stream_alloc(half);
    if (!kv->k || !kv->v) {
        free(kv->k);
        free(kv->v);
        kv->k = kv->v = NULL;
        return bc_error_set(err, BC_ERR_NOMEM, "KV cache: cannot allocate 2 x %zu bytes (B %d, Smax %d)", half, B,
                            Smax);
    }
    kv->bytes = 2 * half;
    return BC_OK;
}

static size_t os_page_bytes(void) {
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (size_t)pg : 4096;
}

int eng_kv_page_tokens(const eng_shape *s, eng_dtype dtype, int asked) {
    if (asked > 0) return asked;
    const size_t tok = (size_t)s->head_dim * eng_dtype_size(dtype), pg = os_page_bytes();
    int n = 1;
    while ((n * tok) % pg != 0 && n < (1 << 20)) n++;
    return n;
}

bc_status eng_kv_cache_alloc_paged(eng_kv_cache *kv, const eng_shape *s, eng_dtype dtype, int B, int Smax,
                                   int page_tokens, bc_error *err) {
    if (page_tokens < 1 || Smax % page_tokens != 0)
        return bc_error_set(err, BC_ERR_INVALID, "paged KV cache: %d positions are not whole pages of %d tokens", Smax,
                            page_tokens);
    bc_status st = eng_kv_cache_shape(kv, s, dtype, B, Smax, err);
    if (st != BC_OK) return st;
    const size_t page = (size_t)page_tokens * kv->D * eng_dtype_size(dtype), pg = os_page_bytes();
    if (page % pg != 0)
        return bc_error_set(err, BC_ERR_SETTING,
                            "kv_page_tokens %d: a page of %d tokens x %d x %zu bytes per head is not a whole number "
                            "of the system's %zu-byte pages; use a multiple of %d (or 0)",
                            page_tokens, page_tokens, kv->D, eng_dtype_size(dtype), pg,
                            eng_kv_page_tokens(s, dtype, 0));
    const size_t half = kv->bytes / 2;
    kv->k = mmap(NULL, half, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    kv->v = mmap(NULL, half, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (kv->k == MAP_FAILED || kv->v == MAP_FAILED) {
        if (kv->k != MAP_FAILED) munmap(kv->k, half);
        if (kv->v != MAP_FAILED) munmap(kv->v, half);
        kv->k = kv->v = NULL;
        return bc_error_set(err, BC_ERR_NOMEM, "paged KV cache: cannot map 2 x %zu bytes (B %d, Smax %d)", half, B,
                            Smax);
    }
    kv->paged = 1;
    return BC_OK;
}

int64_t eng_kv_row_page_bytes(const eng_shape *s, eng_dtype dtype, int page_tokens) {
    return 2 * (int64_t)s->n_layers * page_tokens * s->n_kv_heads * s->head_dim * (int64_t)eng_dtype_size(dtype);
}

void eng_kv_cache_return_row(eng_kv_cache *kv, int b) {
    if (!kv->paged) return;
    const size_t head = (size_t)kv->Smax * kv->D * eng_dtype_size(kv->dtype); /* whole pages (alloc_paged) */
    for (int l = 0; l < kv->L; l++) {
        const size_t off = ((size_t)l * kv->B + b) * kv->Hkv * head;
        (void)madvise((char *)kv->k + off, head * kv->Hkv, MADV_DONTNEED);
        (void)madvise((char *)kv->v + off, head * kv->Hkv, MADV_DONTNEED);
    }
}

void eng_kv_cache_free(eng_kv_cache *kv) {
    if (!kv) return;
    if (kv->paged) {
        if (kv->k) munmap(kv->k, kv->bytes / 2);
        if (kv->v) munmap(kv->v, kv->bytes / 2);
        kv->k = kv->v = NULL;
        kv->paged = 0;
    }
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
    kv->bytes = 0;
    kv->len = 0;
}

void eng_kv_cache_copy_row(eng_kv_cache *dst, int dst_b, const eng_kv_cache *src, int src_b, int S) {
    const size_t es = eng_dtype_size(dst->dtype);
    const size_t dhead = (size_t)dst->Smax * dst->D * es, shead = (size_t)src->Smax * src->D * es; /* [Smax][D] */
    const size_t n = (size_t)S * dst->D * es;
    for (int l = 0; l < dst->L; l++)
        for (int h = 0; h < dst->Hkv; h++) {
            size_t od = (((size_t)l * dst->B + dst_b) * dst->Hkv + h) * dhead;
            size_t os = (((size_t)l * src->B + src_b) * src->Hkv + h) * shead;
            memcpy((char *)dst->k + od, (const char *)src->k + os, n);
            memcpy((char *)dst->v + od, (const char *)src->v + os, n);
        }
}

