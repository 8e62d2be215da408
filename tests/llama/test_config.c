/* test_config.c: the Llama family's config reader and presets
 * (plugins/llama/llama_config.c). The golden checkpoints' config.json and
 * generation_config.json as transformers 5.24 wrote them
 * (tests/llama/golden, tools/golden/make_llama_golden.py), the 4.x RoPE
 * spelling read to the same configuration as the 5.x one, each family's
 * biases and sliding window, generation_config.json's ids over
 * config.json's; refusals with the file and the key named; the presets'
 * shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bc_test_assert.h"
#include "llama_config.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/llama/golden/"

static void read_golden(const char *name, llama_config *c)
{
    bc_error err = {0};
    bc_status st = llama_config_read_dir(c, name, &err);
    if (st != BC_OK)
        fail_msg("%s: %s", name, err.message);
}

static void assert_shape(const eng_shape *s, int V, int C, int L, int H, int Hkv, int D, int F, int Tmax)
{
    assert_int_equal(s->vocab_size, V);
    assert_int_equal(s->hidden_size, C);
    assert_int_equal(s->n_layers, L);
    assert_int_equal(s->n_heads, H);
    assert_int_equal(s->n_kv_heads, Hkv);
    assert_int_equal(s->head_dim, D);
    assert_int_equal(s->ffn_size, F);
    assert_int_equal(s->max_positions, Tmax);
}

static void assert_ids(const eng_shape *s, int pad, int bos, int eos)
{
    assert_int_equal(s->pad_token_id, pad);
    assert_int_equal(s->bos_token_id, bos);
    assert_int_equal(s->eos_token_id, eos);
}

/* ---- the golden checkpoints -------------------------------------------- */

static void test_golden_llama_mha(void **state)
{
    (void)state;
    llama_config c;
    read_golden(GOLDEN "llama_mha", &c);
    assert_true((void *)&c == (void *)&c.shape);
    assert_int_equal(c.family, LLAMA_FAMILY_LLAMA);
    assert_shape(&c.shape, 160, 32, 2, 4, 4, 8, 64, 64);
    assert_ids(&c.shape, 0, 1, 2);
    assert_string_equal(c.shape.name, "llama_mha");
    assert_double_close(c.rms_norm_eps, 1e-6, 0.0);
    assert_double_close(c.rope_theta, 10000.0, 0.0);
    assert_int_equal(c.rope_scaling.type, ENG_ROPE_DEFAULT);
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(c.qkv_bias, 0);
    assert_int_equal(c.o_bias, 0);
    assert_int_equal(c.sliding_window, 0);
    for (int h = 0; h < 4; h++)
        assert_int_equal(eng_kv_head_of(&c.shape, h), h);
}

static void check_llama3(const llama_config *c)
{
    assert_int_equal(c->family, LLAMA_FAMILY_LLAMA);
    assert_shape(&c->shape, 128, 64, 2, 4, 2, 16, 64, 64);
    assert_ids(&c->shape, 2, 1, 2);
    assert_double_close(c->rms_norm_eps, 1e-5, 0.0);
    assert_double_close(c->rope_theta, 500000.0, 0.0);
    assert_int_equal(c->rope_scaling.type, ENG_ROPE_LLAMA3);
    assert_double_close(c->rope_scaling.factor, 8.0, 0.0);
    assert_double_close(c->rope_scaling.low_freq_factor, 1.0, 0.0);
    assert_double_close(c->rope_scaling.high_freq_factor, 4.0, 0.0);
    assert_int_equal(c->rope_scaling.original_positions, 8);
    assert_int_equal(c->tie_word_embeddings, 0);
    assert_int_equal(c->qkv_bias, 0);
    assert_int_equal(c->o_bias, 0);
    assert_int_equal(eng_kv_head_of(&c->shape, 0), 0);
    assert_int_equal(eng_kv_head_of(&c->shape, 1), 0);
    assert_int_equal(eng_kv_head_of(&c->shape, 2), 1);
    assert_int_equal(eng_kv_head_of(&c->shape, 3), 1);
}

