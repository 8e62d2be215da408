/* test_precision.c: the fp32, fp16, bf16 and int8 precision plugins.
 *
 * Each plugin is dlopened from the build tree. Conversions are checked against
 * known bit patterns, exhaustively over all 65536 half-width patterns, and
 * against an independent round-to-nearest-even oracle (written here in double
 * arithmetic, sharing no code with the plugins) on every tie, its neighbours
 * and a strided sweep of all float32 patterns.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin_dl.h"

typedef struct fixture {
    void *dl;
    const bc_plugin_desc *desc;
    const bc_precision_ops *ops;
} fixture;

/* prestate: the plugin name (a string literal). */
static int setup_plugin(void **state) {
    const char *name = *state;
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->desc = test_plugin_open(name, &f->dl);
    test_plugin_check_header(f->desc, BC_KIND_PRECISION, name);
    f->ops = f->desc->ops;
    *state = f;
    return 0;
}

static int teardown_plugin(void **state) {
    fixture *f = *state;
    if (f->dl) dlclose(f->dl);
    free(f);
    return 0;
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t from1(const bc_precision_ops *ops, float x) {
    uint16_t h = 0;
    ops->from_f32(&x, &h, 1);
    return h;
}

static float to1(const bc_precision_ops *ops, uint16_t h) {
    float x = 0;
    ops->to_f32(&h, &x, 1);
    return x;
}

/* ------------------------------------------------------------ descriptors */

static void test_descriptor(void **state) {
    static const struct {
        const char *name, *dtype;
        uint32_t element_size;
        double tol_min, tol_max; /* the documented tolerance, within a loose band */
    } want[] = {
        {"fp32", "float32", 4, 1e-6, 1e-3},
        {"fp16", "float16", 2, 0x1p-10, 0.05},
        {"bf16", "bfloat16", 2, 0x1p-7, 0.1},
        {"int8", "int8", 1, 0x1p-8, 0.1},
    };
    fixture *f = *state;
    const bc_precision_ops *ops = f->ops;
    size_t i;
    for (i = 0; i < sizeof want / sizeof want[0]; i++)
        if (strcmp(want[i].name, f->desc->name) == 0) break;
    assert_true(i < sizeof want / sizeof want[0]);
    assert_null(f->desc->settings);
    assert_int_equal(f->desc->n_settings, 0);
    assert_null(f->desc->check_settings); /* nothing to check */
    assert_true(ops->struct_size >= sizeof(bc_precision_ops));
    assert_string_equal(ops->dtype, want[i].dtype);
    assert_int_equal(ops->element_size, want[i].element_size);
    assert_non_null(ops->to_f32);
    assert_non_null(ops->from_f32);
    assert_true(ops->rel_tolerance >= want[i].tol_min);
    assert_true(ops->rel_tolerance <= want[i].tol_max);
}

/* Buffers of n values convert element by element and never write past n. */
static void test_buffer_bounds(void **state) {
    fixture *f = *state;
    const bc_precision_ops *ops = f->ops;
    enum { N = 1000, GUARD = 64 };
    float src[N], back[N + GUARD / 4];
    unsigned char stored[N * 4 + GUARD];
    for (int i = 0; i < N; i++) src[i] = (float)(i % 64 - 32) * 0.25f; /* exact in every format */
    memset(stored, 0xAA, sizeof stored);
    memset(back, 0x55, sizeof back);
    ops->from_f32(src, stored, N);
    for (size_t b = (size_t)N * ops->element_size; b < sizeof stored; b++) assert_int_equal(stored[b], 0xAA);
    ops->to_f32(stored, back, N);
    for (int i = 0; i < N; i++) assert_true(back[i] == src[i]);
    for (size_t i = N; i < sizeof back / sizeof back[0]; i++) assert_int_equal(float_bits(back[i]), 0x55555555u);
    /* n = 0 touches nothing */
    ops->from_f32(src, stored, 0);
    ops->to_f32(stored, back, 0);
    assert_int_equal(stored[N * ops->element_size], 0xAA);
}

/* -------------------------------------------------------------------- fp32 */

static void test_fp32_exact(void **state) {
    fixture *f = *state;
    static const uint32_t pats[] = {
        0x00000000u, 0x80000000u, 0x3f800000u, 0xc0000000u, 0x00000001u, 0x007fffffu,
        0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffc12345u,
    };
    enum { N = sizeof pats / sizeof pats[0] };
    float in[N], stored[N], out[N];
    for (int i = 0; i < N; i++) in[i] = bits_float(pats[i]);
    f->ops->from_f32(in, stored, N);
    f->ops->to_f32(stored, out, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(float_bits(stored[i]), pats[i]);
        assert_int_equal(float_bits(out[i]), pats[i]);
    }
    /* in place */
    f->ops->to_f32(in, in, N);
    for (int i = 0; i < N; i++) assert_int_equal(float_bits(in[i]), pats[i]);
}

/* -------------------------------------------------------------------- fp16 */

/* The value of a finite fp16 pattern, decoded independently of the plugin.
 * 0x7c00 decodes to 65536: the next value IEEE rounding uses past 65504. */
static double fp16_ref_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

/* Nearest fp16 to finite x, ties to even, overflow to inf. */
static uint16_t fp16_ref_round(float x) {
    double a = fabs((double)x);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (a >= 65520.0) return sign | 0x7c00;
    /* largest lo in [0, 0x7bff] with value(lo) <= a (values grow with patterns) */
    uint32_t lo = 0, hi = 0x7c00;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (fp16_ref_value((uint16_t)mid) <= a) lo = mid; else hi = mid;
    }
    double dlo = a - fp16_ref_value((uint16_t)lo), dhi = fp16_ref_value((uint16_t)(lo + 1)) - a;
    uint32_t r = (dlo < dhi) ? lo : (dhi < dlo) ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    return (uint16_t)(sign | r);
}

