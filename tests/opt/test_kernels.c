/* test_kernels.c: the OPT kernels. The portable variant against a double
 * precision reference; every SIMD variant this CPU has against the portable
 * one, for fp32, fp16, bf16 and int8 (per-row scales) weights, odd shapes (K and N not multiples of
 * 16, M = 1, 3, 4, 17 and M * K large enough for the cache-blocked path; at
 * M = 1 K odd and every kind of K tail of the 1-row tiles), bias
 * and ReLU on and off, and [n0, n1) sub-ranges, the shapes of the column
 * path (M >= 8 / 16: K blocks, blocks of rows, panel tails); the same bits
 * for any split of [n0, n1) (every variant, path and dtype); the scalar fp16/bf16
 * conversions and the int8 element rule against known bit patterns (round
 * to nearest even); the fused
 * attention (portable against a double reference, SIMD against portable).
 * A variant the CPU lacks is skipped, not passed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "kernels_impl.h" /* eng_avx512_dpbf16_over_fma */

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float fbits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- conversions ------------------------------------------------------- */

static void test_f16_known(void **state)
{
    (void)state;
    struct { float f; uint16_t h; } enc[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.1f, 0x2e66},
        {65504.0f, 0x7bff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00}, {1e10f, 0x7c00}, {-1e10f, 0xfc00},
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        {0x1p-14f, 0x0400},                       /* smallest normal */
        {0x1p-24f, 0x0001},                       /* smallest subnormal */
        {0x1p-25f, 0x0000},                       /* tie between 0 and 2^-24: even is 0 */
        {0x1.8p-25f, 0x0001},                     /* above the tie */
        {0x1.4p-23f, 0x0002},                     /* 2.5 * 2^-24: tie, to even 2 */
        {0x1.cp-22f, 0x0007},                     /* 7 * 2^-24 exactly */
        {0x1.ffcp-15f, 0x0400},                   /* 1023.5 * 2^-24: tie, rounds up into the normals */
        {1.0f + 0x1p-11f, 0x3c00},                /* tie between 0x3c00 and 0x3c01: even */
        {1.0f + 0x3p-11f, 0x3c02},                /* tie between 0x3c01 and 0x3c02: even */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},     /* just above the tie */
        {1e-10f, 0x0000}, {-1e-10f, 0x8000},
    };
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++) {
        uint16_t h = prec_f32_to_f16(enc[i].f);
        if (h != enc[i].h)
            print_error("f32_to_f16(%a) = 0x%04x, want 0x%04x\n", (double)enc[i].f, h, enc[i].h);
        assert_int_equal(h, enc[i].h);
    }
    struct { uint16_t h; float f; } dec[] = {
        {0x0001, 0x1p-24f}, {0x03ff, 0x1.ff8p-15f}, {0x0400, 0x1p-14f}, {0x7bff, 65504.0f},
        {0x3c00, 1.0f}, {0xc000, -2.0f}, {0x3555, 0x1.554p-2f}, {0x8000, -0.0f},
    };
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++)
        assert_int_equal(bits(prec_f16_to_f32(dec[i].h)), bits(dec[i].f));
    assert_true(isinf(prec_f16_to_f32(0x7c00)) && prec_f16_to_f32(0x7c00) > 0);
    assert_true(isinf(prec_f16_to_f32(0xfc00)) && prec_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(prec_f16_to_f32(0x7e00)));
    uint16_t hn = prec_f32_to_f16(NAN);
    assert_int_equal(hn & 0x7c00, 0x7c00);
    assert_int_not_equal(hn & 0x03ff, 0);
    /* a signalling NaN stays a NaN (and becomes quiet) */
    hn = prec_f32_to_f16(fbits(0x7f800001u));
    assert_int_equal(hn & 0x7e00, 0x7e00);
    /* every finite fp16 survives a round trip through fp32 */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u)
            continue;
        assert_int_equal(prec_f32_to_f16(prec_f16_to_f32((uint16_t)h)), h);
    }
}

static void test_bf16_known(void **state)
{
    (void)state;
    struct { float f; uint16_t h; } enc[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3f80}, {-2.0f, 0xc000},
        {1.0f + 0x1p-8f, 0x3f80},                 /* tie: even */
        {1.0f + 0x3p-8f, 0x3f82},                 /* tie: even (up) */
        {1.0f + 0x1p-8f + 0x1p-20f, 0x3f81},      /* above the tie */
        {3.14159265f, 0x4049}, {INFINITY, 0x7f80}, {-INFINITY, 0xff80},
        {fbits(0x7f7fffffu), 0x7f80},             /* FLT_MAX rounds to inf */
        {fbits(0x00000001u), 0x0000},             /* the smallest subnormal rounds to 0 */
        {fbits(0x00018000u), 0x0002},             /* subnormal tie, odd below: up */
    };
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++) {
        uint16_t h = prec_f32_to_bf16(enc[i].f);
        if (h != enc[i].h)
            print_error("f32_to_bf16(%a) = 0x%04x, want 0x%04x\n", (double)enc[i].f, h, enc[i].h);
        assert_int_equal(h, enc[i].h);
    }
    assert_int_equal(prec_f32_to_bf16(fbits(0x7fc00001u)), 0x7fc0);
    assert_int_equal(prec_f32_to_bf16(fbits(0x7f800001u)), 0x7fc0); /* sNaN made quiet, not inf */
    assert_int_equal(prec_f32_to_bf16(fbits(0xff810000u)), 0xffc1);
    assert_int_equal(bits(prec_bf16_to_f32(0x3f80)), bits(1.0f));
    assert_int_equal(bits(prec_bf16_to_f32(0x4049)), 0x40490000u);
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu))
            continue; /* NaN */
        assert_int_equal(prec_f32_to_bf16(prec_bf16_to_f32((uint16_t)h)), h);
    }
}

