/* convert_avx512.c: the AVX-512 bulk converters (built with -mavx512f
 * -mavx512bw -mavx512vl -mf16c; used only when cpu_isa_detect() says the CPU
 * has them). 16 lanes per step, the tail under a mask. */
#include "convert.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__F16C__)

#include "float_bits.h"

static inline __mmask16 tail_mask(size_t n) { return (__mmask16)((1u << n) - 1u); } /* n < 16 */

static void f16_to_f32_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

static void f32_to_f16_avx512(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst + i, m,
                                 _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
}

static void bf16_to_f32_avx512(const uint16_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, prec_bf16x16_to_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, prec_bf16x16_to_ps(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

static void f32_to_bf16_avx512(const float *src, uint16_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i), prec_ps_to_bf16x16(_mm512_loadu_ps(src + i)));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst + i, m, prec_ps_to_bf16x16(_mm512_maskz_loadu_ps(m, src + i)));
    }
}

static float f32_absmax_avx512(const float *src, size_t n)
{
    __m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = prec_absmax_step_ps16(m0, _mm512_loadu_ps(src + i));
        m1 = prec_absmax_step_ps16(m1, _mm512_loadu_ps(src + i + 16));
    }
    for (; i + 16 <= n; i += 16)
        m0 = prec_absmax_step_ps16(m0, _mm512_loadu_ps(src + i));
    if (i < n) /* masked-off lanes load +0, which leaves the maximum as it is */
        m1 = prec_absmax_step_ps16(m1, _mm512_maskz_loadu_ps(tail_mask(n - i), src + i));
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

static void f32_to_i8_avx512(const float *src, int8_t *dst, size_t n, float inv)
{
    const __m512 vinv = _mm512_set1_ps(inv);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(void *)(dst + i), prec_ps_to_i8x16(_mm512_mul_ps(_mm512_loadu_ps(src + i), vinv)));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm_mask_storeu_epi8(dst + i, m, prec_ps_to_i8x16(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + i), vinv)));
    }
}

static const prec_converters converters_avx512 = {
    .isa = CPU_ISA_AVX512,
    .f16_to_f32 = f16_to_f32_avx512,
    .f32_to_f16 = f32_to_f16_avx512,
    .bf16_to_f32 = bf16_to_f32_avx512,
    .f32_to_bf16 = f32_to_bf16_avx512,
    .f32_absmax = f32_absmax_avx512,
    .f32_to_i8 = f32_to_i8_avx512,
};

const prec_converters *prec_converters_avx512(void) { return &converters_avx512; }

#else /* built without the AVX-512 flags: never chosen */

const prec_converters *prec_converters_avx512(void) { return NULL; }

#endif