static void test_golden_llama3_both_spellings(void **state)
{
    (void)state;
    llama_config v5, v4;
    read_golden(GOLDEN "llama_gqa_llama3", &v5);
    read_golden(GOLDEN "llama_gqa_llama3_v4/", &v4); /* a trailing slash: the name is still the last part */
    check_llama3(&v5);
    check_llama3(&v4);
    assert_string_equal(v5.shape.name, "llama_gqa_llama3");
    assert_string_equal(v4.shape.name, "llama_gqa_llama3_v4");
    memset(v4.shape.name, 0, sizeof v4.shape.name);
    memset(v5.shape.name, 0, sizeof v5.shape.name);
    assert_memory_equal(&v4, &v5, sizeof v4); /* memset(0) first by the reader: padding compares too */
}

static void test_golden_qwen2(void **state)
{
    (void)state;
    llama_config c;
    read_golden(GOLDEN "qwen2_gqa4", &c);
    assert_int_equal(c.family, LLAMA_FAMILY_QWEN2);
    assert_shape(&c.shape, 160, 64, 2, 8, 2, 8, 96, 64);
    assert_ids(&c.shape, 1, 2, 2); /* generation_config.json's eos [2, 1]: the first */
    assert_double_close(c.rope_theta, 1e6, 0.0);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(c.o_bias, 0);
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_int_equal(c.sliding_window, 0); /* use_sliding_window false */
    assert_int_equal(eng_kv_head_of(&c.shape, 3), 0);
    assert_int_equal(eng_kv_head_of(&c.shape, 4), 1);
}

static void test_golden_mistral(void **state)
{
    (void)state;
    llama_config c;
    read_golden(GOLDEN "mistral_hd16", &c);
    assert_int_equal(c.family, LLAMA_FAMILY_MISTRAL);
    assert_shape(&c.shape, 128, 48, 2, 4, 2, 16, 96, 64); /* head_dim 16, not 48 / 4 */
    assert_ids(&c.shape, 0, 1, 2);
    assert_int_equal(c.sliding_window, 32);
    assert_int_equal(c.qkv_bias, 0);
    assert_int_equal(c.tie_word_embeddings, 0);
    assert_double_close(c.rms_norm_eps, 1e-5, 0.0);
}

static void test_golden_llama_bias(void **state)
{
    (void)state;
    llama_config c;
    read_golden(GOLDEN "llama_gqa3_bias", &c);
    assert_int_equal(c.family, LLAMA_FAMILY_LLAMA);
    assert_shape(&c.shape, 96, 48, 2, 6, 2, 8, 64, 64);
    assert_ids(&c.shape, -1, 1, 2); /* "pad_token_id": null */
    assert_int_equal(c.qkv_bias, 1);  /* attention_bias true: q/k/v ... */
    assert_int_equal(c.o_bias, 1);    /* ... and o_proj */
    assert_int_equal(c.tie_word_embeddings, 1);
    assert_double_close(c.rope_theta, 100000.0, 0.0);
    for (int h = 0; h < 6; h++)
        assert_int_equal(eng_kv_head_of(&c.shape, h), h / 3);
}

