/* kernels_avx2.c: the AVX2 + FMA + F16C variant of the engine's kernels (built
 * with -mavx2 -mfma -mf16c; selected only when cpuid says the CPU has them
 * and it has no AVX-512).
 *
 * Same structure as kernels_avx512.c, 8 floats per vector: linear has a
 * direct path (weights streamed once, register tile of up to 4 rows of x by
 * 3 rows of w: 12 ymm accumulators + 3 weight vectors + 1 x vector = the 16
 * ymm registers; at M = 1 a 1-row tile of 4 weight rows with two
 * accumulators each, bf16 weights in pairs) and a cache-blocked path for large M (a panel of NB x KB
 * weights converted to fp32 once, then reused by every row of x). Every dot
 * product is reduced with the same tree whatever the tile's shape.
 * K tails: fp32 through _mm256_maskload_ps, fp16/bf16 through a zero-padded
 * copy of the last < 8 values.
 */
#include "kernels_impl.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

enum {
    DIRECT_MAX_XK = 65536, /* M * K floats of x (256 KiB) the direct path rereads per weight group */
    NB = 60,               /* blocked path: rows of w per panel (a multiple of the tile's 3) */
    KB = 256,              /* blocked path: columns per panel (NB * KB * 4 = 60 KiB) */
    TR = 3,                /* rows of w per register tile */
};

ALWAYS_INLINE __m256 load8(const void *p, eng_dtype dt, size_t off)
{
    if (dt == ENG_F32)
        return _mm256_loadu_ps((const float *)p + off);
    if (dt == ENG_I8)
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + off))));
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + off));
    return dt == ENG_F16 ? _mm256_cvtph_ps(h) : prec_bf16x8_to_ps(h);
}

/* mask with the first n (0..8) lanes set */
ALWAYS_INLINE __m256i lane_mask(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first n (< 8) values at p + off as fp32, the other lanes 0; reads only
 * those n values. */
ALWAYS_INLINE __m256 load8_part(const void *p, eng_dtype dt, size_t off, int n)
{
    if (dt == ENG_F32)
        return _mm256_maskload_ps((const float *)p + off, lane_mask(n));
    _Alignas(32) unsigned char tmp[16] = {0};
    const size_t es = eng_dtype_size(dt);
    memcpy(tmp, (const char *)p + off * es, (size_t)n * es);
    return load8(tmp, dt, 0);
}

/* [sum a, sum b, sum c, sum d], each with the same tree whatever the others. */
ALWAYS_INLINE __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* out[m][n] = sum_{k < K} x[m * ldx + k] * w[n * ldw + k], m < MR <= 4, n < NR <= 3.
 * When wpf is not NULL, the same rows and columns of wpf (the next group of
 * weight rows) are prefetched. */
ALWAYS_INLINE void tile(int MR, int NR, eng_dtype dt, const float *x, size_t ldx, const void *w, size_t ldw, int K,
                        const void *wpf, float out[4][4])
{
    const size_t es = eng_dtype_size(dt);
    __m256 acc[4][TR];
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
#pragma GCC unroll 4
        for (int n = 0; n < TR; n++)
            acc[m][n] = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[TR];
        if (wpf && (((size_t)k * es) & 63) == 0) /* one prefetch per 64-byte line */
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                _mm_prefetch((const char *)wpf + (n * ldw + (size_t)k) * es, _MM_HINT_T0);
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
            wv[n] = load8(w, dt, n * ldw + (size_t)k);
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            __m256 xv = _mm256_loadu_ps(x + m * ldx + k);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);
        }
    }
    if (k < K) {
        __m256 wv[TR];
        __m256i mask = lane_mask(K - k);
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
            wv[n] = load8_part(w, dt, n * ldw + (size_t)k, K - k);
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            __m256 xv = _mm256_maskload_ps(x + m * ldx + k, mask);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);
        }
    }
    __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
        _mm_storeu_ps(out[m], reduce4(acc[m][0], NR > 1 ? acc[m][1] : zero, NR > 2 ? acc[m][2] : zero, zero));
}

typedef void (*tile_fn)(const float *x, size_t ldx, const void *w, size_t ldw, int K, const void *wpf,
                        float out[4][4]);

#define TILE_FN(MR, NR, DT, NAME)                                                                                      \
    static void tile_##NAME##_##MR##_##NR(const float *x, size_t ldx, const void *w, size_t ldw, int K,              \
                                          const void *wpf, float out[4][4])                                            \
    {                                                                                                                  \
        tile(MR, NR, DT, x, ldx, w, ldw, K, wpf, out);                                                                 \
    }
#define TILE_ROW(MR, DT, NAME) TILE_FN(MR, 1, DT, NAME) TILE_FN(MR, 2, DT, NAME) TILE_FN(MR, 3, DT, NAME)
#define TILE_ALL(DT, NAME) TILE_ROW(1, DT, NAME) TILE_ROW(2, DT, NAME) TILE_ROW(3, DT, NAME) TILE_ROW(4, DT, NAME)
TILE_ALL(ENG_F32, f32)
TILE_ALL(ENG_F16, f16)
TILE_ALL(ENG_BF16, bf16)
TILE_ALL(ENG_I8, i8)

#define TILE_PTRS_ROW(NAME, MR) {tile_##NAME##_##MR##_1, tile_##NAME##_##MR##_2, tile_##NAME##_##MR##_3}
#define TILE_PTRS(NAME) {TILE_PTRS_ROW(NAME, 1), TILE_PTRS_ROW(NAME, 2), TILE_PTRS_ROW(NAME, 3), TILE_PTRS_ROW(NAME, 4)}
/* tiles[dtype][MR - 1][NR - 1] */
static const tile_fn tiles[4][4][TR] = {TILE_PTRS(f32), TILE_PTRS(f16), TILE_PTRS(bf16), TILE_PTRS(i8)};