static void test_fp16_known(void **state) {
    fixture *f = *state;
    static const struct { float x; uint16_t h; } cases[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.5f, 0x3800},
        {65504.0f, 0x7bff}, {-65504.0f, 0xfbff}, {0x1p-14f, 0x0400}, {0x1p-24f, 0x0001},
        {0x3ffp-24f, 0x03ff}, {0.333251953125f, 0x3555},
        /* rounding ties go to the even neighbour */
        {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 3 * 0x1p-11f, 0x3c02}, {-(1.0f + 0x1p-11f), 0xbc00},
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, {1.0f + 0x1p-11f - 0x1p-20f, 0x3c00},
        {0x1p-25f, 0x0000}, {3 * 0x1p-25f, 0x0002}, {0x1p-25f + 0x1p-40f, 0x0001},
        {0x1p-14f - 0x1p-25f, 0x0400}, /* tie between 0x03ff and 0x0400: even is 0x0400 */
        /* overflow: 65520 is the tie between 65504 and "65536", which is inf */
        {65519.996f, 0x7bff}, {65520.0f, 0x7c00}, {1e6f, 0x7c00}, {-1e6f, 0xfc00},
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        /* below half the smallest subnormal */
        {0x1p-26f, 0x0000}, {-0x1p-30f, 0x8000}, {0x1p-149f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = from1(f->ops, cases[i].x);
        if (got != cases[i].h)
            fail_msg("fp16 from_f32(%a) = 0x%04x, want 0x%04x", (double)cases[i].x, got, cases[i].h);
    }
    assert_true(to1(f->ops, 0x3c00) == 1.0f);
    assert_true(to1(f->ops, 0xc000) == -2.0f);
    assert_true(to1(f->ops, 0x7bff) == 65504.0f);
    assert_true(to1(f->ops, 0x0001) == 0x1p-24f);
    assert_true(to1(f->ops, 0x03ff) == 0x3ffp-24f);
    assert_true(to1(f->ops, 0x7c00) == INFINITY);
    assert_true(to1(f->ops, 0xfc00) == -INFINITY);
    assert_int_equal(float_bits(to1(f->ops, 0x8000)), 0x80000000u);
    assert_true(isnan(to1(f->ops, 0x7e00)));
    assert_true(isnan(to1(f->ops, 0x7c01)));
    /* NaN never becomes inf, even with only low payload bits (which fp16 drops) */
    uint16_t n1 = from1(f->ops, bits_float(0x7f800001u)), n2 = from1(f->ops, bits_float(0xffc00000u));
    assert_int_equal(n1 & 0x7c00, 0x7c00);
    assert_true((n1 & 0x03ff) != 0);
    assert_int_equal(n2 & 0xfc00, 0xfc00);
    assert_true((n2 & 0x03ff) != 0);
    assert_true(isnan(to1(f->ops, n1)));
}

