/* kernels_avx512.c: the AVX-512F variant and the AVX512-BF16 variant of the
 * engine kernels (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq
 * -mavx512bf16 -mfma -mf16c; selected only when cpuid says the CPU has them).
 *
 * linear (x[M, K] fp32, w[N, K] in dtype, y[M, N] fp32), two paths:
 *   direct  (M * K <= DIRECT_MAX_XK: decode and small batches): weights are
 *           streamed once from memory; a register tile of up to 4 rows of x
 *           by 4 rows of w holds 16 zmm accumulators, each loaded weight
 *           vector (converted fp16/bf16 -> fp32 in registers) is reused for
 *           every row of x in the tile. At M = 1 a 1-row tile of 4 weight
 *           rows with two accumulators each (bf16 weights in pairs: a shift
 *           and a mask per 32 weights). Memory-bandwidth bound at M = 1.
 *   blocked (larger M: prefill): a panel of NB rows x KB columns of w is
 *           converted to fp32 once into a stack buffer (L2-resident) and
 *           reused by every row of x; the same 4 x 4 register tile runs
 *           over it. Partial sums over K blocks accumulate in y.
 * Each dot product is reduced with the same tree whatever the tile's shape,
 * so a row's result does not depend on how [n0, n1) was split.
 *
 * The AVX512-BF16 variant differs only in linear with bf16 weights (both
 * paths): x is rounded to bf16 (RNE, denormals treated as zero) and
 * _mm512_dpbf16_ps multiplies bf16 pairs, accumulating in fp32; the weights
 * are used as stored, with no conversion. At M = 1 a 1-row vdpbf16ps tile
 * (row_tile_dp) under eng_linear_row's loop and prefetch distances.
 * Accuracy: the products are exact but x carries a relative error up to 2^-9,
 * so |error| <= 2^-9 * sum_k |x_k w_k| (plus fp32 accumulation), about 2^7
 * times the fp32-activation bound. Everything else (dot, axpy, conversions,
 * other dtypes) is the AVX-512F code.
 */
#define _POSIX_C_SOURCE 200809L /* clock.h */
#include "kernels_impl.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512BF16__) &&           \
    defined(__F16C__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "clock.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

enum {
    DIRECT_MAX_XK = 65536, /* M * K floats of x (256 KiB) that the direct path reads per weight group */
    NB = 64,               /* blocked path: rows of w per packed panel */
    KB = 512,              /* blocked path: columns of w per packed panel (NB * KB * 4 = 128 KiB) */
};

/* ---- loads of 16 weights as fp32 --------------------------------------- */

ALWAYS_INLINE __m512 load16(const void *p, eng_dtype dt, size_t off)
{
    if (dt == ENG_F32)
        return _mm512_loadu_ps((const float *)p + off);
    if (dt == ENG_I8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)((const int8_t *)p + off))));
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + off));
    return dt == ENG_F16 ? _mm512_cvtph_ps(h) : prec_bf16x16_to_ps(h);
}

/* Lanes outside mask read nothing (no fault) and are 0. */
ALWAYS_INLINE __m512 load16_mask(const void *p, eng_dtype dt, size_t off, __mmask16 mask)
{
    if (dt == ENG_F32)
        return _mm512_maskz_loadu_ps(mask, (const float *)p + off);
    if (dt == ENG_I8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, (const int8_t *)p + off)));
    __m256i h = _mm256_maskz_loadu_epi16(mask, (const uint16_t *)p + off);
    return dt == ENG_F16 ? _mm512_cvtph_ps(h) : prec_bf16x16_to_ps(h);
}

ALWAYS_INLINE __mmask16 tail_mask(int n) { return (__mmask16)((1u << n) - 1u); }

/* [sum a, sum b, sum c, sum d]; each sum uses the same tree whatever the
 * other inputs are. */
ALWAYS_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    __m512 abcd = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))),
                                _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* ---- the register tile -------------------------------------------------- */

/* out[m][n] = sum_{k < K} x[m * ldx + k] * w[n * ldw + k] for m < MR, n < NR
 * (MR, NR <= 4, compile-time constants after inlining). When wpf is not
 * NULL, the same rows and columns of wpf (the next group of weight rows) are
 * prefetched, so DRAM streams while this group computes. */
ALWAYS_INLINE void tile(int MR, int NR, eng_dtype dt, const float *x, size_t ldx, const void *w, size_t ldw, int K,
                        const void *wpf, float out[4][4])
{
    const size_t es = eng_dtype_size(dt);
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
#pragma GCC unroll 4
        for (int n = 0; n < 4; n++)
            acc[m][n] = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 wv[4];
        if (wpf && (((size_t)k * es) & 63) == 0) /* one prefetch per 64-byte line */
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                _mm_prefetch((const char *)wpf + (n * ldw + (size_t)k) * es, _MM_HINT_T0);
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
            wv[n] = load16(w, dt, n * ldw + (size_t)k);
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            __m512 xv = _mm512_loadu_ps(x + m * ldx + k);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
        }
    }
    if (k < K) {
        __mmask16 mask = tail_mask(K - k);
        __m512 wv[4];
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
            wv[n] = load16_mask(w, dt, n * ldw + (size_t)k, mask);
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            __m512 xv = _mm512_maskz_loadu_ps(mask, x + m * ldx + k);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
        _mm_storeu_ps(out[m], reduce4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
}

typedef void (*tile_fn)(const float *x, size_t ldx, const void *w, size_t ldw, int K, const void *wpf,
                        float out[4][4]);

#define TILE_FN(MR, NR, DT, NAME)                                                                                      \
    static void tile_##NAME##_##MR##_##NR(const float *x, size_t ldx, const void *w, size_t ldw, int K,              \
                                          const void *wpf, float out[4][4])                                            \
    {                                                                                                                  \
        tile(MR, NR, DT, x, ldx, w, ldw, K, wpf, out);                                                                 \
    }
#define TILE_ROW(MR, DT, NAME) TILE_FN(MR, 1, DT, NAME) TILE_FN(MR, 2, DT, NAME) TILE_FN(MR, 3, DT, NAME) TILE_FN(MR, 4, DT, NAME)
#define TILE_ALL(DT, NAME) TILE_ROW(1, DT, NAME) TILE_ROW(2, DT, NAME) TILE_ROW(3, DT, NAME) TILE_ROW(4, DT, NAME)
TILE_ALL(ENG_F32, f32)
TILE_ALL(ENG_F16, f16)
TILE_ALL(ENG_BF16, bf16)
TILE_ALL(ENG_I8, i8)

#define TILE_PTRS_ROW(NAME, MR) {tile_##NAME##_##MR##_1, tile_##NAME##_##MR##_2, tile_##NAME##_##MR##_3, tile_##NAME##_##MR##_4}
#define TILE_PTRS(NAME) {TILE_PTRS_ROW(NAME, 1), TILE_PTRS_ROW(NAME, 2), TILE_PTRS_ROW(NAME, 3), TILE_PTRS_ROW(NAME, 4)}
/* tiles[dtype][MR - 1][NR - 1] */
static const tile_fn tiles[4][4][4] = {TILE_PTRS(f32), TILE_PTRS(f16), TILE_PTRS(bf16), TILE_PTRS(i8)};

/* ---- the 1-row tile (M = 1: the B = 1 decode step) ---------------------- */

/* Weights w[off .. off + 32) of one row as two fp32 vectors: bf16 in pairs
 * (*wa the even columns, *wb the odd ones, from one load), the other dtypes
 * as columns [off, off + 16) and [off + 16, off + 32). */
ALWAYS_INLINE void row_load32(const void *w, eng_dtype dt, size_t off, __m512 *wa, __m512 *wb)
{
    if (dt == ENG_BF16) {
        prec_bf16x32_pairs_to_ps(_mm512_loadu_si512((const uint16_t *)w + off), wa, wb);
        return;
    }
    *wa = load16(w, dt, off);
    *wb = load16(w, dt, off + 16);
}

