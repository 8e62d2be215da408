/* test_score.c: the engine's log-probabilities against Hugging Face
 * transformers (tools/golden/make_logprob_golden.py: logprobs.txt beside the
 * OPT preln, Qwen2 gqa4 and Llama-3 golden checkpoints), both families:
 *   - the score path (engine/rollout/score.c) over three ragged rows in one
 *     left-padded batch, fp32 within SCORE_TOL_F32 of transformers' fp32,
 *     bf16 and int8 within their looser bounds (and not equal to fp32);
 *   - the rollout's own log-probabilities of a greedy rollout (the same
 *     tokens as transformers' greedy loop) within SCORE_TOL_F32;
 *   - a sampled fp32 rollout's log-probabilities equal the fp32 score of its
 *     tokens within fp32 rounding (ROLLOUT_VS_SCORE_TOL), static and
 *     continuous batching, ragged prompts, stop at EOS; a bf16 rollout scored
 *     in fp32 does not (its gap is above BF16_GAP_MIN);
 *   - score refuses what it cannot do (tokens outside the vocabulary, a
 *     response without a prompt token, more than the model's positions).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device.h"
#include "family.h"
#include "llama_model.h"
#include "opt_model.h"
#include "scorer.h"

/* transformers computes in fp32 (log_softmax in double); the engine's fp32
 * logits match its logits to ~1e-5 (the golden tests), and logsumexp adds
 * fp32 rounding of the logits' scale (|logit| <= ~50) */
#define SCORE_TOL_F32 1e-4
/* weights rounded to bf16 (8 bits of mantissa) / int8 (one scale per row):
 * the logits move by ~1e-2 of their scale on these random models */
#define SCORE_TOL_BF16 0.25
#define SCORE_TOL_I8 0.4
/* the rollout's log-probabilities and the score path's on the same weights:
 * the same math on logits of a batch of another shape (fp32 sums in another
 * order) */
#define ROLLOUT_VS_SCORE_TOL 2e-5
/* a bf16 rollout scored by fp32 weights: the mean |delta| is well above fp32 rounding */
#define BF16_GAP_MIN 3e-4

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/"

typedef struct golden_row {
    int pl, rl;
    int32_t prompt[64], response[64];
    double lp[64];
} golden_row;

typedef struct golden_lp {
    int rows;
    golden_row row[4];
    int greedy_n;
    int32_t greedy[64];
    double greedy_lp[64];
} golden_lp;

static int read_ints(char *line, const char *key, int32_t *out, int max) {
    assert_int_equal(strncmp(line, key, strlen(key)), 0);
    int n = 0;
    for (char *t = strtok(line + strlen(key), " \n"); t && n < max; t = strtok(NULL, " \n")) out[n++] = atoi(t);
    return n;
}

static int read_doubles(char *line, double *out, int max) {
    assert_int_equal(strncmp(line, "logprobs ", 9), 0);
    int n = 0;
    for (char *t = strtok(line + 9, " \n"); t && n < max; t = strtok(NULL, " \n")) out[n++] = strtod(t, NULL);
    return n;
}

static void read_golden(const char *model, golden_lp *g) {
    char path[512], line[8192];
    snprintf(path, sizeof path, GOLDEN "%s/logprobs.txt", model);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    memset(g, 0, sizeof *g);
    int r = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (sscanf(line, "rows %d", &g->rows) == 1) continue;
        if (strncmp(line, "row ", 4) == 0) {
            r++;
            assert_true(r < 4);
            assert_int_equal(sscanf(line, "row %d %d", &g->row[r].pl, &g->row[r].rl), 2);
            assert_true(fgets(line, sizeof line, f) != NULL);
            assert_int_equal(read_ints(line, "prompt ", g->row[r].prompt, 64), g->row[r].pl);
            assert_true(fgets(line, sizeof line, f) != NULL);
            assert_int_equal(read_ints(line, "response ", g->row[r].response, 64), g->row[r].rl);
            assert_true(fgets(line, sizeof line, f) != NULL);
            assert_int_equal(read_doubles(line, g->row[r].lp, 64), g->row[r].rl);
        } else if (sscanf(line, "greedy %d", &g->greedy_n) == 1) {
            assert_true(fgets(line, sizeof line, f) != NULL);
            assert_int_equal(read_ints(line, "response ", g->greedy, 64), g->greedy_n);
            assert_true(fgets(line, sizeof line, f) != NULL);
            assert_int_equal(read_doubles(line, g->greedy_lp, 64), g->greedy_n);
        }
    }
    fclose(f);
    assert_int_equal(g->rows, r + 1);
    assert_true(g->rows >= 2 && g->greedy_n > 0);
}

