/* cuda_kernels.cu: the OPT forward's device kernels (see cuda_kernels.h;
 * legend of ../model.h), templated on the storage type E (float, __half,
 * __nv_bfloat16):
 *   embed_kernel        token (+ position) embeddings; positions from the mask
 *   residual_ln_kernel  x += y, then layer norm of x into the next GEMM input
 *   kv_store_kernel     new keys/values [N, C] fp32 -> cache [L][B][H][Smax][D]
 *                       (prefill; a decode step's attention stores its own)
 *   attention_kernel    one block per (row, query, head): the keys it sees in
 *                       one pass with an online softmax (decode and prefill)
 *   convert_kernel, bias_act_kernel, the cache length and row copies.
 * Every kernel reads the cache length from d_len, so a captured decode step
 * replays correctly at every step.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>

#include "cuda_kernels.h"
#include "cuda_reduce.cuh"

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
        if ((dt) == ENG_F16) F<__half>(__VA_ARGS__);              \
        else if ((dt) == ENG_BF16) F<__nv_bfloat16>(__VA_ARGS__); \
        else F<float>(__VA_ARGS__);                               \
    } while (0)

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

/* y[M, N] += bias[N], then ReLU when relu: the fallback when cuBLASLt has
 * no algorithm with the epilogue for a shape. */
__global__ void bias_act_kernel(float *y, const float *bias, int M, int N, int relu) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)M * N) return;
    float v = y[i] + bias[i % N];
    y[i] = relu && v < 0.0f ? 0.0f : v;
}

/* ---------------------------------------------------------------- launches */


template <typename E>
static void launch_t_embed(cudaStream_t st, float *x, void *embh, const int32_t *tok, const uint8_t *mask, int stride,
                         const int *d_len, int N, int T, const void *te, const void *pe, int C, int P, int mode) {
    embed_kernel<E><<<N, 256, 0, st>>>(x, (E *)embh, tok, mask, stride, d_len, T, (const E *)te, (const E *)pe, C, P,
                                       mode);
}

template <typename E>
static void launch_t_rln(cudaStream_t st, int rows, float *x, const float *y, const float *g, const float *bt, void *out,
                       int C, int row_mul, int row_add, int to_x) {
    residual_ln_kernel<E><<<rows, 256, 0, st>>>(x, y, g, bt, (E *)out, C, row_mul, row_add, to_x);
}

template <typename E>
static void launch_t_kv_store(cudaStream_t st, void *kc, void *vc, const float *kk, const float *vv, int ld,
                            const int *d_len, int B, int T, int H, int D, int Smax) {
    const size_t total = (size_t)B * T * H * D;
    kv_store_kernel<E><<<(unsigned)((total + 255) / 256), 256, 0, st>>>((E *)kc, (E *)vc, kk, vv, ld, d_len, B, T, H,
                                                                        D, Smax);
}

template <typename E>
static void launch_t_attention(cudaStream_t st, void *att, const float *q, int ldq, void *kc, void *vc,
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

template <typename E> static void launch_t_convert(cudaStream_t st, void *dst, const float *src, size_t n) {
    convert_kernel<E><<<(unsigned)((n + 255) / 256), 256, 0, st>>>((E *)dst, src, n);
}

void opt_cuda_launch_embed(eng_dtype dt, cudaStream_t st, float *x, void *embh, const int32_t *tok,
                           const uint8_t *mask, int stride, const int *d_len, int N, int T, const void *te,
                           const void *pe, int C, int P, int mode) {
    DISPATCH_DT(dt, launch_t_embed, st, x, embh, tok, mask, stride, d_len, N, T, te, pe, C, P, mode);
}

void opt_cuda_launch_residual_ln(eng_dtype dt, cudaStream_t st, int rows, float *x, const float *y, const float *g,
                                 const float *bt, void *out, int C, int row_mul, int row_add, int to_x) {
    DISPATCH_DT(dt, launch_t_rln, st, rows, x, y, g, bt, out, C, row_mul, row_add, to_x);
}

void opt_cuda_launch_kv_store(eng_dtype dt, cudaStream_t st, void *kc, void *vc, const float *kk, const float *vv,
                              int ld, const int *d_len, int B, int T, int H, int D, int Smax) {
    DISPATCH_DT(dt, launch_t_kv_store, st, kc, vc, kk, vv, ld, d_len, B, T, H, D, Smax);
}

void opt_cuda_launch_attention(eng_dtype dt, cudaStream_t st, void *att, const float *q, int ldq, void *kc, void *vc,
                               const float *knew, const float *vnew, const uint8_t *mask, int stride,
                               const int *d_len, int B, int T, int H, int D, int Smax) {
    DISPATCH_DT(dt, launch_t_attention, st, att, q, ldq, kc, vc, knew, vnew, mask, stride, d_len, B, T, H, D, Smax);
}

void opt_cuda_launch_convert(eng_dtype dt, cudaStream_t st, void *dst, const float *src, size_t n) {
    DISPATCH_DT(dt, launch_t_convert, st, dst, src, n);
}

void opt_cuda_launch_bias_act(cudaStream_t st, float *y, const float *bias, int M, int N, int relu) {
    const size_t n = (size_t)M * N;
    bias_act_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(y, bias, M, N, relu);
}

void opt_cuda_launch_len_add(cudaStream_t st, int *d_len, int T) { len_add_kernel<<<1, 1, 0, st>>>(d_len, T); }

void opt_cuda_launch_len_set(cudaStream_t st, int *d_len, int v) { len_set_kernel<<<1, 1, 0, st>>>(d_len, v); }

void opt_cuda_launch_kv_copy_row(cudaStream_t st, char *dk, char *dv, const char *sk, const char *sv, int L, int H,
                                 int dB, int db, int dSmax, int sB, int sb, int sSmax, size_t row_bytes_per_token,
                                 int S) {
    kv_copy_row_kernel<<<L * H, 256, 0, st>>>(dk, dv, sk, sv, L, H, dB, db, dSmax, sB, sb, sSmax, row_bytes_per_token,
                                             S);
}