/* The same for the last n (1..31) columns, zero beyond them; reads only those. */
ALWAYS_INLINE void row_load32_part(const void *w, eng_dtype dt, size_t off, int n, __m512 *wa, __m512 *wb)
{
    if (dt == ENG_BF16) {
        const __mmask32 mask = (__mmask32)((1u << n) - 1u);
        prec_bf16x32_pairs_to_ps(_mm512_maskz_loadu_epi16(mask, (const uint16_t *)w + off), wa, wb);
        return;
    }
    *wa = load16_mask(w, dt, off, n < 16 ? tail_mask(n) : (__mmask16)0xffff);
    *wb = n > 16 ? load16_mask(w, dt, off + 16, tail_mask(n - 16)) : _mm512_setzero_ps();
}

/* acc[n][0] += x[k, k + 16) * wa, acc[n][1] += x[k + 16, k + 32) * wb, n < NR,
 * with (row_load32) the weights of columns [k, k + 32) of row n. */
ALWAYS_INLINE void row_step(int NR, eng_dtype dt, const float *x, const void *w, size_t ldw, size_t k,
                            __m512 acc[][2])
{
    const __m512 xa = _mm512_loadu_ps(x + k), xb = _mm512_loadu_ps(x + k + 16);
#pragma GCC unroll 4
    for (int n = 0; n < NR; n++) {
        __m512 wa, wb;
        row_load32(w, dt, n * ldw + k, &wa, &wb);
        acc[n][0] = _mm512_fmadd_ps(xa, wa, acc[n][0]);
        acc[n][1] = _mm512_fmadd_ps(xb, wb, acc[n][1]);
    }
}

/* out[0][n] = sum_{k < K} x[k] * w[n * ldw + k] for n < NR <= ENG_ROW_NR: one row
 * of x, two accumulators per weight row, added together and then reduced
 * with reduce4's tree, whatever NR. Per 32 columns, the first accumulator
 * takes columns 0..15 and the second 16..31; with bf16 weights the even
 * columns and the odd ones (prec_bf16x32_pairs_to_ps: a shift and a mask per
 * 32 weights, each straight from memory, instead of a zero-extension and a
 * shift per 16), and x is then x_in_pairs()'s copy (zero-padded to a
 * multiple of 32). The same rows and columns of near (into L1) and far
 * (into L2) are prefetched: w plus the two prefetch distances (see
 * linear_direct), or NULL for none. */
ALWAYS_INLINE void row_tile(int NR, eng_dtype dt, const float *x, const void *w, size_t ldw, int K, const void *near,
                            const void *far, float out[ENG_ROW_NR])
{
    const size_t es = eng_dtype_size(dt);
    __m512 acc[ENG_ROW_NR][2];
#pragma GCC unroll 4
    for (int n = 0; n < ENG_ROW_NR; n++)
        acc[n][0] = acc[n][1] = _mm512_setzero_ps();
    /* at least 64 bytes of each weight row per iteration: two prefetches per
     * line of each row (with no near or far, of w itself, already in cache),
     * then the steps of 32 columns without the bookkeeping */
    const int kstep = (int)(64 / es) > 32 ? (int)(64 / es) : 32;
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
        for (int s = 0; s < kstep; s += 32)
            row_step(NR, dt, x, w, ldw, (size_t)(k + s), acc);
    }
    for (; k + 32 <= K; k += 32)
        row_step(NR, dt, x, w, ldw, (size_t)k, acc);
    if (k < K) {
        const int r = K - k;
        __m512 xa, xb;
        if (dt == ENG_BF16) { /* the copy is zero-padded */
            xa = _mm512_loadu_ps(x + k);
            xb = _mm512_loadu_ps(x + k + 16);
        } else {
            xa = _mm512_maskz_loadu_ps(r < 16 ? tail_mask(r) : (__mmask16)0xffff, x + k);
            xb = r > 16 ? _mm512_maskz_loadu_ps(tail_mask(r - 16), x + k + 16) : _mm512_setzero_ps();
        }
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++) {
            __m512 wa, wb;
            row_load32_part(w, dt, n * ldw + (size_t)k, r, &wa, &wb);
            acc[n][0] = _mm512_fmadd_ps(xa, wa, acc[n][0]);
            acc[n][1] = _mm512_fmadd_ps(xb, wb, acc[n][1]);
        }
    }
    _mm_storeu_ps(out, reduce4(_mm512_add_ps(acc[0][0], acc[0][1]), _mm512_add_ps(acc[1][0], acc[1][1]),
                                  _mm512_add_ps(acc[2][0], acc[2][1]), _mm512_add_ps(acc[3][0], acc[3][1])));
}

/* The n (0..32) floats at x, zero past them, in pair order: *even = x[2 j],
 * *odd = x[2 j + 1], j < 16. */
ALWAYS_INLINE void ps_to_pairs(const float *x, int n, __m512 *even, __m512 *odd)
{
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    const __m512 a = _mm512_maskz_loadu_ps(n < 16 ? tail_mask(n) : (__mmask16)0xffff, x);
    const __m512 b = n <= 16 ? _mm512_setzero_ps()
                     : n < 32 ? _mm512_maskz_loadu_ps(tail_mask(n - 16), x + 16)
                              : _mm512_loadu_ps(x + 16);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, io, b);
}

/* The inverse of ps_to_pairs: x[2 j] = even[j], x[2 j + 1] = odd[j], only
 * for the first n (0..32) of x. */
ALWAYS_INLINE void pairs_to_ps(float *x, int n, __m512 even, __m512 odd)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    _mm512_mask_storeu_ps(x, n < 16 ? tail_mask(n) : (__mmask16)0xffff, _mm512_permutex2var_ps(even, lo, odd));
    if (n > 16)
        _mm512_mask_storeu_ps(x + 16, n < 32 ? tail_mask(n - 16) : (__mmask16)0xffff,
                              _mm512_permutex2var_ps(even, hi, odd));
}

/* xp = x[0, K) in the order row_tile() pairs with bf16 weights: per 32
 * columns the 16 even ones, then the 16 odd ones (xp[32 c + j] = x[32 c + 2 j],
 * xp[32 c + 16 + j] = x[32 c + 2 j + 1]), zero past K up to K rounded up to 32.
 * Lane j of each half then meets the weight pair (2 j, 2 j + 1) of one load. */
static void x_in_pairs(float *xp, const float *x, int K)
{
    for (int k = 0; k < K; k += 32) {
        __m512 e, o;
        ps_to_pairs(x + k, K - k < 32 ? K - k : 32, &e, &o);
        _mm512_storeu_ps(xp + k, e);
        _mm512_storeu_ps(xp + k + 16, o);
    }
}

ENG_ROW_SPEC(rows, x_in_pairs)
_Static_assert((int)DIRECT_MAX_XK <= (int)ENG_ROW_MAX_K, "eng_linear_row holds every x of the direct path");

/* Writes (first) or adds (later K blocks) a tile's sums into y, with bias on
 * the first block and ReLU after the last. */
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

/* ---- conversions -------------------------------------------------------- */

/* Bulk conversions: the AVX-512 converters of plugins/precision/common. */
static void to_f32_avx512(float *dst, const void *src, eng_dtype st, size_t n)
{
    eng_convert_to_f32(prec_converters_avx512(), dst, src, st, n);
}

static void from_f32_avx512(void *dst, eng_dtype dt, const float *src, size_t n)
{
    eng_convert_from_f32(prec_converters_avx512(), dst, dt, src, n);
}

/* ---- dot, axpy ----------------------------------------------------------- */

