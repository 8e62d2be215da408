/* test_refit.c: refit (eng_weights_refit over a set of tensors, the
 * loader's walk and conversion) against a fresh load of the same weights,
 * both families (the OPT preln and hd80 golden checkpoints, Qwen2 gqa4),
 * float32, bfloat16 and int8:
 *   - host source, synthetic: engine weights of seed 1 refit with the
 *     float32 export of seed 2 (eng_weights_export) hold the tensors of a
 *     fresh load of that export written as a checkpoint (in float32: of
 *     fresh synthetic weights of seed 2), and greedy rollouts give its
 *     tokens (and not seed 1's);
 *   - checkpoint source: synthetic weights refit from a checkpoint
 *     directory (through its readers) hold the arena of a fresh load of it;
 *     the same from a host copy of it (eng_ck_host_copy); hd80 is stored
 *     in BF16 (the source's dtype converted, not only float32's);
 *   - a set of another shape is refused naming the tensor.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckpt_export.h"
#include "ckpt_host.h"
#include "device.h"
#include "family.h"
#include "llama_model.h"
#include "opt_model.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/"

static const struct {
    const eng_family *fam;
    const char *model;
} models[] = {
    {&opt_family, "opt/golden/preln"},
    {&opt_family, "opt/golden/hd80"},
    {&llama_model_family, "llama/golden/qwen2_gqa4"},
};
#define N_MODELS (sizeof models / sizeof models[0])
static const eng_dtype dtypes[] = {ENG_F32, ENG_BF16, ENG_I8};

static void dir_of(char *dir, size_t n, const char *model) { snprintf(dir, n, GOLDEN "%s", model); }

static void *config_of(const eng_family *fam, const char *model) {
    char dir[512];
    dir_of(dir, sizeof dir, model);
    void *hp = calloc(1, fam->hparams_size);
    bc_error err = {0};
    assert_non_null(hp);
    if (fam->config(dir, hp, &err) != BC_OK) fail_msg("%s: %s", dir, err.message);
    return hp;
}

static eng_weights *synthetic(const eng_family *fam, const void *hp, eng_dtype dt, uint64_t seed) {
    eng_weights *w = calloc(1, fam->weights_size);
    bc_error err = {0};
    assert_non_null(w);
    if (eng_weights_synthetic(w, fam, hp, dt, seed, &err) != BC_OK) fail_msg("synthetic: %s", err.message);
    return w;
}

static eng_weights *loaded(const eng_family *fam, const char *model, eng_dtype dt) {
    char dir[512];
    dir_of(dir, sizeof dir, model);
    eng_weights *w = calloc(1, fam->weights_size);
    bc_error err = {0};
    assert_non_null(w);
    if (eng_weights_load(w, fam, dir, dt, &err) != BC_OK) fail_msg("load %s: %s", dir, err.message);
    return w;
}

static void drop(eng_weights *w) {
    eng_weights_free(w);
    free(w);
}

/* A greedy rollout of 2 synthetic prompts of 5 tokens, 8 tokens each, on
 * w: its tokens, then its log-probabilities as int32 bits, tokens[2 * 16]
 * (synthetic weights of another seed may choose the same tokens; their
 * log-probabilities differ). */
static void greedy(const eng_weights *w, int32_t *tokens) {
    eng_model m;
    bc_error err = {0};
    assert_int_equal(eng_model_init(&m, w, 2, &err), BC_OK);
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 1, .prompt_length = 5, .response_length = 8,
                            .sampling = {0.0, 1.0, 0, 3}};
    eng_rollout ro;
    assert_int_equal(eng_rollout_init(&ro, &w->shape, &p, &err), BC_OK);
    assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
    if (eng_rollout_generate(&ro, &m, &err) != BC_OK) fail_msg("generate: %s", err.message);
    for (int r = 0; r < 2; r++) memcpy(tokens + 8 * r, ro.seq + (size_t)r * ro.Stot + ro.Tp, 8 * sizeof(int32_t));
    memcpy(tokens + 16, ro.logprobs, 16 * sizeof(float));
    eng_cpu_rollout_free(&ro, &m);
    eng_model_free(&m);
}

/* w's tensors equal fresh's, byte for byte, and so do their greedy tokens. */
static void assert_same_weights(const eng_weights *w, const eng_weights *fresh) {
    assert_int_equal(w->arena_bytes, fresh->arena_bytes);
    assert_true(eng_weights_same(w, fresh));
    int32_t a[32], b[32];
    greedy(w, a);
    greedy(fresh, b);
    assert_memory_equal(a, b, sizeof a);
}

