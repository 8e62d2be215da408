/* cuda_sampling.cu: one sampling step of every row on the device (see
 * opt_cuda_sample in cuda_forward.h), as ../sampling.c and the CPU device's
 * sampling step (../device_cpu.c) do it, with no logits copied to the host.
 *
 * One block of SAMPLE_THREADS per row r:
 *   finished row (stop_at_eos and EOS seen): emit pad_id;
 *   EOS suppressed (logit -inf) unless stop_at_eos;
 *   greedy: argmax, first maximum (as the CPU);
 *   else    top-k:  keep logits >= the k-th largest, found exactly by a
 *                   bisection over the order-preserving integer keys of floats;
 *           scaled = logit * (float)(1 / temperature) (of the kept);
 *           softmax over the kept tokens (fp64 sum), probability p;
 *           top-p:  keep p whose mass of strictly larger p is < top_p, the
 *                   threshold found by the same bisection (ties at the
 *                   boundary are all kept; the CPU keeps them in id order);
 *           renormalise, then one uniform u of the row's generator (the CPU's
 *           splitmix64 stream, so the same u as on the CPU) and the token
 *           where the cumulative mass in vocabulary order passes u * total.
 * The drawn token has the CPU's distribution; its value for a given u can
 * differ from the CPU's, which walks the kept tokens in another order.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_reduce.cuh"
#include "cuda_sample_math.h"

#define SAMPLE_THREADS 512

/* (value, index) argmax: larger value, or equal value and lower index. */
__device__ void bargmax(float *v, int *i, float *shv, int *shi) {
    __syncthreads();
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, *v, o);
        int oi = __shfl_xor_sync(0xffffffffu, *i, o);
        if (ov > *v || (ov == *v && oi < *i)) *v = ov, *i = oi;
    }
    if ((threadIdx.x & 31) == 0) shv[threadIdx.x >> 5] = *v, shi[threadIdx.x >> 5] = *i;
    __syncthreads();
    float bv = shv[0];
    int bi = shi[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
        if (shv[w] > bv || (shv[w] == bv && shi[w] < bi)) bv = shv[w], bi = shi[w];
    *v = bv;
    *i = bi;
}