/* Every pattern: to_f32 matches the independent decode, and from_f32 gives
 * the same pattern back (NaNs: stay NaN with their sign; quiet ones exactly). */
static void test_fp16_exhaustive(void **state) {
    fixture *f = *state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = to1(f->ops, (uint16_t)h);
        int is_nan = ((h & 0x7c00) == 0x7c00) && (h & 0x3ff);
        int is_inf = ((h & 0x7fff) == 0x7c00);
        uint16_t back = from1(f->ops, x);
        if (is_nan) {
            assert_true(isnan(x));
            assert_int_equal(back & 0x8000, h & 0x8000);
            assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
            if (h & 0x200) assert_int_equal(back, h);
        } else if (is_inf) {
            assert_true(isinf(x));
            assert_int_equal(back, h);
        } else {
            if ((double)x != fp16_ref_value((uint16_t)h) || !!signbit(x) != !!(h & 0x8000))
                fail_msg("fp16 to_f32(0x%04x) = %a, want %a", h, (double)x, fp16_ref_value((uint16_t)h));
            if (back != h) fail_msg("fp16 round trip 0x%04x -> %a -> 0x%04x", h, (double)x, back);
        }
    }
}

static void check_fp16_round(const bc_precision_ops *ops, float x) {
    uint16_t got = from1(ops, x), want = fp16_ref_round(x);
    if (got != want) fail_msg("fp16 from_f32(%a) = 0x%04x, want 0x%04x", (double)x, got, want);
}

/* Every midpoint between neighbouring fp16 values (the ties), the floats just
 * either side of it, and a strided sweep of all finite float32 patterns. */
static void test_fp16_rounding(void **state) {
    fixture *f = *state;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double mid = (fp16_ref_value((uint16_t)h) + fp16_ref_value((uint16_t)(h + 1))) / 2;
        float m = (float)mid; /* exact: a midpoint has at most 12 significant bits */
        assert_true((double)m == mid);
        for (int s = 0; s < 2; s++) {
            float v = s ? -m : m;
            check_fp16_round(f->ops, v);
            check_fp16_round(f->ops, nextafterf(v, 0.0f));
            check_fp16_round(f->ops, nextafterf(v, s ? -INFINITY : INFINITY));
        }
    }
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) { /* prime stride: hits every exponent */
        float x = bits_float((uint32_t)u);
        if (isfinite(x)) check_fp16_round(f->ops, x);
    }
}

/* -------------------------------------------------------------------- bf16 */

/* Nearest bf16 to finite x, ties to even, computed in double. The pattern
 * above the largest finite one (0x7f80) stands for 2^128, as IEEE rounding
 * treats it. */
static uint16_t bf16_ref_round(float x) {
    uint32_t u = float_bits(x);
    uint32_t sign = u & 0x80000000u, a = u & 0x7fffffffu;
    uint32_t lo = a >> 16, hi = lo + 1;
    double vx = fabs((double)x);
    double vlo = fabs((double)bits_float(lo << 16));
    double vhi = (hi == 0x7f80) ? ldexp(1.0, 128) : fabs((double)bits_float(hi << 16));
    double dlo = vx - vlo, dhi = vhi - vx;
    uint32_t r = (dlo < dhi) ? lo : (dhi < dlo) ? hi : ((lo & 1) ? hi : lo);
    return (uint16_t)((sign >> 16) | r);
}