/* ---- the 1-row tile (M = 1: the B = 1 decode step) ------------------------ */

/* Weights w[off .. off + 16) of one row as two fp32 vectors: bf16 in pairs
 * (*wa the even columns, *wb the odd ones, from one load), the other dtypes
 * as columns [off, off + 8) and [off + 8, off + 16). */
ALWAYS_INLINE void row_load16(const void *w, eng_dtype dt, size_t off, __m256 *wa, __m256 *wb)
{
    if (dt == ENG_BF16) {
        prec_bf16x16_pairs_to_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + off)), wa, wb);
        return;
    }
    *wa = load8(w, dt, off);
    *wb = load8(w, dt, off + 8);
}

/* The same for the last n (1..15) columns, zero beyond them; reads only those. */
ALWAYS_INLINE void row_load16_part(const void *w, eng_dtype dt, size_t off, int n, __m256 *wa, __m256 *wb)
{
    if (dt == ENG_BF16) {
        _Alignas(32) uint16_t tmp[16] = {0};
        memcpy(tmp, (const uint16_t *)w + off, (size_t)n * sizeof(uint16_t));
        prec_bf16x16_pairs_to_ps(_mm256_load_si256((const __m256i *)tmp), wa, wb);
        return;
    }
    *wa = load8_part(w, dt, off, n < 8 ? n : 8);
    *wb = n > 8 ? load8_part(w, dt, off + 8, n - 8) : _mm256_setzero_ps();
}

/* acc[n][0] += x[k, k + 8) * wa, acc[n][1] += x[k + 8, k + 16) * wb, n < NR,
 * with (row_load16) the weights of columns [k, k + 16) of row n. */
ALWAYS_INLINE void row_step(int NR, eng_dtype dt, const float *x, const void *w, size_t ldw, size_t k,
                            __m256 acc[][2])
{
    const __m256 xa = _mm256_loadu_ps(x + k), xb = _mm256_loadu_ps(x + k + 8);
#pragma GCC unroll 4
    for (int n = 0; n < NR; n++) {
        __m256 wa, wb;
        row_load16(w, dt, n * ldw + k, &wa, &wb);
        acc[n][0] = _mm256_fmadd_ps(xa, wa, acc[n][0]);
        acc[n][1] = _mm256_fmadd_ps(xb, wb, acc[n][1]);
    }
}

/* out[0][n] = sum_{k < K} x[k] * w[n * ldw + k] for n < NR <= ENG_ROW_NR: one row
 * of x, two accumulators per weight row (8 independent FMA chains for 4 rows,
 * where the 4 x 3 tile keeps 3 at M = 1), added together and then reduced
 * with reduce4's tree, whatever NR. Per 16 columns, the first accumulator
 * takes columns 0..7 and the second 8..15; with bf16 weights the even
 * columns and the odd ones (prec_bf16x16_pairs_to_ps: a shift and a mask per
 * 16 weights instead of a zero-extension and a shift per 8), and x is then
 * x_in_pairs()'s copy (even columns, then odd ones, per 16, zero-padded
 * to a multiple of 16). The same rows and columns of near (into L1) and far
 * (into L2) are prefetched: w plus the two prefetch distances (see
 * linear_direct), or NULL for none. */
ALWAYS_INLINE void row_tile(int NR, eng_dtype dt, const float *x, const void *w, size_t ldw, int K, const void *near,
                            const void *far, float out[ENG_ROW_NR])
{
    const size_t es = eng_dtype_size(dt);
    __m256 acc[ENG_ROW_NR][2];
#pragma GCC unroll 4
    for (int n = 0; n < ENG_ROW_NR; n++)
        acc[n][0] = acc[n][1] = _mm256_setzero_ps();
    /* at least 64 bytes of each weight row per iteration: two prefetches per
     * line of each row (with no near or far, of w itself, already in cache),
     * then the steps of 16 columns without the bookkeeping */
    const int kstep = (int)(64 / es) > 16 ? (int)(64 / es) : 16;
    const char *pn = near ? (const char *)near : (const char *)w, *pfar = far ? (const char *)far : (const char *)w;
    int k = 0;
    for (; k + kstep <= K; k += kstep) {
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
#pragma GCC unroll 2
            for (size_t b = 0; b < (size_t)kstep * es; b += 64)
            {
                _mm_prefetch(pn + (n * ldw + (size_t)k) * es + b, _MM_HINT_T0);
                _mm_prefetch(pfar + (n * ldw + (size_t)k) * es + b, _MM_HINT_T1);
            }
#pragma GCC unroll 4
        for (int s = 0; s < kstep; s += 16)
            row_step(NR, dt, x, w, ldw, (size_t)(k + s), acc);
    }
    for (; k + 16 <= K; k += 16)
        row_step(NR, dt, x, w, ldw, (size_t)k, acc);
    if (k < K) {
        const int r = K - k;
        __m256 xa, xb;
        if (dt == ENG_BF16) { /* the copy is zero-padded */
            xa = _mm256_loadu_ps(x + k);
            xb = _mm256_loadu_ps(x + k + 8);
        } else {
            xa = _mm256_maskload_ps(x + k, lane_mask(r < 8 ? r : 8));
            xb = r > 8 ? _mm256_maskload_ps(x + k + 8, lane_mask(r - 8)) : _mm256_setzero_ps();
        }
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++) {
            __m256 wa, wb;
            row_load16_part(w, dt, n * ldw + (size_t)k, r, &wa, &wb);
            acc[n][0] = _mm256_fmadd_ps(xa, wa, acc[n][0]);
            acc[n][1] = _mm256_fmadd_ps(xb, wb, acc[n][1]);
        }
    }
    _mm_storeu_ps(out, reduce4(_mm256_add_ps(acc[0][0], acc[0][1]), _mm256_add_ps(acc[1][0], acc[1][1]),
                                  _mm256_add_ps(acc[2][0], acc[2][1]), _mm256_add_ps(acc[3][0], acc[3][1])));
}