/* A model of family fam from a golden checkpoint in dtype dt. */
typedef struct loaded {
    eng_weights *w;
    eng_model m;
} loaded;

static void load(loaded *l, const eng_family *fam, const char *model, eng_dtype dt) {
    char dir[512];
    bc_error err = {0};
    snprintf(dir, sizeof dir, GOLDEN "%s", model);
    l->w = calloc(1, fam->weights_size);
    assert_non_null(l->w);
    if (eng_weights_load(l->w, fam, dir, dt, &err) != BC_OK) fail_msg("%s: %s", dir, err.message);
    if (eng_model_init(&l->m, l->w, 2, &err) != BC_OK) fail_msg("%s", err.message);
}

static void unload(loaded *l) {
    eng_model_free(&l->m);
    eng_weights_free(l->w);
    free(l->w);
}

/* The golden rows as the host hands them to a scorer. */
typedef struct rows_in {
    int32_t prompt[4 * 64], response[4 * 64];
    int64_t pl[4], rl[4];
    bc_rollout_tokens t;
} rows_in;

static void rows_of(const golden_lp *g, rows_in *in) {
    memset(in, 0, sizeof *in);
    for (int r = 0; r < g->rows; r++) {
        memcpy(in->prompt + r * 64, g->row[r].prompt, (size_t)g->row[r].pl * sizeof(int32_t));
        memcpy(in->response + r * 64, g->row[r].response, (size_t)g->row[r].rl * sizeof(int32_t));
        in->pl[r] = g->row[r].pl;
        in->rl[r] = g->row[r].rl;
    }
    in->t = (bc_rollout_tokens){.struct_size = sizeof in->t, .rows = g->rows, .prompt_tokens = in->prompt,
                                .prompt_lengths = in->pl, .prompt_stride = 64, .response_tokens = in->response,
                                .response_lengths = in->rl, .response_stride = 64};
}

/* The score of the golden rows in dt: the max |engine - transformers|. */
static double score_delta(const eng_family *fam, const char *model, eng_dtype dt) {
    golden_lp g;
    read_golden(model, &g);
    rows_in in;
    rows_of(&g, &in);
    loaded l;
    load(&l, fam, model, dt);
    eng_scorer sc = {0};
    bc_error err = {0};
    float out[4 * 64];
    for (int i = 0; i < 4 * 64; i++) out[i] = NAN;
    if (eng_score(&sc, &l.m, &in.t, out, &err) != BC_OK) fail_msg("score: %s", err.message);
    double worst = 0.0;
    for (int r = 0; r < g.rows; r++)
        for (int t = 0; t < g.row[r].rl; t++) {
            const double d = fabs((double)out[r * 64 + t] - g.row[r].lp[t]);
            assert_false(isnan(d));
            if (d > worst) worst = d;
        }
    /* the same rows a second time (buffers kept) give the same values */
    float again[4 * 64];
    assert_int_equal(eng_score(&sc, &l.m, &in.t, again, &err), BC_OK);
    for (int r = 0; r < g.rows; r++) assert_memory_equal(again + r * 64, out + r * 64, (size_t)g.row[r].rl * sizeof(float));
    eng_scorer_free(&sc);
    unload(&l);
    return worst;
}

