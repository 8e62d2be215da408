/* cuda_forward.cu: the OPT forward pass on a CUDA device (see
 * cuda_forward.h; legend of ../model.h). One flat function per step, kernels
 * templated on the storage type E (float, __half, __nv_bfloat16):
 *   embed_kernel        token (+ position) embeddings; positions from the mask
 *   residual_ln_kernel  x += y, then layer norm of x into the next GEMM input
 *   kv_store_kernel     new keys/values [N, C] fp32 -> cache [L][B][H][Smax][D]
 *                       (prefill; a decode step's attention stores its own)
 *   attention_kernel    one block per (row, query, head): the keys it sees in
 *                       one pass with an online softmax (decode and prefill)
 *   gemm()              cuBLASLt, y fp32 = x W^T (+ bias) (+ ReLU epilogue)
 * The decode step (T = 1) can be captured in a CUDA graph per batch; every
 * kernel reads the cache length from kv->d_len so a replay is correct at
 * every step.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* ------------------------------------------------------------ conversions */

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename E> __device__ __forceinline__ E from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/* Calls F<E>(args) for the run's dtype. */
#define DISPATCH_DT(dt, F, ...)                                   \
    do {                                                          \
        if ((dt) == OPT_F16) F<__half>(__VA_ARGS__);              \
        else if ((dt) == OPT_BF16) F<__nv_bfloat16>(__VA_ARGS__); \
        else F<float>(__VA_ARGS__);                               \
    } while (0)

/* --------------------------------------------------------------- reductions */

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets it. */
template <typename T> __device__ T block_sum(T v) {
    __shared__ T sh[32];
    __syncthreads();
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T t = 0;
    for (int i = 0; i < nw; i++) t += sh[i];
    return t;
}

__device__ float block_max(float v) {
    __shared__ float sh[32];
    __syncthreads();
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float t = sh[0];
    for (int i = 1; i < nw; i++) t = fmaxf(t, sh[i]);
    return t;
}

/* ---------------------------------------------------------------- kernels */

/* Position row of token t of row b: cumsum(mask[b, 0..s]) * mask[b, s] - 1 + 2
 * with s = S0 + t; computed by the whole block. */
__device__ int position_row(const uint8_t *mk, int s) {
    int c = 0;
    for (int i = threadIdx.x; i <= s; i += blockDim.x) c += mk[i] ? 1 : 0;
    c = block_sum(c);
    return (mk[s] ? c : 0) - 1 + 2;
}

/* One block per token n = b * T + t.
 *   mode 0 (P == C): x[n, C] = tok_emb[token] + pos_emb[pos]          (fp32)
 *   mode 1 (P != C): embh[n, P] = tok_emb[token]                      (E)
 *   mode 2 (P != C): x[n, C] += pos_emb[pos]  (after project_in)      (fp32) */
template <typename E>
__global__ void embed_kernel(float *x, E *embh, const int32_t *tokens, const uint8_t *mask, int mask_stride,
                             const int *d_len, int T, const E *tok_emb, const E *pos_emb, int C, int P, int mode) {
    const int n = blockIdx.x, b = n / T, t = n % T;
    const int S0 = *d_len;
    if (mode == 1) {
        const E *te = tok_emb + (size_t)tokens[n] * P;
        for (int i = threadIdx.x; i < P; i += blockDim.x) embh[(size_t)n * P + i] = te[i];
        return;
    }
    const int pos = position_row(mask + (size_t)b * mask_stride, S0 + t);
    const E *pe = pos_emb + (size_t)pos * C;
    float *xr = x + (size_t)n * C;
    if (mode == 0) {
        const E *te = tok_emb + (size_t)tokens[n] * P;
        for (int i = threadIdx.x; i < C; i += blockDim.x) xr[i] = to_f(te[i]) + to_f(pe[i]);
    } else {
        for (int i = threadIdx.x; i < C; i += blockDim.x) xr[i] += to_f(pe[i]);
    }
}

/* One block per output row n; input row r = n * row_mul + row_add of x[., C].
 *   v = x[r] + (y ? y[r] : 0); if y: x[r] = v          (residual add)
 *   if gamma: v = layernorm(v) * gamma + beta (eps 1e-5, two-pass, fp64 sums)
 *             if ln_to_x: x[r] = v                     (post-LN)
 *   if out: out[n] = E(v)                              (next GEMM's input) */
template <typename E>
__global__ void residual_ln_kernel(float *x, const float *y, const float *gamma, const float *beta, E *out, int C,
                                   int row_mul, int row_add, int ln_to_x) {
    const int n = blockIdx.x;
    const size_t r = (size_t)n * row_mul + row_add;
    float *xr = x + r * C;
    if (y) {
        const float *yr = y + r * C;
        for (int i = threadIdx.x; i < C; i += blockDim.x) xr[i] += yr[i];
    }
    if (!gamma) {
        if (out)
            for (int i = threadIdx.x; i < C; i += blockDim.x) out[(size_t)n * C + i] = from_f<E>(xr[i]);
        return;
    }
    double s = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += xr[i];
    const double mean = block_sum(s) / C;
    double q = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        double dd = xr[i] - mean;
        q += dd * dd;
    }
    const double var = block_sum(q) / C;
    const float rstd = (float)(1.0 / sqrt(var + 1e-5)), m = (float)mean;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float v = (xr[i] - m) * rstd * gamma[i] + beta[i];
        if (ln_to_x) xr[i] = v;
        if (out) out[(size_t)n * C + i] = from_f<E>(v);
    }
}