/* The n (0..16) floats at x, zero past them, in pair order: *even = x[2 j],
 * *odd = x[2 j + 1], j < 8. */
ALWAYS_INLINE void ps_to_pairs(const float *x, int n, __m256 *even, __m256 *odd)
{
    const __m256 a = n < 8 ? _mm256_maskload_ps(x, lane_mask(n)) : _mm256_loadu_ps(x);
    const __m256 b = n <= 8   ? _mm256_setzero_ps()
                     : n < 16 ? _mm256_maskload_ps(x + 8, lane_mask(n - 8))
                              : _mm256_loadu_ps(x + 8);
    /* per 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6, then the middle 64-bit quarters swapped */
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The inverse of ps_to_pairs: x[2 j] = even[j], x[2 j + 1] = odd[j], only
 * for the first n (0..16) of x. */
ALWAYS_INLINE void pairs_to_ps(float *x, int n, __m256 even, __m256 odd)
{
    /* per 128-bit half: e0 o0 e1 o1 | e4 o4 e5 o5 and e2 o2 e3 o3 | e6 o6 e7 o7 */
    const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
    const __m256 a = _mm256_permute2f128_ps(lo, hi, 0x20), b = _mm256_permute2f128_ps(lo, hi, 0x31);
    if (n >= 16) {
        _mm256_storeu_ps(x, a);
        _mm256_storeu_ps(x + 8, b);
        return;
    }
    _mm256_maskstore_ps(x, lane_mask(n < 8 ? n : 8), a);
    if (n > 8)
        _mm256_maskstore_ps(x + 8, lane_mask(n - 8), b);
}

/* xp = x[0, K) in the order row_tile() pairs with bf16 weights: per 16
 * columns the 8 even ones, then the 8 odd ones (xp[16 c + j] = x[16 c + 2 j],
 * xp[16 c + 8 + j] = x[16 c + 2 j + 1]), zero past K up to K rounded up to 16.
 * Lane j of each half then meets the weight pair (2 j, 2 j + 1) of one load. */
static void x_in_pairs(float *xp, const float *x, int K)
{
    for (int k = 0; k < K; k += 16) {
        __m256 e, o;
        ps_to_pairs(x + k, K - k < 16 ? K - k : 16, &e, &o);
        _mm256_storeu_ps(xp + k, e);
        _mm256_storeu_ps(xp + k + 8, o);
    }
}

ENG_ROW_SPEC(rows, x_in_pairs)
_Static_assert((int)DIRECT_MAX_XK <= (int)ENG_ROW_MAX_K, "eng_linear_row holds every x of the direct path");

static void tile_store(float *y, int N, int m0, int mr, int nc, int nr, float out[4][4], const float *scale,
                       const float *bias, int first, int last, int relu)
{
    for (int i = 0; i < mr; i++) {
        float *yr = y + (size_t)(m0 + i) * N + nc;
        for (int j = 0; j < nr; j++) {
            const float o = scale ? scale[nc + j] * out[i][j] : out[i][j];
            float v = first ? o + (bias ? bias[nc + j] : 0.0f) : yr[j] + o;
            if (last && relu && v < 0.0f)
                v = 0.0f;
            yr[j] = v;
        }
    }
}

/* ---- conversions ---------------------------------------------------------- */

/* Bulk conversions: the AVX2 + F16C converters of plugins/precision/common. */
static void to_f32_avx2(float *dst, const void *src, eng_dtype st, size_t n)
{
    eng_convert_to_f32(prec_converters_avx2(), dst, src, st, n);
}

static void from_f32_avx2(void *dst, eng_dtype dt, const float *src, size_t n)
{
    eng_convert_from_f32(prec_converters_avx2(), dst, dt, src, n);
}

/* ---- dot, axpy --------------------------------------------------------------- */

ALWAYS_INLINE float dot_dt(const float *a, const void *b, eng_dtype dt, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int k = 0;
    for (; k + 32 <= n; k += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), load8(b, dt, (size_t)k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), load8(b, dt, (size_t)k + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 16), load8(b, dt, (size_t)k + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 24), load8(b, dt, (size_t)k + 24), s3);
    }
    for (; k + 8 <= n; k += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), load8(b, dt, (size_t)k), s0);
    if (k < n)
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + k, lane_mask(n - k)), load8_part(b, dt, (size_t)k, n - k), s1);
    __m128 r = reduce4(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)), _mm256_setzero_ps(),
                       _mm256_setzero_ps(), _mm256_setzero_ps());
    return _mm_cvtss_f32(r);
}

static float dot_avx2(const float *a, const void *b, eng_dtype bt, int n)
{
    switch (bt) {
    case ENG_F16: return dot_dt(a, b, ENG_F16, n);
    case ENG_BF16: return dot_dt(a, b, ENG_BF16, n);
    default: return dot_dt(a, b, ENG_F32, n);
    }
}