/* int8 elements: round to nearest even, saturate to +-127, NaN -> 0, and
 * the kernels' to_f32 / from_f32 of ENG_I8 (element codes, no scale). */
static void test_int8_known(void **state)
{
    (void)state;
    static const float in[] = {0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f, 126.5f,
                               127.0f, 127.4f, 128.0f, -127.6f, -128.0f, 1e30f, INFINITY, -INFINITY, NAN, 3.7f};
    static const int8_t want[] = {0, 0, 0, 2, 2, 0, -2, -2, 0, 126, 127, 127, 127, -127, -127, 127, 127, -127, 0, 4};
    enum { NI = sizeof in / sizeof in[0] };
    for (int isa = ENG_ISA_PORTABLE; isa <= (int)eng_isa_detect(); isa++) {
        const eng_kernels *k = eng_kernels_for((eng_isa)isa);
        if (!k)
            continue;
        int8_t q[NI + 1];
        q[NI] = 99; /* nothing past n written */
        k->from_f32(q, ENG_I8, in, NI);
        float back[NI];
        k->to_f32(back, q, ENG_I8, NI);
        for (int i = 0; i < NI; i++) {
            if (q[i] != want[i])
                print_error("%s int8 from_f32(%a) = %d, want %d\n", eng_isa_name(k->isa), (double)in[i], q[i],
                            want[i]);
            assert_int_equal(q[i], want[i]);
            assert_true(back[i] == (float)want[i]);
        }
        assert_int_equal(q[NI], 99);
    }
    assert_int_equal(eng_dtype_size(ENG_I8), 1);
    assert_string_equal(eng_dtype_name(ENG_I8), "int8");
    assert_int_equal(eng_kv_dtype(ENG_I8), ENG_F32);
    assert_int_equal(eng_kv_dtype(ENG_BF16), ENG_BF16);
    assert_int_equal(eng_i8_scales_offset(3, 5), 64);
    assert_int_equal(eng_matrix_bytes(ENG_I8, 3, 5), 64 + 12);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(eng_dtype_name(ENG_F32), "float32");
    assert_string_equal(eng_dtype_name(ENG_F16), "float16");
    assert_string_equal(eng_dtype_name(ENG_BF16), "bfloat16");
    assert_int_equal(eng_dtype_size(ENG_F32), 4);
    assert_int_equal(eng_dtype_size(ENG_BF16), 2);
    eng_isa best = eng_isa_detect();
    print_message("detected ISA: %s\n", eng_isa_name(best));
    assert_non_null(eng_kernels_for(ENG_ISA_PORTABLE));
    assert_null(eng_kernels_for((eng_isa)(best + 1)));
    assert_non_null(eng_kernels_best());
}

/* The kernels setting: auto, each family on a CPU that runs it, and the
 * refusals (an unknown name, a family above the CPU's best), with the CPU's
 * best given, so every path runs on any machine. */
static void test_kernels_setting(void **state)
{
    (void)state;
    bc_error err = {0};
    int isa = 7;
    assert_int_equal(eng_kernels_choose("auto", ENG_ISA_PORTABLE, &isa, &err), BC_OK);
    assert_int_equal(isa, -1);
    assert_int_equal(eng_kernels_choose("", ENG_ISA_AVX2, &isa, &err), BC_OK);
    assert_int_equal(isa, -1);
    assert_int_equal(eng_kernels_choose("portable", ENG_ISA_PORTABLE, &isa, &err), BC_OK);
    assert_int_equal(isa, ENG_ISA_PORTABLE);
    assert_int_equal(eng_kernels_choose("sse4", ENG_ISA_AVX512, &isa, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "\"sse4\": not a kernel family"));
    assert_int_equal(isa, -1);
    /* an AVX2-only CPU asked for AVX-512 */
    assert_int_equal(eng_kernels_choose("avx512", ENG_ISA_AVX2, &isa, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "kernels = \"avx512\": this CPU runs at most the avx2 kernels"));
    assert_non_null(strstr(err.hint, "auto"));
    assert_int_equal(eng_kernels_choose("avx2", ENG_ISA_PORTABLE, &isa, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "at most the portable kernels"));
    /* every family this CPU runs is accepted, and its table is that family's */
    for (int f = 0; f <= (int)eng_isa_detect(); f++) {
        const char *name = eng_isa_name((eng_isa)f);
        assert_int_equal(eng_kernels_choose(name, eng_isa_detect(), &isa, &err), BC_OK);
        assert_int_equal(isa, f);
        assert_int_equal(eng_kernels_for((eng_isa)isa)->isa, f);
    }
}

/* What auto runs: the CPU's best family, but avx512 on a CPU whose
 * vdpbf16ps does fewer flops per second than its FMAs (or an unknown ratio);
 * and on this CPU, the family the rule gives for the measured ratio. */
