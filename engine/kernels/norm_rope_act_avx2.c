/* norm_rope_act_avx2.c: the RMSNorm, RoPE and SiLU-times-gate row kernels
 * (norm_rope_act.h) in AVX2 + FMA, 8 floats a vector, tails by masked
 * load/store. Built with -mavx2 -mfma (norm_rope_act.cmake); run only on a
 * CPU of tier avx2 or above. */
#include "norm_rope_act.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

/* Lanes [0, n) on, n in [0, 8]. */
static inline __m256i tail_mask8(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* exp(x) for x clamped to [-87, 88]: x = n ln2 + r, |r| <= ln2 / 2, a degree-7
 * polynomial for e^r (Cephes expf's published coefficients), times 2^n from
 * the exponent bits. About 1 ulp. */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
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
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* x, y [N, C]; w [C]. */
static void rms_norm_rows_avx2(float *y, const float *x, const float *w, int N, int C, float eps)
{
    int c8 = C & ~7;
    __m256i m = tail_mask8(C - c8);
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        float *yr = y + (size_t)n * C;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        int c = 0;
        for (; c + 16 <= C; c += 16) {
            __m256 a = _mm256_loadu_ps(xr + c), b = _mm256_loadu_ps(xr + c + 8);
            s0 = _mm256_fmadd_ps(a, a, s0);
            s1 = _mm256_fmadd_ps(b, b, s1);
        }
        for (; c < c8; c += 8) {
            __m256 a = _mm256_loadu_ps(xr + c);
            s0 = _mm256_fmadd_ps(a, a, s0);
        }
        if (c8 < C) {
            __m256 a = _mm256_maskload_ps(xr + c8, m);
            s1 = _mm256_fmadd_ps(a, a, s1);
        }
        float var = hsum8(_mm256_add_ps(s0, s1)) / (float)C;
        __m256 r = _mm256_set1_ps(1.0f / sqrtf(var + eps));
        for (c = 0; c < c8; c += 8)
            _mm256_storeu_ps(yr + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + c), r), _mm256_loadu_ps(w + c)));
        if (c8 < C)
            _mm256_maskstore_ps(yr + c8, m,
                                _mm256_mul_ps(_mm256_mul_ps(_mm256_maskload_ps(xr + c8, m), r),
                                              _mm256_maskload_ps(w + c8, m)));
    }
}

/* x: T rows of Hn * D at row_stride; cos_pd, sin_pd [P, D/2]; pos [T]. The
 * products and differences unfused, as the portable kernel computes them. */
static void rope_rows_avx2(float *x, int T, int Hn, int D, size_t row_stride, const int *pos, const float *cos_pd,
                           const float *sin_pd)
{
    int half = D / 2, h8 = half & ~7;
    __m256i m = tail_mask8(half - h8);
    for (int t = 0; t < T; t++) {
        const float *cs = cos_pd + (size_t)pos[t] * half;
        const float *sn = sin_pd + (size_t)pos[t] * half;
        for (int h = 0; h < Hn; h++) {
            float *v = x + (size_t)t * row_stride + (size_t)h * D;
            for (int i = 0; i < h8; i += 8) {
                __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + half + i);
                __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
                _mm256_storeu_ps(v + i, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
                _mm256_storeu_ps(v + half + i, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
            }
            if (h8 < half) {
                __m256 a = _mm256_maskload_ps(v + h8, m), b = _mm256_maskload_ps(v + half + h8, m);
                __m256 c = _mm256_maskload_ps(cs + h8, m), s = _mm256_maskload_ps(sn + h8, m);
                _mm256_maskstore_ps(v + h8, m, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
                _mm256_maskstore_ps(v + half + h8, m, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
            }
        }
    }
}

static inline __m256 silu_mul8(__m256 g, __m256 u)
{
    __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

/* gate, up, y [N, F], as one run of N * F values. */
static void silu_mul_rows_avx2(float *y, const float *gate, const float *up, int N, int F)
{
    size_t n = (size_t)N * F, i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) {
        __m256i m = tail_mask8((int)(n - i));
        _mm256_maskstore_ps(y + i, m, silu_mul8(_mm256_maskload_ps(gate + i, m), _mm256_maskload_ps(up + i, m)));
    }
}

static float logsumexp_avx2(const float *x, int n)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 m0 = ninf, m1 = ninf;
    int v = 0;
    for (; v + 16 <= n; v += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + v));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + v + 8));
    }
    float mx;
    __m256 mm = _mm256_max_ps(m0, m1);
    float lanes[8];
    _mm256_storeu_ps(lanes, mm);
    mx = lanes[0];
    for (int i = 1; i < 8; i++) mx = lanes[i] > mx ? lanes[i] : mx;
    for (; v < n; v++) mx = x[v] > mx ? x[v] : mx;
    if (mx == -INFINITY || mx != mx) return mx;
    const __m256 vm = _mm256_set1_ps(mx);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (v = 0; v + 16 <= n; v += 16) {
        s0 = _mm256_add_ps(s0, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + v), vm)));
        s1 = _mm256_add_ps(s1, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + v + 8), vm)));
    }
    for (; v + 8 <= n; v += 8) s0 = _mm256_add_ps(s0, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + v), vm)));
    if (v < n) {
        __m256i k = tail_mask8(n - v);
        __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + v, k), vm));
        s0 = _mm256_add_ps(s0, _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    return mx + logf(hsum8(_mm256_add_ps(s0, s1)));
}

static const eng_nra_kernels avx2_table = {
    .isa = "avx2",
    .rms_norm_rows = rms_norm_rows_avx2,
    .rope_rows = rope_rows_avx2,
    .silu_mul_rows = silu_mul_rows_avx2,
    .logsumexp = logsumexp_avx2,
};

const eng_nra_kernels *eng_nra_avx2(void) { return &avx2_table; }

#else

const eng_nra_kernels *eng_nra_avx2(void) { return NULL; }

#endif
