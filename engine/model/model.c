/* model.c: the engine's CPU model (forward.h): the workspace, the model
 * (kernel table, thread pool), eng_forward's checks and positions before the
 * family's forward (family.h), and the ops every family's layers share:
 * residual add, embedding rows, KV store and grouped-query attention over
 * the cache. Kernels come from kernels.h; nothing here knows about SIMD.
 */
#include "family.h"
#include "forward.h"
#include "precision.h"

#include <stdlib.h>
#include <string.h>

#define ENG_ALIGN 64

static size_t align_up(size_t n) { return (n + ENG_ALIGN - 1) / ENG_ALIGN * ENG_ALIGN; }

/* --------------------------------------------------------------- workspace */

static int round16(int n) { return (n + 15) / 16 * 16; }

/* Sizes (base == NULL) or points (base != NULL) the workspace buffers. */
static size_t max2(size_t a, size_t b) { return a > b ? a : b; }

static size_t workspace_layout(eng_workspace *ws, const eng_shape *s, const eng_ws_needs *need, int N, int Smax,
                               int n_threads, char *base) {
    const size_t W = max2((size_t)s->hidden_size, (size_t)need->width), F = (size_t)need->ff;
    const size_t D = (size_t)s->head_dim, Q = ((size_t)s->n_heads + 2 * (size_t)s->n_kv_heads) * D;
    size_t off = 0;
#define BUF(p, type, n)                                                    \
    do {                                                                   \
        (p) = base ? (type *)(void *)(base + off) : NULL;                  \
        off += align_up((size_t)(n) * sizeof(type));                       \
    } while (0)
    BUF(ws->x, float, N * W);
    BUF(ws->xn, float, N * W);
    BUF(ws->q, float, N * max2(Q, W)); /* [N, Q]: the fused q | k | v output */
    BUF(ws->kk, float, N * max2(W, (size_t)s->n_kv_heads * D));
    BUF(ws->vv, float, N * max2(W, (size_t)s->n_kv_heads * D));
    BUF(ws->att, float, N * max2(W, (size_t)s->n_heads * D));
    BUF(ws->ff, float, N * F);
    BUF(ws->emb, float, N * W);
    BUF(ws->scores, float, (size_t)n_threads * ENG_ATTEND_GROUP_MAX * round16(Smax));
    BUF(ws->pos, int, N);
#undef BUF
    return off;
}

size_t eng_workspace_bytes(const eng_shape *s, const eng_ws_needs *need, int max_tokens, int Smax, int n_threads) {
    eng_workspace ws;
    return workspace_layout(&ws, s, need, max_tokens, Smax, n_threads, NULL);
}

/* ------------------------------------------------------------------- model */

