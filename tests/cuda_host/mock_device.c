/* mock_device.c: a host implementation of cuda_forward.h for CI (no GPU).
 * "Device" memory is host memory behind the same accounted allocator
 * (cuda_mem.h) with the same byte sizes as the real device code; the
 * forward is the CPU path's eng_forward over the same KV layout; the graph
 * decisions are cuda_graphs.c's; the sampler follows the kernel's contract
 * (cuda_sampling.cu): greedy first maximum, else temperature / top-k /
 * top-p by the same bisections, one uniform of the row's generator, walk in
 * vocabulary order. So cuda_rollout.c and cuda_backend.c run here exactly as
 * they drive a device, and tests compare them with the CPU rollout. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_forward.h"
#include "cuda_graphs.h"
#include "cuda_plan.h"
#include "cuda_sample_math.h"

struct opt_cuda_device {
    opt_cuda_mem mem;
    double marks[OPT_CUDA_MARKS];
    int n_marks;
};

struct opt_cuda_model {
    opt_cuda_device *dev;
    const opt_weights *hw;
    eng_model cpu;        /* the CPU forward, 1 thread */
    void *wcopy;          /* stands for the device copy of the weight arena (accounted) */
    void *ws;             /* accounted like the device activations */
    size_t ws_bytes;
    opt_cuda_ws_layout wl;
    opt_cuda_graph_cache graphs;
};

/* Tests flip this to pretend a GPU is there (1) or not (0). */
int mock_cuda_devices = 1;

static int h_alloc(void *ctx, void **p, size_t bytes, char *msg, size_t msg_len) {
    (void)ctx;
    *p = calloc(1, bytes);
    if (!*p) snprintf(msg, msg_len, "host calloc failed");
    return *p ? 0 : 1;
}
static void h_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}
static void no_destroy(void *ctx, void *exec) { (void)ctx, (void)exec; }

int opt_cuda_device_count(void) { return mock_cuda_devices; }

bc_status opt_cuda_device_open(opt_cuda_device **out, int index, bc_error *err) {
    *out = NULL;
    if (index < 0 || index >= mock_cuda_devices)
        return bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: mock with %d device(s)", mock_cuda_devices);
    opt_cuda_device *d = calloc(1, sizeof *d);
    if (!d) return bc_error_set(err, BC_ERR_NOMEM, "mock device: no memory");
    opt_cuda_alloc_iface io = {NULL, h_alloc, h_free};
    opt_cuda_mem_init(&d->mem, &io);
    *out = d;
    return BC_OK;
}
void opt_cuda_device_close(opt_cuda_device *d) { free(d); }
void opt_cuda_driver_version(char *buf, size_t len) { snprintf(buf, len, "mock"); }
const char *opt_cuda_device_name(const opt_cuda_device *d) { return d ? "mock device" : "none"; }
opt_cuda_mem *opt_cuda_device_mem(opt_cuda_device *d) { return &d->mem; }
bc_status opt_cuda_mem_get_info(opt_cuda_device *d, size_t *free_bytes, size_t *total_bytes, bc_error *err) {
    (void)err;
    *total_bytes = (size_t)80 << 30;
    *free_bytes = *total_bytes - d->mem.current;
    return BC_OK;
}
bc_status opt_cuda_sync(opt_cuda_device *d, bc_error *err) { return (void)d, (void)err, BC_OK; }
bc_status opt_cuda_alloc(opt_cuda_device *d, opt_cuda_mem_kind kind, size_t bytes, void **d_p, const char *what,
                         bc_error *err) {
    return opt_cuda_mem_alloc(&d->mem, kind, bytes, d_p, what, err);
}
void opt_cuda_free(opt_cuda_device *d, opt_cuda_mem_kind kind, void *d_p, size_t bytes) {
    opt_cuda_mem_free(&d->mem, kind, d_p, bytes);
}
bc_status opt_cuda_upload(opt_cuda_device *d, void *dst, const void *src, size_t n, bc_error *err) {
    (void)d, (void)err;
    memcpy(dst, src, n);
    return BC_OK;
}
bc_status opt_cuda_download(opt_cuda_device *d, void *dst, const void *src, size_t n, bc_error *err) {
    (void)d, (void)err;
    memcpy(dst, src, n);
    return BC_OK;
}
bc_status opt_cuda_copy(opt_cuda_device *d, void *dst, const void *src, size_t n, bc_error *err) {
    (void)d, (void)err;
    memmove(dst, src, n);
    return BC_OK;
}
void opt_cuda_marks_reset(opt_cuda_device *d) { d->n_marks = 0; }
int opt_cuda_mark(opt_cuda_device *d) {
    if (d->n_marks >= OPT_CUDA_MARKS) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    d->marks[d->n_marks] = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    return d->n_marks++;
}
double opt_cuda_marks_ms(opt_cuda_device *d, int from, int to) {
    if (from < 0 || to < 0 || from >= d->n_marks || to >= d->n_marks) return 0.0;
    return d->marks[to] - d->marks[from];
}

