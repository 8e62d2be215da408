/* test_attention.c: the engine's grouped-query attention over the KV cache
 * (eng_kv_store + eng_attention, engine/model/forward.h) against the
 * definition, computed here in double precision: query head h reads KV head
 * h / (H / Hkv) (transformers' repeat_kv), softmax over the keys s <= S0 + t
 * the mask keeps. Multi-head (Hkv = H), grouped (Hkv = 2) and multi-query
 * (Hkv = 1), a prefill of T = 3 then a decode step, a left-padded row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bc_test_assert.h"
#include "forward.h"

enum { B = 2, H = 4, D = 8, TP = 3, SMAX = 8, L = 1 };

static float uniform(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) / (double)(1 << 24)) - 0.5f;
}

/* K and V of every (row, position, KV head) the test writes, for the reference. */
typedef struct keys {
    float k[B][SMAX][H][D], v[B][SMAX][H][D];
} keys;

/* att [B, T, H D] of the definition, over keys s < S0 + t + 1 where mask. */
static void reference(double *att, const float *q, const keys *kv, const uint8_t *mask, int Hkv, int T, int S0) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                const int hk = h / (H / Hkv), S = S0 + t + 1;
                const float *qv = q + ((size_t)b * T + t) * H * D + (size_t)h * D;
                double sc[SMAX], mx = -INFINITY, sum = 0.0;
                for (int s = 0; s < S; s++) {
                    sc[s] = -INFINITY;
                    if (!mask[b * SMAX + s]) continue;
                    double d = 0.0;
                    for (int i = 0; i < D; i++) d += (double)qv[i] * kv->k[b][s][hk][i];
                    sc[s] = d;
                    if (d > mx) mx = d;
                }
                for (int s = 0; s < S; s++) sum += sc[s] == -INFINITY ? 0.0 : exp(sc[s] - mx);
                double *out = att + ((size_t)b * T + t) * H * D + (size_t)h * D;
                for (int i = 0; i < D; i++) {
                    double a = 0.0;
                    for (int s = 0; s < S; s++)
                        if (sc[s] != -INFINITY) a += exp(sc[s] - mx) / sum * kv->v[b][s][hk][i];
                    out[i] = a;
                }
            }
}

/* One forward's T tokens: new keys into kv (and the reference's copy),
 * attention, compared with the definition. */
static void step(eng_model *m, eng_kv_cache *kv, keys *ref, const uint8_t *mask, int Hkv, int T, uint64_t *seed) {
    const int S0 = kv->len, N = B * T;
    float *q = malloc(sizeof(float) * (size_t)N * H * D), *kk = malloc(sizeof(float) * (size_t)N * Hkv * D);
    float *vv = malloc(sizeof(float) * (size_t)N * Hkv * D), *att = malloc(sizeof(float) * (size_t)N * H * D);
    double *want = malloc(sizeof(double) * (size_t)N * H * D);
    assert_non_null(q);
    assert_non_null(kk);
    assert_non_null(vv);
    assert_non_null(att);
    assert_non_null(want);
    for (int i = 0; i < N * H * D; i++) q[i] = uniform(seed);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < Hkv; h++)
                for (int i = 0; i < D; i++) {
                    const size_t at = ((size_t)b * T + t) * Hkv * D + (size_t)h * D + i;
                    ref->k[b][S0 + t][h][i] = kk[at] = uniform(seed);
                    ref->v[b][S0 + t][h][i] = vv[at] = uniform(seed);
                }
    eng_kv_store(m, kv, 0, kk, vv, Hkv * D, B, T);
    eng_attention(m, kv, 0, att, q, H * D, mask, SMAX, B, T);
    reference(want, q, ref, mask, Hkv, T, S0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if (!mask[b * SMAX + S0 + t]) continue; /* a pad query's output is not meaningful */
            for (int i = 0; i < H * D; i++) {
                const size_t at = ((size_t)b * T + t) * H * D + i;
                assert_double_close(att[at], want[at], 1e-5);
            }
        }
    kv->len = S0 + T;
    free(q);
    free(kk);
    free(vv);
    free(att);
    free(want);
}

static void run(int Hkv) {
    bc_error err = {0};
    eng_weights w;
    memset(&w, 0, sizeof w);
    w.shape = (eng_shape){.vocab_size = 16, .hidden_size = H * D, .n_layers = L, .n_heads = H, .n_kv_heads = Hkv,
                          .head_dim = D, .ffn_size = 16, .max_positions = SMAX};
    w.ws = (eng_ws_needs){.width = H * D, .ff = 16};
    w.dtype = ENG_F32;
    eng_model m;
    assert_int_equal(eng_model_init(&m, &w, 2, &err), BC_OK);
    assert_int_equal(eng_model_reserve(&m, B * TP, SMAX, &err), BC_OK);
    eng_kv_cache kv;
    assert_int_equal(eng_kv_cache_alloc(&kv, &w.shape, ENG_F32, B, SMAX, &err), BC_OK);
    assert_int_equal(kv.Hkv, Hkv);
    assert_int_equal(kv.bytes, 2 * (size_t)L * B * SMAX * Hkv * D * sizeof(float));
    /* row 1 left-padded by one token */
    uint8_t mask[B * SMAX];
    memset(mask, 1, sizeof mask);
    mask[SMAX + 0] = 0;
    keys *ref = calloc(1, sizeof *ref);
    assert_non_null(ref);
    uint64_t seed = 42 + (uint64_t)Hkv;
    step(&m, &kv, ref, mask, Hkv, TP, &seed); /* prefill */
    step(&m, &kv, ref, mask, Hkv, 1, &seed);  /* decode */
    step(&m, &kv, ref, mask, Hkv, 1, &seed);
    free(ref);
    eng_kv_cache_free(&kv);
    eng_model_free(&m);
}

static void test_multi_head(void **state) {
    (void)state;
    run(H);
}

static void test_grouped_query(void **state) {
    (void)state;
    run(2);
}

static void test_multi_query(void **state) {
    (void)state;
    run(1);
}

/* A query head's KV head: h / (H / Hkv). */
static void test_kv_head_of(void **state) {
    (void)state;
    const eng_shape s = {.n_heads = 12, .n_kv_heads = 4};
    const int want[12] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
    for (int h = 0; h < 12; h++) assert_int_equal(eng_kv_head_of(&s, h), want[h]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_head),
        cmocka_unit_test(test_grouped_query),
        cmocka_unit_test(test_multi_query),
        cmocka_unit_test(test_kv_head_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