static void test_kernels_auto(void **state)
{
    (void)state;
    assert_int_equal(eng_kernels_auto_isa(ENG_ISA_AVX512_BF16, 2.0), ENG_ISA_AVX512_BF16);
    assert_int_equal(eng_kernels_auto_isa(ENG_ISA_AVX512_BF16, 1.0), ENG_ISA_AVX512_BF16);
    assert_int_equal(eng_kernels_auto_isa(ENG_ISA_AVX512_BF16, 0.5), ENG_ISA_AVX512);
    assert_int_equal(eng_kernels_auto_isa(ENG_ISA_AVX512_BF16, 0.0), ENG_ISA_AVX512);
    assert_int_equal(eng_kernels_auto_isa(ENG_ISA_AVX512_BF16, NAN), ENG_ISA_AVX512);
    for (int f = ENG_ISA_PORTABLE; f <= ENG_ISA_AVX512; f++)
        assert_int_equal(eng_kernels_auto_isa((eng_isa)f, 0.5), f);
    const eng_isa cpu = eng_isa_detect();
    const int best = (int)eng_kernels_best()->isa;
    if (cpu == ENG_ISA_AVX512_BF16) {
        const double ratio = eng_avx512_dpbf16_over_fma();
        print_message("vdpbf16ps flops / fp32 FMA flops on this core: %.2f; auto runs %s\n", ratio,
                      eng_isa_name((eng_isa)best));
        assert_true(ratio > 0.0 && ratio < 16.0);
        assert_true(best == ENG_ISA_AVX512 || best == ENG_ISA_AVX512_BF16);
    } else {
        assert_int_equal(best, (int)cpu);
    }
}

/* ---- data -------------------------------------------------------------- */

static uint64_t rng_state;
static float frand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / (double)(1ull << 23) - 1.0);
}

/* Weights w[N, K] in dtype wt from fp32 values; wf gets the values the dtype
 * actually holds (rounded). int8 (the block of kernels.h): random q in
 * [-127, 127] and a random scale per row, one row in five scale 0. */
static void *make_weights(eng_dtype wt, int N, int K, float *wf)
{
    size_t n = (size_t)N * K;
    void *w = malloc(eng_matrix_bytes(wt, (size_t)N, (size_t)K));
    assert_non_null(w);
    if (wt == ENG_I8) {
        float *scale = (float *)(void *)((char *)w + eng_i8_scales_offset((size_t)N, (size_t)K));
        for (int r = 0; r < N; r++) {
            scale[r] = r % 5 == 3 ? 0.0f : (1.5f + frand()) / 127.0f;
            for (int c = 0; c < K; c++) {
                int q = (int)lrintf(127.0f * frand());
                ((int8_t *)w)[(size_t)r * K + c] = (int8_t)q;
                wf[(size_t)r * K + c] = scale[r] * (float)q;
            }
        }
        assert_true(eng_i8_scales(w, (size_t)N, (size_t)K) == scale);
        return w;
    }
    for (size_t i = 0; i < n; i++) {
        float v = frand();
        if (wt == ENG_F32) {
            ((float *)w)[i] = v;
        } else if (wt == ENG_F16) {
            ((uint16_t *)w)[i] = prec_f32_to_f16(v);
            v = prec_f16_to_f32(((uint16_t *)w)[i]);
        } else {
            ((uint16_t *)w)[i] = prec_f32_to_bf16(v);
            v = prec_bf16_to_f32(((uint16_t *)w)[i]);
        }
        wf[i] = v;
    }
    return w;
}

#define SENTINEL 12345.0f

/* Runs k->linear on one shape and checks it against a double reference and
 * against the portable variant: |y - ref| <= tol * (sum_k |x w| + |b|).
 * Outputs outside [n0, n1) must keep their sentinel. */
static void check_linear(const eng_kernels *k, eng_dtype wt, int M, int K, int N, int n0, int n1, int use_bias,
                         int relu, double tol)
{
    float *x = malloc(sizeof(float) * (size_t)M * K);
    float *wf = malloc(sizeof(float) * (size_t)N * K);
    float *bias = malloc(sizeof(float) * (size_t)N);
    float *y = malloc(sizeof(float) * (size_t)M * N);
    assert_true(x && wf && bias && y);
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = frand();
    for (int i = 0; i < N; i++)
        bias[i] = frand();
    void *w = make_weights(wt, N, K, wf);
    for (size_t i = 0; i < (size_t)M * N; i++)
        y[i] = SENTINEL;
    k->linear(y, x, w, wt, use_bias ? bias : NULL, M, K, N, n0, n1, relu);
    /* the portable variant on the same inputs, for the direct comparison */
    float *yp = malloc(sizeof(float) * (size_t)M * N);
    assert_non_null(yp);
    eng_kernels_for(ENG_ISA_PORTABLE)->linear(yp, x, w, wt, use_bias ? bias : NULL, M, K, N, n0, n1, relu);
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            float got = y[(size_t)m * N + n];
            if (n < n0 || n >= n1) {
                if (got != SENTINEL)
                    print_error("%s %s M=%d K=%d N=%d: y[%d,%d] outside [%d,%d) was written\n",
                                eng_isa_name(k->isa), eng_dtype_name(wt), M, K, N, m, n, n0, n1);
                assert_true(got == SENTINEL);
                continue;
            }
            double s = use_bias ? bias[n] : 0.0, mag = use_bias ? fabs(bias[n]) : 0.0;
            for (int kk = 0; kk < K; kk++) {
                double p = (double)x[(size_t)m * K + kk] * wf[(size_t)n * K + kk];
                s += p;
                mag += fabs(p);
            }
            if (relu && s < 0)
                s = 0;
            double err = fabs((double)got - s) / (mag + 1e-30);
            double errp = fabs((double)got - yp[(size_t)m * N + n]) / (mag + 1e-30);
            if (!(errp <= tol))
                print_error("%s %s M=%d K=%d N=%d: y[%d,%d] = %.9g, portable %.9g\n", eng_isa_name(k->isa),
                            eng_dtype_name(wt), M, K, N, m, n, (double)got, (double)yp[(size_t)m * N + n]);
            assert_true(errp <= tol);
            if (!(err <= tol))
                print_error("%s %s M=%d K=%d N=%d [%d,%d) bias=%d relu=%d: y[%d,%d] = %.9g, want %.9g "
                            "(rel err %.3g > %.3g)\n",
                            eng_isa_name(k->isa), eng_dtype_name(wt), M, K, N, n0, n1, use_bias, relu, m, n,
                            (double)got, s, err, tol);
            assert_true(err <= tol);
        }
    }
    free(yp);
    free(w);
    free(y);
    free(bias);
    free(wf);
    free(x);
}