ALWAYS_INLINE float dot_dt(const float *a, const void *b, eng_dtype dt, int n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    int k = 0;
    for (; k + 64 <= n; k += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), load16(b, dt, (size_t)k), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 16), load16(b, dt, (size_t)k + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 32), load16(b, dt, (size_t)k + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 48), load16(b, dt, (size_t)k + 48), s3);
    }
    for (; k + 16 <= n; k += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), load16(b, dt, (size_t)k), s0);
    if (k < n) {
        __mmask16 mask = tail_mask(n - k);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + k), load16_mask(b, dt, (size_t)k, mask), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static float dot_avx512(const float *a, const void *b, eng_dtype bt, int n)
{
    switch (bt) {
    case ENG_F16: return dot_dt(a, b, ENG_F16, n);
    case ENG_BF16: return dot_dt(a, b, ENG_BF16, n);
    default: return dot_dt(a, b, ENG_F32, n);
    }
}

ALWAYS_INLINE void axpy_dt(float *y, float alpha, const void *x, eng_dtype dt, int n)
{
    __m512 va = _mm512_set1_ps(alpha);
    int k = 0;
    for (; k + 16 <= n; k += 16)
        _mm512_storeu_ps(y + k, _mm512_fmadd_ps(va, load16(x, dt, (size_t)k), _mm512_loadu_ps(y + k)));
    if (k < n) {
        __mmask16 mask = tail_mask(n - k);
        _mm512_mask_storeu_ps(y + k, mask,
                              _mm512_fmadd_ps(va, load16_mask(x, dt, (size_t)k, mask), _mm512_maskz_loadu_ps(mask, y + k)));
    }
}

static void axpy_avx512(float *y, float alpha, const void *x, eng_dtype xt, int n)
{
    switch (xt) {
    case ENG_F16: axpy_dt(y, alpha, x, ENG_F16, n); break;
    case ENG_BF16: axpy_dt(y, alpha, x, ENG_BF16, n); break;
    default: axpy_dt(y, alpha, x, ENG_F32, n); break;
    }
}

/* ---- attention ----------------------------------------------------------------- */

/* e^x for x <= 0 (scores minus their max), 0 below -87 and for -inf: Cody-Waite
 * reduction x = n ln2 + r, |r| <= ln2 / 2, a degree-7 polynomial for e^r (the
 * published Cephes expf coefficients) and scalef for 2^n. test_kernels checks
 * the attention outputs against the portable expf version. */
ALWAYS_INLINE __m512 exp_neg512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    x = _mm512_max_ps(x, lo);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

/* Fused attention (see kernels.h): scores four keys at a time (each key's
 * D-long dot product with SIMD over D, four reduced together), the softmax
 * over 16 scores per vector, then the weighted V sum with the output held in
 * registers, 64 columns of D at a time; a shared-prefix group's queries go
 * through eng_attend_group_run (kernels_attend.c) over these parts. */
/* sc[s] = q . k[s, :] for keys s in [s0, s1) (k indexed from key 0), with
 * the same rows of v prefetched, so the V pass after the softmax finds them in
 * cache (the K and V streams are read from memory together). */
ALWAYS_INLINE void score_keys(float *sc, const float *q, const void *k, const void *v, eng_dtype dt, int s0, int s1,
                              int D)
{
    const int Dv = D / 16 * 16;
    const __mmask16 dmask = tail_mask(D - Dv);
    const size_t es = eng_dtype_size(dt);
    int s = s0;
    for (; s + 4 <= s1; s += 4) {
        const size_t r0 = (size_t)s * D;
        eng_prefetch_l1((const char *)v + r0 * es, 4 * (size_t)D * es);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int d = 0;
        for (; d < Dv; d += 16) {
            __m512 qv = _mm512_loadu_ps(q + d);
            a0 = _mm512_fmadd_ps(qv, load16(k, dt, r0 + d), a0);
            a1 = _mm512_fmadd_ps(qv, load16(k, dt, r0 + (size_t)D + d), a1);
            a2 = _mm512_fmadd_ps(qv, load16(k, dt, r0 + 2 * (size_t)D + d), a2);
            a3 = _mm512_fmadd_ps(qv, load16(k, dt, r0 + 3 * (size_t)D + d), a3);
        }
        if (d < D) {
            __m512 qv = _mm512_maskz_loadu_ps(dmask, q + d);
            a0 = _mm512_fmadd_ps(qv, load16_mask(k, dt, r0 + d, dmask), a0);
            a1 = _mm512_fmadd_ps(qv, load16_mask(k, dt, r0 + (size_t)D + d, dmask), a1);
            a2 = _mm512_fmadd_ps(qv, load16_mask(k, dt, r0 + 2 * (size_t)D + d, dmask), a2);
            a3 = _mm512_fmadd_ps(qv, load16_mask(k, dt, r0 + 3 * (size_t)D + d, dmask), a3);
        }
        _mm_storeu_ps(sc + s, reduce4(a0, a1, a2, a3));
    }
    for (; s < s1; s++) {
        const size_t r0 = (size_t)s * D;
        __m512 a0 = _mm512_setzero_ps();
        int d = 0;
        for (; d < Dv; d += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), load16(k, dt, r0 + d), a0);
        if (d < D)
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(dmask, q + d), load16_mask(k, dt, r0 + d, dmask), a0);
        sc[s] = _mm512_reduce_add_ps(a0);
    }
}

/* ---- bf16 K and V in pairs ----------------------------------------------
 * A bf16 KV cache is read 32 values a load (the scores for D <=
 * ENG_ATTEND_PAIRS_MAX_D, the size of the queries' pair copies), in every
 * part:
 * prec_bf16x32_pairs_to_ps splits a load into its even columns and its odd
 * ones (a shift and a mask, instead of a zero-extension and a shift per 16
 * values). The scores take q in the same order (x_in_pairs), an even and an
 * odd accumulator per key, added before the reduction; the V sums keep their
 * outputs in pair order (even and odd columns in two registers) across the
 * keys and put them back in order once (pairs_to_ps), so each output is the
 * same fp32 chain as vsum_keys's. score_group's sums for a (query, key) are
 * score's bits for that key. */

/* The 32 bf16 values at p (only the first n, 0..32, read; zero past them). */
ALWAYS_INLINE __m512i load_bf16x32(const uint16_t *p, int n)
{
    return n >= 32 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16((__mmask32)((1u << n) - 1u), p);
}

/* *ae += qe * (the even values of h), *ao += qo * (the odd ones). */
ALWAYS_INLINE void fma_pairs(__m512 qe, __m512 qo, __m512i h, __m512 *ae, __m512 *ao)
{
    __m512 e, o;
    prec_bf16x32_pairs_to_ps(h, &e, &o);
    *ae = _mm512_fmadd_ps(qe, e, *ae);
    *ao = _mm512_fmadd_ps(qo, o, *ao);
}

/* score_keys for bf16 keys with qp = q in pairs (x_in_pairs, zero-padded to
 * a multiple of 32). */