static const struct {
    const eng_family *fam;
    const char *model;
} models[] = {
    {&opt_family, "opt/golden/preln"},
    {&llama_model_family, "llama/golden/qwen2_gqa4"},
    {&llama_model_family, "llama/golden/llama_gqa_llama3"},
};
#define N_MODELS (sizeof models / sizeof models[0])

static void test_score_golden(void **state) {
    (void)state;
    for (size_t i = 0; i < N_MODELS; i++) {
        const double f32 = score_delta(models[i].fam, models[i].model, ENG_F32);
        const double bf16 = score_delta(models[i].fam, models[i].model, ENG_BF16);
        const double i8 = score_delta(models[i].fam, models[i].model, ENG_I8);
        print_message("score vs transformers %-30s max |delta| fp32 %.2e  bf16 %.3f  int8 %.3f\n", models[i].model, f32,
                      bf16, i8);
        assert_true(f32 <= SCORE_TOL_F32);
        assert_true(bf16 <= SCORE_TOL_BF16 && bf16 > SCORE_TOL_F32);
        assert_true(i8 <= SCORE_TOL_I8 && i8 > SCORE_TOL_F32);
    }
}

/* A rollout of p on l (prompts: one line per prompt). */
static void rollout(loaded *l, const eng_rollout_params *p, eng_rollout *ro) {
    bc_error err = {0};
    if (eng_rollout_init(ro, &l->w->shape, p, &err) != BC_OK) fail_msg("init: %s", err.message);
    assert_int_equal(eng_rollout_expand(ro, &err), BC_OK);
    if (eng_rollout_generate(ro, &l->m, &err) != BC_OK) fail_msg("generate: %s", err.message);
    assert_int_equal(eng_rollout_post_process(ro, &err), BC_OK);
}

/* The golden greedy rollout: the engine's tokens and its own
 * log-probabilities against transformers' greedy loop. */
static void test_rollout_logprobs_golden(void **state) {
    (void)state;
    for (size_t i = 0; i < N_MODELS; i++) {
        golden_lp g;
        read_golden(models[i].model, &g);
        loaded l;
        load(&l, models[i].fam, models[i].model, ENG_F32);
        eng_prompt line = {g.row[0].prompt, g.row[0].pl};
        eng_prompts prompts = {.lines = &line, .n_lines = 1};
        eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 1, .response_length = g.greedy_n,
                                .sampling = {0.0, 1.0, 0, 1}, .prompts = &prompts};
        eng_rollout ro;
        rollout(&l, &p, &ro);
        double worst = 0.0;
        for (int r = 0; r < ro.R; r++) {
            assert_memory_equal(ro.seq + (size_t)r * ro.Stot + ro.Tp, g.greedy, (size_t)g.greedy_n * sizeof(int32_t));
            for (int k = 0; k < g.greedy_n; k++) {
                const double d = fabs((double)ro.logprobs[(size_t)r * ro.Tr + k] - g.greedy_lp[k]);
                assert_false(isnan(d));
                if (d > worst) worst = d;
            }
        }
        print_message("rollout logprobs vs transformers %-30s max |delta| %.2e\n", models[i].model, worst);
        assert_true(worst <= SCORE_TOL_F32);
        eng_cpu_rollout_free(&ro, &l.m);
        unload(&l);
    }
}

/* The rollout's log-probabilities against the score of its tokens by
 * scorer: mean and max |delta| over every response token. */
static void gap(const eng_rollout *ro, eng_model *scorer, double *mean, double *max) {
    eng_rollout_tokens tk = {0};
    bc_rollout_tokens t = {.struct_size = sizeof t};
    bc_error err = {0};
    assert_int_equal(eng_rollout_tokens_fill(&tk, ro, 1, &t, &err), BC_OK);
    assert_non_null(t.response_logprobs);
    float *out = malloc((size_t)t.rows * t.response_stride * sizeof *out);
    assert_non_null(out);
    eng_scorer sc = {0};
    if (eng_score(&sc, scorer, &t, out, &err) != BC_OK) fail_msg("score: %s", err.message);
    double sum = 0.0, worst = 0.0;
    int64_t n = 0;
    for (int64_t r = 0; r < t.rows; r++)
        for (int64_t k = 0; k < t.response_lengths[r]; k++) {
            const double d = fabs((double)out[r * t.response_stride + k] - t.response_logprobs[r * t.response_stride + k]);
            assert_false(isnan(d));
            sum += d;
            if (d > worst) worst = d;
            n++;
        }
    assert_true(n > 0);
    *mean = sum / (double)n;
    *max = worst;
    free(out);
    eng_scorer_free(&sc);
    eng_rollout_tokens_free(&tk);
}

