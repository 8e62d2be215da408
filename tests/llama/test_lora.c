/* test_lora.c: LoRA on the Llama family (engine/weights/lora.c with
 * plugins/llama's modules): the module names and their [out, in] with
 * grouped-query heads, a synthetic adapter on every module applied unfused
 * in the forward against the same adapter fused into the weights, on a
 * Qwen2 checkpoint (q/k/v biases), a Llama one and a Mistral one (q/k/v in
 * one GEMM; a synthetic Qwen2 shape with three GEMMs and gate/up apart),
 * fuse + unfuse with restore giving the base weights back bit for bit, and
 * the refusals (another family's modules, an OPT adapter, a shape the
 * adapter was not made for). The fused adapter against PEFT's merged model
 * is test_golden.c's.
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

#include "forward.h"
#include "llama_model.h"
#include "lora.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/llama/golden/"

/* unfused vs fused fp32 logits: max |diff| / max |logit| (measured 2e-7 to
 * 4.3e-7 on these models; the test prints them). */
#define UNFUSED_TOL 1e-5

/* A Qwen2 shape whose q/k/v and gate/up sizes break the arena's 64-byte
 * alignment, so the forward runs them as separate GEMMs. */
static const char k_split_config[] =
    "{\"model_type\": \"qwen2\", \"architectures\": [\"Qwen2ForCausalLM\"], \"vocab_size\": 64, "
    "\"hidden_size\": 18, \"num_hidden_layers\": 2, \"num_attention_heads\": 3, \"num_key_value_heads\": 1, "
    "\"intermediate_size\": 20, \"max_position_embeddings\": 32, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, "
    "\"tie_word_embeddings\": false, \"bos_token_id\": 1, \"eos_token_id\": 2}";

static void load(llama_weights *w, const char *model) {
    if (!strcmp(model, "split")) { /* synthetic weights on k_split_config */
        llama_config cfg;
        bc_error err = {0};
        if (llama_config_parse(&cfg, k_split_config, "split config", NULL, NULL, &err) != BC_OK ||
            eng_weights_synthetic(&w->base, &llama_model_family, &cfg, ENG_F32, 11, &err) != BC_OK)
            fail_msg("%s", err.message);
        return;
    }
    char dir[512];
    snprintf(dir, sizeof dir, GOLDEN "%s", model);
    bc_error err = {0};
    if (eng_weights_load(&w->base, &llama_model_family, dir, ENG_F32, &err) != BC_OK) fail_msg("%s", err.message);
}

/* logits[B, T, V] of a fixed batch on w. */
static void prefill_logits(llama_weights *w, int B, int T, float *logits) {
    eng_model m;
    eng_kv_cache kv;
    bc_error err = {0};
    if (eng_model_init(&m, &w->base, 2, &err) != BC_OK) fail_msg("%s", err.message);
    if (eng_kv_cache_alloc(&kv, &w->base.shape, ENG_F32, B, T, &err) != BC_OK) fail_msg("%s", err.message);
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)B * T);
    uint8_t *mask = malloc((size_t)B * T);
    assert_non_null(tokens);
    assert_non_null(mask);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)((i * 37 + 5) % w->base.shape.vocab_size), mask[i] = 1;
    if (eng_forward(&m, &kv, tokens, mask, T, B, T, ENG_LOGITS_ALL, logits, &err) != BC_OK)
        fail_msg("%s", err.message);
    free(tokens);
    free(mask);
    eng_kv_cache_free(&kv);
    eng_model_free(&m);
}

static void test_modules(void **state) {
    (void)state;
    llama_weights w;
    load(&w, "qwen2_gqa4");
    const eng_shape *s = &w.cfg.shape;
    bc_error err = {0};
    unsigned t;
    assert_int_equal(eng_lora_targets_parse(&llama_model_family, "o_proj,down_proj", &t, &err), BC_OK);
    assert_int_equal(t, (1u << LLAMA_LORA_O) | (1u << LLAMA_LORA_DOWN));
    assert_int_equal(eng_lora_targets_parse(&llama_model_family, "all", &t, &err), BC_OK);
    assert_int_equal(t, (1u << LLAMA_LORA_N_MODULES) - 1);
    eng_lora lo;
    if (eng_lora_synthetic(&lo, &llama_model_family, s, 4, 8.0, t, 3, &err) != BC_OK) fail_msg("%s", err.message);
    assert_true(s->n_kv_heads < s->n_heads); /* grouped-query: k and v are narrower than q */
    for (int m = 0; m < LLAMA_LORA_N_MODULES; m++) {
        const eng_lora_pair *pr = &lo.pairs[ENG_LORA_MAX_MODULES + m]; /* layer 1 */
        const eng_matrix *W = eng_weights_lora_matrix(&w.base, 1, m);
        assert_non_null(pr->A);
        assert_int_equal(pr->out, W->rows);
        assert_int_equal(pr->in, W->cols);
    }
    assert_int_equal(lo.pairs[LLAMA_LORA_K].out, s->n_kv_heads * s->head_dim);
    assert_int_equal(lo.pairs[LLAMA_LORA_DOWN].in, s->ffn_size);
    eng_lora_free(&lo);
    eng_weights_free(&w.base);
}

