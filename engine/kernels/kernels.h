/* kernels.h: the engine's CPU kernels, in three variants chosen at run
 * time from the CPU's features (highest score that the CPU supports wins):
 *   portable C (always), AVX2 + F16C + FMA, AVX-512F (+ AVX512-BF16 dot
 *   products when present); the `kernels` backend setting can force a
 *   lower one (eng_kernels_for).
 * Activations are fp32; weights are fp32, fp16, bf16 or int8 with a scale
 * per row, the KV cache fp32, fp16 or bf16; accumulation is always fp32. Every SIMD variant is tested against the
 * portable one (tests/opt/test_kernels.c).
 */
#ifndef ENG_KERNELS_H
#define ENG_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h" /* bc_status, bc_error */
#include "float_bits.h"      /* plugins/precision/common: prec_f32_to_f16 and the other bit rules */

typedef enum eng_dtype { ENG_F32 = 0, ENG_F16 = 1, ENG_BF16 = 2, ENG_I8 = 3, ENG_W8A8 = 4 } eng_dtype;

/* Bytes per element (ENG_I8, ENG_W8A8: the int8 values only, see below). */
static inline size_t eng_dtype_size(eng_dtype t) { return t == ENG_F32 ? 4 : t >= ENG_I8 ? 1 : 2; }
const char *eng_dtype_name(eng_dtype t); /* "float32", "float16", "bfloat16", "int8", "w8a8" */

/* An ENG_I8 matrix w[N, K] is one block: N * K int8 values q[N, K]
 * row-major, then, at byte offset eng_i8_scales_offset(N, K), N fp32 scales,
 * one per row (output channel): w[n, k] = scale[n] * q[n, k]. Weights only:
 * the KV cache of an int8 model is fp32 (eng_kv_dtype). */
static inline size_t eng_i8_scales_offset(size_t N, size_t K) { return (N * K + 63) & ~(size_t)63; }
static inline const float *eng_i8_scales(const void *w, size_t N, size_t K)
{
    return (const float *)(const void *)((const char *)w + eng_i8_scales_offset(N, K));
}
/* An ENG_W8A8 matrix w[N, K] holds the same int8 values q[N, K] and
 * per-row scales as ENG_I8 (the same quantiser), packed at load for
 * vpdpbusd (kernels_vnni.h has the layout and the arithmetic): panels of 16
 * rows, each Kq = ceil(K / 4) quads of 4 k-values per 32-bit lane, then the
 * N fp32 scales, then N int32 corrections 128 * sum_k q[n, k]. */
static inline size_t eng_w8a8_quads(size_t K) { return (K + 3) / 4; }
static inline size_t eng_w8a8_panels(size_t N) { return (N + 15) / 16; }
static inline size_t eng_w8a8_scales_offset(size_t N, size_t K) { return eng_w8a8_panels(N) * eng_w8a8_quads(K) * 64; }
static inline const float *eng_w8a8_scales(const void *w, size_t N, size_t K)
{
    return (const float *)(const void *)((const char *)w + eng_w8a8_scales_offset(N, K));
}
static inline const int32_t *eng_w8a8_corrections(const void *w, size_t N, size_t K)
{
    return (const int32_t *)(const void *)((const char *)w + eng_w8a8_scales_offset(N, K) + N * sizeof(float));
}
/* Bytes of a matrix [N, K] in t, scales (and corrections) included. */
static inline size_t eng_matrix_bytes(eng_dtype t, size_t N, size_t K)
{
    return t == ENG_I8     ? eng_i8_scales_offset(N, K) + N * sizeof(float)
           : t == ENG_W8A8 ? eng_w8a8_scales_offset(N, K) + N * (sizeof(float) + sizeof(int32_t))
                           : N * K * eng_dtype_size(t);
}
/* Is t one of the int8 weight formats (ENG_I8, ENG_W8A8)? */
static inline int eng_dtype_is_int8(eng_dtype t) { return t == ENG_I8 || t == ENG_W8A8; }
/* The KV cache's dtype for weights in t: t, except fp32 for int8 weights. */
static inline eng_dtype eng_kv_dtype(eng_dtype t) { return eng_dtype_is_int8(t) ? ENG_F32 : t; }