/* A sampled fp32 rollout of ragged prompts (static and continuous, stop at
 * EOS) scored by its own weights: the gap is fp32 rounding; the same
 * rollout in bf16 scored in fp32: a gap. */
static void test_rollout_vs_score(void **state) {
    (void)state;
    for (size_t i = 0; i < N_MODELS; i++) {
        golden_lp g;
        read_golden(models[i].model, &g);
        loaded f32, b16;
        load(&f32, models[i].fam, models[i].model, ENG_F32);
        load(&b16, models[i].fam, models[i].model, ENG_BF16);
        eng_prompt lines[3];
        for (int r = 0; r < 3 && r < g.rows; r++) lines[r] = (eng_prompt){g.row[r].prompt, g.row[r].pl};
        eng_prompts prompts = {.lines = lines, .n_lines = g.rows < 3 ? g.rows : 3};
        for (int continuous = 0; continuous <= 1; continuous++) {
            eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 2, .response_length = 16,
                                    .sampling = {0.9, 0.95, 40, 7}, .prompts = &prompts, .stop_at_eos = 1,
                                    .continuous = continuous, .capacity = continuous ? 4 : 0};
            eng_rollout ro;
            double mean, max;
            rollout(&f32, &p, &ro);
            gap(&ro, &f32.m, &mean, &max);
            print_message("%-30s %s fp32 rollout scored in fp32: mean |delta| %.2e max %.2e\n", models[i].model,
                          continuous ? "continuous" : "static", mean, max);
            assert_true(max <= ROLLOUT_VS_SCORE_TOL);
            eng_cpu_rollout_free(&ro, &f32.m);
            rollout(&b16, &p, &ro);
            gap(&ro, &f32.m, &mean, &max);
            print_message("%-30s %s bf16 rollout scored in fp32: mean |delta| %.2e max %.2e\n", models[i].model,
                          continuous ? "continuous" : "static", mean, max);
            assert_true(mean > BF16_GAP_MIN);
            eng_cpu_rollout_free(&ro, &b16.m);
        }
        unload(&f32);
        unload(&b16);
    }
}

static void test_score_refuses(void **state) {
    (void)state;
    golden_lp g;
    read_golden(models[1].model, &g);
    rows_in in;
    rows_of(&g, &in);
    loaded l;
    load(&l, models[1].fam, models[1].model, ENG_F32);
    eng_scorer sc = {0};
    bc_error err = {0};
    float out[4 * 64];
    in.response[64 + 1] = (int32_t)l.w->shape.vocab_size; /* row 1, token 1 */
    assert_int_equal(eng_score(&sc, &l.m, &in.t, out, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "row 1"));
    rows_of(&g, &in);
    in.pl[2] = 0;
    assert_int_equal(eng_score(&sc, &l.m, &in.t, out, &err), BC_ERR_INVALID);
    rows_of(&g, &in);
    in.rl[0] = 60; /* 5 + 60 - 1 > 64 positions */
    in.t.response_stride = 64;
    assert_int_equal(eng_score(&sc, &l.m, &in.t, out, &err), BC_ERR_INFEASIBLE);
    eng_scorer_free(&sc);
    unload(&l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_golden),
        cmocka_unit_test(test_rollout_logprobs_golden),
        cmocka_unit_test(test_rollout_vs_score),
        cmocka_unit_test(test_score_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
