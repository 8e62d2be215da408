/* test_norm_rope_act.c: the RMSNorm, RoPE and SiLU-times-gate row kernels
 * (engine/kernels/norm_rope_act.h). The portable kernels against the
 * formulas in double precision; every SIMD variant this CPU runs against the
 * portable one (sizes that leave every kind of vector tail, in place and out
 * of place, RoPE rows inside wider rows); the inverse-frequency builder
 * against the vectors transformers' own RoPE code computed
 * (tests/llama/golden/rope_inv_freq.txt), and its refusals; the cos/sin
 * tables; every variant, with the tables built here, against transformers'
 * own RoPE (rotary embedding + apply_rotary_pos_emb of two golden models),
 * LlamaRMSNorm and silu(gate) * up (tests/llama/golden/kernels_ref.txt).
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

/* logsumexp of a row against a double-precision reference: every n from 1
 * to 70, then large ones (a vocabulary's), with -inf entries (a suppressed
 * token) and a row of logits' spread. */
static void check_logsumexp(const eng_nra_kernels *k)
{
    for (int n = 1; n <= 160000; n = n < 70 ? n + 1 : n * 5 + 3) {
        float *x = filled((size_t)n, -30.0f, 30.0f);
        if (n > 2) x[n / 2] = -INFINITY;
        double mx = -INFINITY, sum = 0.0;
        for (int v = 0; v < n; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < n; v++) sum += exp((double)x[v] - mx);
        const double ref = mx + log(sum), got = k->logsumexp(x, n);
        assert_false(isnan(got));
        if (fabs(got - ref) > 2e-6 * fmax(1.0, fabs(ref)))
            fail_msg("%s logsumexp n %d: %.9g, reference %.9g", k->isa, n, got, ref);
        free(x);
    }
    float all[3] = {-INFINITY, -INFINITY, -INFINITY};
    assert_true(k->logsumexp(all, 3) == -INFINITY);
}

static void test_portable_logsumexp(void **state)
{
    (void)state;
    check_logsumexp(eng_nra_portable());
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
    check_logsumexp(k);
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

/* ---- against transformers (kernels_ref.txt) ------------------------------ */

#define REF_MAX 32

typedef struct ref_array {
    char name[96];
    int n;
    float *v;
} ref_array;

typedef struct ref_file {
    int count;
    ref_array a[REF_MAX];
} ref_file;

static int ref_setup(void **state)
{
    const char *path = BENCHCTL_SOURCE_DIR "/tests/llama/golden/kernels_ref.txt";
    FILE *f = fopen(path, "r");
    if (!f) {
        print_error("%s: cannot open\n", path);
        return -1;
    }
    ref_file *r = calloc(1, sizeof *r);
    static char line[1 << 16];
    while (r && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        ref_array *a = &r->a[r->count];
        int used = 0;
        if (r->count == REF_MAX || sscanf(line, "%95s %d%n", a->name, &a->n, &used) != 2 || a->n <= 0 ||
            !(a->v = malloc((size_t)a->n * sizeof *a->v))) {
            print_error("%s: line %d does not parse\n", path, r->count);
            break;
        }
        const char *s = line + used;
        int i = 0;
        for (char *end; i < a->n; i++, s = end)
            if ((a->v[i] = strtof(s, &end)), end == s)
                break;
        r->count++;
        if (i != a->n) {
            print_error("%s: %s has %d of %d values\n", path, a->name, i, a->n);
            break;
        }
    }
    int ok = r && feof(f);
    fclose(f);
    *state = r;
    return ok ? 0 : -1;
}

static int ref_teardown(void **state)
{
    ref_file *r = *state;
    for (int i = 0; r && i < r->count; i++)
        free(r->a[i].v);
    free(r);
    return 0;
}

static const float *ref_get(const ref_file *r, const char *name, int n)
{
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->a[i].name, name) == 0) {
            if (r->a[i].n != n)
                fail_msg("kernels_ref.txt: %s has %d values, expected %d", name, r->a[i].n, n);
            return r->a[i].v;
        }
    fail_msg("kernels_ref.txt: no %s", name);
    return NULL;
}

/* The variants this CPU runs. */
static int cpu_variants(const eng_nra_kernels **v)
{
    int n = 0;
    v[n++] = eng_nra_portable();
    if (cpu_isa_detect() >= CPU_ISA_AVX2 && eng_nra_avx2())
        v[n++] = eng_nra_avx2();
    if (cpu_isa_detect() >= CPU_ISA_AVX512 && eng_nra_avx512())
        v[n++] = eng_nra_avx512();
    return n;
}