/* A kernel family, named after the instruction-set tier it needs
 * (plugins/precision/common/cpu_isa.h, same values). */
typedef enum eng_isa { ENG_ISA_PORTABLE = 0, ENG_ISA_AVX2 = 1, ENG_ISA_AVX512 = 2, ENG_ISA_AVX512_BF16 = 3 } eng_isa;

/* The best ISA this CPU supports (cpuid + xgetbv). */
eng_isa eng_isa_detect(void);
/* "portable", "avx2", "avx512", "avx512_bf16" */
const char *eng_isa_name(eng_isa isa);
/* The family the `kernels` setting value name asks for, on a CPU whose best
 * family is cpu (eng_isa_detect(), or another for a test): *isa = -1 for
 * "auto" (or "" / NULL), else the family's eng_isa. Refused, naming the
 * family and the CPU's best: an unknown name (BC_ERR_SETTING), a family
 * above cpu or one this build has no table for (BC_ERR_UNSUPPORTED). */
bc_status eng_kernels_choose(const char *name, eng_isa cpu, int *isa, bc_error *err);

/* A table of kernels for one ISA. Shapes in names: x[M, K] row-major fp32,
 * w[N, K] row-major in dtype, y[M, N] fp32. */
typedef struct eng_kernels {
    eng_isa isa;
    /* y[m, n] = sum_k x[m, k] * w[n, k] + (bias ? bias[n] : 0), then ReLU when
     * relu != 0. Computes only rows n in [n0, n1) (threads split N). For
     * ENG_I8, w is the block above and the sum is scale[n] * sum_k x q; for
     * ENG_W8A8 every row of x is quantised to int8 and the dot products are
     * integer ones (kernels_vnni.h: the VNNI kernel of the family's tier
     * where the CPU has it, else the plain-C reference). */
    void (*linear)(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K, int N,
                   int n0, int n1, int relu);
    /* dot, axpy, to_f32, from_f32 and attend take fp32, fp16 or bf16; to_f32
     * and from_f32 also ENG_I8 / ENG_W8A8 elements alone (no scale). */
    /* Dot product of fp32 a[n] with b[n] in dtype. */
    float (*dot)(const float *a, const void *b, eng_dtype bt, int n);
    /* y[n] += alpha * x[n], x in dtype. */
    void (*axpy)(float *y, float alpha, const void *x, eng_dtype xt, int n);
    /* Conversions of n values. */
    void (*to_f32)(float *dst, const void *src, eng_dtype st, size_t n);
    void (*from_f32)(void *dst, eng_dtype dt, const float *src, size_t n);
    /* Attention of one query against the S keys of one head (the model calls
     * it, attend_split or attend_group once per (row or group, head, query)):
     *   out[D] = sum_s p_s * v[s, :],   p = softmax_s(q . k[s, :]) in fp32
     * over the keys with keep[s] != 0 (keep NULL: all); a dropped key has
     * p_s = 0 and its K and V rows are not used. When no key is kept (a pad
     * query), p is uniform over all S keys. q[D] fp32 (already scaled),
     * k[S, D] and v[S, D] row-major in dt, scores[S] fp32 scratch. */
    void (*attend)(float *out, const float *q, const void *k, const void *v, eng_dtype dt, const uint8_t *keep, int S,
                   int D, float *scores);
    /* attend with the keys in two places (shared-prefix decode): keys
     * s < np are rows s of kp and vp (a prompt's KV rows, shared by its
     * samples), keys s >= np rows s of k and v (both indexed from key 0).
     * np = 0 is attend. Computes what attend over the joined rows does
     * (tests/opt/test_kernels.c compares the two). */
    void (*attend_split)(float *out, const float *q, const void *kp, const void *vp, int np, const void *k,
                         const void *v, eng_dtype dt, const uint8_t *keep, int S, int D, float *scores);
    /* attend_split for the G queries (1 <= G <= ENG_ATTEND_GROUP_MAX) of a
     * shared-prefix group's rows at one head and position, which share the
     * np prefix keys kp/vp and S: query g is q + g * ldq, its own K and V
     * rows (keys s >= np) are at byte offset g * ld_kv from k and v, its keep
     * row keep + g * ld_keep (keep NULL: all kept), its output out + g * ldo,
     * scores[G * S] scratch. Computes what attend_split does for each query
     * (tests/opt/test_kernels.c compares them); reads each prefix K and V
     * row once for the G queries rather than once per query. */
    void (*attend_group)(float *out, size_t ldo, const float *q, size_t ldq, int G, const void *kp, const void *vp,
                         int np, const void *k, const void *v, size_t ld_kv, eng_dtype dt, const uint8_t *keep,
                         size_t ld_keep, int S, int D, float *scores);
} eng_kernels;

