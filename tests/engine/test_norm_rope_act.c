/* test_norm_rope_act.c: the RMSNorm, RoPE and SiLU-times-gate row kernels
 * (engine/kernels/norm_rope_act.h). The portable kernels against the
 * formulas in double precision; every SIMD variant this CPU runs against the
 * portable one (sizes that leave every kind of vector tail, in place and out
 * of place, RoPE rows inside wider rows); the inverse-frequency builder
 * against the vectors transformers' own RoPE code computed
 * (tests/llama/golden/rope_inv_freq.txt), and its refusals; the cos/sin
 * tables. A variant the CPU lacks is skipped, not passed.
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

#include "bc_test_assert.h"
#include "norm_rope_act.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* uniform in [lo, hi) */
static float urand(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((rng_state >> 40) * 0x1p-24);
}

static float *filled(size_t n, float lo, float hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = urand(lo, hi);
    return p;
}

/* |got - want| <= tol * max(1, |want|), failing on NaN, naming the index. */
static void assert_rel_close(const float *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= tol * fmax(1.0, fabs(want[i]))))
            fail_msg("%s[%zu] = %.9g, expected %.9g (tol %g)", what, i, (double)got[i], want[i], tol);
    }
}

static void assert_rel_close_f(const float *got, const float *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= tol * fmax(1.0, fabs((double)want[i]))))
            fail_msg("%s[%zu] = %.9g, portable %.9g (tol %g)", what, i, (double)got[i], (double)want[i], tol);
    }
}

/* ---- the portable kernels against double-precision formulas ------------- */

static void test_portable_rms_norm(void **state)
{
    (void)state;
    const eng_nra_kernels *k = eng_nra_portable();
    int sizes[] = {1, 7, 64, 896, 4097};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int N = 3, C = sizes[si];
        float eps = 1e-6f;
        float *x = filled((size_t)N * C, -3.0f, 3.0f), *w = filled((size_t)C, 0.5f, 1.5f);
        float *y = malloc((size_t)N * C * sizeof *y);
        double *want = malloc((size_t)N * C * sizeof *want);
        assert_non_null(y);
        assert_non_null(want);
        x[0] = 0.0f; /* a zero in the row changes nothing but must not upset it */
        for (int n = 0; n < N; n++) {
            double ss = 0.0;
            for (int c = 0; c < C; c++)
                ss += (double)x[n * C + c] * x[n * C + c];
            double r = 1.0 / sqrt(ss / C + eps);
            for (int c = 0; c < C; c++)
                want[n * C + c] = x[n * C + c] * r * w[c];
        }
        k->rms_norm_rows(y, x, w, N, C, eps);
        assert_rel_close(y, want, (size_t)N * C, 1e-6, "rms_norm y");
        k->rms_norm_rows(x, x, w, N, C, eps); /* in place */
        assert_rel_close(x, want, (size_t)N * C, 1e-6, "rms_norm in place");
        free(x), free(w), free(y), free(want);
    }
    /* An all-zero row: 0 * rsqrt(eps) = 0, finite. */
    float z[5] = {0}, w1[5] = {1, 1, 1, 1, 1}, out[5];
    k->rms_norm_rows(out, z, w1, 1, 5, 1e-5f);
    for (int c = 0; c < 5; c++)
        assert_double_close(out[c], 0.0, 0.0);
}

/* cos/sin of a table made here in double, so the kernel is checked, not the table. */
static void make_tables(float *cs, float *sn, int half, int P)
{
    for (int p = 0; p < P; p++)
        for (int i = 0; i < half; i++) {
            double a = p * pow(10000.0, -2.0 * i / (2.0 * half));
            cs[p * half + i] = (float)cos(a);
            sn[p * half + i] = (float)sin(a);
        }
}

