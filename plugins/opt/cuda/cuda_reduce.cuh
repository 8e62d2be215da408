/* cuda_reduce.cuh: the warp- and block-wide reductions the device kernels
 * share (cuda_kernels.cu, cuda_sampling.cu). blockDim.x must be a multiple
 * of 32, at most 1024; every thread gets the result. CUDA only. */
#ifndef OPT_CUDA_REDUCE_CUH
#define OPT_CUDA_REDUCE_CUH

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over the block. */
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

/* Maximum over the block. */
template <typename T> __device__ T block_max(T v) {
    __shared__ T sh[32];
    __syncthreads();
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T t = sh[0];
    for (int i = 1; i < nw; i++) t = fmaxf(t, sh[i]);
    return t;
}

#endif
