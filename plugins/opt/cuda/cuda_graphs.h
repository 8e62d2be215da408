/* cuda_graphs.h: which captured decode-step graph to replay, in plain C (no
 * CUDA headers) so CI tests the bookkeeping without a GPU.
 *
 * A decode step (one forward with T = 1) is captured once per effective
 * batch B and replayed at every later step with that B. A capture bakes in
 * device pointers (KV cache, workspace, rollout buffers), summarised by a
 * 64-bit binding: when the cache policy releases and re-acquires buffers,
 * the binding changes and the old graph for that B is invalid (destroyed and
 * captured again). The graphs themselves are opaque handles (cudaGraphExec_t
 * in cuda_forward.cu) destroyed through a callback.
 */
#ifndef OPT_CUDA_GRAPHS_H
#define OPT_CUDA_GRAPHS_H

#include <stdint.h>

#define OPT_CUDA_GRAPHS_MAX 16

typedef struct opt_cuda_graph_entry {
    int batch;          /* B; 0 = unused slot */
    uint64_t binding;   /* pointers the graph was captured with */
    void *exec;         /* the executable graph (owned) */
    int64_t replays;    /* times replayed */
    uint64_t last_used; /* clock of the last lookup, for eviction */
} opt_cuda_graph_entry;

typedef struct opt_cuda_graph_cache {
    opt_cuda_graph_entry e[OPT_CUDA_GRAPHS_MAX];
    struct {
        int batch;
        uint64_t binding;
    } warmed[OPT_CUDA_GRAPHS_MAX]; /* (batch, binding) that already ran one eager step */
    int next_warm;
    uint64_t clock;
    void (*destroy)(void *ctx, void *exec); /* required */
    void *ctx;
    int64_t captures, replays, invalidations, evictions;
} opt_cuda_graph_cache;

void opt_cuda_graphs_init(opt_cuda_graph_cache *g, void (*destroy)(void *ctx, void *exec), void *ctx);
/* The graph for batch with binding, or NULL (then capture and _put). A graph
 * for batch with another binding is destroyed here (invalidation). A hit
 * counts as a replay. */
void *opt_cuda_graphs_get(opt_cuda_graph_cache *g, int batch, uint64_t binding);
/* Stores a freshly captured graph for batch; when every slot is used, the
 * least recently used graph is destroyed (eviction). */
void opt_cuda_graphs_put(opt_cuda_graph_cache *g, int batch, uint64_t binding, void *exec);
/* What to do for a decode step with batch and binding:
 *   REPLAY   *exec is the graph to launch;
 *   WARMUP   the first step with these buffers: run it eagerly (it makes
 *            the GEMM plans and loads the kernels, so a capture only records);
 *   CAPTURE  capture this step, then _put the graph and launch it. */
typedef enum opt_cuda_graph_action {
    OPT_CUDA_GRAPH_WARMUP = 0,
    OPT_CUDA_GRAPH_CAPTURE = 1,
    OPT_CUDA_GRAPH_REPLAY = 2
} opt_cuda_graph_action;
opt_cuda_graph_action opt_cuda_graphs_next(opt_cuda_graph_cache *g, int batch, uint64_t binding, void **exec);
/* Destroys every graph (buffers released, or the model freed). */
void opt_cuda_graphs_clear(opt_cuda_graph_cache *g);
/* Graphs held now. */
int opt_cuda_graphs_count(const opt_cuda_graph_cache *g);
/* A binding from the pointers a capture depends on (FNV-1a over their values). */
uint64_t opt_cuda_graphs_binding(const void *const *ptrs, int n, uint64_t extra);

#endif
