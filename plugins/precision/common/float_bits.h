/* float_bits.h: the one home of the bit-level conversions between float32
 * and the 16-bit formats, inline so that callers' inner loops stay fast:
 *   - scalar (any C11 compiler): prec_f16_to_f32, prec_f32_to_f16,
 *     prec_bf16_to_f32, prec_f32_to_bf16;
 *   - vector, defined only in files built with the instruction set
 *     (-mavx2 -mf16c, -mavx512f -mavx512bw): 8 or 16 lanes at a time.
 * The precision plugins (plugins/precision), their bulk converters
 * (convert*.c) and the OPT engine's kernels (engine/kernels/kernels*.c) all use
 * these; docs/plugins.md, "Precision plugins", states the rules:
 *   float16  IEEE binary16. to_f32 exact for every number and inf, a NaN
 *            becomes a quiet NaN (sign and payload kept); from_f32
 *            rounds to nearest, ties to even; |x| >= 65520 (and inf) -> inf;
 *            |x| <= 2^-25 -> signed zero; subnormals rounded, not flushed;
 *            NaN -> quiet NaN with the sign and the top 9 payload bits.
 *   bfloat16 the top half of a binary32. to_f32 exact (append 16 zero bits);
 *            from_f32 rounds to nearest, ties to even (the carry may reach
 *            inf); subnormals kept; NaN -> quiet NaN, sign and top payload kept.
 *   int8     a two's-complement byte holding an integer in [-127, 127]
 *            (weights times a per-row scale that the backend keeps, see
 *            formats.c). to_f32 exact; from_f32 rounds to nearest, ties to
 *            even, saturates to +-127 (inf too); NaN -> 0.
 * The vector forms give the same bits as the scalar ones for every input
 * (tests/opt/test_kernels.c checks them against each other).
 */
#ifndef BENCHCTL_PRECISION_FLOAT_BITS_H
#define BENCHCTL_PRECISION_FLOAT_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t prec_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float prec_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* int8: round to nearest, ties to even, saturate to [-127, 127], NaN -> 0.
 * Adding 1.5 * 2^23 puts |x| < 127 where float32's spacing is 1, so the sum
 * rounds x to an integer in the default rounding mode (C's floating-point
 * rules keep the compiler from folding (x + c) - c without -ffast-math). */
static inline int8_t prec_f32_to_i8(float x)
{
    if (!(x == x))
        return 0;
    if (x >= 127.0f)
        return 127;
    if (x <= -127.0f)
        return -127;
    float r = x + 12582912.0f;
    return (int8_t)(r - 12582912.0f);
}

/* The running maximum of |x| over a row, as the int8 scale wants it: a NaN
 * leaves m as it is (the comparison is false). */
static inline float prec_absmax_step(float m, float x)
{
    const float a = prec_bits_f32(prec_f32_bits(x) & 0x7fffffffu);
    return a > m ? a : m;
}

static inline float prec_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf, or NaN made quiet (payload kept), as F16C's vcvtph2ps does */
        return prec_bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0u));
    if (exp == 0) {
        if (man == 0)
            return prec_bits_f32(sign);
        /* subnormal: man * 2^-24, exact in fp32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return prec_bits_f32(sign | ((exp + 112u) << 23) | (man << 13)); /* rebias 15 -> 127 */
}

static inline uint16_t prec_f32_to_f16(float f)
{
    uint32_t u = prec_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) { /* inf, or NaN made quiet (top payload bits kept) */
        if (abs == 0x7f800000u)
            return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    }
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        if (abs <= 0x33000000u) /* at most 2^-25: rounds to zero (2^-25 ties to even 0) */
            return sign;
        uint32_t e = abs >> 23; /* biased fp32 exponent, 102..112 */
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24: man >> shift gives units of 2^-24 */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q); /* q may carry into the smallest normal: still right */
    }
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even */
    uint32_t r = abs - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

static inline float prec_bf16_to_f32(uint16_t h) { return prec_bits_f32((uint32_t)h << 16); }

static inline uint16_t prec_f32_to_bf16(float f)
{
    uint32_t u = prec_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep the sign and top payload, make it quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    /* round the 16 dropped bits to nearest even; the carry ripples (into inf past the max) */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#ifdef __AVX2__
/* 8 bfloat16 -> 8 float32 (exact). */
static inline __attribute__((always_inline)) __m256 prec_bf16x8_to_ps(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* 16 bfloat16 h[0..16) (one 256-bit load) -> the even ones h[2j] in *even and
 * the odd ones h[2j + 1] in *odd, j < 8, as float32 (exact): each 32-bit lane
 * holds a pair, the even value in its low half, so a shift and a mask convert
 * eight weights each, with no widening shuffle. */
static inline __attribute__((always_inline)) void prec_bf16x16_pairs_to_ps(__m256i h, __m256 *even, __m256 *odd)
{
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32((int)0xffff0000u)));
}

/* 8 float32 -> 8 bfloat16, as prec_f32_to_bf16 lane by lane. */
static inline __attribute__((always_inline)) __m128i prec_ps_to_bf16x8(__m256 v)
{
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, q, nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* 8 float32 -> 8 int32 holding prec_f32_to_i8 lane by lane: NaN -> 0, then
 * clamped to [-127, 127] and rounded to nearest even (vcvtps2dq in the
 * default rounding mode, as the scalar rule's 1.5 * 2^23 trick). */
static inline __attribute__((always_inline)) __m256i prec_ps_to_i8x8_epi32(__m256 v)
{
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(v);
}

/* max(m, |v|) lane by lane, a NaN in v leaving m (vmaxps returns its second
 * operand when either is NaN), as prec_absmax_step. */
static inline __attribute__((always_inline)) __m256 prec_absmax_step_ps(__m256 m, __m256 v)
{
    return _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v), m);
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* 16 bfloat16 -> 16 float32 (exact). */
static inline __attribute__((always_inline)) __m512 prec_bf16x16_to_ps(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* 32 bfloat16 h[0..32) -> h[2j] in *even and h[2j + 1] in *odd, j < 16, as
 * float32 (exact): the 16-lane form of prec_bf16x16_pairs_to_ps. */
static inline __attribute__((always_inline)) void prec_bf16x32_pairs_to_ps(__m512i h, __m512 *even, __m512 *odd)
{
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(h, _mm512_set1_epi32((int)0xffff0000u)));
}

/* 16 float32 -> 16 bfloat16, as prec_f32_to_bf16 lane by lane. */
static inline __attribute__((always_inline)) __m256i prec_ps_to_bf16x16(__m512 v)
{
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

/* 16 float32 -> 16 int8, as prec_f32_to_i8 lane by lane (see the AVX2 form). */
static inline __attribute__((always_inline)) __m128i prec_ps_to_i8x16(__m512 v)
{
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));
}

/* max(m, |v|) lane by lane, a NaN in v leaving m, as prec_absmax_step. */
static inline __attribute__((always_inline)) __m512 prec_absmax_step_ps16(__m512 m, __m512 v)
{
    return _mm512_max_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff))),
                         m);
}
#endif

#endif
