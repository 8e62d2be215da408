/* test_model.c: the OPT forward pass on tiny shapes (pre-LN, post-LN with
 * P != C, head_dim not a power of two): incremental decode equals one
 * prefill, a left-padded row equals the row alone, and fp16/bf16 stay close
 * to fp32. Weights are synthetic (seeded).
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

#include "forward.h"
#include "opt_model.h"

static opt_hparams tiny(int post_ln) {
    opt_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.s.vocab_size = 97;
    hp.s.hidden_size = post_ln ? 40 : 48; /* head_dim 10 / 12 */
    hp.s.n_layers = 2;
    hp.s.n_heads = 4;
    hp.s.ffn_size = 64;
    hp.s.max_positions = 64;
    hp.word_embed_proj_dim = post_ln ? 24 : hp.s.hidden_size;
    hp.do_layer_norm_before = !post_ln;
    hp.s.pad_token_id = 1;
    hp.s.eos_token_id = 2;
    snprintf(hp.s.name, sizeof hp.s.name, "tiny-%s", post_ln ? "post" : "pre");
    return hp;
}

typedef struct fixture {
    opt_weights w;
    eng_model m;
} fixture;

static fixture *make(int post_ln, eng_dtype dt, int threads) {
    fixture *f = calloc(1, sizeof *f);
    bc_error err = {0};
    opt_hparams hp = tiny(post_ln);
    assert_int_equal(opt_weights_alloc(&f->w, &hp, dt, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&f->w, 1234, &err), BC_OK);
    assert_int_equal(eng_model_init(&f->m, &f->w.base, threads, &err), BC_OK);
    return f;
}

static void destroy(fixture *f) {
    eng_model_free(&f->m);
    opt_weights_free(&f->w);
    free(f);
}

static double max_abs(const float *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

/* Compares a and b; prints the first mismatch and the max difference. */
static void assert_close(const char *what, const float *a, const float *b, size_t n, double rel) {
    double scale = fmax(1.0, max_abs(b, n)), worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        assert_false(isnan(a[i]) || isinf(a[i]));
        double d = fabs((double)a[i] - b[i]);
        if (d > worst) worst = d, at = i;
    }
    if (worst > rel * scale) {
        print_error("%s: max |diff| %.3g at %zu (%g vs %g), allowed %.3g\n", what, worst, at, a[at], b[at],
                    rel * scale);
        fail();
    }
}

/* Prefill of S tokens at once vs prefill of 3 then one token at a time. */
static void check_incremental(int post_ln, int threads) {
    fixture *f = make(post_ln, ENG_F32, threads);
    const int B = 2, S = 9, V = f->w.hp.s.vocab_size;
    bc_error err = {0};
    int32_t tok[2 * 9];
    uint8_t mask[2 * 9];
    for (int i = 0; i < B * S; i++) tok[i] = 3 + (i * 37) % (V - 3), mask[i] = 1;
    float *full = calloc((size_t)B * S * V, sizeof(float)), *step = calloc((size_t)B * V, sizeof(float));
    float *pre = calloc((size_t)B * 3 * V, sizeof(float));
    eng_kv_cache kv;
    assert_int_equal(eng_kv_cache_alloc(&kv, &f->w.hp.s, ENG_F32, B, 16, &err), BC_OK);
    assert_int_equal(eng_forward(&f->m, &kv, tok, mask, S, B, S, ENG_LOGITS_ALL, full, &err), BC_OK);
    assert_int_equal(kv.len, S);
    kv.len = 0;
    int32_t t3[6];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < 3; t++) t3[b * 3 + t] = tok[b * S + t];
    assert_int_equal(eng_forward(&f->m, &kv, t3, mask, S, B, 3, ENG_LOGITS_ALL, pre, &err), BC_OK);
    for (int b = 0; b < B; b++)
        assert_close("prefill part", pre + (size_t)b * 3 * V, full + (size_t)b * S * V, (size_t)3 * V, 1e-5);
    for (int s = 3; s < S; s++) {
        int32_t t1[2] = {tok[s], tok[S + s]};
        assert_int_equal(eng_forward(&f->m, &kv, t1, mask, S, B, 1, ENG_LOGITS_LAST, step, &err), BC_OK);
        for (int b = 0; b < B; b++)
            assert_close("decode step", step + (size_t)b * V, full + ((size_t)b * S + s) * V, (size_t)V, 1e-5);
    }
    eng_kv_cache_free(&kv);
    free(full), free(step), free(pre);
    destroy(f);
}

static void test_incremental_pre_ln(void **state) { (void)state; check_incremental(0, 1); }
static void test_incremental_post_ln(void **state) { (void)state; check_incremental(1, 1); }
static void test_incremental_threads(void **state) { (void)state; check_incremental(0, 3); }

/* Row 0 left-padded by 3 (pad id 1) equals the same 5 tokens alone; decode
 * steps after it too. */
