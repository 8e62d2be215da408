/* test_w8a8.c: the W8A8 linear (engine/kernels/kernels_vnni.h). Built three
 * times: without W8A8_TILE, the pack layout (against the int8 block of the
 * same matrix), the plain-C reference against the formula computed here
 * from the unpacked int8 values (int64 sums) and loosely against the fp32
 * product, the dtype's plumbing (name, sizes, the precision plugin's
 * dtype) and which tile each family runs; with W8A8_TILE = "avx512_vnni" or
 * "avx_vnni", that tile bit-exact against the reference for many shapes
 * (M = 1, 2, 4, 15, 16, 17, 64; K not a multiple of 4 or 64; ragged N;
 * bias, ReLU, ranges [n0, n1) not on a panel) directly, through the
 * families' tables and eng_linear_parallel on two threads. An executable
 * whose tile the CPU lacks exits 77 (skipped).
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
#include "formats.h"
#include "kernels.h"
#include "kernels_vnni.h"
#include "precision.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float urand(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)(rng_state >> 40) / 16777216.0f;
}

static float *rand_floats(size_t n, float lo, float hi)
{
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = urand(lo, hi);
    return v;
}

/* A W8A8 block of w[N, K] (the caller frees it). */
static void *pack(const float *w, int N, int K)
{
    void *b = malloc(eng_matrix_bytes(ENG_W8A8, (size_t)N, (size_t)K));
    assert_non_null(b);
    memset(b, 0xa5, eng_matrix_bytes(ENG_W8A8, (size_t)N, (size_t)K)); /* the packer must write the padding */
    eng_convert_matrix(b, ENG_W8A8, w, ENG_F32, (size_t)N, (size_t)K);
    return b;
}

#ifndef W8A8_TILE

/* ---- the pack layout ----------------------------------------------------- */

static void test_pack_layout(void **state)
{
    (void)state;
    static const int shapes[][2] = {{1, 1}, {3, 5}, {16, 4}, {17, 63}, {33, 130}, {70, 1030}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int N = shapes[s][0], K = shapes[s][1];
        float *w = rand_floats((size_t)N * K, -1.0f, 1.0f);
        w[0] = 0.0f;
        void *b = pack(w, N, K), *q8 = malloc(eng_matrix_bytes(ENG_I8, (size_t)N, (size_t)K));
        assert_non_null(q8);
        eng_convert_matrix(q8, ENG_I8, w, ENG_F32, (size_t)N, (size_t)K);
        const int8_t *pb = b, *q = q8;
        const size_t Kq = eng_w8a8_quads((size_t)K), P = eng_w8a8_panels((size_t)N);
        for (size_t p = 0; p < P; p++)
            for (size_t kq = 0; kq < Kq; kq++)
                for (size_t j = 0; j < 16; j++)
                    for (size_t t = 0; t < 4; t++) {
                        const size_t n = 16 * p + j, k = 4 * kq + t;
                        const int8_t want = n < (size_t)N && k < (size_t)K ? q[n * K + k] : 0;
                        assert_int_equal(pb[((p * Kq + kq) * 16 + j) * 4 + t], want);
                    }
        const float *sw = eng_w8a8_scales(b, (size_t)N, (size_t)K), *s8 = eng_i8_scales(q8, (size_t)N, (size_t)K);
        const int32_t *corr = eng_w8a8_corrections(b, (size_t)N, (size_t)K);
        float *row = malloc((size_t)K * sizeof *row);
        assert_non_null(row);
        for (int n = 0; n < N; n++) {
            assert_memory_equal(&sw[n], &s8[n], sizeof(float)); /* the int8 quantiser's scales */
            int32_t sum = 0;
            for (int k = 0; k < K; k++)
                sum += q[(size_t)n * K + k];
            assert_int_equal(corr[n], 128 * sum);
            eng_w8a8_row_to_f32(row, b, (size_t)N, (size_t)K, (size_t)n);
            for (int k = 0; k < K; k++)
                assert_float_equal(row[k], s8[n] * (float)q[(size_t)n * K + k], 0.0f);
        }
        /* row by row (the synthetic fill) gives the same block */
        void *b2 = malloc(eng_matrix_bytes(ENG_W8A8, (size_t)N, (size_t)K));
        assert_non_null(b2);
        eng_w8a8_clear(b2, (size_t)N, (size_t)K);
        for (int n = 0; n < N; n++)
            eng_w8a8_pack_row(b2, (size_t)N, (size_t)K, (size_t)n, w + (size_t)n * K);
        assert_memory_equal(b2, b, eng_matrix_bytes(ENG_W8A8, (size_t)N, (size_t)K));
        free(b2), free(row), free(q8), free(b), free(w);
    }
}