bc_status opt_cuda_model_create(opt_cuda_model **out, opt_cuda_device *d, const opt_weights *w, bc_error *err) {
    opt_cuda_model *m = calloc(1, sizeof *m);
    if (!m) return bc_error_set(err, BC_ERR_NOMEM, "mock model: no memory");
    m->dev = d;
    m->hw = w;
    opt_cuda_graphs_init(&m->graphs, no_destroy, NULL);
    bc_status st = opt_cuda_alloc(d, OPT_CUDA_MEM_WEIGHTS, w->base.arena_bytes, &m->wcopy, "weights", err);
    if (st == BC_OK) st = eng_model_init(&m->cpu, &w->base, 1, err);
    if (st != BC_OK) {
        opt_cuda_free(d, OPT_CUDA_MEM_WEIGHTS, m->wcopy, w->base.arena_bytes);
        free(m);
        return st;
    }
    *out = m;
    return BC_OK;
}
void opt_cuda_model_release_workspace(opt_cuda_model *m) {
    opt_cuda_graphs_clear(&m->graphs);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WORKSPACE, m->ws, m->ws_bytes);
    m->ws = NULL;
    m->ws_bytes = 0;
    memset(&m->wl, 0, sizeof m->wl);
}
void opt_cuda_model_destroy(opt_cuda_model *m) {
    if (!m) return;
    opt_cuda_model_release_workspace(m);
    eng_model_free(&m->cpu);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WEIGHTS, m->wcopy, m->hw->base.arena_bytes);
    free(m);
}
bc_status opt_cuda_model_reserve(opt_cuda_model *m, int max_tokens, bc_error *err) {
    if (m->ws && m->wl.N >= max_tokens) return BC_OK;
    opt_cuda_model_release_workspace(m);
    opt_cuda_ws_layout l;
    size_t bytes = opt_cuda_ws_layout_for(&m->hw->hp, m->hw->base.dtype, max_tokens, &l);
    bc_status st = opt_cuda_alloc(m->dev, OPT_CUDA_MEM_WORKSPACE, bytes, &m->ws, "activations", err);
    if (st != BC_OK) return st;
    m->ws_bytes = bytes;
    m->wl = l;
    return BC_OK;
}
size_t opt_cuda_model_workspace_bytes(const opt_cuda_model *m) { return m->ws_bytes; }
const opt_hparams *opt_cuda_model_hparams(const opt_cuda_model *m) { return &m->hw->hp; }
eng_dtype opt_cuda_model_dtype(const opt_cuda_model *m) { return m->hw->base.dtype; }

