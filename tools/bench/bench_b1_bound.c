/* bench_b1_bound.c: the engine's B = 1 decode step against the time its
 * bytes take to read, the two measured in turn on the same threads
 * (docs/performance.md, "B=1 against the bound, paired").
 *
 * A B = 1 decode step reads every weight once, so its bound is the weight
 * bytes over the read bandwidth. On a shared VM that bandwidth moves by up to
 * 2x between seconds (the probes of docs/performance.md), so a step timed in
 * one minute and a probe in another do not compare. This tool alternates, in
 * one process: probe passes over the model's own weight arena (the bandwidth
 * probe's read kernel, tools/bandwidth/bw_read.h, one contiguous slice per
 * thread of the engine's pool), a short greedy B = 1 rollout (prompt P, then
 * R decode steps), and probe passes again. Each such round gives the median
 * decode step over the median probe pass around it; the rounds' median ratio
 * is the figure, printed with its minimum and maximum. The probe reads the
 * whole arena (RoPE's tables included, 0.4% of Qwen2.5-0.5B's fp32 arena,
 * which one step does not read); the step reads the KV cache too (0.2% at
 * 128 + 64 positions), so the two small differences roughly cancel.
 *
 *   bench_b1_bound [--preset NAME] [--dtype LIST] [--threads N] [--rounds N]
 *                  [--prompt P] [--steps R] [--passes N]
 *     --preset  a Llama-family preset (plugins/llama; default qwen2.5-0.5b)
 *     --dtype   comma-separated of fp32, bf16, int8 (default all three)
 *     --threads the engine's threads and the probe's (default 2)
 *     --rounds  rounds per precision (default 12)
 *     --prompt  prompt tokens of each rollout (default 128)
 *     --steps   decode steps of each rollout (default 16)
 *     --passes  probe passes before and after each rollout (default 3)
 * Prints one line per round and a summary line per precision:
 *   b1 qwen2.5-0.5b fp32 avx512_bf16 threads=2 prompt=128 steps=16: step/probe median 1.085 (min 1.029,
 *      max 1.344) over 24 rounds; step 53.10 ms, probe 48.84 ms (40.6 GB/s of 1984.5 MB, read kernel avx512)
 * (tools/bench/perf_table.py --b1 reads these lines for target 1's paired line).
 * Exit status 0, 1 on a failure (the engine's message), 2 on a bad option.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw_read.h"
#include "clock.h"
#include "device.h"
#include "family.h"
#include "llama_model.h"

static void die(const char *what, const bc_error *err) {
    fprintf(stderr, "bench_b1_bound: %s: %s\n", what, err->message);
    exit(1);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0, n), n >= 1 (sorts v). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- the probe: the arena read once, a contiguous slice per pool index ---- */

typedef struct probe_job {
    const unsigned char *base;
    size_t bytes; /* a multiple of 256 */
    bw_read_fn read;
    uint64_t sink[64];
} probe_job;

static void probe_part(void *ctx, int i, int n) {
    probe_job *j = ctx;
    const size_t lines = j->bytes / 256;
    const size_t l0 = lines * (size_t)i / (size_t)n, l1 = lines * (size_t)(i + 1) / (size_t)n;
    j->sink[i % 64] += j->read((const uint64_t *)(const void *)(j->base + l0 * 256), (l1 - l0) * 256);
}

/* ms of one pass over job's bytes on pool's threads. */
static double probe_pass_ms(eng_pool *pool, probe_job *job) {
    const double t0 = eng_now_ms();
    eng_pool_run(pool, probe_part, job);
    return eng_now_ms() - t0;
}

/* ---- one precision --------------------------------------------------------- */

typedef struct b1_opts {
    int threads, rounds, prompt, steps, passes;
} b1_opts;

static const char *dt_name(eng_dtype d) { return d == ENG_F32 ? "fp32" : d == ENG_BF16 ? "bf16" : "int8"; }

