/* test_lora.c: LoRA adapters fused into and unfused from the OPT engine's
 * weights (engine/weights/lora.c), on the golden preln checkpoint
 * (tests/opt/golden/preln; C 64, F 128, 2 layers) with a synthetic adapter
 * on every module:
 *   - fuse gives W + s B A (computed here in double) to the dtype's rounding;
 *   - the same bits whatever the thread count;
 *   - unfuse brings W back: by subtraction, the drift after 1 and 100
 *     fuse/unfuse cycles in fp32, fp16 and bf16 is printed and held to the
 *     bounds docs/opt.md states; with restore, bit for bit;
 *   - bad settings and adapter files are refused, naming them;
 *   - unfused (the adapter applied in the forward, lora_mode = "unfused"),
 *     the logits match the fused model's in fp32 to 1e-4 of their largest
 *     magnitude (the two differ only in where the rounding falls), and
 *     differ from the base model's.
 * Logits against transformers + PEFT's merged model: test_golden.c. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../core/bc_test_assert.h"

#include "forward.h"
#include "lora.h"
#include "../golden/poisoned_adapter.h"
#include "opt_model.h"

#define PRELN BENCHCTL_SOURCE_DIR "/tests/opt/golden/preln"

static opt_weights load(eng_dtype dt) {
    opt_weights w;
    bc_error err;
    if (opt_weights_load_checkpoint(&w, PRELN, dt, &err) != BC_OK) fail_msg("%s", err.message);
    return w;
}

static eng_lora synthetic(const opt_weights *w, int rank, unsigned targets) {
    eng_lora lo;
    bc_error err;
    if (eng_lora_synthetic(&lo, &opt_family, &w->hp.s, rank, 2.0 * rank, targets, 7, &err) != BC_OK)
        fail_msg("%s", err.message);
    return lo;
}

static double elem(const eng_matrix *m, size_t i) {
    if (m->dtype == ENG_F32) return ((const float *)m->data)[i];
    uint16_t h = ((const uint16_t *)m->data)[i];
    return m->dtype == ENG_F16 ? prec_f16_to_f32(h) : prec_bf16_to_f32(h);
}

static eng_matrix *target(opt_weights *w, int l, int m) {
    opt_layer_weights *ly = &w->layers[l];
    eng_matrix *mats[] = {&ly->q_proj, &ly->k_proj, &ly->v_proj, &ly->out_proj, &ly->fc1, &ly->fc2};
    return mats[m];
}

/* fused == base + s B A (double) within the dtype's rounding (half an ulp
 * of the result, plus the fp32 sum's error), and the adapter moves weights. */
static void check_fused(eng_dtype dt) {
    opt_weights base = load(dt), w = load(dt);
    eng_lora lo = synthetic(&w, 4, (1u << OPT_LORA_N_MODULES) - 1);
    bc_error err;
    assert_int_equal(eng_lora_fuse(&lo, &w.base, NULL, &err), BC_OK);
    const double half_ulp = dt == ENG_F32 ? 0x1p-24 : dt == ENG_F16 ? 0x1p-11 : 0x1p-8;
    double worst = 0, moved = 0;
    for (int l = 0; l < lo.n_layers; l++)
        for (int m = 0; m < OPT_LORA_N_MODULES; m++) {
            const eng_lora_pair *pr = &lo.pairs[l * ENG_LORA_MAX_MODULES + m];
            const eng_matrix *W0 = target(&base, l, m), *W1 = target(&w, l, m);
            for (int o = 0; o < pr->out; o++)
                for (int i = 0; i < pr->in; i++) {
                    double d = 0, dabs = 0;
                    for (int k = 0; k < lo.rank; k++) {
                        double t = (double)pr->B[(size_t)o * lo.rank + k] * pr->A[(size_t)k * pr->in + i];
                        d += t;
                        dabs += fabs(t);
                    }
                    size_t at = (size_t)o * pr->in + i;
                    double ref = elem(W0, at) + lo.scale * d, got = elem(W1, at);
                    /* rounding to the dtype, plus the fp32 sum of rank terms and the fp32 addition */
                    double tol = half_ulp * fabs(ref) + 0x1p-23 * (lo.rank + 2) * lo.scale * dabs + 0x1p-24 * fabs(ref) +
                                 (dt == ENG_F16 ? 0x1p-25 : 0) /* fp16 subnormals: fixed spacing 2^-24 */ + 1e-30;
                    if (fabs(got - ref) / tol > worst) worst = fabs(got - ref) / tol;
                    if (fabs(got - elem(W0, at)) > moved) moved = fabs(got - elem(W0, at));
                }
        }
    print_message("  %s: fused vs W + sBA (double): worst error %.3g of its bound; largest change %.3g\n",
                  eng_dtype_name(dt), worst, moved);
    assert_true(worst <= 1.0);
    assert_true(moved > 1e-2); /* the adapter is not a no-op */
    eng_lora_free(&lo);
    opt_weights_free(&base);
    opt_weights_free(&w);
}