bc_status opt_cuda_kv_cache_alloc(opt_cuda_device *d, opt_cuda_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype,
                                  int B, int Smax, bc_error *err) {
    memset(kv, 0, sizeof *kv);
    bc_status st = eng_kv_cache_shape(&kv->c, &hp->s, dtype, B, Smax, err);
    if (st != BC_OK) return st;
    kv->alloc_bytes = kv->c.bytes + OPT_CUDA_ALIGN;
    char *base = NULL;
    st = opt_cuda_alloc(d, OPT_CUDA_MEM_KV, kv->alloc_bytes, (void **)&base, "KV cache", err);
    if (st != BC_OK) return st;
    kv->c.k = base;
    kv->c.v = base + kv->c.bytes / 2;
    kv->d_len = (int *)(void *)(base + kv->c.bytes);
    return BC_OK;
}
void opt_cuda_kv_cache_free(opt_cuda_device *d, opt_cuda_kv_cache *kv) {
    if (!kv || !kv->c.k) return;
    opt_cuda_free(d, OPT_CUDA_MEM_KV, kv->c.k, kv->alloc_bytes);
    memset(kv, 0, sizeof *kv);
}
bc_status opt_cuda_kv_cache_set_len(opt_cuda_device *d, opt_cuda_kv_cache *kv, int len, bc_error *err) {
    (void)d, (void)err;
    kv->c.len = *kv->d_len = len;
    return BC_OK;
}
static eng_kv_cache view(const opt_cuda_kv_cache *kv) {
    eng_kv_cache c = kv->c; /* no prefix sharing, as on the device */
    c.len = *kv->d_len;
    return c;
}
bc_status opt_cuda_kv_cache_copy_row(opt_cuda_device *d, opt_cuda_kv_cache *dst, int dst_b,
                                     const opt_cuda_kv_cache *src, int src_b, int S, bc_error *err) {
    (void)d, (void)err;
    eng_kv_cache a = view(dst), b = view(src);
    eng_kv_cache_copy_row(&a, dst_b, &b, src_b, S);
    return BC_OK;
}

bc_status opt_cuda_forward(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                           int mask_stride, int B, int T, eng_logits_mode mode, float *d_logits, bc_error *err) {
    bc_status st = opt_cuda_model_reserve(m, B * T, err);
    if (st != BC_OK) return st;
    eng_kv_cache c = view(kv);
    if (c.len != kv->c.len) return bc_error_set(err, BC_ERR_INTERNAL, "mock: host len %d, device len %d", kv->c.len, c.len);
    st = eng_forward(&m->cpu, &c, d_tokens, d_mask, mask_stride, B, T, mode, d_logits, err);
    if (st != BC_OK) return st;
    kv->c.len = *kv->d_len = c.len;
    return BC_OK;
}

bc_status opt_cuda_decode_step(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens,
                               const uint8_t *d_mask, int mask_stride, int B, float *d_logits, int use_graph,
                               bc_error *err) {
    if (use_graph) {
        const void *ptrs[] = {kv->c.k, kv->d_len, d_tokens, d_mask, d_logits, m->ws};
        void *exec = NULL;
        uint64_t binding = opt_cuda_graphs_binding(ptrs, 6, ((uint64_t)(unsigned)mask_stride << 32) | (unsigned)kv->c.Smax);
        if (opt_cuda_graphs_next(&m->graphs, B, binding, &exec) == OPT_CUDA_GRAPH_CAPTURE)
            opt_cuda_graphs_put(&m->graphs, B, binding, (void *)(uintptr_t)(0x1000 + B));
    }
    return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, err);
}
const char *opt_cuda_graph_error(const opt_cuda_model *m) { return (void)m, ""; }
int64_t opt_cuda_epilogue_fallbacks(const opt_cuda_model *m) { return (void)m, 0; }
int64_t opt_cuda_fc1_converts(const opt_cuda_model *m) { return (void)m, 0; }
void opt_cuda_model_force_fc1_fp32(opt_cuda_model *m, int on) { (void)m, (void)on; }
void opt_cuda_graph_stats(const opt_cuda_model *m, int *held, int64_t *captures, int64_t *replays,
                          int64_t *invalidations) {
    if (held) *held = opt_cuda_graphs_count(&m->graphs);
    if (captures) *captures = m->graphs.captures;
    if (replays) *replays = m->graphs.replays;
    if (invalidations) *invalidations = m->graphs.invalidations;
}

