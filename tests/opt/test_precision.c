/* test_precision.c: the opt engine's side of the precision plugins
 * (engine/kernels/precision.c) and the bulk converters behind them
 * (plugins/precision/common/convert*.c).
 *   - a case's precision plugin is accepted by the layout its conversions
 *     produce, whatever it calls itself, and refused, naming it, when the
 *     kernels cannot read that layout (truncating instead of rounding, 1-byte
 *     elements, no conversions);
 *   - eng_convert_values gives the scalar rules' bits (float_bits.h) from and
 *     to unaligned buffers, every pair of formats;
 *   - every converter tier this CPU runs gives the scalar rules' bits: all
 *     65536 16-bit patterns up, and ties, overflow, subnormals, inf, NaN and
 *     random patterns down, at lengths that exercise the vector tails; the
 *     int8 row quantiser's max |row| and scale-and-round the same, on
 *     values around int8's ties and saturation, NaN and inf, at every offset
 *     and length of the tails, several scales;
 *   - eng_i8_quantize_row gives a row's scale and values by the scalar rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "formats.h"
#include "precision.h"

/* ---- plugins of other layouts -------------------------------------------- */

/* bfloat16 by truncation (rounds toward zero): not what the kernels read. */
static void trunc_from_f32(const float *src, void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((uint16_t *)dst)[i] = (uint16_t)(prec_f32_bits(src[i]) >> 16);
}

static void int8_to_f32(const void *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)((const int8_t *)src)[i];
}

static void int8_from_f32(const float *src, void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((int8_t *)dst)[i] = (int8_t)(src[i] > 127 ? 127 : src[i] < -127 ? -127 : src[i]);
}