static void test_fuse_matches_reference(void **state) {
    (void)state;
    check_fused(ENG_F32);
    check_fused(ENG_F16);
    check_fused(ENG_BF16);
}

static void test_threads_give_the_same_bits(void **state) {
    (void)state;
    opt_weights a = load(ENG_F32), b = load(ENG_F32);
    eng_lora lo = synthetic(&a, 8, (1u << OPT_LORA_FC1) | (1u << OPT_LORA_Q));
    eng_pool *pool = eng_pool_create(3);
    assert_non_null(pool);
    bc_error err;
    assert_int_equal(eng_lora_fuse(&lo, &a.base, NULL, &err), BC_OK);
    assert_int_equal(eng_lora_fuse(&lo, &b.base, pool, &err), BC_OK);
    assert_int_equal(a.base.arena_bytes, b.base.arena_bytes);
    assert_memory_equal(a.base.arena, b.base.arena, a.base.arena_bytes);
    eng_pool_destroy(pool);
    eng_lora_free(&lo);
    opt_weights_free(&a);
    opt_weights_free(&b);
}

/* Drift of the targets after n fuse/unfuse cycles: the largest |w_n - w_0|
 * over max |w_0|, and the share of elements whose bits changed. */
static void drift(eng_dtype dt, int cycles, int restore, double *rel, double *changed) {
    opt_weights base = load(dt), w = load(dt);
    eng_lora lo = synthetic(&w, 8, (1u << OPT_LORA_N_MODULES) - 1);
    lo.restore = restore;
    bc_error err;
    for (int c = 0; c < cycles; c++) {
        assert_int_equal(eng_lora_fuse(&lo, &w.base, NULL, &err), BC_OK);
        assert_int_equal(eng_lora_unfuse(&lo, &w.base, NULL, &err), BC_OK);
    }
    double worst = 0, scale = 0;
    size_t n = 0, diff = 0;
    const size_t es = eng_dtype_size(dt);
    for (int l = 0; l < lo.n_layers; l++)
        for (int m = 0; m < OPT_LORA_N_MODULES; m++) {
            const eng_matrix *W0 = target(&base, l, m), *W1 = target(&w, l, m);
            for (size_t i = 0; i < (size_t)W0->rows * W0->cols; i++) {
                double a = elem(W0, i), b = elem(W1, i);
                if (fabs(a) > scale) scale = fabs(a);
                if (fabs(a - b) > worst) worst = fabs(a - b);
                diff += memcmp((const char *)W0->data + i * es, (const char *)W1->data + i * es, es) != 0;
                n++;
            }
        }
    *rel = worst / scale;
    *changed = (double)diff / (double)n;
    eng_lora_free(&lo);
    opt_weights_free(&base);
    opt_weights_free(&w);
}