/* The tolerance of a variant, relative to sum |x w|: fp32 accumulation in a
 * different order, or (AVX512-BF16 with bf16 weights) x rounded to bf16. */
static double variant_tol(const eng_kernels *k, eng_dtype wt)
{
    if (k->isa == ENG_ISA_AVX512_BF16 && wt == ENG_BF16)
        return 1.0 / 256.0; /* 2^-9 per rounded x, doubled for the margin */
    return 4e-6 * 16;
}

static void run_linear_suite(const eng_kernels *k)
{
    static const int Ms[] = {1, 3, 4, 17};
    static const int Ks[] = {1, 15, 16, 33, 100, 773};
    static const int Ns[] = {1, 5, 19, 64};
    rng_state = 42;
    for (int wt = 0; wt <= ENG_I8; wt++) {
        double tol = variant_tol(k, (eng_dtype)wt);
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
                for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
                    int M = Ms[mi], K = Ks[ki], N = Ns[ni];
                    int opt = (int)(mi + ki + ni);
                    check_linear(k, (eng_dtype)wt, M, K, N, 0, N, opt & 1, (opt >> 1) & 1, tol);
                    if (N > 2)
                        check_linear(k, (eng_dtype)wt, M, K, N, 1, N - 1, (opt >> 1) & 1, opt & 1, tol);
                }
        /* M = 1, the 1-row tiles of the direct path (4 weight rows; 16 (avx2)
         * or 32 (avx512) columns a step, bf16 in pairs with x split into its
         * even and odd columns): K odd and K tails of every length class
         * past whole steps and 64-byte lines, N not a multiple of 4 */
        static const int Ks1[] = {2, 17, 31, 47, 63, 64, 79, 129, 767};
        for (size_t ki = 0; ki < sizeof Ks1 / sizeof Ks1[0]; ki++) {
            check_linear(k, (eng_dtype)wt, 1, Ks1[ki], 9, 0, 9, (int)ki & 1, 0, tol);
            check_linear(k, (eng_dtype)wt, 1, Ks1[ki], 11, 2, 9, 1, (int)ki & 1, tol);
        }
        /* M * K large enough for the cache-blocked (packed) path, odd everything */
        check_linear(k, (eng_dtype)wt, 67, 601, 37, 0, 37, 1, 0, tol);
        check_linear(k, (eng_dtype)wt, 130, 1100, 21, 3, 20, 0, 1, tol);
        check_linear(k, (eng_dtype)wt, 9, 4099, 150, 16, 149, 1, 1, tol);
        check_linear(k, (eng_dtype)wt, 301, 250, 70, 2, 69, 1, 1, tol);
        /* the column path (M >= 8 on avx2, >= 16 on avx512): one and two
         * vectors of rows and a part vector, several K blocks (256) and
         * blocks of rows (64, or 16 at large K), N tails of the panel
         * (12 / 24 rows), K over several chunks of 1024 columns */
        check_linear(k, (eng_dtype)wt, 8, 7, 13, 0, 13, 1, 1, tol);
        check_linear(k, (eng_dtype)wt, 16, 256, 24, 0, 24, 0, 0, tol);
        check_linear(k, (eng_dtype)wt, 16, 257, 25, 1, 25, 1, 0, tol);
        check_linear(k, (eng_dtype)wt, 33, 600, 50, 3, 47, 0, 1, tol);
        check_linear(k, (eng_dtype)wt, 64, 1030, 37, 0, 37, 1, 1, tol);
        check_linear(k, (eng_dtype)wt, 100, 130, 61, 5, 61, 1, 0, tol);
        check_linear(k, (eng_dtype)wt, 40, 3000, 20, 0, 20, 1, 1, tol);
        check_linear(k, (eng_dtype)wt, 20, 4200, 30, 2, 29, 0, 1, tol);
        /* x and the sums transposed by 8 x 8 blocks in strips of 16: a last
         * strip of 8 (K = 1000), a scalar edge of rows (24 = 16 + 8 rows,
         * 21 outputs) */
        check_linear(k, (eng_dtype)wt, 24, 1000, 21, 0, 21, 1, 0, tol);
        /* fp32 rows a multiple of 2 KiB apart (K = 512) are packed, others
         * read in place: both, with a panel tail */
        check_linear(k, (eng_dtype)wt, 16, 512, 50, 1, 50, 0, 1, tol);
    }
}

/* The inputs and outputs of a bit-equality check of linear: random x[M, K],
 * weights w[N, K] of dtype wt (wf: their fp32 source) and bias[N], y1 and
 * y2 [M, N]. */
typedef struct bits_case {
    float *x, *wf, *bias, *y1, *y2;
    void *w;
} bits_case;