/* The model's RoPE from its config numbers (as tests/llama/golden/<model>/config.json says them). */
static void check_rope_model(const ref_file *r, const char *model, double theta, const eng_rope_scaling *sc)
{
    char key[128];
    snprintf(key, sizeof key, "rope.%s.dims", model);
    const float *dims = ref_get(r, key, 4);
    int T = (int)dims[0], H = (int)dims[1], Hkv = (int)dims[2], D = (int)dims[3], half = D / 2, P = 16;
    snprintf(key, sizeof key, "rope.%s.pos", model);
    const float *posf = ref_get(r, key, T);
    int pos[8];
    assert_true(T <= 8 && half <= 64);
    for (int t = 0; t < T; t++)
        pos[t] = (int)posf[t];
    float inv[64], cs[16 * 64], sn[16 * 64];
    assert_int_equal(eng_rope_inv_freq(inv, D, theta, sc), 0);
    eng_rope_cos_sin_table(cs, sn, inv, half, P);
    const char *parts[2][2] = {{"q_in", "q_out"}, {"k_in", "k_out"}};
    const eng_nra_kernels *v[3];
    int nv = cpu_variants(v);
    double worst = 0.0;
    for (int k = 0; k < nv; k++)
        for (int qk = 0; qk < 2; qk++) {
            int Hn = qk ? Hkv : H, n = T * Hn * D;
            snprintf(key, sizeof key, "rope.%s.%s", model, parts[qk][0]);
            const float *in = ref_get(r, key, n);
            snprintf(key, sizeof key, "rope.%s.%s", model, parts[qk][1]);
            const float *want = ref_get(r, key, n);
            float x[8 * 8 * 128];
            assert_true(n <= (int)(sizeof x / sizeof *x));
            memcpy(x, in, (size_t)n * sizeof *x);
            v[k]->rope_rows(x, T, Hn, D, (size_t)Hn * D, pos, cs, sn);
            for (int i = 0; i < n; i++) {
                double d = fabs((double)x[i] - want[i]);
                if (d > worst)
                    worst = d;
                if (!(d <= 1e-6 * fmax(1.0, fabs((double)want[i]))))
                    fail_msg("%s %s: %s[%d] = %.9g, transformers %.9g", v[k]->isa, model, parts[qk][1], i,
                             (double)x[i], (double)want[i]);
            }
        }
    print_message("rope %s: %d variants, max |diff| %.3g from transformers\n", model, nv, worst);
}

static void test_rope_transformers(void **state)
{
    const ref_file *r = *state;
    eng_rope_scaling llama3 = {ENG_ROPE_LLAMA3, 8.0, 1.0, 4.0, 8}; /* llama_gqa_llama3/config.json */
    check_rope_model(r, "llama_gqa_llama3", 500000.0, &llama3);
    check_rope_model(r, "mistral_hd16", 10000.0, NULL);
}

static void test_rms_silu_transformers(void **state)
{
    const ref_file *r = *state;
    const eng_nra_kernels *v[3];
    int nv = cpu_variants(v);
    const float *rd = ref_get(r, "rms.dims", 2);
    int N = (int)rd[0], C = (int)rd[1];
    const float *x = ref_get(r, "rms.x", N * C), *w = ref_get(r, "rms.w", C), *want = ref_get(r, "rms.y", N * C);
    float eps = ref_get(r, "rms.eps", 1)[0];
    const float *sd = ref_get(r, "silu.dims", 2);
    int M = (int)sd[0], F = (int)sd[1];
    const float *g = ref_get(r, "silu.gate", M * F), *u = ref_get(r, "silu.up", M * F);
    const float *swant = ref_get(r, "silu.y", M * F);
    float y[4096];
    assert_true(N * C <= 4096 && M * F <= 4096);
    for (int k = 0; k < nv; k++) {
        v[k]->rms_norm_rows(y, x, w, N, C, eps);
        assert_rel_close_f(y, want, (size_t)N * C, 1e-6, v[k]->isa);
        v[k]->silu_mul_rows(y, g, u, M, F);
        assert_rel_close_f(y, swant, (size_t)M * F, 2e-6, v[k]->isa);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable_rms_norm),
        cmocka_unit_test(test_portable_rope),
        cmocka_unit_test(test_portable_silu_mul),
        cmocka_unit_test(test_portable_logsumexp),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_inv_freq_transformers),
        cmocka_unit_test(test_inv_freq_refusals),
        cmocka_unit_test(test_cos_sin_table),
        cmocka_unit_test_setup_teardown(test_rope_transformers, ref_setup, ref_teardown),
        cmocka_unit_test_setup_teardown(test_rms_silu_transformers, ref_setup, ref_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
