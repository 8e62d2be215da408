/* test_rollout.c: prompt expansion order, exact response length with EOS
 * suppressed, the stop-at-EOS mode, shared prefill (same greedy tokens as
 * per-row prefill), shared-prefix decode attention (same tokens as every row
 * reading its own cached prompt), prompts files (left padding gives the same tokens as the
 * prompt alone; pad id 0 is legal), determinism, cache release/acquire, the
 * feasibility check, what generate measures and the sample stream per
 * iteration.
 * A tiny synthetic model; a vocabulary of 8 makes EOS frequent.
 */
#define _DEFAULT_SOURCE /* mincore */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../core/bc_test_assert.h"
#include "opt_model.h"
#include "device.h"
#include "rollout.h"

typedef struct fixture {
    opt_hparams hp;
    opt_weights w;
    eng_model m;
} fixture;

/* A model of H heads (head size 32 / H) on a pool of `threads`. */
static fixture *make_heads(int V, int pad_id, int threads, int H) {
    fixture *f = calloc(1, sizeof *f);
    bc_error err = {0};
    f->hp = (opt_hparams){.s = {.vocab_size = V, .hidden_size = 32, .n_layers = 2, .n_heads = H, .ffn_size = 64, .max_positions = 96, .pad_token_id = pad_id, .bos_token_id = 2, .eos_token_id = 2}, .word_embed_proj_dim = 32, .do_layer_norm_before = 1};
    opt_hparams_derive(&f->hp);
    assert_int_equal(opt_weights_alloc(&f->w, &f->hp, ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&f->w, 11, &err), BC_OK);
    assert_int_equal(eng_model_init(&f->m, &f->w.base, threads, &err), BC_OK);
    return f;
}

static fixture *make_threads(int V, int pad_id, int threads) { return make_heads(V, pad_id, threads, 4); }

static fixture *make(int V, int pad_id) { return make_threads(V, pad_id, 2); }

static void destroy(fixture *f) {
    eng_model_free(&f->m);
    opt_weights_free(&f->w);
    free(f);
}

static void run(fixture *f, const eng_rollout_params *p, eng_rollout *ro) {
    bc_error err = {0};
    assert_int_equal(eng_rollout_init(ro, &f->hp.s, p, &err), BC_OK);
    assert_int_equal(eng_rollout_expand(ro, &err), BC_OK);
    if (eng_rollout_generate(ro, &f->m, &err) != BC_OK) {
        print_error("generate: %s\n", err.message);
        fail();
    }
    assert_int_equal(eng_rollout_post_process(ro, &err), BC_OK);
}

static const int32_t *response(const eng_rollout *ro, int r) { return ro->seq + (size_t)r * ro->Stot + ro->Tp; }

static void test_expansion_and_exact_length(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    eng_rollout ro;
    eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 2, .prompt_length = 5, .response_length = 12,
                            .sampling = {5.0, 1.0, 0, 9}}; /* hot: EOS would come often if allowed */
    run(f, &p, &ro);
    assert_int_equal(ro.R, 6);
    for (int r = 0; r < ro.R; r++) {
        const int32_t *prompt = ro.seq + (size_t)r * ro.Stot;
        assert_memory_equal(prompt, ro.prompt_ids + (size_t)(r / 2) * ro.Tp, 5 * sizeof(int32_t));
        for (int t = 0; t < 5; t++) assert_in_range(prompt[t], 3, 63);
        for (int k = 0; k < 12; k++) {
            assert_int_not_equal(response(&ro, r)[k], f->hp.s.eos_token_id);
            assert_int_equal(ro.mask[(size_t)r * ro.Stot + ro.Tp + k], 1);
        }
    }
    assert_memory_not_equal(ro.prompt_ids, ro.prompt_ids + 5, 5 * sizeof(int32_t));
    assert_int_equal(ro.returned_len, 12);
    assert_int_equal(ro.response_start, 5);
    assert_int_equal(ro.n_generated, 6 * 12);
    assert_int_equal(ro.n_decode_forwards, 11);
    eng_cpu_rollout_free(&ro, &f->m);
    destroy(f);
}

