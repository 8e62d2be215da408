/* cuda_kernels.h: the OPT forward's device kernels, launched on a stream in
 * the run's dtype (cuda_kernels.cu; shapes in the legend of ../model.h). The
 * launches only queue work: nothing is checked or synchronised, so they can
 * be captured in a graph. CUDA/C++ only, internal to plugins/opt/cuda. */
#ifndef OPT_CUDA_KERNELS_H
#define OPT_CUDA_KERNELS_H

#include <cuda_runtime.h>

extern "C" {
#include "forward.h"
#include "opt_model.h"
}

/* Embeddings of N = B T tokens (positions from the mask and *d_len):
 * mode 0 (P == C): x[N, C] = tok + pos; 1: embh[N, P] = tok; 2: x += pos. */
void opt_cuda_launch_embed(eng_dtype dt, cudaStream_t st, float *x, void *embh, const int32_t *tok,
                           const uint8_t *mask, int stride, const int *d_len, int N, int T, const void *te,
                           const void *pe, int C, int P, int mode);
/* Rows n < rows of x (row n * row_mul + row_add): x += y (y != NULL), layer
 * norm with gamma/beta (gamma != NULL; into x too when to_x), out[n] in dt. */
void opt_cuda_launch_residual_ln(eng_dtype dt, cudaStream_t st, int rows, float *x, const float *y, const float *g,
                                 const float *bt, void *out, int C, int row_mul, int row_add, int to_x);
/* New keys and values [B, T, C] (rows ld apart) into a layer's cache at *d_len. */
void opt_cuda_launch_kv_store(eng_dtype dt, cudaStream_t st, void *kc, void *vc, const float *kk, const float *vv,
                              int ld, const int *d_len, int B, int T, int H, int D, int Smax);
/* att[B, T, C] from q and a layer's cache; knew/vnew (decode, T == 1): the
 * step's key and value, stored by the kernel itself. */
void opt_cuda_launch_attention(eng_dtype dt, cudaStream_t st, void *att, const float *q, int ldq, void *kc, void *vc,
                               const float *knew, const float *vnew, const uint8_t *mask, int stride,
                               const int *d_len, int B, int T, int H, int D, int Smax);
/* dst[n] = dt(src[n]). */
void opt_cuda_launch_convert(eng_dtype dt, cudaStream_t st, void *dst, const float *src, size_t n);
/* y[M, N] += bias[N], then ReLU when relu (fp32). */
void opt_cuda_launch_bias_act(cudaStream_t st, float *y, const float *bias, int M, int N, int relu);
/* *d_len += T; *d_len = v. */
void opt_cuda_launch_len_add(cudaStream_t st, int *d_len, int T);
void opt_cuda_launch_len_set(cudaStream_t st, int *d_len, int v);
/* S tokens of every (layer, head) of src row sb into dst row db. */
void opt_cuda_launch_kv_copy_row(cudaStream_t st, char *dk, char *dv, const char *sk, const char *sv, int L, int H,
                                 int dB, int db, int dSmax, int sB, int sb, int sSmax, size_t row_bytes_per_token,
                                 int S);

#endif