/* Appends kk, vv [B, T, C] (fp32, rows ld apart) to the layer's cache
 * [B][H][Smax][D] at positions S0 + t (S0 = *d_len). One thread per value. */
template <typename E>
__global__ void kv_store_kernel(E *kc, E *vc, const float *kk, const float *vv, int ld, const int *d_len, int B, int T,
                                int H, int D, int Smax) {
    const size_t C = (size_t)H * D, total = (size_t)B * T * C;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int c = (int)(i % C), n = (int)(i / C), b = n / T, t = n % T, h = c / D, d = c % D;
    const size_t dst = (((size_t)b * H + h) * Smax + (size_t)(*d_len + t)) * D + d;
    const size_t src = (size_t)n * ld + c;
    kc[dst] = from_f<E>(kk[src]);
    vc[dst] = from_f<E>(vv[src]);
}

#define ATT_CHUNK 4 /* consecutive keys a warp loads before it reduces them */

/* att[b, t, h*D:(h+1)*D] = softmax_s(scale q . k_s ; s <= S0 + t, mask[b, s]) . v_s
 * One block of WARPS warps per (b, t, h), blockIdx.x = (b * T + t) * H + h
 * (decode uses 16 warps so one head's keys are split 16 ways; prefill 4).
 * Warp w takes the chunks of ATT_CHUNK consecutive keys starting at
 * ATT_CHUNK * (w + WARPS * i): it loads a chunk's keys and values first (the
 * loads overlap), reduces the dot products, then updates its online softmax
 * (max m, sum l, acc[D]) key by key: one pass over the cache. Lane l holds
 * dims l + 32 i (i < DPL = ceil(D / 32)). The warps merge at the end. A
 * query with no visible key (a pad query) averages v over s <= S0 + t, as
 * the CPU path does. */
template <typename E, int DPL, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 1) attention_kernel(E *att, const float *q, int ldq, E *kc, E *vc, const float *knew, const float *vnew,
                                 const uint8_t *mask, int mask_stride, const int *d_len, int T, int H, int D, int Smax,
                                 float scale) {
    const int h = blockIdx.x % H, n = blockIdx.x / H, b = n / T, t = n % T;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int C = H * D, sq = *d_len + t;
    const uint8_t *mk = mask + (size_t)b * mask_stride;
    const size_t head = ((size_t)b * H + h) * (size_t)Smax * D;
    const E *K = kc + head, *Vv = vc + head;
    if (knew) { /* decode (T == 1): this block is the only reader of (b, h), so it appends the new key and value itself */
        for (int d = threadIdx.x; d < D; d += blockDim.x) {
            const size_t src = (size_t)n * ldq + (size_t)h * D + d, dst = head + (size_t)sq * D + d;
            kc[dst] = from_f<E>(knew[src]);
            vc[dst] = from_f<E>(vnew[src]);
        }
        __syncthreads();
    }
    float qv[DPL], acc[DPL];
    for (int i = 0; i < DPL; i++) {
        const int d = lane + 32 * i;
        qv[i] = d < D ? q[(size_t)n * ldq + (size_t)h * D + d] * scale : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int s0 = ATT_CHUNK * w; s0 <= sq; s0 += ATT_CHUNK * WARPS) {
        float kx[ATT_CHUNK][DPL], vx[ATT_CHUNK][DPL], dot[ATT_CHUNK];
        bool ok[ATT_CHUNK];
#pragma unroll
        for (int j = 0; j < ATT_CHUNK; j++) {
            const int s = s0 + j;
            ok[j] = s <= sq && mk[s];
#pragma unroll
            for (int i = 0; i < DPL; i++) {
                const int d = lane + 32 * i;
                const bool in = ok[j] && d < D;
                kx[j][i] = in ? to_f(K[(size_t)s * D + d]) : 0.0f;
                vx[j][i] = in ? to_f(Vv[(size_t)s * D + d]) : 0.0f;
            }
        }
#pragma unroll
        for (int j = 0; j < ATT_CHUNK; j++) {
            float p = 0.0f;
#pragma unroll
            for (int i = 0; i < DPL; i++) p += qv[i] * kx[j][i];
            dot[j] = p;
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
#pragma unroll
            for (int j = 0; j < ATT_CHUNK; j++) dot[j] += __shfl_xor_sync(0xffffffffu, dot[j], o);
#pragma unroll
        for (int j = 0; j < ATT_CHUNK; j++) {
            if (!ok[j]) continue;
            const float mn = fmaxf(m, dot[j]), corr = expf(m - mn), p = expf(dot[j] - mn);
            l = l * corr + p;
#pragma unroll
            for (int i = 0; i < DPL; i++) acc[i] = acc[i] * corr + p * vx[j][i];
            m = mn;
        }
    }
    __shared__ float sm[WARPS], sl[WARPS], sacc[WARPS][32 * DPL];
    if (lane == 0) sm[w] = m, sl[w] = l;
    for (int i = 0; i < DPL; i++) sacc[w][lane + 32 * i] = acc[i];
    __syncthreads();
    float M = sm[0];
    for (int i = 1; i < WARPS; i++) M = fmaxf(M, sm[i]);
    E *out = att + (size_t)n * C + (size_t)h * D;
    if (M == -INFINITY) { /* no visible key: uniform over s <= sq */
        __syncthreads();
        for (int i = 0; i < DPL; i++) acc[i] = 0.0f;
        for (int s = w; s <= sq; s += WARPS)
            for (int i = 0; i < DPL; i++) {
                const int d = lane + 32 * i;
                if (d < D) acc[i] += to_f(Vv[(size_t)s * D + d]);
            }
        for (int i = 0; i < DPL; i++) sacc[w][lane + 32 * i] = acc[i];
        __syncthreads();
        for (int d = threadIdx.x; d < D; d += blockDim.x) {
            float v = 0.0f;
            for (int j = 0; j < WARPS; j++) v += sacc[j][d];
            out[d] = from_f<E>(v / (float)(sq + 1));
        }
        return;
    }
    float L = 0.0f;
    for (int j = 0; j < WARPS; j++) L += sm[j] == -INFINITY ? 0.0f : sl[j] * expf(sm[j] - M);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float v = 0.0f;
        for (int j = 0; j < WARPS; j++)
            if (sm[j] != -INFINITY) v += sacc[j][d] * expf(sm[j] - M);
        out[d] = from_f<E>(v / L);
    }
}