static void test_stop_at_eos(void **state) {
    (void)state;
    fixture *f = make(8, 1);
    eng_rollout ro;
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 2, .prompt_length = 4, .response_length = 80,
                            .sampling = {50.0, 1.0, 0, 4}, .stop_at_eos = 1};
    run(f, &p, &ro);
    int longest = 0;
    int64_t produced = 0;
    for (int r = 0; r < ro.R; r++) {
        int at = ro.eos_at[r];
        assert_true(at >= 0); /* 1/8 per step over 80 steps: all rows finish with this seed */
        assert_int_equal(response(&ro, r)[at], f->hp.s.eos_token_id);
        for (int k = 0; k < at; k++) assert_int_not_equal(response(&ro, r)[k], f->hp.s.eos_token_id);
        for (int k = at + 1; k < ro.returned_len; k++) assert_int_equal(response(&ro, r)[k], f->hp.s.pad_token_id);
        for (int k = 0; k < ro.returned_len; k++)
            assert_int_equal(ro.mask[(size_t)r * ro.Stot + ro.Tp + k], k <= at);
        if (at + 1 > longest) longest = at + 1;
        produced += at + 1;
    }
    assert_int_equal(ro.returned_len, longest);
    assert_true(ro.returned_len < 80);
    assert_int_equal(ro.n_generated, produced);
    assert_int_equal(ro.n_decode_forwards, longest - 1);
    eng_cpu_rollout_free(&ro, &f->m);
    destroy(f);
}

static void test_shared_prefill_same_tokens(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    eng_rollout a, b;
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 3, .prompt_length = 6, .response_length = 10,
                            .sampling = {0.0, 1.0, 0, 1}};
    run(f, &p, &a);
    p.shared_prefill = 1;
    run(f, &p, &b);
    assert_int_equal(a.returned_len, b.returned_len);
    assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    /* greedy: every sample of a prompt is the same */
    assert_memory_equal(response(&b, 0), response(&b, 2), 10 * sizeof(int32_t));
    eng_cpu_rollout_free(&a, &f->m);
    eng_cpu_rollout_free(&b, &f->m);
    destroy(f);
}

/* Shared-prefix decode attention (the default with Sp > 1: a prompt's cached
 * tokens read from its first sample's row; with shared prefill only that row
 * holds them) gives the tokens of every row reading its own copy, sampled
 * and greedy, with per-row and shared prefill, for groups of 3 and of more
 * rows than one attend_group call takes (ENG_ATTEND_GROUP_MAX). */
static void test_shared_prefix_same_tokens(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    for (int Sp = 3; Sp <= ENG_ATTEND_GROUP_MAX + 2; Sp += ENG_ATTEND_GROUP_MAX - 1)
        for (int prefill = 0; prefill <= 1; prefill++)
            for (int Tp = 6; Tp <= 8; Tp += 2)
                for (int hot = 0; hot <= 1; hot++) {
                    eng_rollout a, b;
                    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = Sp, .prompt_length = Tp,
                                            .response_length = 12, .sampling = {hot ? 1.0 : 0.0, 1.0, 0, 31},
                                            .shared_prefill = prefill, .private_prefix = 1};
                    run(f, &p, &a);
                    assert_int_equal(a.kv.group, 0);
                    p.private_prefix = 0;
                    run(f, &p, &b);
                    assert_int_equal(b.kv.group, Sp);
                    assert_int_equal(b.kv.prefix, Tp);
                    assert_int_equal(a.returned_len, b.returned_len);
                    assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
                    if (hot) /* the samples of a prompt differ, so the test sees per-row keys */
                        assert_memory_not_equal(response(&b, 0), response(&b, 1), 12 * sizeof(int32_t));
                    eng_cpu_rollout_free(&a, &f->m);
                    eng_cpu_rollout_free(&b, &f->m);
                }
    destroy(f);
}