static void test_missing_dir(void **state)
{
    (void)state;
    llama_config c;
    bc_error err = {0};
    assert_int_equal(llama_config_read_dir(&c, GOLDEN "no_such_model", &err), BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no_such_model/config.json"));
    /* a directory without config.json (the LoRA adapter's) */
    bc_error err2 = {0};
    assert_int_equal(llama_config_read_dir(&c, GOLDEN "llama_gqa_llama3_lora", &err2), BC_ERR_NOT_FOUND);
}

/* ---- from text ------------------------------------------------------------ */

#define BASE_KEYS                                                                                                \
    "\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "           \
    "\"intermediate_size\": 128, \"max_position_embeddings\": 32"

static bc_status parse(const char *json, const char *gen, llama_config *c, bc_error *err)
{
    memset(err, 0, sizeof *err);
    return llama_config_parse(c, json, "x/config.json", gen, "x/generation_config.json", err);
}

/* config.json = {"model_type": type, BASE_KEYS extra}; expects code and a message holding both needles. */
static void expect(const char *type, const char *extra, bc_status code, const char *needle1, const char *needle2)
{
    char json[2048];
    snprintf(json, sizeof json, "{\"model_type\": \"%s\", " BASE_KEYS "%s}", type, extra);
    llama_config c;
    bc_error err;
    bc_status st = parse(json, NULL, &c, &err);
    if (st != code)
        fail_msg("%s: status %d, expected %d (%s)", json, (int)st, (int)code, err.message);
    if (code == BC_OK)
        return;
    if (!strstr(err.message, "x/config.json") || !strstr(err.message, needle1) ||
        (needle2 && !strstr(err.message, needle2)))
        fail_msg("%s: message \"%s\" lacks the file, \"%s\" or \"%s\"", json, err.message, needle1,
                 needle2 ? needle2 : "");
}

static void test_defaults_and_keys(void **state)
{
    (void)state;
    llama_config c;
    bc_error err;
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS "}", NULL, &c, &err), BC_OK);
    assert_shape(&c.shape, 100, 64, 2, 4, 4, 16, 128, 32); /* Hkv = H, D = C / H */
    assert_ids(&c.shape, -1, -1, -1);
    assert_double_close(c.rms_norm_eps, 1e-6, 0.0);
    assert_double_close(c.rope_theta, 10000.0, 0.0);
    assert_int_equal(c.rope_scaling.type, ENG_ROPE_DEFAULT);
    assert_int_equal(c.tie_word_embeddings, 0);
    /* SmolLM2 writes an integer rope_theta; 4.x rope_scaling null */
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS
                           ", \"rope_theta\": 100000, \"rope_scaling\": null, \"attention_bias\": true}",
                           NULL, &c, &err),
                     BC_OK);
    assert_double_close(c.rope_theta, 100000.0, 0.0);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(c.o_bias, 1);
    /* the older 4.x key "type" for the rope type */
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS ", \"rope_scaling\": {\"type\": \"llama3\", "
                           "\"factor\": 32, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
                           "\"original_max_position_embeddings\": 8192}}",
                           NULL, &c, &err),
                     BC_OK);
    assert_int_equal(c.rope_scaling.type, ENG_ROPE_LLAMA3);
    assert_double_close(c.rope_scaling.factor, 32.0, 0.0);
    assert_int_equal(c.rope_scaling.original_positions, 8192);
    /* Qwen2 with use_sliding_window true keeps its window; Mistral's null is none */
    assert_int_equal(parse("{\"model_type\": \"qwen2\", " BASE_KEYS
                           ", \"use_sliding_window\": true, \"sliding_window\": 16}",
                           NULL, &c, &err),
                     BC_OK);
    assert_int_equal(c.sliding_window, 16);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(parse("{\"model_type\": \"mistral\", " BASE_KEYS ", \"sliding_window\": null}", NULL, &c, &err),
                     BC_OK);
    assert_int_equal(c.sliding_window, 0);
    /* generation_config.json's ids win over config.json's; an absent one keeps config.json's */
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS
                           ", \"pad_token_id\": 5, \"bos_token_id\": 6, \"eos_token_id\": 7}",
                           "{\"eos_token_id\": [9, 8], \"bos_token_id\": 3}", &c, &err),
                     BC_OK);
    assert_ids(&c.shape, 5, 3, 9);
}