__global__ void __launch_bounds__(SAMPLE_THREADS, 1) sample_kernel(opt_cuda_sample_args a, float inv_t) {
    __shared__ float shf[32];
    __shared__ int shi[32];
    __shared__ double chunk[SAMPLE_THREADS];
    __shared__ int chosen;
    const int r = blockIdx.x, V = a.V, tid = threadIdx.x, nt = blockDim.x;
    const int pos = *a.d_pos;
    float *lg = a.d_logits + (size_t)r * V;
    float *pr = a.d_scratch + (size_t)r * V;
    int32_t tok;
    if (a.d_eos_at[r] >= 0) {
        tok = a.pad_id;
        goto emit;
    }
    if (!a.stop_at_eos && a.eos_id >= 0 && a.eos_id < V && tid == 0) lg[a.eos_id] = -INFINITY;
    __syncthreads();
    if (a.p.temperature == 0.0) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int v = tid; v < V; v += nt)
            if (lg[v] > bv || (lg[v] == bv && v < bi)) bv = lg[v], bi = v;
        bargmax(&bv, &bi, shf, shi);
        tok = bi == 0x7fffffff ? 0 : bi;
        goto emit;
    }
    {
        /* one uniform per sampled step, drawn like eng_sample does */
        __shared__ double u_sh;
        if (tid == 0) u_sh = eng_uniform_from(eng_splitmix_next(&a.d_rng[r]));
        /* the candidates: -inf stays out */
        int n = 0;
        for (int v = tid; v < V; v += nt) {
            float x = lg[v];
            if (isinf(x) && x < 0) continue;
            n++;
        }
        n = block_sum(n);
        if (n == 0) {
            tok = 0;
            goto emit;
        }
        /* top-k on the raw logits, as the CPU (scaling first could round two
         * logits into a tie with the k-th): the k-th largest key, bit by bit */
        float kth = -INFINITY;
        if (a.p.top_k > 0 && a.p.top_k < n) {
            const int k = (int)a.p.top_k;
            unsigned t = 0;
            for (int bit = 31; bit >= 0; bit--) {
                const unsigned cand = t | (1u << bit);
                int c = 0;
                for (int v = tid; v < V; v += nt) c += lg[v] != -INFINITY && eng_fkey(lg[v]) >= cand;
                if (block_sum(c) >= k) t = cand;
            }
            kth = eng_keyf(t);
        }
        /* temperature on the kept; the others leave (-inf) */
        for (int v = tid; v < V; v += nt) lg[v] = lg[v] != -INFINITY && lg[v] >= kth ? lg[v] * inv_t : -INFINITY;
        /* softmax over the kept */
        float mx = -INFINITY;
        for (int v = tid; v < V; v += nt)
            if (lg[v] != -INFINITY) mx = fmaxf(mx, lg[v]);
        mx = block_max(mx);
        double s = 0.0;
        for (int v = tid; v < V; v += nt) {
            float e = (lg[v] != -INFINITY) ? expf(lg[v] - mx) : -1.0f;
            pr[v] = e;
            if (e >= 0.0f) s += e;
        }
        s = block_sum(s);
        for (int v = tid; v < V; v += nt)
            if (pr[v] >= 0.0f) pr[v] = (float)(pr[v] / s);
        /* top-p: the smallest key t with mass(p > t) < top_p; keep p >= t */
        if (a.p.top_p < 1.0) {
            unsigned lo = ENG_KEY_POS_ZERO, hi = ENG_KEY_POS_INF; /* pred(hi) holds: no mass above +inf */
            while (lo < hi) {
                const unsigned mid = lo + (hi - lo) / 2;
                const float th = eng_keyf(mid);
                double mass = 0.0;
                for (int v = tid; v < V; v += nt)
                    if (pr[v] > th) mass += pr[v];
                if (block_sum(mass) < a.p.top_p) hi = mid;
                else lo = mid + 1;
            }
            const float th = eng_keyf(lo);
            for (int v = tid; v < V; v += nt)
                if (pr[v] >= 0.0f && pr[v] < th) pr[v] = -1.0f;
        }
        /* renormalise */
        s = 0.0;
        for (int v = tid; v < V; v += nt)
            if (pr[v] >= 0.0f) s += pr[v];
        s = block_sum(s);
        /* draw: contiguous chunks per thread, an exclusive scan of their sums */
        const int per = (V + nt - 1) / nt, c0 = tid * per, c1 = c0 + per < V ? c0 + per : V;
        double cs = 0.0;
        int last = -1;
        for (int v = c0; v < c1; v++) {
            if (pr[v] < 0.0f) continue;
            pr[v] = (float)(pr[v] / s);
            cs += pr[v];
            last = v;
        }
        chunk[tid] = cs;
        float lv = (float)last;
        int li = 0;
        bargmax(&lv, &li, shf, shi); /* largest kept index, the fallback */
        __syncthreads();
        if (tid == 0) {
            double total = 0.0;
            for (int i = 0; i < nt; i++) {
                double c = chunk[i];
                chunk[i] = total;
                total += c;
            }
            u_sh *= total; /* the target */
            chosen = (int)lv;
        }
        __syncthreads();
        const double target = u_sh;
        double cum = chunk[tid];
        const double next = tid + 1 < nt ? chunk[tid + 1] : INFINITY;
        if (target >= cum && target < next) {
            /* the chunk's sum was taken from 0, this walk from its prefix:
             * rounding may keep cum <= target to the end, then the chunk's
             * last kept token (not the vocabulary's) is the one; a chunk
             * with none (the last thread's, when target rounds to total)
             * leaves the fallback */
            int pick = last;
            for (int v = c0; v < c1; v++) {
                if (pr[v] < 0.0f) continue;
                cum += pr[v];
                if (target < cum) {
                    pick = v;
                    break;
                }
            }
            if (pick >= 0) chosen = pick;
        }
        __syncthreads();
        tok = chosen;
    }
emit:
    if (tid == 0) {
        a.d_seq[(size_t)r * a.stride + pos] = tok;
        a.d_mask[(size_t)r * a.stride + pos] = 1;
        a.d_step_tokens[r] = tok;
        if (a.d_eos_at[r] < 0) {
            atomicAdd((unsigned long long *)&a.d_counters[1], 1ull);
            if (a.stop_at_eos && tok == a.eos_id) a.d_eos_at[r] = pos - a.response_start;
            else atomicAdd((unsigned long long *)&a.d_counters[0], 1ull);
        }
    }
}

bc_status opt_cuda_sample(opt_cuda_device *d, const opt_cuda_sample_args *a, bc_error *err) {
    if (a->R < 1 || a->V < 1)
        return bc_error_set(err, BC_ERR_INVALID, "opt_cuda_sample: R %d, V %d", a->R, a->V);
    if (!(a->p.temperature >= 0.0) || !(a->p.top_p > 0.0 && a->p.top_p <= 1.0) || a->p.top_k < 0)
        return bc_error_set(err, BC_ERR_INVALID, "sampler: temperature %g must be >= 0, top_p %g in (0, 1], top_k %lld >= 0",
                            a->p.temperature, a->p.top_p, (long long)a->p.top_k);
    const float inv_t = a->p.temperature > 0.0 ? (float)(1.0 / a->p.temperature) : 0.0f;
    CU_CHECK(cudaMemsetAsync(a->d_counters, 0, sizeof(int64_t), d->stream), "clear the running count");
    sample_kernel<<<a->R, SAMPLE_THREADS, 0, d->stream>>>(*a, inv_t);
    CU_CHECK(cudaGetLastError(), "sample_kernel");
    return BC_OK;
}
