/* model.c: the OPT decoder forward pass on the CPU, as transformers'
 * modeling_opt.py computes it (see model.h for the dimension legend and
 * forward.h for the API). Presets, the weight arena, the KV cache, the
 * workspace and one flat function per layer. Kernels come from kernels.h;
 * nothing here knows about SIMD.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "forward.h"
#include "lora.h"

#include <math.h>
#include <stdio.h>
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
static void *stream_alloc(size_t bytes) {
    if (bytes > SIZE_MAX / 2) return NULL; /* the rounding below would wrap */
    if (bytes < ENG_HUGE) return aligned_alloc(ENG_ALIGN, align_up(bytes));
    size_t n = (bytes + ENG_HUGE - 1) / ENG_HUGE * ENG_HUGE;
    void *p = aligned_alloc(ENG_HUGE, n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

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
        hp->vocab_size = 50272;
        hp->hidden_size = p->C;
        hp->num_hidden_layers = p->L;
        hp->num_attention_heads = p->H;
        hp->ffn_dim = p->F;
        hp->max_position_embeddings = 2048;
        hp->word_embed_proj_dim = p->P;
        hp->do_layer_norm_before = strcmp(p->name, "350m") != 0;
        hp->pad_token_id = 1;
        hp->bos_token_id = 2;
        hp->eos_token_id = 2;
        snprintf(hp->name, sizeof hp->name, "opt-%s", p->name);
        return BC_OK;
    }
    return bc_error_set(err, BC_ERR_INVALID,
                        "unknown OPT preset \"%s\" (125m, 350m, 1.3b, 2.7b, 6.7b, 13b, 30b, 66b)", preset);
}

int64_t opt_hparams_n_parameters(const opt_hparams *hp) {
    const int64_t V = hp->vocab_size, C = hp->hidden_size, L = hp->num_hidden_layers, F = hp->ffn_dim;
    const int64_t P = hp->word_embed_proj_dim, positions = (int64_t)hp->max_position_embeddings + 2;
    int64_t n = V * P + positions * C;
    if (P != C) n += 2 * C * P;           /* project_in [C, P], project_out [P, C] */
    if (hp->do_layer_norm_before) n += 2 * C; /* final_layer_norm */
    const int64_t layer = 4 * (C * C + C) /* q, k, v, out_proj */
                          + (F * C + F)   /* fc1 */
                          + (C * F + C)   /* fc2 */
                          + 2 * 2 * C;    /* self_attn_layer_norm, final_layer_norm */
    return n + L * layer;
}

/* "1.5 GiB", "16.0 EiB": bytes for a message, never wrapping. */
static void human_bytes(double b, char *buf, size_t n) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    size_t u = 0;
    while (b >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) b /= 1024.0, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