static void score_keys_pairs(float *sc, const float *qp, const uint16_t *k, const uint16_t *v, int s0, int s1, int D)
{
    int s = s0;
    for (; s + 4 <= s1; s += 4) {
        const size_t r0 = (size_t)s * D;
        eng_prefetch_l1(v + r0, 4 * (size_t)D * 2);
        __m512 ae[4], ao[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            ae[j] = ao[j] = _mm512_setzero_ps();
        for (int d = 0; d < D; d += 32) {
            const int n = D - d;
            const __m512 qe = _mm512_loadu_ps(qp + d), qo = _mm512_loadu_ps(qp + d + 16);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                fma_pairs(qe, qo, load_bf16x32(k + r0 + (size_t)j * D + d, n), &ae[j], &ao[j]);
        }
        _mm_storeu_ps(sc + s, reduce4(_mm512_add_ps(ae[0], ao[0]), _mm512_add_ps(ae[1], ao[1]),
                                      _mm512_add_ps(ae[2], ao[2]), _mm512_add_ps(ae[3], ao[3])));
    }
    for (; s < s1; s++) {
        __m512 ae = _mm512_setzero_ps(), ao = ae;
        for (int d = 0; d < D; d += 32)
            fma_pairs(_mm512_loadu_ps(qp + d), _mm512_loadu_ps(qp + d + 16),
                      load_bf16x32(k + (size_t)s * D + d, D - d), &ae, &ao);
        const __m512 a = _mm512_add_ps(ae, ao);
        sc[s] = _mm_cvtss_f32(reduce4(a, a, a, a)); /* the tree of the four-key blocks */
    }
}

/* vsum_keys for bf16 values: 64 columns at a time, in pair order. */
static void vsum_keys_pairs(float *out, const float *sc, float inv, const uint16_t *v, int s0, int s1, int D,
                            int first)
{
    for (int d0 = 0; d0 < D; d0 += 64) {
        const int n0 = D - d0 < 32 ? D - d0 : 32, n1 = D - d0 - 32 < 0 ? 0 : D - d0 - 32 < 32 ? D - d0 - 32 : 32;
        __m512 e0 = _mm512_setzero_ps(), o0 = e0, e1 = e0, o1 = e0;
        if (!first) {
            ps_to_pairs(out + d0, n0, &e0, &o0);
            ps_to_pairs(out + d0 + 32, n1, &e1, &o1);
        }
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m512 p = _mm512_set1_ps(sc[s] * inv);
            const uint16_t *r = v + (size_t)s * D + d0;
            fma_pairs(p, p, load_bf16x32(r, n0), &e0, &o0);
            fma_pairs(p, p, load_bf16x32(r + 32, n1), &e1, &o1);
        }
        pairs_to_ps(out + d0, n0, e0, o0);
        pairs_to_ps(out + d0 + 32, n1, e1, o1);
    }
}

static void score_avx512(float *sc, const float *q, const void *k, const void *v, eng_dtype dt, int s0, int s1, int D)
{
    switch (dt) {
    case ENG_F16: score_keys(sc, q, k, v, ENG_F16, s0, s1, D); break;
    case ENG_BF16:
        if (D <= ENG_ATTEND_PAIRS_MAX_D) {
            _Alignas(64) float qp[ENG_ATTEND_PAIRS_MAX_D];
            x_in_pairs(qp, q, D);
            score_keys_pairs(sc, qp, k, v, s0, s1, D);
        } else
            score_keys(sc, q, k, v, ENG_BF16, s0, s1, D);
        break;
    default: score_keys(sc, q, k, v, ENG_F32, s0, s1, D); break;
    }
}

/* The softmax part (kernels_impl.h, eng_attend_parts): the mask and the max
 * 16 scores per vector. */
static float softmax_avx512(float *sc, const uint8_t *keep, int S)
{
    int s;
    float mx;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m = ninf;
    for (s = 0; s < S; s += 16) { /* masked keys to -inf (16 keep bytes at a time), the max of the rest */
        const __mmask16 t = S - s >= 16 ? (__mmask16)0xffff : tail_mask(S - s);
        __m512 x = _mm512_maskz_loadu_ps(t, sc + s);
        if (keep) {
            const __m128i kb = _mm_maskz_loadu_epi8(t, keep + s);
            x = _mm512_mask_blend_ps(_mm_test_epi8_mask(kb, kb), ninf, x);
            _mm512_mask_storeu_ps(sc + s, t, x);
        }
        m = _mm512_mask_max_ps(m, t, x, m); /* a NaN score is passed over, as in the scalar loop */
    }
    mx = _mm512_reduce_max_ps(m);
    float sum;
    if (mx == -INFINITY) { /* nothing kept: uniform */
        for (s = 0; s < S; s++)
            sc[s] = 1.0f;
        sum = (float)S;
    } else {
        const __m512 vm = _mm512_set1_ps(mx);
        __m512 acc = _mm512_setzero_ps();
        for (s = 0; s + 16 <= S; s += 16) {
            __m512 e = exp_neg512(_mm512_sub_ps(_mm512_loadu_ps(sc + s), vm));
            _mm512_storeu_ps(sc + s, e);
            acc = _mm512_add_ps(acc, e);
        }
        if (s < S) {
            __mmask16 m = tail_mask(S - s);
            __m512 e = exp_neg512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, sc + s), vm));
            e = _mm512_maskz_mov_ps(m, e);
            _mm512_mask_storeu_ps(sc + s, m, e);
            acc = _mm512_add_ps(acc, e);
        }
        sum = _mm512_reduce_add_ps(acc);
    }
    return 1.0f / sum;
}

/* The V-sum part (kernels_impl.h, eng_attend_parts): 64 columns at a time in
 * four registers across the keys (masked loads for D not a multiple of 64). */
ALWAYS_INLINE void vsum_keys(float *out, const float *sc, float inv, const void *v, eng_dtype dt, int s0, int s1,
                             int D, int first)
{
    for (int d0 = 0; d0 < D; d0 += 64) {
        __mmask16 m[4];
        for (int i = 0; i < 4; i++) {
            int n = D - d0 - 16 * i;
            m[i] = n >= 16 ? (__mmask16)0xffff : n > 0 ? tail_mask(n) : (__mmask16)0;
        }
        __m512 o0 = _mm512_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
        if (!first) {
            o0 = _mm512_maskz_loadu_ps(m[0], out + d0);
            o1 = _mm512_maskz_loadu_ps(m[1], out + d0 + 16);
            o2 = _mm512_maskz_loadu_ps(m[2], out + d0 + 32);
            o3 = _mm512_maskz_loadu_ps(m[3], out + d0 + 48);
        }
        for (int s = s0; s < s1; s++) {
            if (sc[s] == 0.0f)
                continue;
            const __m512 p = _mm512_set1_ps(sc[s] * inv);
            const size_t r0 = (size_t)s * D + (size_t)d0;
            o0 = _mm512_fmadd_ps(p, load16_mask(v, dt, r0, m[0]), o0);
            o1 = _mm512_fmadd_ps(p, load16_mask(v, dt, r0 + 16, m[1]), o1);
            o2 = _mm512_fmadd_ps(p, load16_mask(v, dt, r0 + 32, m[2]), o2);
            o3 = _mm512_fmadd_ps(p, load16_mask(v, dt, r0 + 48, m[3]), o3);
        }
        _mm512_mask_storeu_ps(out + d0, m[0], o0);
        _mm512_mask_storeu_ps(out + d0 + 16, m[1], o1);
        _mm512_mask_storeu_ps(out + d0 + 32, m[2], o2);
        _mm512_mask_storeu_ps(out + d0 + 48, m[3], o3);
    }
}

