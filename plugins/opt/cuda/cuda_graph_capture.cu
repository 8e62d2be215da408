/* cuda_graph_capture.cu: decode steps as CUDA graphs (see
 * opt_cuda_decode_step in cuda_forward.h): per batch and buffers (the
 * bookkeeping is cuda_graphs.c's), the first step runs eagerly, the second
 * is captured, later ones replay; a failed capture turns graphs off for the
 * model, with the reason kept.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

void opt_cuda_graph_exec_destroy(void *ctx, void *exec) {
    (void)ctx;
    cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

/* Captures forward_body (T = 1) into *exec; any failure leaves *exec NULL
 * and says why in m->graph_error. */
static void capture_step(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                         int mask_stride, int B, float *d_logits, cudaGraphExec_t *exec) {
    *exec = NULL;
    cudaStream_t st = m->dev->stream;
    bc_error cerr = {BC_OK, "", ""};
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(m->graph_error, sizeof m->graph_error, "begin capture (B %d): %s", B, cudaGetErrorString(e));
        return;
    }
    bc_status s = opt_cuda_forward_body(m, kv, d_tokens, d_mask, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, &cerr);
    cudaGraph_t g = NULL;
    e = cudaStreamEndCapture(st, &g);
    if (s == BC_OK && e == cudaSuccess) {
        e = cudaGraphInstantiate(exec, g, 0);
        if (e != cudaSuccess) *exec = NULL;
    }
    if (g) cudaGraphDestroy(g);
    if (s != BC_OK)
        snprintf(m->graph_error, sizeof m->graph_error, "capture (B %d): %.300s", B, cerr.message);
    else if (e != cudaSuccess)
        snprintf(m->graph_error, sizeof m->graph_error, "capture or instantiate (B %d): %s", B,
                 cudaGetErrorString(e));
    (void)cudaGetLastError();
}

bc_status opt_cuda_decode_step(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens,
                               const uint8_t *d_mask, int mask_stride, int B, float *d_logits, int use_graph,
                               bc_error *err) {
    if (!use_graph || m->graph_error[0])
        return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, err);
    TRY(opt_cuda_forward_check(m, kv, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, err));
    TRY(opt_cuda_model_reserve(m, B, err));
    const void *ptrs[] = {kv->c.k, kv->d_len, d_tokens, d_mask, d_logits, m->d_ws};
    const uint64_t binding = opt_cuda_graphs_binding(ptrs, 6, ((uint64_t)(unsigned)mask_stride << 32) |
                                                                  (uint64_t)(unsigned)kv->c.Smax);
    void *found = NULL;
    const opt_cuda_graph_action act = opt_cuda_graphs_next(&m->graphs, B, binding, &found);
    /* the first step with these buffers runs eagerly: it makes the GEMM plans
     * and loads every kernel, so the capture that follows only records */
    if (act == OPT_CUDA_GRAPH_WARMUP)
        return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, err);
    cudaGraphExec_t exec = (cudaGraphExec_t)found;
    if (act == OPT_CUDA_GRAPH_CAPTURE) {
        capture_step(m, kv, d_tokens, d_mask, mask_stride, B, d_logits, &exec);
        if (!exec) /* graphs off from now on (opt_cuda_graph_error says why); same results */
            return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, ENG_LOGITS_LAST, d_logits, err);
        opt_cuda_graphs_put(&m->graphs, B, binding, (void *)exec);
    }
    CU_CHECK(cudaGraphLaunch(exec, m->dev->stream), "graph launch");
    kv->c.len += 1;
    return BC_OK;
}

const char *opt_cuda_graph_error(const opt_cuda_model *m) { return m->graph_error; }

void opt_cuda_graph_stats(const opt_cuda_model *m, int *held, int64_t *captures, int64_t *replays,
                          int64_t *invalidations) {
    if (held) *held = opt_cuda_graphs_count(&m->graphs);
    if (captures) *captures = m->graphs.captures;
    if (replays) *replays = m->graphs.replays;
    if (invalidations) *invalidations = m->graphs.invalidations;
}
