/* kernels.c: the OPT engine's kernel dispatch (CPU feature detection through
 * cpuid + xgetbv, one table per ISA), the scalar fp16/bf16 conversions every
 * variant shares, and the portable C variant that every SIMD variant is
 * tested against (tests/opt/test_kernels.c).
 *
 * Shapes follow kernels.h: x[M, K] fp32 row-major, w[N, K] row-major in a
 * dtype, y[M, N] fp32. Accumulation is always fp32.
 */
#include "kernels.h"
#include "kernels_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define OPT_X86 1
#endif

const char *opt_dtype_name(opt_dtype t)
{
    switch (t) {
    case OPT_F32: return "float32";
    case OPT_F16: return "float16";
    case OPT_BF16: return "bfloat16";
    }
    return "unknown";
}

const char *opt_isa_name(opt_isa isa)
{
    switch (isa) {
    case OPT_ISA_PORTABLE: return "portable";
    case OPT_ISA_AVX2: return "avx2";
    case OPT_ISA_AVX512: return "avx512";
    case OPT_ISA_AVX512_BF16: return "avx512_bf16";
    }
    return "unknown";
}

/* ---- scalar conversions (round to nearest even) ------------------------ */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float opt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN (payload kept) */
        return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_f32(sign);
        /* subnormal: man * 2^-24, exact in fp32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t opt_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) { /* inf, or NaN made quiet */
        if (abs == 0x7f800000u)
            return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    }
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        if (abs < 0x33000000u) /* below 2^-25: rounds to zero (2^-25 ties to 0) */
            return sign;
        uint32_t e = abs >> 23;           /* biased fp32 exponent, 102..112 */
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;        /* 14..24: man >> shift gives units of 2^-24 */
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

float opt_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t opt_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep the sign and top payload, make it quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- portable C variant ------------------------------------------------ */

/* Converts n values of src (dtype st) starting at element off to fp32. */
static void row_to_f32(float *dst, const void *src, opt_dtype st, size_t off, size_t n)
{
    switch (st) {
    case OPT_F32:
        memcpy(dst, (const float *)src + off, n * sizeof(float));
        break;
    case OPT_F16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (size_t i = 0; i < n; i++)
            dst[i] = opt_f16_to_f32(s[i]);
        break;
    }
    case OPT_BF16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (size_t i = 0; i < n; i++)
            dst[i] = opt_bf16_to_f32(s[i]);
        break;
    }
    }
}

/* The portable linear: for each output row n, the weight row is converted to
 * fp32 in chunks of PORT_KB and applied to all M rows of x, so each weight is
 * converted once per call. y holds the partial sums between chunks. */
#define PORT_KB 256
static void linear_portable(float *y, const float *x, const void *w, opt_dtype wt, const float *bias, int M, int K,
                            int N, int n0, int n1, int relu)
{
    float wbuf[PORT_KB];
    for (int n = n0; n < n1; n++) {
        float b = bias ? bias[n] : 0.0f;
        for (int m = 0; m < M; m++)
            y[(size_t)m * N + n] = b;
        for (int k0 = 0; k0 < K; k0 += PORT_KB) {
            int kb = K - k0 < PORT_KB ? K - k0 : PORT_KB;
            row_to_f32(wbuf, w, wt, (size_t)n * K + k0, (size_t)kb);
            for (int m = 0; m < M; m++) {
                const float *xr = x + (size_t)m * K + k0;
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int k = 0;
                for (; k + 4 <= kb; k += 4) {
                    s0 += xr[k] * wbuf[k];
                    s1 += xr[k + 1] * wbuf[k + 1];
                    s2 += xr[k + 2] * wbuf[k + 2];
                    s3 += xr[k + 3] * wbuf[k + 3];
                }
                for (; k < kb; k++)
                    s0 += xr[k] * wbuf[k];
                y[(size_t)m * N + n] += (s0 + s1) + (s2 + s3);
            }
        }
        if (relu)
            for (int m = 0; m < M; m++)
                if (y[(size_t)m * N + n] < 0.0f)
                    y[(size_t)m * N + n] = 0.0f;
    }
}

static float dot_portable(const float *a, const void *b, opt_dtype bt, int n)
{
    float buf[PORT_KB];
    float s = 0.0f;
    for (int k0 = 0; k0 < n; k0 += PORT_KB) {
        int kb = n - k0 < PORT_KB ? n - k0 : PORT_KB;
        row_to_f32(buf, b, bt, (size_t)k0, (size_t)kb);
        for (int k = 0; k < kb; k++)
            s += a[k0 + k] * buf[k];
    }
    return s;
}

static void axpy_portable(float *y, float alpha, const void *x, opt_dtype xt, int n)
{
    float buf[PORT_KB];
    for (int k0 = 0; k0 < n; k0 += PORT_KB) {
        int kb = n - k0 < PORT_KB ? n - k0 : PORT_KB;
        row_to_f32(buf, x, xt, (size_t)k0, (size_t)kb);
        for (int k = 0; k < kb; k++)
            y[k0 + k] += alpha * buf[k];
    }
}