static void test_portable_rope(void **state)
{
    (void)state;
    const eng_nra_kernels *k = eng_nra_portable();
    int dims[] = {2, 8, 12, 34, 64, 128};
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
        int T = 4, Hn = 3, D = dims[di], half = D / 2, P = 40;
        size_t stride = (size_t)Hn * D + 5; /* rows inside wider rows: the 5 extra values stay */
        float *x = filled((size_t)T * stride, -2.0f, 2.0f);
        float *cs = malloc((size_t)P * half * sizeof *cs), *sn = malloc((size_t)P * half * sizeof *sn);
        double *want = malloc((size_t)T * stride * sizeof *want);
        assert_non_null(cs);
        assert_non_null(sn);
        assert_non_null(want);
        make_tables(cs, sn, half, P);
        int pos[4] = {0, 3, 39, 17};
        for (int t = 0; t < T; t++)
            for (size_t j = 0; j < stride; j++)
                want[t * stride + j] = x[t * stride + j];
        for (int t = 0; t < T; t++)
            for (int h = 0; h < Hn; h++)
                for (int i = 0; i < half; i++) {
                    size_t o = t * stride + (size_t)h * D;
                    double a = x[o + i], b = x[o + i + half];
                    double c = cs[pos[t] * half + i], s = sn[pos[t] * half + i];
                    want[o + i] = a * c - b * s;
                    want[o + i + half] = b * c + a * s;
                }
        k->rope_rows(x, T, Hn, D, stride, pos, cs, sn);
        assert_rel_close(x, want, (size_t)T * stride, 1e-6, "rope x");
        free(x), free(cs), free(sn), free(want);
    }
}

static void test_portable_silu_mul(void **state)
{
    (void)state;
    const eng_nra_kernels *k = eng_nra_portable();
    int N = 3, F = 37;
    size_t n = (size_t)N * F;
    float *g = filled(n, -12.0f, 12.0f), *u = filled(n, -2.0f, 2.0f), *y = malloc(n * sizeof *y);
    double *want = malloc(n * sizeof *want);
    assert_non_null(y);
    assert_non_null(want);
    g[0] = -100.0f, g[1] = 100.0f, g[2] = 0.0f; /* exp(100) overflows to inf: silu = -0 there */
    for (size_t i = 0; i < n; i++)
        want[i] = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
    k->silu_mul_rows(y, g, u, N, F);
    assert_rel_close(y, want, n, 1e-6, "silu_mul y");
    k->silu_mul_rows(u, g, u, N, F); /* y aliasing up */
    assert_rel_close(u, want, n, 1e-6, "silu_mul in place");
    free(g), free(u), free(y), free(want);
}

/* ---- SIMD variants against the portable kernels -------------------------- */