static void test_seeded_determinism(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    eng_rollout a, b, c;
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 2, .prompt_length = 4, .response_length = 16,
                            .sampling = {1.0, 0.9, 20, 77}, .shared_prefill = 1};
    run(f, &p, &a);
    run(f, &p, &b);
    assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    /* samples of one prompt differ (own generators) */
    assert_memory_not_equal(response(&a, 0), response(&a, 1), 16 * sizeof(int32_t));
    p.sampling.seed = 78;
    run(f, &p, &c);
    assert_memory_not_equal(response(&a, 0), response(&c, 0), 16 * sizeof(int32_t));
    /* release and acquire: the next rollout is the same */
    bc_error err = {0};
    eng_rollout_release(&a, &f->m);
    assert_null(a.kv.k);
    int32_t *before = malloc((size_t)a.R * a.Stot * sizeof(int32_t));
    memcpy(before, a.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    assert_int_equal(eng_rollout_expand(&a, &err), BC_OK);
    assert_int_equal(eng_rollout_generate(&a, &f->m, &err), BC_OK);
    assert_memory_equal(before, a.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    free(before);
    eng_cpu_rollout_free(&a, &f->m);
    eng_cpu_rollout_free(&b, &f->m);
    eng_cpu_rollout_free(&c, &f->m);
    destroy(f);
}

/* Rows are sampled in parallel, each with its own generator: the tokens do
 * not depend on the thread count. */
/* sample_stream: "fixed" draws the same tokens at every generate of a
 * rollout; "per_iteration" draws a different stream per iteration, the same
 * for the same iteration index in another run. */
static void test_sample_stream(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    bc_error err = {0};
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 2, .prompt_length = 4, .response_length = 10,
                            .sampling = {1.0, 1.0, 0, 5}};
    const size_t n = (size_t)4 * 14 * sizeof(int32_t);
    int32_t first[4 * 14], again[4 * 14];
    for (int per_iteration = 0; per_iteration <= 1; per_iteration++) {
        p.per_iteration_stream = per_iteration;
        eng_rollout a, b;
        run(f, &p, &a); /* iteration 0 */
        memcpy(first, a.seq, n);
        a.iteration = 1;
        assert_int_equal(eng_rollout_expand(&a, &err), BC_OK);
        assert_int_equal(eng_rollout_generate(&a, &f->m, &err), BC_OK);
        memcpy(again, a.seq, n);
        if (per_iteration) assert_memory_not_equal(first, again, n);
        else assert_memory_equal(first, again, n);
        /* another run: the same stream at the same iteration */
        assert_int_equal(eng_rollout_init(&b, &f->hp.s, &p, &err), BC_OK);
        b.iteration = 1;
        assert_int_equal(eng_rollout_expand(&b, &err), BC_OK);
        assert_int_equal(eng_rollout_generate(&b, &f->m, &err), BC_OK);
        assert_memory_equal(b.seq, again, n);
        eng_cpu_rollout_free(&a, &f->m);
        eng_cpu_rollout_free(&b, &f->m);
    }
    destroy(f);
}

/* 1 and 3 threads give the same tokens, static and continuous (whose
 * sampling runs on the pool too, with drawn lengths). */
static void test_threads_same_tokens(void **state) {
    (void)state;
    fixture *f1 = make_threads(64, 1, 1), *f3 = make_threads(64, 1, 3);
    for (int continuous = 0; continuous <= 1; continuous++) {
        eng_rollout a, b;
        eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 3, .prompt_length = 5, .response_length = 12,
                                .sampling = {1.0, 0.9, 20, 5}, .stop_at_eos = 1, .continuous = continuous,
                                .capacity = 5};
        if (continuous) p.lengths = (eng_length_dist){.kind = ENG_LENGTHS_LOGNORMAL, .mean = 6, .sigma = 0.8};
        run(f1, &p, &a);
        run(f3, &p, &b);
        assert_int_equal(b.n_samplers, 3);
        assert_int_equal(a.returned_len, b.returned_len);
        assert_int_equal(a.n_generated, b.n_generated);
        assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
        eng_cpu_rollout_free(&a, &f1->m);
        eng_cpu_rollout_free(&b, &f3->m);
    }
    destroy(f1);
    destroy(f3);
}