template <typename E> __global__ void convert_kernel(E *dst, const float *src, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = from_f<E>(src[i]);
}

__global__ void len_add_kernel(int *d_len, int T) { *d_len += T; }
__global__ void len_set_kernel(int *d_len, int v) { *d_len = v; }

/* Copies S tokens of every (l, h) of src row sb to dst row db; one block per (l, h). */
__global__ void kv_copy_row_kernel(char *dk, char *dv, const char *sk, const char *sv, int L, int H, int dB, int db,
                                   int dSmax, int sB, int sb, int sSmax, size_t row_bytes_per_token, int S) {
    const int l = blockIdx.x / H, h = blockIdx.x % H;
    const size_t od = (((size_t)l * dB + db) * H + h) * (size_t)dSmax * row_bytes_per_token;
    const size_t os = (((size_t)l * sB + sb) * H + h) * (size_t)sSmax * row_bytes_per_token;
    const size_t n = (size_t)S * row_bytes_per_token;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        dk[od + i] = sk[os + i];
        dv[od + i] = sv[os + i];
    }
}

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
    opt_dtype dt;
    char *d_arena;         /* weights, a copy of hw->arena */
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
template <typename P> static P *dw(const opt_cuda_model *m, P *host) {
    if (!host) return NULL;
    return (P *)(void *)(m->d_arena + ((const char *)host - (const char *)m->hw->arena));
}

static cudaDataType_t cuda_type(opt_dtype dt) {
    return dt == OPT_F16 ? CUDA_R_16F : dt == OPT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static void graph_destroy(void *ctx, void *exec) {
    (void)ctx;
    cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

static void plan_destroy(lt_plan *p);

static void plans_clear(opt_cuda_model *m) {
    for (int i = 0; i < m->n_plans; i++) plan_destroy(&m->plans[i]);
    m->n_plans = 0;
}

bc_status opt_cuda_model_create(opt_cuda_model **out, opt_cuda_device *d, const opt_weights *w, bc_error *err) {
    *out = NULL;
    const opt_hparams *hp = &w->hp;
    const int D = hp->hidden_size / hp->num_attention_heads;
    if (D > 128 || hp->hidden_size % hp->num_attention_heads)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "CUDA OPT: head_dim %d; the attention kernel supports up to 128",
                            D);
    opt_cuda_model *m = (opt_cuda_model *)calloc(1, sizeof *m);
    if (!m) return bc_error_set(err, BC_ERR_NOMEM, "CUDA OPT: no host memory");
    m->dev = d;
    m->hw = w;
    m->hp = *hp;
    m->dt = w->dtype;
    opt_cuda_graphs_init(&m->graphs, graph_destroy, NULL);
    bc_status st = opt_cuda_alloc(d, OPT_CUDA_MEM_WEIGHTS, w->arena_bytes, (void **)&m->d_arena, "weights", err);
    if (st == BC_OK) {
        m->arena_bytes = w->arena_bytes;
        st = opt_cuda_upload(d, m->d_arena, w->arena, w->arena_bytes, err);
    }
    if (st != BC_OK) {
        opt_cuda_model_destroy(m);
        return st;
    }
    *out = m;
    return BC_OK;
}

void opt_cuda_model_release_workspace(opt_cuda_model *m) {
    if (!m) return;
    cudaStreamSynchronize(m->dev->stream);
    opt_cuda_graphs_clear(&m->graphs);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WORKSPACE, m->d_ws, m->ws_bytes);
    m->d_ws = NULL;
    m->ws_bytes = 0;
    memset(&m->wl, 0, sizeof m->wl);
}

void opt_cuda_model_destroy(opt_cuda_model *m) {
    if (!m) return;
    opt_cuda_model_release_workspace(m);
    plans_clear(m);
    opt_cuda_free(m->dev, OPT_CUDA_MEM_WEIGHTS, m->d_arena, m->arena_bytes);
    free(m);
}