ALWAYS_INLINE void axpy_dt(float *y, float alpha, const void *x, eng_dtype dt, int n)
{
    __m256 va = _mm256_set1_ps(alpha);
    int k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(y + k, _mm256_fmadd_ps(va, load8(x, dt, (size_t)k), _mm256_loadu_ps(y + k)));
    if (k < n) {
        __m256i mask = lane_mask(n - k);
        _mm256_maskstore_ps(y + k, mask,
                            _mm256_fmadd_ps(va, load8_part(x, dt, (size_t)k, n - k), _mm256_maskload_ps(y + k, mask)));
    }
}

static void axpy_avx2(float *y, float alpha, const void *x, eng_dtype xt, int n)
{
    switch (xt) {
    case ENG_F16: axpy_dt(y, alpha, x, ENG_F16, n); break;
    case ENG_BF16: axpy_dt(y, alpha, x, ENG_BF16, n); break;
    default: axpy_dt(y, alpha, x, ENG_F32, n); break;
    }
}

/* ---- attention ------------------------------------------------------------------ */

/* e^x for x <= 0, 0 below -87 and for -inf: the same reduction and polynomial
 * as the AVX-512 exp_neg512, with 2^n built in the exponent field (n >= -126). */
ALWAYS_INLINE __m256 exp_neg256(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.0f);
    __m256 keep = _mm256_cmp_ps(x, lo, _CMP_GE_OQ);
    x = _mm256_max_ps(x, lo);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(keep, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* Fused attention (see kernels.h): scores four keys at a time with SIMD over
 * D, the softmax eight scores per vector, then the weighted V sum with the
 * output held in registers, 64 columns of D at a time; a shared-prefix group's
 * queries go through eng_attend_group_run (kernels_attend.c) over these parts. */
/* sc[s] = q . k[s, :] for keys s in [s0, s1) (k indexed from key 0), with the
 * same rows of v prefetched, so the V sum after the softmax finds them in
 * cache (the K and V streams are read from memory together). */
ALWAYS_INLINE void score_keys(float *sc, const float *q, const void *k, const void *v, eng_dtype dt, int s0, int s1,
                              int D)
{
    const int Dv = D / 8 * 8;
    const size_t es = eng_dtype_size(dt);
    int s = s0;
    for (; s + 4 <= s1; s += 4) {
        const size_t r0 = (size_t)s * D;
        eng_prefetch_l1((const char *)v + r0 * es, 4 * (size_t)D * es);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int d = 0;
        for (; d < Dv; d += 8) {
            __m256 qv = _mm256_loadu_ps(q + d);
            a0 = _mm256_fmadd_ps(qv, load8(k, dt, r0 + d), a0);
            a1 = _mm256_fmadd_ps(qv, load8(k, dt, r0 + (size_t)D + d), a1);
            a2 = _mm256_fmadd_ps(qv, load8(k, dt, r0 + 2 * (size_t)D + d), a2);
            a3 = _mm256_fmadd_ps(qv, load8(k, dt, r0 + 3 * (size_t)D + d), a3);
        }
        if (d < D) {
            __m256 qv = _mm256_maskload_ps(q + d, lane_mask(D - d));
            a0 = _mm256_fmadd_ps(qv, load8_part(k, dt, r0 + d, D - d), a0);
            a1 = _mm256_fmadd_ps(qv, load8_part(k, dt, r0 + (size_t)D + d, D - d), a1);
            a2 = _mm256_fmadd_ps(qv, load8_part(k, dt, r0 + 2 * (size_t)D + d, D - d), a2);
            a3 = _mm256_fmadd_ps(qv, load8_part(k, dt, r0 + 3 * (size_t)D + d, D - d), a3);
        }
        _mm_storeu_ps(sc + s, reduce4(a0, a1, a2, a3));
    }
    for (; s < s1; s++)
        sc[s] = dot_dt(q, (const char *)k + (size_t)s * D * es, dt, D);
}

/* ---- bf16 K and V in pairs ------------------------------------------------
 * As in the AVX-512 variant, for one query's keys (score, vsum): a bf16 KV
 * cache (D <= ENG_ATTEND_PAIRS_MAX_D for the scores) is read 16 values a
 * load, split by prec_bf16x16_pairs_to_ps (row_load16) into its even and odd
 * columns; the scores take q in x_in_pairs's order, an even and an odd
 * accumulator per key, added before the reduction; the V sums keep their
 * outputs in pair order across the keys and put them back in order once
 * (pairs_to_ps), so each output is the same fp32 chain as vsum_keys's. The
 * group parts widen one vector at a time: there pairs measured no faster
 * (four queries by two keys in pairs would take 16 accumulators). */

/* The 16 bf16 values at p in pairs (only the first n, 0..16, read; zero past them). */
ALWAYS_INLINE void load_bf16x16_pairs(const uint16_t *p, int n, __m256 *even, __m256 *odd)
{
    if (n >= 16)
        row_load16(p, ENG_BF16, 0, even, odd);
    else
        row_load16_part(p, ENG_BF16, 0, n, even, odd);
}

/* score_keys for bf16 keys with qp = q in pairs (x_in_pairs, zero-padded to
 * a multiple of 16). */
static void score_keys_pairs(float *sc, const float *qp, const uint16_t *k, const uint16_t *v, int s0, int s1, int D)
{
    int s = s0;
    for (; s + 4 <= s1; s += 4) {
        const size_t r0 = (size_t)s * D;
        eng_prefetch_l1(v + r0, 4 * (size_t)D * 2);
        __m256 ae[4], ao[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            ae[j] = ao[j] = _mm256_setzero_ps();
        for (int d = 0; d < D; d += 16) {
            const __m256 qe = _mm256_loadu_ps(qp + d), qo = _mm256_loadu_ps(qp + d + 8);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256 e, o;
                load_bf16x16_pairs(k + r0 + (size_t)j * D + d, D - d, &e, &o);
                ae[j] = _mm256_fmadd_ps(qe, e, ae[j]);
                ao[j] = _mm256_fmadd_ps(qo, o, ao[j]);
            }
        }
        _mm_storeu_ps(sc + s, reduce4(_mm256_add_ps(ae[0], ao[0]), _mm256_add_ps(ae[1], ao[1]),
                                      _mm256_add_ps(ae[2], ao[2]), _mm256_add_ps(ae[3], ao[3])));
    }
    for (; s < s1; s++) {
        __m256 ae = _mm256_setzero_ps(), ao = ae;
        for (int d = 0; d < D; d += 16) {
            __m256 e, o;
            load_bf16x16_pairs(k + (size_t)s * D + d, D - d, &e, &o);
            ae = _mm256_fmadd_ps(_mm256_loadu_ps(qp + d), e, ae);
            ao = _mm256_fmadd_ps(_mm256_loadu_ps(qp + d + 8), o, ao);
        }
        const __m256 a = _mm256_add_ps(ae, ao);
        sc[s] = _mm_cvtss_f32(reduce4(a, a, a, a)); /* the tree of the four-key blocks */
    }
}

/* vsum_keys for bf16 values: 64 columns at a time in pair order (eight
 * registers), then the columns left 16 at a time (the last one partial). */
static void vsum_keys_pairs(float *out, const float *sc, float inv, const uint16_t *v, int s0, int s1, int D,
                            int first)
{
    int d0 = 0;
    for (; d0 + 64 <= D; d0 += 64) {
        __m256 oe[4], oo[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            oe[i] = oo[i] = _mm256_setzero_ps();
            if (!first)
                ps_to_pairs(out + d0 + 16 * i, 16, &oe[i], &oo[i]);
        }
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m256 p = _mm256_set1_ps(sc[s] * inv);
            const uint16_t *r = v + (size_t)s * D + d0;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                __m256 e, o;
                row_load16(r + 16 * i, ENG_BF16, 0, &e, &o);
                oe[i] = _mm256_fmadd_ps(p, e, oe[i]);
                oo[i] = _mm256_fmadd_ps(p, o, oo[i]);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            pairs_to_ps(out + d0 + 16 * i, 16, oe[i], oo[i]);
    }
    for (; d0 < D; d0 += 16) {
        const int n = D - d0 < 16 ? D - d0 : 16;
        __m256 oe = _mm256_setzero_ps(), oo = oe;
        if (!first)
            ps_to_pairs(out + d0, n, &oe, &oo);
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m256 p = _mm256_set1_ps(sc[s] * inv);
            __m256 e, o;
            load_bf16x16_pairs(v + (size_t)s * D + d0, n, &e, &o);
            oe = _mm256_fmadd_ps(p, e, oe);
            oo = _mm256_fmadd_ps(p, o, oo);
        }
        pairs_to_ps(out + d0, n, oe, oo);
    }
}

