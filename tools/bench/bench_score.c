/* bench_score.c: times the engine's score path, refit and the rollout's
 * log-probability pass on a Llama-family preset's synthetic weights
 * (docs/engine.md, "Score, log-probabilities and refit": the figures).
 *
 *   bench_score [preset] [threads] [what] [kernels]
 *     preset   smollm2-135m (default), qwen2.5-0.5b, ... (plugins/llama presets)
 *     threads  2 (default)
 *     what     all (default) | score | refit | logprob
 *     kernels  score: one kernel family only (avx2, avx512, avx512_bf16)
 *
 * score:   4 x 4 = 16 rows, prompt 128 + response 64 random ids, one score
 *          per precision (fp32, bf16, int8) and kernel family this CPU runs
 *          (avx2, avx512, avx512_bf16: portable is too slow to matter),
 *          after one warm-up score of 1 row; ms, split into the forward and
 *          the head chunks with their reduction.
 * refit:   the float32 export of seed 2 (a host copy, as a trainer hands it)
 *          into fp32 / bf16 / int8 weights of seed 1: from host memory, and
 *          from a safetensors file written to a temporary directory (read
 *          back through the checkpoint readers; warm in the page cache);
 *          median of 3, ms and GB/s of source bytes.
 * logprob: eng_logsumexp over one row of V logits (what each sampled token
 *          costs), against the mean decode step of a B = 1 greedy rollout.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_host.h"
#include "clock.h"
#include "device.h"
#include "family.h"
#include "llama_model.h"
#include "scorer.h"

static void die(const char *what, const bc_error *err) {
    fprintf(stderr, "bench_score: %s: %s\n", what, err->message);
    exit(1);
}

static eng_weights *synthetic(const void *hp, eng_dtype dt, uint64_t seed) {
    eng_weights *w = calloc(1, llama_model_family.weights_size);
    bc_error err = {0};
    if (!w || eng_weights_synthetic(w, &llama_model_family, hp, dt, seed, &err) != BC_OK) die("synthetic", &err);
    return w;
}

static void drop(eng_weights *w) {
    eng_weights_free(w);
    free(w);
}

static const char *dt_name(eng_dtype d) { return d == ENG_F32 ? "fp32" : d == ENG_BF16 ? "bf16" : "int8"; }

static void bench_score(const void *hp, int threads, const char *only) {
    const eng_shape *sh = hp;
    enum { ROWS = 16, P = 128, R = 64 };
    static int32_t prompt[ROWS * P], response[ROWS * R];
    static int64_t pl[ROWS], rl[ROWS];
    uint64_t x = 12345;
    for (int i = 0; i < ROWS * P; i++) prompt[i] = (int32_t)((x = x * 6364136223846793005ull + 1) >> 33) % sh->vocab_size;
    for (int i = 0; i < ROWS * R; i++) response[i] = (int32_t)((x = x * 6364136223846793005ull + 1) >> 33) % sh->vocab_size;
    for (int r = 0; r < ROWS; r++) pl[r] = P, rl[r] = R;
    bc_rollout_tokens in = {.struct_size = sizeof in, .rows = ROWS, .prompt_tokens = prompt, .prompt_lengths = pl,
                            .prompt_stride = P, .response_tokens = response, .response_lengths = rl,
                            .response_stride = R};
    bc_rollout_tokens one = in;
    one.rows = 1;
    float *out = malloc(sizeof(float) * ROWS * R);
    const eng_dtype dts[] = {ENG_F32, ENG_BF16, ENG_I8};
    const int isas[] = {ENG_ISA_AVX2, ENG_ISA_AVX512, ENG_ISA_AVX512_BF16};
    for (size_t d = 0; d < 3; d++) {
        eng_weights *w = synthetic(hp, dts[d], 1);
        for (size_t k = 0; k < 3; k++) {
            if (!eng_kernels_for((eng_isa)isas[k]) || isas[k] > (int)eng_isa_detect()) continue;
            if (only && strcmp(only, eng_isa_name((eng_isa)isas[k])) != 0) continue;
            eng_model m;
            bc_error err = {0};
            if (eng_model_init_isa(&m, w, threads, isas[k], &err) != BC_OK) continue; /* no such table */
            eng_scorer sc = {0};
            if (eng_score(&sc, &m, &one, out, &err) != BC_OK) die("score", &err);
            eng_scorer_free(&sc);
            const double t0 = eng_now_ms();
            if (eng_score(&sc, &m, &in, out, &err) != BC_OK) die("score", &err);
            const double ms = eng_now_ms() - t0;
            printf("score %s %s %-12s 16 rows x (128 + 64): %8.0f ms (forward %.0f, head + reduce %.0f), %.0f scored "
                   "tokens/s\n",
                   sh->name, dt_name(dts[d]), eng_isa_name((eng_isa)isas[k]), ms, sc.forward_ms, sc.head_ms,
                   ROWS * R / (ms / 1000.0));
            fflush(stdout);
            eng_scorer_free(&sc);
            eng_model_free(&m);
        }
        drop(w);
    }
    free(out);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench_refit(const void *hp) {
    const eng_shape *sh = hp;
    bc_error err = {0};
    eng_weights *src = synthetic(hp, ENG_F32, 2);
    eng_ck_set host;
    if (eng_weights_export(src, &host, "host weights (bench)", &err) != BC_OK) die("export", &err);
    drop(src);
    char dir[] = "/tmp/bc_bench_refit_XXXXXX", path[128];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (eng_ck_host_write_safetensors(&host, path, &err) != BC_OK) die("write", &err);
    const double gb = (double)eng_ck_set_bytes(&host) / 1e9;
    const eng_dtype dts[] = {ENG_F32, ENG_BF16, ENG_I8};
    for (size_t d = 0; d < 3; d++) {
        eng_weights *w = synthetic(hp, dts[d], 1);
        for (int source = 0; source < 2; source++) {
            double t[3];
            for (int i = 0; i < 3; i++) {
                const double t0 = eng_now_ms();
                bc_status st = source == 0 ? eng_weights_refit(w, &host, &err) : eng_weights_refit_dir(w, dir, NULL, &err);
                if (st != BC_OK) die("refit", &err);
                t[i] = eng_now_ms() - t0;
            }
            qsort(t, 3, sizeof t[0], cmp_d);
            printf("refit %s %s from %-10s %.2f GB fp32 -> %.2f GB: %7.0f ms, %.2f GB/s\n", sh->name, dt_name(dts[d]),
                   source == 0 ? "host" : "checkpoint", gb, (double)eng_weights_loaded_bytes(w) / 1e9, t[1],
                   gb / (t[1] / 1000.0));
            fflush(stdout);
        }
        drop(w);
    }
    eng_ck_set_close(&host);
    unlink(path);
    rmdir(dir);
}