size_t opt_cuda_model_workspace_bytes(const opt_cuda_model *m) { return m->ws_bytes; }
const opt_hparams *opt_cuda_model_hparams(const opt_cuda_model *m) { return &m->hp; }
opt_dtype opt_cuda_model_dtype(const opt_cuda_model *m) { return m->dt; }

bc_status opt_cuda_model_reserve(opt_cuda_model *m, int max_tokens, bc_error *err) {
    if (m->d_ws && m->wl.N >= max_tokens) return BC_OK;
    if (m->d_ws && m->wl.N > max_tokens) max_tokens = m->wl.N;
    opt_cuda_model_release_workspace(m);
    opt_cuda_ws_layout l;
    size_t bytes = opt_cuda_ws_layout_for(&m->hp, m->dt, max_tokens, &l);
    bc_status st = opt_cuda_alloc(m->dev, OPT_CUDA_MEM_WORKSPACE, bytes, (void **)&m->d_ws, "activations", err);
    if (st != BC_OK) return st;
    m->ws_bytes = bytes;
    m->wl = l;
    return BC_OK;
}

/* y[M, N] += bias[N], then ReLU when relu: the fallback when cuBLASLt has
 * no algorithm with the epilogue for a shape. */
__global__ void bias_act_kernel(float *y, const float *bias, int M, int N, int relu) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)M * N) return;
    float v = y[i] + bias[i % N];
    y[i] = relu && v < 0.0f ? 0.0f : v;
}