static char *write_tmp(const char *text) {
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/bc_prompts_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* Reads path's prompts (a vocabulary of V). */
static eng_prompts read_prompts(const char *path, int V) {
    eng_prompts pr;
    bc_error err = {0};
    if (eng_prompts_read(&pr, path, V, &err) != BC_OK) fail_msg("%s", err.message);
    return pr;
}

/* A left-padded prompt generates what it generates alone; pad id 0 is a
 * legal pad id and a real token 0 keeps mask 1. The rollout records the
 * padded width and the shortest and longest real prompt. */
static void test_prompts_file(void **state) {
    (void)state;
    fixture *f = make(64, 0);
    char *both = write_tmp("# two prompts\n0 7 9\n\n10 11 12 13 14 15\n"), *alone = write_tmp("0 7 9\n");
    eng_prompts pboth = read_prompts(both, 64), palone = read_prompts(alone, 64);
    assert_int_equal(pboth.n_lines, 2);
    eng_rollout a, b;
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 1, .response_length = 8,
                            .sampling = {0.0, 1.0, 0, 1}, .prompts = &pboth};
    run(f, &p, &a);
    assert_int_equal(a.Tp, 6);
    assert_int_equal(a.prompt_min, 3);
    assert_int_equal(a.prompt_max, 6);
    assert_int_equal(a.n_prefill_tokens, 2 * 6);
    const int32_t want_ids[6] = {0, 0, 0, 0, 7, 9};
    const uint8_t want_mask[6] = {0, 0, 0, 1, 1, 1};
    assert_memory_equal(a.seq, want_ids, sizeof want_ids);
    assert_memory_equal(a.mask, want_mask, sizeof want_mask);
    p.batch_size = 1;
    p.prompts = &palone;
    run(f, &p, &b);
    assert_int_equal(b.Tp, 3);
    assert_int_equal(b.prompt_min, 3);
    assert_int_equal(b.prompt_max, 3);
    assert_memory_equal(response(&a, 0), response(&b, 0), 8 * sizeof(int32_t));
    eng_cpu_rollout_free(&a, &f->m);
    eng_cpu_rollout_free(&b, &f->m);
    /* batch 1 of the two-prompt file: only the first prompt runs, unpadded */
    p.prompts = &pboth;
    eng_prompt_shape shape;
    bc_error err = {0};
    assert_int_equal(eng_rollout_check(&f->hp.s, &p, &shape, &err), BC_OK);
    assert_int_equal(shape.width, 3);
    /* prompt_length is the prompts' business: 0 is fine with them ... */
    p.prompt_length = 0;
    assert_int_equal(eng_rollout_check(&f->hp.s, &p, &shape, &err), BC_OK);
    /* ... and refused without them */
    p.prompts = NULL;
    assert_int_equal(eng_rollout_check(&f->hp.s, &p, &shape, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "prompts_file"));
    assert_int_equal(eng_rollout_init(&a, &f->hp.s, &p, &err), BC_ERR_SETTING);
    eng_prompts_free(&pboth);
    eng_prompts_free(&palone);
    /* bad files are refused with the file and line */
    char *bad = write_tmp("3 4\n5 x 6\n"), *big = write_tmp("3 64\n"), *empty = write_tmp("# nothing\n\n");
    eng_prompts pr;
    assert_int_equal(eng_prompts_read(&pr, bad, 64, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, ":2:"));
    assert_int_equal(eng_prompts_read(&pr, big, 64, &err), BC_ERR_FORMAT); /* id 64 is outside [0, 64) */
    assert_non_null(strstr(err.message, ":1:"));
    assert_int_equal(eng_prompts_read(&pr, empty, 64, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "no prompts"));
    assert_int_equal(eng_prompts_read(&pr, "/nonexistent/prompts.txt", 64, &err), BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "/nonexistent/prompts.txt"));
    remove(both), remove(alone), remove(bad), remove(big), remove(empty);
    free(both), free(alone), free(bad), free(big), free(empty);
    destroy(f);
}

/* Prompt + response beyond the model's positions: infeasible, naming both
 * numbers and the limit; the check allocates nothing. */
static void test_too_long(void **state) {
    (void)state;
    fixture *f = make(64, 1);
    eng_rollout ro;
    bc_error err = {0};
    eng_rollout_params p = {.batch_size = 1, .samples_per_prompt = 1, .prompt_length = 90, .response_length = 10,
                            .sampling = {0.0, 1.0, 0, 1}};
    assert_int_equal(eng_rollout_check(&f->hp.s, &p, NULL, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "90"));
    assert_non_null(strstr(err.message, "10"));
    assert_non_null(strstr(err.message, "96 positions"));
    assert_int_equal(eng_rollout_init(&ro, &f->hp.s, &p, &err), BC_ERR_INFEASIBLE);
    p.response_length = 6; /* exactly the 96 positions */
    assert_int_equal(eng_rollout_check(&f->hp.s, &p, NULL, &err), BC_OK);
    destroy(f);
}

/* What generate measures: a step time per decode forward, each > 0, their
 * sum at least the forwards' time; the first token after the prefill; token
 * counts per stage, also with shared prefill and with rows stopping at EOS. */
static void test_generation_stats(void **state) {
    (void)state;
    fixture *f = make(8, 1); /* a vocabulary of 8: EOS comes often */
    for (int mode = 0; mode < 3; mode++) {
        eng_rollout ro;
        eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 3, .prompt_length = 5, .response_length = 12,
                                .sampling = {1.0, 1.0, 0, 17}, .shared_prefill = mode == 1, .stop_at_eos = mode == 2};
        run(f, &p, &ro);
        const int R = 6;
        assert_int_equal(ro.n_steps, ro.n_decode_forwards);
        assert_int_equal(ro.n_decode_forwards, ro.returned_len - 1);
        double sum = 0.0;
        for (int k = 0; k < ro.n_steps; k++) {
            assert_true(ro.step_ms[k] > 0.0);
            sum += ro.step_ms[k];
        }
        assert_true(sum >= ro.decode_ms);
        assert_true(ro.first_token_ms >= ro.prefill_ms && ro.prefill_ms > 0.0);
        assert_int_equal(ro.n_prefill_tokens, (int64_t)(mode == 1 ? 2 : R) * 5);
        assert_int_equal(ro.n_decode_tokens, ro.n_generated - R);
        if (mode != 2) {
            assert_int_equal(ro.returned_len, 12);
            assert_int_equal(ro.n_decode_tokens, (int64_t)R * 11);
        } else {
            /* rows that stopped produce nothing more */
            int64_t produced = 0;
            for (int r = 0; r < R; r++) produced += ro.eos_at[r] >= 0 ? ro.eos_at[r] + 1 : ro.returned_len;
            assert_int_equal(ro.n_generated, produced);
        }
        assert_int_equal(ro.prompt_min, 5);
        assert_int_equal(ro.prompt_max, 5);
        eng_cpu_rollout_free(&ro, &f->m);
    }
    destroy(f);
}