static void check_left_pad(int post_ln) {
    fixture *f = make(post_ln, ENG_F32, 2);
    const int V = f->w.hp.s.vocab_size, pad = 3, n = 5, S = pad + n, steps = 3, Smax = S + steps;
    bc_error err = {0};
    int32_t tok[2 * 8] = {1, 1, 1, 10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 25, 26, 27};
    uint8_t mask[2 * 11] = {0};
    for (int s = 0; s < Smax; s++) mask[s] = s >= pad, mask[Smax + s] = 1;
    float *lp = calloc((size_t)2 * S * V, sizeof(float)), *la = calloc((size_t)n * V, sizeof(float));
    float *sp = calloc((size_t)2 * V, sizeof(float)), *sa = calloc((size_t)V, sizeof(float));
    eng_kv_cache kvp, kva;
    assert_int_equal(eng_kv_cache_alloc(&kvp, &f->w.hp.s, ENG_F32, 2, Smax, &err), BC_OK);
    assert_int_equal(eng_kv_cache_alloc(&kva, &f->w.hp.s, ENG_F32, 1, Smax, &err), BC_OK);
    uint8_t ones[11];
    memset(ones, 1, sizeof ones);
    assert_int_equal(eng_forward(&f->m, &kvp, tok, mask, Smax, 2, S, ENG_LOGITS_ALL, lp, &err), BC_OK);
    assert_int_equal(eng_forward(&f->m, &kva, tok + pad, ones, Smax, 1, n, ENG_LOGITS_ALL, la, &err), BC_OK);
    assert_close("left-padded prefill", lp + (size_t)pad * V, la, (size_t)n * V, 1e-5);
    for (int k = 0; k < steps; k++) {
        int32_t t2[2] = {30 + k, 40 + k}, t1 = 30 + k;
        assert_int_equal(eng_forward(&f->m, &kvp, t2, mask, Smax, 2, 1, ENG_LOGITS_LAST, sp, &err), BC_OK);
        assert_int_equal(eng_forward(&f->m, &kva, &t1, ones, Smax, 1, 1, ENG_LOGITS_LAST, sa, &err), BC_OK);
        assert_close("left-padded decode", sp, sa, (size_t)V, 1e-5);
    }
    eng_kv_cache_free(&kvp);
    eng_kv_cache_free(&kva);
    free(lp), free(la), free(sp), free(sa);
    destroy(f);
}

static void test_left_pad_pre_ln(void **state) { (void)state; check_left_pad(0); }
static void test_left_pad_post_ln(void **state) { (void)state; check_left_pad(1); }

/* fp16 and bf16 weights + KV cache against fp32 (same seed). Tolerances:
 * the weights are rounded (fp16 ~ 2^-11, bf16 ~ 2^-8 relative) and
 * activations stay fp32, so logits move by a few rounding units of their
 * scale through 2 layers. */
static void check_precision(eng_dtype dt, double rel) {
    fixture *ref = make(0, ENG_F32, 1), *f = make(0, dt, 1);
    const int S = 8, V = ref->w.hp.s.vocab_size;
    bc_error err = {0};
    int32_t tok[8] = {5, 9, 17, 33, 65, 80, 3, 44};
    uint8_t mask[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    float *a = calloc((size_t)S * V, sizeof(float)), *b = calloc((size_t)S * V, sizeof(float));
    eng_kv_cache k1, k2;
    assert_int_equal(eng_kv_cache_alloc(&k1, &ref->w.hp.s, ENG_F32, 1, S, &err), BC_OK);
    assert_int_equal(eng_kv_cache_alloc(&k2, &f->w.hp.s, dt, 1, S, &err), BC_OK);
    assert_int_equal(eng_forward(&ref->m, &k1, tok, mask, S, 1, S, ENG_LOGITS_ALL, a, &err), BC_OK);
    assert_int_equal(eng_forward(&f->m, &k2, tok, mask, S, 1, S, ENG_LOGITS_ALL, b, &err), BC_OK);
    assert_close(eng_dtype_name(dt), b, a, (size_t)S * V, rel);
    eng_kv_cache_free(&k1);
    eng_kv_cache_free(&k2);
    free(a), free(b);
    destroy(ref);
    destroy(f);
}

static void test_fp16_close(void **state) { (void)state; check_precision(ENG_F16, 5e-3); }
static void test_bf16_close(void **state) { (void)state; check_precision(ENG_BF16, 4e-2); }

static void test_errors(void **state) {
    (void)state;
    fixture *f = make(0, ENG_F32, 1);
    bc_error err = {0};
    eng_kv_cache kv;
    assert_int_equal(eng_kv_cache_alloc(&kv, &f->w.hp.s, ENG_F32, 1, 4, &err), BC_OK);
    int32_t tok[5] = {3, 4, 5, 6, 7}, bad = 97;
    uint8_t mask[5] = {1, 1, 1, 1, 1};
    float logits[97 * 5];
    assert_int_equal(eng_forward(&f->m, &kv, tok, mask, 5, 1, 5, ENG_LOGITS_ALL, logits, &err), BC_ERR_INVALID);
    assert_int_equal(eng_forward(&f->m, &kv, &bad, mask, 5, 1, 1, ENG_LOGITS_ALL, logits, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "97"));
    opt_hparams hp;
    assert_int_equal(opt_hparams_preset("7b", &hp, &err), BC_ERR_INVALID);
    assert_int_equal(opt_hparams_preset("2.7b", &hp, &err), BC_OK);
    assert_int_equal(hp.s.hidden_size / hp.s.n_heads, 80);
    assert_int_equal(opt_hparams_preset("350m", &hp, &err), BC_OK);
    assert_int_equal(hp.do_layer_norm_before, 0);
    assert_int_equal(hp.word_embed_proj_dim, 512);
    eng_kv_cache_free(&kv);
    destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incremental_pre_ln), cmocka_unit_test(test_incremental_post_ln),
        cmocka_unit_test(test_incremental_threads), cmocka_unit_test(test_left_pad_pre_ln),
        cmocka_unit_test(test_left_pad_post_ln),   cmocka_unit_test(test_fp16_close),
        cmocka_unit_test(test_bf16_close),         cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