static void vsum_avx512(float *out, const float *sc, float inv, const void *v, eng_dtype dt, int s0, int s1, int D,
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
    const int Dv = D / 16 * 16;
    const __mmask16 dmask = tail_mask(D - Dv);
    const size_t es = eng_dtype_size(dt);
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *qr[4];
        const int n = eng_attend_chunk4(qr, q, ldq, g0, G);
        for (int s = s0; s < s1; s += 2) {
            const int two = s + 1 < s1;
            const size_t r0 = (size_t)s * D, r1 = two ? r0 + (size_t)D : r0;
            if (g0 == 0)
                eng_prefetch_l1((const char *)v + r0 * es, (size_t)(1 + two) * D * es);
            __m512 a[2][4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                a[0][j] = a[1][j] = _mm512_setzero_ps();
            int d = 0;
            for (; d < Dv; d += 16) {
                const __m512 k0 = load16(k, dt, r0 + d), k1 = load16(k, dt, r1 + d);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m512 qv = _mm512_loadu_ps(qr[j] + d);
                    a[0][j] = _mm512_fmadd_ps(qv, k0, a[0][j]);
                    a[1][j] = _mm512_fmadd_ps(qv, k1, a[1][j]);
                }
            }
            if (d < D) {
                const __m512 k0 = load16_mask(k, dt, r0 + d, dmask), k1 = load16_mask(k, dt, r1 + d, dmask);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m512 qv = _mm512_maskz_loadu_ps(dmask, qr[j] + d);
                    a[0][j] = _mm512_fmadd_ps(qv, k0, a[0][j]);
                    a[1][j] = _mm512_fmadd_ps(qv, k1, a[1][j]);
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

/* score_group_keys for bf16 keys, qp = the G queries in pairs (x_in_pairs),
 * query g at qp + g * ldqp: four queries by two keys, an even and an odd
 * accumulator each (16), added and reduced as score_keys_pairs does. */
static void score_group_keys_pairs(float *sc, size_t ldsc, const float *qp, size_t ldqp, int G, const uint16_t *k,
                                   const uint16_t *v, int s0, int s1, int D)
{
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *qr[4];
        const int n = eng_attend_chunk4(qr, qp, ldqp, g0, G);
        for (int s = s0; s < s1; s += 2) {
            const int two = s + 1 < s1;
            const size_t r0 = (size_t)s * D, r1 = two ? r0 + (size_t)D : r0;
            if (g0 == 0)
                eng_prefetch_l1(v + r0, (size_t)(1 + two) * D * 2);
            __m512 ae[2][4], ao[2][4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                ae[0][j] = ae[1][j] = ao[0][j] = ao[1][j] = _mm512_setzero_ps();
            for (int d = 0; d < D; d += 32) {
                __m512 k0e, k0o, k1e, k1o;
                prec_bf16x32_pairs_to_ps(load_bf16x32(k + r0 + d, D - d), &k0e, &k0o);
                prec_bf16x32_pairs_to_ps(load_bf16x32(k + r1 + d, D - d), &k1e, &k1o);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m512 qe = _mm512_loadu_ps(qr[j] + d), qo = _mm512_loadu_ps(qr[j] + d + 16);
                    ae[0][j] = _mm512_fmadd_ps(qe, k0e, ae[0][j]);
                    ao[0][j] = _mm512_fmadd_ps(qo, k0o, ao[0][j]);
                    ae[1][j] = _mm512_fmadd_ps(qe, k1e, ae[1][j]);
                    ao[1][j] = _mm512_fmadd_ps(qo, k1o, ao[1][j]);
                }
            }
            _Alignas(16) float r[2][4];
#pragma GCC unroll 2
            for (int i = 0; i < 2; i++)
                _mm_store_ps(r[i], reduce4(_mm512_add_ps(ae[i][0], ao[i][0]), _mm512_add_ps(ae[i][1], ao[i][1]),
                                           _mm512_add_ps(ae[i][2], ao[i][2]), _mm512_add_ps(ae[i][3], ao[i][3])));
            for (int j = 0; j < n; j++) {
                sc[(size_t)(g0 + j) * ldsc + s] = r[0][j];
                if (two)
                    sc[(size_t)(g0 + j) * ldsc + s + 1] = r[1][j];
            }
        }
    }
}

static void score_group_avx512(float *sc, size_t ldsc, const float *q, size_t ldq, int G, const void *k,
                               const void *v, eng_dtype dt, int s0, int s1, int D)
{
    switch (dt) {
    case ENG_F16: score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_F16, s0, s1, D); break;
    case ENG_BF16:
        if (D <= ENG_ATTEND_PAIRS_MAX_D) {
            _Alignas(64) float qp[ENG_ATTEND_GROUP_MAX * ENG_ATTEND_PAIRS_MAX_D];
            const size_t ldqp = (size_t)(D + 31) / 32 * 32;
            for (int g = 0; g < G; g++)
                x_in_pairs(qp + (size_t)g * ldqp, q + (size_t)g * ldq, D);
            score_group_keys_pairs(sc, ldsc, qp, ldqp, G, k, v, s0, s1, D);
        } else
            score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_BF16, s0, s1, D);
        break;
    default: score_group_keys(sc, ldsc, q, ldq, G, k, v, ENG_F32, s0, s1, D); break;
    }
}

/* The group V-sum part (kernels_impl.h, eng_attend_parts): four outputs by
 * 32 columns at a time (eight registers), each V vector loaded and converted
 * once for the four; a chunk of fewer than four repeats its last query and
 * stores only its n. A key no query keeps is skipped (its V row is not
 * read); one that some query drops adds 0 * v to that query's sums. */
ALWAYS_INLINE void vsum_group_keys(float *out, size_t ldo, const float *pw, const unsigned char *any, int G,
                                   const void *v, eng_dtype dt, int s0, int s1, int D, int first)
{
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *p[4];
        const int n = eng_attend_chunk4(p, pw, ENG_ATTEND_KB, g0, G);
        for (int d0 = 0; d0 < D; d0 += 32) {
            const int c0 = D - d0 < 16 ? D - d0 : 16, c1 = D - d0 - 16 < 0 ? 0 : D - d0 - 16 < 16 ? D - d0 - 16 : 16;
            const __mmask16 m0 = tail_mask(c0), m1 = c1 == 16 ? (__mmask16)0xffff : tail_mask(c1);
            __m512 o[4][2];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                o[j][0] = o[j][1] = _mm512_setzero_ps();
                if (!first && j < n) {
                    o[j][0] = _mm512_maskz_loadu_ps(m0, out + (size_t)(g0 + j) * ldo + d0);
                    o[j][1] = _mm512_maskz_loadu_ps(m1, out + (size_t)(g0 + j) * ldo + d0 + 16);
                }
            }
            for (int s = s0; s < s1; s++) {
                if (!any[s - s0])
                    continue;
                const size_t r0 = (size_t)s * D + (size_t)d0;
                const __m512 v0 = load16_mask(v, dt, r0, m0), v1 = load16_mask(v, dt, r0 + 16, m1);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m512 pj = _mm512_set1_ps(p[j][s - s0]);
                    o[j][0] = _mm512_fmadd_ps(pj, v0, o[j][0]);
                    o[j][1] = _mm512_fmadd_ps(pj, v1, o[j][1]);
                }
            }
            for (int j = 0; j < n; j++) {
                _mm512_mask_storeu_ps(out + (size_t)(g0 + j) * ldo + d0, m0, o[j][0]);
                _mm512_mask_storeu_ps(out + (size_t)(g0 + j) * ldo + d0 + 16, m1, o[j][1]);
            }
        }
    }
}

/* vsum_group_keys for bf16 values: four outputs by 32 columns in pair order
 * (eight registers), each load of 32 values split once for the four. */
static void vsum_group_keys_pairs(float *out, size_t ldo, const float *pw, const unsigned char *any, int G,
                                  const uint16_t *v, int s0, int s1, int D, int first)
{
    for (int g0 = 0; g0 < G; g0 += 4) {
        const float *p[4];
        const int n = eng_attend_chunk4(p, pw, ENG_ATTEND_KB, g0, G);
        for (int d0 = 0; d0 < D; d0 += 32) {
            const int c = D - d0 < 32 ? D - d0 : 32;
            __m512 oe[4], oo[4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                oe[j] = oo[j] = _mm512_setzero_ps();
                if (!first && j < n)
                    ps_to_pairs(out + (size_t)(g0 + j) * ldo + d0, c, &oe[j], &oo[j]);
            }
            for (int s = s0; s < s1; s++) {
                if (!any[s - s0])
                    continue;
                __m512 ve, vo;
                prec_bf16x32_pairs_to_ps(load_bf16x32(v + (size_t)s * D + d0, c), &ve, &vo);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const __m512 pj = _mm512_set1_ps(p[j][s - s0]);
                    oe[j] = _mm512_fmadd_ps(pj, ve, oe[j]);
                    oo[j] = _mm512_fmadd_ps(pj, vo, oo[j]);
                }
            }
            for (int j = 0; j < n; j++)
                pairs_to_ps(out + (size_t)(g0 + j) * ldo + d0, c, oe[j], oo[j]);
        }
    }
}