/* ---- the reference against the formula ------------------------------------ */

static void test_reference(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1}, {2, 7, 17}, {4, 64, 16}, {15, 100, 33}, {17, 771, 70}, {64, 257, 129}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        float *x = rand_floats((size_t)M * K, -2.0f, 2.0f), *w = rand_floats((size_t)N * K, -0.5f, 0.5f);
        float *bias = rand_floats((size_t)N, -1.0f, 1.0f);
        float *y = malloc((size_t)M * N * sizeof *y);
        int8_t *xs = malloc((size_t)K), *q = malloc(eng_matrix_bytes(ENG_I8, (size_t)N, (size_t)K));
        assert_non_null(y), assert_non_null(xs), assert_non_null(q);
        if (M > 1)
            memset(x + K, 0, (size_t)K * sizeof *x); /* an all-zero row: scale 0 */
        void *b = pack(w, N, K);
        eng_convert_matrix(q, ENG_I8, w, ENG_F32, (size_t)N, (size_t)K);
        const float *sw = eng_i8_scales(q, (size_t)N, (size_t)K);
        for (int relu = 0; relu < 2; relu++) {
            eng_linear_w8a8(eng_vnni_portable(), y, x, b, relu ? NULL : bias, M, K, N, 0, N, relu);
            double maxy = 0.0, maxerr = 0.0;
            for (int m = 0; m < M; m++) {
                const float sx = eng_i8_quantize_row(xs, x + (size_t)m * K, (size_t)K);
                for (int n = 0; n < N; n++) {
                    int64_t dot = 0;
                    double exact = 0.0;
                    for (int k = 0; k < K; k++) {
                        dot += (int64_t)xs[k] * q[(size_t)n * K + k];
                        exact += (double)x[(size_t)m * K + k] * w[(size_t)n * K + k];
                    }
                    const float sc = sx * sw[n];
                    float want = (float)dot * sc;
                    want = want + (relu ? 0.0f : bias[n]);
                    if (relu && want < 0.0f)
                        want = 0.0f;
                    const float got = y[(size_t)m * N + n];
                    if (memcmp(&got, &want, sizeof got) != 0)
                        fail_msg("M %d K %d N %d relu %d: y[%d, %d] = %.9g, the formula %.9g", M, K, N, relu, m, n,
                                 (double)got, (double)want);
                    exact += relu ? 0.0 : bias[n];
                    if (relu && exact < 0.0)
                        exact = 0.0;
                    maxy = fmax(maxy, fabs(exact));
                    maxerr = fmax(maxerr, fabs((double)got - exact));
                }
            }
            /* two roundings to 1/254 of a row's range: a few percent of the largest output */
            assert_true(maxerr <= 0.05 * maxy + 1e-6);
        }
        free(b), free(q), free(xs), free(y), free(bias), free(w), free(x);
    }
}

/* ---- the dtype's plumbing ---------------------------------------------------- */