/* Continuous batching gives the static batch's tokens row for row, sampled
 * (each row its own generator), with stop_at_eos and drawn lengths, for
 * capacities that make rows wait (1, 2, 4) and none (R); every row's token 0
 * comes from a prefill of the rows that joined together. */
static void test_continuous_same_tokens(void **state) {
    (void)state;
    fixture *f = make(8, 1); /* a vocabulary of 8: EOS comes often */
    const eng_length_dist dists[] = {{.kind = ENG_LENGTHS_FIXED}, {.kind = ENG_LENGTHS_LOGNORMAL, .mean = 6, .sigma = 0.8}};
    for (int d = 0; d < 2; d++)
        for (int eos = 0; eos <= 1; eos++) {
            eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 2, .prompt_length = 5,
                                    .response_length = 14, .sampling = {1.0, 0.9, 0, 23}, .stop_at_eos = eos,
                                    .lengths = dists[d]};
            eng_rollout a;
            run(f, &p, &a);
            const int caps[] = {1, 2, 4, 6};
            for (int c = 0; c < 4; c++) {
                eng_rollout b;
                p.continuous = 1;
                p.capacity = caps[c];
                run(f, &p, &b);
                assert_int_equal(b.Cap, caps[c]);
                assert_int_equal(a.returned_len, b.returned_len);
                assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
                assert_memory_equal(a.mask, b.mask, (size_t)a.R * a.Stot);
                assert_int_equal(a.n_generated, b.n_generated);
                /* the schedule: every prompt through a prefill once per stay in the cache (2 samples
                 * a prompt share it), at most Cap active rows a step, the slots held sum to the tokens
                 * made (a row decodes until it finishes) */
                assert_true(b.n_prefill_tokens >= (int64_t)a.Bp * 5 && b.n_prefill_tokens <= (int64_t)a.R * 5);
                if (caps[c] == a.R) assert_int_equal(b.n_prefill_tokens, (int64_t)a.Bp * 5);
                if (caps[c] == 1) assert_int_equal(b.n_prefill_tokens, (int64_t)a.R * 5);
                assert_true(b.n_prefill_forwards >= (a.R + caps[c] - 1) / caps[c]);
                int64_t held = 0;
                for (int k = 0; k < b.n_steps; k++) {
                    assert_true(b.step_active[k] >= 1 && b.step_active[k] <= caps[c]);
                    held += b.step_active[k];
                }
                assert_int_equal(b.n_padded_slots, a.R + held);
                assert_int_equal(b.n_padded_slots, b.n_generated);
                for (int r = 0; r < a.R; r++) {
                    assert_true(b.row_done_step[r] >= 0 && b.row_done_step[r] <= b.n_steps);
                    assert_true(b.row_first_ms[r] > 0.0);
                }
                eng_cpu_rollout_free(&b, &f->m);
                p.continuous = 0;
            }
            /* static: every row holds every response slot */
            assert_int_equal(a.n_padded_slots, (int64_t)a.R * a.returned_len);
            eng_cpu_rollout_free(&a, &f->m);
        }
    destroy(f);
}

/* Continuous batching with several samples per prompt gives the static
 * batch's tokens row for row: ragged prompts (a prompts file), greedy and
 * sampled with drawn lengths, static with and without shared prefill, and
 * continuous with the shared prefix or private copies, with and without
 * shared prefill, contiguous and paged, on capacities that split a prompt's
 * samples (3 of 4), hold one prompt (4) or every row (12). A prompt is
 * prefilled once per stay in the cache; with the prompt's first row retiring
 * before its others, its tokens move to another of its rows. */