static void vsum_group_avx512(float *out, size_t ldo, const float *pw, const unsigned char *any, int G,
                              const void *v, eng_dtype dt, int s0, int s1, int D, int first)
{
    switch (dt) {
    case ENG_F16: vsum_group_keys(out, ldo, pw, any, G, v, ENG_F16, s0, s1, D, first); break;
    case ENG_BF16: vsum_group_keys_pairs(out, ldo, pw, any, G, v, s0, s1, D, first); break;
    default: vsum_group_keys(out, ldo, pw, any, G, v, ENG_F32, s0, s1, D, first); break;
    }
}

static const eng_attend_parts attend_parts_avx512 = {score_avx512, softmax_avx512, vsum_avx512, score_group_avx512,
                                                     vsum_group_avx512};

ENG_ATTEND_ENTRIES(avx512, attend_parts_avx512)

/* ---- the column path's tiles (kernels_cols.c) ------------------------------ */

enum {
    COLS_MIN_M = 16, /* rows of x from which linear takes the column path */
    COLS_KC = 256,   /* columns of w per panel: the tiles' row stride of pk */
    COLS_NP = 24,    /* rows of w per panel */
};

_Static_assert((int)COLS_NP <= (int)ENG_COLS_NP_MAX && (int)COLS_KC <= (int)ENG_COLS_KC_MAX, "the column path's buffers hold the panel");

/* One k step of a column tile: a[j][v] += xr[V v .. V v + V) * (row j of r). */
ALWAYS_INLINE void col_step(int MV, int NR, __m512 a[][2], const float *xr, const eng_cols_rows *r)
{
    __m512 xv[2];
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++)
        xv[v] = _mm512_loadu_ps(xr + 16 * v);
#pragma GCC unroll 24
    for (int j = 0; j < NR; j++) {
        const __m512 b = _mm512_set1_ps(*eng_cols_row(r, j));
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            a[j][v] = _mm512_fmadd_ps(xv[v], b, a[j][v]);
    }
}

/* acc[j][i] += sum_{k < kc} xt[k][i] * pk[j][k] for i < 16 * MV, j < NR:
 * 16 * MV rows of x in MV vectors, each weight broadcast once per vector. */
ALWAYS_INLINE void col_tile(int MV, int NR, int IN_PLACE, const float *xt, size_t ldxt, const float *pk, size_t ldpk,
                            int kc, float *acc, size_t ldacc, eng_cols_prefetch pf)
{
    __m512 a[COLS_NP][2];
#pragma GCC unroll 24
    for (int j = 0; j < NR; j++)
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            a[j][v] = _mm512_loadu_ps(acc + (size_t)j * ldacc + 16 * v);
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
#pragma GCC unroll 24
    for (int j = 0; j < NR; j++)
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
            _mm512_storeu_ps(acc + (size_t)j * ldacc + 16 * v, a[j][v]);
}

ENG_COLS_TILES(16x24, 1, 24)
ENG_COLS_TILES(32x12, 2, 12)

/* A panel row in fp32: the tiles' loads, in registers (int8 without its scale). */
ALWAYS_INLINE void pack_row_dt(float *dst, const void *w, eng_dtype dt, int n)
{
    int k = 0;
    for (; k + 16 <= n; k += 16)
        _mm512_storeu_ps(dst + k, load16(w, dt, (size_t)k));
    if (k < n)
        _mm512_mask_storeu_ps(dst + k, tail_mask(n - k), load16_mask(w, dt, (size_t)k, tail_mask(n - k)));
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

static const eng_cols_spec cols_avx512 = {
    .lanes = 16,
    .np = COLS_NP,
    .kc = COLS_KC,
    .nr = {24, 12},
    .tile = {col_tile_16x24, col_tile_32x12},
    .tile_f32 = {col_tile_16x24_w, col_tile_32x12_w},
    .pack_row = col_pack_row,
    .transpose = eng_cols_transpose_avx,
};

/* ---- linear ---------------------------------------------------------------- */

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
    for (int n = n0; n < n1; n += 4) {
        int nr = n1 - n < 4 ? n1 - n : 4;
        const char *wn = (const char *)w + (size_t)n * K * es;
        for (int m = 0; m < M; m += 4) {
            int mr = M - m < 4 ? M - m : 4;
            const void *wpf = m == 0 && n + 4 < n1 ? wn + (size_t)4 * K * es : NULL;
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
                to_f32_avx512(pack + (size_t)r * KB, (const char *)w + ((size_t)(nb + r) * K + kb) * es, wt, (size_t)kbn);
            const float *panel = pack;
            const size_t ldp = KB;
            int first = kb == 0, last = kb + kbn >= K;
            for (int m = 0; m < M; m += 4) {
                int mr = M - m < 4 ? M - m : 4;
                const float *xm = x + (size_t)m * K + kb;
                for (int n = 0; n < nbn; n += 4) {
                    int nr = nbn - n < 4 ? nbn - n : 4;
                    tiles[ENG_F32][mr - 1][nr - 1](xm, (size_t)K, panel + (size_t)n * ldp, ldp, kbn, NULL, out);
                    tile_store(y, N, m, mr, nb + n, nr, out, scale, bias, first, last, relu);
                }
            }
        }
    }
}

static void linear_avx512(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K,
                          int N, int n0, int n1, int relu)
{
    if (n0 >= n1 || M <= 0)
        return;
    if (wt == ENG_W8A8)
        eng_linear_w8a8(eng_vnni_for_family(ENG_ISA_AVX512), y, x, w, bias, M, K, N, n0, n1, relu);
    else if (M >= COLS_MIN_M)
        eng_linear_cols(&cols_avx512, y, x, w, wt, bias, M, K, N, n0, n1, relu);
    else if ((long)M * K <= DIRECT_MAX_XK)
        linear_direct(y, x, w, wt, bias, M, K, N, n0, n1, relu);
    else
        linear_blocked(y, x, w, wt, bias, M, K, N, n0, n1, relu);
}

/* ---- AVX512-BF16: linear with bf16 weights through _mm512_dpbf16_ps --------- */

/* out[m][n] = sum_k xb[m * ldx + k] * w[n * K + k] (bf16 x bf16, fp32 sums);
 * xb rows are zero-padded to a multiple of 32. wpf: as in tile(). */