static void test_refusals(void **state)
{
    (void)state;
    expect("opt", "", BC_ERR_UNSUPPORTED, "\"opt\"", "opt backend");
    expect("gemma", "", BC_ERR_UNSUPPORTED, "\"gemma\"", "llama, qwen2, mistral");
    expect("llama", ", \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1e4, \"factor\": 4}",
           BC_ERR_UNSUPPORTED, "\"yarn\"", "rope_parameters.rope_type");
    expect("llama", ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2}", BC_ERR_UNSUPPORTED,
           "\"linear\"", "rope_scaling.rope_type");
    expect("llama", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"low_freq_factor\": 1, "
                    "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8}",
           BC_ERR_FORMAT, "rope_scaling.factor", NULL);
    expect("llama", ", \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4, "
                    "\"high_freq_factor\": 1, \"original_max_position_embeddings\": 8}",
           BC_ERR_FORMAT, "high_freq_factor", NULL);
    expect("llama", ", \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
                    "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8.5}",
           BC_ERR_FORMAT, "original_max_position_embeddings", NULL);
    expect("llama", ", \"rope_parameters\": {\"rope_theta\": -1}", BC_ERR_FORMAT, "rope_parameters.rope_theta",
           NULL);
    expect("llama", ", \"rope_theta\": \"big\"", BC_ERR_FORMAT, "\"rope_theta\"", NULL);
    expect("llama", ", \"mlp_bias\": true", BC_ERR_UNSUPPORTED, "\"mlp_bias\"", NULL);
    expect("llama", ", \"attention_bias\": 1", BC_ERR_FORMAT, "\"attention_bias\"", "true or false");
    expect("llama", ", \"num_key_value_heads\": 3", BC_ERR_FORMAT, "\"num_key_value_heads\"", NULL);
    expect("llama", ", \"num_key_value_heads\": 0", BC_ERR_FORMAT, "\"num_key_value_heads\"", NULL);
    expect("llama", ", \"head_dim\": 15", BC_ERR_FORMAT, "head_dim", "even");
    expect("llama", ", \"head_dim\": \"16\"", BC_ERR_FORMAT, "\"head_dim\"", "integer");
    expect("llama", ", \"hidden_act\": \"gelu\"", BC_ERR_UNSUPPORTED, "\"hidden_act\"", "\"gelu\"");
    expect("llama", ", \"partial_rotary_factor\": 0.5", BC_ERR_UNSUPPORTED, "\"partial_rotary_factor\"", NULL);
    expect("llama", ", \"eos_token_id\": 100", BC_ERR_FORMAT, "\"eos_token_id\"", "vocab_size");
    expect("llama", ", \"eos_token_id\": []", BC_ERR_FORMAT, "\"eos_token_id\"", "empty");
    expect("llama", ", \"pad_token_id\": [1]", BC_ERR_FORMAT, "\"pad_token_id\"", NULL);
    expect("llama", ", \"rms_norm_eps\": 0", BC_ERR_FORMAT, "\"rms_norm_eps\"", NULL);
    expect("mistral", ", \"sliding_window\": \"4096\"", BC_ERR_FORMAT, "\"sliding_window\"", NULL);
    expect("qwen2", ", \"use_sliding_window\": \"yes\"", BC_ERR_FORMAT, "\"use_sliding_window\"", NULL);
    expect("qwen2", ", \"sliding_window\": \"ignored when off\"", BC_OK, "", NULL);

    llama_config c;
    bc_error err;
    /* required keys, one at a time */
    const char *keys[] = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "max_position_embeddings"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char json[1024] = "{\"model_type\": \"llama\"";
        for (size_t j = 0; j < sizeof keys / sizeof *keys; j++)
            if (j != i)
                snprintf(json + strlen(json), sizeof json - strlen(json), ", \"%s\": 64", keys[j]);
        strcat(json, "}");
        assert_int_equal(parse(json, NULL, &c, &err), BC_ERR_FORMAT);
        char want[128];
        snprintf(want, sizeof want, "x/config.json: \"%s\" is missing", keys[i]);
        assert_string_equal(err.message, want);
    }
    assert_int_equal(parse("{" BASE_KEYS "}", NULL, &c, &err), BC_ERR_FORMAT);
    assert_string_equal(err.message, "x/config.json: \"model_type\" is missing");
    assert_int_equal(parse("{\"model_type\": \"llama\", \"vocab_size\": \"100\"}", NULL, &c, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "\"vocab_size\" must be an integer"));
    assert_int_equal(parse("{\"model_type\": \"llama\", \"hidden_size\": 60, \"vocab_size\": 10, "
                           "\"num_hidden_layers\": 1, \"num_attention_heads\": 8, \"intermediate_size\": 8, "
                           "\"max_position_embeddings\": 8}",
                           NULL, &c, &err),
                     BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "no \"head_dim\""));
    assert_int_equal(parse("{\"model_type\": \"llama\",", NULL, &c, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "x/config.json: not valid JSON"));
    assert_int_equal(parse("[1, 2]", NULL, &c, &err), BC_ERR_FORMAT);
    assert_string_equal(err.message, "x/config.json: not a JSON object");
    assert_int_equal(parse("{\"model_type\": \"llama\", \"model_type\": \"qwen2\", " BASE_KEYS "}", NULL, &c, &err),
                     BC_ERR_FORMAT); /* duplicate keys refused */
    /* generation_config.json's errors name it */
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS "}", "{\"bos_token_id\": 1000}", &c, &err),
                     BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "x/generation_config.json: \"bos_token_id\""));
    assert_int_equal(parse("{\"model_type\": \"llama\", " BASE_KEYS "}", "{", &c, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "x/generation_config.json: not valid JSON"));
}

