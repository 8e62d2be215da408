/* test_score_stage.c: the score stage's arithmetic (core/src/run/rollout_score.c) on
 * rollouts worked out by hand: the logprob gap, the k3 estimate and the
 * importance ratios; zero gap for a scorer that agrees; the RL-named
 * lengths and clip ratio; the checks of what read_rollout and score hand
 * back, each bad value failing with the row it is in; and the memcpy
 * bound (core/src/io/memcpy_bound.c) measured as a positive rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <string.h>

#include "memcpy_bound.h"
#include "rollout_score.h"

/* 2 rows, stride 3: row 0 prompt [5 6] response [1 2 3], row 1 prompt [7]
 * response [4] (clipped, eos). */
typedef struct fixture {
    int32_t prompt[2 * 2], response[2 * 3], stop[2];
    int64_t prompt_len[2], response_len[2];
    float lp[2 * 3];
    bc_rollout_tokens t;
    bc_case c;
} fixture;

static void make(fixture *f) {
    memset(f, 0, sizeof *f);
    const int32_t prompt[4] = {5, 6, 7, 0}, response[6] = {1, 2, 3, 4, 0, 0};
    memcpy(f->prompt, prompt, sizeof prompt);
    memcpy(f->response, response, sizeof response);
    f->prompt_len[0] = 2, f->prompt_len[1] = 1;
    f->response_len[0] = 3, f->response_len[1] = 1;
    f->stop[0] = BC_ROW_STOP_LENGTH, f->stop[1] = BC_ROW_STOP_EOS;
    const float lp[6] = {-1.0f, -0.5f, -2.0f, -0.25f, 0, 0};
    memcpy(f->lp, lp, sizeof lp);
    bc_rollout_unknown(&f->t);
    f->t.rows = 2;
    f->t.prompt_tokens = f->prompt, f->t.prompt_lengths = f->prompt_len, f->t.prompt_stride = 2;
    f->t.response_tokens = f->response, f->t.response_lengths = f->response_len, f->t.response_stride = 3;
    f->t.row_stop = f->stop;
    f->t.response_logprobs = f->lp;
    f->c = (bc_case){.struct_size = sizeof f->c, .batch_size = 2, .samples_per_prompt = 1, .response_length = 3};
}

/* Scorer d = lp_s - lp_r of 0, -0.5, +0.25, -1 on the 4 tokens (the
 * padding slots hold NaN: never read):
 *   gap mean (0 + 0.5 + 0.25 + 1) / 4 = 0.4375, max 1
 *   ratios 1, e^-0.5, e^0.25, e^-1; k3 terms ratio - 1 - d */
static void test_gap(void **state) {
    (void)state;
    fixture f;
    make(&f);
    const float s[6] = {-1.0f, -1.0f, -1.75f, -1.25f, NAN, NAN};
    bc_score_gap g;
    bc_score_gap_compute(&f.t, s, &g);
    assert_int_equal(g.n_tokens, 4);
    assert_double_equal(g.gap_mean, 0.4375, 1e-12);
    assert_double_equal(g.gap_max, 1.0, 1e-12);
    const double d[4] = {0, -0.5, 0.25, -1};
    double k3 = 0, ratio = 0;
    for (int i = 0; i < 4; i++) k3 += exp(d[i]) - 1 - d[i], ratio += exp(d[i]);
    assert_double_equal(g.kl_k3, k3 / 4, 1e-12);
    assert_double_equal(g.kl_k3, 0.1271088794, 1e-9); /* by hand: (0 + 0.1065307 + 0.0340254 + 0.3678794) / 4 */
    assert_double_equal(g.ratio_min, exp(-1.0), 1e-12);
    assert_double_equal(g.ratio_max, exp(0.25), 1e-12);
    assert_double_equal(g.ratio_mean, ratio / 4, 1e-12);
}

static void test_zero_gap(void **state) {
    (void)state;
    fixture f;
    make(&f);
    bc_score_gap g;
    bc_score_gap_compute(&f.t, f.lp, &g);
    assert_double_equal(g.gap_mean, 0, 0);
    assert_double_equal(g.gap_max, 0, 0);
    assert_double_equal(g.kl_k3, 0, 0);
    assert_double_equal(g.ratio_min, 1, 0);
    assert_double_equal(g.ratio_mean, 1, 0);
    assert_double_equal(g.ratio_max, 1, 0);
    /* no logprobs kept, or no response token: unknown */
    f.t.response_logprobs = NULL;
    bc_score_gap_compute(&f.t, f.lp, &g);
    assert_nan(g.gap_mean);
    assert_nan(g.kl_k3);
    make(&f);
    f.response_len[0] = f.response_len[1] = 0;
    bc_score_gap_compute(&f.t, f.lp, &g);
    assert_int_equal(g.n_tokens, 0);
    assert_nan(g.ratio_mean);
}

