/* test_golden.c: the Llama family's engine (plugins/llama) against Hugging
 * Face transformers.
 *
 * tools/golden/make_llama_golden.py wrote, for tiny random Llama, Qwen2 and
 * Mistral models (tests/llama/golden/<model>/, tools/golden/README.md:
 * multi-head and grouped-query attention with ratios 2, 3 and 4, q/k/v(/o)
 * biases, tied and untied heads, llama3 RoPE scaling with a small original
 * context, head_dim != C / H, pad id 0, config.json in both spellings) the
 * checkpoint and golden.bin. This test loads each with eng_weights_load
 * and runs the shared checks (tests/golden/golden_check.c):
 *   - logits at every real position of the prefill and of K cached decode
 *     steps within the precision plugin's rel_tolerance x scale, the argmax
 *     wherever the reference's top-2 margin allows;
 *   - fp32: the greedy tokens of generate() on every expanded row, from a
 *     loop over eng_forward and from the engine's rollout: static, shared
 *     prefill, continuous batching on 1 to 4 rows, drawn lengths (row for
 *     row the same tokens as the static batch and transformers), and the
 *     same with PEFT's adapter fused (and unfused, continuous) against
 *     generate() on PEFT's merged model.
 *   - LoRA: llama_gqa_llama3 with the PEFT adapter of
 *     llama_gqa_llama3_lora (rank 4, alpha 8, q/k/v/o/gate/up/down) fused
 *     (eng_lora_fuse) against the golden of PEFT's merged model, logits and
 *     greedy tokens; in fp32 also unfused (eng_lora_forward_add in the
 *     forward) against the same golden, and its prefill logits against the
 *     fused ones within LORA_UNFUSED_TOL x their largest magnitude.
 * Each runs with the best kernel family and with every family this CPU runs.
 */
#include <math.h>
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
#include "lora.h"
#include "precision.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/llama/golden/"

/* fp32 unfused vs fused prefill logits: max |diff| / max |logit|. Both sum
 * the same products in another order (W x + s B (A x) against (W + s B A) x);
 * measured 5.4e-7 or below on every kernel family. */
#define LORA_UNFUSED_TOL 1e-5

/* The case's checkpoint, golden data and model; skips the test when this
 * CPU cannot run the case's kernel family. */
static void open_case(const golden_case_cfg *cfg, llama_weights *w, eng_model *m, golden_file *g) {
    char dir[512], gpath[512];
    snprintf(dir, sizeof dir, GOLDEN "%s", cfg->model);
    snprintf(gpath, sizeof gpath, GOLDEN "%s/golden.bin", cfg->golden);
    assert_true(golden_read(g, gpath));
    bc_error err = {0};
    if (eng_weights_load(&w->base, &llama_model_family, dir, cfg->dtype, &err) != BC_OK) fail_msg("%s", err.message);
    if (!model_init(m, &w->base, cfg)) {
        eng_weights_free(&w->base);
        golden_free(g);
        skip();
    }
}

static void close_case(llama_weights *w, eng_model *m, golden_file *g) {
    eng_model_free(m);
    eng_weights_free(&w->base);
    golden_free(g);
}

/* The prefill logits [B, T, V] of golden case c on m (malloc'd; the caller
 * frees them). */
static float *prefill_logits(eng_model *m, const eng_weights *w, const golden_file *g, const char *c, int *n) {
    const golden_array *ids = golden_get(g, c, "input_ids", G_I32, 2);
    const golden_array *mask = golden_get(g, c, "attention_mask", G_I32, 2);
    const int B = (int)ids->dims[0], T = (int)ids->dims[1], V = w->shape.vocab_size;
    bc_error err = {0};
    eng_kv_cache kv;
    if (eng_kv_cache_alloc(&kv, &w->shape, eng_kv_dtype(w->dtype), B, T, &err) != BC_OK) fail_msg("%s", err.message);
    uint8_t *mb = malloc((size_t)B * T);
    float *logits = malloc(sizeof(float) * (size_t)B * T * V);
    assert_true(mb && logits);
    for (size_t i = 0; i < (size_t)B * T; i++) mb[i] = (uint8_t)((const int32_t *)mask->data)[i];
    if (eng_forward(m, &kv, ids->data, mb, T, B, T, ENG_LOGITS_ALL, logits, &err) != BC_OK) fail_msg("%s", err.message);
    free(mb);
    eng_kv_cache_free(&kv);
    *n = B * T * V;
    return logits;
}