ALWAYS_INLINE void tile_dp(int MR, int NR, const uint16_t *xb, size_t ldx, const uint16_t *w, size_t ldw, int K,
                           const uint16_t *wpf, float out[4][4])
{
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
#pragma GCC unroll 4
        for (int n = 0; n < 4; n++)
            acc[m][n] = _mm512_setzero_ps();
    for (int k = 0; k < K; k += 32) {
        __m512i wv[4];
        if (wpf)
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                _mm_prefetch((const char *)(wpf + n * ldw + k), _MM_HINT_T0);
        if (k + 32 <= K) {
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                wv[n] = _mm512_loadu_si512(w + n * ldw + k);
        } else {
            __mmask32 mask = (__mmask32)((1ull << (K - k)) - 1u);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                wv[n] = _mm512_maskz_loadu_epi16(mask, w + n * ldw + k);
        }
#pragma GCC unroll 4
        for (int m = 0; m < MR; m++) {
            __m512bh xv = (__m512bh)_mm512_loadu_si512(xb + m * ldx + k);
#pragma GCC unroll 4
            for (int n = 0; n < NR; n++)
                acc[m][n] = _mm512_dpbf16_ps(acc[m][n], xv, (__m512bh)wv[n]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < MR; m++)
        _mm_storeu_ps(out[m], reduce4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
}

typedef void (*tile_dp_fn)(const uint16_t *xb, size_t ldx, const uint16_t *w, size_t ldw, int K, const uint16_t *wpf,
                           float out[4][4]);
#define TILE_DP_FN(MR, NR)                                                                                             \
    static void tile_dp_##MR##_##NR(const uint16_t *xb, size_t ldx, const uint16_t *w, size_t ldw, int K,            \
                                    const uint16_t *wpf, float out[4][4])                                              \
    {                                                                                                                  \
        tile_dp(MR, NR, xb, ldx, w, ldw, K, wpf, out);                                                                 \
    }
#define TILE_DP_ROW(MR) TILE_DP_FN(MR, 1) TILE_DP_FN(MR, 2) TILE_DP_FN(MR, 3) TILE_DP_FN(MR, 4)
TILE_DP_ROW(1)
TILE_DP_ROW(2)
TILE_DP_ROW(3)
TILE_DP_ROW(4)
static const tile_dp_fn tiles_dp[4][4] = {
    {tile_dp_1_1, tile_dp_1_2, tile_dp_1_3, tile_dp_1_4}, {tile_dp_2_1, tile_dp_2_2, tile_dp_2_3, tile_dp_2_4},
    {tile_dp_3_1, tile_dp_3_2, tile_dp_3_3, tile_dp_3_4}, {tile_dp_4_1, tile_dp_4_2, tile_dp_4_3, tile_dp_4_4}};

/* The vdpbf16ps 1-row tile (M = 1, the B = 1 decode step):
 * out[n] = sum_{k < K} xb[k] * w[n * ldw + k] for n < NR <= ENG_ROW_NR, xb
 * x rounded to bf16 and zero-padded to a multiple of 32 (x_to_bf16). Two
 * accumulators per weight row (the even and the odd 32-column steps, so 8
 * chains hide vdpbf16ps's latency), added together and reduced with
 * reduce4's tree whatever NR, so a row's sum does not depend on its group.
 * Prefetches as row_tile does: the same rows and columns of near (into L1)
 * and far (into L2), or of w itself when NULL. */
ALWAYS_INLINE void row_tile_dp(int NR, const uint16_t *xb, const uint16_t *w, size_t ldw, int K, const void *near,
                               const void *far, float out[ENG_ROW_NR])
{
    __m512 acc[ENG_ROW_NR][2];
#pragma GCC unroll 4
    for (int n = 0; n < ENG_ROW_NR; n++)
        acc[n][0] = acc[n][1] = _mm512_setzero_ps();
    const char *pn = near ? (const char *)near : (const char *)w, *pf = far ? (const char *)far : (const char *)w;
    int k = 0;
    for (; k + 64 <= K; k += 64) { /* 128 bytes of each row: two lines */
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++) {
            const size_t off = (n * ldw + (size_t)k) * sizeof(uint16_t);
            _mm_prefetch(pn + off, _MM_HINT_T0);
            _mm_prefetch(pn + off + 64, _MM_HINT_T0);
            _mm_prefetch(pf + off, _MM_HINT_T1);
            _mm_prefetch(pf + off + 64, _MM_HINT_T1);
        }
        const __m512bh xa = (__m512bh)_mm512_loadu_si512(xb + k), xc = (__m512bh)_mm512_loadu_si512(xb + k + 32);
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++) {
            acc[n][0] = _mm512_dpbf16_ps(acc[n][0], xa, (__m512bh)_mm512_loadu_si512(w + n * ldw + k));
            acc[n][1] = _mm512_dpbf16_ps(acc[n][1], xc, (__m512bh)_mm512_loadu_si512(w + n * ldw + k + 32));
        }
    }
    for (; k < K; k += 32) { /* the last 1 or 2 steps of 32 (the last one masked) */
        const __mmask32 mask = K - k >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (K - k)) - 1u);
        const __m512bh xa = (__m512bh)_mm512_loadu_si512(xb + k);
#pragma GCC unroll 4
        for (int n = 0; n < NR; n++)
            acc[n][0] = _mm512_dpbf16_ps(acc[n][0], xa, (__m512bh)_mm512_maskz_loadu_epi16(mask, w + n * ldw + k));
    }
    _mm_storeu_ps(out, reduce4(_mm512_add_ps(acc[0][0], acc[0][1]), _mm512_add_ps(acc[1][0], acc[1][1]),
                               _mm512_add_ps(acc[2][0], acc[2][1]), _mm512_add_ps(acc[3][0], acc[3][1])));
}

typedef void (*row_dp_fn)(const uint16_t *xb, const uint16_t *w, size_t ldw, int K, const void *near,
                          const void *far, float out[ENG_ROW_NR]);
#define ROW_DP_FN(NR)                                                                                                  \
    static void row_dp_##NR(const uint16_t *xb, const uint16_t *w, size_t ldw, int K, const void *near,               \
                            const void *far, float out[ENG_ROW_NR])                                                    \
    {                                                                                                                  \
        row_tile_dp(NR, xb, w, ldw, K, near, far, out);                                                                \
    }
ROW_DP_FN(1)
ROW_DP_FN(2)
ROW_DP_FN(3)
ROW_DP_FN(4)
static const row_dp_fn rows_dp[ENG_ROW_NR] = {row_dp_1, row_dp_2, row_dp_3, row_dp_4};

/* Rounds rows [m0, m0 + mr) and columns [k0, k0 + kn) of x to bf16 into
 * xb[mr, ldb], zero-padded to a multiple of 32 columns. */
static void x_to_bf16(uint16_t *xb, size_t ldb, const float *x, int K, int m0, int mr, int k0, int kn)
{
    int knp = (kn + 31) & ~31;
    for (int m = 0; m < mr; m++) {
        const float *xr = x + (size_t)(m0 + m) * K + k0;
        uint16_t *xbr = xb + (size_t)m * ldb;
        for (int k = 0; k < knp; k += 32) {
            __mmask16 lo = k + 16 <= kn ? 0xffff : (k < kn ? tail_mask(kn - k) : 0);
            __mmask16 hi = k + 32 <= kn ? 0xffff : (k + 16 < kn ? tail_mask(kn - k - 16) : 0);
            __m512 vlo = _mm512_maskz_loadu_ps(lo, xr + k), vhi = _mm512_maskz_loadu_ps(hi, xr + k + 16);
            _mm512_storeu_si512(xbr + k, (__m512i)_mm512_cvtne2ps_pbh(vhi, vlo));
        }
    }
}

/* M = 1 with bf16 weights: eng_linear_row's loop (kernels_impl.h: groups of
 * ENG_ROW_NR rows, the L1 and L2 prefetch distances) over row_tile_dp, x
 * rounded to bf16 once per call. */
static void linear_row_dp(float *y, const float *x, const uint16_t *w, const float *bias, int K, int n0, int n1,
                          int relu)
{
    _Alignas(64) uint16_t xb[DIRECT_MAX_XK];
    x_to_bf16(xb, (size_t)((K + 31) & ~31), x, K, 0, 1, 0, K);
    const size_t group_bytes = (size_t)ENG_ROW_NR * K * sizeof(uint16_t);
    const size_t near_bytes = group_bytes < ENG_ROW_PF_NEAR ? group_bytes : ENG_ROW_PF_NEAR;
    const char *const wend = (const char *)(w + (size_t)n1 * K);
    float out[ENG_ROW_NR];
    for (int n = n0; n < n1; n += ENG_ROW_NR) {
        const int nr = n1 - n < ENG_ROW_NR ? n1 - n : ENG_ROW_NR;
        const uint16_t *wn = w + (size_t)n * K;
        const void *near = n + ENG_ROW_NR < n1 ? (const char *)wn + near_bytes : NULL;
        const void *far = (size_t)(wend - (const char *)wn) >= ENG_ROW_PF_FAR + group_bytes
                              ? (const char *)wn + ENG_ROW_PF_FAR : NULL;
        rows_dp[nr - 1](xb, wn, (size_t)K, K, near, far, out);
        for (int j = 0; j < nr; j++) {
            float v = out[j] + (bias ? bias[n + j] : 0.0f);
            if (relu && v < 0.0f)
                v = 0.0f;
            y[n + j] = v;
        }
    }
}