static bits_case bits_case_make(eng_dtype wt, int M, int K, int N)
{
    bits_case c = {malloc(sizeof(float) * (size_t)M * K), malloc(sizeof(float) * (size_t)N * K),
                   malloc(sizeof(float) * (size_t)N), malloc(sizeof(float) * (size_t)M * N),
                   malloc(sizeof(float) * (size_t)M * N), NULL};
    assert_true(c.x && c.wf && c.bias && c.y1 && c.y2);
    for (size_t i = 0; i < (size_t)M * K; i++)
        c.x[i] = frand();
    for (int i = 0; i < N; i++)
        c.bias[i] = frand();
    c.w = make_weights(wt, N, K, c.wf);
    return c;
}

static void bits_case_free(bits_case *c)
{
    free(c->w);
    free(c->y2);
    free(c->y1);
    free(c->bias);
    free(c->wf);
    free(c->x);
}

/* A row's result must not depend on how [n0, n1) is split (what lets
 * eng_linear_parallel give the same bits for any thread count): every path,
 * dtype and split point, against the whole range, bit for bit. */
static void run_split_suite(const eng_kernels *k)
{
    static const int shapes[][3] = {{1, 300, 70}, {1, 301, 70}, {1, 95, 70}, {5, 1030, 70}, {16, 300, 70},
                                    {17, 1030, 70}, {24, 1000, 70}, {33, 1024, 70}, {64, 770, 70}, {70, 1030, 70},
                                    {130, 600, 70}};
    static const int cuts[][2] = {{16, 48}, {7, 37}, {1, 69}, {24, 25}};
    rng_state = 7;
    for (int wt = 0; wt <= ENG_I8; wt++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
            bits_case c = bits_case_make((eng_dtype)wt, M, K, N);
            float *x = c.x, *bias = c.bias, *y1 = c.y1, *y2 = c.y2;
            const void *w = c.w;
            k->linear(y1, x, w, (eng_dtype)wt, bias, M, K, N, 0, N, 1);
            for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
                const int a = cuts[c][0], b = cuts[c][1];
                memset(y2, 0xff, sizeof(float) * (size_t)M * N);
                k->linear(y2, x, w, (eng_dtype)wt, bias, M, K, N, b, N, 1);
                k->linear(y2, x, w, (eng_dtype)wt, bias, M, K, N, 0, a, 1);
                k->linear(y2, x, w, (eng_dtype)wt, bias, M, K, N, a, b, 1);
                if (memcmp(y1, y2, sizeof(float) * (size_t)M * N) != 0)
                    print_error("%s %s M=%d K=%d N=%d: split at %d, %d changed the bits\n", eng_isa_name(k->isa),
                                eng_dtype_name((eng_dtype)wt), M, K, N, a, b);
                assert_memory_equal(y1, y2, sizeof(float) * (size_t)M * N);
            }
            bits_case_free(&c);
        }
}

/* Many blocks of rows (prefill) must give the same bits as each block of 64
 * rows alone (a decode-sized call): the column path's weight panels
 * converted once per group and chunk for every block of rows, against once
 * per block. K over two chunks of 1024 columns, fp32 read in place (K = 1100)
 * and packed (K = 1536: rows 6 KiB apart), a panel tail, more outputs than
 * one group of converted panels holds (1.5 MiB: 384 rows on avx512, 768 on
 * avx2), every block of rows at least 16 (the column path alone), and at
 * least 8 blocks of 64 rows (the fewest the group order takes).
 * avx512_bf16's bf16 weights take its vdpbf16ps tiles, not the column path:
 * left out. */
static void run_blocks_suite(const eng_kernels *k)
{
    static const int shapes[][5] = {
        {530, 1100, 60, 0, 60}, {532, 1536, 37, 5, 34}, {600, 300, 130, 3, 130}, {528, 1030, 800, 7, 793}};
    rng_state = 11;
    for (int wt = 0; wt <= ENG_I8; wt++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            if (k->isa == ENG_ISA_AVX512_BF16 && wt == ENG_BF16)
                continue;
            const int M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
            const int n0 = shapes[si][3], n1 = shapes[si][4];
            bits_case c = bits_case_make((eng_dtype)wt, M, K, N);
            float *x = c.x, *bias = c.bias, *y1 = c.y1, *y2 = c.y2;
            const void *w = c.w;
            memset(y1, 0, sizeof(float) * (size_t)M * N);
            memset(y2, 0, sizeof(float) * (size_t)M * N);
            k->linear(y1, x, w, (eng_dtype)wt, bias, M, K, N, n0, n1, 1);
            for (int m0 = 0; m0 < M; m0 += 64) {
                const int mc = M - m0 < 64 ? M - m0 : 64;
                k->linear(y2 + (size_t)m0 * N, x + (size_t)m0 * K, w, (eng_dtype)wt, bias, mc, K, N, n0, n1, 1);
            }
            if (memcmp(y1, y2, sizeof(float) * (size_t)M * N) != 0)
                print_error("%s %s M=%d K=%d N=%d [%d, %d): blocks of 64 rows alone changed the bits\n",
                            eng_isa_name(k->isa), eng_dtype_name((eng_dtype)wt), M, K, N, n0, n1);
            assert_memory_equal(y1, y2, sizeof(float) * (size_t)M * N);
            bits_case_free(&c);
        }
}