/* The adapter as unfused: its logits and tokens against PEFT's merged
 * golden, and its prefill logits against the fused ones (lo fused into w on
 * entry, unfused on return). */
static void check_unfused(eng_lora *lo, llama_weights *w, eng_model *m, const golden_file *g,
                          const golden_case_cfg *cfg) {
    bc_error err = {0};
    int n = 0, n2 = 0;
    float *fused = prefill_logits(m, &w->base, g, "padded", &n);
    if (eng_lora_unfuse(lo, &w->base, m->pool, &err) != BC_OK) fail_msg("%s", err.message);
    w->base.lora_unfused = lo;
    float *unfused = prefill_logits(m, &w->base, g, "padded", &n2);
    assert_int_equal(n, n2);
    double diff = 0, scale = 0;
    for (int i = 0; i < n; i++) {
        const double d = fabs((double)fused[i] - unfused[i]), a = fabs((double)fused[i]);
        if (!(d <= diff)) diff = d; /* NaN lands here and stays */
        if (a > scale) scale = a;
    }
    free(fused);
    free(unfused);
    golden_stats st = {0};
    run_case(m, &w->base, g, "single", cfg, &st);
    run_case(m, &w->base, g, "padded", cfg, &st);
    w->base.lora_unfused = NULL;
    print_message("  unfused: max |diff| / scale %.3g against the golden, %d mismatches; against fused %.3g "
                  "(tolerance %.0e)\n",
                  st.max_diff, st.mismatches + st.argmax_mismatches, diff / scale, LORA_UNFUSED_TOL);
    assert_int_equal(st.mismatches, 0);
    assert_int_equal(st.argmax_mismatches, 0);
    assert_true(scale > 0);
    assert_true(diff / scale <= LORA_UNFUSED_TOL);
}

static void test_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    golden_file g;
    llama_weights w;
    eng_model m;
    open_case(cfg, &w, &m, &g);
    eng_lora lo = {0};
    const int lora = strstr(cfg->golden, "_lora") != NULL;
    bc_error err = {0};
    if (lora) { /* transformers + PEFT's merged model: fuse the adapter first */
        char adir[512];
        snprintf(adir, sizeof adir, GOLDEN "%s", cfg->golden);
        if (eng_lora_load_peft(&lo, &llama_model_family, adir, &w.cfg.shape, &err) != BC_OK)
            fail_msg("%s", err.message);
        assert_int_equal(lo.targets, (1u << LLAMA_LORA_N_MODULES) - 1);
        assert_int_equal(lo.pairs[LLAMA_LORA_K].out, w.cfg.shape.n_kv_heads * w.cfg.shape.head_dim);
        if (eng_lora_fuse(&lo, &w.base, m.pool, &err) != BC_OK) fail_msg("%s", err.message);
    }
    golden_stats st = {0};
    run_case(&m, &w.base, &g, "single", cfg, &st);
    run_case(&m, &w.base, &g, "padded", cfg, &st);
    if (lora && cfg->dtype == ENG_F32) check_unfused(&lo, &w, &m, &g, cfg);
    eng_lora_free(&lo);
    print_message("  %s %s %s kernels: max |diff| / scale %.3g (tolerance %.0e, logit scale %.3g), %d argmax "
                  "checks, %d mismatches\n",
                  cfg->model, eng_dtype_name(cfg->dtype), eng_isa_name(m.k->isa), st.max_diff, cfg->tol, st.scale,
                  st.argmax_checked, st.mismatches + st.argmax_mismatches);
    close_case(&w, &m, &g);
    assert_int_equal(st.mismatches, 0);
    assert_int_equal(st.argmax_mismatches, 0);
    assert_true(st.argmax_checked > 0);
}