bc_status opt_hparams_check_size(const opt_hparams *hp, const char *where, bc_error *err) {
    const double V = hp->vocab_size, C = hp->hidden_size, L = hp->num_hidden_layers, F = hp->ffn_dim;
    const double P = hp->word_embed_proj_dim, Tp = (double)hp->max_position_embeddings + 2.0;
    double n = V * P + Tp * C + (P != C ? 2.0 * C * P : 0.0) + 2.0 * C;
    n += L * (4.0 * (C * C + C) + 2.0 * F * C + F + C + 4.0 * C);
    if (n > (double)ENG_MAX_PARAMETERS) {
        char need[32];
        human_bytes(n * 4.0, need, sizeof need);
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "%s: the model is impossible: num_hidden_layers %d, hidden_size %d, ffn_dim %d, vocab_size "
                            "%d, max_position_embeddings %d make %.3g parameters (%s in float32); the engine takes at "
                            "most 2^40 (%.3g)",
                            where, hp->num_hidden_layers, hp->hidden_size, hp->ffn_dim, hp->vocab_size,
                            hp->max_position_embeddings, n, need, (double)ENG_MAX_PARAMETERS);
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

/* ------------------------------------------------------------ weight arena */

/* Walks every tensor in a fixed order, either sizing (base == NULL) or
 * pointing the tensors into base. Returns the arena size in bytes. */
static size_t weights_layout(opt_weights *w, char *base) {
    const opt_hparams *hp = &w->hp;
    const int V = hp->vocab_size, C = hp->hidden_size, L = hp->num_hidden_layers, F = hp->ffn_dim;
    const int P = hp->word_embed_proj_dim, Tp = hp->max_position_embeddings + 2;
    size_t off = 0;
#define MAT(m, r, c)                                                               \
    do {                                                                           \
        (m).dtype = w->dtype; (m).rows = (r); (m).cols = (c);                      \
        (m).data = base ? base + off : NULL;                                       \
        off += align_up(eng_matrix_bytes(w->dtype, (size_t)(r), (size_t)(c)));     \
    } while (0)
#define VEC(p, n)                                                                  \
    do {                                                                           \
        (p) = base ? (float *)(void *)(base + off) : NULL;                         \
        off += align_up((size_t)(n) * sizeof(float));                              \
    } while (0)
    MAT(w->embed_tokens, V, P);
    MAT(w->embed_positions, Tp, C);
    if (P != C) {
        MAT(w->project_in, C, P);
        MAT(w->project_out, P, C);
    } else {
        memset(&w->project_in, 0, sizeof w->project_in);
        memset(&w->project_out, 0, sizeof w->project_out);
    }
    if (hp->do_layer_norm_before) {
        VEC(w->final_ln_gamma, C);
        VEC(w->final_ln_beta, C);
    } else {
        w->final_ln_gamma = w->final_ln_beta = NULL;
    }
    for (int l = 0; l < L; l++) {
        opt_layer_weights *lw = &w->layers[l];
        MAT(lw->q_proj, C, C); MAT(lw->k_proj, C, C); MAT(lw->v_proj, C, C); MAT(lw->out_proj, C, C);
        VEC(lw->q_bias, C); VEC(lw->k_bias, C); VEC(lw->v_bias, C); VEC(lw->out_bias, C);
        VEC(lw->ln1_gamma, C); VEC(lw->ln1_beta, C);
        MAT(lw->fc1, F, C); VEC(lw->fc1_bias, F);
        MAT(lw->fc2, C, F); VEC(lw->fc2_bias, C);
        VEC(lw->ln2_gamma, C); VEC(lw->ln2_beta, C);
    }
#undef MAT
#undef VEC
    return off;
}

static bc_status check_hparams(const opt_hparams *hp, bc_error *err) {
    if (hp->vocab_size < 4 || hp->hidden_size < 1 || hp->num_hidden_layers < 1 || hp->num_attention_heads < 1 ||
        hp->ffn_dim < 1 || hp->max_position_embeddings < 1 || hp->word_embed_proj_dim < 1)
        return bc_error_set(err, BC_ERR_INVALID, "OPT shape %s: every dimension must be positive (V >= 4)", hp->name);
    if (hp->hidden_size % hp->num_attention_heads != 0)
        return bc_error_set(err, BC_ERR_INVALID, "OPT shape %s: hidden_size %d is not a multiple of %d heads",
                            hp->name, hp->hidden_size, hp->num_attention_heads);
    return opt_hparams_check_size(hp, hp->name, err); /* so the arena's size cannot wrap */
}

size_t opt_weights_bytes(const opt_hparams *hp, eng_dtype dtype) {
    bc_error ignored;
    if (check_hparams(hp, &ignored) != BC_OK) return 0; /* a size that could wrap is not computed */
    opt_weights w;
    memset(&w, 0, sizeof w);
    w.hp = *hp;
    w.dtype = dtype;
    opt_layer_weights *layers = calloc((size_t)hp->num_hidden_layers, sizeof *layers);
    if (!layers) return 0;
    w.layers = layers;
    size_t n = weights_layout(&w, NULL);
    free(layers);
    return n;
}

bc_status opt_weights_alloc(opt_weights *w, const opt_hparams *hp, eng_dtype dtype, bc_error *err) {
    memset(w, 0, sizeof *w);
    bc_status st = check_hparams(hp, err);
    if (st != BC_OK) return st;
    w->hp = *hp;
    w->dtype = dtype;
    w->layers = calloc((size_t)hp->num_hidden_layers, sizeof *w->layers);
    if (!w->layers) return bc_error_set(err, BC_ERR_NOMEM, "OPT weights: no memory for %d layers", hp->num_hidden_layers);
    size_t bytes = weights_layout(w, NULL);
    w->arena = stream_alloc(bytes);
    if (!w->arena) {
        free(w->layers);
        w->layers = NULL;
        return bc_error_set(err, BC_ERR_NOMEM, "OPT weights %s (%s): cannot allocate %zu bytes", hp->name,
                            eng_dtype_name(dtype), bytes);
    }
    w->arena_bytes = bytes;
    weights_layout(w, w->arena);
    return BC_OK;
}

void opt_weights_free(opt_weights *w) {
    if (!w) return;
    free(w->arena);
    free(w->layers);
    w->arena = NULL;
    w->layers = NULL;
    w->arena_bytes = 0;
}

/* ---------------------------------------------------------------- KV cache */

size_t eng_kv_cache_bytes(const opt_hparams *hp, eng_dtype dtype, int B, int Smax) {
    /* K and V: L x B x Smax x C elements each; SIZE_MAX when that overflows */
    size_t n = 0;
    if (hp->num_hidden_layers < 0 || B < 0 || Smax < 0 || hp->hidden_size < 0 ||
        __builtin_mul_overflow((size_t)hp->num_hidden_layers, (size_t)B, &n) ||
        __builtin_mul_overflow(n, (size_t)Smax, &n) || __builtin_mul_overflow(n, (size_t)hp->hidden_size, &n) ||
        __builtin_mul_overflow(n, eng_dtype_size(dtype), &n) || n > SIZE_MAX / 4)
        return SIZE_MAX;
    return 2 * align_up(n);
}

bc_status eng_kv_cache_shape(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                             bc_error *err) {
    memset(kv, 0, sizeof *kv);
    if (B < 1 || Smax < 1)
        return bc_error_set(err, BC_ERR_INVALID, "KV cache: B %d and Smax %d must be >= 1", B, Smax);
    const size_t total = eng_kv_cache_bytes(hp, dtype, B, Smax);
    if (total == SIZE_MAX)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "KV cache: %d layers x %d rows x %d positions x %d does not fit in "
                            "memory's address space", hp->num_hidden_layers, B, Smax, hp->hidden_size);
    kv->dtype = dtype;
    kv->L = hp->num_hidden_layers;
    kv->B = B;
    kv->H = hp->num_attention_heads;
    kv->D = hp->hidden_size / hp->num_attention_heads;
    kv->Smax = Smax;
    kv->bytes = total;
    return BC_OK;
}