/* The sampling kernel's contract, one row at a time. */
static int32_t sample_row(const opt_cuda_sample_args *a, float *lg, float *pr, uint64_t *rng) {
    const int V = a->V;
    if (a->p.temperature == 0.0) {
        int best = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[best]) best = v;
        return best;
    }
    const double u = eng_uniform_from(eng_splitmix_next(rng));
    const float inv_t = (float)(1.0 / a->p.temperature);
    int n = 0;
    for (int v = 0; v < V; v++) {
        if (isinf(lg[v]) && lg[v] < 0) continue;
        n++;
    }
    if (n == 0) return 0;
    float kth = -INFINITY;
    if (a->p.top_k > 0 && a->p.top_k < n) {
        uint32_t t = 0;
        for (int bit = 31; bit >= 0; bit--) {
            const uint32_t cand = t | (1u << bit);
            int c = 0;
            for (int v = 0; v < V; v++) c += lg[v] != -INFINITY && eng_fkey(lg[v]) >= cand;
            if (c >= a->p.top_k) t = cand;
        }
        kth = eng_keyf(t);
    }
    for (int v = 0; v < V; v++) lg[v] = lg[v] != -INFINITY && lg[v] >= kth ? lg[v] * inv_t : -INFINITY;
    float mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (lg[v] != -INFINITY) mx = fmaxf(mx, lg[v]);
    double s = 0.0;
    for (int v = 0; v < V; v++) {
        pr[v] = (lg[v] != -INFINITY) ? expf(lg[v] - mx) : -1.0f;
        if (pr[v] >= 0.0f) s += pr[v];
    }
    for (int v = 0; v < V; v++)
        if (pr[v] >= 0.0f) pr[v] = (float)(pr[v] / s);
    if (a->p.top_p < 1.0) {
        uint32_t lo = ENG_KEY_POS_ZERO, hi = ENG_KEY_POS_INF;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            double mass = 0.0;
            for (int v = 0; v < V; v++)
                if (pr[v] > eng_keyf(mid)) mass += pr[v];
            if (mass < a->p.top_p) hi = mid;
            else lo = mid + 1;
        }
        for (int v = 0; v < V; v++)
            if (pr[v] >= 0.0f && pr[v] < eng_keyf(lo)) pr[v] = -1.0f;
    }
    s = 0.0;
    int last = 0;
    for (int v = 0; v < V; v++)
        if (pr[v] >= 0.0f) s += pr[v], last = v;
    double total = 0.0;
    for (int v = 0; v < V; v++)
        if (pr[v] >= 0.0f) pr[v] = (float)(pr[v] / s), total += pr[v];
    const double target = u * total;
    double cum = 0.0;
    for (int v = 0; v < V; v++) {
        if (pr[v] < 0.0f) continue;
        cum += pr[v];
        if (target < cum) return v;
    }
    return last;
}

bc_status opt_cuda_sample(opt_cuda_device *d, const opt_cuda_sample_args *a, bc_error *err) {
    (void)d;
    if (a->R < 1 || a->V < 1) return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_sample: R %d, V %d", a->R, a->V);
    const int pos = *a->d_pos;
    a->d_counters[0] = 0;
    for (int r = 0; r < a->R; r++) {
        float *lg = a->d_logits + (size_t)r * a->V;
        int32_t tok;
        if (a->d_eos_at[r] >= 0) {
            tok = a->pad_id;
        } else {
            if (!a->stop_at_eos && a->eos_id >= 0 && a->eos_id < a->V) lg[a->eos_id] = -INFINITY;
            tok = sample_row(a, lg, a->d_scratch + (size_t)r * a->V, &a->d_rng[r]);
        }
        a->d_seq[(size_t)r * a->stride + pos] = tok;
        a->d_mask[(size_t)r * a->stride + pos] = 1;
        a->d_step_tokens[r] = tok;
        if (a->d_eos_at[r] < 0) {
            a->d_counters[1]++;
            if (a->stop_at_eos && tok == a->eos_id) a->d_eos_at[r] = pos - a->response_start;
            else a->d_counters[0]++;
        }
    }
    return BC_OK;
}
