/* cuda_internal.h: what the .cu files of plugins/opt/cuda share (the device
 * and model structs, the error macro, the GEMM, the forward's body and the
 * graph hooks); C++/CUDA only, not part of the API. */
#ifndef OPT_CUDA_INTERNAL_H
#define OPT_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <cublasLt.h>

extern "C" {
#include "cuda_forward.h"
#include "cuda_graphs.h"
#include "cuda_plan.h"
}

struct opt_cuda_device {
    int index;
    char name[320];
    cudaStream_t stream;       /* every kernel and copy of this device */
    cublasLtHandle_t lt;
    opt_cuda_mem mem;          /* accounting of every device allocation */
    cudaEvent_t *events;       /* [OPT_CUDA_MARKS] pool, created on first use */
    int n_events, n_marks;
};

/* Returns BC_ERR_DEVICE from the enclosing function (which has bc_error *err). */
#define CU_CHECK(call, what)                                                                          \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            (void)cudaGetLastError();                                                                 \
            return bc_error_set(err, BC_ERR_DEVICE, "CUDA %s: %s", (what), cudaGetErrorString(e_));    \
        }                                                                                             \
    } while (0)

/* ------------------------------------------------------------------- model */

#define LT_PLANS 64

typedef struct lt_plan {
    int M, N, K, epi; /* epi: 0 none, 1 bias, 2 bias + ReLU */
    int lt_epi;       /* the epilogue cuBLASLt applies (epi, or 0 when bias_act_kernel does it) */
    int y_dt;         /* output in the run's dtype (1) or fp32 (0) */
    int none;         /* 1: cuBLASLt has no algorithm for this (a remembered miss; no descriptors) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} lt_plan;

struct opt_cuda_model {
    opt_cuda_device *dev;
    const opt_weights *hw; /* borrowed: shapes and host pointers to translate */
    opt_hparams hp;
    eng_dtype dt;
    char *d_arena;         /* weights, a copy of hw->base.arena */
    size_t arena_bytes;
    char *d_ws;            /* activations (workspace kind) */
    size_t ws_bytes;
    opt_cuda_ws_layout wl;
    lt_plan plans[LT_PLANS];
    int n_plans;
    int64_t n_epilogue_fallbacks; /* GEMMs whose bias/ReLU ran in bias_act_kernel */
    int64_t n_fc1_converts;       /* fc1 outputs in fp32 (+ a convert kernel in 16-bit) */
    int fc1_fp32_only;            /* 1: fc1 never takes the 16-bit-output route (tests) */
    opt_cuda_graph_cache graphs;
    char graph_error[400];        /* why graphs were turned off; "" while they work */
};

/* The device address of a host pointer into the weight arena. */
template <typename P> static inline P *dw(const opt_cuda_model *m, P *host) {
    if (!host) return NULL;
    return (P *)(void *)(m->d_arena + ((const char *)host - (const char *)m->hw->base.arena));
}

static inline cudaDataType_t cuda_type(eng_dtype dt) {
    return dt == ENG_F16 ? CUDA_R_16F : dt == ENG_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

#define TRY(x)                        \
    do {                              \
        bc_status st_ = (x);          \
        if (st_ != BC_OK) return st_; \
    } while (0)

/* cuda_gemm.cu: y[M, N] = x[M, K] W[N, K]^T (+ bias) (ReLU), y in fp32, or
 * in the run's dtype when y_dt (then *done = 0 when cuBLASLt has no
 * algorithm: the caller takes the fp32 route); plans are cached per shape. */
bc_status opt_cuda_gemm_ex(opt_cuda_model *m, void *y, const void *x, const void *W, const float *bias, int M, int K,
                           int N, int relu, int y_dt, int *done, bc_error *err);
bc_status opt_cuda_gemm(opt_cuda_model *m, float *y, const void *x, const void *W, const float *bias, int M, int K,
                        int N, int relu, bc_error *err);
/* Frees every cached plan. */
void opt_cuda_gemm_plans_clear(opt_cuda_model *m);

/* cuda_forward.cu: the forward's checks, and its kernels and GEMMs queued on
 * the stream (nothing checked or synchronised, so it can be captured). */
bc_status opt_cuda_forward_check(opt_cuda_model *m, const opt_cuda_kv_cache *kv, int stride, int B, int T,
                                 eng_logits_mode mode, const float *d_logits, bc_error *err);
bc_status opt_cuda_forward_body(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens,
                                const uint8_t *d_mask, int stride, int B, int T, eng_logits_mode mode,
                                float *d_logits, bc_error *err);

/* cuda_graph_capture.cu: destroys a captured graph (the graph cache's hook). */
void opt_cuda_graph_exec_destroy(void *ctx, void *exec);

#endif