static void test_unfuse_drift(void **state) {
    (void)state;
    static const struct {
        eng_dtype dt;
        double bound_1, bound_100; /* max |w_n - w_0| / max |w_0|, documented in docs/opt.md */
    } cases[] = {{ENG_F32, 1e-6, 1e-5}, {ENG_F16, 2e-3, 2e-2}, {ENG_BF16, 2e-2, 1e-1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double r1, c1, r100, c100;
        drift(cases[i].dt, 1, 0, &r1, &c1);
        drift(cases[i].dt, 100, 0, &r100, &c100);
        print_message("  %s: after 1 cycle max drift %.3g of max |w|, %.2f%% of elements changed; after 100: %.3g, "
                      "%.2f%%\n",
                      eng_dtype_name(cases[i].dt), r1, 100 * c1, r100, 100 * c100);
        assert_true(r1 <= cases[i].bound_1);
        assert_true(r100 <= cases[i].bound_100);
    }
}

/* lora_unfuse = restore: the base weights come back bit for bit, 100 times. */
static void test_unfuse_restore_is_exact(void **state) {
    (void)state;
    const eng_dtype dts[] = {ENG_F32, ENG_F16, ENG_BF16};
    for (size_t i = 0; i < 3; i++) {
        double rel, changed;
        drift(dts[i], 100, 1, &rel, &changed);
        assert_true(rel == 0.0);
        assert_true(changed == 0.0);
    }
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_refusals(void **state) {
    (void)state;
    bc_error err;
    unsigned t;
    assert_int_equal(eng_lora_targets_parse(&opt_family, "q_proj,fc2", &t, &err), BC_OK);
    assert_int_equal(t, (1u << OPT_LORA_Q) | (1u << OPT_LORA_FC2));
    assert_int_equal(eng_lora_targets_parse(&opt_family, "q_proj,lm_head", &t, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "lm_head"));
    assert_int_equal(eng_lora_targets_parse(&opt_family, "", &t, &err), BC_ERR_SETTING);
    opt_hparams hp;
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    eng_lora lo;
    assert_int_equal(eng_lora_synthetic(&lo, &opt_family, &hp.s, 0, 16, 1, 1, &err), BC_ERR_SETTING);
    assert_int_equal(eng_lora_synthetic(&lo, &opt_family, &hp.s, 4, -1, 1, 1, &err), BC_ERR_SETTING);

    char dir[] = "/tmp/bc_lora.XXXXXX", cfg[64];
    assert_non_null(mkdtemp(dir));
    snprintf(cfg, sizeof cfg, "%s/adapter_config.json", dir);
    assert_int_equal(eng_lora_load_peft(&lo, &opt_family, dir, &hp.s, &err), BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "adapter_config.json"));
    static const struct {
        const char *json, *word;
        bc_status code;
    } bad[] = {
        {"{\"r\": 0, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"]}", "\"r\"", BC_ERR_FORMAT},
        {"{\"r\": 4, \"target_modules\": [\"q_proj\"]}", "lora_alpha", BC_ERR_FORMAT},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": \"q_proj|v_proj\"}", "target_modules", BC_ERR_UNSUPPORTED},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"lm_head\"]}", "target_modules[0]", BC_ERR_UNSUPPORTED},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"], \"use_dora\": true}", "use_dora",
         BC_ERR_UNSUPPORTED},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"], \"bias\": \"all\"}", "bias",
         BC_ERR_UNSUPPORTED},
        {"{\"r\": 4, \"lora_alpha\": 1e308, \"target_modules\": [\"q_proj\"]}", "\"lora_alpha\" = 1e+308 is outside (0, 1e+06]",
         BC_ERR_FORMAT},
        {"{\"r\": 4, \"lora_alpha\": -2, \"target_modules\": [\"q_proj\"]}", "\"lora_alpha\" = -2 is outside", BC_ERR_FORMAT},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"], \"bias\": \"none\"}", "adapter_model",
         BC_OK}, /* no adapter_model.safetensors: the safetensors reader's error, whichever code it gives */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(cfg, bad[i].json);
        bc_status st = eng_lora_load_peft(&lo, &opt_family, dir, &hp.s, &err);
        if (bad[i].code != BC_OK) assert_int_equal(st, bad[i].code);
        else assert_int_not_equal(st, BC_OK);
        if (!strstr(err.message, bad[i].word)) fail_msg("\"%s\" lacks \"%s\"", err.message, bad[i].word);
    }
    unlink(cfg);
    rmdir(dir);
    /* values: lora_alpha 1e308 (its scale would be an infinite float), a NaN in
     * one lora_A element and an Inf in a lora_B are refused, naming the file
     * and the tensor */
    {
        opt_weights golden = load(ENG_F32);
        char poisoned[64];
        static const struct {
            const char *tensor, *alpha, *message;
            uint32_t bits;
        } poison[] = {
            {NULL, "1e308", "\"lora_alpha\" = 1e+308 is outside (0, 1e+06]", 0},
            {"base_model.model.model.decoder.layers.1.self_attn.q_proj.lora_A.weight", NULL, "tensor base_model.model.model.decoder.layers.1.self_attn.q_proj.lora_A.weight: element 5 (row 0, column 5) is NaN", 0x7fc00000u},
            {"base_model.model.model.decoder.layers.0.fc2.lora_B.weight", NULL, "tensor base_model.model.model.decoder.layers.0.fc2.lora_B.weight: element 3 (row 0, column 3) is infinite", 0x7f800000u},
            {"base_model.model.model.decoder.layers.0.fc2.lora_B.weight", NULL, "is infinite", 0xff800000u},
        };
        for (size_t i = 0; i < sizeof poison / sizeof poison[0]; i++) {
            assert_true(bc_poisoned_adapter(PRELN "_lora", poison[i].tensor, i == 1 ? 5 : 3, poison[i].bits, poison[i].alpha, poisoned));
            eng_lora pl;
            assert_int_equal(eng_lora_load_peft(&pl, &opt_family, poisoned, &golden.hp.s, &err), BC_ERR_FORMAT);
            if (!strstr(err.message, poison[i].message)) fail_msg("'%s' lacks '%s'", err.message, poison[i].message);
            if (!strstr(err.message, poisoned)) fail_msg("'%s' does not name the file", err.message);
            bc_poisoned_adapter_remove(poisoned);
        }
        /* the unpoisoned copy loads */
        assert_true(bc_poisoned_adapter(PRELN "_lora", NULL, 0, 0, NULL, poisoned));
        eng_lora pl;
        assert_int_equal(eng_lora_load_peft(&pl, &opt_family, poisoned, &golden.hp.s, &err), BC_OK);
        eng_lora_free(&pl);
        bc_poisoned_adapter_remove(poisoned);
        opt_weights_free(&golden);
    }
}