static void test_continuous_prompt_sharing(void **state) {
    (void)state;
    fixture *f = make(16, 1);
    char *path = write_tmp("3 9 4\n5 6 7 12 13 14 8\n# comment\n10 11 4 5 6\n");
    eng_prompts pr;
    bc_error err = {0};
    assert_int_equal(eng_prompts_read(&pr, path, 16, &err), BC_OK);
    int moved = 0; /* runs where a prompt's first row finished before another of its rows */
    for (int hot = 0; hot <= 1; hot++) {
        eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 4, .response_length = 14,
                                .sampling = {hot ? 1.0 : 0.0, 0.9, 0, 23}, .stop_at_eos = hot, .prompts = &pr};
        if (hot) p.lengths = (eng_length_dist){.kind = ENG_LENGTHS_LOGNORMAL, .mean = 6, .sigma = 0.8};
        eng_rollout a, a2;
        run(f, &p, &a);
        assert_int_equal(a.Tp, 7);
        p.shared_prefill = 1;
        run(f, &p, &a2);
        assert_memory_equal(a.seq, a2.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
        eng_cpu_rollout_free(&a2, &f->m);
        for (int r = 0; r < a.R && hot; r++)
            if (r % 4 == 0 && (a.row_len[r] < a.row_len[r + 1] || a.row_len[r] < a.row_len[r + 2])) moved = 1;
        const int caps[] = {1, 3, 4, 12};
        for (int c = 0; c < 4; c++)
            for (int mode = 0; mode < 8; mode++) {
                eng_rollout b;
                p.continuous = 1;
                p.capacity = caps[c];
                p.shared_prefill = mode & 1;
                p.private_prefix = mode >> 1 & 1;
                p.kv_paged = mode >> 2 & 1;
                run(f, &p, &b);
                if (memcmp(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t)) != 0)
                    fail_msg("hot %d capacity %d shared_prefill %d private_prefix %d paged %d: tokens differ", hot,
                             caps[c], p.shared_prefill, p.private_prefix, p.kv_paged);
                assert_memory_equal(a.mask, b.mask, (size_t)a.R * a.Stot);
                assert_int_equal(a.n_generated, b.n_generated);
                const int sharing = !p.private_prefix || p.shared_prefill;
                assert_int_equal(eng_rollout_prompt_sharing(&b), sharing);
                if (!sharing || caps[c] == 1) assert_int_equal(b.n_prefill_tokens, (int64_t)a.R * 7);
                else assert_true(b.n_prefill_tokens >= 3 * 7 && b.n_prefill_tokens < (int64_t)a.R * 7);
                if (caps[c] == 12 && sharing) assert_int_equal(b.n_prefill_tokens, 3 * 7);
                eng_cpu_rollout_free(&b, &f->m);
            }
        p.continuous = p.capacity = p.shared_prefill = p.private_prefix = p.kv_paged = 0;
        eng_cpu_rollout_free(&a, &f->m);
    }
    assert_true(moved);
    eng_prompts_free(&pr);
    unlink(path);
    free(path);
    destroy(f);
}

/* Resident system pages of the pages [p, p + bytes) touches. */
static size_t resident_pages(const void *q, size_t bytes) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const char *p = (const char *)((uintptr_t)q / pg * pg);
    bytes += (size_t)((const char *)q - p);
    const size_t n = (bytes + pg - 1) / pg;
    unsigned char *vec = calloc(n, 1);
    assert_non_null(vec);
    assert_int_equal(mincore((void *)p, bytes, vec), 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++) in += vec[i] & 1;
    free(vec);
    return in;
}

/* The paged KV layout: the same tokens as the contiguous one; pages counted
 * at the peak; every finished row's memory back with the system (nothing of
 * the cache resident after the rollout, where the contiguous cache stays). */
