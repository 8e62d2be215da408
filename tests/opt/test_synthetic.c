/* test_synthetic.c: synthetic weights are deterministic, scaled like
 * Hugging Face's init, and make a model whose greedy generation is not
 * degenerate (several distinct tokens in 64, with the real vocabulary size);
 * int8 ones are the fp32 ones rounded per row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_model.h"
#include "device.h"
#include "rollout.h"

/* The 125m vocabulary and positions with a narrower, shallower body, so the
 * test runs in seconds on the portable kernels. */
static opt_hparams small_125m_like(void) {
    bc_error err = {0};
    opt_hparams hp;
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    hp.s.hidden_size = 256;
    hp.s.n_layers = 4;
    hp.s.n_heads = 4;
    hp.s.ffn_size = 1024;
    hp.word_embed_proj_dim = 256;
    return hp;
}

static void test_deterministic(void **state) {
    (void)state;
    opt_hparams hp = small_125m_like();
    hp.s.vocab_size = 1000;
    opt_weights a, b, c;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&a, &hp, ENG_BF16, &err), BC_OK);
    assert_int_equal(opt_weights_alloc(&b, &hp, ENG_BF16, &err), BC_OK);
    assert_int_equal(opt_weights_alloc(&c, &hp, ENG_BF16, &err), BC_OK);
    memset(a.base.arena, 0, a.base.arena_bytes); /* padding between tensors compares equal */
    memset(b.base.arena, 0, b.base.arena_bytes);
    memset(c.base.arena, 0, c.base.arena_bytes);
    assert_int_equal(opt_weights_init_synthetic(&a, 7, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&b, 7, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&c, 8, &err), BC_OK);
    assert_int_equal(a.base.arena_bytes, b.base.arena_bytes);
    assert_memory_equal(a.base.arena, b.base.arena, a.base.arena_bytes);
    assert_memory_not_equal(a.base.arena, c.base.arena, a.base.arena_bytes);
    opt_weights_free(&a), opt_weights_free(&b), opt_weights_free(&c);
}

static void test_scale(void **state) {
    (void)state;
    opt_hparams hp = small_125m_like();
    opt_weights w;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&w, &hp, ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&w, 1, &err), BC_OK);
    const float *e = w.embed_tokens.data;
    size_t n = (size_t)w.embed_tokens.rows * w.embed_tokens.cols;
    double s = 0, s2 = 0, mx = 0;
    for (size_t i = 0; i < n; i++) s += e[i], s2 += (double)e[i] * e[i], mx = fmax(mx, fabs(e[i]));
    double mean = s / n, sd = sqrt(s2 / n - mean * mean);
    assert_true(fabs(mean) < 1e-3);
    assert_true(fabs(sd - 0.02) < 1e-3);
    assert_true(mx <= 0.0701); /* 2 * sqrt(3) * 0.02 bound of the Irwin-Hall sum */
    for (int i = 0; i < hp.s.hidden_size; i++) {
        assert_true(w.layers[0].ln1_gamma[i] == 1.0f && w.layers[0].ln1_beta[i] == 0.0f);
        assert_true(w.final_ln_gamma[i] == 1.0f && w.final_ln_beta[i] == 0.0f);
    }
    opt_weights_free(&w);
}

/* Synthetic int8 weights are the fp32 ones rounded per row: for every row of
 * a matrix, scale = max|row| / 127 (computed here from the fp32 weights) and
 * |scale * q - w| <= scale / 2 (plus fp32 rounding); fc2's bias follows the
 * int8 weights, so it stays within the rounding of the fp32 one. */
static void check_int8_rows(const eng_matrix *f, const eng_matrix *q) {
    assert_int_equal(q->dtype, ENG_I8);
    const size_t R = (size_t)f->rows, C = (size_t)f->cols;
    const float *wf = f->data, *scale = eng_i8_scales(q->data, R, C);
    const int8_t *wq = q->data;
    for (size_t r = 0; r < R; r++) {
        double mx = 0;
        for (size_t c = 0; c < C; c++) mx = fmax(mx, fabs(wf[r * C + c]));
        assert_true(fabs(scale[r] - mx / 127.0) <= 1e-6 * mx);
        int hit_127 = 0;
        for (size_t c = 0; c < C; c++) {
            const double d = fabs((double)scale[r] * wq[r * C + c] - wf[r * C + c]);
            if (!(d <= 0.5 * scale[r] * (1 + 1e-5))) fail_msg("row %zu col %zu: int8 off by %g, scale %g", r, c, d, scale[r]);
            hit_127 |= wq[r * C + c] == 127 || wq[r * C + c] == -127;
        }
        assert_true(hit_127); /* the row's largest weight uses the whole range */
    }
}