bc_status eng_model_init_isa(eng_model *m, const eng_weights *w, int n_threads, int isa, bc_error *err) {
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

bc_status eng_model_init(eng_model *m, const eng_weights *w, int n_threads, bc_error *err) {
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
    size_t bytes = workspace_layout(ws, &m->w->shape, &m->w->ws, max_tokens, Smax, nt, NULL);
    char *base = aligned_alloc(ENG_ALIGN, bytes);
    if (!base)
        return bc_error_set(err, BC_ERR_NOMEM, "workspace: cannot allocate %zu bytes (%d tokens, %d keys)", bytes,
                            max_tokens, Smax);
    workspace_layout(ws, &m->w->shape, &m->w->ws, max_tokens, Smax, nt, base);
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


/* --------------------------------------------------------------- shared ops */

void eng_residual(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

void eng_matrix_row_to_f32(const eng_kernels *k, float *dst, const eng_matrix *a, int r) {
    const size_t cols = (size_t)a->cols;
    if (a->dtype == ENG_W8A8) { /* packed for the integer kernels (precision.h) */
        eng_w8a8_row_to_f32(dst, a->data, (size_t)a->rows, cols, (size_t)r);
        return;
    }
    k->to_f32(dst, (const char *)a->data + (size_t)r * cols * eng_dtype_size(a->dtype), a->dtype, cols);
    if (a->dtype == ENG_I8) {
        const float s = eng_i8_scales(a->data, (size_t)a->rows, cols)[r];
        for (size_t i = 0; i < cols; i++) dst[i] *= s;
    }
}


/* One attention job: the heads x batch rows of a forward, split across the pool. */
typedef struct attention_job {
    const eng_kernels *k;
    float *att;              /* [B, T, C] out */
    const float *q;          /* [B, T, ldq], the first C of each row; already scaled by D^-0.5 */
    int ldq;                 /* floats between rows of q */
    const void *kc, *vc;     /* this layer's cache [B][Hkv][Smax][D] in dtype */
    eng_dtype dt;
    const uint8_t *mask;     /* [B, mask_stride] */
    int mask_stride;
    float *scores;           /* [n_threads][ENG_ATTEND_GROUP_MAX][Sr] */
    int Sr;
    int B, T, H, Hkv, D, Smax, S0;
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
    const int C = j->H * j->D, D = j->D, Hkv = j->Hkv, per_kv = j->H / j->Hkv; /* att row: H D */
    const size_t es = eng_dtype_size(j->dt), head_bytes = (size_t)j->Smax * D * es;
    float *sc = j->scores + (size_t)i * ENG_ATTEND_GROUP_MAX * j->Sr;
    for (int u = lo; u < hi; u++) {
        const int h = u % j->H, hk = h / per_kv; /* eng_kv_head_of */
        for (int b = u / j->H * G; b < (u / j->H + 1) * G;) {
            const int cb = j->slot_of ? j->slot_of[b] : b, S0 = j->len_of ? j->len_of[b] : j->S0;
            const char *K = (const char *)j->kc + ((size_t)cb * Hkv + hk) * head_bytes;
            const char *Vv = (const char *)j->vc + ((size_t)cb * Hkv + hk) * head_bytes;
            const int lb = j->prefix_of ? j->prefix_of[b] : b - b % G; /* the cache row of keys s < np */
            const char *Kp = (const char *)j->kc + ((size_t)lb * Hkv + hk) * head_bytes;
            const char *Vp = (const char *)j->vc + ((size_t)lb * Hkv + hk) * head_bytes;
            const uint8_t *mk = j->mask + (size_t)b * j->mask_stride;
            if (G > 1) { /* no slot_of (eng_forward): rows b.. of a group follow each other in the cache */
                const int rows = b % G + ENG_ATTEND_GROUP_MAX <= G ? ENG_ATTEND_GROUP_MAX : G - b % G;
                for (int t = 0; t < j->T; t++)
                    j->k->attend_group(j->att + ((size_t)b * j->T + t) * C + (size_t)h * D, (size_t)j->T * C,
                                       j->q + ((size_t)b * j->T + t) * j->ldq + (size_t)h * D,
                                       (size_t)j->T * j->ldq, rows, Kp, Vp, j->np, K, Vv,
                                       (size_t)Hkv * head_bytes, j->dt, mk, (size_t)j->mask_stride, S0 + t + 1, D,
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

void eng_kv_store(const eng_model *m, eng_kv_cache *kv, int l, const float *kk, const float *vv, int ld, int B, int T) {
    const eng_kernels *k = m->k;
    const eng_dtype dt = kv->dtype;
    const int Hkv = kv->Hkv, D = kv->D, Smax = kv->Smax, S0 = kv->len;
    const int *slot_of = kv->slot_of, *len_of = kv->len_of;
    const size_t es = eng_dtype_size(dt), layer = (size_t)kv->B * Hkv * Smax * D * es;
    char *kc = (char *)kv->k + (size_t)l * layer, *vc = (char *)kv->v + (size_t)l * layer;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hkv; h++) {
            const int cb = slot_of ? slot_of[b] : b, s0 = len_of ? len_of[b] : S0;
            size_t head = ((size_t)cb * Hkv + h) * (size_t)Smax * D;
            for (int t = 0; t < T; t++) {
                size_t src = ((size_t)b * T + t) * ld + (size_t)h * D;
                size_t dst = (head + (size_t)(s0 + t) * D) * es;
                k->from_f32(kc + dst, dt, kk + src, (size_t)D);
                k->from_f32(vc + dst, dt, vv + src, (size_t)D);
            }
        }
}

void eng_attention(eng_model *m, eng_kv_cache *kv, int l, float *att, const float *q, int ldq, const uint8_t *mask,
                   int mask_stride, int B, int T) {
    const eng_shape *s = &m->w->shape;
    const size_t layer = (size_t)kv->B * kv->Hkv * kv->Smax * kv->D * eng_dtype_size(kv->dtype);
    const void *kc = (const char *)kv->k + (size_t)l * layer, *vc = (const char *)kv->v + (size_t)l * layer;
    const int *prefix_of = kv->slot_of ? kv->prefix_of : NULL;
    attention_job job = {m->k, att, q, ldq, kc, vc, kv->dtype, mask, mask_stride,
                         m->ws.scores, round16(m->ws.Smax), B, T, s->n_heads, kv->Hkv, kv->D, kv->Smax, kv->len,
                         kv->group > 1 ? kv->group : 1, kv->group > 1 || prefix_of ? kv->prefix : 0,
                         kv->slot_of, kv->len_of, prefix_of};
    eng_pool_run(m->pool, attention_worker, &job);
}

/* ------------------------------------------------------------------ forward */

bc_status eng_forward(eng_model *m, eng_kv_cache *kv, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                      int B, int T, eng_logits_mode mode, float *logits, bc_error *err) {
    const eng_weights *w = m->w;
    const eng_shape *sh = &w->shape;
    const int V = sh->vocab_size, L = sh->n_layers;
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
    if (S1 > kv->Smax || S1 > sh->max_positions)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: %d tokens exceed the cache (%d) or the positions (%d)",
                            S1, kv->Smax, sh->max_positions);
    if (mask_stride < S1)
        return bc_error_set(err, BC_ERR_INVALID, "eng_forward: mask stride %d < %d tokens", mask_stride, S1);
    const int S0 = kv->len;
    if (kv->dtype != eng_kv_dtype(w->dtype) || kv->L != L || kv->Hkv != sh->n_kv_heads || kv->D != sh->head_dim)
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

    /* positions: cumsum(mask) - 1 at a real token, -1 at a pad */
    for (int b = 0; b < B; b++) {
        const uint8_t *mk = mask + (size_t)b * mask_stride;
        const int s0 = len_of ? len_of[b] : S0;
        int cum = 0;
        for (int s = 0; s < s0 + T; s++) {
            cum += mk[s] ? 1 : 0;
            if (s >= s0) ws->pos[b * T + (s - s0)] = (mk[s] ? cum : 0) - 1;
        }
    }
    eng_pool_set_active(m->pool, m->phase_threads[T > 1 ? 0 : 1]); /* 0: all */
    w->family->forward(m, kv, tokens, mask, mask_stride, B, T, mode, logits);
    if (!kv->slot_of) kv->len = S1;
    return BC_OK;
}
