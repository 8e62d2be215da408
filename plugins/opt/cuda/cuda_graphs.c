/* cuda_graphs.c: decode-step graph bookkeeping (see cuda_graphs.h). */
#include "cuda_graphs.h"

#include <string.h>

void opt_cuda_graphs_init(opt_cuda_graph_cache *g, void (*destroy)(void *ctx, void *exec), void *ctx) {
    memset(g, 0, sizeof *g);
    g->destroy = destroy;
    g->ctx = ctx;
}

static void drop(opt_cuda_graph_cache *g, opt_cuda_graph_entry *e) {
    if (e->exec) g->destroy(g->ctx, e->exec);
    memset(e, 0, sizeof *e);
}

void *opt_cuda_graphs_get(opt_cuda_graph_cache *g, int batch, uint64_t binding) {
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX; i++) {
        opt_cuda_graph_entry *e = &g->e[i];
        if (e->batch != batch || batch == 0) continue;
        if (e->binding != binding) {
            drop(g, e);
            g->invalidations++;
            return NULL;
        }
        e->replays++;
        e->last_used = ++g->clock;
        g->replays++;
        return e->exec;
    }
    return NULL;
}

void opt_cuda_graphs_put(opt_cuda_graph_cache *g, int batch, uint64_t binding, void *exec) {
    opt_cuda_graph_entry *slot = NULL;
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX && !slot; i++)
        if (g->e[i].batch == batch) {
            drop(g, &g->e[i]); /* a second capture for the same batch replaces the first */
            slot = &g->e[i];
        }
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX && !slot; i++)
        if (g->e[i].batch == 0) slot = &g->e[i];
    if (!slot) {
        slot = &g->e[0];
        for (int i = 1; i < OPT_CUDA_GRAPHS_MAX; i++)
            if (g->e[i].last_used < slot->last_used) slot = &g->e[i];
        drop(g, slot);
        g->evictions++;
    }
    slot->batch = batch;
    slot->binding = binding;
    slot->exec = exec;
    slot->replays = 0;
    slot->last_used = ++g->clock;
    g->captures++;
}

opt_cuda_graph_action opt_cuda_graphs_next(opt_cuda_graph_cache *g, int batch, uint64_t binding, void **exec) {
    *exec = opt_cuda_graphs_get(g, batch, binding);
    if (*exec) return OPT_CUDA_GRAPH_REPLAY;
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX; i++)
        if (g->warmed[i].batch == batch && g->warmed[i].binding == binding) return OPT_CUDA_GRAPH_CAPTURE;
    g->warmed[g->next_warm].batch = batch;
    g->warmed[g->next_warm].binding = binding;
    g->next_warm = (g->next_warm + 1) % OPT_CUDA_GRAPHS_MAX;
    return OPT_CUDA_GRAPH_WARMUP;
}

void opt_cuda_graphs_clear(opt_cuda_graph_cache *g) {
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX; i++)
        if (g->e[i].batch) drop(g, &g->e[i]);
}

int opt_cuda_graphs_count(const opt_cuda_graph_cache *g) {
    int n = 0;
    for (int i = 0; i < OPT_CUDA_GRAPHS_MAX; i++) n += g->e[i].batch != 0;
    return n;
}

uint64_t opt_cuda_graphs_binding(const void *const *ptrs, int n, uint64_t extra) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i <= n; i++) {
        uint64_t v = i < n ? (uint64_t)(uintptr_t)ptrs[i] : extra;
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}
