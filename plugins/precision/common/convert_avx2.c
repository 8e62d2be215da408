/* convert_avx2.c: the AVX2 + F16C bulk converters (built with -mavx2 -mf16c;
 * used only when cpu_isa_detect() says the CPU has them). 8 lanes per step;
 * the last n % 8 values go through the scalar rules of float_bits.h, which
 * give the same bits. */
#include "convert.h"

#if defined(__AVX2__) && defined(__F16C__)

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

static const prec_converters converters_avx2 = {
    .isa = CPU_ISA_AVX2,
    .f16_to_f32 = f16_to_f32_avx2,
    .f32_to_f16 = f32_to_f16_avx2,
    .bf16_to_f32 = bf16_to_f32_avx2,
    .f32_to_bf16 = f32_to_bf16_avx2,
};

const prec_converters *prec_converters_avx2(void) { return &converters_avx2; }

#else /* built without the AVX2 flags: never chosen */

const prec_converters *prec_converters_avx2(void) { return NULL; }

#endif