static void plan_destroy(lt_plan *p) {
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

/* Descriptors and the heuristic's first algorithm for y^T[N, M] = op(W) x^T
 * with cuBLASLt epilogue lt_epi (0 none, 1 bias, 2 bias + ReLU). Returns the
 * cuBLASLt status; *found = 0 when no algorithm fits. */
static cublasStatus_t plan_make(opt_cuda_model *m, lt_plan *p, int M, int K, int N, int lt_epi, const float *bias,
                                int y_dt, int *found) {
    *found = 0;
    memset(p, 0, sizeof *p);
    const cudaDataType_t yt = y_dt ? cuda_type(m->dt) : CUDA_R_32F;
    const cudaDataType_t ab = cuda_type(m->dt);
    cublasStatus_t s;
#define LTP(call)                                    \
    do {                                             \
        if ((s = (call)) != CUBLAS_STATUS_SUCCESS) { \
            plan_destroy(p);                         \
            return s;                                \
        }                                            \
    } while (0)
    LTP(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t e = lt_epi == 2 ? CUBLASLT_EPILOGUE_RELU_BIAS : lt_epi == 1 ? CUBLASLT_EPILOGUE_BIAS
                                                                                   : CUBLASLT_EPILOGUE_DEFAULT;
    LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    if (lt_epi) {
        cudaDataType_t bt = CUDA_R_32F;
        LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        LTP(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    LTP(cublasLtMatrixLayoutCreate(&p->a, ab, K, N, K));
    LTP(cublasLtMatrixLayoutCreate(&p->b, ab, K, M, K));
    LTP(cublasLtMatrixLayoutCreate(&p->c, yt, N, M, N));
    cublasLtMatmulPreference_t pref;
    LTP(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsb = OPT_CUDA_LT_WORKSPACE;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    /* alignment the heuristic may assume: weights sit on 64-byte boundaries of the arena
     * (model.c); activations and logits on 256 (cuda_plan.h), but callers may pass others */
    uint32_t al_a = 64, al_other = 16;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_other, sizeof al_other);
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    s = cublasLtMatmulAlgoGetHeuristic(m->dev->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) s = CUBLAS_STATUS_SUCCESS, nres = 0;
    if (s != CUBLAS_STATUS_SUCCESS || nres == 0) {
        plan_destroy(p);
        return s;
    }
#undef LTP
    p->algo = res.algo;
    p->M = M, p->N = N, p->K = K, p->lt_epi = lt_epi, p->y_dt = y_dt;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* y[M, N] = x[M, K] (dt) W[N, K]^T (dt) (+ bias[N] fp32) (ReLU when relu),
 * y in fp32, or in the run's dtype when y_dt (rounded from the fp32 result).
 * Column-major view for cuBLASLt: y^T[N, M] = op(W)[N, K] x^T[K, M].
 * The bias (+ ReLU) is cuBLASLt's epilogue. For an fp32 y, where cuBLASLt has
 * no algorithm with that epilogue, a plain GEMM and bias_act_kernel (same
 * fp32 math). For a dtype y with no algorithm (or a call cuBLASLt refuses):
 * *done = 0 and nothing runs (the caller takes the fp32 route); done may be
 * NULL for fp32. */
static bc_status gemm_ex(opt_cuda_model *m, void *y, const void *x, const void *W, const float *bias, int M, int K,
                         int N, int relu, int y_dt, int *done, bc_error *err) {
    const int epi = bias ? (relu ? 2 : 1) : 0;
    if (done) *done = 0;
    /* the kernels queued since the last check: their launch errors are ours
     * to report, before a cuBLASLt call can take them (host side, no sync) */
    const cudaError_t le = cudaGetLastError();
    if (le != cudaSuccess)
        return bc_error_set(err, BC_ERR_DEVICE, "CUDA kernel launch before the GEMM M %d, K %d, N %d: %s", M, K, N,
                            cudaGetErrorString(le));
    lt_plan *p = NULL;
    for (int i = 0; i < m->n_plans && !p; i++) {
        lt_plan *c = &m->plans[i];
        if (c->M == M && c->N == N && c->K == K && c->epi == epi && c->y_dt == y_dt) p = c;
    }
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (!p) {
        if (m->n_plans == LT_PLANS) plans_clear(m);
        p = &m->plans[m->n_plans];
        int found = 0;
        s = plan_make(m, p, M, K, N, epi, bias, y_dt, &found);
        if (y_dt && s != CUBLAS_STATUS_SUCCESS) s = CUBLAS_STATUS_SUCCESS, found = 0; /* any refusal: the fp32 route */
        if (s == CUBLAS_STATUS_SUCCESS && !found && epi && !y_dt) s = plan_make(m, p, M, K, N, 0, NULL, 0, &found);
        if (s != CUBLAS_STATUS_SUCCESS || (!found && !y_dt))
            return bc_error_set(err, BC_ERR_DEVICE, "cuBLASLt has no algorithm for M %d, K %d, N %d in %s: %s", M, K,
                                N, opt_dtype_name(m->dt), cublasLtGetStatusString(s));
        if (!found) { /* remember the miss for a dtype output */
            memset(p, 0, sizeof *p);
            p->M = M, p->N = N, p->K = K, p->y_dt = y_dt, p->none = 1;
        }
        p->epi = epi;
        m->n_plans++;
    } else if (p->lt_epi) {
        s = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    if (p->none) return BC_OK; /* *done stays 0 */
    const float alpha = 1.0f, beta = 0.0f;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(m->dev->lt, p->op, &alpha, W, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo,
                           m->d_ws + m->wl.lt, OPT_CUDA_LT_WORKSPACE, m->dev->stream);
    if (s != CUBLAS_STATUS_SUCCESS && y_dt) {
        /* a dtype output with an fp32 bias is outside cuBLASLt's documented
         * bias types (bias type = D's type): a refusal at run time is a miss
         * like the heuristic's, remembered; the caller takes the fp32 route */
        plan_destroy(p);
        p->M = M, p->N = N, p->K = K, p->epi = epi, p->y_dt = y_dt, p->none = 1;
        return BC_OK;
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        return bc_error_set(err, BC_ERR_DEVICE, "cuBLASLt matmul (M %d, K %d, N %d, %s): %s", M, K, N,
                            opt_dtype_name(m->dt), cublasLtGetStatusString(s));
    if (p->epi && !p->lt_epi) {
        const size_t n = (size_t)M * N;
        bias_act_kernel<<<(unsigned)((n + 255) / 256), 256, 0, m->dev->stream>>>((float *)y, bias, M, N, p->epi == 2);
        m->n_epilogue_fallbacks++;
    }
    if (done) *done = 1;
    return BC_OK;
}

static bc_status gemm(opt_cuda_model *m, float *y, const void *x, const void *W, const float *bias, int M, int K, int N,
                      int relu, bc_error *err) {
    return gemm_ex(m, y, x, W, bias, M, K, N, relu, 0, NULL, err);
}

/* ----------------------------------------------------------------- KV cache */

bc_status opt_cuda_kv_cache_alloc(opt_cuda_device *d, opt_cuda_kv_cache *kv, const opt_hparams *hp, opt_dtype dtype,
                                  int B, int Smax, bc_error *err) {
    memset(kv, 0, sizeof *kv);
    if (B < 1 || Smax < 1) return bc_error_set(err, BC_ERR_INVALID, "KV cache: B %d and Smax %d must be >= 1", B, Smax);
    kv->dtype = dtype;
    kv->L = hp->num_hidden_layers;
    kv->B = B;
    kv->H = hp->num_attention_heads;
    kv->D = hp->hidden_size / hp->num_attention_heads;
    kv->Smax = Smax;
    kv->bytes = opt_kv_cache_bytes(hp, dtype, B, Smax);
    kv->alloc_bytes = kv->bytes + OPT_CUDA_ALIGN; /* + the length counter */
    char *base = NULL;
    bc_status st = opt_cuda_alloc(d, OPT_CUDA_MEM_KV, kv->alloc_bytes, (void **)&base, "KV cache", err);
    if (st != BC_OK) {
        memset(kv, 0, sizeof *kv);
        return st;
    }
    kv->k = base;
    kv->v = base + kv->bytes / 2;
    kv->d_len = (int *)(void *)(base + kv->bytes);
    return opt_cuda_kv_cache_set_len(d, kv, 0, err);
}

void opt_cuda_kv_cache_free(opt_cuda_device *d, opt_cuda_kv_cache *kv) {
    if (!kv || !kv->k) return;
    cudaStreamSynchronize(d->stream);
    opt_cuda_free(d, OPT_CUDA_MEM_KV, kv->k, kv->alloc_bytes);
    memset(kv, 0, sizeof *kv);
}

bc_status opt_cuda_kv_cache_set_len(opt_cuda_device *d, opt_cuda_kv_cache *kv, int len, bc_error *err) {
    len_set_kernel<<<1, 1, 0, d->stream>>>(kv->d_len, len);
    CU_CHECK(cudaGetLastError(), "len_set_kernel");
    kv->len = len;
    return BC_OK;
}

bc_status opt_cuda_kv_cache_copy_row(opt_cuda_device *d, opt_cuda_kv_cache *dst, int dst_b,
                                     const opt_cuda_kv_cache *src, int src_b, int S, bc_error *err) {
    const size_t tok = (size_t)dst->D * opt_dtype_size(dst->dtype);
    kv_copy_row_kernel<<<dst->L * dst->H, 256, 0, d->stream>>>((char *)dst->k, (char *)dst->v, (const char *)src->k,
                                                               (const char *)src->v, dst->L, dst->H, dst->B, dst_b,
                                                               dst->Smax, src->B, src_b, src->Smax, tok, S);
    CU_CHECK(cudaGetLastError(), "kv_copy_row_kernel");
    return BC_OK;
}

/* ----------------------------------------------------------------- forward */

template <typename E>
static void launch_embed(cudaStream_t st, float *x, void *embh, const int32_t *tok, const uint8_t *mask, int stride,
                         const int *d_len, int N, int T, const void *te, const void *pe, int C, int P, int mode) {
    embed_kernel<E><<<N, 256, 0, st>>>(x, (E *)embh, tok, mask, stride, d_len, T, (const E *)te, (const E *)pe, C, P,
                                       mode);
}

template <typename E>
static void launch_rln(cudaStream_t st, int rows, float *x, const float *y, const float *g, const float *bt, void *out,
                       int C, int row_mul, int row_add, int to_x) {
    residual_ln_kernel<E><<<rows, 256, 0, st>>>(x, y, g, bt, (E *)out, C, row_mul, row_add, to_x);
}

template <typename E>
static void launch_kv_store(cudaStream_t st, void *kc, void *vc, const float *kk, const float *vv, int ld,
                            const int *d_len, int B, int T, int H, int D, int Smax) {
    const size_t total = (size_t)B * T * H * D;
    kv_store_kernel<E><<<(unsigned)((total + 255) / 256), 256, 0, st>>>((E *)kc, (E *)vc, kk, vv, ld, d_len, B, T, H,
                                                                        D, Smax);
}

template <typename E>
static void launch_attention(cudaStream_t st, void *att, const float *q, int ldq, void *kc, void *vc,
                             const float *knew, const float *vnew, const uint8_t *mask, int stride, const int *d_len,
                             int B, int T, int H, int D, int Smax) {
    const float scale = 1.0f / sqrtf((float)D);
    const int blocks = B * T * H, dpl = (D + 31) / 32;
#define ATT(n, w)                                                                                              \
    attention_kernel<E, n, w><<<blocks, 32 * (w), 0, st>>>((E *)att, q, ldq, (E *)kc, (E *)vc, knew, vnew, mask, \
                                                           stride, d_len, T, H, D, Smax, scale)
#define ATT_W(w)                  \
    do {                          \
        if (dpl == 1) ATT(1, w);  \
        else if (dpl == 2) ATT(2, w); \
        else if (dpl == 3) ATT(3, w); \
        else ATT(4, w);           \
    } while (0)
    if (T == 1) ATT_W(16); /* decode: one head's keys over 16 warps */
    else ATT_W(4);
#undef ATT_W
#undef ATT
}

template <typename E> static void launch_convert(cudaStream_t st, void *dst, const float *src, size_t n) {
    convert_kernel<E><<<(unsigned)((n + 255) / 256), 256, 0, st>>>((E *)dst, src, n);
}

#define TRY(x)                      \
    do {                            \
        bc_status st_ = (x);        \
        if (st_ != BC_OK) return st_; \
    } while (0)

/* The forward's kernels and GEMMs, queued on the stream; nothing checked or
 * synchronised (so it can be captured in a graph). */
static bc_status forward_body(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                              int stride, int B, int T, opt_logits_mode mode, float *d_logits, bc_error *err) {
    const opt_hparams *hp = &m->hp;
    const opt_weights *w = m->hw;
    const opt_dtype dt = m->dt;
    const int C = hp->hidden_size, P = hp->word_embed_proj_dim, V = hp->vocab_size, L = hp->num_hidden_layers;
    const int F = hp->ffn_dim, H = hp->num_attention_heads, D = C / H, N = B * T, pre = hp->do_layer_norm_before;
    const size_t es = opt_dtype_size(dt);
    cudaStream_t st = m->dev->stream;
    char *ws = m->d_ws;
    float *x = (float *)(void *)(ws + m->wl.x), *q = (float *)(void *)(ws + m->wl.q);
    float *kk = (float *)(void *)(ws + m->wl.k), *vv = (float *)(void *)(ws + m->wl.v);
    float *y = (float *)(void *)(ws + m->wl.y), *ff = (float *)(void *)(ws + m->wl.ff);
    void *xh = ws + m->wl.xh, *att = ws + m->wl.att, *ffh = ws + m->wl.ffh, *embh = ws + m->wl.embh;
    const void *tok_emb = dw(m, w->embed_tokens.data), *pos_emb = dw(m, w->embed_positions.data);

    /* embeddings */
    if (P == C) {
        DISPATCH_DT(dt, launch_embed, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 0);
    } else {
        DISPATCH_DT(dt, launch_embed, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 1);
        TRY(gemm(m, x, embh, dw(m, w->project_in.data), NULL, N, P, C, 0, err));
        DISPATCH_DT(dt, launch_embed, st, x, embh, d_tokens, d_mask, stride, kv->d_len, N, T, tok_emb, pos_emb, C, P, 2);
    }
    /* the first layer's input */
    const opt_layer_weights *l0 = &w->layers[0];
    DISPATCH_DT(dt, launch_rln, st, N, x, (const float *)NULL, pre ? dw(m, l0->ln1_gamma) : NULL,
                pre ? dw(m, l0->ln1_beta) : NULL, xh, C, 1, 0, 0);

    const size_t layer_kv = (size_t)kv->B * H * kv->Smax * D * es;
    for (int l = 0; l < L; l++) {
        const opt_layer_weights *lw = &w->layers[l];
        void *kc = (char *)kv->k + (size_t)l * layer_kv, *vc = (char *)kv->v + (size_t)l * layer_kv;
        /* q, k, v: one GEMM [N, 3C] when the arena holds q_proj, k_proj, v_proj
         * (and their biases) back to back, as model.c lays them out; rows of
         * the result are 3C apart (the q, k, v buffers are adjacent in the
         * workspace, cuda_plan.h). Else three GEMMs. */
        const size_t mat = (size_t)C * C * es;
        const int fused = (const char *)lw->k_proj.data == (const char *)lw->q_proj.data + mat &&
                          (const char *)lw->v_proj.data == (const char *)lw->k_proj.data + mat &&
                          lw->k_bias == lw->q_bias + C && lw->v_bias == lw->k_bias + C;
        const float *qp = q, *kp = kk, *vp = vv;
        int ld = C;
        if (fused) {
            TRY(gemm(m, q, xh, dw(m, lw->q_proj.data), dw(m, lw->q_bias), N, C, 3 * C, 0, err));
            kp = q + C, vp = q + 2 * C, ld = 3 * C;
        } else {
            TRY(gemm(m, q, xh, dw(m, lw->q_proj.data), dw(m, lw->q_bias), N, C, C, 0, err));
            TRY(gemm(m, kk, xh, dw(m, lw->k_proj.data), dw(m, lw->k_bias), N, C, C, 0, err));
            TRY(gemm(m, vv, xh, dw(m, lw->v_proj.data), dw(m, lw->v_bias), N, C, C, 0, err));
        }
        /* the new keys and values go to the cache: by the attention kernel
         * itself in a decode step (T == 1), else by kv_store_kernel first */
        if (T > 1) DISPATCH_DT(dt, launch_kv_store, st, kc, vc, kp, vp, ld, kv->d_len, B, T, H, D, kv->Smax);
        DISPATCH_DT(dt, launch_attention, st, att, qp, ld, kc, vc, T == 1 ? kp : (const float *)NULL,
                    T == 1 ? vp : (const float *)NULL, d_mask, stride, kv->d_len, B, T, H, D, kv->Smax);
        TRY(gemm(m, y, att, dw(m, lw->out_proj.data), dw(m, lw->out_bias), N, C, C, 0, err));
        if (pre)
            DISPATCH_DT(dt, launch_rln, st, N, x, y, dw(m, lw->ln2_gamma), dw(m, lw->ln2_beta), xh, C, 1, 0, 0);
        else
            DISPATCH_DT(dt, launch_rln, st, N, x, y, dw(m, lw->ln1_gamma), dw(m, lw->ln1_beta), xh, C, 1, 0, 1);
        /* fc1 + bias + ReLU; in 16-bit straight to the dtype fc2 reads when
         * cuBLASLt has that epilogue with a 16-bit output, else fp32 + convert */
        int direct = 0;
        if (dt != OPT_F32 && !m->fc1_fp32_only)
            TRY(gemm_ex(m, ffh, xh, dw(m, lw->fc1.data), dw(m, lw->fc1_bias), N, C, F, 1, 1, &direct, err));
        if (!direct) {
            TRY(gemm(m, ff, xh, dw(m, lw->fc1.data), dw(m, lw->fc1_bias), N, C, F, 1, err));
            if (dt != OPT_F32) DISPATCH_DT(dt, launch_convert, st, ffh, ff, (size_t)N * F);
            m->n_fc1_converts++;
        }
        TRY(gemm(m, y, ffh, dw(m, lw->fc2.data), dw(m, lw->fc2_bias), N, F, C, 0, err));
        if (pre && l + 1 < L)
            DISPATCH_DT(dt, launch_rln, st, N, x, y, dw(m, w->layers[l + 1].ln1_gamma), dw(m, w->layers[l + 1].ln1_beta),
                        xh, C, 1, 0, 0);
        else if (pre)
            DISPATCH_DT(dt, launch_rln, st, N, x, y, (const float *)NULL, (const float *)NULL, (void *)NULL, C, 1, 0, 0);
        else
            DISPATCH_DT(dt, launch_rln, st, N, x, y, dw(m, lw->ln2_gamma), dw(m, lw->ln2_beta), xh, C, 1, 0, 1);
    }
    len_add_kernel<<<1, 1, 0, st>>>(kv->d_len, T);
    if (mode == OPT_LOGITS_NONE) return BC_OK;

    /* the rows whose logits we want: final layer norm (pre-LN) or a plain
     * conversion (post-LN) of x rows n * row_mul + row_add into xh[M, C] */
    const int M = mode == OPT_LOGITS_LAST ? B : N;
    const int row_mul = mode == OPT_LOGITS_LAST ? T : 1, row_add = mode == OPT_LOGITS_LAST ? T - 1 : 0;
    DISPATCH_DT(dt, launch_rln, st, M, x, (const float *)NULL, dw(m, w->final_ln_gamma), dw(m, w->final_ln_beta), xh,
                C, row_mul, row_add, 0);
    const void *h = xh;
    if (P != C) {
        TRY(gemm(m, y, xh, dw(m, w->project_out.data), NULL, M, C, P, 0, err));
        DISPATCH_DT(dt, launch_convert, st, embh, y, (size_t)M * P);
        h = embh;
    }
    /* lm_head tied to embed_tokens: logits[M, V] = h[M, P] embed_tokens[V, P]^T */
    TRY(gemm(m, d_logits, h, tok_emb, NULL, M, P, V, 0, err));
    return BC_OK;
}

static bc_status check_forward(opt_cuda_model *m, const opt_cuda_kv_cache *kv, int stride, int B, int T,
                               opt_logits_mode mode, const float *d_logits, bc_error *err) {
    const opt_hparams *hp = &m->hp;
    const int S1 = kv->len + T;
    if (B != kv->B || T < 1)
        return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: B %d (cache has %d), T %d", B, kv->B, T);
    if (S1 > kv->Smax || S1 > hp->max_position_embeddings)
        return bc_error_set(err, BC_ERR_INVALID,
                            "opt_cuda_forward: %d tokens exceed the cache (%d) or the positions (%d)", S1, kv->Smax,
                            hp->max_position_embeddings);
    if (stride < S1) return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: mask stride %d < %d tokens", stride, S1);
    if (kv->dtype != m->dt || kv->L != hp->num_hidden_layers || kv->H != hp->num_attention_heads)
        return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: KV cache shape or dtype does not match the model");
    if (mode != OPT_LOGITS_NONE && !d_logits) return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_forward: logits is NULL");
    return BC_OK;
}

bc_status opt_cuda_forward(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                           int mask_stride, int B, int T, opt_logits_mode mode, float *d_logits, bc_error *err) {
    TRY(check_forward(m, kv, mask_stride, B, T, mode, d_logits, err));
    TRY(opt_cuda_model_reserve(m, B * T, err));
    TRY(forward_body(m, kv, d_tokens, d_mask, mask_stride, B, T, mode, d_logits, err));
    CU_CHECK(cudaGetLastError(), "forward kernels");
    kv->len += T;
    return BC_OK;
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
    bc_status s = forward_body(m, kv, d_tokens, d_mask, mask_stride, B, 1, OPT_LOGITS_LAST, d_logits, &cerr);
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
        return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, OPT_LOGITS_LAST, d_logits, err);
    TRY(check_forward(m, kv, mask_stride, B, 1, OPT_LOGITS_LAST, d_logits, err));
    TRY(opt_cuda_model_reserve(m, B, err));
    const void *ptrs[] = {kv->k, kv->d_len, d_tokens, d_mask, d_logits, m->d_ws};
    const uint64_t binding = opt_cuda_graphs_binding(ptrs, 6, ((uint64_t)(unsigned)mask_stride << 32) |
                                                                  (uint64_t)(unsigned)kv->Smax);
    void *found = NULL;
    const opt_cuda_graph_action act = opt_cuda_graphs_next(&m->graphs, B, binding, &found);
    /* the first step with these buffers runs eagerly: it makes the GEMM plans
     * and loads every kernel, so the capture that follows only records */
    if (act == OPT_CUDA_GRAPH_WARMUP)
        return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, OPT_LOGITS_LAST, d_logits, err);
    cudaGraphExec_t exec = (cudaGraphExec_t)found;
    if (act == OPT_CUDA_GRAPH_CAPTURE) {
        capture_step(m, kv, d_tokens, d_mask, mask_stride, B, d_logits, &exec);
        if (!exec) /* graphs off from now on (opt_cuda_graph_error says why); same results */
            return opt_cuda_forward(m, kv, d_tokens, d_mask, mask_stride, B, 1, OPT_LOGITS_LAST, d_logits, err);
        opt_cuda_graphs_put(&m->graphs, B, binding, (void *)exec);
    }
    CU_CHECK(cudaGraphLaunch(exec, m->dev->stream), "graph launch");
    kv->len += 1;
    return BC_OK;
}

const char *opt_cuda_graph_error(const opt_cuda_model *m) { return m->graph_error; }
int64_t opt_cuda_epilogue_fallbacks(const opt_cuda_model *m) { return m->n_epilogue_fallbacks; }
int64_t opt_cuda_fc1_converts(const opt_cuda_model *m) { return m->n_fc1_converts; }
void opt_cuda_model_force_fc1_fp32(opt_cuda_model *m, int on) { m->fc1_fp32_only = on != 0; }

void opt_cuda_graph_stats(const opt_cuda_model *m, int *held, int64_t *captures, int64_t *replays,
                          int64_t *invalidations) {
    if (held) *held = opt_cuda_graphs_count(&m->graphs);
    if (captures) *captures = m->graphs.captures;
    if (replays) *replays = m->graphs.replays;
    if (invalidations) *invalidations = m->graphs.invalidations;
}