static void test_layouts(void **state)
{
    (void)state;
    bc_error err = {0};
    eng_dtype dt = ENG_F32;
    assert_int_equal(eng_precision_dtype("fp16", &prec_fp16_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_F16);
    assert_int_equal(eng_precision_dtype("bf16", &prec_bf16_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_BF16);
    assert_int_equal(eng_precision_dtype("fp32", &prec_fp32_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_F32);

    /* another name for float16's layout is float16 */
    bc_precision_ops half = prec_fp16_ops;
    half.dtype = "half";
    assert_int_equal(eng_precision_dtype("half", &half, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_F16);

    /* calls itself bfloat16 but truncates */
    bc_precision_ops trunc = prec_bf16_ops;
    trunc.from_f32 = trunc_from_f32;
    assert_int_equal(eng_precision_dtype("bf16trunc", &trunc, &dt, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "precision bf16trunc (dtype bfloat16, 2 bytes)"));
    assert_non_null(strstr(err.message, "layout the engine's kernels do not read"));

    /* the int8 format, and one that truncates instead of rounding */
    assert_int_equal(eng_precision_dtype("int8", &prec_int8_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_I8);
    const bc_precision_ops int8 = {sizeof(bc_precision_ops), "int8", 1, int8_to_f32, int8_from_f32, 1e-1};
    assert_int_equal(eng_precision_dtype("int8trunc", &int8, &dt, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "precision int8trunc (dtype int8, 1 bytes)"));

    bc_precision_ops none = prec_fp32_ops;
    none.to_f32 = NULL;
    assert_int_equal(eng_precision_dtype("none", &none, &dt, &err), BC_ERR_UNSUPPORTED);
    assert_int_equal(eng_precision_dtype(NULL, NULL, &dt, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "precision ?"));
}

/* ---- values ---------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next_u32(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* n float32 values: the hard cases first, then random bit patterns. */
static void fill_hard(float *x, size_t n)
{
    static const uint32_t hard[] = {
        0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, /* ties of both formats */
        0x477fe000u, 0x477ff000u, 0x477fefffu, 0x7f7fffffu, /* float16's edge, float32's largest */
        0x33800000u, 0x33000000u, 0x33000001u, 0x387fe000u, 0x38800000u, 0x00400000u, 0x00000001u,
        0x80000000u, 0x00000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f800001u, 0xff810000u, 0xffffffffu,
    };
    for (size_t i = 0; i < n; i++)
        x[i] = prec_bits_f32(i < sizeof hard / sizeof hard[0] ? hard[i] : next_u32());
}

/* dst (dtype dt) from src (dtype st), value by value through the scalar rules. */
static void convert_scalar(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float f;
        uint16_t h;
        if (st == ENG_F32) {
            memcpy(&f, (const char *)src + 4 * i, 4);
        } else {
            memcpy(&h, (const char *)src + 2 * i, 2);
            f = st == ENG_F16 ? prec_f16_to_f32(h) : prec_bf16_to_f32(h);
        }
        if (dt == ENG_F32) {
            memcpy((char *)dst + 4 * i, &f, 4);
        } else {
            h = dt == ENG_F16 ? prec_f32_to_f16(f) : prec_f32_to_bf16(f);
            memcpy((char *)dst + 2 * i, &h, 2);
        }
    }
}

/* Every pair of formats, src and dst one byte off alignment, n across the
 * 1024-value steps of eng_convert_values. */
static void test_convert_values_unaligned(void **state)
{
    (void)state;
    enum { N = 2500 };
    float *f = malloc(N * sizeof(float));
    unsigned char *src = malloc(4 * N + 1), *got = malloc(4 * N + 1), *want = malloc(4 * N);
    assert_true(f && src && got && want);
    fill_hard(f, N);
    for (int st = 0; st < 3; st++)
        for (int dt = 0; dt < 3; dt++) {
            const size_t ss = eng_dtype_size((eng_dtype)st), ds = eng_dtype_size((eng_dtype)dt);
            /* src holds the values in st (NaNs of the 16-bit formats included) */
            convert_scalar(src + 1, (eng_dtype)st, f, ENG_F32, N);
            convert_scalar(want, (eng_dtype)dt, src + 1, (eng_dtype)st, N);
            memset(got, 0xa5, 4 * N + 1);
            eng_convert_values(got + 1, (eng_dtype)dt, src + 1, (eng_dtype)st, N);
            if (memcmp(got + 1, want, N * ds) != 0) {
                for (size_t i = 0; i < N; i++)
                    if (memcmp(got + 1 + i * ds, want + i * ds, ds) != 0)
                        fail_msg("%s -> %s: value %zu differs from the scalar rules", eng_dtype_name((eng_dtype)st),
                                 eng_dtype_name((eng_dtype)dt), i);
            }
            assert_int_equal(got[0], 0xa5); /* nothing written before dst */
            (void)ss;
        }
    free(f);
    free(src);
    free(got);
    free(want);
}

/* ---- converter tiers ------------------------------------------------------------ */

static void check_tier(const prec_converters *cv)
{
    enum { N = 65536 };
    uint16_t *h = malloc(N * sizeof(uint16_t)), *h2 = malloc(N * sizeof(uint16_t));
    float *f = malloc(N * sizeof(float));
    assert_true(h && h2 && f);
    for (size_t i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    /* up: all 65536 patterns, bit for bit (NaN payloads included) */
    cv->f16_to_f32(h, f, N);
    for (size_t i = 0; i < N; i++)
        if (prec_f32_bits(f[i]) != prec_f32_bits(prec_f16_to_f32(h[i])))
            fail_msg("%s f16_to_f32(0x%04zx) = 0x%08x", cpu_isa_name(cv->isa), i, prec_f32_bits(f[i]));
    cv->bf16_to_f32(h, f, N);
    for (size_t i = 0; i < N; i++)
        if (prec_f32_bits(f[i]) != prec_f32_bits(prec_bf16_to_f32(h[i])))
            fail_msg("%s bf16_to_f32(0x%04zx) = 0x%08x", cpu_isa_name(cv->isa), i, prec_f32_bits(f[i]));
    /* down: hard cases and random patterns, every length 0..40 (the tails) then all */
    fill_hard(f, N);
    for (size_t n = 0; n <= N; n = n < 40 ? n + 1 : N + 1) {
        memset(h, 0, N * sizeof(uint16_t));
        cv->f32_to_f16(f, h, n);
        for (size_t i = 0; i < N; i++)
            if (h[i] != (i < n ? prec_f32_to_f16(f[i]) : 0))
                fail_msg("%s f32_to_f16 n=%zu: [%zu] 0x%08x -> 0x%04x", cpu_isa_name(cv->isa), n, i,
                         prec_f32_bits(f[i]), h[i]);
        memset(h2, 0, N * sizeof(uint16_t));
        cv->f32_to_bf16(f, h2, n);
        for (size_t i = 0; i < N; i++)
            if (h2[i] != (i < n ? prec_f32_to_bf16(f[i]) : 0))
                fail_msg("%s f32_to_bf16 n=%zu: [%zu] 0x%08x -> 0x%04x", cpu_isa_name(cv->isa), n, i,
                         prec_f32_bits(f[i]), h2[i]);
    }
    free(h);
    free(h2);
    free(f);
}

/* n values for int8: quarter steps across [-140, 140] (ties at the halves,
 * saturation past 127), scaled randomly, then the hard cases (NaN, inf,
 * zeros of both signs) spread among them. */
static void fill_i8(float *x, size_t n)
{
    fill_hard(x, n);
    for (size_t i = 0; i < n; i++)
        if (i % 7 != 3) /* keep every seventh hard or random pattern */
            x[i] = (float)((int)(next_u32() % 1121u) - 560) * 0.25f;
}

static void check_i8_tier(const prec_converters *cv)
{
    enum { N = 4099 };
    static const float invs[] = {1.0f, 0.37f, 0.0f, 42.333f, 1e-30f};
    float *f = malloc(N * sizeof(float));
    int8_t *q = malloc(N + 64);
    assert_true(f && q);
    fill_i8(f, N);
    for (size_t off = 0; off < 17; off++)
        for (size_t len = 0; len <= 71; len++) { /* 0..70, then the rest of f */
            const size_t n = len <= 70 ? len : N - off;
            float want = 0.0f;
            for (size_t i = 0; i < n; i++)
                want = prec_absmax_step(want, f[off + i]);
            const float got = cv->f32_absmax(f + off, n);
            if (prec_f32_bits(got) != prec_f32_bits(want))
                fail_msg("%s f32_absmax off=%zu n=%zu: 0x%08x, the scalar rule 0x%08x", cpu_isa_name(cv->isa), off, n,
                         prec_f32_bits(got), prec_f32_bits(want));
            for (size_t k = 0; k < sizeof invs / sizeof invs[0]; k++) {
                memset(q, 0x5a, N + 64);
                cv->f32_to_i8(f + off, q + 1, n, invs[k]);
                assert_int_equal(q[0], 0x5a); /* nothing written before dst */
                for (size_t i = 0; i < n; i++)
                    if (q[1 + i] != prec_f32_to_i8(f[off + i] * invs[k]))
                        fail_msg("%s f32_to_i8 off=%zu n=%zu inv=%g: [%zu] 0x%08x -> %d, the scalar rule %d",
                                 cpu_isa_name(cv->isa), off, n, (double)invs[k], i, prec_f32_bits(f[off + i]),
                                 q[1 + i], prec_f32_to_i8(f[off + i] * invs[k]));
                assert_int_equal(q[1 + n], 0x5a); /* nor after it */
            }
        }
    free(f);
    free(q);
}

/* A row through the engine's helper: scale = max|row| / 127, and each
 * value by the scalar rule; an all-zero row has scale 0 and zeros. */
static void test_i8_quantize_row(void **state)
{
    (void)state;
    enum { N = 3000 };
    float *f = malloc(N * sizeof(float));
    int8_t *q = malloc(N);
    assert_true(f && q);
    for (size_t i = 0; i < N; i++)
        f[i] = (float)((int)(next_u32() % 2001u) - 1000) * 1e-3f;
    f[1234] = -2.54f; /* the largest magnitude: scale 0.02 */
    const float scale = eng_i8_quantize_row(q, f, N);
    assert_true(prec_f32_bits(scale) == prec_f32_bits(2.54f / 127.0f));
    for (size_t i = 0; i < N; i++)
        if (q[i] != prec_f32_to_i8(f[i] * (1.0f / scale)))
            fail_msg("eng_i8_quantize_row: [%zu] %g -> %d", i, (double)f[i], q[i]);
    assert_int_equal(q[1234], -127);
    memset(f, 0, N * sizeof(float));
    memset(q, 1, N);
    assert_true(eng_i8_quantize_row(q, f, N) == 0.0f);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(q[i], 0);
    free(f);
    free(q);
}

static void test_converter_tiers(void **state)
{
    (void)state;
    const cpu_isa best = cpu_isa_detect();
    print_message("this CPU: %s; converters of the best tier: %s\n", cpu_isa_name(best),
                  cpu_isa_name(prec_converters_best()->isa));
    check_tier(prec_converters_portable());
    check_i8_tier(prec_converters_portable());
    int checked = 1;
    if (best >= CPU_ISA_AVX2 && prec_converters_avx2()) {
        check_tier(prec_converters_avx2());
        check_i8_tier(prec_converters_avx2());
        checked++;
    }
    if (best >= CPU_ISA_AVX512 && prec_converters_avx512()) {
        check_tier(prec_converters_avx512());
        check_i8_tier(prec_converters_avx512());
        checked++;
    }
    print_message("%d converter tiers checked\n", checked);
    /* the tier chosen is the best built one the CPU runs */
    assert_true(prec_converters_best()->isa <= best);
    assert_int_equal(prec_converters_for(CPU_ISA_PORTABLE)->isa, CPU_ISA_PORTABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_convert_values_unaligned),
        cmocka_unit_test(test_converter_tiers),
        cmocka_unit_test(test_i8_quantize_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