static void bench_dtype(const void *hp, eng_dtype dt, const b1_opts *o) {
    const eng_shape *sh = hp;
    bc_error err = {0};
    eng_weights *w = calloc(1, llama_model_family.weights_size);
    if (!w) {
        fprintf(stderr, "bench_b1_bound: no memory for the weights\n");
        exit(1);
    }
    if (eng_weights_synthetic(w, &llama_model_family, hp, dt, 1, &err) != BC_OK) die("synthetic weights", &err);
    eng_model m;
    if (eng_model_init(&m, w, o->threads, &err) != BC_OK) die("model", &err);
    const char *kname = NULL;
    probe_job job = {.base = w->arena, .bytes = w->arena_bytes & ~(size_t)255, .read = bw_pick_kernel(&kname)};
    /* +1: response token 0 comes from the prefill, the other steps from decode */
    eng_rollout_params p = {.batch_size = 1, .samples_per_prompt = 1, .prompt_length = o->prompt,
                            .response_length = o->steps + 1, .sampling = {0.0, 1.0, 0, 1}};
    double *ratio = malloc(sizeof(double) * (size_t)o->rounds), *steps_med = malloc(sizeof(double) * (size_t)o->rounds);
    double *probe_med = malloc(sizeof(double) * (size_t)o->rounds);
    double *probes = malloc(sizeof(double) * 2 * (size_t)o->passes), *steps = malloc(sizeof(double) * (size_t)o->steps);
    if (!ratio || !steps_med || !probe_med || !probes || !steps) {
        fprintf(stderr, "bench_b1_bound: no memory\n");
        exit(1);
    }
    (void)probe_pass_ms(m.pool, &job); /* untimed: the arena's pages and the threads warm */
    for (int r = 0; r < o->rounds; r++) {
        for (int i = 0; i < o->passes; i++) probes[i] = probe_pass_ms(m.pool, &job);
        eng_rollout ro;
        if (eng_rollout_init(&ro, sh, &p, &err) != BC_OK || eng_rollout_expand(&ro, &err) != BC_OK ||
            eng_rollout_generate(&ro, &m, &err) != BC_OK)
            die("rollout", &err);
        const int n = ro.n_steps < o->steps ? ro.n_steps : o->steps;
        if (n < 1) {
            fprintf(stderr, "bench_b1_bound: the rollout ran no decode step\n");
            exit(1);
        }
        memcpy(steps, ro.step_ms, sizeof(double) * (size_t)n);
        eng_cpu_rollout_free(&ro, &m);
        for (int i = 0; i < o->passes; i++) probes[o->passes + i] = probe_pass_ms(m.pool, &job);
        steps_med[r] = median(steps, n);
        probe_med[r] = median(probes, 2 * o->passes);
        ratio[r] = steps_med[r] / probe_med[r];
        printf("  round %2d: step %8.2f ms (median of %d), probe %8.2f ms (%5.1f GB/s, median of %d) -> %.3f\n", r + 1,
               steps_med[r], n, probe_med[r], (double)job.bytes / (probe_med[r] * 1e6), 2 * o->passes, ratio[r]);
        fflush(stdout);
    }
    const double sm = median(steps_med, o->rounds), pm = median(probe_med, o->rounds);
    const double rm = median(ratio, o->rounds); /* sorted now: [0] min, [rounds - 1] max */
    printf("b1 %s %s %s threads=%d prompt=%d steps=%d: step/probe median %.3f (min %.3f, max %.3f) over %d rounds; "
           "step %.2f ms, probe %.2f ms (%.1f GB/s of %.1f MB, read kernel %s)\n",
           sh->name, dt_name(dt), eng_isa_name(m.k->isa), eng_pool_size(m.pool), o->prompt, o->steps, rm, ratio[0],
           ratio[o->rounds - 1], o->rounds, sm, pm, (double)job.bytes / (pm * 1e6), (double)job.bytes / 1e6, kname);
    fflush(stdout);
    uint64_t sink = 0;
    for (int i = 0; i < 64; i++) sink += job.sink[i];
    if (sink == 1) printf("(checksum 1)\n"); /* keeps the probe's loads observable */
    free(ratio);
    free(steps_med);
    free(probe_med);
    free(probes);
    free(steps);
    eng_model_free(&m);
    eng_weights_free(w);
    free(w);
}