static void score_avx2(float *sc, const float *q, const void *k, const void *v, eng_dtype dt, int s0, int s1, int D)
{
    switch (dt) {
    case ENG_F16: score_keys(sc, q, k, v, ENG_F16, s0, s1, D); break;
    case ENG_BF16:
        if (D <= ENG_ATTEND_PAIRS_MAX_D) {
            _Alignas(32) float qp[ENG_ATTEND_PAIRS_MAX_D];
            x_in_pairs(qp, q, D);
            score_keys_pairs(sc, qp, k, v, s0, s1, D);
        } else
            score_keys(sc, q, k, v, ENG_BF16, s0, s1, D);
        break;
    default: score_keys(sc, q, k, v, ENG_F32, s0, s1, D); break;
    }
}

/* The softmax part (kernels_impl.h, eng_attend_parts): the mask and the max
 * eight scores per vector. */
static float softmax_avx2(float *sc, const uint8_t *keep, int S)
{
    int s;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 m = ninf;
    for (s = 0; s + 8 <= S; s += 8) { /* masked keys to -inf (8 keep bytes at a time), the max of the rest */
        __m256 x = _mm256_loadu_ps(sc + s);
        if (keep) {
            const __m256i k = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(keep + s)));
            x = _mm256_blendv_ps(x, ninf, _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, _mm256_setzero_si256())));
            _mm256_storeu_ps(sc + s, x);
        }
        m = _mm256_max_ps(x, m); /* a NaN score is passed over, as in the scalar loop */
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    float mx = _mm_cvtss_f32(h);
    for (; s < S; s++) {
        if (keep && !keep[s])
            sc[s] = -INFINITY;
        else if (sc[s] > mx)
            mx = sc[s];
    }
    float sum = 0.0f;
    if (mx == -INFINITY) { /* nothing kept: uniform */
        for (s = 0; s < S; s++)
            sc[s] = 1.0f;
        sum = (float)S;
    } else {
        const __m256 vm = _mm256_set1_ps(mx);
        __m256 acc = _mm256_setzero_ps();
        for (s = 0; s + 8 <= S; s += 8) {
            __m256 e = exp_neg256(_mm256_sub_ps(_mm256_loadu_ps(sc + s), vm));
            _mm256_storeu_ps(sc + s, e);
            acc = _mm256_add_ps(acc, e);
        }
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        sum = _mm_cvtss_f32(h);
        for (; s < S; s++) {
            float x = sc[s] - mx;
            float tmp[8] = {x};
            _mm256_storeu_ps(tmp, exp_neg256(_mm256_loadu_ps(tmp)));
            sc[s] = tmp[0];
            sum += sc[s];
        }
    }
    return 1.0f / sum;
}