static eng_weights *loaded_dir(const eng_family *fam, const char *dir, eng_dtype dt) {
    eng_weights *w = calloc(1, fam->weights_size);
    bc_error err = {0};
    assert_non_null(w);
    if (eng_weights_load(w, fam, dir, dt, &err) != BC_OK) fail_msg("load %s: %s", dir, err.message);
    return w;
}

static void test_refit_host_synthetic(void **state) {
    (void)state;
    bc_error err = {0};
    for (size_t i = 0; i < N_MODELS; i++) {
        void *hp = config_of(models[i].fam, models[i].model);
        eng_weights *f32 = synthetic(models[i].fam, hp, ENG_F32, 2);
        eng_ck_set host;
        assert_int_equal(eng_weights_export(f32, &host, "host weights (test)", &err), BC_OK);
        char dir[] = "/tmp/bc_refit_XXXXXX";
        assert_non_null(mkdtemp(dir));
        char config[512];
        snprintf(config, sizeof config, GOLDEN "%s/config.json", models[i].model);
        write_checkpoint(dir, &host, config);
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            eng_weights *w = synthetic(models[i].fam, hp, dtypes[d], 1);
            /* a fresh engine on the host weights: their checkpoint loaded (in
             * float32 also seed 2's synthetic weights themselves; in bf16 and
             * int8 OPT's synthetic fc2 bias is derived from the rounded fc2) */
            eng_weights *fresh = loaded_dir(models[i].fam, dir, dtypes[d]);
            if (dtypes[d] == ENG_F32) assert_true(eng_weights_same(fresh, f32));
            int32_t before[32], after[32];
            greedy(w, before);
            if (eng_weights_refit(w, &host, &err) != BC_OK) fail_msg("refit: %s", err.message);
            greedy(w, after);
            assert_memory_not_equal(before, after, sizeof before); /* other weights, other tokens */
            assert_same_weights(w, fresh);
            assert_int_equal(eng_weights_loaded_bytes(w), eng_weights_loaded_bytes(fresh));
            assert_true(eng_weights_loaded_bytes(w) <= w->arena_bytes);
            drop(w);
            drop(fresh);
        }
        assert_true(eng_ck_set_bytes(&host) > 0);
        eng_ck_set_close(&host);
        remove_checkpoint(dir);
        drop(f32);
        free(hp);
    }
}

static void test_refit_checkpoint(void **state) {
    (void)state;
    bc_error err = {0};
    for (size_t i = 0; i < N_MODELS; i++) {
        char dir[512];
        dir_of(dir, sizeof dir, models[i].model);
        void *hp = config_of(models[i].fam, models[i].model);
        eng_ck_set files, copy;
        assert_int_equal(eng_ck_set_open_dir(&files, dir, &err), BC_OK);
        assert_int_equal(eng_ck_host_copy(&copy, &files, "host copy (test)", &err), BC_OK);
        assert_int_equal(eng_ck_set_bytes(&copy), eng_ck_set_bytes(&files));
        eng_ck_set_close(&files);
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            eng_weights *fresh = loaded(models[i].fam, models[i].model, dtypes[d]);
            /* from the files */
            eng_weights *w = synthetic(models[i].fam, hp, dtypes[d], 5);
            int32_t before[32], after[32];
            greedy(w, before);
            uint64_t bytes = 0;
            if (eng_weights_refit_dir(w, dir, &bytes, &err) != BC_OK) fail_msg("refit %s: %s", dir, err.message);
            assert_int_equal(bytes, eng_ck_set_bytes(&copy));
            greedy(w, after);
            assert_memory_not_equal(before, after, sizeof before);
            assert_same_weights(w, fresh);
            drop(w);
            /* from the host copy */
            w = synthetic(models[i].fam, hp, dtypes[d], 5);
            if (eng_weights_refit(w, &copy, &err) != BC_OK) fail_msg("refit host copy: %s", err.message);
            assert_same_weights(w, fresh);
            drop(w);
            drop(fresh);
        }
        eng_ck_set_close(&copy);
        free(hp);
    }
}

static void test_refit_refuses_other_shape(void **state) {
    (void)state;
    bc_error err = {0};
    void *preln = config_of(&opt_family, "opt/golden/preln");
    eng_weights *w = synthetic(&opt_family, preln, ENG_F32, 1);
    char dir[512];
    dir_of(dir, sizeof dir, "opt/golden/hd80"); /* another shape of the same family */
    assert_int_equal(eng_weights_refit_dir(w, dir, NULL, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "tensor '"));
    assert_non_null(strstr(err.message, "shape"));
    drop(w);
    free(preln);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refit_host_synthetic),
        cmocka_unit_test(test_refit_checkpoint),
        cmocka_unit_test(test_refit_refuses_other_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