static void test_paged_kv(void **state) {
    (void)state;
    fixture *f = make(8, 1);
    eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 2, .prompt_length = 5, .response_length = 14,
                            .sampling = {1.0, 0.9, 0, 23}, .stop_at_eos = 1, .continuous = 1, .capacity = 4,
                            .lengths = {.kind = ENG_LENGTHS_LOGNORMAL, .mean = 6, .sigma = 0.8}};
    eng_rollout a, b;
    run(f, &p, &a);
    p.kv_paged = 1;
    run(f, &p, &b);
    assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    assert_int_equal(a.kv_pages_peak, -1);
    assert_true(resident_pages(a.kv.k, a.kv.bytes / 2) > 0);
    /* D = 8 fp32 = 32 bytes a token: a 4 KiB page holds 128 tokens, so every row is one page */
    const int P = eng_kv_page_tokens(&f->hp.s, ENG_F32, 0);
    assert_int_equal(P * 32 % sysconf(_SC_PAGESIZE), 0);
    assert_int_equal(b.kv.Smax % P, 0);
    assert_true(b.kv_pages_peak >= 1 && b.kv_pages_peak <= 4 * ((a.Stot + P - 1) / P));
    assert_true(b.kv_fragmentation > 0.0 && b.kv_fragmentation < 1.0);
    assert_int_equal(b.kv_bytes_peak, b.kv_pages_peak * 2 * 2 * P * 32 * 4);
    assert_int_equal(b.kv_bytes_saved, (int64_t)eng_kv_cache_bytes(&f->hp.s, ENG_F32, 4, a.Stot) - b.kv_bytes_peak);
    assert_int_equal(resident_pages(b.kv.k, b.kv.bytes / 2), 0);
    assert_int_equal(resident_pages(b.kv.v, b.kv.bytes / 2), 0);
    eng_cpu_rollout_free(&a, &f->m);
    eng_cpu_rollout_free(&b, &f->m);
    /* a page that is not whole system pages, and paged without continuous batching */
    bc_error err = {0};
    p.page_tokens = 3;
    assert_int_equal(eng_rollout_init(&b, &f->hp.s, &p, &err), BC_OK);
    assert_int_equal(eng_rollout_acquire(&b, &f->m, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "kv_page_tokens 3"));
    eng_cpu_rollout_free(&b, &f->m);
    destroy(f);
}

/* The paged KV layout under a static batch: the contiguous layout's tokens
 * (with and without a shared prefill, whose samples read their prompt's
 * first row); the pages the rows wrote, up to the longest row's length
 * (never the reservation beyond it), counted and then returned: nothing of
 * the cache resident after the rollout. */
static void test_paged_kv_static(void **state) {
    (void)state;
    fixture *f = make(8, 1);
    for (int shared = 0; shared <= 1; shared++) {
        eng_rollout_params p = {.batch_size = 3, .samples_per_prompt = 2, .prompt_length = 5, .response_length = 14,
                                .sampling = {1.0, 0.9, 0, 23}, .stop_at_eos = 1, .shared_prefill = shared,
                                .lengths = {.kind = ENG_LENGTHS_LOGNORMAL, .mean = 6, .sigma = 0.8}};
        eng_rollout a, b;
        run(f, &p, &a);
        p.kv_paged = 1;
        run(f, &p, &b);
        assert_int_equal(a.returned_len, b.returned_len);
        assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
        assert_memory_equal(a.mask, b.mask, (size_t)a.R * a.Stot);
        assert_int_equal(a.kv_pages_peak, -1);
        /* D = 8 fp32: 128 tokens a page; every row wrote Tp + returned_len - 1 < 128 tokens: one page each */
        const int P = eng_kv_page_tokens(&f->hp.s, ENG_F32, 0), len = 5 + b.returned_len - 1;
        assert_int_equal(P, 128);
        assert_int_equal(b.kv_pages_peak, 6);
        assert_int_equal(b.kv_bytes_peak, 6 * 2 * 2 * P * 32 * 4);
        assert_int_equal(b.kv_bytes_saved, (int64_t)eng_kv_cache_bytes(&f->hp.s, ENG_F32, 6, a.Stot) - b.kv_bytes_peak);
        /* the samples after a prompt's first read its prompt there: their first Tp slots stay empty */
        const double written = shared ? 3.0 * len + 3.0 * (len - 5) : 6.0 * len;
        assert_double_close(b.kv_fragmentation, 1.0 - written / (6.0 * P), 1e-12);
        assert_int_equal(resident_pages(b.kv.k, b.kv.bytes / 2), 0);
        assert_int_equal(resident_pages(b.kv.v, b.kv.bytes / 2), 0);
        eng_cpu_rollout_free(&a, &f->m);
        eng_cpu_rollout_free(&b, &f->m);
    }
    destroy(f);
}

/* The shared prefix in a paged cache: a prompt's pages are held once, by
 * one of its rows, so the peak drops against private copies; the tokens are
 * the same and every page goes back. One head of 32 fp32: a 4 KiB page is
 * 32 tokens; prompts of 40 tokens + 14 = 54 tokens, two pages a row. */
