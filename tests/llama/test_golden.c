/* test_golden.c: the Llama family's engine (plugins/llama) against Hugging
 * Face transformers.
 *
 * tools/golden/make_llama_golden.py wrote, for tiny random Llama, Qwen2 and
 * Mistral models (tests/llama/golden/<model>/, tools/golden/README.md:
 * multi-head and grouped-query attention with ratios 2, 3 and 4, q/k/v(/o)
 * biases, tied and untied heads, llama3 RoPE scaling with a small original
 * context, head_dim != C / H, pad id 0, config.json in both spellings) the
 * checkpoint and golden.bin. This test loads each with llama_weights_load
 * and runs the shared checks (tests/golden/golden_check.c):
 *   - logits at every real position of the prefill and of K cached decode
 *     steps within the precision plugin's rel_tolerance x scale, the argmax
 *     wherever the reference's top-2 margin allows;
 *   - fp32: the greedy tokens of generate() on every expanded row, from a
 *     loop over eng_forward and from the engine's rollout: static, shared
 *     prefill, continuous batching on 1 to 4 rows, drawn lengths (row for
 *     row the same tokens as the static batch and transformers).
 * Each runs with the best kernel family and with every family this CPU runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../golden/golden_check.h"
#include "llama_model.h"
#include "precision.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/llama/golden/"

/* The case's checkpoint, golden data and model; skips the test when this
 * CPU cannot run the case's kernel family. */
static void open_case(const golden_case_cfg *cfg, llama_weights *w, eng_model *m, golden_file *g) {
    char dir[512], gpath[512];
    snprintf(dir, sizeof dir, GOLDEN "%s", cfg->model);
    snprintf(gpath, sizeof gpath, GOLDEN "%s/golden.bin", cfg->golden);
    assert_true(golden_read(g, gpath));
    bc_error err = {0};
    if (llama_weights_load(&w->base, dir, cfg->dtype, &err) != BC_OK) fail_msg("%s", err.message);
    if (!model_init(m, &w->base, cfg)) {
        llama_weights_free(&w->base);
        golden_free(g);
        skip();
    }
}

static void close_case(llama_weights *w, eng_model *m, golden_file *g) {
    eng_model_free(m);
    llama_weights_free(&w->base);
    golden_free(g);
}

static void test_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    golden_file g;
    llama_weights w;
    eng_model m;
    open_case(cfg, &w, &m, &g);
    golden_stats st = {0};
    run_case(&m, &w.base, &g, "single", cfg, &st);
    run_case(&m, &w.base, &g, "padded", cfg, &st);
    print_message("  %s %s %s kernels: max |diff| / scale %.3g (tolerance %.0e, logit scale %.3g), %d argmax "
                  "checks, %d mismatches\n",
                  cfg->model, eng_dtype_name(cfg->dtype), eng_isa_name(m.k->isa), st.max_diff, cfg->tol, st.scale,
                  st.argmax_checked, st.mismatches + st.argmax_mismatches);
    close_case(&w, &m, &g);
    assert_int_equal(st.mismatches, 0);
    assert_int_equal(st.argmax_mismatches, 0);
    assert_true(st.argmax_checked > 0);
}

static void test_rollout_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    golden_file g;
    llama_weights w;
    eng_model m;
    open_case(cfg, &w, &m, &g);
    /* static with and without shared prefill; continuous on 1 to 4 rows;
     * drawn lengths, static and continuous */
    const rollout_mode modes[] = {{0, 0, 0}, {1, 0, 0},   {0, 1, 0},   {0, 3, 0},
                                  {1, 2, 0}, {0, 0, 0.4}, {0, 2, 0.4}, {1, 4, 0.4}};
    int bad = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        bad += rollout_case(&m, &w.base, &g, "single", cfg->model, modes[i]);
        bad += rollout_case(&m, &w.base, &g, "padded", cfg->model, modes[i]);
    }
    close_case(&w, &m, &g);
    assert_int_equal(bad, 0);
}

/* A checkpoint whose weights do not match its config.json is refused, naming
 * the tensor: the 4.x-spelled config of llama_gqa_llama3 reads to the same
 * model (so its logits are the same golden's), and a missing directory is
 * an error with the path. */
static void test_load_errors(void **state) {
    (void)state;
    llama_weights w;
    bc_error err = {0};
    assert_int_not_equal(llama_weights_load(&w.base, GOLDEN "does-not-exist", ENG_F32, &err), BC_OK);
    assert_non_null(strstr(err.message, "does-not-exist"));
    assert_int_equal(llama_checkpoint_validate(GOLDEN "qwen2_gqa4", &err), BC_OK);
}

/* The checkpoints and precisions; main runs each with every kernel family. */
static const golden_case_cfg cfgs[] = {
    {"llama_mha", "llama_mha", ENG_F32, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_F32, -1, 0},
    {"llama_gqa_llama3_v4", "llama_gqa_llama3", ENG_F32, -1, 0}, /* config.json in the 4.x spelling */
    {"qwen2_gqa4", "qwen2_gqa4", ENG_F32, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_F32, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_F32, -1, 0},
    {"llama_mha", "llama_mha", ENG_F16, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_F16, -1, 0},
    {"qwen2_gqa4", "qwen2_gqa4", ENG_F16, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_F16, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_F16, -1, 0},
    {"llama_mha", "llama_mha", ENG_BF16, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_BF16, -1, 0},
    {"qwen2_gqa4", "qwen2_gqa4", ENG_BF16, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_BF16, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_BF16, -1, 0},
};

#define N_CFGS (sizeof cfgs / sizeof cfgs[0])
#define N_ROLLOUT 6        /* the fp32 entries of cfgs come first */

int main(void) {
    return golden_main("test_llama_golden", cfgs, N_CFGS, N_ROLLOUT, test_golden, test_rollout_golden,
                       test_load_errors, "test_load_errors");
}
