/* test_synthetic.c: synthetic weights are deterministic, scaled like
 * Hugging Face's init, and make a model whose greedy generation is not
 * degenerate (several distinct tokens in 64, with the real vocabulary size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rollout.h"

/* The 125m vocabulary and positions with a narrower, shallower body, so the
 * test runs in seconds on the portable kernels. */
static opt_hparams small_125m_like(void) {
    bc_error err = {0};
    opt_hparams hp;
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    hp.hidden_size = 256;
    hp.num_hidden_layers = 4;
    hp.num_attention_heads = 4;
    hp.ffn_dim = 1024;
    hp.word_embed_proj_dim = 256;
    return hp;
}

static void test_deterministic(void **state) {
    (void)state;
    opt_hparams hp = small_125m_like();
    hp.vocab_size = 1000;
    opt_weights a, b, c;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&a, &hp, OPT_BF16, &err), BC_OK);
    assert_int_equal(opt_weights_alloc(&b, &hp, OPT_BF16, &err), BC_OK);
    assert_int_equal(opt_weights_alloc(&c, &hp, OPT_BF16, &err), BC_OK);
    memset(a.arena, 0, a.arena_bytes); /* padding between tensors compares equal */
    memset(b.arena, 0, b.arena_bytes);
    memset(c.arena, 0, c.arena_bytes);
    assert_int_equal(opt_weights_init_synthetic(&a, 7, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&b, 7, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&c, 8, &err), BC_OK);
    assert_int_equal(a.arena_bytes, b.arena_bytes);
    assert_memory_equal(a.arena, b.arena, a.arena_bytes);
    assert_memory_not_equal(a.arena, c.arena, a.arena_bytes);
    opt_weights_free(&a), opt_weights_free(&b), opt_weights_free(&c);
}

static void test_scale(void **state) {
    (void)state;
    opt_hparams hp = small_125m_like();
    opt_weights w;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&w, &hp, OPT_F32, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&w, 1, &err), BC_OK);
    const float *e = w.embed_tokens.data;
    size_t n = (size_t)w.embed_tokens.rows * w.embed_tokens.cols;
    double s = 0, s2 = 0, mx = 0;
    for (size_t i = 0; i < n; i++) s += e[i], s2 += (double)e[i] * e[i], mx = fmax(mx, fabs(e[i]));
    double mean = s / n, sd = sqrt(s2 / n - mean * mean);
    assert_true(fabs(mean) < 1e-3);
    assert_true(fabs(sd - 0.02) < 1e-3);
    assert_true(mx <= 0.0701); /* 2 * sqrt(3) * 0.02 bound of the Irwin-Hall sum */
    for (int i = 0; i < hp.hidden_size; i++) {
        assert_true(w.layers[0].ln1_gamma[i] == 1.0f && w.layers[0].ln1_beta[i] == 0.0f);
        assert_true(w.final_ln_gamma[i] == 1.0f && w.final_ln_beta[i] == 0.0f);
    }
    opt_weights_free(&w);
}

static void check_not_degenerate(opt_dtype dt) {
    opt_hparams hp = small_125m_like();
    opt_weights w;
    opt_model m;
    opt_rollout ro;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&w, &hp, dt, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&w, 0, &err), BC_OK);
    assert_int_equal(opt_model_init(&m, &w, 0, &err), BC_OK);
    opt_rollout_params p = {.batch_size = 2, .samples_per_prompt = 1, .prompt_length = 8, .response_length = 64,
                            .sampling = {0.0, 1.0, 0, 3}};
    assert_int_equal(opt_rollout_init(&ro, &hp, &p, &err), BC_OK);
    assert_int_equal(opt_rollout_expand(&ro, &err), BC_OK);
    assert_int_equal(opt_rollout_generate(&ro, &m, &err), BC_OK);
    for (int r = 0; r < ro.R; r++) {
        const int32_t *resp = ro.seq + (size_t)r * ro.Stot + ro.Tp;
        int distinct = 0, longest_run = 1, run = 1;
        for (int k = 0; k < 64; k++) {
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= resp[j] == resp[k];
            distinct += !seen;
            run = k > 0 && resp[k] == resp[k - 1] ? run + 1 : 1;
            if (run > longest_run) longest_run = run;
        }
        print_message("%s row %d: %d distinct tokens in 64, longest run %d\n", opt_dtype_name(dt), r, distinct,
                      longest_run);
        assert_true(distinct >= 8);
        assert_true(longest_run < 16);
    }
    opt_rollout_free(&ro, &m);
    opt_model_free(&m);
    opt_weights_free(&w);
}

static void test_greedy_not_degenerate_f32(void **state) { (void)state; check_not_degenerate(OPT_F32); }
static void test_greedy_not_degenerate_bf16(void **state) { (void)state; check_not_degenerate(OPT_BF16); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_greedy_not_degenerate_f32),
        cmocka_unit_test(test_greedy_not_degenerate_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