static void test_paged_shared_prefix_peak(void **state) {
    (void)state;
    fixture *f = make_heads(64, 1, 2, 1);
    if (eng_kv_page_tokens(&f->hp.s, ENG_F32, 0) != 32) { /* the system's page is not 4 KiB */
        destroy(f);
        skip();
    }
    eng_rollout_params p = {.batch_size = 2, .samples_per_prompt = 4, .prompt_length = 40, .response_length = 14,
                            .sampling = {1.0, 1.0, 0, 3}, .continuous = 1, .capacity = 8, .kv_paged = 1,
                            .private_prefix = 1};
    eng_rollout a, b;
    run(f, &p, &a);
    p.private_prefix = 0;
    run(f, &p, &b);
    assert_memory_equal(a.seq, b.seq, (size_t)a.R * a.Stot * sizeof(int32_t));
    assert_int_equal(a.kv_pages_peak, 8 * 2); /* every row its prompt and response: 2 pages */
    assert_int_equal(b.kv_pages_peak, 2 * 2 + 6 * 1); /* a holder 2 pages, another row its response's page */
    assert_true(b.kv_bytes_peak < a.kv_bytes_peak);
    assert_int_equal(b.kv_bytes_peak, b.kv_pages_peak * 2 * 2 * 32 * 32 * 4);
    assert_true(b.kv_bytes_saved > a.kv_bytes_saved);
    assert_int_equal(resident_pages(b.kv.k, b.kv.bytes / 2), 0);
    assert_int_equal(resident_pages(b.kv.v, b.kv.bytes / 2), 0);
    eng_cpu_rollout_free(&a, &f->m);
    eng_cpu_rollout_free(&b, &f->m);
    destroy(f);
}

/* Drawn lengths: the same for every run of a seed, within [1, Tr], the
 * distribution's shape; a row stops at its length with EOS there. */
static void test_drawn_lengths(void **state) {
    (void)state;
    enum { R = 4000, Tr = 512 };
    static int a[R], b[R], scratch[R];
    eng_length_dist uni = {.kind = ENG_LENGTHS_UNIFORM, .min_ratio = 0.5};
    eng_lengths_draw(&uni, 7, Tr, R, a);
    eng_lengths_draw(&uni, 7, Tr, R, b);
    assert_memory_equal(a, b, sizeof a);
    eng_length_summary s = eng_lengths_summarize(a, R, scratch);
    assert_true(s.min >= 256 && s.max <= Tr && s.min < 270 && s.max > 500);
    eng_lengths_draw(&uni, 8, Tr, R, b);
    assert_true(memcmp(a, b, sizeof a) != 0);
    /* lognormal, mean 128 with a long tail: the mean within 5%, the median below it, the tail past 2x */
    eng_length_dist ln = {.kind = ENG_LENGTHS_LOGNORMAL, .mean = 128, .sigma = 0.6};
    eng_lengths_draw(&ln, 7, Tr, R, a);
    double mean = 0;
    for (int r = 0; r < R; r++) mean += a[r];
    mean /= R;
    s = eng_lengths_summarize(a, R, scratch);
    assert_true(mean > 0.95 * 128 && mean < 1.05 * 128);
    assert_true(s.p50 < mean && s.p95 > 256 && s.min >= 1 && s.max <= Tr);
    /* empirical: only the listed values, clamped to Tr */
    const int32_t vals[] = {3, 9, 1000};
    eng_length_dist em = {.kind = ENG_LENGTHS_EMPIRICAL, .values = vals, .n_values = 3};
    eng_lengths_draw(&em, 7, Tr, R, a);
    int seen[3] = {0};
    for (int r = 0; r < R; r++) {
        assert_true(a[r] == 3 || a[r] == 9 || a[r] == Tr);
        seen[a[r] == 3 ? 0 : a[r] == 9 ? 1 : 2]++;
    }
    assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    /* a file of lengths, and one that is not */
    char path[] = "/tmp/bc_lengths_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# lengths\n12 40\n7\n", f);
    fclose(f);
    int32_t *v;
    int n;
    bc_error err = {0};
    assert_int_equal(eng_lengths_read(path, &v, &n, &err), BC_OK);
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 12);
    assert_int_equal(v[2], 7);
    free(v);
    f = fopen(path, "w");
    fputs("12\n0\n", f);
    fclose(f);
    assert_int_equal(eng_lengths_read(path, &v, &n, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, ":2:"));
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_continuous_same_tokens), cmocka_unit_test(test_drawn_lengths),
        cmocka_unit_test(test_paged_kv),                   cmocka_unit_test(test_paged_kv_static),
        cmocka_unit_test(test_continuous_prompt_sharing), cmocka_unit_test(test_paged_shared_prefix_peak),
        cmocka_unit_test(test_expansion_and_exact_length), cmocka_unit_test(test_stop_at_eos),
        cmocka_unit_test(test_shared_prefill_same_tokens),
        cmocka_unit_test(test_shared_prefix_same_tokens), cmocka_unit_test(test_seeded_determinism),
        cmocka_unit_test(test_prompts_file),               cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_generation_stats),
        cmocka_unit_test(test_threads_same_tokens),
        cmocka_unit_test(test_sample_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