static void test_lengths(void **state) {
    (void)state;
    fixture f;
    make(&f);
    bc_rollout_lengths l;
    bc_rollout_lengths_compute(&f.t, &l);
    assert_double_equal(l.mean, 2.0, 0);
    assert_double_equal(l.min, 1.0, 0);
    assert_double_equal(l.max, 3.0, 0);
    assert_double_equal(l.clip_ratio, 0.5, 0);
    assert_int_equal(bc_rollout_scored_tokens(&f.t), 2 + 3 + 1 + 1);
    f.stop[1] = BC_ROW_STOP_UNKNOWN; /* a row's stop unknown: no clip ratio */
    bc_rollout_lengths_compute(&f.t, &l);
    assert_nan(l.clip_ratio);
    f.t.row_stop = NULL;
    bc_rollout_lengths_compute(&f.t, &l);
    assert_nan(l.clip_ratio);
    assert_double_equal(l.mean, 2.0, 0);
}

/* Each bad value fails, naming what and which row. */
static void expect_bad(fixture *f, int64_t vocab, const char *want) {
    bc_error err = {0};
    assert_int_equal(bc_rollout_check(&f->t, &f->c, vocab, &err), BC_ERR_INVALID);
    if (!strstr(err.message, want)) fail_msg("'%s' lacks '%s'", err.message, want);
}

static void test_rollout_check(void **state) {
    (void)state;
    fixture f;
    bc_error err = {0};
    make(&f);
    assert_int_equal(bc_rollout_check(&f.t, &f.c, 8, &err), BC_OK);
    assert_int_equal(bc_rollout_check(&f.t, &f.c, -1, &err), BC_OK); /* vocabulary unknown: ids not checked */
    make(&f), f.t.rows = 3;
    expect_bad(&f, 8, "rows is 3, the case has 2");
    make(&f), f.t.prompt_tokens = NULL;
    expect_bad(&f, 8, "prompt_tokens is NULL");
    make(&f), f.response_len[1] = 4;
    expect_bad(&f, 8, "row 1: response length 4 is not in [0, 3]");
    make(&f), f.c.response_length = 2;
    expect_bad(&f, 8, "row 0: response length 3 is not in [0, 2]");
    make(&f), f.prompt_len[1] = 3;
    expect_bad(&f, 8, "row 1: prompt length 3 is not in [0, 2]");
    make(&f), f.response[3] = 8;
    expect_bad(&f, 8, "row 1: response token 0 is id 8, not in [0, 8)");
    make(&f), f.prompt[1] = -1;
    expect_bad(&f, 8, "row 0: prompt token 1 is id -1");
    make(&f), f.stop[1] = 7;
    expect_bad(&f, 8, "row 1: row_stop 7");
    make(&f), f.lp[2] = 0.5f;
    expect_bad(&f, 8, "row 0: response token 2 has log-probability 0.5");
    make(&f), f.lp[3] = NAN;
    expect_bad(&f, 8, "row 1: response token 0 has log-probability nan");
    make(&f), f.lp[1] = -1e30f; /* finite, but exp of its gap would overflow */
    expect_bad(&f, 8, "row 0: response token 1 has log-probability -1e+30, not a finite number in [-700, 0]");
    make(&f), f.lp[1] = -699.0f; /* the floor's side that is taken */
    assert_int_equal(bc_rollout_check(&f.t, &f.c, 8, &err), BC_OK);
    make(&f), f.lp[0] = (float)(BC_SCORE_LOGPROB_TOLERANCE / 2); /* a float log_softmax's rounding passes */
    assert_int_equal(bc_rollout_check(&f.t, &f.c, 8, &err), BC_OK);
    make(&f), f.lp[4] = 1.0f; /* padding past the row's length is never read */
    assert_int_equal(bc_rollout_check(&f.t, &f.c, 8, &err), BC_OK);
}

static void test_score_check(void **state) {
    (void)state;
    fixture f;
    make(&f);
    bc_error err = {0};
    float s[6] = {-1, -1, -1, -1, NAN, NAN};
    assert_int_equal(bc_score_check(&f.t, s, 8, &err), BC_OK);
    s[1] = INFINITY;
    assert_int_equal(bc_score_check(&f.t, s, 8, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "row 0: response token 1 has log-probability inf"));
    s[1] = -1;
    /* a scorer of a smaller vocabulary cannot score id 5 of row 0's prompt */
    assert_int_equal(bc_score_check(&f.t, s, 5, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "row 0: prompt token 0 is id 5, not in [0, 5) (the scorer's vocabulary)"));
}

static void test_memcpy_bound(void **state) {
    (void)state;
    double gbs = bc_memcpy_gb_per_s((size_t)4 << 20, 3);
    if (!(gbs > 0.01 && gbs < 10000)) fail_msg("memcpy of 4 MiB at %g GB/s", gbs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap),           cmocka_unit_test(test_zero_gap),    cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_rollout_check), cmocka_unit_test(test_score_check), cmocka_unit_test(test_memcpy_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