/* Every module, unfused against fused, and restore bit for bit. */
static void unfused_matches_fused(const char *model) {
    llama_weights w;
    load(&w, model);
    const eng_shape *s = &w.cfg.shape;
    const llama_layer *l0 = &w.layers[0];
    const int one_qkv = (const char *)l0->k_proj.data == (const char *)l0->q_proj.data + l0->q_proj.rows *
                                                                                             (size_t)l0->q_proj.cols *
                                                                                             sizeof(float);
    const size_t gate_bytes = (size_t)l0->gate_proj.rows * (size_t)l0->gate_proj.cols * sizeof(float);
    const int one_gate_up = (const char *)l0->up_proj.data == (const char *)l0->gate_proj.data + gate_bytes;
    if (!strcmp(model, "split")) assert_false(one_qkv || one_gate_up); /* the separate GEMMs' paths */
    bc_error err = {0};
    eng_lora lo;
    if (eng_lora_synthetic(&lo, &llama_model_family, s, 4, 8.0, (1u << LLAMA_LORA_N_MODULES) - 1, 5, &err) != BC_OK)
        fail_msg("%s", err.message);
    lo.restore = 1;
    const int B = 2, T = 5;
    const size_t n = (size_t)B * T * s->vocab_size, wbytes = w.base.arena_bytes;
    float *base = malloc(n * sizeof *base), *unfused = malloc(n * sizeof *unfused), *fused = malloc(n * sizeof *fused);
    void *before = malloc(wbytes);
    assert_true(base && unfused && fused && before);
    memcpy(before, w.base.arena, wbytes);
    prefill_logits(&w, B, T, base);
    w.base.lora_unfused = &lo;
    prefill_logits(&w, B, T, unfused);
    w.base.lora_unfused = NULL;
    if (eng_lora_fuse(&lo, &w.base, NULL, &err) != BC_OK) fail_msg("%s", err.message);
    prefill_logits(&w, B, T, fused);
    if (eng_lora_unfuse(&lo, &w.base, NULL, &err) != BC_OK) fail_msg("%s", err.message);
    double top = 0.0, diff = 0.0, moved = 0.0;
    for (size_t i = 0; i < n; i++) {
        top = fmax(top, fabs(fused[i]));
        const double d = fabs((double)unfused[i] - fused[i]);
        if (!(d <= diff)) diff = d; /* a NaN lands here and stays */
        moved = fmax(moved, fabs((double)fused[i] - base[i]));
    }
    print_message("  %s (q/k/v in %s): unfused vs fused max |diff| / max |logit| %.3g (tolerance %.0e); the adapter "
                  "moves the logits by %.3g of %.3g\n",
                  model, one_qkv ? "one GEMM" : "three GEMMs", diff / top, UNFUSED_TOL, moved, top);
    assert_true(top > 0.0);
    assert_true(diff / top <= UNFUSED_TOL);
    assert_true(moved > 100.0 * UNFUSED_TOL * top); /* the adapter does something the comparison can see */
    assert_memory_equal(before, w.base.arena, wbytes); /* restore: the base weights bit for bit */
    free(base);
    free(unfused);
    free(fused);
    free(before);
    eng_lora_free(&lo);
    eng_weights_free(&w.base);
}

static void test_unfused_qwen2(void **state) {
    (void)state;
    unfused_matches_fused("qwen2_gqa4");
}
static void test_unfused_llama(void **state) {
    (void)state;
    unfused_matches_fused("llama_gqa3_bias");
}
static void test_unfused_mistral(void **state) {
    (void)state;
    unfused_matches_fused("mistral_hd16");
}
static void test_unfused_split(void **state) {
    (void)state;
    unfused_matches_fused("split");
}

static void test_refusals(void **state) {
    (void)state;
    llama_weights w;
    load(&w, "llama_gqa_llama3");
    bc_error err = {0};
    unsigned t;
    assert_int_equal(eng_lora_targets_parse(&llama_model_family, "q_proj,fc1", &t, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "fc1"));
    assert_int_equal(eng_lora_targets_parse(&llama_model_family, "out_proj", &t, &err), BC_ERR_SETTING);
    eng_lora lo;
    /* an OPT adapter: its modules (out_proj, fc1, fc2) are not a llama layer's */
    assert_int_equal(eng_lora_load_peft(&lo, &llama_model_family, BENCHCTL_SOURCE_DIR "/tests/opt/golden/preln_lora",
                                        &w.cfg.shape, &err),
                     BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "target_modules"));
    /* the llama adapter on a shape it was not made for: shapes named */
    llama_weights q;
    load(&q, "qwen2_gqa4");
    assert_int_not_equal(q.cfg.shape.ffn_size, w.cfg.shape.ffn_size);
    assert_int_equal(eng_lora_load_peft(&lo, &llama_model_family, GOLDEN "llama_gqa_llama3_lora", &q.cfg.shape, &err),
                     BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "shape must be"));
    eng_weights_free(&q.base);
    /* and the right one loads */
    assert_int_equal(eng_lora_load_peft(&lo, &llama_model_family, GOLDEN "llama_gqa_llama3_lora", &w.cfg.shape, &err),
                     BC_OK);
    assert_int_equal(lo.rank, 4);
    assert_true(fabsf(lo.scale - 2.0f) == 0.0f); /* alpha 8 / r 4 */
    eng_lora_free(&lo);
    eng_weights_free(&w.base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modules),        cmocka_unit_test(test_unfused_qwen2),
        cmocka_unit_test(test_unfused_llama),  cmocka_unit_test(test_unfused_mistral),
        cmocka_unit_test(test_unfused_split),  cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