static void run_variant(const eng_nra_kernels *v)
{
    const eng_nra_kernels *p = eng_nra_portable();
    /* RMSNorm: every C from 1 to 70 (every tail of 8 and 16, the 2-vector loop) and two large ones */
    for (int C = 1; C <= 4100; C = C < 70 ? C + 1 : C * 8 + 3) {
        int N = 3;
        size_t n = (size_t)N * C;
        float *x = filled(n, -4.0f, 4.0f), *w = filled((size_t)C, -1.5f, 1.5f);
        float *yp = malloc(n * sizeof *yp), *yv = malloc(n * sizeof *yv);
        assert_non_null(yp);
        assert_non_null(yv);
        p->rms_norm_rows(yp, x, w, N, C, 1e-5f);
        v->rms_norm_rows(yv, x, w, N, C, 1e-5f);
        assert_rel_close_f(yv, yp, n, 2e-6, "rms_norm");
        v->rms_norm_rows(x, x, w, N, C, 1e-5f);
        assert_rel_close_f(x, yp, n, 2e-6, "rms_norm in place");
        free(x), free(w), free(yp), free(yv);
    }
    /* RoPE: every even D from 2 to 72 and 128, 256; strided rows */
    for (int D = 2; D <= 256; D = D < 72 ? D + 2 : D * 2 - 16) {
        int T = 5, Hn = 3, half = D / 2, P = 64;
        size_t stride = (size_t)Hn * D + 3;
        float *xp = filled((size_t)T * stride, -3.0f, 3.0f), *xv = malloc((size_t)T * stride * sizeof *xv);
        float *cs = malloc((size_t)P * half * sizeof *cs), *sn = malloc((size_t)P * half * sizeof *sn);
        assert_non_null(xv);
        assert_non_null(cs);
        assert_non_null(sn);
        memcpy(xv, xp, (size_t)T * stride * sizeof *xv);
        make_tables(cs, sn, half, P);
        int pos[5] = {63, 0, 1, 30, 7};
        p->rope_rows(xp, T, Hn, D, stride, pos, cs, sn);
        v->rope_rows(xv, T, Hn, D, stride, pos, cs, sn);
        assert_rel_close_f(xv, xp, (size_t)T * stride, 1e-6, "rope");
        free(xp), free(xv), free(cs), free(sn);
    }
    /* SiLU-times-gate: every N * F from 1 to 70, then large ones, and the extremes */
    for (int F = 1; F <= 3000; F = F < 70 ? F + 1 : F * 7 + 1) {
        int N = 1 + F % 3;
        size_t n = (size_t)N * F;
        float *g = filled(n, -15.0f, 15.0f), *u = filled(n, -2.0f, 2.0f);
        float *yp = malloc(n * sizeof *yp), *yv = malloc(n * sizeof *yv);
        assert_non_null(yp);
        assert_non_null(yv);
        if (n > 3)
            g[0] = -100.0f, g[1] = 100.0f, g[2] = -87.5f, g[3] = 88.5f;
        p->silu_mul_rows(yp, g, u, N, F);
        v->silu_mul_rows(yv, g, u, N, F);
        assert_rel_close_f(yv, yp, n, 4e-7 * 8, "silu_mul"); /* a few ulp of the vector exp */
        v->silu_mul_rows(g, g, u, N, F);
        assert_rel_close_f(g, yp, n, 4e-7 * 8, "silu_mul in place");
        free(g), free(u), free(yp), free(yv);
    }
}

static void test_variant(cpu_isa isa, const eng_nra_kernels *k, const char *name)
{
    if (cpu_isa_detect() < isa) {
        print_message("this CPU lacks %s: skipped\n", name);
        skip();
    }
    if (!k)
        print_error("the CPU has %s but the build has no kernels for it\n", name);
    assert_non_null(k);
    assert_string_equal(k->isa, name);
    run_variant(k);
}

static void test_avx2(void **state) { (void)state; test_variant(CPU_ISA_AVX2, eng_nra_avx2(), "avx2"); }
static void test_avx512(void **state) { (void)state; test_variant(CPU_ISA_AVX512, eng_nra_avx512(), "avx512"); }

static void test_dispatch(void **state)
{
    (void)state;
    assert_string_equal(eng_nra_for(CPU_ISA_PORTABLE)->isa, "portable");
    const eng_nra_kernels *best = eng_nra_for(cpu_isa_detect());
    assert_non_null(best);
    if (cpu_isa_detect() >= CPU_ISA_AVX512 && eng_nra_avx512())
        assert_string_equal(best->isa, "avx512");
}

/* ---- RoPE tables --------------------------------------------------------- */

/* Distance in units in the last place between two finite floats of one sign. */
static long ulps(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    return labs((long)ia - (long)ib);
}