static void test_bf16_known(void **state) {
    fixture *f = *state;
    static const struct { uint32_t x; uint16_t h; } cases[] = {
        {0x00000000u, 0x0000}, {0x80000000u, 0x8000},
        {0x3f800000u, 0x3f80},                 /* 1.0 */
        {0xc0000000u, 0xc000},                 /* -2.0 */
        {0x477fe000u, 0x4780},                 /* 65504 rounds up to 65536 */
        {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82}, /* ties to even */
        {0x3f808001u, 0x3f81}, {0x3f807fffu, 0x3f80},
        {0xbf808000u, 0xbf80},
        {0x7f7f0000u, 0x7f7f},                 /* largest finite bf16 */
        {0x7f7f8000u, 0x7f80},                 /* tie past it: inf */
        {0x7f7fffffu, 0x7f80},                 /* FLT_MAX rounds to inf */
        {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80},
        {0x00010000u, 0x0001},                 /* smallest bf16 subnormal */
        {0x00008000u, 0x0000}, {0x00018000u, 0x0002}, {0x00008001u, 0x0001},
        {0x00000001u, 0x0000}, {0x807fffffu, 0x8080}, /* largest float subnormal rounds to min normal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = from1(f->ops, bits_float(cases[i].x));
        if (got != cases[i].h) fail_msg("bf16 from_f32(0x%08x) = 0x%04x, want 0x%04x", cases[i].x, got, cases[i].h);
    }
    assert_true(to1(f->ops, 0x3f80) == 1.0f);
    assert_true(to1(f->ops, 0xc000) == -2.0f);
    assert_true(to1(f->ops, 0x7f80) == INFINITY);
    assert_true(to1(f->ops, 0x0001) == 0x1p-133f);
    /* NaN stays NaN, even when only the low (dropped) payload bits are set */
    uint16_t n1 = from1(f->ops, bits_float(0x7f800001u)), n2 = from1(f->ops, bits_float(0xffffffffu));
    assert_int_equal(n1 & 0x7f80, 0x7f80);
    assert_true((n1 & 0x7f) != 0);
    assert_int_equal(n2 & 0x8000, 0x8000);
    assert_true(isnan(to1(f->ops, n1)) && isnan(to1(f->ops, n2)));
    assert_int_equal(from1(f->ops, bits_float(0x7fc00000u)), 0x7fc0);
}

static void test_bf16_exhaustive(void **state) {
    fixture *f = *state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = to1(f->ops, (uint16_t)h);
        assert_int_equal(float_bits(x), h << 16);
        uint16_t back = from1(f->ops, x);
        if (isnan(x)) {
            assert_true(isnan(to1(f->ops, back)));
            assert_int_equal(back & 0x8000, h & 0x8000);
            if (h & 0x40) assert_int_equal(back, h);
        } else if (back != h) {
            fail_msg("bf16 round trip 0x%04x -> %a -> 0x%04x", h, (double)x, back);
        }
    }
}

static void check_bf16_round(const bc_precision_ops *ops, float x) {
    uint16_t got = from1(ops, x), want = bf16_ref_round(x);
    if (got != want) fail_msg("bf16 from_f32(0x%08x) = 0x%04x, want 0x%04x", float_bits(x), got, want);
}

static void test_bf16_rounding(void **state) {
    fixture *f = *state;
    for (uint32_t h = 0; h < 0x7f80; h++) {
        uint32_t mid = (h << 16) | 0x8000u; /* exact midpoint to the next pattern */
        for (uint32_t s = 0; s < 2; s++) {
            uint32_t m = mid | (s << 31);
            check_bf16_round(f->ops, bits_float(m));
            check_bf16_round(f->ops, bits_float(m - 1));
            check_bf16_round(f->ops, bits_float(m + 1));
        }
    }
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
        float x = bits_float((uint32_t)u);
        if (isfinite(x)) check_bf16_round(f->ops, x);
    }
}