static void test_int8_rounds_f32(void **state) {
    (void)state;
    opt_hparams hp = small_125m_like();
    hp.s.vocab_size = 1000;
    opt_weights f, q;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&f, &hp, ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_alloc(&q, &hp, ENG_I8, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&f, 5, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&q, 5, &err), BC_OK);
    check_int8_rows(&f.embed_tokens, &q.embed_tokens);
    check_int8_rows(&f.embed_positions, &q.embed_positions);
    for (int l = 0; l < hp.s.n_layers; l += 3) {
        check_int8_rows(&f.layers[l].q_proj, &q.layers[l].q_proj);
        check_int8_rows(&f.layers[l].fc1, &q.layers[l].fc1);
        check_int8_rows(&f.layers[l].fc2, &q.layers[l].fc2);
        /* bias = -m * sum_f fc2[c, f], m = 0.02 sqrt(C) / sqrt(2 pi) (synthetic.c):
         * the two differ by at most m times the row's total rounding */
        const size_t C = (size_t)hp.s.hidden_size, F = (size_t)hp.s.ffn_size;
        const double m = 0.02 * sqrt((double)C) / sqrt(2.0 * 3.14159265358979323846);
        const float *scale = eng_i8_scales(q.layers[l].fc2.data, C, F);
        for (size_t c = 0; c < C; c++) {
            double rounding = 0;
            for (size_t k = 0; k < F; k++)
                rounding += fabs((double)scale[c] * ((const int8_t *)q.layers[l].fc2.data)[c * F + k] -
                                 ((const float *)f.layers[l].fc2.data)[c * F + k]);
            assert_true(fabs((double)f.layers[l].fc2_bias[c] - q.layers[l].fc2_bias[c]) <= m * rounding + 1e-5);
            assert_true(f.layers[l].fc2_bias[c] != 0.0f);
        }
    }
    opt_weights_free(&q);
    opt_weights_free(&f);
}

static void check_not_degenerate(eng_dtype dt) {
    opt_hparams hp = small_125m_like();
    opt_weights w;
    eng_model m;
    eng_rollout ro;
    bc_error err = {0};
    assert_int_equal(opt_weights_alloc(&w, &hp, dt, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&w, 0, &err), BC_OK);
    assert_int_equal(eng_model_init(&m, &w.base, 0, &err), BC_OK);
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 1, .prompt_length = 8, .response_length = 64,
                            .sampling = {0.0, 1.0, 0, 3}};
    assert_int_equal(eng_rollout_init(&ro, &hp.s, &p, &err), BC_OK);
    assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
    assert_int_equal(eng_rollout_generate(&ro, &m, &err), BC_OK);
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
        print_message("%s row %d: %d distinct tokens in 64, longest run %d\n", eng_dtype_name(dt), r, distinct,
                      longest_run);
        assert_true(distinct >= 8);
        assert_true(longest_run < 16);
    }
    eng_cpu_rollout_free(&ro, &m);
    eng_model_free(&m);
    opt_weights_free(&w);
}

static void test_greedy_not_degenerate_f32(void **state) { (void)state; check_not_degenerate(ENG_F32); }
static void test_greedy_not_degenerate_bf16(void **state) { (void)state; check_not_degenerate(ENG_BF16); }
static void test_greedy_not_degenerate_int8(void **state) { (void)state; check_not_degenerate(ENG_I8); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_greedy_not_degenerate_f32),
        cmocka_unit_test(test_greedy_not_degenerate_bf16),
        cmocka_unit_test(test_int8_rounds_f32),
        cmocka_unit_test(test_greedy_not_degenerate_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