/* ---- options ---------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f, "usage: bench_b1_bound [--preset NAME] [--dtype fp32,bf16,int8] [--threads N] [--rounds N]\n"
               "                      [--prompt P] [--steps R] [--passes N]\n"
               "  Alternates a B = 1 greedy rollout of a Llama-family preset's synthetic weights with\n"
               "  read passes over the same weights, and prints decode step / read time per round\n"
               "  and their median (docs/performance.md, \"B=1 against the bound, paired\").\n");
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || !end || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "bench_b1_bound: %s wants an integer in [%d, %d], not '%s'\n", opt, lo, hi, v);
        return 2;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv) {
    const char *preset = "qwen2.5-0.5b", *dtypes = "fp32,bf16,int8";
    b1_opts o = {.threads = 2, .rounds = 12, .prompt = 128, .steps = 16, .passes = 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_b1_bound: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(a, "--preset")) preset = v;
        else if (!strcmp(a, "--dtype")) dtypes = v;
        else if (!strcmp(a, "--threads")) rc = parse_int(a, v, 1, 64, &o.threads);
        else if (!strcmp(a, "--rounds")) rc = parse_int(a, v, 1, 1000, &o.rounds);
        else if (!strcmp(a, "--prompt")) rc = parse_int(a, v, 1, 1 << 20, &o.prompt);
        else if (!strcmp(a, "--steps")) rc = parse_int(a, v, 1, 1 << 20, &o.steps);
        else if (!strcmp(a, "--passes")) rc = parse_int(a, v, 1, 100, &o.passes);
        else {
            fprintf(stderr, "bench_b1_bound: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (rc) return rc;
    }
    eng_dtype want[3];
    int n_want = 0;
    for (const char *s = dtypes; *s;) {
        const size_t len = strcspn(s, ",");
        const eng_dtype d = len == 4 && !strncmp(s, "fp32", 4)   ? ENG_F32
                            : len == 4 && !strncmp(s, "bf16", 4) ? ENG_BF16
                            : len == 4 && !strncmp(s, "int8", 4) ? ENG_I8
                                                                 : (eng_dtype)-1;
        if ((int)d < 0 || n_want == 3) {
            fprintf(stderr, "bench_b1_bound: --dtype wants fp32, bf16 or int8 (comma-separated), not '%s'\n", dtypes);
            return 2;
        }
        want[n_want++] = d;
        s += len;
        if (*s == ',') s++;
    }
    void *hp = calloc(1, llama_model_family.hparams_size);
    bc_error err = {0};
    if (!hp) {
        fprintf(stderr, "bench_b1_bound: no memory\n");
        return 1;
    }
    if (llama_model_family.preset(preset, hp, &err) != BC_OK) { /* a bad --preset: an option's error */
        fprintf(stderr, "bench_b1_bound: --preset %s\n", err.message);
        free(hp);
        return 2;
    }
    const eng_shape *sh = hp;
    if (o.prompt + o.steps + 1 > sh->max_positions) {
        fprintf(stderr, "bench_b1_bound: --prompt %d + --steps %d + 1 exceed %s's %d positions\n", o.prompt, o.steps,
                preset, sh->max_positions);
        free(hp);
        return 2;
    }
    printf("bench_b1_bound: %s, %d threads; %d rounds per precision, each %d probe passes, a rollout of %d prompt "
           "tokens and %d decode steps, %d probe passes\n",
           preset, o.threads, o.rounds, o.passes, o.prompt, o.steps, o.passes);
    for (int d = 0; d < n_want; d++) bench_dtype(hp, want[d], &o);
    free(hp);
    return 0;
}