/* The V-sum part (kernels_impl.h, eng_attend_parts): 64 columns at a time in
 * eight registers across the keys, then the columns left one vector at a
 * time (the last one masked). */
ALWAYS_INLINE void vsum_keys(float *out, const float *sc, float inv, const void *v, eng_dtype dt, int s0, int s1,
                             int D, int first)
{
    int d0 = 0;
    for (; d0 + 64 <= D; d0 += 64) {
        __m256 o[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            o[i] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(out + d0 + 8 * i);
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m256 p = _mm256_set1_ps(sc[s] * inv);
            const size_t r0 = (size_t)s * D + (size_t)d0;
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                o[i] = _mm256_fmadd_ps(p, load8(v, dt, r0 + 8 * (size_t)i), o[i]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            _mm256_storeu_ps(out + d0 + 8 * i, o[i]);
    }
    for (; d0 < D; d0 += 8) {
        const int n = D - d0 < 8 ? D - d0 : 8;
        const __m256i mask = lane_mask(n);
        __m256 o = first ? _mm256_setzero_ps() : _mm256_maskload_ps(out + d0, mask);
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m256 p = _mm256_set1_ps(sc[s] * inv);
            const size_t r0 = (size_t)s * D + (size_t)d0;
            o = _mm256_fmadd_ps(p, n == 8 ? load8(v, dt, r0) : load8_part(v, dt, r0, n), o);
        }
        _mm256_maskstore_ps(out + d0, mask, o);
    }
}

static void vsum_avx2(float *out, const float *sc, float inv, const void *v, eng_dtype dt, int s0, int s1, int D,
                      int first)
{
    switch (dt) {
    case ENG_F16: vsum_keys(out, sc, inv, v, ENG_F16, s0, s1, D, first); break;
    case ENG_BF16: vsum_keys_pairs(out, sc, inv, v, s0, s1, D, first); break;
    default: vsum_keys(out, sc, inv, v, ENG_F32, s0, s1, D, first); break;
    }
}

/* The group score part (kernels_impl.h, eng_attend_parts): four queries by
 * two keys at a time (eight accumulators), each K vector loaded and
 * converted once for the four; a query chunk of fewer than four repeats its
 * last query and drops the extra scores. Each score is accumulated and
 * reduced (reduce4) as score_keys does its four-key blocks. */
ALWAYS_INLINE void score_group_keys(float *sc, size_t ldsc, const float *q, size_t ldq, int G, const void *k,
                                    const void *v, eng_dtype dt, int s0, int s1, int D)
{
    const int Dv = D / 8 * 8;
    const size_t es = eng_dtype_size(dt);
    const __m256i dmask = lane_mask(D - Dv);
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *qr[4];
        const int n = eng_attend_chunk4(qr, q, ldq, g0, G);
        for (int s = s0; s < s1; s += 2) {
            const int two = s + 1 < s1;
            const size_t r0 = (size_t)s * D, r1 = two ? r0 + (size_t)D : r0;
            if (g0 == 0)
                eng_prefetch_l1((const char *)v + r0 * es, (size_t)(1 + two) * D * es);
            __m256 a[2][4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                a[0][j] = a[1][j] = _mm256_setzero_ps();
            int d = 0;
            for (; d < Dv; d += 8) {
                const __m256 k0 = load8(k, dt, r0 + d), k1 = load8(k, dt, r1 + d);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m256 qv = _mm256_loadu_ps(qr[j] + d);
                    a[0][j] = _mm256_fmadd_ps(qv, k0, a[0][j]);
                    a[1][j] = _mm256_fmadd_ps(qv, k1, a[1][j]);
                }
            }
            if (d < D) {
                const __m256 k0 = load8_part(k, dt, r0 + d, D - d), k1 = load8_part(k, dt, r1 + d, D - d);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m256 qv = _mm256_maskload_ps(qr[j] + d, dmask);
                    a[0][j] = _mm256_fmadd_ps(qv, k0, a[0][j]);
                    a[1][j] = _mm256_fmadd_ps(qv, k1, a[1][j]);
                }
            }
            _Alignas(16) float r[2][4];
            _mm_store_ps(r[0], reduce4(a[0][0], a[0][1], a[0][2], a[0][3]));
            _mm_store_ps(r[1], reduce4(a[1][0], a[1][1], a[1][2], a[1][3]));
            for (int j = 0; j < n; j++) {
                sc[(size_t)(g0 + j) * ldsc + s] = r[0][j];
                if (two)
                    sc[(size_t)(g0 + j) * ldsc + s + 1] = r[1][j];
            }
        }
    }
}

static void score_group_avx2(float *sc, size_t ldsc, const float *q, size_t ldq, int G, const void *k, const void *v,
                             eng_dtype dt, int s0, int s1, int D)
{
    switch (dt) {
    case ENG_F16: score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_F16, s0, s1, D); break;
    case ENG_BF16: score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_BF16, s0, s1, D); break;
    default: score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_F32, s0, s1, D); break;
    }
}