bc_status eng_kv_cache_alloc(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                             bc_error *err) {
    bc_status st = eng_kv_cache_shape(kv, hp, dtype, B, Smax, err);
    if (st != BC_OK) return st;
    size_t half = kv->bytes / 2;
    kv->k = stream_alloc(half);
    kv->v = stream_alloc(half);
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

int eng_kv_page_tokens(const opt_hparams *hp, eng_dtype dtype, int asked) {
    if (asked > 0) return asked;
    const size_t tok = (size_t)(hp->hidden_size / hp->num_attention_heads) * eng_dtype_size(dtype), pg = os_page_bytes();
    int n = 1;
    while ((n * tok) % pg != 0 && n < (1 << 20)) n++;
    return n;
}

bc_status eng_kv_cache_alloc_paged(eng_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype, int B, int Smax,
                                   int page_tokens, bc_error *err) {
    if (page_tokens < 1 || Smax % page_tokens != 0)
        return bc_error_set(err, BC_ERR_INVALID, "paged KV cache: %d positions are not whole pages of %d tokens", Smax,
                            page_tokens);
    bc_status st = eng_kv_cache_shape(kv, hp, dtype, B, Smax, err);
    if (st != BC_OK) return st;
    const size_t page = (size_t)page_tokens * kv->D * eng_dtype_size(dtype), pg = os_page_bytes();
    if (page % pg != 0)
        return bc_error_set(err, BC_ERR_SETTING,
                            "kv_page_tokens %d: a page of %d tokens x %d x %zu bytes per head is not a whole number "
                            "of the system's %zu-byte pages; use a multiple of %d (or 0)",
                            page_tokens, page_tokens, kv->D, eng_dtype_size(dtype), pg,
                            eng_kv_page_tokens(hp, dtype, 0));
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

void eng_kv_cache_return_row(eng_kv_cache *kv, int b) {
    if (!kv->paged) return;
    const size_t head = (size_t)kv->Smax * kv->D * eng_dtype_size(kv->dtype); /* whole pages (alloc_paged) */
    for (int l = 0; l < kv->L; l++) {
        const size_t off = ((size_t)l * kv->B + b) * kv->H * head;
        (void)madvise((char *)kv->k + off, head * kv->H, MADV_DONTNEED);
        (void)madvise((char *)kv->v + off, head * kv->H, MADV_DONTNEED);
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
        for (int h = 0; h < dst->H; h++) {
            size_t od = (((size_t)l * dst->B + dst_b) * dst->H + h) * dhead;
            size_t os = (((size_t)l * src->B + src_b) * src->H + h) * shead;
            memcpy((char *)dst->k + od, (const char *)src->k + os, n);
            memcpy((char *)dst->v + od, (const char *)src->v + os, n);
        }
}

/* --------------------------------------------------------------- workspace */

static int round16(int n) { return (n + 15) / 16 * 16; }

/* Sizes (base == NULL) or points (base != NULL) the workspace buffers. */
static size_t workspace_layout(eng_workspace *ws, const opt_hparams *hp, int N, int Smax, int n_threads, char *base) {
    const size_t C = (size_t)hp->hidden_size, P = (size_t)hp->word_embed_proj_dim, F = (size_t)hp->ffn_dim;
    const size_t Cm = C > P ? C : P;
    size_t off = 0;
#define BUF(p, type, n)                                                    \
    do {                                                                   \
        (p) = base ? (type *)(void *)(base + off) : NULL;                  \
        off += align_up((size_t)(n) * sizeof(type));                       \
    } while (0)
    BUF(ws->x, float, N * Cm);
    BUF(ws->xn, float, N * Cm);
    BUF(ws->q, float, N * 3 * Cm); /* [N, 3C]: the fused q | k | v output (decoder_layer_forward) */
    BUF(ws->kk, float, N * Cm);
    BUF(ws->vv, float, N * Cm);
    BUF(ws->att, float, N * Cm);
    BUF(ws->ff, float, N * F);
    BUF(ws->emb, float, N * Cm);
    BUF(ws->scores, float, (size_t)n_threads * ENG_ATTEND_GROUP_MAX * round16(Smax));
    BUF(ws->pos, int, N);
#undef BUF
    return off;
}

size_t eng_workspace_bytes(const opt_hparams *hp, int max_tokens, int Smax, int n_threads) {
    eng_workspace ws;
    return workspace_layout(&ws, hp, max_tokens, Smax, n_threads, NULL);
}

/* ------------------------------------------------------------------- model */

bc_status eng_model_init_isa(eng_model *m, const opt_weights *w, int n_threads, int isa, bc_error *err) {
    memset(m, 0, sizeof *m);
    eng_isa best = eng_isa_detect();
    const int requested_best = isa < 0;
    if (isa < 0) isa = (int)best;
    if (isa > (int)best)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "kernels for %s requested, but this CPU supports at most %s",
                            eng_isa_name((eng_isa)isa), eng_isa_name(best));
    /* asked for the best: the best ISA that has a kernel table */
    m->k = requested_best ? eng_kernels_best() : eng_kernels_for((eng_isa)isa);
    if (!m->k) return bc_error_set(err, BC_ERR_INTERNAL, "no kernel table for %s", eng_isa_name((eng_isa)isa));
    if (n_threads <= 0) n_threads = eng_online_cores();
    m->pool = eng_pool_create(n_threads);
    if (!m->pool) return bc_error_set(err, BC_ERR_NOMEM, "cannot create a pool of %d threads", n_threads);
    m->w = w;
    return BC_OK;
}

bc_status eng_model_init(eng_model *m, const opt_weights *w, int n_threads, bc_error *err) {
    return eng_model_init_isa(m, w, n_threads, -1, err);
}

bc_status eng_model_reserve(eng_model *m, int max_tokens, int Smax, bc_error *err) {
    eng_workspace *ws = &m->ws;
    int nt = eng_pool_size(m->pool);
    if (ws->arena && ws->max_tokens >= max_tokens && ws->Smax >= Smax && ws->n_threads >= nt) return BC_OK;
    if (ws->arena) {
        if (ws->max_tokens > max_tokens) max_tokens = ws->max_tokens;
        if (ws->Smax > Smax) Smax = ws->Smax;
    }
    eng_model_release_workspace(m);
    size_t bytes = workspace_layout(ws, &m->w->hp, max_tokens, Smax, nt, NULL);
    char *base = aligned_alloc(ENG_ALIGN, bytes);
    if (!base)
        return bc_error_set(err, BC_ERR_NOMEM, "OPT workspace: cannot allocate %zu bytes (%d tokens, %d keys)", bytes,
                            max_tokens, Smax);
    workspace_layout(ws, &m->w->hp, max_tokens, Smax, nt, base);
    ws->arena = base;
    ws->bytes = bytes;
    ws->max_tokens = max_tokens;
    ws->Smax = Smax;
    ws->n_threads = nt;
    return BC_OK;
}

void eng_model_release_workspace(eng_model *m) {
    free(m->ws.arena);
    memset(&m->ws, 0, sizeof m->ws);
}

void eng_model_free(eng_model *m) {
    if (!m) return;
    eng_model_release_workspace(m);
    if (m->pool) eng_pool_destroy(m->pool);
    m->pool = NULL;
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

/* x[N, C] += y[N, C] */
static void residual_forward(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* dst[cols] = row r of the matrix a (rows scaled back for int8). */
static void matrix_row_to_f32(const eng_kernels *k, float *dst, const eng_matrix *a, int r) {
    const size_t cols = (size_t)a->cols;
    k->to_f32(dst, (const char *)a->data + (size_t)r * cols * eng_dtype_size(a->dtype), a->dtype, cols);
    if (a->dtype == ENG_I8) {
        const float s = eng_i8_scales(a->data, (size_t)a->rows, cols)[r];
        for (size_t i = 0; i < cols; i++) dst[i] *= s;
    }
}

/* x[N, C] = embed_tokens[tokens] (projected by project_in when P != C)
 *           + embed_positions[pos]. emb[N, P] is scratch. */
static void embedding_forward(eng_model *m, float *x, float *emb, float *tmp, const int32_t *tokens, const int *pos,
                              int N) {
    const opt_weights *w = m->w;
    const int C = w->hp.hidden_size, P = w->hp.word_embed_proj_dim;
    float *e = P != C ? emb : x;
    for (int n = 0; n < N; n++) matrix_row_to_f32(m->k, e + (size_t)n * P, &w->embed_tokens, tokens[n]);
    if (P != C)
        eng_linear_parallel(m->pool, m->k, x, emb, w->project_in.data, w->dtype, NULL, N, P, C, 0);
    for (int n = 0; n < N; n++) {
        matrix_row_to_f32(m->k, tmp, &w->embed_positions, pos[n]);
        residual_forward(x + (size_t)n * C, tmp, (size_t)C);
    }
}

/* One attention job: the heads x batch rows of a forward, split across the pool. */
typedef struct attention_job {
    const eng_kernels *k;
    float *att;              /* [B, T, C] out */
    const float *q;          /* [B, T, ldq], the first C of each row; already scaled by D^-0.5 */
    int ldq;                 /* floats between rows of q */
    const void *kc, *vc;     /* this layer's cache [B][H][Smax][D] in dtype */
    eng_dtype dt;
    const uint8_t *mask;     /* [B, mask_stride] */
    int mask_stride;
    float *scores;           /* [n_threads][ENG_ATTEND_GROUP_MAX][Sr] */
    int Sr;
    int B, T, H, D, Smax, S0;
    int G, np;               /* shared prefix: rows per group (1: none), keys read from the group's first row */
    const int *slot_of, *len_of; /* rows at their own lengths (eng_kv_cache), or NULL */
    const int *prefix_of;    /* with slot_of: the cache row of each row's first np keys (eng_kv_cache), or NULL */
} attention_job;

/* For rows (b, h) in this thread's share:
 *   att[b, t, h*D:(h+1)*D] = softmax_s(q . k_s, s <= S0 + t, mask[b, s]) . v_s
 * The share is a range of units (g, h), g a group of G rows (1: no groups);
 * a group's rows at one head and position go to one attend_group call (up to
 * ENG_ATTEND_GROUP_MAX rows a call), which reads the shared prefix rows once
 * for all of them. */
static void attention_worker(void *ctx, int i, int n) {
    const attention_job *j = ctx;
    const int G = j->G, units = j->B / G * j->H;
    const int lo = (int)((long)units * i / n), hi = (int)((long)units * (i + 1) / n);
    const int C = j->H * j->D, D = j->D;
    const size_t es = eng_dtype_size(j->dt), head_bytes = (size_t)j->Smax * D * es;
    float *sc = j->scores + (size_t)i * ENG_ATTEND_GROUP_MAX * j->Sr;
    for (int u = lo; u < hi; u++) {
        const int h = u % j->H;
        for (int b = u / j->H * G; b < (u / j->H + 1) * G;) {
            const int cb = j->slot_of ? j->slot_of[b] : b, S0 = j->len_of ? j->len_of[b] : j->S0;
            const char *K = (const char *)j->kc + ((size_t)cb * j->H + h) * head_bytes;
            const char *Vv = (const char *)j->vc + ((size_t)cb * j->H + h) * head_bytes;
            const int lb = j->prefix_of ? j->prefix_of[b] : b - b % G; /* the cache row of keys s < np */
            const char *Kp = (const char *)j->kc + ((size_t)lb * j->H + h) * head_bytes;
            const char *Vp = (const char *)j->vc + ((size_t)lb * j->H + h) * head_bytes;
            const uint8_t *mk = j->mask + (size_t)b * j->mask_stride;
            if (G > 1) { /* no slot_of (eng_forward): rows b.. of a group follow each other in the cache */
                const int rows = b % G + ENG_ATTEND_GROUP_MAX <= G ? ENG_ATTEND_GROUP_MAX : G - b % G;
                for (int t = 0; t < j->T; t++)
                    j->k->attend_group(j->att + ((size_t)b * j->T + t) * C + (size_t)h * D, (size_t)j->T * C,
                                       j->q + ((size_t)b * j->T + t) * j->ldq + (size_t)h * D,
                                       (size_t)j->T * j->ldq, rows, Kp, Vp, j->np, K, Vv,
                                       (size_t)j->H * head_bytes, j->dt, mk, (size_t)j->mask_stride, S0 + t + 1, D,
                                       sc);
                b += rows;
                continue;
            }
            for (int t = 0; t < j->T; t++) {
                const float *qv = j->q + ((size_t)b * j->T + t) * j->ldq + (size_t)h * D;
                float *out = j->att + ((size_t)b * j->T + t) * C + (size_t)h * D;
                if (j->np > 0) /* keys 0..S0+t, the first np from the prompt's row */
                    j->k->attend_split(out, qv, Kp, Vp, j->np, K, Vv, j->dt, mk, S0 + t + 1, D, sc);
                else
                    j->k->attend(out, qv, K, Vv, j->dt, mk, S0 + t + 1, D, sc);
            }
            b++;
        }
    }
}

/* Appends the new keys and values kk, vv [B, T, ld] (fp32, the first C of
 * each row) to the layer's cache [B][H][Smax][D] at positions S0..S0+T-1
 * (row b: cache row slot_of[b] at len_of[b] when given), in the cache's
 * dtype. */
static void kv_store(const eng_kernels *k, void *kc, void *vc, eng_dtype dt, const float *kk, const float *vv, int ld,
                     int B, int T, int H, int D, int Smax, int S0, const int *slot_of, const int *len_of) {
    const size_t es = eng_dtype_size(dt);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const int cb = slot_of ? slot_of[b] : b, s0 = len_of ? len_of[b] : S0;
            size_t head = ((size_t)cb * H + h) * (size_t)Smax * D;
            for (int t = 0; t < T; t++) {
                size_t src = ((size_t)b * T + t) * ld + (size_t)h * D;
                size_t dst = (head + (size_t)(s0 + t) * D) * es;
                k->from_f32((char *)kc + dst, dt, kk + src, (size_t)D);
                k->from_f32((char *)vc + dst, dt, vv + src, (size_t)D);
            }
        }
}

/* One decoder layer on x[B, T, C] in place. */
static void decoder_layer_forward(eng_model *m, eng_kv_cache *kv, int l, const uint8_t *mask, int mask_stride, int B,
                                  int T) {
    const opt_hparams *hp = &m->w->hp;
    const opt_layer_weights *lw = &m->w->layers[l];
    const eng_dtype dt = m->w->dtype;
    const int C = hp->hidden_size, F = hp->ffn_dim, H = hp->num_attention_heads, D = C / H, N = B * T;
    eng_workspace *ws = &m->ws;
    float *x = ws->x;     /* [N, C] residual stream */
    float *xn = ws->xn;   /* [N, C] normalized input */
    float *q = ws->q;     /* [N, C] */
    float *kk = ws->kk;   /* [N, C] */
    float *vv = ws->vv;   /* [N, C] */
    float *att = ws->att; /* [N, C] */
    float *ff = ws->ff;   /* [N, F] */
    const size_t layer_kv = (size_t)kv->B * H * kv->Smax * D * eng_dtype_size(kv->dtype);
    void *kc = (char *)kv->k + (size_t)l * layer_kv, *vc = (char *)kv->v + (size_t)l * layer_kv;

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
    eng_lora *lo = m->w->lora_unfused; /* an adapter applied unfused: after each GEMM, before activations */
    if (lo) {
        eng_lora_forward_add(lo, l, ENG_LORA_Q, q, ldq, a_in, C, N);
        eng_lora_forward_add(lo, l, ENG_LORA_K, kk, ldq, a_in, C, N);
        eng_lora_forward_add(lo, l, ENG_LORA_V, vv, ldq, a_in, C, N);
    }
    const float scale = 1.0f / sqrtf((float)D);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) q[(size_t)n * ldq + i] *= scale;
    kv_store(m->k, kc, vc, kv->dtype, kk, vv, ldq, B, T, H, D, kv->Smax, kv->len, kv->slot_of, kv->len_of);
    const int *prefix_of = kv->slot_of ? kv->prefix_of : NULL;
    attention_job job = {m->k, att, q, ldq, kc, vc, kv->dtype, mask, mask_stride,
                         ws->scores, round16(ws->Smax), B, T, H, D, kv->Smax, kv->len,
                         kv->group > 1 ? kv->group : 1, kv->group > 1 || prefix_of ? kv->prefix : 0,
                         kv->slot_of, kv->len_of, prefix_of};
    eng_pool_run(m->pool, attention_worker, &job);
    eng_linear_parallel(m->pool, m->k, ws->kk, att, lw->out_proj.data, dt, lw->out_bias, N, C, C, 0);
    if (lo) eng_lora_forward_add(lo, l, ENG_LORA_OUT, ws->kk, C, att, C, N);
    residual_forward(x, ws->kk, (size_t)N * C);
    if (!hp->do_layer_norm_before) layernorm_forward(x, x, lw->ln1_gamma, lw->ln1_beta, N, C);

    /* feed-forward block */
    const float *f_in = x;
    if (hp->do_layer_norm_before) {
        layernorm_forward(xn, x, lw->ln2_gamma, lw->ln2_beta, N, C);
        f_in = xn;
    }
    const int fc1_unfused = lo && (lo->targets >> ENG_LORA_FC1 & 1); /* the ReLU after the adapter */
    eng_linear_parallel(m->pool, m->k, ff, f_in, lw->fc1.data, dt, lw->fc1_bias, N, C, F, !fc1_unfused);
    if (fc1_unfused) {
        eng_lora_forward_add(lo, l, ENG_LORA_FC1, ff, F, f_in, C, N);
        for (size_t i = 0; i < (size_t)N * F; i++) ff[i] = ff[i] > 0.0f ? ff[i] : 0.0f;
    }
    eng_linear_parallel(m->pool, m->k, q, ff, lw->fc2.data, dt, lw->fc2_bias, N, F, C, 0);
    if (lo) eng_lora_forward_add(lo, l, ENG_LORA_FC2, q, C, ff, F, N);
    residual_forward(x, q, (size_t)N * C);
    if (!hp->do_layer_norm_before) layernorm_forward(x, x, lw->ln2_gamma, lw->ln2_beta, N, C);
}

bc_status eng_forward(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                      int B, int T, eng_logits_mode mode, float *logits, bc_error *err) {
    const opt_weights *w = m->w;
    const opt_hparams *hp = &w->hp;
    const int C = hp->hidden_size, P = hp->word_embed_proj_dim, V = hp->vocab_size, L = hp->num_hidden_layers;
    const int *len_of = kv->slot_of ? kv->len_of : NULL;
    int S1 = kv->len + T; /* the longest row after the forward */
    const int N = B * T;
    if ((kv->slot_of ? B > kv->B : B != kv->B) || T < 1 || B < 1 || (kv->slot_of && !len_of))
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: B %d (cache has %d), T %d", B, kv->B, T);
    if (kv->slot_of) {
        if (kv->group > 1)
            return bc_error_set(err, BC_ERR_INVALID, "eng_forward: rows at their own lengths with a shared prefix");
        S1 = 0;
        for (int b = 0; b < B; b++) {
            if (kv->slot_of[b] < 0 || kv->slot_of[b] >= kv->B || len_of[b] < 0)
                return bc_error_set(err, BC_ERR_INVALID, "eng_forward: row %d: cache row %d of %d, length %d", b,
                                    kv->slot_of[b], kv->B, len_of[b]);
            if (len_of[b] + T > S1) S1 = len_of[b] + T;
            if (kv->prefix_of && (kv->prefix_of[b] < 0 || kv->prefix_of[b] >= kv->B || kv->prefix < 0 ||
                                  kv->prefix > len_of[b]))
                return bc_error_set(err, BC_ERR_INVALID,
                                    "eng_forward: row %d: a shared prefix of %d tokens in cache row %d of %d needs "
                                    "the row's %d cached tokens to hold it",
                                    b, kv->prefix, kv->prefix_of[b], kv->B, len_of[b]);
        }
    }
    if (S1 > kv->Smax || S1 > hp->max_position_embeddings)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: %d tokens exceed the cache (%d) or the positions (%d)",
                            S1, kv->Smax, hp->max_position_embeddings);
    if (mask_stride < S1)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: mask stride %d < %d tokens", mask_stride, S1);
    const int S0 = kv->len;
    if (kv->dtype != eng_kv_dtype(w->dtype) || kv->L != L || kv->H != hp->num_attention_heads)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: KV cache shape or dtype does not match the model");
    if (kv->group > 1 && (B % kv->group != 0 || kv->prefix < 0 || kv->prefix > S0))
        return bc_error_set(err, BC_ERR_INVALID,
                            "eng_forward: shared prefix of %d tokens in groups of %d rows: needs B (%d) a multiple "
                            "of the group and the prefix within the %d cached tokens",
                            kv->prefix, kv->group, B, S0);
    if (mode != ENG_LOGITS_NONE && !logits)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: logits is NULL");
    for (int n = 0; n < N; n++)
        if (tokens[n] < 0 || tokens[n] >= V)
            return bc_error_set(err, BC_ERR_INVALID, "eng_forward: token %d at %d outside [0, %d)", tokens[n], n, V);
    bc_status st = eng_model_reserve(m, N, kv->Smax, err);
    if (st != BC_OK) return st;
    eng_workspace *ws = &m->ws;

    /* positions: cumsum(mask) * mask - 1, plus the offset 2 */
    for (int b = 0; b < B; b++) {
        const uint8_t *mk = mask + (size_t)b * mask_stride;
        const int s0 = len_of ? len_of[b] : S0;
        int cum = 0;
        for (int s = 0; s < s0 + T; s++) {
            cum += mk[s] ? 1 : 0;
            if (s >= s0) ws->pos[b * T + (s - s0)] = (mk[s] ? cum : 0) - 1 + 2;
        }
    }

    embedding_forward(m, ws->x, ws->emb, ws->xn, tokens, ws->pos, N);
    for (int l = 0; l < L; l++) decoder_layer_forward(m, kv, l, mask, mask_stride, B, T);
    if (!kv->slot_of) kv->len = S1;
    if (mode == ENG_LOGITS_NONE) return BC_OK;

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
    if (w->final_ln_gamma) {
        layernorm_forward(ws->xn, h, w->final_ln_gamma, w->final_ln_beta, M, C);
        h = ws->xn;
    }
    if (P != C) {
        eng_linear_parallel(m->pool, m->k, ws->emb, h, w->project_out.data, w->dtype, NULL, M, C, P, 0);
        h = ws->emb;
    }
    /* lm_head tied to embed_tokens: logits[M, V] = h[M, P] embed_tokens[V, P]^T */
    eng_linear_parallel(m->pool, m->k, logits, h, w->embed_tokens.data, w->dtype, NULL, M, P, V, 0);
    return BC_OK;
}
