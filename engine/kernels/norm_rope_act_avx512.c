/* norm_rope_act_avx512.c: the RMSNorm, RoPE and SiLU-times-gate row kernels
 * (norm_rope_act.h) in AVX-512 F, 16 floats a vector, tails by masked
 * load/store. Built with the AVX-512 flags (norm_rope_act.cmake); run only on
 * a CPU of tier avx512 or above. */
#include "norm_rope_act.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

/* Lanes [0, n) on, n in [0, 16]. */
static inline __mmask16 tail_mask16(int n) { return (__mmask16)((1u << n) - 1u); }

/* exp(x) for x clamped to [-87, 88], as norm_rope_act_avx2.c's exp8. */
static inline __m512 exp16(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
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
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/* x, y [N, C]; w [C]. */
static void rms_norm_rows_avx512(float *y, const float *x, const float *w, int N, int C, float eps)
{
    int c16 = C & ~15;
    __mmask16 m = tail_mask16(C - c16);
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        float *yr = y + (size_t)n * C;
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
        int c = 0;
        for (; c + 32 <= C; c += 32) {
            __m512 a = _mm512_loadu_ps(xr + c), b = _mm512_loadu_ps(xr + c + 16);
            s0 = _mm512_fmadd_ps(a, a, s0);
            s1 = _mm512_fmadd_ps(b, b, s1);
        }
        for (; c < c16; c += 16) {
            __m512 a = _mm512_loadu_ps(xr + c);
            s0 = _mm512_fmadd_ps(a, a, s0);
        }
        if (m) {
            __m512 a = _mm512_maskz_loadu_ps(m, xr + c16);
            s1 = _mm512_fmadd_ps(a, a, s1);
        }
        float var = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / (float)C;
        __m512 r = _mm512_set1_ps(1.0f / sqrtf(var + eps));
        for (c = 0; c < c16; c += 16)
            _mm512_storeu_ps(yr + c, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + c), r), _mm512_loadu_ps(w + c)));
        if (m)
            _mm512_mask_storeu_ps(yr + c16, m,
                                  _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + c16), r),
                                                _mm512_maskz_loadu_ps(m, w + c16)));
    }
}

/* x: T rows of Hn * D at row_stride; cos_pd, sin_pd [P, D/2]; pos [T]. The
 * products and differences unfused, as the portable kernel computes them. */
static void rope_rows_avx512(float *x, int T, int Hn, int D, size_t row_stride, const int *pos,
                             const float *cos_pd, const float *sin_pd)
{
    int half = D / 2, h16 = half & ~15;
    __mmask16 m = tail_mask16(half - h16);
    for (int t = 0; t < T; t++) {
        const float *cs = cos_pd + (size_t)pos[t] * half;
        const float *sn = sin_pd + (size_t)pos[t] * half;
        for (int h = 0; h < Hn; h++) {
            float *v = x + (size_t)t * row_stride + (size_t)h * D;
            for (int i = 0; i < h16; i += 16) {
                __m512 a = _mm512_loadu_ps(v + i), b = _mm512_loadu_ps(v + half + i);
                __m512 c = _mm512_loadu_ps(cs + i), s = _mm512_loadu_ps(sn + i);
                _mm512_storeu_ps(v + i, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
                _mm512_storeu_ps(v + half + i, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
            }
            if (m) {
                __m512 a = _mm512_maskz_loadu_ps(m, v + h16), b = _mm512_maskz_loadu_ps(m, v + half + h16);
                __m512 c = _mm512_maskz_loadu_ps(m, cs + h16), s = _mm512_maskz_loadu_ps(m, sn + h16);
                _mm512_mask_storeu_ps(v + h16, m, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
                _mm512_mask_storeu_ps(v + half + h16, m, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
            }
        }
    }
}

static inline __m512 silu_mul16(__m512 g, __m512 u)
{
    __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

/* gate, up, y [N, F], as one run of N * F values. */
static void silu_mul_rows_avx512(float *y, const float *gate, const float *up, int N, int F)
{
    size_t n = (size_t)N * F, i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, silu_mul16(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
    if (i < n) {
        __mmask16 m = tail_mask16((int)(n - i));
        _mm512_mask_storeu_ps(y + i, m,
                              silu_mul16(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
    }
}

static float logsumexp_avx512(const float *x, int n)
{
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    int v = 0;
    for (; v + 32 <= n; v += 32) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + v));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + v + 16));
    }
    for (; v < n; v += 16)
        m0 = _mm512_max_ps(m0, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask16(n - v < 16 ? n - v : 16), x + v));
    const float mx = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    if (mx == -INFINITY || mx != mx) return mx;
    const __m512 vm = _mm512_set1_ps(mx);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (v = 0; v + 32 <= n; v += 32) {
        s0 = _mm512_add_ps(s0, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + v), vm)));
        s1 = _mm512_add_ps(s1, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + v + 16), vm)));
    }
    for (; v < n; v += 16) {
        __mmask16 k = tail_mask16(n - v < 16 ? n - v : 16);
        s0 = _mm512_add_ps(s0, _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + v), vm))));
    }
    return mx + logf(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
}

static const eng_nra_kernels avx512_table = {
    .isa = "avx512",
    .rms_norm_rows = rms_norm_rows_avx512,
    .rope_rows = rope_rows_avx512,
    .silu_mul_rows = silu_mul_rows_avx512,
    .logsumexp = logsumexp_avx512,
};

const eng_nra_kernels *eng_nra_avx512(void) { return &avx512_table; }

#else

const eng_nra_kernels *eng_nra_avx512(void) { return NULL; }

#endif
