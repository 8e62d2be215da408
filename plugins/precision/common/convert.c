/* convert.c: the portable bulk converters (scalar loops over float_bits.h)
 * and the choice of a tier's table (convert.h). */
#include "convert.h"

#include "float_bits.h"

static void f16_to_f32_portable(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = prec_f16_to_f32(src[i]);
}

static void f32_to_f16_portable(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = prec_f32_to_f16(src[i]);
}

static void bf16_to_f32_portable(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = prec_bf16_to_f32(src[i]);
}

static void f32_to_bf16_portable(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = prec_f32_to_bf16(src[i]);
}

static float f32_absmax_portable(const float *src, size_t n)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++)
        m = prec_absmax_step(m, src[i]);
    return m;
}

static void f32_to_i8_portable(const float *src, int8_t *dst, size_t n, float inv)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = prec_f32_to_i8(src[i] * inv);
}

static const prec_converters converters_portable = {
    .isa = CPU_ISA_PORTABLE,
    .f16_to_f32 = f16_to_f32_portable,
    .f32_to_f16 = f32_to_f16_portable,
    .bf16_to_f32 = bf16_to_f32_portable,
    .f32_to_bf16 = f32_to_bf16_portable,
    .f32_absmax = f32_absmax_portable,
    .f32_to_i8 = f32_to_i8_portable,
};

const prec_converters *prec_converters_portable(void) { return &converters_portable; }

const prec_converters *prec_converters_for(cpu_isa isa)
{
    const prec_converters *c = NULL;
    if (isa >= CPU_ISA_AVX512)
        c = prec_converters_avx512();
    if (!c && isa >= CPU_ISA_AVX2)
        c = prec_converters_avx2();
    return c ? c : &converters_portable;
}

const prec_converters *prec_converters_best(void) { return prec_converters_for(cpu_isa_detect()); }