static void test_dtype(void **state)
{
    (void)state;
    assert_string_equal(eng_dtype_name(ENG_W8A8), "w8a8");
    assert_int_equal(eng_dtype_size(ENG_W8A8), 1);
    assert_int_equal(eng_kv_dtype(ENG_W8A8), ENG_F32);
    assert_true(eng_dtype_is_int8(ENG_W8A8) && eng_dtype_is_int8(ENG_I8) && !eng_dtype_is_int8(ENG_BF16));
    /* [17, 5]: 2 panels x 2 quads x 64 bytes, then 17 scales and 17 corrections */
    assert_int_equal(eng_matrix_bytes(ENG_W8A8, 17, 5), 2 * 2 * 64 + 17 * 8);
    eng_dtype dt = ENG_F32;
    bc_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(eng_precision_dtype("w8a8", &prec_w8a8_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_W8A8);
    assert_int_equal(eng_precision_dtype("int8", &prec_int8_ops, &dt, &err), BC_OK);
    assert_int_equal(dt, ENG_I8);
    assert_ptr_equal(eng_dtype_precision(ENG_W8A8), &prec_w8a8_ops);
}

static void test_family_tiles(void **state)
{
    (void)state;
    assert_string_equal(eng_vnni_for_family(ENG_ISA_PORTABLE)->name, "portable");
    const char *want2 = eng_cpu_has_avx_vnni() && eng_vnni_avx2() ? "avx_vnni" : "portable";
    assert_string_equal(eng_vnni_for_family(ENG_ISA_AVX2)->name, want2);
    const char *want512 = eng_cpu_has_avx512_vnni() && eng_vnni_avx512() ? "avx512_vnni" : want2;
    assert_string_equal(eng_vnni_for_family(ENG_ISA_AVX512)->name, want512);
    assert_string_equal(eng_vnni_for_family(ENG_ISA_AVX512_BF16)->name, want512);
    print_message("this CPU's W8A8 tiles: avx2 family %s, avx512 family %s\n", want2, want512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_layout),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_dtype),
        cmocka_unit_test(test_family_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* W8A8_TILE: one ISA tile against the reference */

static const eng_vnni_spec *tile_spec(void)
{
    if (strcmp(W8A8_TILE, "avx512_vnni") == 0)
        return eng_cpu_has_avx512_vnni() ? eng_vnni_avx512() : NULL;
    return eng_cpu_has_avx_vnni() ? eng_vnni_avx2() : NULL;
}

/* The families whose tables run this tile on this CPU. */
static int family_runs_tile(eng_isa f) { return eng_kernels_for(f) && eng_vnni_for_family(f) == tile_spec(); }

static void check_same(const float *got, const float *want, size_t n, const char *what, int M, int K, int N)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            fail_msg("%s, M %d K %d N %d: y[%zu] = %.9g, the reference %.9g", what, M, K, N, i, (double)got[i],
                     (double)want[i]);
}

static void test_bit_exact(void **state)
{
    (void)state;
    const eng_vnni_spec *s = tile_spec();
    assert_non_null(s);
    assert_string_equal(s->name, W8A8_TILE);
    static const int Ms[] = {1, 2, 4, 15, 16, 17, 64};
    static const int Ks[] = {1, 3, 5, 63, 100, 257, 771, 4867};
    static const int Ns[] = {1, 15, 17, 33, 70, 129};
    eng_pool *pool = eng_pool_create(2);
    assert_non_null(pool);
    for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
        for (size_t b = 0; b < sizeof Ks / sizeof Ks[0]; b++)
            for (size_t c = 0; c < sizeof Ns / sizeof Ns[0]; c++) {
                const int M = Ms[a], K = Ks[b], N = Ns[c];
                if (K > 1000 && (M > 17 || N > 33))
                    continue; /* the long rows at a few shapes: the reference is slow */
                float *x = rand_floats((size_t)M * K, -3.0f, 3.0f), *w = rand_floats((size_t)N * K, -0.2f, 0.2f);
                float *bias = rand_floats((size_t)N, -1.0f, 1.0f);
                if (M > 1) /* one large activation in the last row: its others quantise to few levels */
                    x[(size_t)(M - 1) * K] = 1e4f;
                float *want = malloc((size_t)M * N * sizeof *want), *got = malloc((size_t)M * N * sizeof *got);
                assert_non_null(want), assert_non_null(got);
                void *wb = pack(w, N, K);
                const int relu = (int)(c % 2);
                const float *bs = b % 2 ? bias : NULL;
                eng_linear_w8a8(eng_vnni_portable(), want, x, wb, bs, M, K, N, 0, N, relu);
                memset(got, 0xff, (size_t)M * N * sizeof *got);
                eng_linear_w8a8(s, got, x, wb, bs, M, K, N, 0, N, relu);
                check_same(got, want, (size_t)M * N, "whole", M, K, N);
                if (N > 5) { /* two ranges that split a panel */
                    memset(got, 0xff, (size_t)M * N * sizeof *got);
                    eng_linear_w8a8(s, got, x, wb, bs, M, K, N, 0, 5, relu);
                    eng_linear_w8a8(s, got, x, wb, bs, M, K, N, 5, N, relu);
                    check_same(got, want, (size_t)M * N, "split at 5", M, K, N);
                }
                for (int f = 0; f < 4; f++) /* the families' tables, and over the pool */
                    if (family_runs_tile((eng_isa)f)) {
                        const eng_kernels *k = eng_kernels_for((eng_isa)f);
                        memset(got, 0xff, (size_t)M * N * sizeof *got);
                        eng_linear_parallel(pool, k, got, x, wb, ENG_W8A8, bs, M, K, N, relu);
                        check_same(got, want, (size_t)M * N, eng_isa_name((eng_isa)f), M, K, N);
                    }
                free(wb), free(got), free(want), free(bias), free(w), free(x);
            }
    eng_pool_destroy(pool);
}

int main(void)
{
    if (!tile_spec()) {
        printf("this CPU (or build) lacks %s: skipped\n", W8A8_TILE);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