/* ---- presets ---------------------------------------------------------------- */

static void test_presets(void **state)
{
    (void)state;
    llama_config c;
    bc_error err = {0};
    int n = 0;
    for (const char *const *p = llama_preset_names; *p; p++, n++) {
        assert_int_equal(llama_config_preset(*p, &c, &err), BC_OK);
        assert_string_equal(c.shape.name, *p);
        assert_int_equal(c.shape.n_heads % c.shape.n_kv_heads, 0);
        assert_int_equal(c.tie_word_embeddings, 1);
    }
    assert_int_equal(n, 4);
    assert_int_equal(llama_config_preset("qwen2.5-0.5b", &c, &err), BC_OK);
    assert_int_equal(c.family, LLAMA_FAMILY_QWEN2);
    assert_shape(&c.shape, 151936, 896, 24, 14, 2, 64, 4864, 32768);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(eng_kv_head_of(&c.shape, 13), 1);
    assert_int_equal(llama_config_preset("qwen2.5-1.5b", &c, &err), BC_OK);
    assert_shape(&c.shape, 151936, 1536, 28, 12, 2, 128, 8960, 131072);
    assert_int_equal(llama_config_preset("llama-3.2-1b", &c, &err), BC_OK);
    assert_int_equal(c.family, LLAMA_FAMILY_LLAMA);
    assert_shape(&c.shape, 128256, 2048, 16, 32, 8, 64, 8192, 131072);
    assert_int_equal(c.rope_scaling.type, ENG_ROPE_LLAMA3);
    assert_double_close(c.rope_scaling.factor, 32.0, 0.0);
    assert_int_equal(c.rope_scaling.original_positions, 8192);
    assert_double_close(c.rope_theta, 500000.0, 0.0);
    assert_int_equal(c.qkv_bias, 0);
    assert_ids(&c.shape, -1, 128000, 128001);
    assert_int_equal(llama_config_preset("smollm2-135m", &c, &err), BC_OK);
    assert_shape(&c.shape, 49152, 576, 30, 9, 3, 64, 1536, 8192);
    assert_double_close(c.rope_theta, 100000.0, 0.0);
    assert_int_equal(llama_config_preset("gpt-5", &c, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "\"gpt-5\""));
    assert_non_null(strstr(err.message, "qwen2.5-0.5b"));
    assert_int_equal(llama_config_preset(NULL, &c, &err), BC_ERR_SETTING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_llama_mha),
        cmocka_unit_test(test_golden_llama3_both_spellings),
        cmocka_unit_test(test_golden_qwen2),
        cmocka_unit_test(test_golden_mistral),
        cmocka_unit_test(test_golden_llama_bias),
        cmocka_unit_test(test_missing_dir),
        cmocka_unit_test(test_defaults_and_keys),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_presets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
