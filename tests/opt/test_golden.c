/* test_golden.c: the OPT engine against Hugging Face transformers.
 *
 * tools/golden/make_golden.py wrote, for tiny random OPT models, the
 * checkpoint (tests/opt/golden/<model>/) and golden.bin: for each prompt case
 * (one unpadded prompt; a left-padded batch of three), the prefill logits, the
 * logits of K KV-cached decode steps, and the greedy tokens of generate()
 * with each prompt expanded R times (p0s0, p0s1, ...). This test loads each
 * checkpoint with opt_weights_load_checkpoint, runs eng_forward and checks:
 *   - logits at every real (mask == 1) position: |ours - ref| <= tol * scale,
 *     scale = max(1, max |ref|), tol = the precision plugin's rel_tolerance,
 *     read from its ops (precision.h: the tables plugins/precision hands the
 *     host; docs/plugins.md);
 *   - the argmax agrees wherever the reference's top-2 margin exceeds
 *     2 * tol * scale (so a tie-breaking difference cannot fail it);
 *   - fp32 only: the greedy tokens (EOS suppressed, min_new_tokens ==
 *     max_new_tokens) equal generate()'s, every row: once from a greedy loop
 *     over eng_forward here, once from the engine's own rollout
 *     (eng_rollout_*: prompts file, expansion, generate, post-process), with
 *     and without shared prefill.
 * Each check runs with the best kernel family (auto) and again with every
 * family this CPU runs forced (portable, avx2, avx512, avx512_bf16, as the
 * `kernels` setting does), so an AVX-512 machine also checks the AVX2 path;
 * a family the CPU cannot run is skipped, saying so.
 * On failure it prints the first mismatches and the max difference.
 *
 * golden.bin format (tools/golden/README.md): "BCGOLDEN", u32 version (1),
 * u32 n_arrays, then per array: u32 name_len, name, u32 dtype (0 f32, 1 i32),
 * u32 ndim, i64 dims[ndim], data (little-endian, row-major).
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
#include <unistd.h>

#include <cmocka.h>

#include "forward.h"
#include "../golden/golden_check.h"
#include "lora.h"
#include "opt_model.h"
#include "precision.h"
#include "device.h"
#include "rollout.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/opt/golden/"

static void test_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    char dir[512], gpath[512];
    snprintf(dir, sizeof dir, GOLDEN "%s", cfg->model);
    snprintf(gpath, sizeof gpath, GOLDEN "%s/golden.bin", cfg->golden);
    golden_file g;
    assert_true(golden_read(&g, gpath));
    opt_weights w;
    eng_model m;
    bc_error err = {0};
    if (opt_weights_load_checkpoint(&w, dir, cfg->dtype, &err) != BC_OK) fail_msg("%s", err.message);
    if (!model_init(&m, &w.base, cfg)) {
        opt_weights_free(&w);
        golden_free(&g);
        skip();
    }
    eng_lora lo = {0};
    if (strstr(cfg->golden, "_lora")) { /* transformers + PEFT's merged model: fuse the adapter first */
        char adir[512];
        snprintf(adir, sizeof adir, GOLDEN "%s", cfg->golden);
        if (eng_lora_load_peft(&lo, &opt_family, adir, &w.hp.s, &err) != BC_OK) fail_msg("%s", err.message);
        if (eng_lora_fuse(&lo, &w.base, m.pool, &err) != BC_OK) fail_msg("%s", err.message);
    }
    golden_stats st = {0};
    run_case(&m, &w.base, &g, "single", cfg, &st);
    run_case(&m, &w.base, &g, "padded", cfg, &st);
    print_message("  %s %s %s kernels: max |diff| / scale %.3g (tolerance %.0e, logit scale %.3g), %d argmax "
                  "checks, %d mismatches\n",
                  cfg->model, eng_dtype_name(cfg->dtype), eng_isa_name(m.k->isa), st.max_diff, cfg->tol, st.scale,
                  st.argmax_checked,
                  st.mismatches + st.argmax_mismatches);
    eng_lora_free(&lo);
    eng_model_free(&m);
    opt_weights_free(&w);
    golden_free(&g);
    assert_int_equal(st.mismatches, 0);
    assert_int_equal(st.argmax_mismatches, 0);
    assert_true(st.argmax_checked > 0); /* the argmax check did something */
}