static void to_f32_portable(float *dst, const void *src, opt_dtype st, size_t n) { row_to_f32(dst, src, st, 0, n); }

static void from_f32_portable(void *dst, opt_dtype dt, const float *src, size_t n)
{
    switch (dt) {
    case OPT_F32:
        memmove(dst, src, n * sizeof(float));
        break;
    case OPT_F16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = opt_f32_to_f16(src[i]);
        break;
    case OPT_BF16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = opt_f32_to_bf16(src[i]);
        break;
    }
}

/* The reference attention: one dot product per kept key, a max-subtracted
 * expf softmax, then the V rows in key order (y += p_s * v_s). */
static void attend_split_portable(float *out, const float *q, const void *kp, const void *vp, int np, const void *k,
                                  const void *v, opt_dtype dt, const uint8_t *keep, int S, int D, float *scores)
{
    const size_t es = opt_dtype_size(dt);
    float mx = -INFINITY;
    for (int s = 0; s < S; s++) {
        if (keep && !keep[s]) {
            scores[s] = -INFINITY;
            continue;
        }
        scores[s] = dot_portable(q, (const char *)(s < np ? kp : k) + (size_t)s * D * es, dt, D);
        if (scores[s] > mx)
            mx = scores[s];
    }
    float sum = 0.0f;
    for (int s = 0; s < S; s++) {
        if (mx == -INFINITY) /* nothing kept: uniform */
            scores[s] = 1.0f;
        else
            scores[s] = scores[s] == -INFINITY ? 0.0f : expf(scores[s] - mx);
        sum += scores[s];
    }
    const float inv = 1.0f / sum;
    memset(out, 0, (size_t)D * sizeof(float));
    for (int s = 0; s < S; s++)
        if (scores[s] != 0.0f)
            axpy_portable(out, scores[s] * inv, (const char *)(s < np ? vp : v) + (size_t)s * D * es, dt, D);
}

static void attend_portable(float *out, const float *q, const void *k, const void *v, opt_dtype dt,
                            const uint8_t *keep, int S, int D, float *scores)
{
    attend_split_portable(out, q, k, v, 0, k, v, dt, keep, S, D, scores);
}

static const opt_kernels kernels_portable = {
    .isa = OPT_ISA_PORTABLE,
    .linear = linear_portable,
    .dot = dot_portable,
    .axpy = axpy_portable,
    .to_f32 = to_f32_portable,
    .from_f32 = from_f32_portable,
    .attend = attend_portable,
    .attend_split = attend_split_portable,
};

/* ---- detection and dispatch --------------------------------------------- */

#ifdef OPT_X86
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static opt_isa detect_once(void)
{
#ifdef OPT_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return OPT_ISA_PORTABLE;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx)
        return OPT_ISA_PORTABLE;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* the OS saves XMM and YMM state */
        return OPT_ISA_PORTABLE;
    if (__get_cpuid_max(0, NULL) < 7)
        return OPT_ISA_PORTABLE;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1,
        avx512vl = (b >> 31) & 1;
    unsigned max7 = a;
    int avx512bf16 = 0;
    if (max7 >= 1) {
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        avx512bf16 = (a1 >> 5) & 1;
    }
    if (!(avx2 && fma && f16c))
        return OPT_ISA_PORTABLE;
    /* AVX-512 also needs the OS to save opmask and ZMM state (XCR0 bits 5-7) */
    if (avx512f && avx512dq && avx512bw && avx512vl && (xcr0 & 0xe0) == 0xe0)
        return avx512bf16 ? OPT_ISA_AVX512_BF16 : OPT_ISA_AVX512;
    return OPT_ISA_AVX2;
#else
    return OPT_ISA_PORTABLE;
#endif
}

opt_isa opt_isa_detect(void)
{
    /* cpuid is cheap but not free; the answer never changes, so cache it.
     * Two threads racing on the first call both compute the same value. */
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = (int)detect_once();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (opt_isa)v;
}

const opt_kernels *opt_kernels_for(opt_isa isa)
{
    if ((int)isa < 0 || isa > opt_isa_detect())
        return NULL;
    const opt_kernels *k = NULL;
    switch (isa) {
    case OPT_ISA_PORTABLE: k = &kernels_portable; break;
    case OPT_ISA_AVX2: k = opt_kernels_avx2(); break;
    case OPT_ISA_AVX512: k = opt_kernels_avx512(); break;
    case OPT_ISA_AVX512_BF16: k = opt_kernels_avx512_bf16(); break;
    }
    return k;
}

const opt_kernels *opt_kernels_best(void)
{
    for (int i = (int)opt_isa_detect(); i > 0; i--) {
        const opt_kernels *k = opt_kernels_for((opt_isa)i);
        if (k)
            return k;
    }
    return &kernels_portable;
}