/* -------------------------------------------------------------------- int8 */

/* The int8 element code by an independent rule, in double: NaN -> 0,
 * saturate to +-127, else the nearest integer, ties to the even one. */
static int int8_oracle(float x) {
    if (isnan(x)) return 0;
    if (x >= 127.0f) return 127;
    if (x <= -127.0f) return -127;
    const double f = floor((double)x), d = (double)x - f;
    if (d > 0.5) return (int)f + 1;
    if (d < 0.5) return (int)f;
    return fmod(f, 2.0) == 0.0 ? (int)f : (int)f + 1;
}

/* Every byte converts exactly (-128 included, though never stored); from_f32
 * matches the oracle on every tie from -130.5 to 130.5, their neighbours,
 * specials and a strided sweep of all float32 patterns; nothing past n is
 * written. */
static void test_int8_rounding(void **state) {
    fixture *f = *state;
    const bc_precision_ops *ops = f->ops;
    int8_t all[256];
    float back[256];
    for (int i = 0; i < 256; i++) all[i] = (int8_t)(i - 128);
    ops->to_f32(all, back, 256);
    for (int i = 0; i < 256; i++) assert_true(back[i] == (float)(i - 128));
    float xs[3];
    int8_t q[4];
    for (int t = -261; t <= 261; t += 2) { /* t / 2: the ties */
        const float tie = (float)t * 0.5f;
        xs[0] = tie;
        xs[1] = nextafterf(tie, -INFINITY);
        xs[2] = nextafterf(tie, INFINITY);
        q[3] = 99;
        ops->from_f32(xs, q, 3);
        for (int k = 0; k < 3; k++) {
            if (q[k] != int8_oracle(xs[k])) fail_msg("int8 from_f32(%a) = %d, want %d", (double)xs[k], q[k], int8_oracle(xs[k]));
        }
        assert_int_equal(q[3], 99);
    }
    const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, 3.4e38f, -3.4e38f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        ops->from_f32(&specials[i], q, 1);
        assert_int_equal(q[0], int8_oracle(specials[i]));
    }
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
        const float x = bits_float((uint32_t)u);
        ops->from_f32(&x, q, 1);
        if (q[0] != int8_oracle(x)) fail_msg("int8 from_f32(%a) = %d, want %d", (double)x, q[0], int8_oracle(x));
    }
}

#define PLUGIN_TEST(fn, name) cmocka_unit_test_prestate_setup_teardown(fn, setup_plugin, teardown_plugin, (void *)name)

int main(void) {
    const struct CMUnitTest tests[] = {
        PLUGIN_TEST(test_descriptor, "fp32"),
        PLUGIN_TEST(test_descriptor, "fp16"),
        PLUGIN_TEST(test_descriptor, "bf16"),
        PLUGIN_TEST(test_buffer_bounds, "fp32"),
        PLUGIN_TEST(test_buffer_bounds, "fp16"),
        PLUGIN_TEST(test_buffer_bounds, "bf16"),
        PLUGIN_TEST(test_fp32_exact, "fp32"),
        PLUGIN_TEST(test_fp16_known, "fp16"),
        PLUGIN_TEST(test_fp16_exhaustive, "fp16"),
        PLUGIN_TEST(test_fp16_rounding, "fp16"),
        PLUGIN_TEST(test_bf16_known, "bf16"),
        PLUGIN_TEST(test_bf16_exhaustive, "bf16"),
        PLUGIN_TEST(test_bf16_rounding, "bf16"),
        PLUGIN_TEST(test_descriptor, "int8"),
        PLUGIN_TEST(test_int8_rounding, "int8"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