static void test_inv_freq_transformers(void **state)
{
    (void)state;
    const char *path = BENCHCTL_SOURCE_DIR "/tests/llama/golden/rope_inv_freq.txt";
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open", path);
    char line[8192];
    int cases = 0, scaled = 0;
    long worst = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char label[64], type[32];
        double theta, factor, low, high;
        int D, orig, n, used = 0;
        if (sscanf(line, "%63s %31s %lf %d %lf %lf %lf %d %d%n", label, type, &theta, &D, &factor, &low, &high,
                   &orig, &n, &used) != 9)
            fail_msg("%s: a line that does not parse: %s", path, line);
        assert_int_equal(n, D / 2);
        float want[512], got[512];
        assert_true(n <= 512);
        const char *s = line + used;
        for (int i = 0; i < n; i++) {
            char *end;
            want[i] = strtof(s, &end);
            if (end == s)
                fail_msg("%s: %s: value %d missing", path, label, i);
            s = end;
        }
        eng_rope_scaling sc = {.type = ENG_ROPE_DEFAULT};
        if (strcmp(type, "llama3") == 0) {
            sc = (eng_rope_scaling){ENG_ROPE_LLAMA3, factor, low, high, orig};
            scaled++;
        } else
            assert_string_equal(type, "default");
        assert_int_equal(eng_rope_inv_freq(got, D, theta, &sc), 0);
        for (int i = 0; i < n; i++) {
            long u = ulps(got[i], want[i]);
            if (u > worst)
                worst = u;
            if (u > 0) /* bit for bit: each fp32 step is transformers' (glibc's powf is correctly rounded) */
                fail_msg("%s: inv_freq[%d] = %.9g, transformers %.9g (%ld ulp)", label, i, (double)got[i],
                         (double)want[i], u);
        }
        cases++;
    }
    fclose(f);
    print_message("inv_freq: %d cases (%d llama3), worst %ld ulp from transformers\n", cases, scaled, worst);
    assert_true(cases >= 4);
    assert_true(scaled >= 2);
}

static void test_inv_freq_refusals(void **state)
{
    (void)state;
    float v[8] = {42.0f};
    eng_rope_scaling ok = {ENG_ROPE_LLAMA3, 8.0, 1.0, 4.0, 8};
    assert_int_equal(eng_rope_inv_freq(v, 16, 1e4, &ok), 0);
    assert_int_equal(eng_rope_inv_freq(v, 16, 1e4, NULL), 0);
    v[0] = 42.0f;
    assert_int_equal(eng_rope_inv_freq(v, 15, 1e4, NULL), -1);
    assert_int_equal(eng_rope_inv_freq(v, 0, 1e4, NULL), -1);
    assert_int_equal(eng_rope_inv_freq(v, 16, 0.0, NULL), -1);
    assert_int_equal(eng_rope_inv_freq(v, 16, NAN, NULL), -1);
    eng_rope_scaling bad[] = {
        {ENG_ROPE_LLAMA3, 0.0, 1.0, 4.0, 8}, {ENG_ROPE_LLAMA3, 8.0, 4.0, 4.0, 8},
        {ENG_ROPE_LLAMA3, 8.0, 0.0, 4.0, 8}, {ENG_ROPE_LLAMA3, 8.0, 1.0, 4.0, 0},
        {(eng_rope_type)7, 8.0, 1.0, 4.0, 8},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(eng_rope_inv_freq(v, 16, 1e4, &bad[i]), -1);
    assert_double_close(v[0], 42.0, 0.0); /* refusals leave the output alone */
    /* llama3 with every wavelength below original / high_freq_factor changes nothing */
    float a[8], b[8];
    eng_rope_scaling wide = {ENG_ROPE_LLAMA3, 8.0, 1.0, 4.0, 1 << 30};
    assert_int_equal(eng_rope_inv_freq(a, 16, 1e4, &wide), 0);
    assert_int_equal(eng_rope_inv_freq(b, 16, 1e4, NULL), 0);
    for (int i = 0; i < 8; i++)
        assert_double_close(a[i], b[i], 0.0);
}

static void test_cos_sin_table(void **state)
{
    (void)state;
    float inv[4] = {1.0f, 0.1f, 0.01f, 1.2891732e-06f}, cs[20 * 4], sn[20 * 4];
    eng_rope_cos_sin_table(cs, sn, inv, 4, 20);
    for (int p = 0; p < 20; p++)
        for (int i = 0; i < 4; i++) {
            double a = (double)((float)p * inv[i]);
            assert_double_close(cs[p * 4 + i], cos(a), 6e-8);
            assert_double_close(sn[p * 4 + i], sin(a), 6e-8);
        }
    assert_double_close(cs[0], 1.0, 0.0);
    assert_double_close(sn[0], 0.0, 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable_rms_norm),
        cmocka_unit_test(test_portable_rope),
        cmocka_unit_test(test_portable_silu_mul),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_inv_freq_transformers),
        cmocka_unit_test(test_inv_freq_refusals),
        cmocka_unit_test(test_cos_sin_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