/* The group V-sum part (kernels_impl.h, eng_attend_parts): four outputs by
 * 16 columns at a time (eight registers), each V vector loaded and converted
 * once for the four; a chunk of fewer than four repeats its last query and
 * stores only its n. A key no query keeps is skipped (its V row is not
 * read); one that some query drops adds 0 * v to that query's sums. */
ALWAYS_INLINE void vsum_group_keys(float *out, size_t ldo, const float *pw, const unsigned char *any, int G,
                                   const void *v, eng_dtype dt, int s0, int s1, int D, int first)
{
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *p[4];
        const int n = eng_attend_chunk4(p, pw, ENG_ATTEND_KB, g0, G);
        for (int d0 = 0; d0 < D; d0 += 16) {
            const int c0 = D - d0 < 8 ? D - d0 : 8, c1 = D - d0 - 8 < 0 ? 0 : D - d0 - 8 < 8 ? D - d0 - 8 : 8;
            const __m256i m0 = lane_mask(c0), m1 = lane_mask(c1);
            __m256 o[4][2];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                o[j][0] = o[j][1] = _mm256_setzero_ps();
                if (!first && j < n) {
                    o[j][0] = _mm256_maskload_ps(out + (size_t)(g0 + j) * ldo + d0, m0);
                    o[j][1] = _mm256_maskload_ps(out + (size_t)(g0 + j) * ldo + d0 + 8, m1);
                }
            }
            for (int s = s0; s < s1; s++) {
                if (!any[s - s0])
                    continue;
                const size_t r0 = (size_t)s * D + (size_t)d0;
                const __m256 v0 = c0 == 8 ? load8(v, dt, r0) : load8_part(v, dt, r0, c0);
                const __m256 v1 = c1 == 8 ? load8(v, dt, r0 + 8) : c1 > 0 ? load8_part(v, dt, r0 + 8, c1)
                                                                           : _mm256_setzero_ps();
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m256 pj = _mm256_broadcast_ss(p[j] + (s - s0));
                    o[j][0] = _mm256_fmadd_ps(pj, v0, o[j][0]);
                    o[j][1] = _mm256_fmadd_ps(pj, v1, o[j][1]);
                }
            }
            for (int j = 0; j < n; j++) {
                _mm256_maskstore_ps(out + (size_t)(g0 + j) * ldo + d0, m0, o[j][0]);
                _mm256_maskstore_ps(out + (size_t)(g0 + j) * ldo + d0 + 8, m1, o[j][1]);
            }
        }
    }
}

static void vsum_group_avx2(float *out, size_t ldo, const float *pw, const unsigned char *any, int G,
                            const void *v, eng_dtype dt, int s0, int s1, int D, int first)
{
    switch (dt) {
    case ENG_F16: vsum_group_keys(out, ldo, pw, any, G, v, ENG_F16, s0, s1, D, first); break;
    case ENG_BF16: vsum_group_keys(out, ldo, pw, any, G, v, ENG_BF16, s0, s1, D, first); break;
    default: vsum_group_keys(out, ldo, pw, any, G, v, ENG_F32, s0, s1, D, first); break;
    }
}

static const eng_attend_parts attend_parts_avx2 = {score_avx2, softmax_avx2, vsum_avx2, score_group_avx2,
                                                   vsum_group_avx2};

ENG_ATTEND_ENTRIES(avx2, attend_parts_avx2)

/* ---- the column path's tiles (kernels_cols.c) ---------------------------------- */

enum {
    COLS_MIN_M = 8, /* rows of x from which linear takes the column path */
    COLS_KC = 256,  /* columns of w per panel: the tiles' row stride of pk */
    COLS_NP = 12,   /* rows of w per panel */
};

_Static_assert((int)COLS_NP <= (int)ENG_COLS_NP_MAX && (int)COLS_KC <= (int)ENG_COLS_KC_MAX, "the column path's buffers hold the panel");

/* One k step of a column tile: a[j][v] += xr[V v .. V v + V) * (row j of r). */
ALWAYS_INLINE void col_step(int MV, int NR, __m256 a[][2], const float *xr, const eng_cols_rows *r)
{
    __m256 xv[2];
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++)
        xv[v] = _mm256_loadu_ps(xr + 8 * v);
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++) {
        const __m256 b = _mm256_broadcast_ss(eng_cols_row(r, j));
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            a[j][v] = _mm256_fmadd_ps(xv[v], b, a[j][v]);
    }
}

/* acc[j][i] += sum_{k < kc} xt[k][i] * pk[j][k] for i < 8 * MV, j < NR:
 * 8 * MV rows of x in MV vectors, each weight broadcast once per vector
 * (MV * NR accumulators + MV + 1 registers <= 16). */
ALWAYS_INLINE void col_tile(int MV, int NR, int IN_PLACE, const float *xt, size_t ldxt, const float *pk, size_t ldpk,
                            int kc, float *acc, size_t ldacc, eng_cols_prefetch pf)
{
    __m256 a[COLS_NP][2];
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++)
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            a[j][v] = _mm256_loadu_ps(acc + (size_t)j * ldacc + 8 * v);
    /* the k steps that prefetch, then the rest without the bookkeeping */
    const int kp = eng_cols_prefetch_steps(&pf, kc);
    eng_cols_rows r = eng_cols_rows_at(pk, ldpk, NR, IN_PLACE);
    int k = 0;
    for (; k < kp; k++, eng_cols_rows_next(&r, NR, IN_PLACE)) {
        eng_cols_prefetch_next(&pf);
        col_step(MV, NR, a, xt + (size_t)k * ldxt, &r);
    }
    for (; k < kc; k++, eng_cols_rows_next(&r, NR, IN_PLACE))
        col_step(MV, NR, a, xt + (size_t)k * ldxt, &r);
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++)
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            _mm256_storeu_ps(acc + (size_t)j * ldacc + 8 * v, a[j][v]);
}