enum {
    NB_DP = 128,  /* blocked dpbf16 path: rows of w per block */
    KB_DP = 1024, /* columns per block (NB_DP * KB_DP * 2 = 256 KiB of L2, read in place) */
};

static void linear_avx512_bf16(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K,
                               int N, int n0, int n1, int relu)
{
    if (n0 >= n1 || M <= 0)
        return;
    if (wt != ENG_BF16) {
        linear_avx512(y, x, w, wt, bias, M, K, N, n0, n1, relu);
        return;
    }
    const uint16_t *wb = w;
    const float *const scale = NULL; /* bf16 weights have no scales */
    float out[4][4];
    int Kp = (K + 31) & ~31;
    if (M == 1 && Kp <= DIRECT_MAX_XK) {
        linear_row_dp(y, x, wb, bias, K, n0, n1, relu);
        return;
    }
    if ((long)M * Kp <= DIRECT_MAX_XK) {
        /* direct: x rounded to bf16 once per call (128 KiB at most), weights streamed once */
        _Alignas(64) uint16_t xb[DIRECT_MAX_XK];
        x_to_bf16(xb, (size_t)Kp, x, K, 0, M, 0, K);
        for (int n = n0; n < n1; n += 4) {
            int nr = n1 - n < 4 ? n1 - n : 4;
            const uint16_t *wn = wb + (size_t)n * K;
            for (int m = 0; m < M; m += 4) {
                int mr = M - m < 4 ? M - m : 4;
                const uint16_t *wpf = m == 0 && n + 4 < n1 ? wn + (size_t)4 * K : NULL;
                tiles_dp[mr - 1][nr - 1](xb + (size_t)m * Kp, (size_t)Kp, wn, (size_t)K, K, wpf, out);
                tile_store(y, N, m, mr, n, nr, out, scale, bias, 1, 1, relu);
            }
        }
        return;
    }
    /* blocked: a block of NB_DP x KB bf16 weights stays in L2 while every
     * 4-row tile of x, rounded to bf16 on the way (cheap next to the dot
     * products), runs over it */
    _Alignas(64) uint16_t xb[4 * KB_DP];
    for (int nb = n0; nb < n1; nb += NB_DP) {
        int nbn = n1 - nb < NB_DP ? n1 - nb : NB_DP;
        for (int kb = 0; kb < K; kb += KB_DP) {
            int kbn = K - kb < KB_DP ? K - kb : KB_DP;
            int first = kb == 0, last = kb + kbn >= K;
            for (int m = 0; m < M; m += 4) {
                int mr = M - m < 4 ? M - m : 4;
                x_to_bf16(xb, KB_DP, x, K, m, mr, kb, kbn);
                for (int n = 0; n < nbn; n += 4) {
                    int nr = nbn - n < 4 ? nbn - n : 4;
                    tiles_dp[mr - 1][nr - 1](xb, KB_DP, wb + (size_t)(nb + n) * K + kb, (size_t)K, kbn, NULL, out);
                    tile_store(y, N, m, mr, nb + n, nr, out, scale, bias, first, last, relu);
                }
            }
        }
    }
}

/* ---- tables --------------------------------------------------------------- */

static const eng_kernels kernels_avx512 = {
    .isa = ENG_ISA_AVX512,
    .linear = linear_avx512,
    .dot = dot_avx512,
    .axpy = axpy_avx512,
    .attend = attend_avx512,
    .attend_split = attend_split_avx512,
    .attend_group = attend_group_avx512,
    .to_f32 = to_f32_avx512,
    .from_f32 = from_f32_avx512,
};

static const eng_kernels kernels_avx512_bf16 = {
    .isa = ENG_ISA_AVX512_BF16,
    .linear = linear_avx512_bf16,
    .dot = dot_avx512,
    .axpy = axpy_avx512,
    .attend = attend_avx512,
    .attend_split = attend_split_avx512,
    .attend_group = attend_group_avx512,
    .to_f32 = to_f32_avx512,
    .from_f32 = from_f32_avx512,
};

const eng_kernels *eng_kernels_avx512(void) { return &kernels_avx512; }
const eng_kernels *eng_kernels_avx512_bf16(void) { return &kernels_avx512_bf16; }

/* ---- vdpbf16ps against vfmadd231ps, on this core ----------------------- */

enum { PROBE_CHAINS = 16, PROBE_STEPS = 4096, PROBE_ROUNDS = 5 };

/* The ms that PROBE_STEPS steps of PROBE_CHAINS independent chains of STEP
 * (acc = STEP(acc)) take, into *ms; the chains stay in registers (no
 * barrier inside the loop: one would put them in memory and time its
 * latency instead) and their sum goes to *sink, so nothing is dropped. */
#define PROBE_CHAINS_MS(STEP, ms, sink)                                                                                \
    do {                                                                                                               \
        __m512 acc[PROBE_CHAINS];                                                                                      \
        for (int c = 0; c < PROBE_CHAINS; c++)                                                                         \
            acc[c] = _mm512_set1_ps((float)c);                                                                         \
        const double t0 = eng_now_ms();                                                                                \
        for (int i = 0; i < PROBE_STEPS; i++)                                                                          \
            _Pragma("GCC unroll 16") for (int c = 0; c < PROBE_CHAINS; c++) acc[c] = STEP(acc[c]);                     \
        *(ms) = eng_now_ms() - t0;                                                                                     \
        __m512 sum = acc[0];                                                                                           \
        for (int c = 1; c < PROBE_CHAINS; c++)                                                                         \
            sum = _mm512_add_ps(sum, acc[c]);                                                                          \
        *(sink) += _mm512_reduce_add_ps(sum);                                                                          \
    } while (0)

/* fp32 FMA: 32 flops per instruction. */
static double probe_fma_ms(float *sink)
{
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
    double ms;
#define FMA_STEP(c) _mm512_fmadd_ps(c, a, b)
    PROBE_CHAINS_MS(FMA_STEP, &ms, sink);
#undef FMA_STEP
    return ms;
}

/* vdpbf16ps: 32 bf16 pairs, 64 flops per instruction. */
static double probe_dpbf16_ms(float *sink)
{
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
    double ms;
#define DP_STEP(c) _mm512_dpbf16_ps(c, x, y)
    PROBE_CHAINS_MS(DP_STEP, &ms, sink);
#undef DP_STEP
    return ms;
}

double eng_avx512_dpbf16_over_fma(void)
{
    float sink = 0.0f;
    double fma_ms = INFINITY, dp_ms = INFINITY;
    for (int r = 0; r < PROBE_ROUNDS; r++) { /* alternating, the best of each: load hits both alike */
        fma_ms = fmin(fma_ms, probe_fma_ms(&sink));
        dp_ms = fmin(dp_ms, probe_dpbf16_ms(&sink));
    }
    if (!(sink == sink) || !(fma_ms > 0.0) || !(dp_ms > 0.0))
        return 0.0;
    return (64.0 / dp_ms) / (32.0 / fma_ms); /* flops per ms of each, same instruction count */
}

#else /* built without the AVX-512 flags: never selected */

const eng_kernels *eng_kernels_avx512(void) { return NULL; }
const eng_kernels *eng_kernels_avx512_bf16(void) { return NULL; }
double eng_avx512_dpbf16_over_fma(void) { return 0.0; }

#endif