/* The most queries one attend_group call takes. */
enum { ENG_ATTEND_GROUP_MAX = 8 };

/* The kernel table for isa (must be <= eng_isa_detect()), or NULL. */
const eng_kernels *eng_kernels_for(eng_isa isa);
/* The family `kernels = "auto"` runs on a CPU whose best family is cpu:
 * cpu, except avx512 instead of avx512_bf16 when the CPU's vdpbf16ps does
 * fewer flops per second than its fp32 FMAs (dpbf16_over_fma < 1: bf16
 * weights then run faster converted to fp32 in registers). */
eng_isa eng_kernels_auto_isa(eng_isa cpu, double dpbf16_over_fma);
/* The table `kernels = "auto"` runs (never NULL): eng_kernels_auto_isa of
 * this CPU, the dpbf16 ratio measured once (about 1 ms) on first call. */
const eng_kernels *eng_kernels_best(void);

/* A fixed pool of worker threads. eng_pool_run calls fn(ctx, i, n) once for
 * every i in [0, n), n = the active count (n_threads unless
 * eng_pool_set_active lowered it), on the pool's threads (the caller is one
 * of them) and returns when all are done. i is a unit of work, not a thread
 * identity: the caller runs i = 0 and may also run an index whose worker is
 * not scheduled yet; no index runs twice. n == 1 runs inline (n_threads == 1
 * creates no threads). eng_pool_size is n_threads (what per-thread scratch is
 * sized for); eng_pool_active the n of the next run. */
typedef struct eng_pool eng_pool;
eng_pool *eng_pool_create(int n_threads);
int eng_pool_size(const eng_pool *p);
int eng_pool_active(const eng_pool *p);
/* Runs use n of the pool's threads from now on (n outside [1, n_threads]:
 * all of them); returns the count before. Called by the thread that calls
 * eng_pool_run, between runs. NULL pool: 1. */
int eng_pool_set_active(eng_pool *p, int n);
void eng_pool_run(eng_pool *p, void (*fn)(void *ctx, int i, int n), void *ctx);
void eng_pool_destroy(eng_pool *p);
/* The online CPUs (at least 1): what `threads = 0` measures from
 * (docs/engine.md). */
int eng_online_cores(void);
/* The physical cores among the online CPUs, from sysfs's
 * thread_siblings_list (a core counted at its first sibling); the online
 * CPUs where sysfs has no topology. */
int eng_physical_cores(void);

/* y = x w^T + b over a pool: splits N into per-thread blocks aligned to 64
 * bytes of output, so no two threads write the same cache line. */
void eng_linear_parallel(eng_pool *pool, const eng_kernels *k, float *y, const float *x, const void *w, eng_dtype wt,
                         const float *bias, int M, int K, int N, int relu);

#endif