/* dot, axpy, to_f32 and from_f32 of k against the portable variant. */
static void run_vector_suite(const eng_kernels *k)
{
    const eng_kernels *ref = eng_kernels_for(ENG_ISA_PORTABLE);
    static const int ns[] = {1, 7, 16, 31, 64, 100, 1000, 1027};
    rng_state = 7;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        int n = ns[i];
        float *a = malloc(sizeof(float) * n), *wf = malloc(sizeof(float) * n);
        float *y1 = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
        assert_true(a && wf && y1 && y2);
        for (int j = 0; j < n; j++)
            a[j] = frand();
        for (int wt = 0; wt < 3; wt++) {
            void *b = make_weights((eng_dtype)wt, 1, n, wf);
            double s = 0, mag = 0;
            for (int j = 0; j < n; j++) {
                s += (double)a[j] * wf[j];
                mag += fabs((double)a[j] * wf[j]);
            }
            float got = k->dot(a, b, (eng_dtype)wt, n);
            assert_true(fabs(got - s) <= variant_tol(k, (eng_dtype)wt) * mag + 1e-30);
            for (int j = 0; j < n; j++)
                y1[j] = y2[j] = a[j];
            k->axpy(y1, 0.37f, b, (eng_dtype)wt, n);
            ref->axpy(y2, 0.37f, b, (eng_dtype)wt, n);
            for (int j = 0; j < n; j++)
                assert_true(fabsf(y1[j] - y2[j]) <= 1e-6f * (fabsf(y2[j]) + 1.0f));
            k->to_f32(y1, b, (eng_dtype)wt, (size_t)n);
            assert_memory_equal(y1, wf, sizeof(float) * n);
            free(b);
        }
        free(y2);
        free(y1);
        free(wf);
        free(a);
    }
    /* from_f32 must agree bit for bit, including ties, subnormals, inf, NaN */
    enum { NV = 4096 + 12 };
    float *src = malloc(sizeof(float) * NV);
    uint16_t *h1 = malloc(2 * NV), *h2 = malloc(2 * NV);
    float *f1 = malloc(sizeof(float) * NV);
    assert_true(src && h1 && h2 && f1);
    for (int j = 0; j < 4096; j++) {
        rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(rng_state >> 32);
        /* mix wide random bit patterns with ties of both formats */
        if (j % 4 == 1)
            u = (u & 0xffff0000u) | 0x8000u;
        else if (j % 4 == 2)
            u = (u & 0xffffe000u) | 0x1000u;
        else if (j % 4 == 3) /* magnitudes around fp16's range, incl. subnormals */
            u = (u & 0x81ffffffu) | 0x36000000u;
        src[j] = fbits(u);
    }
    float specials[12] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65520.0f, 65504.0f, 0x1p-25f, 0x1p-24f,
                          fbits(0x00000001u), fbits(0x7f7fffffu), fbits(0xff810000u)};
    memcpy(src + 4096, specials, sizeof specials);
    for (int dt = 1; dt < 3; dt++) {
        for (int cut = NV - 5; cut <= NV; cut += 5) { /* a tail and a full length */
            memset(h1, 0xab, 2 * NV);
            memset(h2, 0xab, 2 * NV);
            k->from_f32(h1, (eng_dtype)dt, src, (size_t)cut);
            ref->from_f32(h2, (eng_dtype)dt, src, (size_t)cut);
            for (int j = 0; j < NV; j++) {
                if (h1[j] != h2[j])
                    print_error("%s from_f32 %s: src %a (0x%08x) -> 0x%04x, portable 0x%04x\n",
                                eng_isa_name(k->isa), eng_dtype_name((eng_dtype)dt), (double)src[j], bits(src[j]),
                                h1[j], h2[j]);
                assert_int_equal(h1[j], h2[j]);
            }
        }
    }
    k->from_f32(f1, ENG_F32, src, NV);
    assert_memory_equal(f1, src, sizeof(float) * NV);
    free(f1);
    free(h2);
    free(h1);
    free(src);
}

/* ---- attention ----------------------------------------------------------------- */

/* out[D] = softmax(q . k_s over kept keys) . v in double, from the values as
 * stored in dt (what every variant must compute). */
static void attend_ref(double *out, const float *q, const float *kf, const float *vf, const uint8_t *keep, int S, int D)
{
    double *p = malloc(sizeof(double) * (size_t)S);
    double mx = -INFINITY, sum = 0.0;
    int any = 0;
    for (int s = 0; s < S; s++) {
        if (keep && !keep[s])
            continue;
        double d = 0.0;
        for (int i = 0; i < D; i++)
            d += (double)q[i] * kf[(size_t)s * D + i];
        p[s] = d;
        if (d > mx)
            mx = d;
        any = 1;
    }
    for (int s = 0; s < S; s++) {
        p[s] = !any ? 1.0 : (keep && !keep[s]) ? 0.0 : exp(p[s] - mx);
        sum += p[s];
    }
    for (int i = 0; i < D; i++) {
        double o = 0.0;
        for (int s = 0; s < S; s++)
            o += p[s] / sum * vf[(size_t)s * D + i];
        out[i] = o;
    }
    free(p);
}

/* A factor on the queries that keeps the scores' spread of D = 128 at larger
 * D (as the model's 1/sqrt(D) does), so that the absolute tolerance below,
 * which holds rounding errors that grow with the scores, fits every D. */
static float q_scale(int D) { return D > 128 ? sqrtf(128.0f / (float)D) : 1.0f; }