static void test_rollout_golden(void **state) {
    const golden_case_cfg *cfg = *state;
    char dir[512], gpath[512];
    snprintf(dir, sizeof dir, GOLDEN "%s", cfg->model);
    snprintf(gpath, sizeof gpath, GOLDEN "%s/golden.bin", cfg->golden);
    golden_file g;
    assert_true(golden_read(&g, gpath));
    opt_weights w;
    eng_model m;
    bc_error err = {0};
    if (opt_weights_load_checkpoint(&w, dir, cfg->dtype, &err) != BC_OK) fail_msg("%s", err.message);
    if (!model_init(&m, &w.base, cfg)) {
        opt_weights_free(&w);
        golden_free(&g);
        skip();
    }
    int bad = 0;
    /* static with and without shared prefill; continuous on 1, 2 and 3 rows
     * (rows wait and join; 2 splits a prompt's 3 samples, whose prompt is
     * computed once and read by all), with shared prefill; drawn lengths,
     * static and continuous */
    const rollout_mode modes[] = {{0, 0, 0}, {1, 0, 0},   {0, 1, 0},   {0, 3, 0},
                                  {1, 2, 0}, {0, 0, 0.4}, {0, 2, 0.4}, {1, 4, 0.4}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        bad += rollout_case(&m, &w.base, &g, "single", cfg->model, modes[i]);
        bad += rollout_case(&m, &w.base, &g, "padded", cfg->model, modes[i]);
    }
    eng_model_free(&m);
    opt_weights_free(&w);
    golden_free(&g);
    assert_int_equal(bad, 0);
}

/* The golden file reader refuses a file that is not one. */
static void test_golden_reader(void **state) {
    (void)state;
    golden_file g;
    assert_false(golden_read(&g, GOLDEN "preln/config.json"));
    assert_false(golden_read(&g, GOLDEN "does-not-exist.bin"));
    assert_true(golden_read(&g, GOLDEN "preln/golden.bin"));
    assert_true(g.n >= 14);
    golden_free(&g);
}

/* The checkpoints and precisions; main runs each with every kernel family. */
static const golden_case_cfg cfgs[] = {
    {"preln", "preln", ENG_F32, -1, 0},
    {"preln_sharded", "preln", ENG_F32, -1, 0},
    {"preln-bin", "preln", ENG_F32, -1, 0}, /* the same weights as pytorch_model.bin */
    {"postln_proj", "postln_proj", ENG_F32, -1, 0},
    {"hd80", "hd80", ENG_F32, -1, 0},
    {"preln", "preln", ENG_F16, -1, 0},
    {"postln_proj", "postln_proj", ENG_F16, -1, 0},
    {"hd80", "hd80", ENG_F16, -1, 0},
    {"preln", "preln", ENG_BF16, -1, 0},
    {"postln_proj", "postln_proj", ENG_BF16, -1, 0},
    {"hd80", "hd80", ENG_BF16, -1, 0},
    {"preln", "preln", ENG_I8, -1, 0},
    {"postln_proj", "postln_proj", ENG_I8, -1, 0},
    {"hd80", "hd80", ENG_I8, -1, 0},
    {"preln", "preln", ENG_W8A8, -1, 0},
    {"postln_proj", "postln_proj", ENG_W8A8, -1, 0},
    {"hd80", "hd80", ENG_W8A8, -1, 0},
    /* preln with the PEFT adapter of preln_lora fused (tools/golden/make_lora_golden.py) */
    {"preln", "preln_lora", ENG_F32, -1, 0},
    {"preln", "preln_lora", ENG_F16, -1, 0},
    {"preln", "preln_lora", ENG_BF16, -1, 0},
};

#define N_CFGS (sizeof cfgs / sizeof cfgs[0])
#define N_ROLLOUT 5 /* the fp32 entries of cfgs come first */

int main(void) {
    return golden_main("test_golden", cfgs, N_CFGS, N_ROLLOUT, test_golden, test_rollout_golden, test_golden_reader, "test_golden_reader");
}