ENG_COLS_TILES(8x12, 1, 12)
ENG_COLS_TILES(16x6, 2, 6)

/* A panel row in fp32: the tiles' loads, in registers (int8 without its scale). */
ALWAYS_INLINE void pack_row_dt(float *dst, const void *w, eng_dtype dt, int n)
{
    int k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(dst + k, load8(w, dt, (size_t)k));
    if (k < n)
        _mm256_maskstore_ps(dst + k, lane_mask(n - k), load8_part(w, dt, (size_t)k, n - k));
}

static void col_pack_row(float *dst, const void *w, eng_dtype wt, int n)
{
    switch (wt) {
    case ENG_F16: pack_row_dt(dst, w, ENG_F16, n); break;
    case ENG_BF16: pack_row_dt(dst, w, ENG_BF16, n); break;
    case ENG_I8: pack_row_dt(dst, w, ENG_I8, n); break;
    default: pack_row_dt(dst, w, ENG_F32, n); break;
    }
}

static const eng_cols_spec cols_avx2 = {
    .lanes = 8,
    .np = COLS_NP,
    .kc = COLS_KC,
    .nr = {12, 6},
    .tile = {col_tile_8x12, col_tile_16x6},
    .tile_f32 = {col_tile_8x12_w, col_tile_16x6_w},
    .pack_row = col_pack_row,
    .transpose = eng_cols_transpose_avx,
};

/* ---- linear ------------------------------------------------------------------ */

static void linear_direct(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K, int N,
                          int n0, int n1, int relu)
{
    if (M == 1) {
        eng_linear_row(&rows, y, x, w, wt, bias, K, N, n0, n1, relu);
        return;
    }
    size_t es = eng_dtype_size(wt);
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    float out[4][4];
    for (int n = n0; n < n1; n += TR) {
        int nr = n1 - n < TR ? n1 - n : TR;
        const char *wn = (const char *)w + (size_t)n * K * es;
        for (int m = 0; m < M; m += 4) {
            int mr = M - m < 4 ? M - m : 4;
            const void *wpf = m == 0 && n + TR < n1 ? wn + (size_t)TR * K * es : NULL;
            tiles[wt][mr - 1][nr - 1](x + (size_t)m * K, (size_t)K, wn, (size_t)K, K, wpf, out);
            tile_store(y, N, m, mr, n, nr, out, scale, bias, 1, 1, relu);
        }
    }
}

static void linear_blocked(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K,
                           int N, int n0, int n1, int relu)
{
    _Alignas(64) float pack[NB * KB];
    float out[4][4];
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    for (int nb = n0; nb < n1; nb += NB) {
        int nbn = n1 - nb < NB ? n1 - nb : NB;
        for (int kb = 0; kb < K; kb += KB) {
            int kbn = K - kb < KB ? K - kb : KB;
            /* the panel in fp32 (also for fp32 weights: a contiguous copy
             * streams better than rows K floats apart) */
            const size_t es = eng_dtype_size(wt);
            for (int r = 0; r < nbn; r++)
                to_f32_avx2(pack + (size_t)r * KB, (const char *)w + ((size_t)(nb + r) * K + kb) * es, wt, (size_t)kbn);
            const float *panel = pack;
            const size_t ldp = KB;
            int first = kb == 0, last = kb + kbn >= K;
            for (int m = 0; m < M; m += 4) {
                int mr = M - m < 4 ? M - m : 4;
                const float *xm = x + (size_t)m * K + kb;
                for (int n = 0; n < nbn; n += TR) {
                    int nr = nbn - n < TR ? nbn - n : TR;
                    tiles[ENG_F32][mr - 1][nr - 1](xm, (size_t)K, panel + (size_t)n * ldp, ldp, kbn, NULL, out);
                    tile_store(y, N, m, mr, nb + n, nr, out, scale, bias, first, last, relu);
                }
            }
        }
    }
}

static void linear_avx2(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K, int N,
                        int n0, int n1, int relu)
{
    if (n0 >= n1 || M <= 0)
        return;
    if (wt == ENG_W8A8)
        eng_linear_w8a8(eng_vnni_for_family(ENG_ISA_AVX2), y, x, w, bias, M, K, N, n0, n1, relu);
    else if (M >= COLS_MIN_M)
        eng_linear_cols(&cols_avx2, y, x, w, wt, bias, M, K, N, n0, n1, relu);
    else if ((long)M * K <= DIRECT_MAX_XK)
        linear_direct(y, x, w, wt, bias, M, K, N, n0, n1, relu);
    else
        linear_blocked(y, x, w, wt, bias, M, K, N, n0, n1, relu);
}

static const eng_kernels kernels_avx2 = {
    .isa = ENG_ISA_AVX2,
    .linear = linear_avx2,
    .dot = dot_avx2,
    .axpy = axpy_avx2,
    .attend = attend_avx2,
    .attend_split = attend_split_avx2,
    .attend_group = attend_group_avx2,
    .to_f32 = to_f32_avx2,
    .from_f32 = from_f32_avx2,
};

const eng_kernels *eng_kernels_avx2(void) { return &kernels_avx2; }

#else /* built without the AVX2 flags: never selected */

const eng_kernels *eng_kernels_avx2(void) { return NULL; }

#endif