/* k's attend against the double reference (portable) or against the portable
 * variant (SIMD), for every dtype, D with and without SIMD tails, S from 1 to
 * past a vector of scores, and masks: none, some keys dropped, none kept.
 * Tolerance: the outputs are convex combinations of V rows (|v| < 1), so an
 * absolute bound: 2e-6 for fp32 scores and weights. */
static void run_attend_suite(const eng_kernels *k)
{
    const eng_kernels *ref = eng_kernels_for(ENG_ISA_PORTABLE);
    const int Ds[] = {64, 80, 13, 128, 1, 264}; /* 264: past the bf16 pair path of the scores (D <= 256) */
    const int Ss[] = {1, 3, 4, 7, 16, 17, 33, 300};
    rng_state = 99;
    for (int dt = 0; dt < 3; dt++)
        for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++)
            for (size_t si = 0; si < sizeof Ss / sizeof Ss[0]; si++)
                for (int mode = 0; mode < 3; mode++) {
                    const int D = Ds[di], S = Ss[si];
                    const size_t es = eng_dtype_size((eng_dtype)dt), n = (size_t)S * D;
                    float *q = malloc(sizeof(float) * (size_t)D), *kf = malloc(sizeof(float) * n),
                          *vf = malloc(sizeof(float) * n), *sc = malloc(sizeof(float) * (size_t)S),
                          *o1 = malloc(sizeof(float) * (size_t)D), *o2 = malloc(sizeof(float) * (size_t)D);
                    void *kc = malloc(es * n), *vc = malloc(es * n);
                    uint8_t *keep = malloc((size_t)S);
                    double *oref = malloc(sizeof(double) * (size_t)D);
                    for (int i = 0; i < D; i++) /* scores up to ~|D|/4 (D <= 128): exercises the softmax range */
                        q[i] = 0.5f * q_scale(D) * frand();
                    for (size_t i = 0; i < n; i++) {
                        kf[i] = frand();
                        vf[i] = frand();
                    }
                    for (int s = 0; s < S; s++)
                        keep[s] = mode == 0 ? 1 : mode == 1 ? (s % 3 != 1) : 0;
                    if (mode == 1 && S > 1)
                        keep[S - 1] = 0;
                    ref->from_f32(kc, (eng_dtype)dt, kf, n);
                    ref->from_f32(vc, (eng_dtype)dt, vf, n);
                    ref->to_f32(kf, kc, (eng_dtype)dt, n); /* the values as stored */
                    ref->to_f32(vf, vc, (eng_dtype)dt, n);
                    const uint8_t *km = mode == 0 && (si % 2) ? NULL : keep;
                    k->attend(o1, q, kc, vc, (eng_dtype)dt, km, S, D, sc);
                    if (k == ref) {
                        attend_ref(oref, q, kf, vf, km, S, D);
                    } else {
                        ref->attend(o2, q, kc, vc, (eng_dtype)dt, km, S, D, sc);
                        for (int i = 0; i < D; i++)
                            oref[i] = o2[i];
                    }
                    for (int i = 0; i < D; i++)
                        if (!(fabs(o1[i] - oref[i]) <= 2e-6)) {
                            print_error("%s attend %s D %d S %d mask %d: out[%d] = %.9g, want %.9g\n",
                                        eng_isa_name(k->isa), eng_dtype_name((eng_dtype)dt), D, S, mode, i,
                                        (double)o1[i], oref[i]);
                            fail();
                        }
                    /* attend_split: the first np keys moved to their own
                     * buffers, the main buffers' copies poisoned; must give
                     * what attend gave over the joined rows */
                    const int np = S / 2 + 1;
                    void *kp = malloc(es * n), *vp = malloc(es * n);
                    memcpy(kp, kc, es * n);
                    memcpy(vp, vc, es * n);
                    memset(kc, 0x7b, es * (size_t)np * D);
                    memset(vc, 0x7b, es * (size_t)np * D);
                    k->attend_split(o2, q, kp, vp, np, kc, vc, (eng_dtype)dt, km, S, D, sc);
                    for (int i = 0; i < D; i++)
                        if (!(fabs(o2[i] - o1[i]) <= 2e-6)) {
                            print_error("%s attend_split %s D %d S %d np %d mask %d: out[%d] = %.9g, attend %.9g\n",
                                        eng_isa_name(k->isa), eng_dtype_name((eng_dtype)dt), D, S, np, mode, i,
                                        (double)o2[i], (double)o1[i]);
                            fail();
                        }
                    free(vp);
                    free(kp);
                    free(oref);
                    free(keep);
                    free(vc);
                    free(kc);
                    free(o2);
                    free(o1);
                    free(sc);
                    free(vf);
                    free(kf);
                    free(q);
                }
}

/* k's attend_group against attend_split of the portable variant per query
 * (and of k itself, which attend_group with G = 1 is in the SIMD variants):
 * G queries, each with its own K/V rows (keys s >= np, rows ld_kv bytes
 * apart, their prefix copies poisoned) and keep row, sharing np prefix keys
 * kept apart; every dtype, D, several S, np (0, inside, all) and G (1 to
 * ENG_ATTEND_GROUP_MAX), masks none, some per query, none kept. */