/* logits[B, T, V] of a prefill of B rows of T tokens (no padding) on w. */
static void prefill_logits(const opt_weights *w, int B, int T, float *logits) {
    bc_error err;
    eng_model m;
    eng_kv_cache kv;
    if (eng_model_init(&m, &w->base, 1, &err) != BC_OK) fail_msg("%s", err.message);
    if (eng_kv_cache_alloc(&kv, &w->hp.s, w->base.dtype, B, T, &err) != BC_OK) fail_msg("%s", err.message);
    int32_t *tokens = malloc((size_t)B * T * sizeof *tokens);
    uint8_t *mask = malloc((size_t)B * T);
    assert_non_null(tokens);
    assert_non_null(mask);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)((i * 37 + 5) % w->hp.s.vocab_size), mask[i] = 1;
    if (eng_forward(&m, &kv, tokens, mask, T, B, T, ENG_LOGITS_ALL, logits, &err) != BC_OK)
        fail_msg("%s", err.message);
    free(tokens);
    free(mask);
    eng_kv_cache_free(&kv);
    eng_model_free(&m);
}

static void test_unfused_matches_fused(void **state) {
    (void)state;
    opt_weights w = load(ENG_F32);
    eng_lora lo = synthetic(&w, 4, (1u << OPT_LORA_N_MODULES) - 1);
    const int B = 2, T = 5;
    const size_t n = (size_t)B * T * w.hp.s.vocab_size;
    float *base = malloc(n * sizeof *base), *unfused = malloc(n * sizeof *unfused), *fused = malloc(n * sizeof *fused);
    assert_non_null(base);
    assert_non_null(unfused);
    assert_non_null(fused);
    prefill_logits(&w, B, T, base);
    w.base.lora_unfused = &lo;
    prefill_logits(&w, B, T, unfused);
    w.base.lora_unfused = NULL;
    bc_error err;
    if (eng_lora_fuse(&lo, &w.base, NULL, &err) != BC_OK) fail_msg("%s", err.message);
    prefill_logits(&w, B, T, fused);
    double top = 0.0, diff = 0.0, moved = 0.0;
    for (size_t i = 0; i < n; i++) {
        top = fmax(top, fabs(fused[i]));
        diff = fmax(diff, fabs((double)unfused[i] - fused[i]));
        moved = fmax(moved, fabs((double)fused[i] - base[i]));
    }
    printf("unfused vs fused logits: max |diff| %.3g of max |logit| %.3g; the adapter moves them by %.3g\n", diff,
           top, moved);
    assert_true(top > 0.0);
    assert_double_close(diff / top, 0.0, 1e-4);
    assert_true(moved > 100.0 * 1e-4 * top); /* the adapter does something the comparison can see */
    free(base);
    free(unfused);
    free(fused);
    eng_lora_free(&lo);
    opt_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuse_matches_reference),
        cmocka_unit_test(test_threads_give_the_same_bits),
        cmocka_unit_test(test_unfuse_drift),
        cmocka_unit_test(test_unfuse_restore_is_exact),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_unfused_matches_fused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