/* The engine's rollout against generate()'s greedy tokens, row for row:
 * static with and without shared prefill, continuous on 1 to 4 rows, drawn
 * lengths static and continuous. With an adapter (a _lora golden: PEFT's
 * merged model) the rollouts run with it fused, then the continuous ones
 * again with it unfused (lora_mode = "unfused"). */
static void test_rollout_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    golden_file g;
    llama_weights w;
    eng_model m;
    open_case(cfg, &w, &m, &g);
    eng_lora lo = {0};
    const int lora = strstr(cfg->golden, "_lora") != NULL;
    bc_error err = {0};
    if (lora) {
        char adir[512];
        snprintf(adir, sizeof adir, GOLDEN "%s", cfg->golden);
        if (eng_lora_load_peft(&lo, &llama_model_family, adir, &w.cfg.shape, &err) != BC_OK ||
            eng_lora_fuse(&lo, &w.base, m.pool, &err) != BC_OK)
            fail_msg("%s", err.message);
    }
    const rollout_mode modes[] = {{0, 0, 0}, {1, 0, 0},   {0, 1, 0},   {0, 3, 0},
                                  {1, 2, 0}, {0, 0, 0.4}, {0, 2, 0.4}, {1, 4, 0.4}};
    int bad = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        bad += rollout_case(&m, &w.base, &g, "single", cfg->model, modes[i]);
        bad += rollout_case(&m, &w.base, &g, "padded", cfg->model, modes[i]);
    }
    if (lora) {
        if (eng_lora_unfuse(&lo, &w.base, m.pool, &err) != BC_OK) fail_msg("%s", err.message);
        w.base.lora_unfused = &lo;
        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
            if (modes[i].capacity == 0) continue;
            bad += rollout_case(&m, &w.base, &g, "single", cfg->model, modes[i]);
            bad += rollout_case(&m, &w.base, &g, "padded", cfg->model, modes[i]);
        }
        w.base.lora_unfused = NULL;
        eng_lora_free(&lo);
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
    assert_int_not_equal(eng_weights_load(&w.base, &llama_model_family, GOLDEN "does-not-exist", ENG_F32, &err), BC_OK);
    assert_non_null(strstr(err.message, "does-not-exist"));
    assert_int_equal(eng_weights_validate(&llama_model_family, GOLDEN "qwen2_gqa4", &err), BC_OK);
}

/* The checkpoints and precisions; main runs each with every kernel family. */
static const golden_case_cfg cfgs[] = {
    {"llama_mha", "llama_mha", ENG_F32, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_F32, -1, 0},
    {"llama_gqa_llama3_v4", "llama_gqa_llama3", ENG_F32, -1, 0}, /* config.json in the 4.x spelling */
    {"qwen2_gqa4", "qwen2_gqa4", ENG_F32, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_F32, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_F32, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3_lora", ENG_F32, -1, 0}, /* + PEFT's adapter, fused and unfused */
    {"llama_gqa_llama3", "llama_gqa_llama3_lora", ENG_F16, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3_lora", ENG_BF16, -1, 0},
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
    {"llama_mha", "llama_mha", ENG_W8A8, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_W8A8, -1, 0},
    {"qwen2_gqa4", "qwen2_gqa4", ENG_W8A8, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_W8A8, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_W8A8, -1, 0},
    {"llama_mha", "llama_mha", ENG_I8, -1, 0},
    {"llama_gqa_llama3", "llama_gqa_llama3", ENG_I8, -1, 0},
    {"qwen2_gqa4", "qwen2_gqa4", ENG_I8, -1, 0},
    {"mistral_hd16", "mistral_hd16", ENG_I8, -1, 0},
    {"llama_gqa3_bias", "llama_gqa3_bias", ENG_I8, -1, 0},
};

#define N_CFGS (sizeof cfgs / sizeof cfgs[0])
#define N_ROLLOUT 7        /* the fp32 entries of cfgs come first (the adapter's last) */

int main(void) {
    return golden_main("test_llama_golden", cfgs, N_CFGS, N_ROLLOUT, test_golden, test_rollout_golden,
                       test_load_errors, "test_load_errors");
}