static void bench_logprob(const void *hp, int threads) {
    const eng_shape *sh = hp;
    float *row = malloc(sizeof(float) * (size_t)sh->vocab_size);
    uint64_t x = 99;
    for (int v = 0; v < sh->vocab_size; v++)
        row[v] = (float)((double)((x = x * 6364136223846793005ull + 1) >> 40) / (double)(1 << 24) * 30.0 - 15.0);
    volatile float sink = 0.0f;
    const int n = 200;
    const double t0 = eng_now_ms();
    for (int i = 0; i < n; i++) sink += eng_logsumexp(row, sh->vocab_size);
    const double us = (eng_now_ms() - t0) * 1000.0 / n;
    (void)sink;
    free(row);
    const eng_dtype dts[] = {ENG_F32, ENG_BF16};
    for (size_t d = 0; d < 2; d++) {
        eng_weights *w = synthetic(hp, dts[d], 1);
        eng_model m;
        bc_error err = {0};
        if (eng_model_init(&m, w, threads, &err) != BC_OK) die("model", &err);
        eng_rollout_params p = {.batch_size = 1, .samples_per_prompt = 1, .prompt_length = 16, .response_length = 9,
                                .sampling = {0.0, 1.0, 0, 1}};
        eng_rollout ro;
        if (eng_rollout_init(&ro, sh, &p, &err) != BC_OK || eng_rollout_expand(&ro, &err) != BC_OK ||
            eng_rollout_generate(&ro, &m, &err) != BC_OK)
            die("rollout", &err);
        double step = 0.0;
        for (int i = 0; i < ro.n_steps; i++) step += ro.step_ms[i];
        step /= ro.n_steps;
        printf("logprob pass %s (V = %d): %.0f us per sampled token; B = 1 decode step %s %s: %.1f ms -> %.2f%%\n",
               sh->name, sh->vocab_size, us, dt_name(dts[d]), eng_isa_name(m.k->isa), step, 100.0 * us / 1000.0 / step);
        fflush(stdout);
        eng_cpu_rollout_free(&ro, &m);
        eng_model_free(&m);
        drop(w);
    }
}

int main(int argc, char **argv) {
    const char *preset = argc > 1 ? argv[1] : "smollm2-135m";
    const int threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *what = argc > 3 ? argv[3] : "all";
    void *hp = calloc(1, llama_model_family.hparams_size);
    bc_error err = {0};
    if (!hp || llama_model_family.preset(preset, hp, &err) != BC_OK) die(preset, &err);
    if (!strcmp(what, "all") || !strcmp(what, "logprob")) bench_logprob(hp, threads);
    if (!strcmp(what, "all") || !strcmp(what, "refit")) bench_refit(hp);
    if (!strcmp(what, "all") || !strcmp(what, "score")) bench_score(hp, threads, argc > 4 ? argv[4] : NULL);
    free(hp);
    return 0;
}