static void run_attend_group_suite(const eng_kernels *k)
{
    const eng_kernels *ref = eng_kernels_for(ENG_ISA_PORTABLE);
    const int Ds[] = {64, 80, 13, 128, 1, 264}; /* 264: past the bf16 pair path of the scores (D <= 256) */
    const int Ss[] = {1, 5, 33, 70};
    const int Gs[] = {1, 3, 4, ENG_ATTEND_GROUP_MAX};
    rng_state = 7;
    for (int dt = 0; dt < 3; dt++)
        for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++)
            for (size_t si = 0; si < sizeof Ss / sizeof Ss[0]; si++)
                for (size_t gi = 0; gi < sizeof Gs / sizeof Gs[0]; gi++)
                    for (int mode = 0; mode < 3; mode++) {
                        const int D = Ds[di], S = Ss[si], G = Gs[gi];
                        const int np = mode == 0 ? S / 2 + 1 : mode == 1 ? (si % 2 ? S : 0) : S / 3;
                        const size_t es = eng_dtype_size((eng_dtype)dt), n = (size_t)S * D;
                        const size_t ldq = (size_t)D + 3, ldo = (size_t)D + 5, ld_keep = (size_t)S + 2;
                        const size_t ld_kv = es * n + 64; /* bytes between the queries' own rows */
                        float *q = malloc(sizeof(float) * ldq * G), *f = malloc(sizeof(float) * n),
                              *sc = malloc(sizeof(float) * (size_t)S * G), *o1 = malloc(sizeof(float) * ldo * G),
                              *o2 = malloc(sizeof(float) * (size_t)D);
                        char *kc = malloc(ld_kv * G), *vc = malloc(ld_kv * G);
                        void *kp = malloc(es * n), *vp = malloc(es * n);
                        uint8_t *keep = malloc(ld_keep * G);
                        for (size_t i = 0; i < ldq * G; i++)
                            q[i] = 0.5f * q_scale(D) * frand();
                        for (int g = 0; g < G; g++)
                            for (int s = 0; s < S; s++) /* mode 1: a different key dropped per query */
                                keep[g * ld_keep + s] = mode == 0 ? 1 : mode == 1 ? ((s + g) % 3 != 1) : (g % 2 == 0);
                        for (int part = 0; part < G + 1; part++) {
                            for (size_t i = 0; i < n; i++)
                                f[i] = frand();
                            ref->from_f32(part == G ? kp : kc + (size_t)part * ld_kv, (eng_dtype)dt, f, n);
                            for (size_t i = 0; i < n; i++)
                                f[i] = frand();
                            ref->from_f32(part == G ? vp : vc + (size_t)part * ld_kv, (eng_dtype)dt, f, n);
                            if (part < G) { /* the own rows' copies of the prefix keys must not be read */
                                memset(kc + (size_t)part * ld_kv, 0x7b, es * (size_t)np * D);
                                memset(vc + (size_t)part * ld_kv, 0x7b, es * (size_t)np * D);
                            }
                        }
                        const uint8_t *km = mode == 0 ? NULL : keep;
                        k->attend_group(o1, ldo, q, ldq, G, kp, vp, np, kc, vc, ld_kv, (eng_dtype)dt, km, ld_keep, S,
                                        D, sc);
                        for (int g = 0; g < G; g++) {
                            for (int pass = 0; pass < 2; pass++) {
                                const eng_kernels *r = pass == 0 ? ref : k;
                                r->attend_split(o2, q + g * ldq, kp, vp, np, kc + (size_t)g * ld_kv,
                                                vc + (size_t)g * ld_kv, (eng_dtype)dt, km ? km + g * ld_keep : NULL,
                                                S, D, sc);
                                for (int i = 0; i < D; i++)
                                    if (!(fabs(o1[g * ldo + i] - o2[i]) <= 2e-6)) {
                                        print_error("%s attend_group %s D %d S %d np %d G %d mask %d: query %d "
                                                    "out[%d] = %.9g, %s attend_split %.9g\n",
                                                    eng_isa_name(k->isa), eng_dtype_name((eng_dtype)dt), D, S, np, G,
                                                    mode, g, i, (double)o1[g * ldo + i], eng_isa_name(r->isa),
                                                    (double)o2[i]);
                                        fail();
                                    }
                            }
                        }
                        free(keep);
                        free(vp);
                        free(kp);
                        free(vc);
                        free(kc);
                        free(o2);
                        free(o1);
                        free(sc);
                        free(f);
                        free(q);
                    }
}

static void test_portable(void **state)
{
    (void)state;
    const eng_kernels *k = eng_kernels_for(ENG_ISA_PORTABLE);
    assert_non_null(k);
    run_linear_suite(k);
    run_vector_suite(k);
    run_attend_suite(k);
    run_attend_group_suite(k);
}

static void test_variant(eng_isa isa)
{
    if (isa > eng_isa_detect()) {
        print_message("this CPU lacks %s: skipped\n", eng_isa_name(isa));
        skip();
    }
    const eng_kernels *k = eng_kernels_for(isa);
    if (!k)
        print_error("the CPU has %s but the build has no kernels for it\n", eng_isa_name(isa));
    assert_non_null(k);
    assert_int_equal(k->isa, isa);
    run_linear_suite(k);
    run_split_suite(k);
    run_blocks_suite(k);
    run_vector_suite(k);
    run_attend_suite(k);
    run_attend_group_suite(k);
}

static void test_avx2(void **state) { (void)state; test_variant(ENG_ISA_AVX2); }
static void test_avx512(void **state) { (void)state; test_variant(ENG_ISA_AVX512); }
static void test_avx512_bf16(void **state) { (void)state; test_variant(ENG_ISA_AVX512_BF16); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_known),
        cmocka_unit_test(test_bf16_known),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_int8_known),
        cmocka_unit_test(test_kernels_setting),
        cmocka_unit_test(test_kernels_auto),
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_avx512_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
