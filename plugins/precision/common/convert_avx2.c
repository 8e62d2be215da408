/* convert_avx2.c: the AVX2 + F16C bulk converters (built with -mavx2 -mf16c;
 * used only when cpu_isa_detect() says the CPU has them). 8 lanes per step;
 * the last n % 8 values go through the scalar rules of float_bits.h, which
 * give the same bits (the int8 ones: through the vector code, on a padded
 * copy). */
#include "convert.h"

#if defined(__AVX2__) && defined(__F16C__)

#include <string.h>

#include "float_bits.h"

static void f16_to_f32_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = prec_f16_to_f32(src[i]);
}

static void f32_to_f16_avx2(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        dst[i] = prec_f32_to_f16(src[i]);
}

static void bf16_to_f32_avx2(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, prec_bf16x8_to_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = prec_bf16_to_f32(src[i]);
}

static void f32_to_bf16_avx2(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), prec_ps_to_bf16x8(_mm256_loadu_ps(src + i)));
    for (; i < n; i++)
        dst[i] = prec_f32_to_bf16(src[i]);
}

static float f32_absmax_avx2(const float *src, size_t n)
{
    __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = prec_absmax_step_ps(m0, _mm256_loadu_ps(src + i));
        m1 = prec_absmax_step_ps(m1, _mm256_loadu_ps(src + i + 8));
    }
    float lanes[8], m = 0.0f;
    _mm256_storeu_ps(lanes, _mm256_max_ps(m0, m1));
    for (int k = 0; k < 8; k++)
        m = prec_absmax_step(m, lanes[k]);
    for (; i < n; i++)
        m = prec_absmax_step(m, src[i]);
    return m;
}

/* 8 values: src[8] * inv rounded to int8 into dst[8]. */
static inline void i8x8_store(int8_t *dst, const float *src, __m256 inv)
{
    __m256i q = prec_ps_to_i8x8_epi32(_mm256_mul_ps(_mm256_loadu_ps(src), inv));
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(void *)dst, _mm_packs_epi16(w, w));
}

static void f32_to_i8_avx2(const float *src, int8_t *dst, size_t n, float inv)
{
    const __m256 vinv = _mm256_set1_ps(inv);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        i8x8_store(dst + i, src + i, vinv);
    if (i < n) { /* the tail, padded with zeros */
        float pad[8] = {0};
        int8_t out[8];
        memcpy(pad, src + i, (n - i) * sizeof(float));
        i8x8_store(out, pad, vinv);
        memcpy(dst + i, out, n - i);
    }
}

static const prec_converters converters_avx2 = {
    .isa = CPU_ISA_AVX2,
    .f16_to_f32 = f16_to_f32_avx2,
    .f32_to_f16 = f32_to_f16_avx2,
    .bf16_to_f32 = bf16_to_f32_avx2,
    .f32_to_bf16 = f32_to_bf16_avx2,
    .f32_absmax = f32_absmax_avx2,
    .f32_to_i8 = f32_to_i8_avx2,
};

const prec_converters *prec_converters_avx2(void) { return &converters_avx2; }

#else /* built without the AVX2 flags: never chosen */

const prec_converters *prec_converters_avx2(void) { return NULL; }

#endif
